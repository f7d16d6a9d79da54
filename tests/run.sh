#!/usr/bin/env bash
# Runs every test of skillidx: the Rust unit and integration tests, a compile check of the
# benchmarks, and the Python module and Hermes plugin tests (which set up their own venv with
# maturin, pytest and hermes-agent). Needs only the Rust toolchain and python3.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo test"
cargo test --locked --features failpoints 2>&1

echo "== benchmarks compile"
cargo check --locked --benches 2>&1

if [ -f tests/python/run.sh ]; then
  echo "== python module and hermes plugin"
  bash tests/python/run.sh
fi

# The semantic model's port against the reference package's own output (golden vectors), and
# the semantic stage in the store and in queries (tests/semantic_sync.rs);
# the package (weights and tokenizer model) is installed into .venv by tests/python/run.sh.
echo "== semantic model (feature semantic) against the reference package"
SKILLIDX_PYTHON="$(pwd)/.venv/bin/python" cargo test --locked --features semantic --test semantic_model --test semantic_sync 2>&1
