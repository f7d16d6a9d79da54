#!/usr/bin/env python3
"""Validate tests/eval/queries.jsonl and print a summary.

Stdlib only. Usage:

    python3 tests/eval/check_queries.py [--queries PATH] [--corpus DIR]

The corpus defaults to $SKILLIDX_CORPUS, else ../shared/corpus/skills relative
to the repository root (the layout used while building skillidx). Exits 1 if
any check fails; warnings do not change the exit code.
"""
import argparse
import collections
import json
import os
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent

KINDS = ["direct", "paraphrase", "long", "typo", "zh", "ja", "ko", "mixed", "chitchat",
         "cross-lingual", "direction"]
LANGS = ["en", "zh", "ja", "ko", "mixed"]
# Rough targets from the issue/brief; used for warnings only (except the total).
TARGETS = {"direct": 45, "paraphrase": 45, "long": 30, "typo": 20, "zh": 20,
           "ja": 15, "ko": 15, "mixed": 10, "chitchat": 45, "cross-lingual": 30,
           "direction": 12}
# Chit-chat per CJK language (issue 12: greetings, thanks, small talk in each).
CHITCHAT_PER_CJK_LANG = 8
MIN_TOTAL = 220
ID_RE = re.compile(r"^q\d{3,}$")
CJK_RE = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
HANGUL_RE = re.compile(r"[\uac00-\ud7af]")
KANA_RE = re.compile(r"[\u3040-\u30ff]")
HAN_RE = re.compile(r"[\u3400-\u9fff]")


def default_corpus():
    env = os.environ.get("SKILLIDX_CORPUS")
    if env:
        return Path(env)
    return REPO.parent / "shared" / "corpus" / "skills"


def long_size(text, lang):
    """Size of a long turn: words for English, CJK characters + latin words otherwise."""
    words = len(text.split())
    if lang == "en":
        return words, "words"
    cjk = len(CJK_RE.findall(text))
    latin_words = len(re.findall(r"[A-Za-z0-9_]+", text))
    return cjk + latin_words, "cjk chars + latin words"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", default=str(HERE / "queries.jsonl"))
    ap.add_argument("--corpus", default=str(default_corpus()))
    args = ap.parse_args()

    corpus = Path(args.corpus)
    errors, warnings = [], []
    if not corpus.is_dir():
        print(f"ERROR: corpus directory not found: {corpus}", file=sys.stderr)
        return 1

    # Description language per skill folder, from manifest.tsv next to skills/ (optional).
    desc_lang = {}
    manifest = corpus.parent / "manifest.tsv"
    if manifest.is_file():
        with open(manifest, encoding="utf-8") as f:
            head = f.readline().rstrip("\n").split("\t")
            ip, il = head.index("path"), head.index("language")
            for line in f:
                cols = line.rstrip("\n").split("\t")
                desc_lang[cols[ip].removesuffix("/SKILL.md")] = cols[il]

    rows = []
    ids = set()
    texts = {}
    with open(args.queries, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                errors.append(f"line {n}: empty line")
                continue
            try:
                d = json.loads(line)
            except json.JSONDecodeError as e:
                errors.append(f"line {n}: invalid JSON ({e})")
                continue
            if not isinstance(d, dict):
                errors.append(f"line {n}: not a JSON object")
                continue
            where = f"line {n} ({d.get('id', '?')})"
            keys = set(d)
            need = {"id", "kind", "lang", "query", "relevant"}
            if keys != need:
                errors.append(f"{where}: keys {sorted(keys)} != {sorted(need)}")
                continue
            qid, kind, lang, query, rel = d["id"], d["kind"], d["lang"], d["query"], d["relevant"]
            if not isinstance(qid, str) or not ID_RE.match(qid):
                errors.append(f"{where}: bad id {qid!r}")
            elif qid in ids:
                errors.append(f"{where}: duplicate id {qid}")
            ids.add(qid)
            if kind not in KINDS:
                errors.append(f"{where}: kind {kind!r} not in {KINDS}")
            if lang not in LANGS:
                errors.append(f"{where}: lang {lang!r} not in {LANGS}")
            if not isinstance(query, str) or not query.strip():
                errors.append(f"{where}: empty query")
                query = ""
            elif query in texts:
                errors.append(f"{where}: same query text as {texts[query]}")
            texts[query] = qid
            if not isinstance(rel, list) or not all(isinstance(r, str) for r in rel):
                errors.append(f"{where}: relevant must be a list of strings")
                rel = []
            if len(set(rel)) != len(rel):
                errors.append(f"{where}: duplicate entries in relevant")
            for r in rel:
                if r.startswith("/") or r.endswith("SKILL.md") or ".." in r.split("/"):
                    errors.append(f"{where}: relevant path must be <repo>/<category>/<skill-dir>: {r}")
                elif not (corpus / r / "SKILL.md").is_file():
                    errors.append(f"{where}: no SKILL.md for relevant path {r}")
            if kind == "chitchat" and rel:
                errors.append(f"{where}: chitchat must have relevant == []")
            if kind != "chitchat" and not rel:
                errors.append(f"{where}: non-chitchat query has no relevant skills")
            # language consistency
            if kind in ("zh", "ja", "ko") and lang != kind:
                errors.append(f"{where}: kind {kind} requires lang {kind}, got {lang}")
            if kind == "mixed" and lang != "mixed":
                errors.append(f"{where}: kind mixed requires lang mixed")
            if lang == "ko" and not HANGUL_RE.search(query):
                errors.append(f"{where}: lang ko but no Hangul in query")
            if lang == "ja" and not (KANA_RE.search(query) or HAN_RE.search(query)):
                errors.append(f"{where}: lang ja but no kana/kanji in query")
            if lang == "zh" and not HAN_RE.search(query):
                errors.append(f"{where}: lang zh but no Han characters in query")
            if lang == "en" and CJK_RE.search(query):
                warnings.append(f"{where}: lang en but query contains CJK characters")
            if lang == "mixed" and not (CJK_RE.search(query) and re.search(r"[A-Za-z]{2,}", query)):
                errors.append(f"{where}: lang mixed needs both CJK/Hangul and Latin text")
            if kind == "cross-lingual" and lang not in ("en", "zh", "ja", "ko"):
                errors.append(f"{where}: cross-lingual needs lang en, zh, ja or ko")
            if kind == "cross-lingual" and desc_lang and rel:
                # at least one acceptable skill must be described in another language
                if all(desc_lang.get(r) == lang for r in rel):
                    errors.append(f"{where}: cross-lingual but every relevant skill is described in {lang}")
            if kind == "long":
                size, unit = long_size(query, lang)
                lo, hi = (120, 300) if lang == "en" else (150, 900)
                if not lo <= size <= hi:
                    warnings.append(f"{where}: long query has {size} {unit} (expected {lo}-{hi})")
            rows.append(d)

    # corpus-wide summary
    total = len(rows)
    if total < MIN_TOTAL:
        errors.append(f"only {total} queries (need at least {MIN_TOTAL})")
    by_kind = collections.Counter(d["kind"] for d in rows)
    by_lang = collections.Counter(d["lang"] for d in rows)
    for k, t in TARGETS.items():
        if by_kind[k] < max(1, int(t * 0.75)):
            warnings.append(f"kind {k}: {by_kind[k]} queries, target about {t}")
    for l in ("zh", "ja", "ko"):
        n_chat = sum(1 for d in rows if d["kind"] == "chitchat" and d["lang"] == l)
        if n_chat < CHITCHAT_PER_CJK_LANG:
            warnings.append(f"chitchat in {l}: {n_chat} queries, target {CHITCHAT_PER_CJK_LANG}")
    labelled = [d for d in rows if d["kind"] != "chitchat"]
    nrel = [len(d["relevant"]) for d in labelled]
    repos = collections.Counter(r.split("/")[0] for d in rows for r in d["relevant"])
    distinct = {r for d in rows for r in d["relevant"]}
    all_repos = sorted(p.name for p in corpus.iterdir() if p.is_dir())
    for r in all_repos:
        if repos[r] == 0:
            warnings.append(f"collection {r} is never labelled relevant")

    print(f"queries: {total}   file: {args.queries}")
    print(f"corpus:  {corpus}")
    print()
    print("per kind:")
    for k in KINDS:
        ks = [d for d in rows if d["kind"] == k]
        avg = (sum(len(d["relevant"]) for d in ks) / len(ks)) if ks else 0.0
        langs = collections.Counter(d["lang"] for d in ks)
        by = " ".join(f"{l}={langs[l]}" for l in LANGS if langs[l])
        print(f"  {k:<14}{len(ks):>4}   avg relevant {avg:4.2f}   {by}")
    print("per lang:  " + "  ".join(f"{l}={by_lang[l]}" for l in LANGS))
    if nrel:
        print(f"relevant per labelled query: avg {sum(nrel)/len(nrel):.2f}, "
              f"min {min(nrel)}, max {max(nrel)}, median {sorted(nrel)[len(nrel)//2]}")
    print(f"distinct relevant skills: {len(distinct)}")
    print("labels per collection:")
    for r in all_repos:
        print(f"  {repos[r]:>4}  {r}")
    print()
    for w in warnings:
        print("WARNING:", w)
    for e in errors:
        print("ERROR:", e)
    print("OK" if not errors else f"FAILED ({len(errors)} errors)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
