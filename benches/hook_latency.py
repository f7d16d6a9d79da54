"""What a per-prompt hook costs in a new process: `skillidx hook claude-code` started for each
prompt (as Claude Code runs a command hook), fed the documented UserPromptSubmit event, timed
from spawn to exit. The native binary and the Python package's `skillidx` command side by side,
in one run, on the same index and prompts (the eval queries, small talk included).

    .venv/bin/python benches/hook_latency.py --home /tmp/corpus-home --db /tmp/corpus.redb \\
        --bin target/release/skillidx --runs 100
"""

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def timed(cmd, stdin: str) -> float:
    t = time.perf_counter()
    r = subprocess.run(cmd, input=stdin, capture_output=True, text=True)
    ms = (time.perf_counter() - t) * 1e3
    assert r.returncode == 0, r.stderr
    return ms


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--home", required=True)
    ap.add_argument("--db", required=True)
    ap.add_argument("--bin", default=str(REPO / "target" / "release" / "skillidx"))
    ap.add_argument("--runs", type=int, default=100)
    args = ap.parse_args()
    prompts = [json.loads(line)["query"] for line in (REPO / "tests/eval/queries.jsonl").open()]
    commands = {"native": [args.bin], "python_entry": [str(Path(sys.executable).parent / "skillidx")]}
    out = {}
    for name, exe in commands.items():
        cmd = exe + ["hook", "claude-code", "--home", args.home, "--db", args.db]
        samples = []
        for i in range(args.runs):
            event = {"session_id": "s", "transcript_path": "/tmp/t.jsonl", "cwd": "/tmp",
                     "permission_mode": "default", "hook_event_name": "UserPromptSubmit",
                     "prompt": prompts[i % len(prompts)]}
            samples.append(timed(cmd, json.dumps(event)))
        samples.sort()
        out[name] = {"p50_ms": round(statistics.median(samples), 1),
                     "p99_ms": round(samples[min(len(samples) - 1, int(0.99 * len(samples)))], 1)}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
