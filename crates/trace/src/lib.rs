//! The canonical block trace of layoutlab.
//!
//! This crate owns [`Trace`] and [`Request`]: what reached a block device, when, and (if known)
//! when it completed. It owns the readers and writers of the trace formats people already use,
//! one format per file: [`tracefs`] text (read), [`blktrace`] binary (read), [`blkparse`] text,
//! [`fio`] iolog v2 (read) and v3, [`disksim`] ascii and validate (read), and [`csv`]. The
//! [`format`] module names them, detects them and dispatches; [`stats`] sums requests per tag.
//! It does not know about devices, file systems, timing models, plotting, or how a trace is
//! captured (the rig crate does that; the tagging convention it follows is
//! `layoutlab tag=NAME` written into `trace_marker`, see `docs/trace-formats.md`).
//!
//! Readers never panic: bad input is a [`TraceError`] naming the file, the line (or byte
//! offset) and the reason.
//!
//! ```
//! use layoutlab_trace::{Trace, Request, Op, Flags, Format};
//! let mut t = Trace::default();
//! let tag = t.tag("pass1");
//! t.requests.push(Request { issue_ns: 0, complete_ns: Some(8_000_000), op: Op::Read,
//!     sector: 2048, sectors: 8, flags: Flags::SYNC, tag, cpu: None });
//! assert_eq!(t.tag_name(tag), "pass1");
//!
//! // Write as CSV and read it back.
//! let text = layoutlab_trace::write_string(&t, Format::Csv).unwrap();
//! let back = layoutlab_trace::read_bytes(text.as_bytes(), "mem.csv", Format::Csv,
//!     &Default::default()).unwrap();
//! assert_eq!(back, t);
//! assert_eq!(layoutlab_trace::stats::per_tag(&back)[0].read_bytes, 4096);
//! ```

#![warn(missing_docs)]

mod assemble;
pub mod blkparse;
pub mod blktrace;
pub mod cpu;
pub mod csv;
pub mod disksim;
pub mod error;
pub mod fio;
pub mod format;
pub mod queue;
pub mod read_options;
mod rwbs;
pub mod stats;
mod text;
pub mod tracefs;

pub use disksim::ValidateRecord;
pub use error::{Location, TraceError};
pub use format::{
    detect, read_as, read_bytes, read_path, read_path_with, write_path, write_string, DevId,
    Format, ReadOptions,
};
pub use queue::DeviceQueue;

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
    /// The issuing program's CPU time used at issue and completion, when the capture recorded
    /// the scheduler's accounting (see [`cpu`]); the replay then takes think times from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<cpu::CpuStamps>,
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
    /// The queue of the device it was captured on, when the capture recorded it (the rig
    /// does; most other formats cannot say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<DeviceQueue>,
}

impl Default for Trace {
    fn default() -> Self {
        Trace {
            requests: Vec::new(),
            tags: vec![String::new()],
            queue: None,
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

    /// The index of tag `name`, added if new; None when the table is full (65536 tags).
    pub fn try_tag(&mut self, name: &str) -> Option<u16> {
        if let Some(i) = self.tags.iter().position(|t| t == name) {
            return u16::try_from(i).ok();
        }
        if self.tags.len() > u16::MAX as usize {
            return None;
        }
        self.tags.push(name.to_string());
        Some((self.tags.len() - 1) as u16)
    }

    /// Whether every request carries [`Request::cpu`] stamps (a capture with CPU accounting);
    /// an empty trace has none.
    pub fn has_cpu(&self) -> bool {
        !self.requests.is_empty() && self.requests.iter().all(|r| r.cpu.is_some())
    }

    /// Sorts the requests by issue time, keeping the order of requests issued at the same ns.
    pub fn sort_by_issue(&mut self) {
        self.requests.sort_by_key(|r| r.issue_ns);
    }

    /// From the first issue to the last issue or completion, ns (0 for an empty trace).
    pub fn duration_ns(&self) -> u64 {
        let Some(start) = self.requests.iter().map(|r| r.issue_ns).min() else {
            return 0;
        };
        let end = self
            .requests
            .iter()
            .map(|r| r.complete_ns.unwrap_or(r.issue_ns).max(r.issue_ns))
            .max()
            .unwrap_or(start);
        end - start
    }

    /// The trace with every read longer than `max_sectors` (at least 1) replaced by consecutive
    /// reads of at most `max_sectors`, in order, each with the read's stamps: issued at once one
    /// behind the other, so a replay serves them back to back and the program waits for the
    /// last. Writes, reads flagged [`Flags::META`] (the file system's own blocks, not pages of
    /// a file) and other requests stay as they are. With 8 (4 KiB) this is a kernel that reads
    /// a file one page at a time, as 2.6.2x's `do_generic_mapping_read` did for a program that
    /// advised `POSIX_FADV_RANDOM` (no read-ahead: each page by `readpage`).
    pub fn split_reads(&self, max_sectors: u32) -> Trace {
        let max = max_sectors.max(1);
        let mut requests = Vec::with_capacity(self.requests.len());
        for r in &self.requests {
            if r.op != Op::Read || r.sectors <= max || r.flags.contains(Flags::META) {
                requests.push(*r);
                continue;
            }
            let mut done = 0u32;
            while done < r.sectors {
                let n = max.min(r.sectors - done);
                requests.push(Request {
                    sector: r.sector + u64::from(done),
                    sectors: n,
                    ..*r
                });
                done += n;
            }
        }
        Trace {
            requests,
            tags: self.tags.clone(),
            queue: self.queue.clone(),
        }
    }

    /// The name of tag index `tag` ("" if out of range).
    pub fn tag_name(&self, tag: u16) -> &str {
        self.tags
            .get(tag as usize)
            .map(String::as_str)
            .unwrap_or("")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(issue_ns: u64, complete_ns: Option<u64>) -> Request {
        Request {
            issue_ns,
            complete_ns,
            op: Op::Read,
            sector: issue_ns,
            sectors: 8,
            flags: Flags::NONE,
            tag: 0,
            cpu: None,
        }
    }

    #[test]
    fn sort_is_stable_and_duration_spans_completions() {
        let mut t = Trace {
            requests: vec![req(30, None), req(10, Some(100)), req(10, None)],
            ..Trace::default()
        };
        t.requests[2].sector = 99;
        t.sort_by_issue();
        let order: Vec<_> = t.requests.iter().map(|r| (r.issue_ns, r.sector)).collect();
        assert_eq!(order, vec![(10, 10), (10, 99), (30, 30)]);
        assert_eq!(t.duration_ns(), 90);
        assert_eq!(Trace::default().duration_ns(), 0);
    }

    #[test]
    fn split_reads_cuts_only_longer_reads_in_order_with_their_stamps() {
        let mut long = req(10, Some(500));
        long.sectors = 20;
        long.sector = 1000;
        let mut write = req(600, Some(700));
        write.op = Op::Write;
        write.sectors = 64;
        let mut meta = req(800, Some(900));
        meta.flags = Flags::META;
        meta.sectors = 64;
        let t = Trace {
            requests: vec![long, req(520, Some(530)), write, meta],
            ..Trace::default()
        };
        let s = t.split_reads(8);
        let got: Vec<_> = s
            .requests
            .iter()
            .map(|r| (r.op, r.sector, r.sectors, r.issue_ns, r.complete_ns))
            .collect();
        assert_eq!(
            got,
            vec![
                (Op::Read, 1000, 8, 10, Some(500)),
                (Op::Read, 1008, 8, 10, Some(500)),
                (Op::Read, 1016, 4, 10, Some(500)),
                (Op::Read, 520, 8, 520, Some(530)),
                (Op::Write, 600, 64, 600, Some(700)),
                (Op::Read, 800, 64, 800, Some(900)),
            ]
        );
        // The same bytes are read; 0 is taken as 1.
        let bytes = |t: &Trace| t.requests.iter().map(Request::bytes).sum::<u64>();
        assert_eq!(bytes(&s), bytes(&t));
        assert_eq!(t.split_reads(0).requests.len(), 20 + 8 + 1 + 1);
    }

    #[test]
    fn try_tag_refuses_the_65537th_tag() {
        let mut t = Trace::default();
        assert_eq!(t.try_tag("1"), Some(1));
        t.tags = (0..=u16::MAX as usize).map(|i| i.to_string()).collect();
        assert_eq!(t.try_tag("65535"), Some(u16::MAX));
        assert_eq!(t.try_tag("one too many"), None);
        assert_eq!(t.try_tag("7"), Some(7));
    }
}
