"""The plugin serves the home Hermes registered it for, with the offer rules of the Hermes it
runs in: Hermes 0.21 registers plugins under a per-home override (`set_hermes_home_override`)
that is reset before any hook runs, and a process may serve several homes."""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any, List

import pytest

import skillidx
from conftest import Ctx, write_skill


@pytest.fixture
def plugin(monkeypatch: pytest.MonkeyPatch):
    from skillidx import hermes_plugin as p

    def reset() -> None:
        if p._index is not None:
            p._index.wait(60)
        p._index, p._index_cwd, p._profile, p._home = None, None, None, None
        p._last_problem.clear()

    reset()
    yield p
    reset()


def test_the_home_registered_for_is_served_after_the_override_is_gone(
    plugin: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hermes_constants import reset_hermes_home_override, set_hermes_home_override

    env_home, registered = tmp_path / "env-home", tmp_path / "registered"
    write_skill(env_home / "skills", "devops/docker", "docker-cleanup",
                "Remove dangling docker images and containers", [])
    write_skill(registered / "skills", "science/zebra", "zebra-telescope",
                "Point the zebra telescope at a star", [])
    # 0.19 reads a `disabled` string as one name, so this hides nothing there; the
    # newest release would read it as a list and hide the skill.
    (registered / "config.yaml").write_text("skills:\n  disabled: \"['zebra-telescope']\"\n")
    monkeypatch.setenv("HERMES_HOME", str(env_home))
    token = set_hermes_home_override(str(registered))
    try:
        plugin.register(Ctx())
    finally:
        reset_hermes_home_override(token)
    out = plugin._on_pre_llm_call(user_message="point the zebra telescope at a star",
                                  conversation_history=[])
    assert out and skillidx.injected_ids(out["context"]) == ["zebra-telescope"], out
    assert Path(plugin._index.home) == registered
    assert plugin._hermes_version() == "0.19.0"


def test_one_process_serves_two_homes_each_from_its_own_index(tmp_path: Path) -> None:
    """A gateway serving two profiles: Hermes 0.21 imports the plugin once per home (a module
    of its own for each, `hermes_plugins.<slug>__home_<hash>`) and registers each under that
    home's override; each copy then answers from its home's index."""
    import importlib.util

    from hermes_constants import reset_hermes_home_override, set_hermes_home_override
    from skillidx import hermes_plugin

    homes = {"telescope": tmp_path / "work", "docker": tmp_path / "personal"}
    write_skill(homes["telescope"] / "skills", "science/zebra", "zebra-telescope",
                "Point the zebra telescope at a star", [])
    write_skill(homes["docker"] / "skills", "devops/docker", "docker-cleanup",
                "Remove dangling docker images and containers", [])
    copies = {}
    for key, home in homes.items():
        spec = importlib.util.spec_from_file_location(f"hermes_plugins.skill_retrieval__home_{key}",
                                                      hermes_plugin.__file__)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        token = set_hermes_home_override(str(home))
        try:
            module.register(Ctx())
        finally:
            reset_hermes_home_override(token)
        copies[key] = module
    try:
        for key, message, want in [("telescope", "point the zebra telescope at a star", "zebra-telescope"),
                                   ("docker", "remove dangling docker images", "docker-cleanup")]:
            out = copies[key]._on_pre_llm_call(user_message=message, conversation_history=[])
            assert out and skillidx.injected_ids(out["context"]) == [want], (key, out)
            assert Path(copies[key]._index.home) == homes[key]
        # Neither answers from the other's index.
        assert copies["docker"]._on_pre_llm_call(user_message="point the zebra telescope at a star",
                                                 conversation_history=[]) is None
    finally:
        for module in copies.values():
            if module._index is not None:
                module._index.wait(60)


def _plugin_copy_for(home: Path, key: str) -> Any:
    """The plugin as Hermes 0.21 loads it for `home`: a module of its own, registered under
    that home's override."""
    import importlib.util

    from hermes_constants import reset_hermes_home_override, set_hermes_home_override
    from skillidx import hermes_plugin

    spec = importlib.util.spec_from_file_location(f"hermes_plugins.skill_retrieval__home_{key}",
                                                  hermes_plugin.__file__)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    token = set_hermes_home_override(str(home))
    try:
        module.register(Ctx())
    finally:
        reset_hermes_home_override(token)
    return module


def test_a_gateway_serves_two_profiles_of_one_index_file_and_a_sync_of_one_leaves_the_other(
    tmp_path: Path,
) -> None:
    """Two profiles of one root share one index file, keyed per profile. A skill added to one
    is found by that profile's next turns after the background sync its turn started; the
    other profile's figures and answers stay exactly as they were."""
    root = tmp_path / "hermes"
    work = root / "profiles" / "work"
    write_skill(root / "skills", "science/zebra", "zebra-telescope",
                "Point the zebra telescope at a star", [])
    write_skill(work / "skills", "devops/docker", "docker-cleanup",
                "Remove dangling docker images and containers", [])
    copies = {"default": _plugin_copy_for(root, "default"), "work": _plugin_copy_for(work, "work")}

    def turn(key: str, message: str) -> List[str]:
        out = copies[key]._on_pre_llm_call(user_message=message, conversation_history=[])
        return skillidx.injected_ids(out["context"]) if out else []

    try:
        assert copies["default"]._index.db == copies["work"]._index.db
        assert (copies["default"]._index.profile, copies["work"]._index.profile) == ("default", "work")
        assert turn("default", "point the zebra telescope at a star") == ["zebra-telescope"]
        assert turn("work", "point the zebra telescope at a star") == []
        assert turn("work", "remove dangling docker images") == ["docker-cleanup"]
        before = copies["default"]._index.stats()

        write_skill(work / "skills", "devops/k8s", "kubernetes-debugging",
                    "Debug failing Kubernetes pods stuck in CrashLoopBackOff", [])
        turn("work", "debug the failing kubernetes pods")  # sees the change, syncs in the background
        assert copies["work"]._index.wait(60)
        assert turn("work", "debug the failing kubernetes pods") == ["kubernetes-debugging"]
        assert copies["work"]._index.stats()["active"] == 2

        assert copies["default"]._index.stats() == before
        assert turn("default", "debug the failing kubernetes pods") == []
        assert turn("default", "point the zebra telescope at a star") == ["zebra-telescope"]
    finally:
        for module in copies.values():
            if module._index is not None:
                module._index.wait(60)


def test_a_home_outside_dot_hermes_serves_its_own_profile_not_the_sticky_one(
    plugin: Any, tmp_path: Path
) -> None:
    """A deployment's home elsewhere (`/srv/hermes`): Hermes calls its profile "custom", and
    the root's `active_profile` names another one. Hermes, started with that home, serves the
    default profile; so does the plugin."""
    from hermes_constants import reset_hermes_home_override, set_hermes_home_override

    root = tmp_path / "srv-hermes"
    write_skill(root / "skills", "science/zebra", "zebra-telescope",
                "Point the zebra telescope at a star", [])
    write_skill(root / "profiles" / "work" / "skills", "devops/docker", "docker-cleanup",
                "Remove dangling docker images and containers", [])
    (root / "active_profile").write_text("work\n")

    class CustomCtx(Ctx):
        profile_name = "custom"

    token = set_hermes_home_override(str(root))
    try:
        plugin.register(CustomCtx())
    finally:
        reset_hermes_home_override(token)
    assert plugin._index.profile == "default"
    out = plugin._on_pre_llm_call(user_message="point the zebra telescope at a star",
                                  conversation_history=[])
    assert out and skillidx.injected_ids(out["context"]) == ["zebra-telescope"]


def _record_verdict(home: Path, skill_dir: Path, verdict: str) -> None:
    """Hermes 0.21.3's scan verdict for ``skill_dir`` as ``tools/skills_guard.scan_skill_cached``
    writes it (its recipe, written out here: SHA-256 over each file's relative path, NUL and
    bytes, by path; the source identity ``sha256("project-local\\0")[:16]``)."""
    import hashlib
    import json

    h = hashlib.sha256()
    for rel, f in sorted((f.relative_to(skill_dir).as_posix(), f)
                         for f in skill_dir.rglob("*") if f.is_file()):
        h.update(rel.encode() + b"\0")
        h.update(f.read_bytes())
    digest = h.hexdigest()
    source = hashlib.sha256(b"project-local\0").hexdigest()[:16]
    cache = home / "cache" / "project_skill_scans"
    cache.mkdir(parents=True, exist_ok=True)
    (cache / f"{digest}-{source}.json").write_text(json.dumps({
        "bundle_hash": f"sha256:{digest}", "scanner_version": "skills-guard-v4",
        "source": "project-local", "source_url": "", "verdict": verdict,
        "trust_level": "community", "findings": [], "summary": verdict,
        "scanned_at": "2026-12-07T00:00:00+00:00"}))


def test_the_project_comes_from_the_turns_terminal_scope_where_hermes_has_one(
    plugin: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 0.21 gateway serving several profiles keeps each turn's ``TERMINAL_CWD`` in a
    per-turn scope (``agent.runtime_cwd.scope_terminal_cwd``); the process environment may
    name another profile's directory. The scope decides the project, as in Hermes'
    ``find_project_root``."""
    home, repo = tmp_path / "home", tmp_path / "repo"
    write_skill(home / "skills", "tools/deploy", "deploy", "Deploy the service with kubectl", [])
    (repo / ".git").mkdir(parents=True)
    proj = write_skill(repo / ".hermes" / "skills", "ops/deploy", "deploy",
                       "Deploy this repository's service with its own make target", []).parent
    _record_verdict(home, proj, "safe")
    (home / "config.yaml").write_text(f"skills:\n  trusted_project_dirs: [{repo}]\n")
    monkeypatch.setenv("HERMES_HOME", str(home))
    monkeypatch.setenv("TERMINAL_CWD", str(tmp_path))  # another profile's, process-wide
    scope = types.ModuleType("agent.runtime_cwd")
    scope.scope_terminal_cwd = lambda: str(repo)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "agent.runtime_cwd", scope)
    monkeypatch.setattr(plugin, "_hermes_version", lambda: "0.21.3")
    plugin.register(Ctx())
    assert plugin._index.profile == f"default@{repo.resolve()}"
    out = plugin._on_pre_llm_call(user_message="deploy the service", conversation_history=[])
    assert out and "own make target" in out["context"], out


def test_a_session_in_a_trusted_project_is_served_its_project_skills(
    plugin: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hermes 0.21 reads a trusted project's skills (found from ``TERMINAL_CWD``) before the
    profile's; the plugin then answers from the project's profile, and again from the plain
    profile once the session's directory is outside the project."""
    home, repo = tmp_path / "home", tmp_path / "repo"
    write_skill(home / "skills", "tools/deploy", "deploy", "Deploy the service with kubectl", [])
    (repo / ".git").mkdir(parents=True)
    proj = write_skill(repo / ".hermes" / "skills", "ops/deploy", "deploy",
                       "Deploy this repository's service with its own make target", []).parent
    danger = write_skill(repo / ".agents" / "skills", "ops/zebra-rollout", "zebra-rollout",
                         "Roll out the zebra telescope firmware", []).parent
    _record_verdict(home, proj, "safe")
    _record_verdict(home, danger, "dangerous")
    (home / "config.yaml").write_text(f"skills:\n  trusted_project_dirs: [{repo}]\n")
    monkeypatch.setenv("HERMES_HOME", str(home))
    monkeypatch.setenv("TERMINAL_CWD", str(repo / "src"))
    (repo / "src").mkdir()
    # Hermes 0.21.3 cannot be installed here (Python 3.14, not on PyPI): the plugin is told it.
    monkeypatch.setattr(plugin, "_hermes_version", lambda: "0.21.3")
    plugin.register(Ctx())
    assert plugin._index.profile == f"default@{repo.resolve()}"
    out = plugin._on_pre_llm_call(user_message="deploy the service", conversation_history=[])
    assert out and "own make target" in out["context"], out
    quarantined = plugin._on_pre_llm_call(user_message="roll out the zebra telescope firmware",
                                          conversation_history=[])
    assert quarantined is None or "zebra-rollout" not in quarantined["context"], quarantined
    monkeypatch.setenv("TERMINAL_CWD", str(tmp_path))
    plugin._on_pre_llm_call(user_message="deploy the service", conversation_history=[])
    assert plugin._index.profile == "default"
    plugin._index.prepare()
    plugin._index.wait(60)
    out = plugin._on_pre_llm_call(user_message="deploy the service", conversation_history=[])
    assert out and "kubectl" in out["context"], out
