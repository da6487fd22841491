//! The one error type of the ROSS reader: which file, where in it, what.
//!
//! ROSS files have no magic number and no framing beyond each record's own
//! size field, so the only useful report of bad input is the file and the
//! byte offset of the first record that does not make sense. Everything
//! before that offset has been delivered by the time the error is returned.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::trace::source::TraceError;

/// What kind of fault a [`RossError`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RossErrorKind {
    /// The bytes at `offset` are not a record of the file's kind: an invalid
    /// header, a size that breaks the chain of records, a record cut short
    /// by the end of the file.
    Format,
    /// The operating system failed to open or read the file.
    Io,
    /// No ROSS stats files where they were looked for.
    NotFound,
    /// A payload schema that cannot be used (bad TOML, unknown field type).
    Schema,
    /// A payload shorter than the schema it is decoded with.
    Payload,
}

/// An error of the ROSS reader, naming the file (or directory) and, for
/// faults inside a file, the byte offset of the record at fault.
#[derive(Debug, Clone, PartialEq)]
pub struct RossError {
    kind: RossErrorKind,
    path: PathBuf,
    offset: Option<u64>,
    message: String,
}

impl RossError {
    /// An error of `kind` about `path`, at byte `offset` when the fault is
    /// inside the file.
    pub fn new(
        kind: RossErrorKind,
        path: impl Into<PathBuf>,
        offset: Option<u64>,
        message: impl Into<String>,
    ) -> Self {
        RossError {
            kind,
            path: path.into(),
            offset,
            message: message.into(),
        }
    }

    /// A format error: the record at byte `offset` of `path` is bad.
    pub fn format(path: &Path, offset: u64, message: impl Into<String>) -> Self {
        Self::new(RossErrorKind::Format, path, Some(offset), message)
    }

    /// An I/O error on `path` (at `offset` if it happened while reading).
    pub fn io(path: &Path, offset: Option<u64>, err: &std::io::Error) -> Self {
        Self::new(RossErrorKind::Io, path, offset, err.to_string())
    }

    /// What kind of fault this is.
    pub fn kind(&self) -> RossErrorKind {
        self.kind
    }

    /// The file or directory the error is about.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Byte offset in the file of the record at fault, if the fault is
    /// inside a file.
    pub fn offset(&self) -> Option<u64> {
        self.offset
    }

    /// What is wrong, without the path and offset.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for RossError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.offset {
            Some(off) => write!(f, "{}: byte {off}: {}", self.path.display(), self.message),
            None => write!(f, "{}: {}", self.path.display(), self.message),
        }
    }
}

impl std::error::Error for RossError {}

impl From<RossError> for TraceError {
    /// Missing files become [`TraceError::NotFound`] (a setup error); every
    /// other fault is a [`TraceError::Format`] at the error's offset (0 when
    /// it has none, e.g. a file that cannot be opened).
    fn from(e: RossError) -> Self {
        let stream = e.path.display().to_string();
        match e.kind {
            RossErrorKind::NotFound => TraceError::NotFound { stream },
            _ => TraceError::Format {
                stream,
                offset: e.offset.unwrap_or(0),
                message: e.message,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_path_and_offset() {
        let e = RossError::format(Path::new("/x/r1-gvt.bin"), 128, "bad flag 7");
        assert_eq!(e.to_string(), "/x/r1-gvt.bin: byte 128: bad flag 7");
        let t: TraceError = e.into();
        assert_eq!(t.to_string(), "/x/r1-gvt.bin: byte 128: bad flag 7");
        let n = RossError::new(RossErrorKind::NotFound, "/x", None, "no stats files");
        assert_eq!(n.to_string(), "/x: no stats files");
        assert!(TraceError::from(n).is_not_found());
    }
}
