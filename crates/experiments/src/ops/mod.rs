//! The operations, one folder each with the same inner shape: `mod.rs` the [`crate::Operation`]
//! impl, its table (spec) and options; `run.rs` the pipeline, composed of the shared
//! [`crate::steps`]; `report.rs` rendering only (tables, report files, the JSON). An operation
//! whose pipeline and rendering still share one file keeps them in `mod.rs` until it is split
//! (docs/architecture.md lists which). No operation calls another: what two need is a step or a
//! module owned by neither (e.g. [`crate::random_file`]).
//!
//! Registering an operation is its folder here and one line in [`crate::OPERATIONS`].

pub mod aging;
pub mod cache_policies;
pub mod fio;
pub mod fsck;
pub mod inode_readahead;
pub mod large_delete;
pub mod metacluster_io;
pub mod mkfs_overhead;
pub mod random_read;
pub mod request_merging;
