"""The plugin's turn path never waits for a sync, follows a replaced index file, and logs
each new failure.

Fail points (`src/failpoint.rs`) stop a sync inside its write transaction, in another process
(`SKILLIDX_FAILPOINTS=sync-in-write=pause(DIR)`) or in the plugin's own background sync
(`_native._set_failpoint`); tests/python/run.sh builds the module with the `failpoints` feature.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

import skillidx
from skillidx import Index, _native

from conftest import Ctx, write_skill

SKILLIDX = Path(sys.executable).parent / "skillidx"
SYNC_IN_WRITE = "sync-in-write"
# A turn that takes longer than this waited for something; the pauses below last until the
# test releases them (or 60 s), so a waiting turn cannot pass by luck.
TURN_BOUND_S = 5.0
QUERY = "clean up old docker images and point the zebra telescope"
# The fail points exist only in a module built with the `failpoints` feature (run.sh builds it
# so; a release wheel has none).
needs_failpoints = pytest.mark.skipif(
    not hasattr(_native, "_set_failpoint"), reason="skillidx built without the failpoints feature"
)


@pytest.fixture
def plugin(home: Path, monkeypatch: pytest.MonkeyPatch):
    from skillidx import hermes_plugin as p

    monkeypatch.setenv("HERMES_HOME", str(home))

    def reset() -> None:
        if p._index is not None:
            p._index.wait(60)
        p._index = None
        p._profile = None
        p._last_problem.clear()

    reset()
    yield p
    reset()


def turn(p: Any, message: str = QUERY) -> Dict[str, Any]:
    """One plugin turn on a thread of its own: its result and how long it took; a turn that
    does not finish within TURN_BOUND_S is reported as waiting (and left to finish)."""
    out: Dict[str, Any] = {}

    def run() -> None:
        started = time.perf_counter()
        out["result"] = p._on_pre_llm_call(user_message=message, conversation_history=[], platform="cli")
        out["seconds"] = time.perf_counter() - started

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(TURN_BOUND_S)
    out["waited"] = t.is_alive()
    return out


def injected(result: Optional[Dict[str, str]]) -> List[str]:
    return skillidx.injected_ids(result["context"]) if result else []


def wait_for(path: Path, timeout: float = 60.0) -> None:
    deadline = time.time() + timeout
    while not path.exists():
        assert time.time() < deadline, f"{path} never appeared"
        time.sleep(0.01)


def add_zebra(home: Path) -> None:
    write_skill(home / "skills", "science/zebra-scope", "zebra-telescope",
                "Point the zebra telescope at a star and record the zebra observation", [])


@pytest.mark.failpoints
@needs_failpoints
def test_a_turn_during_another_process_sync_answers_from_the_last_commit(
    plugin: Any, home: Path, tmp_path: Path
) -> None:
    plugin.register(Ctx())
    index = plugin._index
    assert index is not None and index.wait(60)
    assert injected(turn(plugin)["result"])[0] == "docker-cleanup"

    add_zebra(home)
    pause = tmp_path / "pause"
    pause.mkdir()
    env = dict(os.environ, SKILLIDX_FAILPOINTS=f"{SYNC_IN_WRITE}=pause({pause})")
    cron = subprocess.Popen([str(SKILLIDX), "sync", "--home", str(home)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # The other process holds the write transaction, paused inside it.
        wait_for(pause / f"{SYNC_IN_WRITE}.reached")
        for _ in range(3):
            t = turn(plugin)
            assert not t["waited"], "a turn waited for another process's sync"
            # The last committed answer: the new skill is not in it yet.
            ids = injected(t["result"])
            assert ids and ids[0] == "docker-cleanup" and "zebra-telescope" not in ids, ids
        # The new folder made the plugin start its own sync, which waits for the write lock
        # in the background, not in a turn.
        status = index.status()
        assert status["syncing"], status
    finally:
        (pause / f"{SYNC_IN_WRITE}.go").touch()
    out, err = cron.communicate(timeout=120)
    assert cron.returncode == 0, err
    # Both syncs are done: the turn after them sees the new skill.
    assert index.wait(60)
    status = index.status()
    assert status["sync_error"] is None and status["syncs"] >= 1, status
    t = turn(plugin)
    assert not t["waited"] and "zebra-telescope" in injected(t["result"])


@pytest.mark.failpoints
@needs_failpoints
def test_a_turn_during_the_plugins_own_paused_sync_never_waits(
    plugin: Any, home: Path, tmp_path: Path
) -> None:
    plugin.register(Ctx())
    index = plugin._index
    assert index is not None and index.wait(60)
    pause = tmp_path / "pause"
    pause.mkdir()
    add_zebra(home)
    _native._set_failpoint(SYNC_IN_WRITE, f"pause({pause})")
    try:
        t = turn(plugin)
        assert not t["waited"], "the turn ran the sync itself"
        assert "zebra-telescope" not in injected(t["result"])
        # The background sync it started now holds the write lock, paused.
        wait_for(pause / f"{SYNC_IN_WRITE}.reached")
        for _ in range(3):
            t = turn(plugin)
            assert not t["waited"], "a turn waited for the background sync"
            ids = injected(t["result"])
            assert ids and ids[0] == "docker-cleanup" and "zebra-telescope" not in ids, ids
        assert index.status()["syncing"]
    finally:
        _native._set_failpoint(SYNC_IN_WRITE, None)
        (pause / f"{SYNC_IN_WRITE}.go").touch()
    assert index.wait(60)
    status = index.status()
    assert status["sync_error"] is None and status["last_sync"]["committed"], status
    # Seen from the turn after the sync finished.
    assert "zebra-telescope" in injected(turn(plugin)["result"])


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_opening_and_querying_write_nothing(home: Path, tmp_path: Path) -> None:
    db = tmp_path / "idx.redb"
    Index(home=home, db=db).sync()
    before = (digest(db), db.stat().st_mtime_ns)
    index = Index(home=home, db=db)
    assert index.search("docker images")[0].id == "docker-cleanup"
    assert index.retrieve("docker images")
    index.refresh()  # never synced in this process: a background sync that finds nothing to do
    assert index.wait(60)
    assert index.status()["last_sync"]["committed"] is False
    assert (digest(db), db.stat().st_mtime_ns) == before, "opening or querying wrote to the index"


def test_sync_rebuild_replacing_the_file_is_followed(home: Path, tmp_path: Path) -> None:
    db = tmp_path / "idx.redb"
    index = Index(home=home, db=db)
    index.sync()
    reader = Index(home=home, db=db, readonly=True)
    assert index.search("docker images")[0].id == "docker-cleanup"
    assert reader.search("docker images")[0].id == "docker-cleanup"
    add_zebra(home)
    # The file is damaged in place while both hold it...
    data = bytearray(db.read_bytes())
    for i in range(4096, len(data)):
        data[i] = (i * 31) % 251
    db.write_bytes(bytes(data))
    # ...and `sync --rebuild` moves it aside and builds a new one.
    r = subprocess.run([str(SKILLIDX), "sync", "--rebuild", "--home", str(home), "--db", str(db)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "moved it to" in r.stderr
    # The next query answers from the new file.
    for idx in (index, reader):
        hits = idx.search("zebra telescope")
        assert hits and hits[0].id == "zebra-telescope"
        assert idx.status()["reopened"] == 1


def test_failures_are_logged_each_time_they_change(
    plugin: Any, home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    db = home / "skillidx.redb"

    def lines(level: int) -> List[str]:
        return [r.getMessage() for r in caplog.records if r.levelno == level]

    db.write_bytes(b"this is not an index" * 200)
    plugin.register(Ctx())
    assert len(lines(logging.WARNING)) == 1 and "not a skillidx index" in lines(logging.WARNING)[0]
    for _ in range(3):  # the same failure: not logged again
        assert turn(plugin)["result"] is None
    assert len(lines(logging.WARNING)) == 1

    db.unlink()
    db.mkdir()  # a different failure: logged
    assert turn(plugin)["result"] is None
    assert turn(plugin)["result"] is None
    warnings = lines(logging.WARNING)
    assert len(warnings) == 2 and warnings[1] != warnings[0], warnings

    db.rmdir()
    db.write_bytes(b"this is not an index" * 200)  # the first failure again: logged again
    assert turn(plugin)["result"] is None
    assert len(lines(logging.WARNING)) == 3

    # Rebuilt: the turn injects again and the recovery is logged.
    r = subprocess.run([str(SKILLIDX), "sync", "--rebuild", "--home", str(home)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert injected(turn(plugin)["result"])[0] == "docker-cleanup"
    assert any("recovered" in m for m in lines(logging.INFO))
    assert len(lines(logging.WARNING)) == 3
    # (The index was opened by that turn, whose refresh started a first background sync.)
    assert plugin._index.wait(60) and plugin._index.status()["sync_error"] is None

    # The open file replaced by junk: the last index keeps answering, and that is logged once.
    junk = home / "junk"
    junk.write_bytes(b"junk again" * 300)
    os.replace(junk, db)
    for _ in range(2):
        assert injected(turn(plugin)["result"])[0] == "docker-cleanup"
    warnings = lines(logging.WARNING)
    assert len(warnings) == 4 and "cannot reopen" in warnings[3], warnings
