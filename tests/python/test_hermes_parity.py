"""Differential test: skillidx offers exactly what Hermes 0.19.0 offers.

For each home and session (OS, environments, messaging platform, tool set), Hermes' own
``agent.prompt_builder.build_skills_system_prompt()`` is run fresh (cold path: every cache
cleared, the snapshot file removed, environment detection pinned), the (category, name)
pairs of its ``<available_skills>`` block are read, and they must equal what
``skillidx offered`` lists for the same home and session. Where skillidx deliberately
differs, the difference is listed in ``DELIBERATE`` with its reason and checked to be exactly
that, rather than the home being skipped.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Optional, Set, Tuple

import pytest

from conftest import hermes_release

REPO = Path(__file__).resolve().parents[2]
Pair = Tuple[str, str]

# Runs in a fresh interpreter (the test's, where hermes-agent 0.19.0 is installed): one JSON
# list of cases on stdin, one JSON list of answers on stdout.
HERMES_RUNNER = r"""
import json, logging, os, re, sys
logging.disable(logging.CRITICAL)
cases = json.load(sys.stdin)
CLEAR = ("HERMES_PLATFORM", "HERMES_SESSION_PLATFORM", "HERMES_KANBAN_TASK",
         "HERMES_KANBAN_BOARD", "KUBERNETES_SERVICE_HOST", "TERMUX_VERSION")
for v in CLEAR:
    os.environ.pop(v, None)
os.environ["HERMES_HOME"] = cases[0]["home"] if cases else "/nonexistent"
from agent import prompt_builder as pb, skill_utils as su
pb.extract_skill_description = lambda fm: ""   # lines become bare names

def pairs(block):
    if "<available_skills>" not in block:
        return []
    body = block.split("<available_skills>\n", 1)[1].split("</available_skills>", 1)[0]
    out, cat = [], None
    for line in body.split("\n"):
        if line.startswith("    - "):
            # Descriptions are blanked, but 0.20's org labels are added after: cut them.
            out.append([cat, re.sub(r": \[(org-shared|name collision).*$", "", line[6:])])
        elif line.startswith("  ") and not line.startswith("   "):
            # "  C:" or "  C: <DESCRIPTION.md description>"
            cat = line[2:-1] if line.endswith(":") else line[2:].split(": ", 1)[0]
    return out

answers = []
for c in cases:
    os.environ["HERMES_HOME"] = c["home"]
    for v in CLEAR:
        os.environ.pop(v, None)
    if c.get("platform"):
        os.environ["HERMES_PLATFORM"] = c["platform"]
    pb.clear_skills_system_prompt_cache(clear_snapshot=True)
    su._external_dirs_cache_clear()
    su._ENV_DETECT_CACHE.clear()
    env = set(c.get("env") or [])
    su._ENV_DETECT_CACHE.update({k: k in env for k in ("kanban", "docker", "s6")})
    # 0.20 never caches the kanban verdict: it reads a dispatched worker's variables.
    if "kanban" in env:
        os.environ["HERMES_KANBAN_TASK"] = "t-test"
    tools = set(c["tools"]) if c.get("tools") is not None else None
    toolsets = set(c["toolsets"]) if c.get("toolsets") is not None else None
    try:
        block = pb.build_skills_system_prompt(available_tools=tools, available_toolsets=toolsets)
        answers.append({"pairs": pairs(block)})
    except Exception as e:
        answers.append({"error": f"{type(e).__name__}: {e}"})
    pb.clear_skills_system_prompt_cache(clear_snapshot=True)
print(json.dumps(answers))
"""


# The same runs with Hermes' real descriptions: the blocks as Hermes writes them.
REAL_BLOCK_RUNNER = HERMES_RUNNER.replace(
    'pb.extract_skill_description = lambda fm: ""   # lines become bare names\n', ""
).replace('answers.append({"pairs": pairs(block)})', 'answers.append({"block": block})')
assert REAL_BLOCK_RUNNER.count("extract_skill_description") == 0


def skillidx_bin() -> List[str]:
    """The skillidx command: $SKILLIDX_BIN, the venv's `skillidx`, or a cargo build."""
    if os.environ.get("SKILLIDX_BIN"):
        return [os.environ["SKILLIDX_BIN"]]
    venv = Path(sys.executable).parent / "skillidx"
    if venv.exists():
        return [str(venv)]
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    for build in ("release", "debug"):
        exe = target / build / "skillidx"
        if exe.exists():
            return [str(exe)]
    found = shutil.which("skillidx")
    if found:
        return [found]
    pytest.skip("no skillidx command found (set SKILLIDX_BIN)")


class Case:
    """One session for one home."""

    def __init__(
        self,
        name: str,
        tools: Optional[Iterable[str]] = None,
        toolsets: Optional[Iterable[str]] = None,
        env: Iterable[str] = (),
        platform: Optional[str] = None,
    ) -> None:
        self.name = name
        self.tools = None if tools is None else sorted(tools)
        self.toolsets = None if toolsets is None else sorted(toolsets)
        self.env = sorted(env)
        self.platform = platform

    def hermes_args(self, home: Path) -> dict:
        return {
            "home": str(home),
            "tools": self.tools,
            "toolsets": self.toolsets,
            "env": self.env,
            "platform": self.platform,
        }

    def skillidx_args(self) -> List[str]:
        args = ["--env", ",".join(self.env), "--platform", self.platform or ""]
        if self.tools is not None:
            args += ["--tools", ",".join(self.tools)]
        if self.toolsets is not None:
            args += ["--toolsets", ",".join(self.toolsets)]
        if self.tools is None and self.toolsets is None:
            args.append("--no-tool-info")
        return args


# The Hermes the differential tests run: the venv's hermes-agent, or another release's modules
# first on PYTHONPATH (`hermes_release`).
HERMES_VERSION = importlib.metadata.version("hermes-agent")


def hermes_offered(home: Path, cases: List[Case], runner: str = HERMES_RUNNER,
                   modules: Optional[Path] = None) -> List[dict]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_")}
    if modules is not None:
        env["PYTHONPATH"] = str(modules)
    out = subprocess.run(
        [sys.executable, "-c", runner],
        input=json.dumps([c.hermes_args(home) for c in cases]),
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    assert out.returncode == 0, out.stderr[-4000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def skillidx_offered(home: Path, db: Path, cases: List[Case],
                     version: str = HERMES_VERSION) -> List[Set[Pair]]:
    exe = skillidx_bin()
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_")}
    sync = subprocess.run(
        exe + ["sync", "--home", str(home), "--db", str(db), "--hermes-version", version],
        capture_output=True, text=True, env=env, timeout=900,
    )
    assert sync.returncode == 0, sync.stderr
    answers = []
    for c in cases:
        out = subprocess.run(
            exe + ["offered", "--home", str(home), "--db", str(db), "--json"] + c.skillidx_args(),
            capture_output=True, text=True, env=env, timeout=300,
        )
        assert out.returncode == 0, out.stderr
        answers.append({(o["category"], o["name"]) for o in json.loads(out.stdout)})
    return answers


# Where skillidx deliberately differs from Hermes 0.19.0: home → [(what, reason, which pairs
# only Hermes offers, which pairs only skillidx offers, case names it applies to or None for
# all)]. Each difference must occur as listed.
Match = Callable[[Pair], bool]
NOTHING: Match = lambda p: False
DELIBERATE: Dict[str, List[Tuple[str, str, Match, Match, Optional[Set[str]]]]] = {
    "quirks": [
        (
            "symlink loop",
            "os.walk(followlinks=True) follows a link to an ancestor until the OS refuses the "
            "path, offering the skill under ever longer categories; skillidx reports the loop "
            "and indexes each skill once",
            lambda p: p[1] == "spin" and p[0].startswith("loops/spin/back/loops"),
            NOTHING,
            None,
        ),
        (
            "SKILL.md linked to a file outside the skill root",
            "Hermes reads the file the link leads to and lists it, its text as the description; "
            "skillidx never reads a file outside the skill roots (it could be a secret), so the "
            "skill is not indexed and never injected",
            lambda p: p == ("devops", "env-helper"),
            NOTHING,
            None,
        ),
        (
            "requires_tools: null",
            "Hermes cannot iterate null: with tool information its builder raises TypeError for "
            "a local skill (no block at all); skillidx hides that one skill whenever tools are "
            "known",
            NOTHING,
            NOTHING,
            {"tools"},
        ),
    ],
}


def generated_rules_home(base: Path) -> Path:
    """A home with every offer rule: disabled, platform_disabled on two platforms, external
    dirs with clashes, nested categories, a bare skill, environments, tool conditions,
    local/local and local/external clashes with hidden locals, the YAML fallback parser,
    non-UTF-8 and NUL files, names Hermes reads literally, support-folder pruning, a plugin."""
    home = base / "rules"
    skills = home / "skills"

    def sk(root: Path, rel: str, text) -> None:
        p = root / rel / "SKILL.md"
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            p.write_bytes(text)
        else:
            p.write_text(text, encoding="utf-8")

    def fm(name: str, extra: str = "") -> str:
        return f"---\nname: {name}\ndescription: about {name}\n{extra}---\n# {name}\n\nBody.\n"

    ext1, ext2 = home / "ext1", home / "ext2"
    # disabled, by name and by folder
    sk(skills, "admin/dis-by-name", fm("dis-name"))
    sk(skills, "admin/dis-folder", fm("dis-folder-name"))
    # platform_disabled, on telegram and discord
    sk(skills, "chat/tg-only", fm("tg-hidden"))
    sk(skills, "chat/dc-folder", fm("dc-hidden"))
    # nested categories and a bare skill
    sk(skills, "a/b/c/deep", fm("deep"))
    sk(skills, "bare", fm("bare"))
    # environments
    for env in ("kanban", "docker", "s6"):
        sk(skills, f"env/{env}-only", fm(f"{env}-only", f"environments: [{env}]\n"))
    sk(skills, "env/unknown", fm("mars-only", "environments: [mars]\n"))
    sk(skills, "env/mixed", fm("mixed-env", "environments: [Kanban, s6]\n"))
    sk(skills, "env/empty-item", fm("never-env", "environments: ['']\n"))
    sk(skills, "env/string", fm("docker-string", "environments: docker\n"))
    # tool conditions
    hermes = "metadata:\n  hermes:\n"
    sk(skills, "tools/req-tool", fm("req-tool", hermes + "    requires_tools: [terminal]\n"))
    sk(skills, "tools/req-set", fm("req-set", hermes + "    requires_toolsets: [web]\n"))
    sk(skills, "tools/fb-tool", fm("fb-tool", hermes + "    fallback_for_tools: [browser]\n"))
    # line endings and fences as Hermes reads them (universal newlines; `\s` = str.isspace)
    cond = hermes + "    requires_toolsets: [browser]\n"
    sk(skills, "ends/cr", fm("cr-only", cond).replace("\n", "\r").encode())
    sk(skills, "ends/crlf", fm("crlf", cond).replace("\n", "\r\n").encode())
    sk(skills, "ends/cr-fence", fm("cr-fence", cond).replace("\n---\n#", "\r---\n#").encode())
    sk(skills, "ends/fs-fence", fm("fs-fence", cond).replace("\n---\n#", "\n---\x1c\n#").encode())
    sk(skills, "ends/us-fence", fm("us-fence", cond).replace("\n---\n#", "\n---\x1f\n#").encode())
    sk(skills, "ends/cr-end", fm("cr-end", cond).replace("\n---\n#", "\n---\r#").encode())
    sk(skills, "ends/nel", fm("nel-fence", cond).replace("\n---\n#", "\n---\x85#").encode())
    sk(skills, "tools/fb-set", fm("fb-set", hermes + "    fallback_for_toolsets: [web]\n"))
    sk(skills, "tools/req-str", fm("req-str", hermes + "    requires_tools: terminal\n"))
    sk(skills, "tools/fb-str", fm("fb-str", hermes + "    fallback_for_tools: browser\n"))
    # local/local clashes: two categories (both offered), one category (listed once)
    sk(skills, "one/twin", fm("twin"))
    sk(skills, "two/twin", fm("twin"))
    sk(skills, "same/twin-a", fm("same-twin"))
    sk(skills, "same/twin-b", fm("same-twin", hermes + "    requires_tools: [terminal]\n"))
    # local/external clashes; a local hidden in the session lets the external through
    sk(skills, "loc/clash", fm("clash"))
    sk(ext1, "extcat/clash", fm("clash"))
    sk(skills, "loc/hx", fm("hx", hermes + "    requires_tools: [browser]\n"))
    sk(ext1, "extcat/hx", fm("hx"))
    sk(skills, "loc/tgfolder", fm("tg2"))
    sk(ext1, "extcat/tg2", fm("tg2"))
    sk(skills, "loc/kx", fm("kx", "environments: [kanban]\n"))
    sk(ext2, "other/kx", fm("kx"))
    sk(skills, "loc/dx", fm("dx"))
    sk(ext1, "extcat/dx", fm("dx"))
    # external/external: the first dir wins, even across categories
    sk(ext1, "e1/ee", fm("ee", hermes + "    fallback_for_toolsets: [web]\n"))
    sk(ext2, "e2/ee", fm("ee"))
    sk(ext2, "e2/only-ext", fm("only-ext"))
    # YAML fallback parser: the string "[macos]" matches no OS; "linux" matches Linux
    sk(skills, "yaml/fb-mac", "---\nname: fb-mac\nplatforms: [macos]\ndescription: [bad\n---\n")
    sk(skills, "yaml/fb-linux", "---\nname: fb-linux\nplatforms: linux\ndescription: [bad\n---\n")
    sk(skills, "yaml/fb-colon", "---\nname: fb-colon: x\ndescription: \"unclosed\n---\n")
    sk(skills, "yaml/mac", fm("mac-only", "platforms: [macos]\n"))
    sk(skills, "yaml/null-platform", fm("null-platform", "platforms: [null]\n"))
    sk(skills, "yaml/empty-platform", fm("empty-platform", "platforms: ['']\n"))
    # names as Hermes reads them
    sk(skills, "names/null-name", "---\nname:\ndescription: d\n---\n")
    sk(skills, "names/empty-name", "---\nname: ''\ndescription: d\n---\n")
    sk(skills, "names/spaced", "---\nname: '  spaced  '\ndescription: d\n---\n")
    sk(skills, "names/list-name", "---\nname: [a, b]\ndescription: d\n---\n")
    sk(skills, "names/number", "---\nname: 1.5\ndescription: d\n---\n")
    sk(skills, "names/no-frontmatter", "# Title\n\nJust a body.\n")
    # files Hermes cannot decode, and NUL (text to Hermes)
    sk(skills, "bad/latin1", b"---\nname: latin\ndescription: caf\xe9\n---\n")
    sk(skills, "bad/nul-body", b"---\nname: nul-body\ndescription: d\n---\nab\x00cd\n")
    sk(skills, "bad/nul-yaml", b"---\nname: nul-yaml\x00x\ndescription: d\n---\n")
    # a dangling SKILL.md link: Hermes offers it under its folder name, and prunes its
    # support folders
    (skills / "bad" / "dangling").mkdir(parents=True)
    os.symlink("../missing/SKILL.md", skills / "bad" / "dangling" / "SKILL.md")
    sk(skills, "bad/dangling/references/inside", fm("inside-refs"))
    # support folders of a skill are not walked
    sk(skills, "prune/holder", fm("holder"))
    sk(skills, "prune/holder/references/inner", fm("inner-ref"))
    sk(skills, "prune/holder/scripts/inner2", fm("inner-script"))
    sk(skills, "prune/.git/hidden", fm("in-git"))
    # a plugin's skills: never listed by Hermes 0.19.0
    sk(home / "plugins" / "myplugin" / "skills", "plug/ps", fm("plugin-skill"))
    (home / "config.yaml").write_text(
        "skills:\n"
        "  disabled: [dis-name, dis-folder]\n"
        "  platform_disabled:\n"
        "    telegram: [tg-hidden, tgfolder]\n"
        "    discord: [dc-folder]\n"
        "  external_dirs: [ext1, ext2]\n",
        encoding="utf-8",
    )
    return home


def generated_quirks_home(base: Path) -> Path:
    """Inputs where skillidx deliberately differs (see DELIBERATE)."""
    home = base / "quirks"
    skills = home / "skills"
    (skills / "loops" / "spin").mkdir(parents=True)
    (skills / "loops" / "spin" / "SKILL.md").write_text("---\nname: spin\n---\n")
    (skills / "loops" / "spin" / "back").mkdir()
    # a link back to an ancestor: Hermes walks it until the path is too deep
    os.symlink("../../", skills / "loops" / "spin" / "back" / "loops")
    (skills / "crash" / "nullreq").mkdir(parents=True)
    (skills / "crash" / "nullreq" / "SKILL.md").write_text(
        "---\nname: nullreq\nmetadata:\n  hermes:\n    requires_tools:\n---\n"
    )
    (skills / "crash" / "fine").mkdir(parents=True)
    (skills / "crash" / "fine" / "SKILL.md").write_text("---\nname: fine\n---\n")
    # a SKILL.md linked to a file outside the skill root (a secret, say)
    (home / ".env").write_text("---\nname: env-helper\n---\nOPENAI_API_KEY=sk-live-SECRET\n")
    (skills / "devops" / "env-helper").mkdir(parents=True)
    os.symlink("../../../.env", skills / "devops" / "env-helper" / "SKILL.md")
    return home


ALL_SESSIONS = [
    Case("no tool info"),
    Case("tools", tools={"terminal", "browser"}, toolsets={"web", "terminal"}),
    Case("empty tools", tools=set(), toolsets=set()),
    Case("tools only", tools={"terminal"}),
    Case("toolsets only", toolsets={"web"}),
    Case("all environments", env={"kanban", "docker", "s6"}),
    Case("kanban", env={"kanban"}, tools={"browser"}, toolsets=set()),
    Case("telegram", platform="telegram"),
    Case("discord", platform="discord", env={"docker"}),
    Case("cli platform", platform="cli"),
]


# The releases the differential tests run: the venv's hermes-agent (0.19.0, from PyPI) and
# 0.20.1 (`hermes_release`). 0.21.3 is on no package registry: tests/hermes_0_21.rs.
RELEASES = [HERMES_VERSION, "0.20.1.2"]


def compare(name: str, home: Path, db: Path, cases: List[Case],
            version: str = HERMES_VERSION) -> List[str]:
    modules = None if version == HERMES_VERSION else hermes_release(version)
    hermes = hermes_offered(home, cases, modules=modules)
    ours = skillidx_offered(home, db, cases, version=version)
    report = []
    for case, h, s in zip(cases, hermes, ours):
        listed = [d for d in DELIBERATE.get(name, []) if d[4] is None or case.name in d[4]]
        if "error" in h:
            # Only a listed difference may crash Hermes' builder.
            assert any(d[4] is not None for d in listed), f"{name}/{case.name}: Hermes failed: {h['error']}"
            report.append(f"{name}/{case.name}: Hermes raised ({h['error']}); skillidx offers {len(s)}")
            continue
        hp = {(c, n) for c, n in h["pairs"]}
        only_h = hp - s
        only_s = s - hp
        for what, reason, extra_h, extra_s, _ in listed:
            if extra_h is NOTHING and extra_s is NOTHING:
                continue
            found_h = {p for p in only_h if extra_h(p)}
            found_s = {p for p in only_s if extra_s(p)}
            assert found_h or found_s, f"{name}/{case.name}: deliberate difference {what!r} did not occur"
            only_h -= found_h
            only_s -= found_s
            report.append(
                f"{name}/{case.name}: deliberate: {what} ({len(found_h)} only in Hermes, "
                f"{len(found_s)} only in skillidx): {reason}"
            )
        assert not only_h and not only_s, (
            f"{name}/{case.name}: only Hermes offers {sorted(map(str, only_h))[:20]}; "
            f"only skillidx offers {sorted(map(str, only_s))[:20]}"
        )
        report.append(f"{name}/{case.name}: {len(hp)} offered, equal")
    return report


@pytest.mark.parametrize("version", RELEASES)
def test_generated_rules_home_matches_hermes(tmp_path: Path, version: str) -> None:
    home = generated_rules_home(tmp_path)
    report = compare("rules", home, tmp_path / "rules.redb", ALL_SESSIONS, version)
    print("\n".join(report))


@pytest.mark.parametrize("version", RELEASES)
def test_generated_quirks_home_differs_only_as_listed(tmp_path: Path, version: str) -> None:
    home = generated_quirks_home(tmp_path)
    cases = [Case("no tool info"), Case("tools", tools={"x"}, toolsets=set())]
    report = compare("quirks", home, tmp_path / "quirks.redb", cases, version)
    print("\n".join(report))
    assert any("Hermes raised" in r for r in report), report


@pytest.mark.parametrize("version", RELEASES)
def test_example_home_matches_hermes(tmp_path: Path, version: str) -> None:
    home = tmp_path / "example"
    shutil.copytree(REPO / "examples" / "hermes-home", home, symlinks=True)
    cases = [Case("no tool info"), Case("telegram", platform="telegram"),
             Case("tools", tools={"terminal"}, toolsets={"terminal"}),
             Case("all environments", env={"kanban", "docker", "s6"})]
    report = compare("example", home, tmp_path / "example.redb", cases, version)
    print("\n".join(report))


def shared_corpus() -> Optional[Path]:
    for c in (REPO.parent / "shared" / "corpus", Path("/work/shared/corpus")):
        if (c / "skills").is_dir():
            return c
    return None


@pytest.mark.parametrize("version", RELEASES)
def test_shared_corpus_matches_hermes(tmp_path: Path, version: str) -> None:
    corpus = shared_corpus()
    if corpus is None:
        pytest.skip("the shared corpus is not here")
    # Hermes writes its snapshot into the home: a temporary home whose skills are the
    # read-only corpus.
    home = tmp_path / "corpus-home"
    home.mkdir()
    os.symlink(corpus / "skills", home / "skills")
    cases = [Case("no tool info"), Case("all environments", env={"kanban", "docker", "s6"}),
             Case("tools", tools={"terminal", "browser"}, toolsets={"terminal", "web"})]
    report = compare("corpus", home, tmp_path / "corpus.redb", cases, version)
    print("\n".join(report))


def test_warm_snapshot_quirk_is_hermes_own(tmp_path: Path) -> None:
    """Listed, not matched: after a cold build, Hermes' warm snapshot path skips the
    `environments` check, so a later process offers environment-only skills (with no
    description). skillidx always applies it, as the cold path does."""
    home = tmp_path / "warm"
    p = home / "skills" / "env" / "kanban-only" / "SKILL.md"
    p.parent.mkdir(parents=True)
    p.write_text("---\nname: kanban-only\nenvironments: [kanban]\n---\n")
    runner = HERMES_RUNNER.replace(
        "    pb.clear_skills_system_prompt_cache(clear_snapshot=True)\nprint",
        "    pb.clear_skills_system_prompt_cache(clear_snapshot=False)\nprint",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_")}
    args = json.dumps([Case("cold").hermes_args(home)])

    def run() -> list:
        out = subprocess.run([sys.executable, "-c", runner], input=args, capture_output=True,
                             text=True, env=env, timeout=300)
        assert out.returncode == 0, out.stderr[-2000:]
        return json.loads(out.stdout.strip().splitlines()[-1])[0]["pairs"]

    # The runner clears the snapshot before building, so both runs are cold, but the
    # snapshot it leaves behind is what a warm process reads.
    assert run() == []
    from_snapshot = json.loads((home / ".skills_prompt_snapshot.json").read_text())
    assert [e["frontmatter_name"] for e in from_snapshot["skills"]] == ["kanban-only"]
    ours = skillidx_offered(home, tmp_path / "warm.redb", [Case("cold")])[0]
    assert ours == set()


@pytest.mark.parametrize("which", ["example", "rules", "corpus"])
def test_the_plugin_reads_hermes_own_block_exactly(tmp_path: Path, which: str) -> None:
    """The plugin reads Hermes' real block (descriptions and all) against the engine's offer,
    trusting only whole renderings of offered skills: on homes without forged lines it must
    read exactly the pairs Hermes lists (Hermes' own, from a builder whose lines are bare
    names), and its names-only rewrite must be byte for byte what the text-only compactor
    makes of the block, except where that cut a name holding ": " short."""
    from skillidx import Index, _native

    if which == "example":
        home = tmp_path / "example"
        shutil.copytree(REPO / "examples" / "hermes-home", home, symlinks=True)
    elif which == "rules":
        home = generated_rules_home(tmp_path)
    else:
        corpus = shared_corpus()
        if corpus is None:
            pytest.skip("the shared corpus is not here")
        home = tmp_path / "corpus-home"
        home.mkdir()
        os.symlink(corpus / "skills", home / "skills")
    index = Index(home=str(home), db=str(tmp_path / "read.redb"), hermes_version=HERMES_VERSION)
    index.sync()
    cases = [Case("no tool info"),
             Case("tools", tools={"terminal", "skill_view"}, toolsets={"terminal", "skills"})]
    truth = hermes_offered(home, cases)
    blocks = hermes_offered(home, cases, REAL_BLOCK_RUNNER)
    for case, answer, real in zip(cases, truth, blocks):
        block = real["block"]
        hermes = {(c, n) for c, n in answer["pairs"]}
        assert hermes, which
        index.allow("s", block, case.tools, case.toolsets)
        read = set(map(tuple, index.allowed("s")))
        assert read == hermes, (sorted(hermes - read)[:10], sorted(read - hermes)[:10])
        (mine,) = index.rewrite_system("s", [block], case.tools, case.toolsets)
        text_only = _native.compact_available_skills(block)
        differ = [(a, b) for a, b in zip(mine.split("\n"), text_only.split("\n")) if a != b]
        assert len(mine.split("\n")) == len(text_only.split("\n"))
        # Where the text-only compactor cut a name holding ": " short, or kept a name holding
        # a control character (left out, since it could draw lines of the block's shape).
        assert all(": " in a.split(": ", 1)[1] or any(ord(c) < 32 for c in b)
                   for a, b in differ), differ
    index.wait(60)


def versions_home(base: Path) -> Path:
    """A home whose listing differs by Hermes release: `disabled` lists written as strings,
    an empty name, `hermes-agent` disabled, `skills.create_dir`, org mirrors (the active
    org's, a stale org's, and a personal skill sharing an org skill's name)."""
    home = base / "versions"
    for rel, name in [("tools/plain", "plain"), ("tools/gone", "gone"), ("ops/hermes-agent", "hermes-agent"),
                      ("chat/tg", "tg-gone"), ("tools/no-name", ""), ("cat2/orgskill", "orgskill"),
                      ("_org/acme/tools/orgskill", "orgskill"), ("_org/acme/deploy", "deploy"),
                      ("_org/old/tools/stale", "stale")]:
        p = home / "skills" / rel / "SKILL.md"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(f"---\nname: '{name}'\ndescription: about {name or 'nothing'}\n---\nBody.\n")
    (home / "skills" / "_org" / ".active_org").write_text("acme\n")
    # 0.21 hides it on telegram (session_platforms); 0.19 and 0.20 do not read the key.
    only = home / "skills" / "chat" / "discord-only" / "SKILL.md"
    only.parent.mkdir(parents=True)
    only.write_text("---\nname: discord-only\ndescription: d\nmetadata:\n  hermes:\n"
                    "    session_platforms: [discord]\n---\n")
    made = home / "made" / "general" / "created-skill" / "SKILL.md"
    made.parent.mkdir(parents=True)
    made.write_text("---\nname: created-skill\ndescription: made by skill_manage\n---\n")
    (home / "config.yaml").write_text(
        "skills:\n  disabled: \"['gone', 'hermes-agent']\"\n  create_dir: made\n"
        "  platform_disabled:\n    telegram: \"['tg-gone']\"\n")
    return home


@pytest.mark.parametrize("version", RELEASES)
def test_each_hermes_release_is_matched_by_its_own_rules(tmp_path: Path, version: str) -> None:
    """The same home through Hermes 0.19.0 and 0.20.1.2's own builders, and through skillidx
    told each version: the same pairs (0.21.3 is not published to a package registry; its
    rules are unit-tested in tests/hermes_versions.rs)."""
    home = versions_home(tmp_path)
    modules = None if version == HERMES_VERSION else hermes_release(version)
    cases = [Case("no tool info"), Case("telegram", platform="telegram")]
    hermes = hermes_offered(home, cases, modules=modules)
    ours = skillidx_offered(home, tmp_path / f"{version}.redb", cases, version=version)
    for case, h, s in zip(cases, hermes, ours):
        assert "error" not in h, h
        assert {(c, n) for c, n in h["pairs"]} == s, (version, case.name, h["pairs"], s)
    # The releases do differ on this home (else the test proves nothing).
    if modules is not None:
        older = skillidx_offered(home, tmp_path / "older.redb", cases)
        assert older != ours, "0.19 and 0.20 rules agree on this home"


def _0_21_rules_apply(home: Path) -> List[str]:
    """Where a rule 0.21 added over 0.20 applies in `home` (docs/offer-rules.md): a
    `session_platforms` key, `hermes-agent` disabled, `skills.create_dir`, a curator backup
    folder. (Trusted project skills need a session inside a project; these run outside.)"""
    found = []
    for md in (home / "skills").rglob("SKILL.md"):
        if "session_platforms" in md.read_text(encoding="utf-8", errors="replace"):
            found.append(f"session_platforms in {md}")
    found += [f"curator backups: {p}" for p in (home / "skills").rglob(".curator_backups")]
    config = home / "config.yaml"
    text = config.read_text(encoding="utf-8") if config.exists() else ""
    if "create_dir" in text or "hermes-agent" in text:
        found.append("config.yaml names create_dir or hermes-agent")
    return found


@pytest.mark.parametrize("which", ["example", "corpus"])
def test_0_21_lists_what_0_20_lists_where_no_0_21_rule_applies(tmp_path: Path, which: str) -> None:
    """Hermes 0.21.3 is on no package registry (tests/hermes_0_21.rs checks each of its rules
    on a rule home, against expectations read from its code). Its listing differs from
    0.20.1's only where a rule it added applies; on the example home and the shared corpus
    none does (checked), so `offered --hermes-version 0.21.3` must equal what Hermes
    0.20.1's own builder lists there."""
    home = tmp_path / which
    if which == "example":
        shutil.copytree(REPO / "examples" / "hermes-home", home, symlinks=True)
    else:
        corpus = shared_corpus()
        if corpus is None:
            pytest.skip("the shared corpus is not here")
        home.mkdir()
        os.symlink(corpus / "skills", home / "skills")
    assert _0_21_rules_apply(home) == []
    cases = [Case("no tool info"), Case("telegram", platform="telegram"),
             Case("tools", tools={"terminal"}, toolsets={"terminal"})]
    hermes = hermes_offered(home, cases, modules=hermes_release("0.20.1.2"))
    ours = skillidx_offered(home, tmp_path / "i.redb", cases, version="0.21.3")
    for case, h, s in zip(cases, hermes, ours):
        assert "error" not in h, h
        assert {(c, n) for c, n in h["pairs"]} == s, (which, case.name)
