//! Built-in workload profiles, one per file.

pub mod bench5;
pub mod tree;
