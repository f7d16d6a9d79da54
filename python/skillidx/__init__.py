"""skillidx: a persistent, incremental BM25 index of Hermes Agent skills.

The engine is Rust (``skillidx._native``); this package re-exports it. The Hermes plugin
lives in ``skillidx.hermes_plugin`` and is installed into a Hermes home with
``skillidx hermes install``.
"""

from __future__ import annotations

import os
import sys

# No `typing` import: it costs 14 ms, most of a hook's new process (`skillidx hook`); the
# annotations are strings (`from __future__ import annotations`).
from ._native import (
    PLUGIN_NAME,
    Hit,
    Index,
    IndexCorruptError,
    IndexMissingError,
    IndexVersionError,
    ProfileError,
    SkillidxError,
    SyncReport,
    __version__,
    compact_available_skills,
    format_retrieved_block,
    injected_ids,
    is_chit_chat,
)
from ._native import main as _native_main

__all__ = [
    "PLUGIN_NAME",
    "Hit",
    "Index",
    "IndexCorruptError",
    "IndexMissingError",
    "IndexVersionError",
    "ProfileError",
    "SkillidxError",
    "SyncReport",
    "__version__",
    "compact_available_skills",
    "format_retrieved_block",
    "injected_ids",
    "is_chit_chat",
    "main",
]


def main(argv: list[str] | None = None) -> int:
    """Runs the ``skillidx`` command line (the same code as the Rust binary)."""
    args = list(sys.argv if argv is None else argv)
    if not args:
        args = ["skillidx"]
    # Python's buffered output first; a stream that is closed (``skillidx sync >&-``: it is
    # then None) or gone has nothing to give, and the command runs as the binary would.
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            pass
    return _native_main(args)


def _console_main() -> None:
    # `skillidx hermes status` runs Hermes' own code with the Python the agent uses.
    os.environ.setdefault("SKILLIDX_PYTHON", sys.executable)
    sys.exit(main())
