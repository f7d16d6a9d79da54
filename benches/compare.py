#!/usr/bin/env python3
"""Runs the same work through three engines on the same machine, in one run, and prints
medians and ratios at each scale; saves the tables (markdown, CSV) and a PNG plot of how each
cost grows with the number of skills.

Engines:
  skillidx   the CLI (`target/release/skillidx`), the Python module (`import skillidx`, from
             .venv) and the library in process (`skillidx-peers latency`, default BM25F
             ranking, and `skillidx-seed`: the seed ranking)
  seed       the seed plugin's approach: a pure-Python BM25 built in memory at process start
             (`benches/seed_bm25.py`)
  tantivy    tantivy 0.27 on the same documents, text and terms (`skillidx-peers`, see
             benches/peers/src/main.rs: k1 = 1.2 and one-byte length norms, so scores differ)

Scales: hermes-170 (the Hermes skills of ../shared/corpus), corpus-2800 (the whole shared
corpus), hub-90k (only with --hub HOME: a home made by benches/make_hub_home.py, which this
script runs if HOME does not exist yet; slow: the seed approach alone needs minutes there).

    cargo build --release && cargo build --release -p skillidx-peers
    bash tests/python/run.sh   # or: maturin develop --release into .venv
    python3 benches/compare.py [--hub /tmp/skillidx-hub-90k] [--out bench-results]

Whole commands are timed with hyperfine (apt-get install hyperfine), peak memory with
/usr/bin/time -v; in-process latencies by each engine's own loop (p50/p99 of single queries).
The plot needs matplotlib: from this interpreter, else from target/bench-venv
(python3 -m venv target/bench-venv && target/bench-venv/bin/pip install matplotlib).
"""
import argparse
import csv
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
CORPUS = os.path.normpath(os.path.join(REPO, "..", "shared", "corpus"))
TARGET = os.environ.get("CARGO_TARGET_DIR") or os.path.join(REPO, "target")
if not os.path.isabs(TARGET):
    TARGET = os.path.join(REPO, TARGET)
BIN = os.path.join(TARGET, "release", "skillidx")
PEERS = os.path.join(TARGET, "release", "skillidx-peers")
VENV_PY = os.path.join(REPO, ".venv", "bin", "python")
# The seed approach is pure Python: the venv's interpreter when there is one, else this one.
SEED_PY = VENV_PY if os.path.exists(VENV_PY) else sys.executable
QUERIES_FILE = os.path.join(HERE, "queries.json")
QUERIES = json.load(open(QUERIES_FILE, encoding="utf-8"))
SHORT, TURN = QUERIES["short"], QUERIES["turn"]
PLOT_VENV_PY = os.path.join(TARGET, "bench-venv", "bin", "python")

ENGINES = ["skillidx CLI", "skillidx Python", "skillidx in-process", "skillidx-seed in-process",
           "seed Python", "tantivy", "tantivy, six fields", "find (walk and stat)"]


def need(path, hint):
    if not os.path.exists(path):
        sys.exit(f"missing {path}: {hint}")


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def hyperfine(cmd, runs, prepare=None, warmup=0):
    """Median wall time (s) of `cmd` over `runs` runs: run without a shell (`-N`, no shell
    start-up to subtract, which is noisy on a busy machine) unless a `prepare` command needs
    bash."""
    fd, out = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    args = ["hyperfine", "--style", "none", "--shell=bash" if prepare else "-N", "--runs", str(runs), "--warmup", str(warmup),
            "--export-json", out]
    if prepare:
        args += ["--prepare", prepare]
    args.append(cmd)
    run(args)
    res = json.load(open(out))["results"][0]
    os.remove(out)
    return res["median"]


def peak_rss_mib(cmd, stdin=None):
    """Peak RSS (MiB) of `cmd` (a list) by /usr/bin/time -v."""
    p = subprocess.run(["/usr/bin/time", "-v"] + cmd, input=stdin, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{cmd}: {p.stderr[-2000:]}")
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr)
    return int(m.group(1)) / 1024


def q(s):
    return "'" + s.replace("'", "'\\''") + "'"


def settle(home, db):
    """Build, wait out the racily-clean window, sync again: files as aged as in real use."""
    run([BIN, "sync", "--home", home, "--db", db])
    time.sleep(2.1)
    run([BIN, "sync", "--home", home, "--db", db])


PY_LATENCY = r"""
import json, sys, time, statistics, resource
import skillidx
home, db, qfile, iters = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
Q = json.load(open(qfile, encoding="utf-8"))
t0 = time.perf_counter()
idx = skillidx.Index(home=home, db=db, readonly=True)
idx.search(Q["short"][0])
first = time.perf_counter() - t0
for s in Q["short"]: idx.search(s)
def pct(v, p):
    v = sorted(v); return v[max(1, -(-len(v) * p // 100)) - 1]
short = []
for i in range(iters):
    t = time.perf_counter(); idx.search(Q["short"][i % len(Q["short"])]); short.append((time.perf_counter() - t) * 1e6)
turn = []
for i in range(max(50, iters // 4)):
    t = time.perf_counter(); idx.search(Q["turn"]); turn.append((time.perf_counter() - t) * 1e6)
print(json.dumps({"first_answer_ms": first * 1e3, "short": {"p50_us": pct(short, 50), "p99_us": pct(short, 99)},
                  "turn": {"p50_us": pct(turn, 50), "p99_us": pct(turn, 99)},
                  "peak_rss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""

SEED_LATENCY = r"""
import json, sys, time, resource
sys.path.insert(0, sys.argv[4])
import seed_bm25
home, qfile, iters = sys.argv[1], sys.argv[2], int(sys.argv[3])
Q = json.load(open(qfile, encoding="utf-8"))
t0 = time.perf_counter()
idx = seed_bm25.Index(home)
build = time.perf_counter() - t0
def pct(v, p):
    v = sorted(v); return v[max(1, -(-len(v) * p // 100)) - 1]
short = []
for i in range(iters):
    t = time.perf_counter(); idx.search(Q["short"][i % len(Q["short"])]); short.append((time.perf_counter() - t) * 1e6)
turn = []
for i in range(max(20, iters // 10)):
    t = time.perf_counter(); idx.search(Q["turn"]); turn.append((time.perf_counter() - t) * 1e6)
print(json.dumps({"build_ms": build * 1e3, "docs": len(idx.names),
                  "short": {"p50_us": pct(short, 50), "p99_us": pct(short, 99)},
                  "turn": {"p50_us": pct(turn, 50), "p99_us": pct(turn, 99)},
                  "peak_rss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""


def measure(scale, home, work, big):
    """Every figure for one home: {(metric, engine): value}; times in ms, memory in MiB."""
    r = {}
    db = os.path.join(work, f"{scale}.redb")
    tv = os.path.join(work, f"{scale}.tantivy")
    runs_build = 2 if big else 5
    py = VENV_PY
    print(f"[{scale}] skillidx CLI: full build", flush=True)
    # Every build is timed after one untimed run, so that no engine pays for reading a cold
    # home from disk (the first run at 90k took 17.6 s against 6.0 s warm: a median of two
    # runs was half disk).
    r["full build", "skillidx CLI"] = hyperfine(f"{BIN} sync --home {home} --db {db}", runs_build,
                                                 prepare=f"rm -f {db}", warmup=1) * 1e3
    if os.path.exists(db):
        os.remove(db)
    r["full build peak memory (MiB)", "skillidx CLI"] = peak_rss_mib([BIN, "sync", "--home", home, "--db", db])
    settle(home, db)
    r["index on disk (MB)", "skillidx CLI"] = os.path.getsize(db) / 1e6
    print(f"[{scale}] a bare walk: find HOME -name SKILL.md -printf '%T@\\n'", flush=True)
    r["sync, nothing changed", "find (walk and stat)"] = hyperfine(
        f"find {home}/ -name SKILL.md -printf '%T@\\n'", 10, warmup=1) * 1e3
    print(f"[{scale}] skillidx CLI: sync unchanged, one changed, first answer", flush=True)
    r["sync, nothing changed", "skillidx CLI"] = hyperfine(f"{BIN} sync --home {home} --db {db}", 10, warmup=1) * 1e3
    copy = os.path.join(work, f"{scale}-copy")
    shutil.copytree(os.path.join(home, "skills"), os.path.join(copy, "skills"), symlinks=False)
    copy_db = os.path.join(work, f"{scale}-copy.redb")
    settle(copy, copy_db)
    victim = min(os.path.join(d, "SKILL.md") for d, _, f in os.walk(os.path.join(copy, "skills")) if "SKILL.md" in f)
    # Unchanged and one changed, timed alike on the same copy, so their difference is the
    # cost of the change.
    r["sync, nothing changed (copy)", "skillidx CLI"] = hyperfine(
        f"{BIN} sync --home {copy} --db {copy_db}", 5, prepare="true", warmup=1) * 1e3
    r["sync, one skill changed", "skillidx CLI"] = hyperfine(
        f"{BIN} sync --home {copy} --db {copy_db}", 5,
        prepare=f"echo \"edit $RANDOM$RANDOM zebra$RANDOM\" >> {q(victim)}") * 1e3
    shutil.rmtree(copy, ignore_errors=True)
    fr = json.loads(run([PEERS, "freshness", home, "500"]).stdout)
    r["freshness check p50 (µs)", "skillidx in-process"] = fr["p50_us"]
    r["freshness check p99 (µs)", "skillidx in-process"] = fr["p99_us"]
    r["first answer, new process", "skillidx CLI"] = hyperfine(
        f"{BIN} search {q(SHORT[0])} --home {home} --db {db}", 20, warmup=3) * 1e3
    batch = "".join(json.dumps({"query": (TURN if i % 10 == 9 else SHORT[i % len(SHORT)])}) + "\n" for i in range(2000))
    r["peak memory after 2,000 queries (MiB)", "skillidx CLI"] = peak_rss_mib(
        [BIN, "search", "--batch", "--home", home, "--db", db], stdin=batch)
    if os.path.exists(py):
        python_module(r, home, db)
    else:
        print(f"[{scale}] no {py}: the Python module is left out (bash tests/python/run.sh)", flush=True)
    in_process(r, home, db, work, scale, big)
    return r


def python_module(r, home, db):
    py = VENV_PY
    print("  skillidx Python module", flush=True)
    r["first answer, new process", "skillidx Python"] = hyperfine(
        f"{py} -c {q(f'import skillidx; skillidx.Index(home={home!r}, db={db!r}, readonly=True).search({SHORT[0]!r})')}",
        10, warmup=2) * 1e3
    pl = json.loads(run([py, "-c", PY_LATENCY, home, db, QUERIES_FILE, "2000"]).stdout)
    for eng, v in (("skillidx Python", pl),):
        r["search p50, short (µs)", eng] = v["short"]["p50_us"]
        r["search p99, short (µs)", eng] = v["short"]["p99_us"]
        r["search p50, 200-word turn (µs)", eng] = v["turn"]["p50_us"]
        r["search p99, 200-word turn (µs)", eng] = v["turn"]["p99_us"]


def in_process(r, home, db, work, scale, big):
    tv = os.path.join(work, f"{scale}.tantivy")
    runs_build = 2 if big else 5
    print(f"[{scale}] skillidx and tantivy in process", flush=True)
    for eng in ("skillidx", "skillidx-seed"):
        v = json.loads(run([PEERS, "latency", eng, db, QUERIES_FILE, "4000"]).stdout)
        e = f"{eng} in-process"
        r["first answer in process, open + search", e] = v["first_answer_ms"]
        r["search p50, short (µs)", e] = v["short"]["p50_us"]
        r["search p99, short (µs)", e] = v["short"]["p99_us"]
        r["search p50, 200-word turn (µs)", e] = v["turn"]["p50_us"]
        r["search p99, 200-word turn (µs)", e] = v["turn"]["p99_us"]
        r["peak memory after 5,000 queries (MiB)", e] = v["peak_rss_kib"] / 1024
    print(f"[{scale}] tantivy", flush=True)
    r["full build", "tantivy"] = hyperfine(f"{PEERS} tantivy-build {home} {tv}", runs_build, warmup=1) * 1e3
    r["full build peak memory (MiB)", "tantivy"] = peak_rss_mib([PEERS, "tantivy-build", home, tv])
    r["first answer, new process", "tantivy"] = hyperfine(f"{PEERS} tantivy-search {tv} {q(SHORT[0])}", 20, warmup=3) * 1e3
    v = json.loads(run([PEERS, "latency", "tantivy", tv, QUERIES_FILE, "4000"]).stdout)
    r["first answer in process, open + search", "tantivy"] = v["first_answer_ms"]
    r["search p50, short (µs)", "tantivy"] = v["short"]["p50_us"]
    r["search p99, short (µs)", "tantivy"] = v["short"]["p99_us"]
    r["search p50, 200-word turn (µs)", "tantivy"] = v["turn"]["p50_us"]
    r["search p99, 200-word turn (µs)", "tantivy"] = v["turn"]["p99_us"]
    r["peak memory after 5,000 queries (MiB)", "tantivy"] = v["peak_rss_kib"] / 1024
    r["docs", "tantivy"] = json.loads(run([PEERS, "tantivy-build", home, tv]).stdout)["docs"]
    r["index on disk (MB)", "tantivy"] = sum(
        os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(tv) for f in fs) / 1e6
    # Like for like: the same documents under all six of skillidx's fields (what its index
    # holds for the default ranking), where `tantivy-build` indexes the seed document alone.
    print(f"[{scale}] tantivy, six fields", flush=True)
    tvf = tv + "-fields"
    r["full build", "tantivy, six fields"] = hyperfine(f"{PEERS} tantivy-build-fields {home} {tvf}", runs_build,
                                                       warmup=1) * 1e3
    r["full build peak memory (MiB)", "tantivy, six fields"] = peak_rss_mib([PEERS, "tantivy-build-fields", home, tvf])
    r["index on disk (MB)", "tantivy, six fields"] = sum(
        os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(tvf) for f in fs) / 1e6
    print(f"[{scale}] seed (pure Python)", flush=True)
    py = SEED_PY
    seed = [py, os.path.join(HERE, "seed_bm25.py"), home, SHORT[0]]
    r["first answer, new process", "seed Python"] = hyperfine(" ".join(q(a) for a in seed), 1 if big else 3) * 1e3
    sv = json.loads(run([py, "-c", SEED_LATENCY, home, QUERIES_FILE, "300" if big else "2000", HERE]).stdout)
    r["full build", "seed Python"] = sv["build_ms"]
    r["docs", "seed Python"] = sv["docs"]
    r["search p50, short (µs)", "seed Python"] = sv["short"]["p50_us"]
    r["search p99, short (µs)", "seed Python"] = sv["short"]["p99_us"]
    r["search p50, 200-word turn (µs)", "seed Python"] = sv["turn"]["p50_us"]
    r["search p99, 200-word turn (µs)", "seed Python"] = sv["turn"]["p99_us"]
    r["full build peak memory (MiB)", "seed Python"] = sv["peak_rss_kib"] / 1024
    stats = json.loads(run([BIN, "stats", "--home", home, "--db", db, "--json"]).stdout)
    r["docs", "skillidx CLI"] = find_active(stats)


def find_active(stats):
    """The offered-skill count from `skillidx stats --json` (shape-tolerant)."""
    if isinstance(stats, list):
        stats = stats[0] if stats else {}
    for k in ("active", "docs", "offered"):
        if isinstance(stats.get(k), (int, float)):
            return stats[k]
    return float("nan")


METRICS = [
    ("docs", ""),
    ("full build", "ms"),
    ("full build peak memory (MiB)", "MiB"),
    ("index on disk (MB)", "MB"),
    ("sync, nothing changed", "ms"),
    ("sync, nothing changed (copy)", "ms"),
    ("sync, one skill changed", "ms"),
    ("freshness check p50 (µs)", "µs"),
    ("freshness check p99 (µs)", "µs"),
    ("first answer, new process", "ms"),
    ("first answer in process, open + search", "ms"),
    ("search p50, short (µs)", "µs"),
    ("search p99, short (µs)", "µs"),
    ("search p50, 200-word turn (µs)", "µs"),
    ("search p99, 200-word turn (µs)", "µs"),
    ("peak memory after 2,000 queries (MiB)", "MiB"),
    ("peak memory after 5,000 queries (MiB)", "MiB"),
]


def fmt(v):
    if v is None:
        return "–"
    if isinstance(v, float) and v != v:
        return "?"
    if v >= 100:
        return f"{v:,.0f}"
    if v >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def best_skillidx(r, metric):
    """The skillidx figure a peer is compared with: CLI for whole commands, in-process
    (default ranking) for latencies."""
    for e in ("skillidx CLI", "skillidx in-process", "skillidx Python"):
        if (metric, e) in r:
            return r[metric, e]
    return None


def table(scale, r):
    lines = [f"### {scale}", "",
             "| | " + " | ".join(ENGINES) + " | seed ÷ skillidx | tantivy ÷ skillidx |",
             "|---|" + "---:|" * (len(ENGINES) + 2)]
    for metric, unit in METRICS:
        if not any((metric, e) in r for e in ENGINES):
            continue
        unit_s = f" ({unit})" if unit and "(" not in metric else ""
        cells = [fmt(r.get((metric, e))) for e in ENGINES]
        ours = best_skillidx(r, metric)
        if metric.startswith(("search", "first answer in process")):
            ours = r.get((metric, "skillidx in-process"), ours)
        ratio = lambda e: fmt(r[metric, e] / ours) + "×" if (metric, e) in r and ours and metric != "docs" else "–"
        lines.append(f"| {metric}{unit_s} | " + " | ".join(cells) + f" | {ratio('seed Python')} | {ratio('tantivy')} |")
    return "\n".join(lines) + "\n"


# Issue 11: each a ratio to a peer measured in the same run, at 2,800 and 90k skills.
# (metric, engine, peer engine, limit on engine ÷ peer, text); a limit in ms when peer is None.
TARGETS = [
    ("search p50, short (µs)", "skillidx in-process", "tantivy", 1.0, "short query p50, default ranking ≤ 1.0× tantivy"),
    ("search p50, short (µs)", "skillidx-seed in-process", "tantivy", 1.5, "short query p50, seed ranking ≤ 1.5× tantivy"),
    ("search p99, short (µs)", "skillidx in-process", "tantivy", 1.5, "short query p99, default ranking ≤ 1.5× tantivy"),
    ("search p99, short (µs)", "skillidx-seed in-process", "tantivy", 1.5, "short query p99, seed ranking ≤ 1.5× tantivy"),
    ("search p50, 200-word turn (µs)", "skillidx in-process", "tantivy", 0.7, "200-word turn p50 ≤ 0.7× tantivy"),
    ("first answer, new process", "skillidx CLI", "tantivy", 1.0, "first answer in a new process ≤ 1.0× tantivy"),
    ("full build", "skillidx CLI", "tantivy", 1.0, "full build (with parsing) ≤ 1.0× tantivy"),
    ("full build peak memory (MiB)", "skillidx CLI", "tantivy", 2.0, "full-build peak memory ≤ 2× tantivy"),
    ("index on disk (MB)", "skillidx CLI", "tantivy", 3.0, "index file ≤ 3× tantivy's index directory"),
    ("full build", "skillidx CLI", "tantivy, six fields", 1.0, "like for like: full build ≤ 1.0× tantivy on the same six fields"),
    ("full build peak memory (MiB)", "skillidx CLI", "tantivy, six fields", 2.0, "like for like: peak memory ≤ 2× tantivy on the same six fields"),
    ("index on disk (MB)", "skillidx CLI", "tantivy, six fields", 3.0, "like for like: index file ≤ 3× tantivy on the same six fields"),
    ("sync, nothing changed", "skillidx CLI", "find (walk and stat)", 2.0, "unchanged sync ≤ 2× `find -name SKILL.md -printf '%T@'`"),
    ("sync, one skill changed", "skillidx CLI", None, 50.0, "one changed skill ≤ 50 ms more than the unchanged sync (same copy)"),
]


def targets(results):
    lines = ["| target | scale | measured | limit | |", "|---|---|---:|---:|---|"]
    for scale, r in results.items():
        if scale == "hermes-170":
            continue
        for metric, eng, peer, limit, text in TARGETS:
            v = r.get((metric, eng))
            if v is None:
                continue
            if peer is None:
                base = r.get(("sync, nothing changed (copy)", eng))
                if base is None:
                    continue
                extra = v - base
                ok = extra <= limit
                lines.append(f"| {text} | {scale} | {fmt(v)} − {fmt(base)} = {extra:+,.0f} ms | +{limit:.0f} ms | {'met' if ok else '**missed**'} |")
                continue
            p = r.get((metric, peer))
            if not p:
                continue
            ratio = v / p
            ok = ratio <= limit
            lines.append(f"| {text} | {scale} | {fmt(v)} vs {fmt(p)}: {ratio:.2f}× | {limit:g}× | {'met' if ok else '**missed**'} |")
    return "\n".join(lines) + "\n"


README_START = "<!-- compare.py: performance tables -->"
README_END = "<!-- /compare.py -->"
README_ROWS = [  # (label, metric, engines, unit)
    ("full build", "full build", ["skillidx CLI", "seed Python", "tantivy"], ""),
    ("full build, peak memory (MiB)", "full build peak memory (MiB)", ["skillidx CLI", "seed Python", "tantivy"], ""),
    ("index on disk (MB)", "index on disk (MB)", ["skillidx CLI", None, "tantivy"], ""),
    ("sync, nothing changed (find: walk and stat)", "sync, nothing changed", ["skillidx CLI", None, "find (walk and stat)"], ""),
    ("sync, one skill changed (unchanged on the same copy)", None, None, ""),
    ("first answer in a new process", "first answer, new process", ["skillidx CLI", "seed Python", "tantivy"], ""),
    ("search p50, short query (µs; seed ranking in brackets)", "search p50, short (µs)", ["skillidx in-process", "seed Python", "tantivy"], ""),
    ("search p99, short query (µs)", "search p99, short (µs)", ["skillidx in-process", "seed Python", "tantivy"], ""),
    ("search p50, 200-word turn (µs)", "search p50, 200-word turn (µs)", ["skillidx in-process", "seed Python", "tantivy"], ""),
]


def readme_tables(results):
    out = []
    names = {"hub-90k": "hub, ~90,000 skills", "corpus-2800": "~2,800 real skills", "hermes-170": "Hermes' 170 skills"}
    for scale in ("hub-90k", "corpus-2800"):
        r = results.get(scale)
        if not r:
            continue
        out += [f"| {names[scale]} | skillidx | seed (Python) | tantivy / find |", "|---|---:|---:|---:|"]
        for label, metric, engines, _ in README_ROWS:
            if metric is None:
                a, b = r.get(("sync, one skill changed", "skillidx CLI")), r.get(("sync, nothing changed (copy)", "skillidx CLI"))
                if a is not None and b is not None:
                    out.append(f"| {label} | {fmt(a)} ({fmt(b)}) | rebuild | rebuild |")
                continue
            cells = []
            for e in engines:
                v = r.get((metric, e)) if e else None
                c = fmt(v) if v is not None else "–"
                if e == "skillidx in-process" and metric == "search p50, short (µs)":
                    sv = r.get((metric, "skillidx-seed in-process"))
                    if sv is not None:
                        c += f" ({fmt(sv)})"
                cells.append(c)
            out.append(f"| {label} | " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out)


def update_readme(results):
    path = os.path.join(REPO, "README.md")
    text = open(path, encoding="utf-8").read()
    if README_START not in text or README_END not in text:
        print("README.md has no performance-table markers; left alone", file=sys.stderr)
        return
    a = text.index(README_START) + len(README_START)
    b = text.index(README_END)
    text = text[:a] + "\n" + readme_tables(results) + "\n" + text[b:]
    open(path, "w", encoding="utf-8").write(text)


def growth(results):
    scales = [s for s in ("hermes-170", "corpus-2800", "hub-90k") if s in results]
    if len(scales) < 2:
        return ""
    a, b = scales[0], scales[-1]
    na = results[a].get(("docs", "skillidx CLI")) or 1
    nb = results[b].get(("docs", "skillidx CLI")) or 1
    lines = [f"Growth from {a} to {b} ({fmt(nb / na)}× the skills): cost at {b} ÷ cost at {a}", "",
             "| | " + " | ".join(ENGINES) + " |", "|---|" + "---:|" * len(ENGINES)]
    for metric, _ in METRICS[1:]:
        cells = []
        for e in ENGINES:
            x, y = results[a].get((metric, e)), results[b].get((metric, e))
            cells.append(f"{y / x:,.1f}×" if x and y else "–")
        if any(c != "–" for c in cells):
            lines.append(f"| {metric} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


PLOT = r"""
import csv, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
rows = list(csv.DictReader(open(sys.argv[1], encoding="utf-8")))
docs = {}
for r in rows:
    if r["metric"] == "docs" and r["engine"] == "skillidx CLI":
        docs[r["scale"]] = float(r["value"])
panels = [("full build", "ms", ["skillidx CLI", "seed Python", "tantivy"]),
          ("first answer, new process", "ms", ["skillidx CLI", "skillidx Python", "seed Python", "tantivy"]),
          ("search p50, short (µs)", "µs", ["skillidx in-process", "skillidx-seed in-process", "skillidx Python", "seed Python", "tantivy"]),
          ("search p50, 200-word turn (µs)", "µs", ["skillidx in-process", "skillidx-seed in-process", "skillidx Python", "seed Python", "tantivy"]),
          ("sync, nothing changed", "ms", ["skillidx CLI"]),
          ("peak memory", "MiB", None)]
COLORS = {"skillidx CLI": "C0", "skillidx in-process": "C0", "skillidx CLI (build)": "C0",
          "skillidx CLI (queries)": "C9", "skillidx-seed in-process": "C9", "skillidx Python": "C2",
          "seed Python": "C3", "tantivy": "C1", "tantivy (build)": "C1"}
fig, axes = plt.subplots(2, 3, figsize=(15, 9))
for ax, (metric, unit, engines) in zip(axes.flat, panels):
    if engines is None:
        series = {"skillidx CLI (build)": ("full build peak memory (MiB)", "skillidx CLI"),
                  "skillidx CLI (queries)": ("peak memory after 2,000 queries (MiB)", "skillidx CLI"),
                  "seed Python": ("full build peak memory (MiB)", "seed Python"),
                  "tantivy (build)": ("full build peak memory (MiB)", "tantivy")}
    else:
        series = {e: (metric, e) for e in engines}
    for label, (m, e) in series.items():
        pts = sorted((docs[r["scale"]], float(r["value"])) for r in rows if r["metric"] == m and r["engine"] == e and r["scale"] in docs)
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=label, color=COLORS.get(label))
    ax.set_xscale("log"); ax.set_yscale("log")
    ax.set_title(metric); ax.set_xlabel("skills"); ax.set_ylabel(unit)
    ax.grid(True, which="both", alpha=0.3); ax.legend(fontsize=8)
fig.suptitle("skillidx vs the seed's pure-Python BM25 vs tantivy: cost by number of skills (log-log)")
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=110)
"""


def plot(csv_path, png_path):
    for py in (sys.executable, PLOT_VENV_PY):
        if not os.path.exists(py):
            continue
        p = subprocess.run([py, "-c", PLOT, csv_path, png_path], capture_output=True, text=True)
        if p.returncode == 0:
            return True
    print("no matplotlib: python3 -m venv target/bench-venv && target/bench-venv/bin/pip install matplotlib",
          file=sys.stderr)
    return False


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hub", help="a home made by make_hub_home.py (created if missing); adds hub-90k")
    ap.add_argument("--scales", default="hermes-170,corpus-2800,hub-90k", help="which scales to run")
    ap.add_argument("--out", default=os.path.join(REPO, "bench-results"))
    ap.add_argument("--plot-only", action="store_true", help="redraw OUT/scaling.png from OUT/latest.csv")
    args = ap.parse_args()
    if args.plot_only:
        plot(os.path.join(args.out, "latest.csv"), os.path.join(args.out, "scaling.png"))
        return
    if not shutil.which("hyperfine"):
        sys.exit("hyperfine is missing: apt-get update && apt-get install -y hyperfine")
    need(BIN, "cargo build --release")
    need(PEERS, "cargo build --release -p skillidx-peers")
    need("/usr/bin/time", "apt-get install -y time")
    work = tempfile.mkdtemp(prefix="skillidx-compare-")
    hermes = os.path.join(work, "hermes-home")
    os.makedirs(hermes)
    os.symlink(os.path.join(CORPUS, "skills", "nousresearch-hermes-agent"), os.path.join(hermes, "skills"))
    homes = [("hermes-170", hermes), ("corpus-2800", CORPUS)]
    if args.hub:
        hub = os.path.abspath(args.hub)
        if not os.path.isdir(os.path.join(hub, "skills")):
            subprocess.run([sys.executable, os.path.join(HERE, "make_hub_home.py"), hub], check=True)
        homes.append(("hub-90k", hub))
    wanted = set(args.scales.split(","))
    results = {}
    try:
        for scale, home in homes:
            if scale in wanted:
                results[scale] = measure(scale, home, work, big=scale == "hub-90k")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    os.makedirs(args.out, exist_ok=True)
    commit = subprocess.run(["git", "-C", REPO, "describe", "--always", "--dirty"], capture_output=True, text=True).stdout.strip()
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    head = (f"# skillidx vs seed (pure Python) vs tantivy\n\n{time.strftime('%Y-%m-%d %H:%M')} · skillidx {commit} · "
            f"{os.cpu_count()} × {cpu} · `python3 benches/compare.py{' --hub ' + args.hub if args.hub else ''}`\n\n"
            "Times are medians (hyperfine for whole commands; each engine's own loop for single queries). "
            "Ratios: peer ÷ skillidx (CLI for whole commands, in process for latencies); above 1× skillidx is ahead. "
            "skillidx in-process = the default ranking (BM25F); skillidx-seed = the seed ranking, "
            "the same text and terms tantivy and the seed index. tantivy's BM25 has k1 = 1.2 and one-byte length norms.\n\n")
    body = "".join(table(s, r) + "\n" for s, r in results.items())
    md = head + body + "## Targets\n\n" + targets(results) + "\n" + growth(results)
    print("\n" + md)
    with open(os.path.join(args.out, "latest.md"), "w", encoding="utf-8") as f:
        f.write(md + "\n![scaling](scaling.png)\n")
    csv_path = os.path.join(args.out, "latest.csv")
    with open(csv_path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["scale", "metric", "engine", "value"])
        for s, r in results.items():
            for (m, e), v in sorted(r.items()):
                w.writerow([s, m, e, f"{v:.6g}" if isinstance(v, float) else v])
    if plot(csv_path, os.path.join(args.out, "scaling.png")):
        print(f"saved {args.out}/latest.md, latest.csv, scaling.png")
    if args.out == os.path.join(REPO, "bench-results"):
        update_readme(results)


if __name__ == "__main__":
    main()
