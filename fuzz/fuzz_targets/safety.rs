//! See `fuzz/checks.rs`: `checks::safety`.
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|text: &str| checks::safety(text));
