//! The PyO3 bindings (built with `--features python`).
