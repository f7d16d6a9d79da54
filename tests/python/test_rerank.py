"""The plugin's optional LLM reranker (SKILL_RETRIEVAL_RERANK=1), end to end: the real
``pre_llm_call`` hook against a stub OpenAI-compatible endpoint on 127.0.0.1, the JSON-lines log
it writes, and ``skillidx rerank-report`` on that log.

The query below gives the engine's order docker-cleanup, terraform-plan, kubernetes-debugging on
the conftest home (the first two nearly tied: the expectations that follow the engine's order are
written from ``ENGINE``); with SKILL_RETRIEVAL_INJECT_K=2 the engine injects the first two, so a
reply that puts kubernetes-debugging first shows in the injection.
"""

from __future__ import annotations

import json
import logging
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

import skillidx
from conftest import Ctx

QUERY = "docker kubernetes terraform"
ENGINE = ["docker-cleanup", "terraform-plan", "kubernetes-debugging"]
K8S = "kubernetes-debugging"
# The engine's order with kubernetes-debugging put first.
K8S_FIRST = [K8S] + [s for s in ENGINE if s != K8S]
KEY = "sk-test-rerank"
MODEL = "stub-rerank-model"
SKILLIDX = Path(sys.executable).parent / "skillidx"
LOG_FIELDS = {"ts", "session", "query", "model", "engine", "reranked", "inject_k", "latency_ms",
              "outcome", "detail", "unknown", "tokens"}


class Endpoint:
    """A stub chat-completions endpoint: answers ``content`` after ``delay`` seconds, or
    ``status`` with an error body; records each request's path, headers and JSON body."""

    def __init__(self) -> None:
        self.content = "[]"
        self.delay = 0.0
        # Seconds between the reply body's bytes (0: all at once).
        self.drip = 0.0
        self.status = 200
        # (status, Location): answer every request with this redirect instead.
        self.redirect: Optional[tuple] = None
        self.requests: List[Dict[str, Any]] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                stub.requests.append({"path": self.path, "headers": dict(self.headers), "body": None})
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_POST(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(n).decode("utf-8")) if n else None
                stub.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                if stub.redirect is not None:
                    self.send_response(stub.redirect[0])
                    self.send_header("Location", stub.redirect[1])
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                time.sleep(stub.delay)
                if stub.status != 200:
                    obj: Any = {"error": {"message": "stub failure", "type": "server_error"}}
                else:
                    obj = {"id": "chatcmpl-stub", "object": "chat.completion", "model": MODEL,
                           "choices": [{"index": 0, "finish_reason": "stop",
                                        "message": {"role": "assistant", "content": stub.content}}],
                           "usage": {"prompt_tokens": 90, "completion_tokens": 10, "total_tokens": 100}}
                data = json.dumps(obj).encode()
                try:
                    self.send_response(stub.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    if not stub.drip:
                        self.wfile.write(data)
                    for i in range(len(data) if stub.drip else 0):
                        self.wfile.write(data[i:i + 1])
                        self.wfile.flush()
                        time.sleep(stub.drip)
                except OSError:  # the client gave up (the timeout tests)
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = "http://127.0.0.1:%d/v1" % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def prompt(self, i: int = -1) -> str:
        return self.requests[i]["body"]["messages"][1]["content"]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def endpoint():
    e = Endpoint()
    yield e
    e.close()


@pytest.fixture
def log(tmp_path: Path) -> Path:
    return tmp_path / "rerank.jsonl"


@pytest.fixture
def setup(home: Path, log: Path, endpoint: Endpoint, monkeypatch: pytest.MonkeyPatch):
    """Returns ``start(**env)``: sets the reranker's environment (on, the stub, a key, the log;
    ``name=None`` unsets one), reloads the plugin's settings and opens the index."""
    from skillidx import hermes_plugin as p

    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy",
                 "OPENAI_API_KEY", "OPENAI_BASE_URL", "SKILL_RETRIEVAL_TOP_K",
                 "SKILL_RETRIEVAL_MIN_SCORE_RATIO", "SKILL_RETRIEVAL_RANKING"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    monkeypatch.setenv("HERMES_HOME", str(home))

    def reset() -> None:
        if p._index is not None:
            p._index.wait(60)
        p._index = None
        p._profile = None
        p._last_problem.clear()

    def start(**env: Optional[str]) -> Any:
        base = {
            "SKILL_RETRIEVAL_RERANK": "1",
            "SKILL_RETRIEVAL_RERANK_BASE_URL": endpoint.url,
            "SKILL_RETRIEVAL_RERANK_MODEL": MODEL,
            "SKILL_RETRIEVAL_RERANK_API_KEY": KEY,
            "SKILL_RETRIEVAL_RERANK_LOG": str(log),
            "SKILL_RETRIEVAL_INJECT_K": "2",
        }
        base.update(env)
        for name, value in base.items():
            if value is None:
                monkeypatch.delenv(name, raising=False)
            else:
                monkeypatch.setenv(name, value)
        reset()
        p._settings = p._Settings()
        p._rerank = p._Rerank.from_env()
        p.register(Ctx())
        assert p._index is not None and p._index.wait(60)
        return p

    yield start
    reset()
    monkeypatch.undo()
    p._settings = p._Settings()
    p._rerank = p._Rerank.from_env()


def turn(p: Any, message: str = QUERY) -> Dict[str, Any]:
    started = time.perf_counter()
    result = p._on_pre_llm_call(user_message=message, conversation_history=[], session_id="sess-1",
                                platform="cli")
    return {"ids": skillidx.injected_ids(result["context"]) if result else [],
            "block": result["context"] if result else None,
            "seconds": time.perf_counter() - started}


def lines(log: Path) -> List[Dict[str, Any]]:
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


def engine_block(p: Any) -> Optional[str]:
    """What the plugin injects without the reranker."""
    return p._index.retrieve(QUERY, k=6, inject_k=2)


def test_a_good_reply_reorders_the_injection(setup: Any, endpoint: Endpoint, log: Path) -> None:
    endpoint.content = 'Sure! Ranked:\n```json\n["kubernetes-debugging", "docker-cleanup"]\n```'
    p = setup()
    out = turn(p)
    assert out["ids"] == ["kubernetes-debugging", "docker-cleanup"]
    assert out["block"] != engine_block(p)

    (req,) = endpoint.requests
    assert req["path"] == "/v1/chat/completions"
    assert req["headers"]["Authorization"] == "Bearer " + KEY
    assert req["body"]["model"] == MODEL
    prompt = endpoint.prompt()
    assert QUERY in prompt
    for i, skill in enumerate(ENGINE, 1):
        assert "%d. %s: " % (i, skill) in prompt

    (rec,) = lines(log)
    assert set(rec) == LOG_FIELDS
    assert rec["outcome"] == "ok"
    assert rec["session"] == "sess-1"
    assert rec["query"] == QUERY
    assert rec["model"] == MODEL
    assert rec["engine"] == ENGINE
    assert rec["reranked"] == ["kubernetes-debugging", "docker-cleanup", "terraform-plan"]
    assert rec["inject_k"] == 2
    assert rec["unknown"] == [] and rec["detail"] is None and rec["tokens"] == 100
    assert 0 < rec["latency_ms"] < 5000
    assert rec["ts"].endswith("Z") and rec["ts"][:2] == "20"


def test_only_top_n_candidates_are_sent_and_the_rest_keep_their_place(
    setup: Any, endpoint: Endpoint, log: Path
) -> None:
    # Three injected, two sent: the third stays third, and never leaves the machine.
    endpoint.content = '["docker-cleanup"]'
    p = setup(SKILL_RETRIEVAL_RERANK_TOP_N="2", SKILL_RETRIEVAL_INJECT_K="3")
    assert turn(p)["ids"] == ["docker-cleanup", "terraform-plan", "kubernetes-debugging"]
    assert "kubernetes-debugging" not in endpoint.prompt()
    (rec,) = lines(log)
    assert rec["reranked"] == ["docker-cleanup", "terraform-plan", "kubernetes-debugging"]


def test_a_slow_endpoint_times_out_to_the_engine_order(setup: Any, endpoint: Endpoint, log: Path) -> None:
    endpoint.content = '["kubernetes-debugging"]'
    endpoint.delay = 5.0
    p = setup(SKILL_RETRIEVAL_RERANK_TIMEOUT="0.5")
    out = turn(p)
    assert out["ids"] == ENGINE[:2]
    assert out["block"] == engine_block(p)
    # The configured 0.5 s, not the server's 5 s (some slack for a loaded 2-core machine).
    assert 0.45 <= out["seconds"] < 2.0, out["seconds"]
    (rec,) = lines(log)
    assert rec["outcome"] == "timeout"
    assert rec["reranked"] == ENGINE
    assert 450 <= rec["latency_ms"] < 2000


def test_a_trickled_reply_ends_with_its_call(setup: Any, endpoint: Endpoint, log: Path) -> None:
    # One byte every 0.1 s keeps each socket read alive: the call stops at its deadline
    # instead of reading for minutes on an abandoned thread (fourth hostile review).
    endpoint.content = '["kubernetes-debugging"]'
    endpoint.drip = 0.1
    p = setup(SKILL_RETRIEVAL_RERANK_TIMEOUT="0.5")
    out = turn(p)
    assert out["ids"] == ENGINE[:2]
    (rec,) = lines(log)
    assert rec["outcome"] == "timeout"
    time.sleep(1.5)
    alive = [t for t in threading.enumerate() if t.name == "skillidx-rerank"]
    assert not alive, alive


def test_a_garbage_reply_fails_open(setup: Any, endpoint: Endpoint, log: Path) -> None:
    endpoint.content = "I am sorry, I cannot rank skills today."
    p = setup()
    out = turn(p)
    assert out["block"] == engine_block(p)
    (rec,) = lines(log)
    assert rec["outcome"] == "bad_reply"
    assert "no JSON array" in rec["detail"]
    assert rec["reranked"] == ENGINE


def test_unknown_skill_names_are_ignored_and_logged(setup: Any, endpoint: Endpoint, log: Path) -> None:
    endpoint.content = '["made-up-skill", "kubernetes-debugging", "another-ghost", "kubernetes-debugging"]'
    p = setup()
    assert turn(p)["ids"] == K8S_FIRST[:2]
    # A reply naming only skills that are not candidates gives no order.
    endpoint.content = '["made-up-skill"]'
    assert turn(p)["ids"] == ENGINE[:2]
    first, second = lines(log)
    assert first["outcome"] == "ok"
    assert first["unknown"] == ["made-up-skill", "another-ghost"]
    assert first["reranked"] == K8S_FIRST
    assert second["outcome"] == "bad_reply"
    assert second["unknown"] == ["made-up-skill"]


def test_an_http_error_fails_open(setup: Any, endpoint: Endpoint, log: Path, caplog: Any) -> None:
    endpoint.status = 500
    p = setup()
    with caplog.at_level(logging.WARNING, logger="skillidx.hermes_plugin"):
        out = turn(p)
        turn(p)
    assert out["block"] == engine_block(p)
    recs = lines(log)
    assert [r["outcome"] for r in recs] == ["http_error", "http_error"]
    assert recs[0]["detail"].startswith("HTTP 500: ") and "stub failure" in recs[0]["detail"]
    # The same failure is logged once, not every turn.
    warned = [r for r in caplog.records if "reranker kept the engine's order" in r.getMessage()]
    assert len(warned) == 1


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_is_not_followed_and_the_key_stays_home(
    setup: Any, endpoint: Endpoint, log: Path, status: int
) -> None:
    """An endpoint answering a redirect to another host: nothing reaches that host (urllib
    would re-send ``Authorization`` there, as a GET for 301-303), its reply is never taken as
    the ranking, the engine's order is injected, and the turn logs ``redirect``."""
    elsewhere = Endpoint()  # the other host: a second server, reached as "localhost"
    try:
        elsewhere.content = '["kubernetes-debugging", "docker-cleanup"]'
        port = elsewhere.server.server_address[1]
        endpoint.redirect = (status, "http://localhost:%d/v1/chat/completions" % port)
        p = setup()
        out = turn(p)
        assert out["block"] == engine_block(p)
        assert len(endpoint.requests) == 1
        assert elsewhere.requests == [], elsewhere.requests
        (rec,) = lines(log)
        assert rec["outcome"] == "redirect", rec
        assert rec["detail"].startswith("HTTP %d to http://localhost:" % status), rec
    finally:
        elsewhere.close()


def test_an_unreachable_endpoint_fails_open(setup: Any, log: Path) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    p = setup(SKILL_RETRIEVAL_RERANK_BASE_URL="http://127.0.0.1:%d/v1" % port)
    assert turn(p)["block"] == engine_block(p)
    (rec,) = lines(log)
    assert rec["outcome"] == "network_error"


def test_no_key_disables_the_call_with_one_log_line(setup: Any, endpoint: Endpoint, log: Path) -> None:
    endpoint.content = '["kubernetes-debugging"]'
    p = setup(SKILL_RETRIEVAL_RERANK_API_KEY=None)
    assert p._rerank is not None and p._rerank.key is None
    out = turn(p)
    assert out["block"] == engine_block(p)
    assert endpoint.requests == []
    (rec,) = lines(log)
    assert rec["outcome"] == "no_key"
    assert rec["latency_ms"] is None and rec["model"] is None
    assert rec["engine"] == rec["reranked"] == ENGINE


def test_openai_api_key_is_the_fallback_and_jev_turns_it_on(
    setup: Any, endpoint: Endpoint, log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    endpoint.content = '["kubernetes-debugging"]'
    p = setup(SKILL_RETRIEVAL_RERANK="jev", SKILL_RETRIEVAL_RERANK_API_KEY=None)
    assert turn(p)["ids"][0] == "kubernetes-debugging"
    assert endpoint.requests[0]["headers"]["Authorization"] == "Bearer sk-openai"


def test_off_by_default_no_call_and_no_log(setup: Any, endpoint: Endpoint, log: Path, home: Path) -> None:
    p = setup(SKILL_RETRIEVAL_RERANK=None)
    assert p._rerank is None
    assert turn(p)["block"] == engine_block(p)
    assert endpoint.requests == []
    assert not log.exists()
    assert not (home / "logs").exists()


def test_the_default_log_is_in_the_profile_home(setup: Any, endpoint: Endpoint, home: Path) -> None:
    endpoint.content = '["docker-cleanup"]'
    p = setup(SKILL_RETRIEVAL_RERANK_LOG=None)
    turn(p)
    (rec,) = lines(home / "logs" / "skillidx-rerank.jsonl")
    assert rec["outcome"] == "ok"


def test_one_candidate_is_not_sent(setup: Any, endpoint: Endpoint, log: Path) -> None:
    p = setup()
    out = turn(p, "summarise arxiv papers")
    assert out["ids"] == ["arxiv-search"]
    assert endpoint.requests == []
    (rec,) = lines(log)
    assert rec["outcome"] == "skipped" and rec["engine"] == ["arxiv-search"]


def test_rerank_report_counts_the_turns_logged(setup: Any, endpoint: Endpoint, log: Path) -> None:
    p = setup(SKILL_RETRIEVAL_RERANK_TIMEOUT="0.3")
    endpoint.content = '["kubernetes-debugging", "ghost"]'   # ok, top-3 changed, 1 unknown
    turn(p)
    endpoint.content = json.dumps(ENGINE[:2])  # ok, nothing changed
    turn(p)
    endpoint.content = "no idea"                               # bad_reply
    turn(p)
    endpoint.status = 500                                      # http_error
    turn(p)
    endpoint.status, endpoint.delay = 200, 3.0                 # timeout
    turn(p)
    p = setup(SKILL_RETRIEVAL_RERANK_API_KEY=None)             # no_key
    turn(p)

    out = subprocess.run([str(SKILLIDX), "rerank-report", "--log", str(log), "--json"],
                         capture_output=True, text=True, check=True)
    r = json.loads(out.stdout)
    assert r["turns"] == 6 and r["malformed"] == 0
    assert r["reranked"] == 2
    assert r["top1_changed"] == 1 and r["top3_changed"] == 1 and r["injection_changed"] == 1
    assert r["failed"] == 3
    assert {k: v for k, v in r["outcomes"].items() if v} == {
        "ok": 2, "bad_reply": 1, "http_error": 1, "timeout": 1, "no_key": 1}
    assert r["latency_ms"]["calls"] == 5
    assert r["latency_ms"]["max"] >= 250
    assert r["unknown_names"] == 1 and r["top_unknown"] == [["ghost", 1]]

    text = subprocess.run([str(SKILLIDX), "rerank-report", "--log", str(log)],
                          capture_output=True, text=True, check=True).stdout
    assert "changed the top-1 in 1 (50.0%), the top-3 in 1 (50.0%)" in text
    assert "failed open: 3 of 5 calls" in text


def test_a_real_hermes_turn_injects_the_reranked_order(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Inside hermes-agent 0.19.0 (`hermes -z`): the installed plugin asks the stub to rerank,
    and the request Hermes sends to its model carries the reranked injection."""
    from test_hermes_e2e import _agent, injected, run_turn, texts

    agent = _agent(tmp_path_factory)
    stub = agent["stub"]
    try:
        log = agent["base"] / "rerank.jsonl"
        stub.reply = '["kubernetes-debugging", "docker-cleanup", "terraform-plan"]'
        run_turn(agent, "How do I use docker, kubernetes and terraform together?",
                 SKILL_RETRIEVAL_RERANK="1", SKILL_RETRIEVAL_RERANK_BASE_URL="http://127.0.0.1:%d/v1" % stub.port,
                 SKILL_RETRIEVAL_RERANK_MODEL=MODEL, SKILL_RETRIEVAL_RERANK_API_KEY=KEY,
                 SKILL_RETRIEVAL_RERANK_LOG=str(log), SKILL_RETRIEVAL_INJECT_K="2")
        requests = stub.chat_requests()
        reranks = [r for r in requests if r.get("model") == MODEL]
        turns = [r for r in requests if r.get("model") != MODEL]
        assert len(reranks) == 1 and turns
        (rec,) = lines(log)
        assert rec["outcome"] == "ok", rec
        assert rec["reranked"][0] == "kubernetes-debugging" and rec["engine"][0] != "kubernetes-debugging"
        _, user = texts(turns[0])
        assert injected(user) == rec["reranked"][:2]
    finally:
        stub.close()


def test_the_reranker_fits_within_hermes_hook_time_limit(setup: Any, home: Path) -> None:
    """Hermes 0.21 gives a pre_llm_call callback `plugins.hook_callback_timeout` seconds (30 by
    default) and skips it for a minute after a timeout: the reranker keeps to half of it."""
    config = home / "config.yaml"
    before = config.read_text() if config.exists() else ""
    try:
        config.write_text(before + "\nplugins:\n  hook_callback_timeout: 4\n")
        p = setup(SKILL_RETRIEVAL_RERANK_TIMEOUT="30")
        assert p._rerank.timeout == 2.0
        config.write_text(before + "\nplugins:\n  hook_callback_timeout: 0\n")
        p = setup(SKILL_RETRIEVAL_RERANK_TIMEOUT="30")
        assert p._rerank.timeout == 30.0, "0: no limit"
        config.write_text(before)
        p = setup(SKILL_RETRIEVAL_RERANK_TIMEOUT="45")
        assert p._rerank.timeout == 15.0, "unset: 30 s"
    finally:
        config.write_text(before)
