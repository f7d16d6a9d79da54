"""Measures what the skill-retrieval plugin costs and saves inside the real agent.

Not a test: run it by hand, e.g.
    python tests/python/measure_turn.py --skills ../shared/corpus/skills/nousresearch-hermes-agent
with `.venv` built by tests/python/run.sh. For every skills folder given it makes a temporary
Hermes home whose `skills/` links to it, runs `hermes -z` turns against the stub server without
the plugin and with it, and prints: request tokens (system + user message, with the
`bpe_openai` package's cl100k_base/o200k_base if importable, else characters/4), turn wall
times, and the plugin's own per-call timings (SKILL_RETRIEVAL_TIMING_LOG).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import StubServer  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
BIN = REPO / ".venv" / "bin"
QUERIES = [
    "How do I clean up old docker images?",
    "Summarise this PDF paper and list its key findings",
    "Set up a cron job that backs up my postgres database every night",
    "Write a haiku about autumn and post it to my blog",
]

try:
    import bpe_openai

    _ENC = {n: bpe_openai.get_encoding(n) for n in ("cl100k_base", "o200k_base")}
except Exception:  # noqa: BLE001
    _ENC = {}


def tokens(text: str) -> dict:
    if not _ENC:
        return {"chars/4": len(text) // 4}
    return {n: len(e.encode(text)) for n, e in _ENC.items()}


def make_home(base: Path, skills: Path, port: int) -> Path:
    home = base / "hermes"
    (home / "cache").mkdir(parents=True)
    (home / "skills").symlink_to(skills.resolve())
    (home / "cache" / "openrouter_model_metadata.json").write_text(
        json.dumps({"stub-model": {"context_length": 131072}}))
    (home / "config.yaml").write_text(
        "model:\n  provider: custom\n  default: stub-model\n"
        f"  base_url: http://127.0.0.1:{port}/v1\n  api_key: stub-key\n  context_length: 1000000\n"
        "plugins:\n  enabled: []\n")
    (base / "userhome").mkdir()
    (base / "cwd").mkdir()
    return home


def turn(base: Path, home: Path, stub: StubServer, message: str) -> tuple:
    before = len(stub.chat_requests())
    proxy = f"http://127.0.0.1:{stub.port}"
    env = {
        "PATH": f"{BIN}:/usr/local/bin:/usr/bin:/bin", "HOME": str(base / "userhome"),
        "HERMES_HOME": str(home), "LANG": "C.UTF-8", "TERM": "dumb",
        "HTTP_PROXY": proxy, "HTTPS_PROXY": proxy, "NO_PROXY": "127.0.0.1,localhost",
        "SKILL_RETRIEVAL_TIMING_LOG": str(base / "timings.jsonl"),
    }
    t0 = time.perf_counter()
    r = subprocess.run([str(BIN / "hermes"), "-z", message, "-t", "skills,terminal"],
                       cwd=base / "cwd", env=env, capture_output=True, text=True, timeout=600,
                       stdin=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"hermes failed: {r.stderr[-2000:]}")
    req = stub.chat_requests()[before]
    msgs = req["messages"]
    system = msgs[0]["content"] if isinstance(msgs[0]["content"], str) else json.dumps(msgs[0]["content"])
    user = [m for m in msgs if m["role"] == "user"][-1]["content"]
    return wall, system, user


def measure(skills: Path, turns: int) -> dict:
    stub = StubServer()
    try:
        base = Path(tempfile.mkdtemp(prefix="skillidx-measure."))
        home = make_home(base, skills, stub.port)
        out: dict = {"skills": str(skills), "skill_files": sum(1 for _ in skills.rglob("SKILL.md"))}
        # Without the plugin.
        rows = [turn(base, home, stub, QUERIES[i % len(QUERIES)]) for i in range(turns)]
        out["baseline"] = {
            "wall_s_median": statistics.median(r[0] for r in rows),
            "system_tokens": tokens(rows[0][1]),
            "user_tokens": tokens(rows[0][2]),
            "block_tokens": tokens(re.search(r"<available_skills>.*?</available_skills>", rows[0][1], re.S).group(0)),
        }
        # With the plugin (first turn builds the index at register time).
        subprocess.run([str(BIN / "skillidx"), "hermes", "install", "--home", str(home)], check=True,
                       capture_output=True)
        rows = [turn(base, home, stub, QUERIES[i % len(QUERIES)]) for i in range(turns + 1)]
        per_query_user = [tokens(r[2]) for r in rows[1:]]
        out["plugin"] = {
            "first_turn_wall_s": rows[0][0],
            "wall_s_median": statistics.median(r[0] for r in rows[1:]),
            "system_tokens": tokens(rows[1][1]),
            "user_tokens_per_turn": per_query_user,
            "block_tokens": tokens(re.search(r"<available_skills>.*?</available_skills>", rows[1][1], re.S).group(0)),
        }
        log = (home / "logs" / "agent.log").read_text(errors="replace")
        built = re.findall(r"BM25 index built: .*", log)
        out["plugin"]["index_log"] = built[:2]
        t = [json.loads(l) for l in (base / "timings.jsonl").read_text().splitlines()]
        pre = [x["ms"] for x in t if x["kind"] == "pre_llm_call"]
        mid = [x["ms"] for x in t if x["kind"] == "llm_request"]
        out["plugin"]["pre_llm_call_ms"] = {"first": pre[0], "median_rest": statistics.median(pre[1:]),
                                            "max_rest": max(pre[1:])}
        out["plugin"]["llm_request_ms"] = {"median": statistics.median(mid), "max": max(mid)}
        out["plugin"]["sample_user_message"] = rows[1][2]
        return out
    finally:
        stub.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--skills", action="append", required=True, type=Path)
    ap.add_argument("--turns", type=int, default=4)
    args = ap.parse_args()
    print("tokenizer:", ", ".join(_ENC) or "chars/4 (bpe_openai not importable)")
    for s in args.skills:
        print(json.dumps(measure(s, args.turns), indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
