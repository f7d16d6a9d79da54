#!/usr/bin/env bash
# Python module and Hermes plugin tests.
#
# From a clean checkout with only the Rust toolchain and python3 (3.11-3.13, which
# hermes-agent 0.19.0 needs): creates .venv, installs maturin, pytest and hermes-agent==0.19.0
# from the package registry, builds and installs skillidx into it (maturin develop --release,
# with the `failpoints` feature the plugin-path tests use to pause a sync), then runs pytest on
# tests/python. The venv is reused when it already has the right packages.
#
# Env: PYTHON (interpreter for the venv, default python3), SKILLIDX_VENV (default .venv),
# extra arguments are passed to pytest.
set -euo pipefail
cd "$(dirname "$0")/../.."

PYTHON="${PYTHON:-python3}"
VENV="${SKILLIDX_VENV:-.venv}"
REQS=("maturin>=1.7,<2" "pytest>=7" "hermes-agent==0.19.0")
STAMP="$VENV/.skillidx-test-reqs"
WANT="$(printf '%s\n' "${REQS[@]}")"

if [ ! -x "$VENV/bin/python" ]; then
  echo "== creating $VENV"
  "$PYTHON" -m venv "$VENV"
fi
if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$WANT" ]; then
  echo "== installing ${REQS[*]}"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "${REQS[@]}"
  printf '%s' "$WANT" > "$STAMP"
fi

echo "== building skillidx into $VENV"
LOG="$VENV/maturin-develop.log"
if ! VIRTUAL_ENV="$(cd "$VENV" && pwd)" PATH="$(cd "$VENV" && pwd)/bin:$PATH" \
    "$VENV/bin/maturin" develop --release --features python,failpoints > "$LOG" 2>&1; then
  tail -40 "$LOG" >&2
  echo "maturin develop failed (full log: $LOG)" >&2
  exit 1
fi
tail -2 "$LOG"

echo "== pytest"
set +e
"$VENV/bin/python" -m pytest -q tests/python "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  echo "pytest collected no tests: that is a failure here" >&2
  exit 1
fi
exit "$rc"
