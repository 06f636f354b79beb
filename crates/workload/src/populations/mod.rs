//! Built-in populations, one per file.

pub mod bench5;
pub mod tree;
