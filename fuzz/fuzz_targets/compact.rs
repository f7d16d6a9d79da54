//! See `fuzz/checks.rs`: `checks::compact`.
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|text: &str| checks::compact(text));
