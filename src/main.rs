//! The `skillidx` command.

fn main() -> std::process::ExitCode {
    skillidx::cli::main(std::env::args_os())
}
