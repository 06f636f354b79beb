//! Per-tag counts and bytes of a trace (e.g. requests and MB read per e2fsck pass).

use crate::{Op, Trace};

/// What the requests of one tag did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TagStats {
    /// The tag's name ("" for untagged requests).
    pub tag: String,
    /// All requests.
    pub requests: u64,
    /// Read requests.
    pub reads: u64,
    /// Write requests.
    pub writes: u64,
    /// Flush requests.
    pub flushes: u64,
    /// Discard requests.
    pub discards: u64,
    /// Bytes read.
    pub read_bytes: u64,
    /// Bytes written.
    pub write_bytes: u64,
    /// Bytes discarded.
    pub discard_bytes: u64,
}

impl TagStats {
    /// Bytes moved (read + written; discards move nothing).
    pub fn bytes(&self) -> u64 {
        self.read_bytes + self.write_bytes
    }
}

/// One [`TagStats`] per tag that has requests, in the order of the trace's tag table.
pub fn per_tag(trace: &Trace) -> Vec<TagStats> {
    let mut stats: Vec<TagStats> = trace
        .tags
        .iter()
        .map(|name| TagStats {
            tag: name.clone(),
            ..TagStats::default()
        })
        .collect();
    for r in &trace.requests {
        // A request pointing past the tag table counts as untagged, as tag_name() says.
        let i = if (r.tag as usize) < stats.len() {
            r.tag as usize
        } else {
            0
        };
        let s = &mut stats[i];
        s.requests += 1;
        match r.op {
            Op::Read => {
                s.reads += 1;
                s.read_bytes += r.bytes();
            }
            Op::Write => {
                s.writes += 1;
                s.write_bytes += r.bytes();
            }
            Op::Flush => s.flushes += 1,
            Op::Discard => {
                s.discards += 1;
                s.discard_bytes += r.bytes();
            }
        }
    }
    stats.retain(|s| s.requests > 0);
    stats
}

/// The totals over the whole trace (tag "").
pub fn total(trace: &Trace) -> TagStats {
    let mut t = TagStats::default();
    for s in per_tag(trace) {
        t.requests += s.requests;
        t.reads += s.reads;
        t.writes += s.writes;
        t.flushes += s.flushes;
        t.discards += s.discards;
        t.read_bytes += s.read_bytes;
        t.write_bytes += s.write_bytes;
        t.discard_bytes += s.discard_bytes;
    }
    t
}
