#!/usr/bin/env python3
"""Materialises the hub corpus (`hub-90k.jsonl.gz`: 90,711 records of name, description,
category, tags, source, platforms, version) as a Hermes home for the benchmarks:

    <out>/skills/<category>/<name>/SKILL.md

with the record's fields as YAML frontmatter and a one-line body (`# <name>`): the hub holds
metadata only, no skill bodies.

Deterministic: the same input and `--first` give byte-identical trees. Records are written in
file order. Category and name become folder names by NFKC, lower case, every run of characters
other than letters, digits, `.`, `_` and `-` turned into one `-`, ends trimmed, at most 80
characters (`other` / `skill` when nothing is left; names the Hermes walk prunes, such as
`venv`, get `-skill`). When a `<category>/<folder>` is already
taken by an earlier record, the folder gets `-<source>`, then `-<source>-2`, `-<source>-3`, ...

    make_hub_home.py OUT [--first N] [--corpus PATH] [--force]

OUT must not be inside the repository (use e.g. /tmp/skillidx-hub-90k or target/); an OUT that
already holds a `skills/` folder is left alone unless `--force` (then it is replaced). Prints the
number of skills written and the collisions resolved.
"""
import argparse
import gzip
import json
import os
import re
import shutil
import sys
import unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
DEFAULT_CORPUS = os.path.join(REPO, "..", "shared", "corpus", "hub", "hub-90k.jsonl.gz")
UNSAFE = re.compile(r"[^\w.-]+")
MAX_FOLDER = 80
# Folder names the Hermes walk skips; a skill folder must not be called that.
# (Dotted ones cannot occur: leading dots are trimmed.)
PRUNED = {"venv", "node_modules", "site-packages", "__pycache__"}


def folder_name(text, fallback):
    """A safe, deterministic folder name for `text`."""
    s = unicodedata.normalize("NFKC", str(text or "")).lower()
    s = UNSAFE.sub("-", s)
    s = re.sub(r"-{2,}", "-", s).strip("-._")[:MAX_FOLDER].strip("-._")
    if s in PRUNED:
        s += "-skill"
    return s or fallback


def yaml_str(value):
    """A YAML double-quoted scalar: JSON's escapes plus those for characters YAML forbids."""
    out = []
    for ch in json.dumps(str(value), ensure_ascii=False):
        o = ord(ch)
        if o == 0x7F or 0x80 <= o <= 0x9F or 0xD800 <= o <= 0xDFFF or o in (0x2028, 0x2029, 0xFEFF, 0xFFFE, 0xFFFF):
            out.append(f"\\u{o:04x}" if o <= 0xFFFF else f"\\U{o:08x}")
        else:
            out.append(ch)
    return "".join(out)


def yaml_list(values):
    return "[" + ", ".join(yaml_str(v) for v in (values or []) if v is not None and str(v) != "") + "]"


def skill_md(rec):
    lines = ["---", f"name: {yaml_str(rec.get('name') or '')}",
             f"description: {yaml_str(rec.get('description') or '')}",
             f"category: {yaml_str(rec.get('category') or '')}",
             f"tags: {yaml_list(rec.get('tags'))}",
             f"source: {yaml_str(rec.get('source') or '')}"]
    if rec.get("platforms"):
        lines.append(f"platforms: {yaml_list(rec.get('platforms'))}")
    lines.append(f"version: {yaml_str(rec.get('version') or '')}")
    lines += ["---", "", f"# {str(rec.get('name') or '').strip()}", ""]
    return "\n".join(lines)


def prepare_out(out, force):
    """The absolute OUT and its `skills/` path, after the safety checks (exits on refusal);
    an existing `skills/` is removed when `force`."""
    out = os.path.abspath(out)
    if os.path.commonpath([out, REPO]) == REPO and not out.startswith(os.path.join(REPO, "target") + os.sep):
        sys.exit(f"{out} is inside the repository; write it under /tmp or target/")
    skills = os.path.join(out, "skills")
    if os.path.exists(skills):
        if not force:
            sys.exit(f"{skills} exists; pass --force to replace it")
        shutil.rmtree(skills)
    return out, skills


def read_records(corpus, first=None):
    """The records of `corpus` (hub-90k.jsonl.gz) in file order, only the first `first` if given."""
    n = 0
    with gzip.open(corpus, "rt", encoding="utf-8") as f:
        for line in f:
            if first is not None and n >= first:
                break
            yield json.loads(line)
            n += 1


def write_records(skills, records, taken, made_dirs):
    """Writes each record as `skills/<category>/<folder>/SKILL.md`. `taken` holds the
    (category, folder) pairs already used (and gets the new ones); `made_dirs` the category
    folders known to exist (likewise). Returns (skills written, collisions resolved)."""
    collisions = 0
    written = 0
    for rec in records:
        cat = folder_name(rec.get("category"), "other")
        base = folder_name(rec.get("name"), "skill")
        name = base
        if (cat, name) in taken:
            collisions += 1
            name = f"{base}-{folder_name(rec.get('source'), 'hub')}"
            n = 2
            while (cat, name) in taken:
                name = f"{base}-{folder_name(rec.get('source'), 'hub')}-{n}"
                n += 1
        taken.add((cat, name))
        d = os.path.join(skills, cat, name)
        if cat not in made_dirs:
            os.makedirs(os.path.join(skills, cat), exist_ok=True)
            made_dirs.add(cat)
        os.mkdir(d)
        with open(os.path.join(d, "SKILL.md"), "w", encoding="utf-8", newline="\n") as w:
            w.write(skill_md(rec))
        written += 1
    return written, collisions


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", help="the Hermes home to create (outside the repository)")
    ap.add_argument("--first", type=int, default=None, help="only the first N records")
    ap.add_argument("--corpus", default=DEFAULT_CORPUS, help="hub-90k.jsonl.gz")
    ap.add_argument("--force", action="store_true", help="replace an existing OUT/skills")
    args = ap.parse_args()
    out, skills = prepare_out(args.out, args.force)
    made_dirs = set()
    written, collisions = write_records(skills, read_records(args.corpus, args.first), set(), made_dirs)
    print(json.dumps({"home": out, "skills": written, "categories": len(made_dirs),
                      "collisions_resolved": collisions}))

if __name__ == "__main__":
    main()
