//! The one error type of this crate: every failure names the file, where in it, and why.

use std::fmt;

/// Where in its input a problem was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Location {
    /// 1-based line of a text file.
    Line(usize),
    /// Byte offset into a binary file.
    Byte(u64),
    /// The request with this index in a [`crate::Trace`] (writers).
    Request(usize),
    /// The file as a whole.
    File,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Line(n) => write!(f, "line {n}"),
            Location::Byte(n) => write!(f, "byte {n}"),
            Location::Request(n) => write!(f, "request {n}"),
            Location::File => write!(f, "file"),
        }
    }
}

/// Why reading or writing a trace failed.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The input is not valid for its format.
    #[error("{file}: {at}: {reason}")]
    Malformed {
        /// The file (or the name given to in-memory input).
        file: String,
        /// Where in the file.
        at: Location,
        /// What is wrong, in words a user can act on.
        reason: String,
    },
    /// Reading or writing the file failed.
    #[error("{file}: {source}")]
    Io {
        /// The file.
        file: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A format name nobody knows.
    #[error("unknown trace format '{name}' (valid: {valid})")]
    UnknownFormat {
        /// The name asked for.
        name: String,
        /// The valid names, comma-separated.
        valid: String,
    },
}

impl TraceError {
    /// A malformed-input error at `at` in `file`.
    pub fn malformed(file: &str, at: Location, reason: impl Into<String>) -> TraceError {
        TraceError::Malformed {
            file: file.to_string(),
            at,
            reason: reason.into(),
        }
    }

    /// A malformed-input error at 1-based `line`.
    pub fn at_line(file: &str, line: usize, reason: impl Into<String>) -> TraceError {
        TraceError::malformed(file, Location::Line(line), reason)
    }

    /// A malformed-input error at byte `offset`.
    pub fn at_byte(file: &str, offset: u64, reason: impl Into<String>) -> TraceError {
        TraceError::malformed(file, Location::Byte(offset), reason)
    }

    /// The 1-based line of a malformed text input, if that is what this error is.
    pub fn line(&self) -> Option<usize> {
        match self {
            TraceError::Malformed {
                at: Location::Line(n),
                ..
            } => Some(*n),
            _ => None,
        }
    }

    /// The byte offset of a malformed binary input, if that is what this error is.
    pub fn byte_offset(&self) -> Option<u64> {
        match self {
            TraceError::Malformed {
                at: Location::Byte(n),
                ..
            } => Some(*n),
            _ => None,
        }
    }

    /// The reason in words (without file and location).
    pub fn reason(&self) -> String {
        match self {
            TraceError::Malformed { reason, .. } => reason.clone(),
            TraceError::Io { source, .. } => source.to_string(),
            TraceError::UnknownFormat { name, .. } => format!("unknown trace format '{name}'"),
        }
    }
}
