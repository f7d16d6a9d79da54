//! The per-turn freshness check: a cheap stat signature of a profile's skill roots.
