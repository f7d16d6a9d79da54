"""skillidx for agents other than Hermes: `skillidx mcp` driven by the real MCP client of the
protocol's Python SDK (`mcp` on PyPI) over stdio, on the shared corpus; a malformed request
gets a JSON-RPC error and the server keeps serving. (The hooks are tested against their
contract in tests/agent_hooks.rs.)"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO.parent / "shared" / "corpus" / "skills"
SKILLIDX = Path(sys.executable).parent / "skillidx"


@pytest.fixture(scope="module")
def corpus_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not CORPUS.is_dir():
        pytest.skip("the shared corpus is not beside this checkout")
    home = tmp_path_factory.mktemp("agents") / "hermes"
    shutil.copytree(CORPUS, home / "skills", symlinks=True)
    return home


def server_env(home: Path) -> Dict[str, str]:
    return {"PATH": os.environ.get("PATH", ""), "HOME": str(home.parent), "LANG": "C.UTF-8"}


def direct_queries(n: int) -> List[Dict[str, Any]]:
    rows = [json.loads(line) for line in (REPO / "tests" / "eval" / "queries.jsonl").open()]
    return [r for r in rows if r["kind"] == "direct" and r["lang"] == "en"][:n]


def test_the_real_mcp_client_lists_searches_and_reads(corpus_home: Path) -> None:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=str(SKILLIDX),
                                   args=["mcp", "--home", str(corpus_home), "--hermes-version", "0.19.0"],
                                   env=server_env(corpus_home))
    queries = direct_queries(20)

    async def run() -> Dict[str, Any]:
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                tools = await session.list_tools()
                answers = []
                for q in queries:
                    res = await session.call_tool("search_skills", {"query": q["query"]})
                    answers.append(res.content[0].text)
                read_one = await session.call_tool("read_skill", {"name": "convert-pdf-to-md"})
                small_talk = await session.call_tool("search_skills", {"query": "thanks, have a nice weekend!"})
                unknown = await session.call_tool("read_skill", {"name": "no-such-skill-anywhere"})
                return {"init": init, "tools": tools, "answers": answers, "read": read_one,
                        "small_talk": small_talk, "unknown": unknown}

    out = asyncio.run(run())
    assert out["init"].serverInfo.name == "skillidx"
    assert [t.name for t in out["tools"].tools] == ["search_skills", "read_skill"]
    found = 0
    for q, text in zip(queries, out["answers"]):
        paths = [str(corpus_home / "skills" / rel / "SKILL.md") for rel in q["relevant"]]
        found += any(p in text for p in paths)
    # The injection's own measure on these (direct, English) queries is S@6 0.96 at 2.8k.
    assert found >= 0.75 * len(queries), (found, len(queries))
    read = out["read"]
    assert not read.isError and read.content[0].text.startswith("Skill **convert-pdf-to-md**")
    assert "SKILL.md:" in read.content[0].text.split("\n")[0]
    assert out["small_talk"].content[0].text.startswith("No installed skill matches")
    assert out["unknown"].isError
    print(json.dumps({"direct_queries": len(queries), "labelled_skill_in_answer": found}))


def test_a_malformed_request_gets_an_error_and_the_server_keeps_serving(corpus_home: Path) -> None:
    proc = subprocess.Popen([str(SKILLIDX), "mcp", "--home", str(corpus_home)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=server_env(corpus_home), text=True)
    lines = [
        "{this is not json",
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                    "params": {"name": "search_skills", "arguments": {"query": ["not", "text"]}}}),
        json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                    "params": {"name": "search_skills", "arguments": {"query": "convert a pdf to markdown"}}}),
    ]
    out, _ = proc.communicate("\n".join(lines) + "\n", timeout=300)
    replies = [json.loads(line) for line in out.splitlines()]
    assert proc.returncode == 0
    assert replies[0]["error"]["code"] == -32700 and replies[0]["id"] is None
    assert replies[1]["error"]["code"] == -32602 and replies[1]["id"] == 1
    assert "convert-pdf-to-md" in replies[2]["result"]["content"][0]["text"]


def test_the_wheel_installs_into_claude_code_and_the_client_starts_what_it_wrote(tmp_path: Path) -> None:
    """`skillidx agents install claude-code` from the installed wheel: the entries name the
    wheel's `skillidx` script (not the Python running it); the real MCP client, started from
    the entry as Claude Code would start it, and the hook command, run as Claude Code runs it,
    find Claude Code's own skills."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    home = tmp_path / "me"
    skill = home / ".claude" / "skills" / "pdf-to-markdown"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: pdf-to-markdown\n"
                                    "description: Convert PDF documents into clean markdown text.\n---\nSteps.\n")
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "LANG": "C.UTF-8"}
    run = subprocess.run([str(SKILLIDX), "agents", "install", "claude-code"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    entry = json.loads((home / ".claude.json").read_text())["mcpServers"]["skillidx"]
    assert entry["command"] == str(SKILLIDX)
    hook = json.loads((home / ".claude" / "settings.json").read_text())
    command = hook["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    assert command == f"{SKILLIDX} hook claude-code"

    params = StdioServerParameters(command=entry["command"], args=entry["args"], env=env)

    async def search() -> str:
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                res = await session.call_tool("search_skills", {"query": "turn this PDF into markdown"})
                return res.content[0].text

    assert "pdf-to-markdown" in asyncio.run(search())
    # The hook, run through the shell as Claude Code runs it, with a documented event.
    event = {"session_id": "s1", "transcript_path": str(tmp_path / "t.jsonl"), "cwd": str(tmp_path),
             "permission_mode": "default", "hook_event_name": "UserPromptSubmit",
             "prompt": "turn this PDF document into markdown"}
    ran = subprocess.run(["sh", "-c", command], input=json.dumps(event), env=env,
                         capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr
    context = json.loads(ran.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "pdf-to-markdown" in context and len(context) < 10_000
    subprocess.run([str(SKILLIDX), "agents", "uninstall", "claude-code"], cwd=tmp_path, env=env,
                   check=True, capture_output=True, timeout=60)
    assert not (home / ".claude.json").exists()
