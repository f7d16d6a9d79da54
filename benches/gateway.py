#!/usr/bin/env python3
"""Gateway simulation: does a turn ever wait for a sync?

A benchmark, not a test. One process plays a Hermes gateway with the skill-retrieval plugin:
THREADS threads each answer a turn every PERIOD ms through the plugin's own per-turn path
(`pre_llm_call`: chit-chat check, `Index.refresh()` freshness check, background-problem check,
`Index.retrieve()`), on a copy of the ~2,800 skills of ../shared/corpus (plus a small second
profile). The messages are the short requests of benches/queries.json and, one turn in 14, its
~200-word agent turn with a pasted log (reported apart: it costs more to search). Meanwhile, in
other processes and threads:

- a cron-style loop runs `skillidx sync --all-profiles` every CRON seconds;
- every EDIT seconds a skill changes: alternately an in-place edit of a nested SKILL.md (only a
  full sync sees it: the cron loop or the plugin's TTL sync) and a new skill folder (the
  plugin's freshness check sees it and starts a background sync);
- a probe thread (not counted as turns) searches for each edit's marker word every 10 ms to
  see when the gateway can answer with it, and records the plugin's background syncs.

It prints the turns' p50 / p99 / longest, the turns that overlapped a sync (cron or background)
and their longest, and for each edit the delay until it was visible and whether it was visible
by the end of the first sync that started after it ("within one sync"). Targets (issue 9):
p99 <= 5 ms, longest <= 20 ms, no turn waiting on a sync, every edit visible within one sync.

    bash tests/python/run.sh -k nothing      # builds the module into .venv (or maturin develop --release)
    .venv/bin/python benches/gateway.py [--seconds 60] [--threads 4] [--period-ms 50]
        [--cron 5] [--edit 3] [--ttl 30] [--json FILE]

Run it on a quiet machine: other processes competing for the cores show up in the tail.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
CORPUS = (REPO / ".." / "shared" / "corpus").resolve()
VENV_PY = REPO / ".venv" / "bin" / "python"

try:
    import skillidx
    from skillidx import hermes_plugin
except ImportError:
    if VENV_PY.exists() and Path(sys.executable).resolve() != VENV_PY.resolve():
        os.execv(str(VENV_PY), [str(VENV_PY), *sys.argv])
    sys.exit("skillidx is not importable: build it into .venv (bash tests/python/run.sh)")

QUERIES = json.loads((HERE / "queries.json").read_text(encoding="utf-8"))
MESSAGES = QUERIES["short"] + [
    "How do I clean up old docker images?",
    "Summarise this PDF paper and list its key findings",
    "Set up a cron job that backs up my postgres database every night",
    QUERIES["turn"],
]


class Ctx:
    profile_name = "default"

    def register_middleware(self, *_: Any) -> None:
        pass

    def register_hook(self, *_: Any) -> None:
        pass


def pct(values: List[float], p: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100.0 * (len(s) - 1))))]


def make_home(base: Path) -> Path:
    home = base / "hermes"
    shutil.copytree(CORPUS / "skills", home / "skills", symlinks=True)
    for p in (home / "skills").rglob("*"):
        if not p.is_symlink():
            p.chmod(0o755 if p.is_dir() else 0o644)
    # A second, small profile, so the cron sync has more than one to do.
    work = home / "profiles" / "work" / "skills"
    for i, skill in enumerate(sorted((home / "skills").rglob("SKILL.md"))[:60]):
        dest = work / f"w{i}" / "SKILL.md"
        dest.parent.mkdir(parents=True)
        shutil.copy(skill, dest)
    return home


def skillidx_cli() -> List[str]:
    exe = Path(sys.executable).parent / "skillidx"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "skillidx"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--period-ms", type=float, default=50.0)
    ap.add_argument("--cron", type=float, default=5.0, help="seconds between cron syncs")
    ap.add_argument("--edit", type=float, default=3.0, help="seconds between skill edits")
    ap.add_argument("--ttl", type=float, default=30.0, help="the plugin's freshness TTL")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", help="write every figure to this file")
    args = ap.parse_args()
    if not (CORPUS / "skills").is_dir():
        sys.exit(f"missing {CORPUS}/skills (the shared corpus)")
    rng = random.Random(args.seed)
    cli = skillidx_cli()

    base = Path(tempfile.mkdtemp(prefix="skillidx-gateway-"))
    try:
        home = make_home(base)
        t0 = time.perf_counter()
        subprocess.run([*cli, "sync", "--all-profiles", "--home", str(home)], check=True,
                       stdout=subprocess.DEVNULL)
        build_s = time.perf_counter() - t0
        print(f"home {home}: built in {build_s:.2f} s", file=sys.stderr)

        # The gateway: the plugin as Hermes loads it.
        os.environ["HERMES_HOME"] = str(home)
        hermes_plugin._index = None
        hermes_plugin._index = hermes_plugin._native.Index(home=str(home), profile="default", ttl=args.ttl)
        hermes_plugin.register(Ctx())
        index = hermes_plugin._index
        assert index is not None, "the plugin did not open the index"
        index.wait(120)

        stop = threading.Event()
        epoch = time.perf_counter()
        wall_epoch = time.time()
        now = lambda: time.perf_counter() - epoch  # noqa: E731
        turns: List[Tuple[float, float, bool]] = []  # (start, seconds, long message)
        turns_lock = threading.Lock()
        syncs: List[Tuple[str, float, float]] = []  # (kind, start, end)
        edits: List[Dict[str, Any]] = []
        errors: List[str] = []

        def turner(i: int) -> None:
            local: List[Tuple[float, float, bool]] = []
            r = random.Random(args.seed * 100 + i)
            nxt = now() + r.random() * args.period_ms / 1000.0
            while not stop.is_set():
                delay = nxt - now()
                if delay > 0:
                    time.sleep(delay)
                msg = r.choice(MESSAGES)
                s = now()
                t = time.perf_counter()
                hermes_plugin._on_pre_llm_call(user_message=msg, conversation_history=[], platform="cli")
                local.append((s, time.perf_counter() - t, len(msg.split()) > 50))
                nxt += args.period_ms / 1000.0
                if nxt < now():  # fell behind: do not burst
                    nxt = now()
            with turns_lock:
                turns.extend(local)

        def cron() -> None:
            while not stop.is_set():
                s = now()
                r = subprocess.run([*cli, "sync", "--all-profiles", "--home", str(home)],
                                   capture_output=True, text=True)
                syncs.append(("cron", s, now()))
                if r.returncode != 0:
                    errors.append(f"cron sync: {r.stderr.strip()}")
                stop.wait(args.cron)

        nested = sorted(p for p in (home / "skills").rglob("SKILL.md") if len(p.relative_to(home / "skills").parts) >= 3)

        def editor() -> None:
            k = 0
            while not stop.wait(args.edit):
                k += 1
                marker = "zq" + "".join(rng.choice("bcdfghjklmnpvwxz") for _ in range(8))
                if k % 2:
                    path = rng.choice(nested)
                    text = path.read_text(encoding="utf-8", errors="replace")
                    name = f"edited-{k}"
                    # A new name and description, in place: the same folder, no stat the
                    # freshness check watches changes.
                    body = text.split("\n---", 1)[1] if text.startswith("---") and "\n---" in text else "\n" + text
                    path.write_text(f"---\nname: {name}\ndescription: {marker} edited in place\n---{body}",
                                    encoding="utf-8")
                    kind = "in-place edit"
                else:
                    name = f"new-{k}"
                    d = home / "skills" / "gateway-bench" / name
                    d.mkdir(parents=True)
                    tmp = d / ".SKILL.md.tmp"
                    tmp.write_text(f"---\nname: {name}\ndescription: {marker} new skill\n---\n# {name}\n",
                                   encoding="utf-8")
                    os.replace(tmp, d / "SKILL.md")
                    kind = "new folder"
                edits.append({"kind": kind, "name": name, "marker": marker, "at": now(), "visible": None})

        def probe() -> None:
            seen_bg = set()
            while not stop.is_set():
                st = index.status()
                last = st.get("last_sync")
                if last and last["started_ms"] not in seen_bg:
                    seen_bg.add(last["started_ms"])
                    start = last["started_ms"] / 1000.0 - wall_epoch
                    syncs.append(("plugin", start, start + last["elapsed_ms"] / 1000.0))
                for e in edits:
                    if e["visible"] is None:
                        hits = index.search(e["marker"], k=1)
                        if hits and hits[0].id == e["name"]:
                            e["visible"] = now()
                time.sleep(0.01)

        threads = [threading.Thread(target=turner, args=(i,)) for i in range(args.threads)]
        threads += [threading.Thread(target=f) for f in (cron, editor, probe)]
        for t in threads:
            t.start()
        time.sleep(args.seconds)
        stop.set()
        for t in threads:
            t.join()
        index.wait(120)
        status = index.status()
    finally:
        shutil.rmtree(base, ignore_errors=True)

    ms = [d * 1000.0 for _, d, _ in turns]
    short = [d * 1000.0 for _, d, long in turns if not long]
    long_ms = [d * 1000.0 for _, d, long in turns if long]
    spans = sorted((s, e) for _, s, e in syncs)
    overlapping = [d * 1000.0 for s, d, _ in turns if any(a < s + d and s < b for a, b in spans)]
    quiet = [d * 1000.0 for s, d, _ in turns if not any(a < s + d and s < b for a, b in spans)]
    for e in edits:
        after = [end for _, start, end in syncs if start >= e["at"]]
        e["first_sync_end"] = min(after) if after else None
        e["delay_ms"] = None if e["visible"] is None else (e["visible"] - e["at"]) * 1000.0
        # Visible by the end of the first sync that started after the edit (plus the probe's
        # 10 ms period).
        e["within_one_sync"] = (
            e["visible"] is not None and e["first_sync_end"] is not None
            and e["visible"] <= e["first_sync_end"] + 0.02
        ) if e["first_sync_end"] is not None else None
    judged = [e for e in edits if e["within_one_sync"] is not None]
    slow = [
        {"at": s, "ms": d * 1000.0,
         "during": [f"{k} +{(s - a) * 1000:.0f}/{(b - a) * 1000:.0f} ms" for k, a, b in syncs if a < s + d and s < b]}
        for s, d, _ in sorted(turns) if d > 0.010
    ]
    result = {
        "skills": 2786,
        "seconds": args.seconds,
        "threads": args.threads,
        "period_ms": args.period_ms,
        "turns": len(ms),
        "turn_p50_ms": pct(ms, 50),
        "turn_p99_ms": pct(ms, 99),
        "turn_longest_ms": max(ms) if ms else float("nan"),
        "turns_over_20ms": sum(1 for m in ms if m > 20.0),
        "short_turns": len(short),
        "short_turn_p50_ms": pct(short, 50),
        "short_turn_p99_ms": pct(short, 99),
        "long_turns": len(long_ms),
        "long_turn_p50_ms": pct(long_ms, 50),
        "long_turn_p99_ms": pct(long_ms, 99),
        "turns_during_a_sync": len(overlapping),
        "turns_during_a_sync_p99_ms": pct(overlapping, 99),
        "turns_during_a_sync_longest_ms": max(overlapping) if overlapping else float("nan"),
        "turns_outside_syncs_p99_ms": pct(quiet, 99),
        "cron_syncs": sum(1 for k, _, _ in syncs if k == "cron"),
        "cron_sync_median_ms": statistics.median([(e - s) * 1000 for k, s, e in syncs if k == "cron"] or [float("nan")]),
        "plugin_background_syncs": status["syncs"],
        "plugin_background_failures": status["failures"],
        "plugin_sync_error": status["sync_error"],
        "edits": len(edits),
        "edits_visible": sum(1 for e in edits if e["visible"] is not None),
        "edits_within_one_sync": sum(1 for e in judged if e["within_one_sync"]),
        "edits_judged": len(judged),
        "edit_delay_median_ms": statistics.median([e["delay_ms"] for e in edits if e["delay_ms"] is not None] or [float("nan")]),
        "edit_delay_longest_ms": max([e["delay_ms"] for e in edits if e["delay_ms"] is not None] or [float("nan")]),
        "errors": errors,
        "edit_log": edits,
        "slow_turns": slow,
    }
    print(f"{result['turns']} turns from {args.threads} threads every {args.period_ms:g} ms for {args.seconds:g} s "
          f"on {result['skills']} skills")
    print(f"turn p50 {result['turn_p50_ms']:.2f} ms, p99 {result['turn_p99_ms']:.2f} ms, "
          f"longest {result['turn_longest_ms']:.2f} ms, over 20 ms: {result['turns_over_20ms']}")
    print(f"  short messages ({result['short_turns']}): p50 {result['short_turn_p50_ms']:.2f} ms, p99 "
          f"{result['short_turn_p99_ms']:.2f} ms; the ~200-word message ({result['long_turns']}): p50 "
          f"{result['long_turn_p50_ms']:.2f} ms, p99 {result['long_turn_p99_ms']:.2f} ms")
    print(f"turns during a sync: {result['turns_during_a_sync']} (p99 {result['turns_during_a_sync_p99_ms']:.2f} ms, "
          f"longest {result['turns_during_a_sync_longest_ms']:.2f} ms); outside syncs p99 "
          f"{result['turns_outside_syncs_p99_ms']:.2f} ms")
    print(f"syncs: {result['cron_syncs']} cron (median {result['cron_sync_median_ms']:.0f} ms), "
          f"{result['plugin_background_syncs']} in the plugin's background "
          f"({result['plugin_background_failures']} failed)")
    print(f"edits: {result['edits']}, visible {result['edits_visible']}, within one sync "
          f"{result['edits_within_one_sync']}/{result['edits_judged']}; delay median "
          f"{result['edit_delay_median_ms']:.0f} ms, longest {result['edit_delay_longest_ms']:.0f} ms")
    for e in edits:
        print(f"  {e['at']:6.2f} s {e['kind']:<14} visible after "
              f"{'never' if e['delay_ms'] is None else format(e['delay_ms'], '.0f') + ' ms':>9}"
              f"  first sync after it ended at +{'-' if e['first_sync_end'] is None else format((e['first_sync_end'] - e['at']) * 1000, '.0f') + ' ms'}"
              f"  {'ok' if e['within_one_sync'] else ('not judged' if e['within_one_sync'] is None else 'LATE')}")
    if slow:
        print(f"turns over 10 ms: {len(slow)}")
        for t in slow[:20]:
            print(f"  {t['at']:6.2f} s {t['ms']:6.1f} ms during {', '.join(t['during']) or 'no sync'}")
    if errors:
        print("errors:", *errors[:5], sep="\n  ")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1, default=str), encoding="utf-8")


if __name__ == "__main__":
    main()
