//! Catching what a C or C++ library prints on stderr during one call, so
//! the caller can say it again in its own words.
//!
//! ADIOS2 reports a failed open by printing a message to stderr itself
//! (with terminal colour codes and a timestamp) and returning a null
//! handle; the text never reaches the C API's caller. To put that text
//! into our error — cleaned and prefixed with the stream — the call runs
//! with file descriptor 2 pointed at an anonymous file, which is read back
//! afterwards.
//!
//! File descriptors are process-wide: a capture holds a lock so that two
//! captures never overlap, and anything another thread prints meanwhile
//! lands in the capture too (the caller prints the captured text, so it is
//! not lost). Use it only around calls that return quickly.

use std::io::{Read, Seek, SeekFrom};
use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::Mutex;

/// One capture at a time.
static CAPTURE: Mutex<()> = Mutex::new(());

/// Runs `f` with stderr redirected; returns its result and what was
/// printed. When the redirection cannot be set up, `f` runs with stderr
/// untouched and the text is empty.
pub fn capture_stderr<R>(f: impl FnOnce() -> R) -> (R, String) {
    let _guard = CAPTURE.lock().unwrap_or_else(|e| e.into_inner());
    let Some((saved, mut file)) = redirect() else {
        return (f(), String::new());
    };
    let out = f();
    restore(&saved);
    let mut text = String::new();
    if file.seek(SeekFrom::Start(0)).is_ok() {
        let mut bytes = Vec::new();
        let _ = file.read_to_end(&mut bytes);
        text = String::from_utf8_lossy(&bytes).into_owned();
    }
    (out, text)
}

/// Points fd 2 at a new anonymous file; returns the saved fd 2 and the
/// file.
fn redirect() -> Option<(OwnedFd, std::fs::File)> {
    // SAFETY: memfd_create with a static NUL-terminated name; the returned
    // descriptor is owned by the `File` from here on.
    let fd = unsafe { libc::memfd_create(c"chimbuko-stderr".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return None;
    }
    // SAFETY: `fd` is a fresh descriptor nobody else owns.
    let file = unsafe { std::fs::File::from_raw_fd(fd) };
    // SAFETY: dup of fd 2 (always open in a process we start); the copy is
    // owned by the returned `OwnedFd`.
    let saved = unsafe { libc::dup(2) };
    if saved < 0 {
        return None;
    }
    // SAFETY: as above.
    let saved = unsafe { OwnedFd::from_raw_fd(saved) };
    // SAFETY: dup2 onto fd 2 of a descriptor that stays open (`file`).
    if unsafe { libc::dup2(fd, 2) } < 0 {
        return None;
    }
    Some((saved, file))
}

/// Puts the saved stderr back on fd 2.
fn restore(saved: &OwnedFd) {
    use std::os::fd::AsRawFd;
    // SAFETY: dup2 of a descriptor we own onto fd 2.
    unsafe {
        libc::dup2(saved.as_raw_fd(), 2);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn captures_what_is_written_to_fd_2() {
        let (v, text) = capture_stderr(|| {
            let mut e = std::io::stderr();
            let _ = e.write_all(b"\x1b[1;31mboom\x1b[0m\n");
            let _ = e.flush();
            42
        });
        assert_eq!(v, 42);
        assert_eq!(text, "\x1b[1;31mboom\x1b[0m\n");
        // Restored: a second capture sees only its own text.
        // (Writes to fd 2 itself: the test harness captures `eprint!`.)
        let ((), again) = capture_stderr(|| {
            let _ = std::io::stderr().write_all(b"x");
        });
        assert_eq!(again, "x");
    }
}
