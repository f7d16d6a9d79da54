"""The skillidx Python module: API, types, threads, exceptions, compactor."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import skillidx
from skillidx import (
    Hit,
    Index,
    IndexCorruptError,
    IndexMissingError,
    ProfileError,
    SkillidxError,
    SyncReport,
)

from conftest import FIXTURES, SKILLS, write_skill


def open_index(home: Path, **kw) -> Index:
    return Index(home=home, db=home.parent / "idx.redb", **kw)


def test_sync_search_and_typed_results(home: Path) -> None:
    index = open_index(home)
    report = index.sync()
    assert isinstance(report, SyncReport)
    assert report.active == len(SKILLS) and report.added == len(SKILLS)
    assert report.committed and report.skipped == []
    hits = index.search("clean up old docker images", k=3)
    assert hits and all(isinstance(h, Hit) for h in hits)
    top = hits[0]
    assert (top.id, top.name, top.category) == ("docker-cleanup", "docker-cleanup", "devops")
    assert top.description.startswith("Remove dangling Docker images")
    assert top.score > 0 and top.path.endswith("SKILL.md") and Path(top.path).is_file()
    assert top.to_dict()["id"] == "docker-cleanup"
    assert "docker-cleanup" in repr(top)
    assert len(index.search("kubernetes pods", k=1)) == 1
    assert index.search("zzzz-nothing-matches") == []
    # A second sync changes nothing.
    again = index.sync()
    assert again.unchanged == len(SKILLS) and again.added == again.updated == 0


def test_stats_list_explain(home: Path) -> None:
    index = open_index(home)
    index.sync()
    stats = index.stats()
    assert stats["active"] == len(SKILLS) and stats["terms"] > 0 and stats["profile"] == "default"
    ids = [s["id"] for s in index.list()]
    assert sorted(ids) == sorted(v[0] for v in SKILLS.values())
    ex = index.explain("docker images", "docker-cleanup")
    assert ex is not None and ex["rank"] == 1 and ex["score"] > 0
    assert {t["term"] for t in ex["terms"]} >= {"docker"}
    assert index.explain("docker", "no-such-skill") is None
    assert index.profile == "default" and Path(index.home) == home


def test_platform_disabled_skills_are_left_out(home: Path) -> None:
    (home / "config.yaml").write_text(
        "skills:\n  platform_disabled:\n    telegram: [docker-cleanup]\n", encoding="utf-8"
    )
    index = open_index(home)
    index.sync()
    assert index.search("docker images")[0].id == "docker-cleanup"
    assert "docker-cleanup" not in [h.id for h in index.search("docker images", platform="telegram")]


def test_retrieve_block_and_helpers(home: Path) -> None:
    index = open_index(home)
    index.sync()
    block = index.retrieve("How do I clean up old docker images?")
    assert block is not None
    lines = block.split("\n")
    assert lines[0] == "## Retrieved Skills (top-K relevant to your query)"
    assert lines[1] == "Load any of these with skill_view(name) if relevant:"
    assert lines[2] == ""
    assert lines[3].startswith("- **docker-cleanup** (devops/docker-cleanup): Remove dangling")
    assert skillidx.injected_ids(block)[0] == "docker-cleanup"
    # Skills described by an earlier turn are only named.
    again = index.retrieve("How do I clean up old docker images?", shown=["docker-cleanup"])
    assert again is not None and "**docker-cleanup**" not in again
    assert "described earlier in this conversation): docker-cleanup" in again
    assert index.retrieve("zzzz-nothing") is None
    hits = index.search("docker images")
    assert skillidx.format_retrieved_block(hits[:1]) == "\n".join(lines[:4])
    assert skillidx.is_chit_chat("thanks!") and skillidx.is_chit_chat("ok")
    assert not skillidx.is_chit_chat("deploy the docker stack")


def test_refresh_sees_new_skills_and_in_place_edits_within_ttl(home: Path) -> None:
    index = open_index(home, ttl=0.5)
    assert not (home.parent / "idx.redb").exists(), "opening created the file"
    # refresh() starts a background sync (here: the first build) and returns at once.
    assert index.refresh() is True
    assert index.wait(60)
    assert index.refresh() is False
    # A new skill folder changes a watched folder's stat: seen by the next sync.
    write_skill(home / "skills", "research/pubmed", "pubmed-search", "Search PubMed for clinical trials", [])
    assert index.refresh() is True
    assert index.wait(60)
    assert index.search("clinical trials pubmed")[0].id == "pubmed-search"
    # An in-place edit of a nested SKILL.md is invisible to the cheap check...
    path = home / "skills" / "research" / "arxiv" / "SKILL.md"
    path.write_text(path.read_text().replace("academic papers", "zebra telescope papers"))
    assert index.refresh() is False
    assert index.search("zebra telescope") == []
    # ...and picked up once the TTL has passed.
    time.sleep(0.6)
    assert index.refresh() is True
    assert index.wait(60)
    assert index.search("zebra telescope")[0].id == "arxiv-search"
    status = index.status()
    assert status["syncs"] == 3 and status["sync_error"] is None, status


def test_threads_search_while_another_thread_syncs(home: Path) -> None:
    index = open_index(home)
    index.sync()
    errors = []
    stop = threading.Event()
    searches = [0]

    def searcher() -> None:
        try:
            while not stop.is_set():
                hits = index.search("docker images disk", k=3)
                assert hits and hits[0].id == "docker-cleanup"
                searches[0] += 1
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    def syncer() -> None:
        try:
            for i in range(15):
                write_skill(home / "skills", f"gen/s{i}", f"generated-{i}", f"Generated skill {i} about lambdas", [])
                index.sync()
                if i % 5 == 4:
                    index.sync(rebuild=True)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=searcher) for _ in range(4)]
    for t in threads:
        t.start()
    s = threading.Thread(target=syncer)
    s.start()
    s.join(120)
    stop.set()
    for t in threads:
        t.join(30)
    assert not errors, errors
    assert searches[0] > 0
    assert index.stats()["active"] == len(SKILLS) + 15


def test_sync_releases_the_gil(tmp_path: Path) -> None:
    home = tmp_path / "big"
    for i in range(600):
        write_skill(home / "skills", f"c{i % 20}/s{i}", f"skill-{i}", f"Skill number {i} does thing {i * 7}", ["t"])
    index = Index(home=home, db=tmp_path / "big.redb")
    ticks = [0]
    done = threading.Event()

    def ticker() -> None:
        while not done.is_set():
            ticks[0] += 1
            time.sleep(0.0005)

    t = threading.Thread(target=ticker)
    t.start()
    time.sleep(0.01)
    before = ticks[0]
    started = time.perf_counter()
    index.sync(rebuild=True)
    elapsed = time.perf_counter() - started
    after = ticks[0]
    done.set()
    t.join()
    # With the GIL held for the whole sync the ticker could not run at all meanwhile.
    if elapsed > 0.05:
        assert after - before > 5, (before, after, elapsed)


def test_exceptions(home: Path, tmp_path: Path) -> None:
    for cls in (IndexMissingError, IndexCorruptError, ProfileError, skillidx.IndexVersionError):
        assert issubclass(cls, SkillidxError)
    with pytest.raises(ProfileError):
        Index(home=home, profile="Not Valid", db=tmp_path / "a.redb")
    with pytest.raises(ProfileError):
        Index(home=home, profile="missing", db=tmp_path / "a.redb")
    with pytest.raises(IndexMissingError):
        Index(home=home, db=tmp_path / "none.redb", readonly=True)
    junk = tmp_path / "junk.redb"
    junk.write_bytes(b"this is not a database" * 100)
    with pytest.raises(IndexCorruptError):
        Index(home=home, db=junk)
    with pytest.raises(ValueError):
        Index(home=home, db=tmp_path / "b.redb", ttl=-1.0)
    # A read-only handle on a real index works.
    open_index(home).sync()
    ro = Index(home=home, db=home.parent / "idx.redb", readonly=True)
    assert ro.search("docker")[0].id == "docker-cleanup"


def test_profiles(home: Path, tmp_path: Path) -> None:
    work = home / "profiles" / "work"
    write_skill(work / "skills", "legal/contracts", "contract-review", "Review a contract for risky clauses", [])
    index = Index(home=home, profile="work", db=tmp_path / "p.redb")
    index.sync()
    assert [h.id for h in index.search("contract clauses")] == ["contract-review"]
    # HERMES_HOME pointing inside profiles/ selects that profile.
    sub = Index(home=work, db=tmp_path / "p.redb")
    assert sub.profile == "work"


FIXTURE_FILES = sorted(p for p in FIXTURES.glob("*.txt"))


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=[p.stem for p in FIXTURE_FILES])
def test_compactor_on_real_blocks(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    out = skillidx.compact_available_skills(text)
    i, j = text.index("<available_skills>"), text.index("</available_skills>")
    oi, oj = out.index("<available_skills>"), out.index("</available_skills>")
    assert out[:oi] == text[:i]
    assert out[oj:] == text[j:]
    inner = out[oi + len("<available_skills>"):oj]
    assert "    - " not in inner
    assert len(out) < len(text)
    assert skillidx.compact_available_skills(out) == out


def test_compactor_leaves_other_text_alone() -> None:
    for t in ["", "plain prompt", "<available_skills> unterminated", "ünïcödé ✓"]:
        assert skillidx.compact_available_skills(t) == t


def test_cli_is_the_same_binary(home: Path, tmp_path: Path) -> None:
    assert skillidx.main(["skillidx", "--version"]) == 0
    assert skillidx.main(["skillidx", "no-such-command"]) == 2
    exe = Path(sys.executable).parent / "skillidx"
    assert exe.exists(), "console script missing"
    db = tmp_path / "cli.redb"
    r = subprocess.run([str(exe), "sync", "--home", str(home), "--db", str(db)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([str(exe), "search", "docker images", "--home", str(home), "--db", str(db), "--json"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and '"docker-cleanup"' in r.stdout
    r = subprocess.run([str(exe), "search", "x", "--home", str(home), "--db", str(tmp_path / "missing.redb")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "skillidx sync" in r.stderr


def test_hermes_install_keeps_comments(tmp_path: Path) -> None:
    home = tmp_path / "h"
    home.mkdir()
    config = "# my config\nmodel:\n  default: x  # keep me\nplugins:\n  enabled:\n    - other  # mine\n"
    (home / "config.yaml").write_text(config, encoding="utf-8")
    exe = str(Path(sys.executable).parent / "skillidx")
    r = subprocess.run([exe, "hermes", "install", "--home", str(home)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    text = (home / "config.yaml").read_text()
    assert text == config + "    - skill-retrieval\n"
    plugin = home / "plugins" / "skill-retrieval"
    assert (plugin / "plugin.yaml").read_text() == (
        Path(skillidx.__file__).parent / "hermes_plugin" / "plugin.yaml").read_text()
    assert (plugin / "__init__.py").is_file()
    r = subprocess.run([exe, "hermes", "uninstall", "--home", str(home)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert (home / "config.yaml").read_text() == config and not plugin.exists()


def test_a_home_that_does_not_exist_is_an_error_naming_it_and_nothing_is_created(tmp_path: Path) -> None:
    missing = tmp_path / "no" / "such" / "home"
    with pytest.raises(skillidx.ProfileError) as err:
        skillidx.Index(home=str(missing))
    assert str(missing) in str(err.value)
    assert not (tmp_path / "no").exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(skillidx.ProfileError, match="not a Hermes home"):
        skillidx.Index(home=str(empty))
    assert list(empty.iterdir()) == []


def test_the_console_script_runs_with_its_output_closed(home: Path) -> None:
    # `skillidx sync >&-` in a cron job: Python's sys.stdout is then None; the command still
    # syncs and exits 0, as the binary does.
    script = Path(sys.executable).parent / "skillidx"
    run = subprocess.run(["bash", "-c", f'"{script}" sync --home "{home}" >&-'],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr
    assert skillidx.Index(home=str(home)).search("docker")
