#!/usr/bin/env python3
"""The seed plugin's approach, for side-by-side measurements: a pure-Python, in-memory BM25
index built at process start from every SKILL.md of a Hermes home.

Same document (`name: description` + triggers + tags + CJK runs of the body's start), same
tokenizer rules and same Okapi/Lucene-IDF formula as skillidx's seed ranking, so the two
answer the same queries with the same skills. Used by `benches/compare_seed.py` and by the
ranking tests as an independent reference implementation.

    seed_bm25.py HOME QUERY...         # prints the top 6 for each query as JSON lines
"""
import json
import math
import os
import re
import sys
import time
import unicodedata

import yaml

EXCLUDED = {".git", ".github", ".hub", ".archive", ".venv", "venv", "node_modules",
            "site-packages", "__pycache__", ".tox", ".nox", ".pytest_cache", ".mypy_cache",
            ".ruff_cache"}
SUPPORT = {"references", "templates", "assets", "scripts"}
CJK = re.compile("[\u3040-\u309f\u30a0-\u30ff\u31f0-\u31ff\uff65-\uff9f\u3400-\u4dbf"
                 "\u4e00-\u9fff\U00020000-\U0002a6df\uac00-\ud7a3]+")


def tokenize(text):
    text = unicodedata.normalize("NFKC", text).lower()
    out = []
    for tok in re.sub(r"[^\w]", " ", text).split():
        pos = 0
        for m in CJK.finditer(tok):
            if m.start() > pos:
                out.append(tok[pos:m.start()])
            run = m.group()
            if len(run) >= 3:
                out.extend(run[i:i + 2] for i in range(len(run) - 1))
            else:
                out.append(run)
            pos = m.end()
        if pos < len(tok):
            out.append(tok[pos:])
    return out


def parse(path):
    text = open(path, encoding="utf-8").read()
    if text.startswith("\ufeff"):
        text = text[1:]
    front, body = {}, text
    if text.startswith("---"):
        m = re.search(r"\n---\s*\n", text[3:])
        if m:
            yaml_text, body = text[3:m.start() + 3], text[m.end() + 3:]
            try:
                parsed = yaml.safe_load(yaml_text)
                front = parsed if isinstance(parsed, dict) else {}
            except Exception:
                for line in yaml_text.strip().split("\n"):
                    if ":" in line:
                        k, v = line.split(":", 1)
                        front[k.strip()] = v.strip()
    return front, body


def as_list(v):
    if not v:
        return []
    if isinstance(v, list):
        return [str(x).strip() for x in v if x]
    v = str(v).strip()
    if v.startswith("[") and v.endswith("]"):
        v = v[1:-1]
    return [t.strip().strip("\"'") for t in v.split(",") if t.strip()]


def documents(home):
    for root, dirs, files in os.walk(os.path.join(home, "skills"), followlinks=True):
        dirs[:] = sorted(d for d in dirs if d not in EXCLUDED and not ("SKILL.md" in files and d in SUPPORT))
        if "SKILL.md" in files:
            path = os.path.join(root, "SKILL.md")
            try:
                front, body = parse(path)
            except (UnicodeDecodeError, OSError):
                continue
            name = str(front.get("name") or os.path.basename(root)).strip()
            desc = str(front.get("description") or "").strip().strip("'\"")
            meta = front.get("metadata") if isinstance(front.get("metadata"), dict) else {}
            hermes = meta.get("hermes") if isinstance(meta.get("hermes"), dict) else {}
            tags = []
            for tag in as_list(front.get("tags")) + as_list(meta.get("tags")) + as_list(hermes.get("tags")):
                if tag.lower() not in (t.lower() for t in tags):
                    tags.append(tag)
            runs = " ".join(CJK.findall(body[:3000]))[:200]
            text = " ".join([f"{name}: {desc}"] + as_list(front.get("triggers")) + tags + ([runs] if runs else []))
            yield name, desc, text


class Index:
    def __init__(self, home, k1=1.5, b=0.75):
        docs = list(documents(home))
        self.names = [d[0] for d in docs]
        toks = [tokenize(d[2]) for d in docs]
        n = len(docs)
        avgdl = sum(map(len, toks)) / n if n else 0.0
        tfs = []
        df = {}
        for t in toks:
            counts = {}
            for w in t:
                counts[w] = counts.get(w, 0) + 1
            tfs.append(counts)
            for w in counts:
                df[w] = df.get(w, 0) + 1
        self.postings = {}
        for i, counts in enumerate(tfs):
            dl = len(toks[i])
            for w, tf in counts.items():
                idf = math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5))
                weight = idf * (tf * (k1 + 1)) / (tf + k1 * (1 - b + b * dl / avgdl))
                self.postings.setdefault(w, []).append((i, weight))

    def search(self, query, k=6):
        scores = {}
        for w in dict.fromkeys(tokenize(query)):
            for i, weight in self.postings.get(w, ()):
                scores[i] = scores.get(i, 0.0) + weight
        ranked = sorted((s, i) for i, s in scores.items() if s > 0)
        ranked.sort(key=lambda x: -x[0])
        return [(self.names[i], s) for s, i in ranked[:k]]


if __name__ == "__main__":
    t0 = time.perf_counter()
    index = Index(sys.argv[1])
    built = time.perf_counter() - t0
    for q in sys.argv[2:]:
        print(json.dumps({"query": q, "hits": index.search(q)}, ensure_ascii=False))
    print(json.dumps({"docs": len(index.names), "build_s": built}), file=sys.stderr)
