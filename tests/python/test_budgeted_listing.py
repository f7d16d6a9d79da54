"""The budgeted ``<available_skills>`` listing and the ``skills_search`` tool, inside the real
agent (hermes-agent 0.19.0, one ``hermes -z`` turn at a time, a scripted stub model): the
listing fits its budget at any size and is byte-identical from turn to turn, the tool is in
the request, and a skill the listing leaves out is found by the tool and loaded by the path
it gave."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any, Dict, List

import pytest

from conftest import write_skill
from test_hermes_e2e import _agent, block_of, run_turn, run_turn_requests, texts

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO.parent / "shared" / "corpus" / "skills"
CLOSING = "more skills are not listed here"


def estimate_tokens(text: str) -> int:
    """skillidx's own estimate (``hermes::budget::estimate_tokens``)."""
    ascii_chars = sum(1 for c in text if ord(c) < 128)
    return -(-ascii_chars * 2 // 7) + (len(text) - ascii_chars)


def tool_names(request: Dict[str, Any]) -> List[str]:
    return [t.get("function", {}).get("name") for t in request.get("tools") or []]


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory):
    """The end-to-end home plus 80 generated skills in four categories (names only: about
    460 tokens), one of them the quokka skill, last of its category."""
    a = _agent(tmp_path_factory)
    skills = a["home"] / "skills"
    for i in range(79):
        write_skill(skills, f"gen{i % 4}/skill-{i:03}", f"generated-skill-{i:03}",
                    f"Generated skill number {i} for the listing tests", [])
    write_skill(skills, "gen3/zz-quokka", "zz-quokka-census",
                "Count quokka populations from field survey sheets", [])
    yield a
    a["stub"].close()


def test_a_small_budget_lists_some_names_and_points_to_the_search_tool(agent: Dict[str, Any]) -> None:
    first = run_turn(agent, "how do I clean up docker images?", SKILL_RETRIEVAL_INDEX_BUDGET="200")
    second = run_turn(agent, "and kubernetes pods?", SKILL_RETRIEVAL_INDEX_BUDGET="200")
    block = block_of(texts(first)[0])
    assert block == block_of(texts(second)[0]), "the listing changed between turns"
    assert estimate_tokens(block) <= 200, block
    assert CLOSING in block and "skills_search(query)" in block, block
    assert re.match(r"^\d+ skills in \d+ categories", block), block
    assert "skills_search" in tool_names(first), tool_names(first)


def test_budget_zero_is_todays_names_only_block(agent: Dict[str, Any]) -> None:
    block = block_of(texts(run_turn(agent, "docker images", SKILL_RETRIEVAL_INDEX_BUDGET="0"))[0])
    assert "  devops: docker-cleanup, kubernetes-debugging, terraform-plan" in block.split("\n")
    assert CLOSING not in block and "zz-quokka-census" in block
    # The default budget (1,500) holds the whole home: the same block.
    assert block_of(texts(run_turn(agent, "docker images"))[0]) == block


def test_the_model_finds_an_unlisted_skill_and_loads_it_by_the_path_the_search_gave(
    agent: Dict[str, Any],
) -> None:
    stub = agent["stub"]

    def load_first_hit(body: Dict[str, Any]) -> Dict[str, Any]:
        result = [m for m in body["messages"] if m.get("role") == "tool"][-1]["content"]
        path = re.search(r"^- \*\*[^*]+\*\* \(([^)]+)\)", result, re.M).group(1)
        return {"tool": "skill_view", "arguments": {"name": path}}

    stub.script = [{"tool": "skills_search", "arguments": {"query": "quokka survey"}},
                   load_first_hit, "done"]
    sent = run_turn_requests(agent, "hi", SKILL_RETRIEVAL_INDEX_BUDGET="200")
    assert not stub.script and len(sent) == 3, [m.get("role") for m in sent[-1]["messages"]]
    block = block_of(texts(sent[0])[0])
    assert "zz-quokka-census" not in block and CLOSING in block, block
    found = [m for m in sent[1]["messages"] if m.get("role") == "tool"][-1]["content"]
    assert "- **zz-quokka-census** (gen3/zz-quokka)" in found, found
    loaded = [m for m in sent[2]["messages"] if m.get("role") == "tool"][-1]["content"]
    assert '"success": true' in loaded and "# zz-quokka-census" in loaded, loaded


def test_the_search_tool_says_so_when_nothing_matches(agent: Dict[str, Any]) -> None:
    stub = agent["stub"]
    stub.script = [{"tool": "skills_search", "arguments": {"query": "qwxzv plorbnik"}}, "ok"]
    sent = run_turn_requests(agent, "hi")
    answer = [m for m in sent[1]["messages"] if m.get("role") == "tool"][-1]["content"]
    assert answer.startswith("No installed skill matches"), answer


@pytest.mark.skipif(not CORPUS.is_dir(), reason="the shared corpus is not beside this checkout")
def test_budgets_hold_on_the_shared_corpus(tmp_path_factory: pytest.TempPathFactory) -> None:
    a = _agent(tmp_path_factory)
    try:
        shutil.copytree(CORPUS, a["home"] / "skills", dirs_exist_ok=True, symlinks=True)
        sizes = {}
        for budget in ("500", "1500", "4000"):
            first = run_turn(a, "convert a pdf to markdown", SKILL_RETRIEVAL_INDEX_BUDGET=budget)
            block = block_of(texts(first)[0])
            assert estimate_tokens(block) <= int(budget), (budget, len(block))
            assert CLOSING in block
            sizes[budget] = len(texts(first)[0])
            if budget == "1500":
                again = run_turn(a, "write a haiku", SKILL_RETRIEVAL_INDEX_BUDGET=budget)
                assert block_of(texts(again)[0]) == block
                assert "skills_search" in tool_names(first)
        # The default budget keeps the whole system message under 20,000 characters
        # (names only: about 70,000 at this size).
        assert sizes["1500"] <= 20_000, sizes
        print(json.dumps({"system_chars_by_budget": sizes}))
    finally:
        a["stub"].close()
