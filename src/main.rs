//! The `skillidx` command.

fn main() -> std::process::ExitCode {
    // SIGPIPE stays ignored (Rust's default): a reader that goes away (`skillidx list |
    // head -1`) makes a write fail with EPIPE, which ends the output quietly and lets the
    // command finish its work (a sync commits and closes the index cleanly). Killing the
    // process there would leave a sync's index open for writing, needing repair.
    skillidx::cli::main(std::env::args_os())
}
