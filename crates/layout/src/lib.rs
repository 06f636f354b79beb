//! Layout: where every inode, data block, mapping block and directory block goes.
//!
//! This crate owns the mke2fs-compatible [`Geometry`] of an ext file system, the [`Policy`]
//! trait (one allocator per file under `policy/`), and the [`Plan`] a policy produces. It does
//! no I/O: a plan for a 400 GB file system is computed in memory in seconds.

pub mod plan;
pub use plan::*;
