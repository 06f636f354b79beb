//! The one error type of the rig: every failure says what was being done and what to do next.

use std::path::PathBuf;

/// Everything that can go wrong while the rig creates, uses or tears down a resource.
#[derive(Debug, thiserror::Error)]
pub enum RigError {
    /// The operation needs root (loop devices, mounts, tracefs, drop_caches).
    #[error("{what} needs root: run as root (e.g. `sudo`), or skip this step")]
    NotRoot {
        /// What was attempted.
        what: String,
    },
    /// A system call or file operation failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done, with the path involved.
        what: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// Not enough free space to write what was asked, checked before writing anything.
    #[error(
        "not enough free space in {}: need {needed_bytes} bytes, {available_bytes} available; \
         free space or choose another directory",
        dir.display()
    )]
    NoSpace {
        /// Directory whose file system was checked.
        dir: PathBuf,
        /// Bytes the step would write.
        needed_bytes: u64,
        /// Bytes available to an unprivileged writer.
        available_bytes: u64,
    },
    /// An external program failed or could not be started.
    #[error("{program} failed ({status}): {stderr}")]
    Command {
        /// The program and its arguments.
        program: String,
        /// Exit status or the reason it did not run.
        status: String,
        /// Its standard error (trimmed).
        stderr: String,
    },
    /// Text read back from the kernel or a tool did not have the expected form.
    #[error("{source_name}:{line}: {reason}")]
    Parse {
        /// Where the text came from (a file or a program's output).
        source_name: String,
        /// 1-based line number.
        line: usize,
        /// What was wrong.
        reason: String,
    },
    /// The captured trace could not be read (the trace crate's reader said why).
    #[error("reading the captured trace: {0}")]
    Trace(#[from] layoutlab_trace::TraceError),
    /// A kernel facility the rig needs is missing or in an unexpected state.
    #[error("{0}")]
    Unsupported(String),
    /// An operation of a replayed stream that the kernel refused ([`crate::apply_ops()`]).
    // The errno is in the message, not a `source` (which a `{:#}` chain would print twice).
    #[error("ops[{index}] ({verb} '{path}'): {error}")]
    ApplyOp {
        /// Index of the operation in the population's `ops`.
        index: usize,
        /// What it does (mkdir, create, ...).
        verb: &'static str,
        /// The path it names, relative to the file system's root.
        path: String,
        /// The system call's error (its errno).
        error: std::io::Error,
    },
    /// A bad argument from the caller.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
}

impl RigError {
    /// An [`RigError::Io`] for `what` from the last OS error.
    pub(crate) fn last_os(what: impl Into<String>) -> RigError {
        RigError::Io {
            what: what.into(),
            source: std::io::Error::last_os_error(),
        }
    }

    /// An [`RigError::Io`] for `what`.
    pub(crate) fn io(what: impl Into<String>, source: std::io::Error) -> RigError {
        RigError::Io {
            what: what.into(),
            source,
        }
    }
}

/// Result with [`RigError`].
pub type Result<T, E = RigError> = std::result::Result<T, E>;
