//! The plots: one per file. Each takes plain data and returns the SVG document as a `String`;
//! callers write the files.

pub mod cdf;
pub mod downsample;
pub mod offset;
pub mod sweep;
