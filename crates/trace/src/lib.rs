//! The canonical block trace of layoutlab.
//!
//! This crate owns [`Trace`] and [`Request`]: what reached a block device, when, and (if known)
//! when it completed. It owns the readers and writers of the trace formats people already use
//! (tracefs text, blktrace binary, blkparse text, fio iolog, DiskSim ascii/validate, CSV), one
//! format per file. It does not know about devices, file systems or timing models.
//!
//! ```
//! use layoutlab_trace::{Trace, Request, Op, Flags};
//! let mut t = Trace::default();
//! let tag = t.tag("pass1");
//! t.requests.push(Request { issue_ns: 0, complete_ns: Some(8_000_000), op: Op::Read,
//!     sector: 2048, sectors: 8, flags: Flags::SYNC, tag });
//! assert_eq!(t.tag_name(tag), "pass1");
//! ```

use serde::{Deserialize, Serialize};

/// What a request does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Op {
    /// Read from the medium.
    Read,
    /// Write to the medium.
    Write,
    /// Flush the device's write cache (no sectors).
    Flush,
    /// Discard / trim.
    Discard,
}

/// Request flags as a small bit set (copyable, so the replay loop stays cheap).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Flags(pub u8);

impl Flags {
    /// No flags.
    pub const NONE: Flags = Flags(0);
    /// Synchronous (the issuer waits for it).
    pub const SYNC: Flags = Flags(1);
    /// File-system metadata.
    pub const META: Flags = Flags(2);
    /// Issued by readahead (nobody waits for it yet).
    pub const READAHEAD: Flags = Flags(4);
    /// Forced unit access.
    pub const FUA: Flags = Flags(8);
    /// Preceded by a cache flush.
    pub const PREFLUSH: Flags = Flags(16);
    /// Whether every flag of `other` is set.
    pub fn contains(self, other: Flags) -> bool {
        self.0 & other.0 == other.0
    }
}

impl std::ops::BitOr for Flags {
    type Output = Flags;
    fn bitor(self, rhs: Flags) -> Flags {
        Flags(self.0 | rhs.0)
    }
}

/// One block request. Sectors are 512 bytes whatever the device's logical block size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Request {
    /// When the request was issued to the device driver, ns from the trace's origin.
    pub issue_ns: u64,
    /// When it completed, if the trace knows.
    pub complete_ns: Option<u64>,
    /// What it does.
    pub op: Op,
    /// First sector (512-byte units).
    pub sector: u64,
    /// Length in sectors.
    pub sectors: u32,
    /// Flags.
    pub flags: Flags,
    /// Index into [`Trace::tags`]; 0 is the empty tag.
    pub tag: u16,
}

impl Request {
    /// Length in bytes.
    pub fn bytes(&self) -> u64 {
        self.sectors as u64 * 512
    }
}

/// A sequence of requests to one device, in issue order, with the names of their tags
/// (e.g. the e2fsck pass that issued them).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Trace {
    /// Requests in issue order.
    pub requests: Vec<Request>,
    /// Tag names; index 0 is always "" (untagged).
    pub tags: Vec<String>,
}

impl Default for Trace {
    fn default() -> Self {
        Trace {
            requests: Vec::new(),
            tags: vec![String::new()],
        }
    }
}

impl Trace {
    /// The index of tag `name`, added if new.
    pub fn tag(&mut self, name: &str) -> u16 {
        if let Some(i) = self.tags.iter().position(|t| t == name) {
            return i as u16;
        }
        self.tags.push(name.to_string());
        (self.tags.len() - 1) as u16
    }

    /// The name of tag index `tag` ("" if out of range).
    pub fn tag_name(&self, tag: u16) -> &str {
        self.tags
            .get(tag as usize)
            .map(String::as_str)
            .unwrap_or("")
    }
}
