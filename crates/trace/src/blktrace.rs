//! Reader of blktrace binary files: the per-CPU files `NAME.blktrace.CPU` that `blktrace`
//! writes, each a sequence of `struct blk_io_trace` records (48 bytes, from the kernel's
//! `include/uapi/linux/blktrace_api.h`, version 7) each followed by `pdu_len` payload bytes.
//!
//! ```text
//! offset size field          offset size field
//!  0      4   magic|version   32     4   pid
//!  4      4   sequence        36     4   device (major << 20 | minor)
//!  8      8   time (ns)       40     4   cpu
//! 16      8   sector          44     2   error
//! 24      4   bytes           46     2   pdu_len
//! 28      4   action (category bits << 16 | action code)
//! ```
//!
//! The byte order is the writer's: the magic `0x65617400` tells it (both are read). Actions
//! used: Q (queue), D (issue), C (complete), and notify messages whose text is
//! `layoutlab tag=NAME` (written with `blktrace`'s message interface) for tags; G, I, M, P, U
//! and the rest are skipped. Payloads (unplug depth, remap, cgroup id, messages) are skipped
//! by their length. Several per-CPU files are merged by time before pairing.

use std::path::Path;

use crate::assemble::{self, BlockEvent, Event, Origin, Stage};
use crate::error::{Location, TraceError};
use crate::read_options::{DevId, ReadOptions};
use crate::{Flags, Op, Trace};

/// `BLK_IO_TRACE_MAGIC`.
pub const MAGIC: u32 = 0x6561_7400;
/// `BLK_IO_TRACE_VERSION` this reader understands.
pub const VERSION: u8 = 0x07;
/// Size of `struct blk_io_trace`.
pub const RECORD_BYTES: usize = 48;

// Category bits (action >> 16), from enum blktrace_cat.
const TC_WRITE: u32 = 1 << 1;
const TC_FLUSH: u32 = 1 << 2;
const TC_SYNC: u32 = 1 << 3;
const TC_NOTIFY: u32 = 1 << 10;
const TC_AHEAD: u32 = 1 << 11;
const TC_META: u32 = 1 << 12;
const TC_DISCARD: u32 = 1 << 13;
const TC_FUA: u32 = 1 << 15;
// Action codes (action & 0xff), from enum blktrace_act / blktrace_notify.
const TA_QUEUE: u32 = 1;
const TA_ISSUE: u32 = 7;
const TA_COMPLETE: u32 = 8;
const TA_CGROUP: u32 = 1 << 8;
const TN_MESSAGE: u32 = 2;

/// One decoded `blk_io_trace` record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// Byte offset of the record in its file.
    pub offset: u64,
    /// Event sequence number.
    pub sequence: u32,
    /// Time in ns (the tracer's clock).
    pub time_ns: u64,
    /// Disk offset in sectors.
    pub sector: u64,
    /// Transfer length in bytes.
    pub bytes: u32,
    /// Category bits << 16 | action code.
    pub action: u32,
    /// Issuing process.
    pub pid: u32,
    /// Device number, `major << 20 | minor`.
    pub device: u32,
    /// CPU that logged it.
    pub cpu: u32,
    /// Completion error.
    pub error: u16,
    /// The payload bytes (`pdu_len` of them).
    pub pdu: Vec<u8>,
}

impl Record {
    /// The device as (major, minor).
    pub fn dev(&self) -> DevId {
        DevId {
            major: self.device >> 20,
            minor: self.device & 0xf_ffff,
        }
    }
}

/// Whether `bytes` starts with a blk_io_trace magic, in either byte order.
pub fn has_magic(bytes: &[u8]) -> bool {
    endianness(bytes).is_some()
}

/// True for little-endian, false for big-endian; None if there is no magic.
fn endianness(bytes: &[u8]) -> Option<bool> {
    let head: [u8; 4] = bytes.get(..4)?.try_into().ok()?;
    if u32::from_le_bytes(head) & 0xffff_ff00 == MAGIC {
        Some(true)
    } else if u32::from_be_bytes(head) & 0xffff_ff00 == MAGIC {
        Some(false)
    } else {
        None
    }
}

/// Decodes every record of one file.
pub fn records(bytes: &[u8], file: &str) -> Result<Vec<Record>, TraceError> {
    if bytes.is_empty() {
        return Ok(Vec::new());
    }
    let little = endianness(bytes).ok_or_else(|| {
        TraceError::at_byte(
            file,
            0,
            "no blktrace magic 0x65617400 in either byte order: not a blktrace file",
        )
    })?;
    // one reader for the three widths: the field's bytes, most significant first in the
    // file's own order
    let uint_at = |o: usize, width: usize| -> u64 {
        let field = &bytes[o..o + width];
        let push = |v: u64, b: &u8| (v << 8) | u64::from(*b);
        if little {
            field.iter().rev().fold(0, push)
        } else {
            field.iter().fold(0, push)
        }
    };
    let u16_at = |o: usize| uint_at(o, 2) as u16;
    let u32_at = |o: usize| uint_at(o, 4) as u32;
    let u64_at = |o: usize| uint_at(o, 8);
    let mut out = Vec::new();
    let mut o = 0usize;
    while o < bytes.len() {
        if bytes.len() - o < RECORD_BYTES {
            return Err(TraceError::at_byte(
                file,
                o as u64,
                format!(
                    "truncated record: {} bytes left, a record needs {RECORD_BYTES}",
                    bytes.len() - o
                ),
            ));
        }
        let magic = u32_at(o);
        if magic & 0xffff_ff00 != MAGIC {
            return Err(TraceError::at_byte(
                file,
                o as u64,
                format!("bad magic {magic:#010x} (expected 0x654174xx): corrupt or misaligned"),
            ));
        }
        let version = (magic & 0xff) as u8;
        if version != VERSION {
            return Err(TraceError::at_byte(
                file,
                o as u64,
                format!("blktrace version {version:#04x} is not supported (only {VERSION:#04x})"),
            ));
        }
        let pdu_len = u16_at(o + 46) as usize;
        let end = o + RECORD_BYTES + pdu_len;
        if end > bytes.len() {
            return Err(TraceError::at_byte(
                file,
                o as u64,
                format!(
                    "truncated payload: pdu_len {pdu_len} but only {} bytes follow the record",
                    bytes.len() - o - RECORD_BYTES
                ),
            ));
        }
        out.push(Record {
            offset: o as u64,
            sequence: u32_at(o + 4),
            time_ns: u64_at(o + 8),
            sector: u64_at(o + 16),
            bytes: u32_at(o + 24),
            action: u32_at(o + 28),
            pid: u32_at(o + 32),
            device: u32_at(o + 36),
            cpu: u32_at(o + 40),
            error: u16_at(o + 44),
            pdu: bytes[o + RECORD_BYTES..end].to_vec(),
        });
        o = end;
    }
    Ok(out)
}

/// The event a record stands for, if it matters to a trace.
fn event_of(r: &Record) -> Option<Event> {
    let category = r.action >> 16;
    let code = r.action & 0xffff;
    if category & TC_NOTIFY != 0 {
        if code & 0xff != TN_MESSAGE {
            return None;
        }
        // A cgroup-tagged message carries the 8-byte cgroup id before its text.
        let text = if code & TA_CGROUP != 0 {
            r.pdu.get(8..).unwrap_or(&[])
        } else {
            &r.pdu[..]
        };
        let text = String::from_utf8_lossy(text);
        let text = text.trim_end_matches('\0');
        return assemble::parse_tag_marker(text).map(|t| Event::Tag(t.to_string()));
    }
    let stage = match code & 0xff {
        TA_QUEUE => Stage::Queue,
        TA_ISSUE => Stage::Issue,
        TA_COMPLETE => Stage::Complete,
        _ => return None,
    };
    // Same decision as blkparse's fill_rwbs(): discard, else write, else read if it moves data.
    let data_op = if category & TC_DISCARD != 0 {
        Some(Op::Discard)
    } else if category & TC_WRITE != 0 {
        Some(Op::Write)
    } else if r.bytes > 0 {
        Some(Op::Read)
    } else {
        None
    };
    let mut flags = Flags::NONE;
    let op = match data_op {
        None if category & TC_FLUSH != 0 => Some(Op::Flush),
        other => {
            if category & TC_FLUSH != 0 {
                flags = flags | Flags::PREFLUSH;
            }
            if category & TC_FUA != 0 {
                flags = flags | Flags::FUA;
            }
            other
        }
    };
    if category & TC_SYNC != 0 {
        flags = flags | Flags::SYNC;
    }
    if category & TC_AHEAD != 0 {
        flags = flags | Flags::READAHEAD;
    }
    if category & TC_META != 0 {
        flags = flags | Flags::META;
    }
    Some(Event::Block(BlockEvent {
        dev: r.dev(),
        time_ns: r.time_ns,
        stage,
        op,
        flags,
        sector: r.sector,
        sectors: r.bytes.div_ceil(512),
    }))
}

/// Reads a trace from per-CPU files given as (name, bytes), merged by time.
pub fn read(files: &[(String, Vec<u8>)], opts: &ReadOptions) -> Result<Trace, TraceError> {
    let mut all = Vec::new();
    for (name, bytes) in files {
        for r in records(bytes, name)? {
            all.push(r);
        }
    }
    // Stable: records of one CPU keep their order at equal times.
    all.sort_by_key(|r| r.time_ns);
    let events: Vec<_> = all
        .iter()
        .filter_map(|r| event_of(r).map(|e| (Location::Byte(r.offset), e)))
        .collect();
    let name = files.first().map(|f| f.0.as_str()).unwrap_or("<none>");
    assemble::assemble(name, &events, opts, Origin::FirstRequest)
}

/// The CPU number of a per-CPU file name `NAME.blktrace.CPU`, if it is one.
pub fn cpu_suffix(name: &str) -> Option<u32> {
    let (stem, cpu) = name.rsplit_once('.')?;
    if !stem.ends_with(".blktrace") || cpu.is_empty() || !cpu.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    cpu.parse().ok()
}

/// `path` and, if it is `NAME.blktrace.CPU`, every other CPU's file beside it, read into
/// memory in CPU order.
pub fn sibling_files(path: &Path) -> Result<Vec<(String, Vec<u8>)>, TraceError> {
    let io = |p: &Path, source| TraceError::Io {
        file: p.display().to_string(),
        source,
    };
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let mut paths = vec![path.to_path_buf()];
    if cpu_suffix(name).is_some() {
        let stem = &name[..name.rfind('.').unwrap_or(0) + 1];
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => Path::new(".").to_path_buf(),
        };
        let mut found: Vec<(u32, std::path::PathBuf)> = Vec::new();
        for entry in std::fs::read_dir(&dir).map_err(|e| io(&dir, e))? {
            let entry = entry.map_err(|e| io(&dir, e))?;
            let n = entry.file_name();
            let Some(n) = n.to_str() else { continue };
            if n.starts_with(stem) {
                if let Some(cpu) = cpu_suffix(n) {
                    found.push((cpu, entry.path()));
                }
            }
        }
        found.sort();
        paths = found.into_iter().map(|(_, p)| p).collect();
    }
    paths
        .iter()
        .map(|p| {
            std::fs::read(p)
                .map(|b| (p.display().to_string(), b))
                .map_err(|e| io(p, e))
        })
        .collect()
}
