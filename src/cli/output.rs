//! What the commands print, and a reader that goes away.
//!
//! `skillidx list | head -1` closes the pipe after one line. A command then stops printing,
//! not working: the sync it was running commits and closes the index cleanly, and the exit
//! status is 0, as for any output its reader did not want. Writing through [`outln!`] is how
//! every command prints; a failed write other than a closed pipe (a full disk behind a
//! redirection) is an error.

use std::fmt;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};

/// Opens `/dev/null` on each of the standard descriptors 0, 1 and 2 that is closed
/// (`skillidx sync >&-`). Otherwise the next file opened takes that number, the index file
/// say, and what the command prints is written into it. A Rust program's runtime does this
/// before `main`; the Python module runs the command inside the interpreter, which does not.
#[cfg(unix)]
pub fn keep_standard_fds_open() {
    for fd in 0..=2 {
        // SAFETY: fcntl on a descriptor number only asks whether it is open.
        let closed = unsafe { libc::fcntl(fd, libc::F_GETFD) } == -1
            && io::Error::last_os_error().raw_os_error() == Some(libc::EBADF);
        if closed {
            // The lowest free descriptor is `fd` itself, since those below it are open.
            // SAFETY: open with a constant NUL-terminated path.
            unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR) };
        }
    }
}

/// Without Unix descriptors there is nothing to keep open.
#[cfg(not(unix))]
pub fn keep_standard_fds_open() {}

/// Set once standard output's reader has gone away: nothing more is written.
static CLOSED: AtomicBool = AtomicBool::new(false);

/// Writes `args` to standard output; a closed pipe ends the output quietly.
pub fn write(args: fmt::Arguments<'_>) -> io::Result<()> {
    if CLOSED.load(Ordering::Relaxed) {
        return Ok(());
    }
    let mut out = io::stdout().lock();
    match out.write_fmt(args) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
            CLOSED.store(true, Ordering::Relaxed);
            Ok(())
        }
        other => other,
    }
}

/// Flushes standard output (a line that must reach a reader now: `search --batch`,
/// `watch --json`).
pub fn flush() -> io::Result<()> {
    if CLOSED.load(Ordering::Relaxed) {
        return Ok(());
    }
    match io::stdout().lock().flush() {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
            CLOSED.store(true, Ordering::Relaxed);
            Ok(())
        }
        other => other,
    }
}

/// Whether standard output's reader has gone away.
pub fn closed() -> bool {
    CLOSED.load(Ordering::Relaxed)
}

/// Writes to standard error, ignoring a failure: a message nobody can read is not worth
/// failing the command for.
pub fn warn(args: fmt::Arguments<'_>) {
    let _ = io::stderr().lock().write_fmt(args);
}

/// `println!` through [`write`]: evaluates to `io::Result<()>`.
macro_rules! outln {
    () => { $crate::cli::output::write(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::cli::output::write(format_args!("{}\n", format_args!($($arg)*))) };
}

/// `print!` through [`write`].
macro_rules! out {
    ($($arg:tt)*) => { $crate::cli::output::write(format_args!($($arg)*)) };
}

/// `eprintln!` through [`warn`].
macro_rules! errln {
    ($($arg:tt)*) => { $crate::cli::output::warn(format_args!("{}\n", format_args!($($arg)*))) };
}

pub(crate) use {errln, out, outln};

/// `s` cut to `max` characters, with an ellipsis when cut.
pub fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_owned()
    } else {
        s.chars().take(max - 1).collect::<String>() + "…"
    }
}
