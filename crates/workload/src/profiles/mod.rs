//! Built-in workload profiles, one per file.

pub mod bench5;
