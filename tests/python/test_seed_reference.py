"""The seed ranking against an independent reference implementation of the seed plugin's
formula (`benches/seed_bm25.py`: pure Python, its own tokenizer and BM25), on real skills in
English, Chinese and Korean: same skills, same order, same scores."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import skillidx

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO.parent / "shared" / "corpus" / "skills"
COLLECTIONS = ["github-awesome-copilot", "kscz0000-antigravity-awesome-skills-cn", "nomadamas-k-skill"]

sys.path.insert(0, str(REPO / "benches"))
import seed_bm25  # noqa: E402


@pytest.mark.skipif(not CORPUS.is_dir(), reason="../shared/corpus is not beside this checkout")
def test_seed_ranking_equals_the_reference(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "skills").mkdir(parents=True)
    for c in COLLECTIONS:
        (home / "skills" / c).symlink_to(CORPUS / c)
    reference = seed_bm25.Index(str(home))
    assert len(reference.names) == len(set(reference.names)), "the homes must hold no duplicate names"
    index = skillidx.Index(home=str(home), db=str(tmp_path / "index.redb"))
    index.sync()
    queries = [json.loads(line)["query"] for line in (REPO / "tests" / "eval" / "queries.jsonl").open()]
    compared = 0
    for q in queries[::3]:
        ours = index.search(q, k=6, ranking="seed")
        theirs = reference.search(q, k=6)
        assert [h.name for h in ours] == [name for name, _ in theirs] or _tied(ours, theirs), q
        for hit, (_, score) in zip(ours, theirs):
            assert hit.score == pytest.approx(score, rel=1e-9), q
        compared += 1
    assert compared > 60


def _tied(ours, theirs) -> bool:
    """Equal scores may come in another order (the reference breaks ties by index order)."""
    if len(ours) != len(theirs):
        return False
    by_score = {}
    for hit in ours:
        by_score.setdefault(round(hit.score, 9), set()).add(hit.name)
    return all(name in by_score.get(round(score, 9), set()) for name, score in theirs)
