//! Errors of image creation, materialization and inspection.

use std::path::{Path, PathBuf};

/// Anything that can go wrong making, writing or reading an image.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    /// A libext2fs call failed.
    #[error("{path}: {op} failed: {message} (libext2fs error {code})")]
    Ext2fs {
        /// The image.
        path: PathBuf,
        /// The libext2fs operation.
        op: String,
        /// The com_err code.
        code: i64,
        /// The com_err text.
        message: String,
    },
    /// A file-system call on the image or its directory failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The directory that would hold the image has too little free space.
    #[error(
        "not enough free space in {dir}: the image needs about {need_bytes} bytes written \
         ({detail}), only {free_bytes} are free; choose another --workdir or a smaller --scale"
    )]
    NoSpace {
        /// Directory of the image.
        dir: PathBuf,
        /// Estimated bytes the image will allocate.
        need_bytes: u64,
        /// Free bytes available to us.
        free_bytes: u64,
        /// How the estimate was made.
        detail: String,
    },
    /// An external tool (mke2fs, e2fsck) failed to run or reported failure.
    #[error("{tool} on {path} failed ({status}): {output}")]
    Tool {
        /// The program.
        tool: String,
        /// The image.
        path: PathBuf,
        /// Exit status text.
        status: String,
        /// Its output (stdout and stderr).
        output: String,
    },
    /// The plan cannot be placed in this image; nothing was written.
    #[error("{path}: plan rejected, nothing written: inode {ino}: {reason}")]
    BadPlan {
        /// The image.
        path: PathBuf,
        /// The offending inode of the plan.
        ino: u32,
        /// What is wrong.
        reason: String,
    },
    /// Writing failed part-way; the half-written image was removed.
    #[error("{path}: writing the plan failed part-way, image removed: {cause}")]
    WriteFailed {
        /// The (now removed) image.
        path: PathBuf,
        /// The underlying failure.
        cause: Box<ImageError>,
    },
    /// Bad arguments or an image that is not what was asked for.
    #[error("{path}: {reason}")]
    Invalid {
        /// The image.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
}

impl ImageError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> ImageError {
        ImageError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}
