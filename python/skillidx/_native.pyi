"""Type stubs for the Rust extension module ``skillidx._native``."""

from os import PathLike
from pathlib import Path
from typing import Any, Dict, List, Literal, Optional, Sequence, Tuple, TypedDict, Union

_Path = Union[str, "PathLike[str]"]

__version__: str
PLUGIN_NAME: str

class SkillidxError(Exception):
    """Base class of every skillidx error."""

class IndexMissingError(SkillidxError):
    """There is no index file yet."""

class IndexCorruptError(SkillidxError):
    """The index file is damaged or not a skillidx index."""

class IndexVersionError(SkillidxError):
    """A newer skillidx wrote the index file."""

class ProfileError(SkillidxError):
    """The profile name is invalid or the profile does not exist."""

class Hit:
    """A skill found by a search."""

    @property
    def id(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def category(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def score(self) -> float: ...
    @property
    def path(self) -> str: ...
    @property
    def alternatives(self) -> List[str]:
        """Ids of the copies this entry names (``retrieve``/``candidates``; else empty)."""
    def to_dict(self) -> Dict[str, Any]: ...

class SyncReport:
    """What a sync did."""

    @property
    def profile(self) -> str: ...
    @property
    def added(self) -> int: ...
    @property
    def updated(self) -> int: ...
    @property
    def removed(self) -> int: ...
    @property
    def unchanged(self) -> int: ...
    @property
    def skipped(self) -> List[Tuple[str, str]]: ...
    @property
    def warnings(self) -> List[Tuple[str, str]]: ...
    @property
    def inactive(self) -> int: ...
    @property
    def active(self) -> int: ...
    @property
    def hashed(self) -> int: ...
    @property
    def embedded(self) -> int:
        """Skills embedded by the semantic model (0 without it)."""
    @property
    def parsed(self) -> int: ...
    @property
    def committed(self) -> bool: ...
    @property
    def generation(self) -> int: ...
    @property
    def lock_wait_ms(self) -> float: ...
    @property
    def elapsed_ms(self) -> float: ...

class Problem(TypedDict):
    path: str
    reason: str

class Stats(TypedDict):
    profile: str
    home: Optional[str]
    active: int
    inactive: int
    skipped: List[Problem]
    terms: int
    avg_length: float
    generation: int
    synced_at_ns: int

class SkillEntry(TypedDict):
    id: str
    category: str
    description: str
    path: str
    inactive: Optional[str]
    notes: List[str]

class TermContribution(TypedDict):
    term: str
    df: int
    idf: float
    fields: List[Tuple[str, int]]
    score: float

class Explanation(TypedDict):
    id: str
    path: str
    rank: Optional[int]
    score: float
    length: int
    avg_length: float
    docs: int
    inactive: Optional[str]
    terms: List[TermContribution]

class LastSync(TypedDict):
    started_ms: int
    elapsed_ms: float
    committed: bool
    generation: int
    active: int

class Status(TypedDict):
    syncing: bool
    syncs: int
    failures: int
    busy: int
    sync_error: Optional[str]
    open_error: Optional[str]
    reopened: int
    last_sync: Optional[LastSync]

class Index:
    """An open index for one profile of a Hermes home; safe to share between threads.

    Queries use a read-only handle (nothing is written on open) that follows the file when it
    is replaced; ``refresh()`` syncs in the background, never in the calling thread.

    Every method that touches the store or the disk releases the GIL.
    """

    def __init__(
        self,
        home: Optional[_Path] = None,
        profile: Optional[str] = None,
        db: Optional[_Path] = None,
        readonly: bool = False,
        ttl: float = 30.0,
        semantic: bool = False,
        model_dir: Optional[_Path] = None,
        hermes_version: Optional[str] = None,
        cwd: Optional[_Path] = None,
    ) -> None:
        """``semantic=True``: syncs embed the skills and queries re-rank with the local model
        (pip extra ``skillidx[semantic]``); if it cannot be loaded, lexical ranking and
        ``semantic_error`` says why. ``hermes_version`` (``"0.21.3"``): the Hermes release
        whose offer rules syncs follow; default: the one installed on PATH, else the one the
        index follows, else the newest supported (``ValueError`` if not a version). ``cwd``:
        the session's working directory; inside a project the profile trusts (Hermes 0.21,
        ``skills.trusted_project_dirs``) the index is the project's profile
        (``<profile>@<root>``: the project's skills first, then the profile's)."""
    @property
    def semantic_error(self) -> Optional[str]:
        """Why the semantic stage asked for is off, or None."""
    @property
    def profile(self) -> str: ...
    @property
    def home(self) -> str: ...
    @property
    def db(self) -> str: ...
    def sync(self, rebuild: bool = False) -> SyncReport: ...
    def refresh(self) -> bool:
        """Freshness check; starts a background sync when one is due (returns True). Never waits."""
    def prepare(self) -> Optional[SyncReport]:
        """Startup: builds a missing index here, else starts a background sync if due."""
    def wait(self, timeout: Optional[float] = None) -> bool:
        """Waits until no background sync runs; for tests and shutdown, not turns."""
    def status(self) -> Status: ...
    def search(
        self,
        query: str,
        k: int = 6,
        platform: Optional[str] = None,
        ranking: Literal["default", "seed"] = "default",
        k1: float = 1.5,
        b: float = 0.75,
    ) -> List[Hit]: ...
    def retrieve(
        self,
        query: str,
        k: int = 6,
        inject_k: Optional[int] = None,
        min_score_ratio: float = 0.25,
        platform: Optional[str] = None,
        shown: Sequence[str] = ...,
        ranking: Literal["default", "seed"] = "default",
        k1: float = 1.5,
        b: float = 0.75,
        allowed: Optional[Sequence[Tuple[str, str]]] = None,
        session: Optional[str] = None,
        loader: Loader = "skill_view",
    ) -> Optional[str]:
        """The block the plugin injects; with ``session`` (after ``allow``) or ``allowed``,
        only skills the session's block lists. Its second line names the loader ``loader``
        resolves to (see ``loader``)."""
    def allow(
        self,
        session: str,
        system: str,
        tools: Optional[Sequence[str]] = None,
        toolsets: Optional[Sequence[str]] = None,
        platform: Optional[str] = None,
    ) -> int:
        """Reads what Hermes' ``<available_skills>`` block in ``system`` lists for the session,
        trusting only whole renderings of skills the engine offers with these tools; keeps it as
        the session's allow-list and returns how many skills it lists."""
    def rewrite_system(
        self,
        session: str,
        texts: Sequence[str],
        tools: Optional[Sequence[str]] = None,
        toolsets: Optional[Sequence[str]] = None,
        compact: bool = True,
        platform: Optional[str] = None,
        budget: int = 0,
        pinned: Sequence[str] = (),
        search_tool: Optional[str] = None,
        loader: Loader = "skill_view",
    ) -> List[str]:
        """``allow`` over the request's system texts (joined by newlines), then, with
        ``compact``, each ``<available_skills>`` block rewritten from what was read: to names
        only with ``budget`` 0, else to fit ``budget`` tokens (``pinned`` names first, a
        closing line pointing to ``search_tool`` and the loader). Made once per reading; the
        same string objects as the session's last call get that call's answer at once."""
    def loader(self, setting: Loader = "auto") -> Literal["skill_view", "skill_load"]:
        """The loader prompts name: with ``auto``, ``skill_load`` from 5,000 offered skills
        on (Hermes' ``skill_view`` walks every skill on each call), else ``skill_view``."""
    def load_tool(
        self,
        name: str,
        file_path: Optional[str] = None,
        platform: Optional[str] = None,
        session: Optional[str] = None,
    ) -> str:
        """The ``skill_load`` tool's answer: the SKILL.md (or ``file_path``, one of its files)
        of the offered skill ``name`` (id, name or ``category/folder``), cleaned like injected
        text, with its other files listed; or a sentence saying why not."""
    def search_tool(
        self,
        query: str,
        k: int = 6,
        min_score_ratio: float = 0.25,
        platform: Optional[str] = None,
        session: Optional[str] = None,
        loader: Loader = "skill_view",
    ) -> str:
        """The ``skills_search`` tool's answer: the injection's choice for ``query`` (floor,
        the session's allow-list, folding), the first ``k`` (1-20), or a sentence saying
        nothing matched."""
    def allowed(self, session: str) -> Optional[List[Tuple[str, str]]]:
        """The session's allow-list, ``None`` before ``allow`` saw it."""
    def filter_retrieved(self, text: str, session: str, inject_k: int) -> str:
        """``text`` with its retrieved-skills blocks keeping only listed entries."""
    def candidates(
        self,
        query: str,
        n: int = 20,
        min_score_ratio: float = 0.25,
        platform: Optional[str] = None,
        ranking: Literal["default", "seed"] = "default",
        k1: float = 1.5,
        b: float = 0.75,
        allowed: Optional[Sequence[Tuple[str, str]]] = None,
        session: Optional[str] = None,
    ) -> List[Hit]:
        """The reranker's candidates: what ``retrieve`` chooses from, ``n`` deep."""
    def explain(
        self,
        query: str,
        skill: str,
        platform: Optional[str] = None,
        ranking: Literal["default", "seed"] = "default",
        k1: float = 1.5,
        b: float = 0.75,
    ) -> Optional[Explanation]: ...
    def stats(self) -> Stats: ...
    def list(self) -> List[SkillEntry]: ...

def compact_available_skills(text: str) -> str: ...
def is_chit_chat(text: str) -> bool: ...
def format_retrieved_block(
    hits: Sequence[Hit], shown: Sequence[str] = ..., loader: Loader = "skill_view"
) -> Optional[str]: ...
def injected_ids(text: str) -> List[str]: ...
def main(argv: List[str]) -> int: ...

Loader = Literal["auto", "skill_view", "skill_load"]
RerankOutcome = Literal[
    "ok", "skipped", "no_key", "timeout", "http_error", "network_error", "bad_reply", "error"
]

class RerankStats(TypedDict):
    outcome: RerankOutcome
    detail: Optional[str]
    unknown: List[str]
    unknown_count: int
    duplicates: int
    omitted: int
    named: int
    tokens: Optional[int]

def rerank_request(query: str, hits: Sequence[Hit], model: str, n: int = 20) -> bytes:
    """The chat-completions body asking ``model`` to order the first ``n`` hits."""
def rerank_apply(body: bytes, hits: Sequence[Hit], n: int = 20) -> Tuple[List[Hit], RerankStats]:
    """The hits in the reply's order (the engine's when the reply gives none), and stats."""
def rerank_log(
    path: _Path,
    outcome: RerankOutcome,
    query: str,
    engine: Sequence[str],
    reranked: Sequence[str],
    inject_k: int,
    latency_ms: Optional[float] = None,
    session_id: Optional[str] = None,
    model: Optional[str] = None,
    detail: Optional[str] = None,
    unknown: Sequence[str] = ...,
    tokens: Optional[int] = None,
) -> None:
    """Appends one turn to the reranker's JSON-lines log (rotated past 5 MB)."""
def home_profile(home: Optional[_Path] = None) -> str:
    """The profile the Hermes home is (``<name>`` for ``.../profiles/<name>``, else
    ``default``; never the sticky ``active_profile``). ``ValueError`` if it is no home."""
def rerank_log_path(home: _Path) -> Path:
    """``$SKILL_RETRIEVAL_RERANK_LOG``, else ``<home>/logs/skillidx-rerank.jsonl``."""
def _set_failpoint(name: str, action: Optional[str] = None) -> None:
    """Only in builds with the ``failpoints`` feature (tests)."""
