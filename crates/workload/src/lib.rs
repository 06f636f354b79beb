//! Workloads: what a file system holds and how it got there.
//!
//! This crate owns [`Population`] (namespace operations in the order they happen: mkdir,
//! create with a size, ...), the named profiles (`bench5`, ...) and their scaling. It knows
//! nothing of where blocks go (that is `layoutlab-layout`).

use serde::{Deserialize, Serialize};

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
