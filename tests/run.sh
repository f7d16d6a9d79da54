#!/usr/bin/env bash
# Runs every test of skillidx: the Python module and Hermes plugin tests (which set up their
# own venv with maturin, pytest, hermes-agent, the semantic model's package and the MCP SDK),
# then the Rust unit and integration tests with the semantic model from that venv, and a
# compile check of the benchmarks. Needs only the Rust toolchain and python3.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -f tests/python/run.sh ]; then
  echo "== python module and hermes plugin"
  bash tests/python/run.sh
fi

# With the `semantic` feature, the model's port is checked against the reference package's
# own output (golden vectors) and the semantic stage runs in the store and in queries
# (tests/semantic_model.rs, tests/semantic_sync.rs); the package (weights and tokenizer
# model) is the one tests/python/run.sh installed into .venv. One build for every test.
echo "== cargo test"
SKILLIDX_PYTHON="$(pwd)/.venv/bin/python" cargo test --locked --features failpoints,semantic 2>&1

echo "== benchmarks compile"
cargo check --locked --benches 2>&1
