"""The plugin's per-session allow-list: Hermes' own <available_skills> block, read by the
llm_request middleware, cached per session_id (bounded), applied to the injected blocks of
the same request and used to pre-filter the next turns' retrieval."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict

import pytest

from skillidx import Index

HEADING = "## Retrieved Skills (top-K relevant to your query)"
SYSTEM = (
    "You are Hermes.\n<available_skills>\n"
    "  devops: Build, deploy and operate infrastructure\n"
    "    - kubernetes-debugging: Debug failing Kubernetes pods\n"
    "    - terraform-plan\n"
    "</available_skills>\nOnly proceed without loading a skill if genuinely none are relevant."
)


@pytest.fixture
def plugin(home: Path, monkeypatch: pytest.MonkeyPatch):
    from skillidx import hermes_plugin as p

    monkeypatch.setenv("HERMES_HOME", str(home))
    index = Index(home=str(home))
    index.sync()
    p._index = index
    p._allowed.clear()
    yield p
    index.wait(60)
    p._index = None
    p._allowed.clear()


def request(system: str, user: str) -> Dict[str, Any]:
    return {"model": "m", "messages": [
        {"role": "system", "content": system},
        {"role": "user", "content": user},
    ]}


def test_the_block_is_the_allow_list_of_the_session(plugin: Any) -> None:
    message = "clean docker images and debug kubernetes pods"
    # First turn: nothing cached, the engine's own rules (no tool information).
    first = plugin._on_pre_llm_call(user_message=message, session_id="s1")
    assert first and "**docker-cleanup**" in first["context"]
    assert plugin._allowed_for("s1") is None
    user = message + "\n\n" + first["context"]
    out = plugin._on_llm_request(request=request(SYSTEM, user), session_id="s1")
    sent = out["request"]["messages"]
    # Cached from the text before compaction, in block order.
    assert plugin._allowed_for("s1") == [("devops", "kubernetes-debugging"), ("devops", "terraform-plan")]
    # The injected block keeps only what the block lists; the system text is compacted.
    assert "docker-cleanup" not in sent[1]["content"]
    assert "**kubernetes-debugging**" in sent[1]["content"]
    assert "  devops: kubernetes-debugging, terraform-plan" in sent[0]["content"]
    # Deterministic: the replayed turn gives the same bytes again.
    again = plugin._on_llm_request(request=request(SYSTEM, user), session_id="s1")
    assert again["request"]["messages"][1]["content"] == sent[1]["content"]
    # Next turn: pre-filtered with the cached list (over-fetched, so K can still be met).
    second = plugin._on_pre_llm_call(user_message=message, session_id="s1")
    assert second and "docker-cleanup" not in second["context"]
    assert "**kubernetes-debugging**" in second["context"]
    # Another session is not affected.
    assert plugin._allowed_for("s2") is None


def test_no_block_means_nothing_is_injected(plugin: Any) -> None:
    message = "clean docker images"
    block = plugin._on_pre_llm_call(user_message=message, session_id="s")["context"]
    out = plugin._on_llm_request(request=request("No skills tool here.", message + "\n\n" + block),
                                 session_id="s")
    assert out["request"]["messages"][1]["content"] == message
    assert plugin._allowed_for("s") == []
    assert plugin._on_pre_llm_call(user_message=message, session_id="s") is None


def test_content_parts_and_other_api_modes(plugin: Any) -> None:
    block = plugin._on_pre_llm_call(user_message="docker images", session_id="a")["context"]
    req = {"system": [{"type": "text", "text": SYSTEM}],
           "messages": [{"role": "user", "content": [{"type": "text", "text": "docker images\n\n" + block}]}]}
    out = plugin._on_llm_request(request=req, session_id="a")["request"]
    assert HEADING not in out["messages"][0]["content"][0]["text"]
    assert "  devops: kubernetes-debugging, terraform-plan" in out["system"][0]["text"]
    assert plugin._allowed_for("a") == [("devops", "kubernetes-debugging"), ("devops", "terraform-plan")]


def test_the_cache_is_bounded(plugin: Any) -> None:
    for i in range(plugin._ALLOWED_MAX + 10):
        plugin._remember_allowed(f"s{i}", [("c", f"n{i}")])
    assert len(plugin._allowed) == plugin._ALLOWED_MAX
    assert plugin._allowed_for("s0") is None and plugin._allowed_for("s9") is None
    assert plugin._allowed_for("s10") == [("c", "n10")]
    # A session in use stays when others are added.
    for i in range(plugin._ALLOWED_MAX - 1):
        plugin._remember_allowed(f"t{i}", [])
    assert plugin._allowed_for("s10") == [("c", "n10")]
    plugin._remember_allowed(None, [("c", "x")])  # no session id: not cached
    assert None not in plugin._allowed


def test_platform_disabled_follows_hermes_platform_not_the_hook_argument(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from skillidx import hermes_plugin as p

    (home / "config.yaml").write_text(
        "skills:\n  platform_disabled:\n    telegram: [docker-cleanup]\n", encoding="utf-8")
    monkeypatch.delenv("HERMES_PLATFORM", raising=False)
    monkeypatch.delenv("HERMES_SESSION_PLATFORM", raising=False)
    index = Index(home=str(home))
    index.sync()
    p._index = index
    try:
        # The hook's platform ("cli", or a gateway's name) is not what Hermes filters on.
        out = p._on_pre_llm_call(user_message="clean docker images", platform="telegram")
        assert out and "**docker-cleanup**" in out["context"]
        monkeypatch.setenv("HERMES_PLATFORM", "telegram")
        out = p._on_pre_llm_call(user_message="clean docker images", platform="cli")
        assert out is None or "docker-cleanup" not in out["context"]
    finally:
        index.wait(60)
        p._index = None
