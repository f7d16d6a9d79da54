//! See `fuzz/checks.rs`: `checks::tokenize`.
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|text: &str| checks::tokenize(text));
