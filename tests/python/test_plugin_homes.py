"""The plugin serves the home Hermes registered it for, with the offer rules of the Hermes it
runs in: Hermes 0.21 registers plugins under a per-home override (`set_hermes_home_override`)
that is reset before any hook runs, and a process may serve several homes."""

from __future__ import annotations

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
        p._index, p._profile, p._home = None, None, None
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
