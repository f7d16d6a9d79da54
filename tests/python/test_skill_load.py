"""``Index.load_tool`` (the plugin's ``skill_load`` tool) and ``Index.rewrite_system`` on
requests Hermes formatted in other ways: a skill loads by every name a prompt gives for it,
only when the session is offered it, and a rewrite never loses a listed skill."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import write_skill
from skillidx import _native

BLOCK = (
    "## Skills (mandatory)\n<available_skills>\n"
    "  devops:\n    - docker-cleanup: Remove images\n"
    "  geo:\n    - shapefile-tools: Read shapefiles\n"
    "</available_skills>\n"
)


@pytest.fixture()
def index(tmp_path: Path) -> _native.Index:
    skills = tmp_path / "home" / "skills"
    write_skill(skills, "devops/docker", "docker-cleanup", "Remove images", [])
    write_skill(skills, "geo/shp", "shapefile-tools", "Read shapefiles", [])
    write_skill(skills, "geo/geopandas", "geopandas", "Geo dataframes", [])
    write_skill(skills, "data/geopandas", "geopandas", "Another geopandas", [])
    write_skill(skills, "secret/off", "turned-off", "Disabled by config", [])
    (tmp_path / "home" / "config.yaml").write_text("skills:\n  disabled: [turned-off]\n")
    (skills / "geo" / "shp" / "references").mkdir()
    (skills / "geo" / "shp" / "references" / "ogr.md").write_text("ogr2ogr -f GeoJSON\n")
    idx = _native.Index(home=str(tmp_path / "home"), db=str(tmp_path / "x.redb"))
    idx.sync()
    return idx


def test_a_skill_loads_by_id_by_path_and_by_folder(index: _native.Index) -> None:
    for name in ("shapefile-tools", "geo/shp", "shp"):
        text = index.load_tool(name)
        assert text.startswith("Skill **shapefile-tools** (geo/shp), SKILL.md:"), (name, text)
        assert "# shapefile-tools" in text and "references/ogr.md" in text, text
    ogr = index.load_tool("geo/shp", file_path="references/ogr.md")
    assert ogr.endswith("ogr2ogr -f GeoJSON\n"), ogr


def test_a_name_two_skills_share_gives_their_paths(index: _native.Index) -> None:
    text = index.load_tool("geopandas")
    assert "names 2 skills" in text and "geo/geopandas" in text and "data/geopandas" in text, text
    assert index.load_tool("data/geopandas").startswith("Skill **data/geopandas** (data/geopandas)")


def test_only_an_offered_skill_loads(index: _native.Index) -> None:
    assert index.load_tool("turned-off").startswith("No skill named"), "disabled in config.yaml"
    assert index.load_tool("../../etc/passwd").startswith("No skill named")
    # Once the session's block is read, only what it lists loads.
    index.rewrite_system("s1", [BLOCK])
    assert index.load_tool("docker-cleanup", session="s1").startswith("Skill **docker-cleanup**")
    assert index.load_tool("geo/geopandas", session="s1").startswith("No skill named")
    assert index.load_tool("geo/geopandas", session="other").startswith("Skill **")


def test_the_loader_named_follows_the_setting(index: _native.Index) -> None:
    assert index.loader("auto") == "skill_view"  # 5 skills: skill_view is fast enough
    assert index.loader("skill_load") == "skill_load"
    block = index.retrieve("remove docker images", loader="skill_load")
    assert block and block.split("\n")[1] == "Load any of these with skill_load(name) if relevant:"
    answer = index.search_tool("docker images", loader="skill_load")
    assert "load one with skill_load" in answer, answer
    # The plugin filters earlier blocks of either form.
    assert _native.filter_retrieved_blocks(block, [("devops", "docker-cleanup")], 6) == block


@pytest.mark.parametrize("name,texts", [
    ("no block", ["You are Hermes.", "Another system text."]),
    ("two blocks in two texts", [BLOCK, BLOCK.replace("## Skills (mandatory)", "## Skills")]),
    ("two blocks in one text", [BLOCK + "\nbetween\n" + BLOCK]),
    ("0.21 heading", [BLOCK.replace("## Skills (mandatory)", "## Skills")]),
])
def test_a_rewrite_handles_blocks_of_any_number_and_heading(
    index: _native.Index, name: str, texts: list
) -> None:
    out = index.rewrite_system("s-" + name, texts, budget=0)
    assert len(out) == len(texts)
    for before, after in zip(texts, out):
        if "<available_skills>" not in before:
            assert after == before, name
            continue
        # Every block compacted, the text around it kept.
        assert after.count("<available_skills>") == before.count("<available_skills>")
        assert after.count("  devops: docker-cleanup\n  geo: shapefile-tools\n") == \
            before.count("<available_skills>"), after
        assert after.replace("\n", "").startswith(before.split("<available_skills>")[0].replace("\n", ""))
        assert ("between" in after) == ("between" in before)


def test_a_block_listing_skills_the_engine_does_not_know_is_left_whole(index: _native.Index) -> None:
    # Hermes 0.21 lists a trusted project's skills as `[project] …`, which this engine does
    # not index yet: rewriting would drop it from the request.
    project = BLOCK.replace("  geo:\n", "  geo:\n    - proj-skill: [project] From the repo\n")
    (out,) = index.rewrite_system("s-project", [project], budget=0)
    assert out == project
    assert index.allowed("s-project") == [("devops", "docker-cleanup"), ("geo", "shapefile-tools")]


def test_the_same_objects_get_the_same_answer_and_new_text_a_new_one(index: _native.Index) -> None:
    system = "You are Hermes.\n" + BLOCK
    first = index.rewrite_system("s", [system], budget=0)
    again = index.rewrite_system("s", [system], budget=0)
    assert again == first and again[0] is first[0], "the same objects answer from the cache"
    other = index.rewrite_system("s", [system.replace("Hermes", "Hermes!")], budget=0)
    assert other[0] == first[0].replace("Hermes", "Hermes!")
    wider = index.rewrite_system("s", [system], budget=0, compact=False)
    assert wider == [system]
