//! What a reader needs beyond the bytes: which device's events to keep ([`ReadOptions`],
//! [`DevId`]). Every reader and the format dispatch (`format.rs`) use it; it knows neither.

use std::fmt;

/// A block device number (major, minor), as tracefs and blktrace print it (`7,0`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DevId {
    /// Major number.
    pub major: u32,
    /// Minor number.
    pub minor: u32,
}

impl fmt::Display for DevId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{},{}", self.major, self.minor)
    }
}

impl DevId {
    /// Parses `MAJOR,MINOR` (or `MAJOR:MINOR`).
    pub fn parse(s: &str) -> Option<DevId> {
        let (a, b) = s.split_once(',').or_else(|| s.split_once(':'))?;
        Some(DevId {
            major: a.trim().parse().ok()?,
            minor: b.trim().parse().ok()?,
        })
    }
}

/// Choices a reader needs beyond the bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadOptions {
    /// Keep only this device's events (tracefs, blktrace, blkparse). Without it a trace that
    /// holds several devices is an error.
    pub dev: Option<DevId>,
    /// Keep only this DiskSim `devno` (DiskSim ascii). Without it several devnos are an error.
    pub devno: Option<u32>,
}
