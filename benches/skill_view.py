"""What loading one skill costs: Hermes' own ``skill_view`` (which walks and parses every
SKILL.md of the home on each call) against skillidx's ``skill_load`` (``Index.load_tool``:
the index resolves the name, one file is read), on the same skills of the same home, in one
process.

    .venv/bin/python benches/skill_view.py --home /tmp/skillidx-scale-93k --db /tmp/scale.redb --calls 3

Skills are every ``len/calls``-th offered one; each is loaded by its id (the name, or
``category/folder`` where the name is ambiguous), as the prompts give it. Prints one JSON
line: the medians in milliseconds and whether each loader found the skill.
"""

import argparse
import json
import os
import statistics
import time


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--home", required=True)
    ap.add_argument("--db", required=True)
    ap.add_argument("--calls", type=int, default=5)
    args = ap.parse_args()
    os.environ["HERMES_HOME"] = args.home  # before Hermes' modules read it
    from skillidx import _native
    from tools.skills_tool import skill_view

    index = _native.Index(home=args.home, db=args.db, readonly=True)
    offered = [s for s in index.list() if s["inactive"] is None]
    step = max(1, len(offered) // args.calls)
    picked = [s["id"] for s in offered[::step][: args.calls]]
    view_ms, load_ms, view_ok, load_ok = [], [], 0, 0
    for skill_id in picked:
        t = time.perf_counter()
        viewed = json.loads(skill_view(skill_id))
        view_ms.append((time.perf_counter() - t) * 1e3)
        view_ok += bool(viewed.get("success"))
        t = time.perf_counter()
        loaded = index.load_tool(skill_id)
        load_ms.append((time.perf_counter() - t) * 1e3)
        load_ok += loaded.startswith("Skill **")
    print(json.dumps({
        "skills": len(offered), "calls": len(picked),
        "skill_view_ms_p50": round(statistics.median(view_ms), 1),
        "skill_load_ms_p50": round(statistics.median(load_ms), 2),
        "skill_view_found": view_ok, "skill_load_found": load_ok,
    }))


if __name__ == "__main__":
    main()
