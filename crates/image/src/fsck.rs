//! The real `e2fsck -fnv` as the judge of an image.

use std::path::Path;
use std::process::Command;

use crate::error::ImageError;
use crate::fsck_vitals::{parse_fsck_vitals, FsckVitals};

/// What e2fsck said.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FsckVerdict {
    /// Exit status 0: nothing to fix.
    pub clean: bool,
    /// e2fsck's exit status (0 clean, 4 errors left uncorrected with -n, ...).
    pub exit_code: i32,
    /// stdout then stderr.
    pub output: String,
    /// The `-v` summary: non-contiguous files and directories, extent depths, counts.
    pub vitals: Option<FsckVitals>,
}

/// Runs `e2fsck -fnv IMAGE` (forced, read-only, answers "no", with its summary).
///
/// Errors only when e2fsck cannot run or fails operationally (exit status 8 or more);
/// a file system with problems is an `Ok` verdict with `clean == false`.
pub fn fsck_check(image: &Path) -> Result<FsckVerdict, ImageError> {
    let out = Command::new("e2fsck")
        .arg("-fnv")
        .arg(image)
        .output()
        .map_err(|e| ImageError::Tool {
            tool: "e2fsck".into(),
            path: image.to_path_buf(),
            status: "not started".into(),
            output: format!("{e} (install e2fsprogs)"),
        })?;
    let output = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let exit_code = out.status.code().unwrap_or(-1);
    if !(0..8).contains(&exit_code) {
        return Err(ImageError::Tool {
            tool: "e2fsck -fn".into(),
            path: image.to_path_buf(),
            status: out.status.to_string(),
            output,
        });
    }
    Ok(FsckVerdict {
        clean: exit_code == 0,
        exit_code,
        vitals: parse_fsck_vitals(&output),
        output,
    })
}
