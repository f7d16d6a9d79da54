#!/usr/bin/env python3
"""Materialises the "scale home": the shared real-skill corpus plus the hub corpus, about 93k
skills, as one Hermes home for the benchmarks:

    <out>/skills/<repo-slug>/<category>/<skill-dir>/SKILL.md   the 2,786 corpus skills
    <out>/skills/<category>/<folder>/SKILL.md                  the 90,711 hub records
    <out>/config.yaml                                          empty (a valid Hermes home)

The corpus part keeps the paths of `../shared/corpus/skills`, so the labels of
`tests/eval/queries.jsonl` (paths relative to corpus/skills) point at the same folders. Its
`SKILL.md` files (and any `DESCRIPTION.md`) are copied byte for byte; no other file is copied.
The hub part is written exactly as `make_hub_home.py` writes it (its functions are reused), after
the corpus, in file order; a hub `<category>/<folder>` that is already a corpus folder is
de-collided by the same rule as a repeat within the hub (`-<source>`, `-<source>-2`, ...).

Deterministic: the same inputs and `--first` give byte-identical trees.

    make_scale_home.py OUT [--first N] [--force]

`--first N` keeps only the first N hub records (the corpus is always copied whole). OUT must not be
inside the repository (use e.g. /tmp/skillidx-scale-93k or target/); an OUT that already holds a
`skills/` folder is left alone unless `--force` (then it is replaced). An existing `config.yaml` is
kept. Prints the number of skills written and the collisions resolved.
"""
import argparse
import json
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_hub_home as hub  # noqa: E402

CORPUS_SKILLS = os.path.join(hub.REPO, "..", "shared", "corpus", "skills")
HUB_CORPUS = hub.DEFAULT_CORPUS
# Files of a corpus skill tree that are copied; everything else stays out.
COPIED = ("SKILL.md", "DESCRIPTION.md")


def corpus_files(root):
    """Paths (relative to `root`, `/`-separated) of the files to copy, in a fixed order."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        rel = os.path.relpath(dirpath, root)
        for fn in sorted(filenames):
            if fn in COPIED and os.path.isfile(os.path.join(dirpath, fn)):
                found.append(fn if rel == "." else f"{rel.replace(os.sep, '/')}/{fn}")
    return found


def copy_corpus(root, skills):
    """Copies the corpus files under `skills`; returns (files, the (category, folder) pairs the
    hub must not use: every corpus folder two levels below skills/)."""
    files = corpus_files(root)
    taken = set()
    for rel in files:
        parts = rel.split("/")
        if len(parts) >= 3:
            taken.add((parts[0], parts[1]))
        dst = os.path.join(skills, *parts)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copyfile(os.path.join(root, *parts), dst)
    return files, taken


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", help="the Hermes home to create (outside the repository)")
    ap.add_argument("--first", type=int, default=None, help="only the first N hub records")
    ap.add_argument("--force", action="store_true", help="replace an existing OUT/skills")
    args = ap.parse_args()
    if not os.path.isdir(CORPUS_SKILLS):
        sys.exit(f"{os.path.normpath(CORPUS_SKILLS)} not found (the shared corpus)")
    out, skills = hub.prepare_out(args.out, args.force)
    os.makedirs(skills)
    files, taken = copy_corpus(CORPUS_SKILLS, skills)
    corpus_pairs = frozenset(taken)
    corpus_collisions = 0

    def records():
        nonlocal corpus_collisions
        for rec in hub.read_records(HUB_CORPUS, args.first):
            if (hub.folder_name(rec.get("category"), "other"),
                    hub.folder_name(rec.get("name"), "skill")) in corpus_pairs:
                corpus_collisions += 1
            yield rec

    made_dirs = set()
    written, collisions = hub.write_records(skills, records(), taken, made_dirs)
    config = os.path.join(out, "config.yaml")
    if not os.path.exists(config):
        open(config, "w").close()
    corpus_skills = sum(1 for f in files if f.endswith("/SKILL.md") or f == "SKILL.md")
    print(json.dumps({"home": out, "skills": corpus_skills + written,
                      "corpus_skills": corpus_skills,
                      "corpus_descriptions": len(files) - corpus_skills,
                      "hub_skills": written, "hub_categories": len(made_dirs),
                      "collisions_resolved": collisions,
                      "collisions_with_corpus": corpus_collisions}))


if __name__ == "__main__":
    main()
