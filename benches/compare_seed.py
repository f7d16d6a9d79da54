#!/usr/bin/env python3
"""Times skillidx against the seed plugin's approach (a pure-Python BM25 built in memory at
process start, `seed_bm25.py`) on the same Hermes home, side by side in one run, and prints
medians and ratios.

    cargo build --release && python3 benches/compare_seed.py [HOME]

HOME defaults to ../shared/corpus (about 2,800 real skills). The one-skill-edited sync runs
on a temporary copy of HOME's skills.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
BIN = os.path.join(REPO, "target", "release", "skillidx")
sys.path.insert(0, HERE)
import seed_bm25  # noqa: E402

QUERIES = [
    "convert a PDF to markdown", "review a pull request on github", "fine-tune an LLM with LoRA",
    "write unit tests for a python function", "deploy a docker container to kubernetes",
    "会議の議事録を作成", "한국 주식 시세 조회", "写一篇小红书文案", "summarize a research paper",
    "debug a failing CI workflow",
]


def timed(cmd, runs, setup=None):
    times = []
    for _ in range(runs):
        if setup:
            setup()
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    home = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(REPO, "..", "shared", "corpus"))
    if not os.path.exists(BIN):
        sys.exit("build first: cargo build --release")
    work = tempfile.mkdtemp(prefix="skillidx-compare-")
    db = os.path.join(work, "index.redb")
    rows = []

    def fresh():
        if os.path.exists(db):
            os.remove(db)

    build = timed([BIN, "sync", "--home", home, "--db", db], 3, setup=fresh)
    subprocess.run([BIN, "sync", "--home", home, "--db", db], check=True, stdout=subprocess.DEVNULL)
    time.sleep(2.1)  # let files age past the racily-clean window, as they are in real use
    subprocess.run([BIN, "sync", "--home", home, "--db", db], check=True, stdout=subprocess.DEVNULL)
    unchanged = timed([BIN, "sync", "--home", home, "--db", db], 10)

    # One skill edited, on a copy.
    copy = os.path.join(work, "home")
    shutil.copytree(os.path.join(home, "skills"), os.path.join(copy, "skills"), symlinks=True)
    copy_db = os.path.join(work, "copy.redb")
    subprocess.run([BIN, "sync", "--home", copy, "--db", copy_db], check=True, stdout=subprocess.DEVNULL)
    victim = None
    for root, _, files in os.walk(os.path.join(copy, "skills")):
        if "SKILL.md" in files:
            victim = os.path.join(root, "SKILL.md")
            break
    counter = [0]

    def edit():
        counter[0] += 1
        with open(victim, "a", encoding="utf-8") as f:
            f.write(f"\nedit {counter[0]} zebra{counter[0]}\n")

    one_edit = timed([BIN, "sync", "--home", copy, "--db", copy_db], 5, setup=edit)

    first_answer = timed([BIN, "search", QUERIES[0], "--home", home, "--db", db], 20)
    batch = "\n".join(json.dumps({"query": QUERIES[i % len(QUERIES)]}) for i in range(2000)) + "\n"
    t0 = time.perf_counter()
    subprocess.run([BIN, "search", "--batch", "--home", home, "--db", db], input=batch.encode(), check=True,
                   stdout=subprocess.DEVNULL)
    per_query_cli = (time.perf_counter() - t0) / 2000

    # The seed's approach.
    py_first = timed([sys.executable, os.path.join(HERE, "seed_bm25.py"), home, QUERIES[0]], 3)
    t0 = time.perf_counter()
    index = seed_bm25.Index(home)
    py_build = time.perf_counter() - t0
    t0 = time.perf_counter()
    for i in range(2000):
        index.search(QUERIES[i % len(QUERIES)])
    py_query = (time.perf_counter() - t0) / 2000

    rows = [
        ("full build (index from files)", build, py_build),
        ("sync, nothing changed", unchanged, py_build),
        ("sync, one skill edited", one_edit, py_build),
        ("first answer in a new process", first_answer, py_first),
        ("search, per query, warm", per_query_cli, py_query),
    ]
    print(f"home: {home} ({len(index.names)} skills parsed by the Python baseline)")
    print(f"{'':34} {'skillidx':>12} {'seed (Python)':>14} {'ratio':>8}")
    for name, ours, theirs in rows:
        print(f"{name:34} {ours * 1e3:10.2f}ms {theirs * 1e3:12.2f}ms {theirs / ours:7.1f}x")
    print("(the seed has no persistent index: every new process, and every change, rebuilds it)")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
