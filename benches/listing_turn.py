"""The plugin's per-turn cost at a home's size: the llm_request middleware's rewrite of
Hermes' block (`Index.rewrite_system`, budgeted) and the pre_llm_call hook's retrieval
(`Index.retrieve`), timed in one process as the plugin calls them.

Hermes' block is written here in Hermes' own format from the index's offered skills (its
builder takes ~20 s at 90k and caches); the first rewrite reads it (once per index state,
block and session shape), the next ones reuse that reading, as every later turn does.

    .venv/bin/python benches/listing_turn.py --home /tmp/skillidx-scale-93k --db /tmp/scale.redb
"""

import argparse
import json
import os
import subprocess
import sys
import statistics
import time
from collections import defaultdict

from skillidx import _native

QUERIES = ["convert a pdf to markdown", "debug a failing kubernetes pod", "write a haiku about spring",
           "summarise this meeting transcript", "plan a terraform change", "git rebase went wrong",
           "analyse sales data in a spreadsheet", "thanks a lot!", "会議の議事録をまとめて",
           "make a slide deck about our roadmap"]


def hermes_block(home: str, db: str) -> str:
    """Hermes' block in its format, from what the engine offers (`skillidx offered`, whose
    pairs the differential test checks against Hermes')."""
    out = subprocess.run([os.path.join(os.path.dirname(sys.executable), "skillidx"), "offered",
                          "--home", home, "--db", db, "--json"],
                         capture_output=True, text=True, check=True).stdout
    groups = defaultdict(list)
    for s in json.loads(out):
        groups[s["category"]].append(s)
    lines = ["<available_skills>"]
    for category in sorted(groups):
        lines.append(f"  {category}:")
        for s in sorted(groups[category], key=lambda s: s["name"]):
            d = s["description"]
            d = d if len(d) <= 60 else d[:57] + "..."
            lines.append(f"    - {s['name']}: {d}" if d else f"    - {s['name']}")
    lines.append("</available_skills>")
    return "## Skills (mandatory)\n" + "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--home", required=True)
    ap.add_argument("--db", required=True)
    ap.add_argument("--turns", type=int, default=50)
    args = ap.parse_args()
    index = _native.Index(home=args.home, db=args.db, readonly=True)
    system = hermes_block(args.home, args.db)
    t = time.perf_counter()
    (cold,) = index.rewrite_system("s", [system], None, None, True, budget=1500,
                                   search_tool="skills_search")
    cold_ms = (time.perf_counter() - t) * 1e3
    rewrite, fresh, retrieve = [], [], []
    p = lambda xs, q: sorted(xs)[min(len(xs) - 1, int(q * len(xs)))]
    ms = lambda xs: {"p50": round(statistics.median(xs), 2), "p99": round(p(xs, 0.99), 2)}
    for i in range(args.turns):
        # Hermes' cached prompt: the same string object every turn.
        t = time.perf_counter()
        (out,) = index.rewrite_system("s", [system], None, None, True, budget=1500,
                                      search_tool="skills_search")
        rewrite.append((time.perf_counter() - t) * 1e3)
        assert out == cold
        # With an ephemeral system prompt Hermes joins a new string each call: equal text,
        # a new object (made before the clock starts).
        copy = system[:1] + system[1:]
        t = time.perf_counter()
        (out,) = index.rewrite_system("s-ephemeral", [copy], None, None, True, budget=1500,
                                      search_tool="skills_search")
        fresh.append((time.perf_counter() - t) * 1e3)
        assert out == cold
        t = time.perf_counter()
        index.retrieve(QUERIES[i % len(QUERIES)], k=6, session="s")
        retrieve.append((time.perf_counter() - t) * 1e3)
    print(json.dumps({
        "skills_listed_by_hermes": system.count("\n    - "),
        "hermes_system_chars": len(system), "rewritten_system_chars": len(cold),
        "first_rewrite_ms": round(cold_ms, 1),
        "rewrite_ms": ms(rewrite),
        "rewrite_new_string_ms": ms(fresh),
        "retrieve_ms": ms(retrieve),
        "turn_ms": ms([a + b for a, b in zip(rewrite, retrieve)]),
        "turn_new_string_ms": ms([a + b for a, b in zip(fresh, retrieve)]),
    }, indent=1))


if __name__ == "__main__":
    main()
