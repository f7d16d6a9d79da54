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
import statistics
import time
from collections import defaultdict

from skillidx import _native

QUERIES = ["convert a pdf to markdown", "debug a failing kubernetes pod", "write a haiku about spring",
           "summarise this meeting transcript", "plan a terraform change", "git rebase went wrong",
           "analyse sales data in a spreadsheet", "thanks a lot!", "会議の議事録をまとめて",
           "make a slide deck about our roadmap"]


def hermes_block(index) -> str:
    groups = defaultdict(list)
    for s in index.list():
        if s["inactive"] is None:
            groups[s["category"] or "general"].append(s)
    lines = ["<available_skills>"]
    for category in sorted(groups):
        lines.append(f"  {category}:")
        for s in sorted(groups[category], key=lambda s: s["id"]):
            d = s["description"]
            d = d if len(d) <= 60 else d[:57] + "..."
            lines.append(f"    - {s['id']}: {d}" if d else f"    - {s['id']}")
    lines.append("</available_skills>")
    return "## Skills (mandatory)\n" + "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--home", required=True)
    ap.add_argument("--db", required=True)
    ap.add_argument("--turns", type=int, default=50)
    args = ap.parse_args()
    index = _native.Index(home=args.home, db=args.db, readonly=True)
    system = hermes_block(index)
    t = time.perf_counter()
    (cold,) = index.rewrite_system("s", [system], None, None, True, budget=1500,
                                   search_tool="skills_search")
    cold_ms = (time.perf_counter() - t) * 1e3
    rewrite, retrieve = [], []
    for i in range(args.turns):
        t = time.perf_counter()
        (out,) = index.rewrite_system("s", [system], None, None, True, budget=1500,
                                      search_tool="skills_search")
        rewrite.append((time.perf_counter() - t) * 1e3)
        assert out == cold
        t = time.perf_counter()
        index.retrieve(QUERIES[i % len(QUERIES)], k=6, session="s")
        retrieve.append((time.perf_counter() - t) * 1e3)
    both = sorted(a + b for a, b in zip(rewrite, retrieve))
    p = lambda xs, q: sorted(xs)[min(len(xs) - 1, int(q * len(xs)))]
    print(json.dumps({
        "skills_listed_by_hermes": system.count("\n    - "),
        "hermes_system_chars": len(system), "rewritten_system_chars": len(cold),
        "first_rewrite_ms": round(cold_ms, 1),
        "rewrite_ms": {"p50": round(statistics.median(rewrite), 2), "p99": round(p(rewrite, 0.99), 2)},
        "retrieve_ms": {"p50": round(statistics.median(retrieve), 2), "p99": round(p(retrieve, 0.99), 2)},
        "turn_ms": {"p50": round(statistics.median(both), 2), "p99": round(p(both, 0.99), 2)},
    }, indent=1))


if __name__ == "__main__":
    main()
