//! Workloads: what a file system holds and how it got there.
//!
//! This crate owns [`Population`] (namespace operations in the order they happen: mkdir,
//! create with a size, ...), the named profiles (`bench5`, ...) and their scaling. It knows
//! nothing of where blocks go (that is `layoutlab-layout`) and writes nothing to disk.
//!
//! ```
//! use layoutlab_workload::profile_by_name;
//! let pop = profile_by_name("bench5").unwrap().scale(0.01).unwrap();
//! assert_eq!(pop.ops.len(), 350);
//! assert!(profile_by_name("nope").unwrap_err().to_string().contains("bench5"));
//! ```

use serde::{Deserialize, Serialize};

pub mod profiles;

/// One namespace operation. Paths are relative to the file system's root, '/'-separated.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum NsOp {
    /// Make a directory.
    Mkdir { path: String },
    /// Create a regular file and write `bytes` to it sequentially, then close it.
    Create { path: String, bytes: u64 },
}

/// The operations that build a file system's contents, in order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Population {
    /// Profile name, e.g. "bench5".
    pub name: String,
    /// Size of the file system the population is meant for, in bytes.
    pub fs_bytes: u64,
    /// Operations in order.
    pub ops: Vec<NsOp>,
}

/// Why a workload could not be built.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum Error {
    /// No profile has this name.
    #[error("unknown workload profile '{name}'; valid profiles: {}", valid.join(", "))]
    UnknownProfile {
        /// The name asked for.
        name: String,
        /// Every valid name.
        valid: Vec<&'static str>,
    },
    /// A scale factor that is not a finite number in (0, 1].
    #[error("scale factor {0} is not in (0, 1]")]
    BadScale(f64),
    /// Scaling left the file system too small to be made.
    #[error("scale factor {scale} leaves a {fs_bytes}-byte file system; at least {min_bytes} bytes are needed")]
    TooSmall {
        /// The factor.
        scale: f64,
        /// Resulting size.
        fs_bytes: u64,
        /// Smallest size accepted.
        min_bytes: u64,
    },
}

/// Names of the built-in profiles.
pub const PROFILE_NAMES: &[&str] = &["bench5"];

/// The built-in profile `name` at full scale.
///
/// Errors with [`Error::UnknownProfile`], whose message lists the valid names.
pub fn profile_by_name(name: &str) -> Result<Population, Error> {
    match name {
        "bench5" => Ok(profiles::bench5::bench5()),
        _ => Err(Error::UnknownProfile {
            name: name.to_string(),
            valid: PROFILE_NAMES.to_vec(),
        }),
    }
}

/// Smallest file system a scaled population may ask for: 64 MiB, so that mke2fs still
/// makes 4 KiB blocks, a journal and a few block groups.
pub const MIN_FS_BYTES: u64 = 64 << 20;

impl Population {
    /// Shrinks the file system and every file by `factor` (0 < factor ≤ 1), keeping the
    /// order and the names. Sizes are rounded down to whole bytes; a file never shrinks to
    /// zero unless it was empty.
    pub fn scale(&self, factor: f64) -> Result<Population, Error> {
        if !factor.is_finite() || factor <= 0.0 || factor > 1.0 {
            return Err(Error::BadScale(factor));
        }
        let shrink = |bytes: u64| -> u64 {
            if bytes == 0 {
                0
            } else {
                ((bytes as f64 * factor) as u64).max(1)
            }
        };
        let fs_bytes = shrink(self.fs_bytes);
        if fs_bytes < MIN_FS_BYTES {
            return Err(Error::TooSmall {
                scale: factor,
                fs_bytes,
                min_bytes: MIN_FS_BYTES,
            });
        }
        let ops = self
            .ops
            .iter()
            .map(|op| match op {
                NsOp::Mkdir { path } => NsOp::Mkdir { path: path.clone() },
                NsOp::Create { path, bytes } => NsOp::Create {
                    path: path.clone(),
                    bytes: shrink(*bytes),
                },
            })
            .collect();
        Ok(Population {
            name: self.name.clone(),
            fs_bytes,
            ops,
        })
    }

    /// Total bytes of regular-file data the population writes.
    pub fn file_bytes(&self) -> u64 {
        self.ops
            .iter()
            .map(|op| match op {
                NsOp::Create { bytes, .. } => *bytes,
                NsOp::Mkdir { .. } => 0,
            })
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_profile_lists_valid_names() {
        let err = profile_by_name("bench6").unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("bench6") && msg.contains("bench5"), "{msg}");
    }

    #[test]
    fn scale_rejects_bad_factors() {
        let pop = profile_by_name("bench5").unwrap();
        for f in [0.0, -1.0, 1.5, f64::NAN, f64::INFINITY] {
            assert!(pop.scale(f).is_err(), "{f}");
        }
        assert!(matches!(pop.scale(1e-6), Err(Error::TooSmall { .. })));
    }

    #[test]
    fn scale_shrinks_disk_and_files_together() {
        let pop = profile_by_name("bench5").unwrap();
        let small = pop.scale(0.01).unwrap();
        assert_eq!(small.ops.len(), pop.ops.len());
        let ratio_full = pop.file_bytes() as f64 / pop.fs_bytes as f64;
        let ratio_small = small.file_bytes() as f64 / small.fs_bytes as f64;
        assert!((ratio_full - ratio_small).abs() < 1e-6);
        assert_eq!(pop.scale(1.0).unwrap(), pop);
    }
}
