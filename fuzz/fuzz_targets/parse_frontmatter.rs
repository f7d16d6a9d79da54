//! See `fuzz/checks.rs`: `checks::parse_frontmatter`.
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::parse_frontmatter(data));
