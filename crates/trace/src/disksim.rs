//! DiskSim's text traces (DiskSim 4.0, `disksim_iotrace.c`).
//!
//! **ascii** (`-` trace format `ascii`): one request a line, `TIME_MS DEVNO BLKNO BCOUNT FLAGS`,
//! read by DiskSim as `"%lf %d %ld %d %x"`: arrival time in ms, device number, first 512-byte
//! block, count of blocks, flags in hex (`0x1` READ, `0x2` TIME_CRITICAL, `0x4` TIME_LIMITED,
//! `0x80` SYNCHRONOUS, `0x100` ASYNCHRONOUS; no bit 0 means write). Reading: SYNC comes from
//! TIME_CRITICAL or SYNCHRONOUS, READAHEAD from TIME_LIMITED or ASYNCHRONOUS on a read.
//! Writing: READ, SYNC as `0x2|0x80`, READAHEAD as `0x4|0x100`; times exact to the ns. DiskSim
//! has no flush or discard, so a trace holding one cannot be written (error).
//!
//! **validate**: one measured request a line, `R|W BUFFACTION BLKNO BCOUNT SERVICE_US
//! INTERARRIVAL_US` (`"%c %s %ld %d %lf %lf"`), where BUFFACTION is the drive-cache outcome as
//! measured (`Hit`, `Miss`, and in the HP C2247 trace `Doub`, `Trip`), SERVICE_US the measured
//! response time and INTERARRIVAL_US the idle time before the next request. DiskSim replays it
//! closed-loop: the next request arrives when this one completes plus the interarrival time.
//! [`read_validate`] keeps every field ([`ValidateRecord`]); [`validate_to_trace`] builds the
//! measured timeline that rule implies.

use crate::error::{Location, TraceError};
use crate::read_options::ReadOptions;
use crate::text::{format_ns, parse_decimal_ns, parse_u32, parse_u64};
use crate::{Flags, Op, Request, Trace};

const READ: u32 = 0x1;
const TIME_CRITICAL: u32 = 0x2;
const TIME_LIMITED: u32 = 0x4;
const SYNCHRONOUS: u32 = 0x80;
const ASYNCHRONOUS: u32 = 0x100;

/// The data lines of a one-record-a-line text (blank lines and `#` comments skipped) with their
/// line numbers, split into whitespace fields; a line without exactly `n` fields is an error
/// naming the expected `layout`.
fn records<'a>(
    text: &'a str,
    file: &'a str,
    n: usize,
    layout: &'a str,
) -> impl Iterator<Item = Result<(usize, Vec<&'a str>), TraceError>> + 'a {
    text.lines().enumerate().filter_map(move |(i, line)| {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            return None;
        }
        let f: Vec<&str> = trimmed.split_whitespace().collect();
        Some(if f.len() == n {
            Ok((i + 1, f))
        } else {
            Err(TraceError::at_line(
                file,
                i + 1,
                format!("expected {n} fields '{layout}', found {}", f.len()),
            ))
        })
    })
}

/// Reads a DiskSim ascii trace. `opts.devno` selects one device; without it, a trace with
/// several devnos is an error.
pub fn read_ascii(text: &str, file: &str, opts: &ReadOptions) -> Result<Trace, TraceError> {
    let mut trace = Trace::default();
    let mut first_devno: Option<(u32, usize)> = None;
    for record in records(text, file, 5, "TIME_MS DEVNO BLKNO BCOUNT FLAGS") {
        let (line_no, f) = record?;
        let err = |r: String| TraceError::at_line(file, line_no, r);
        let issue_ns = parse_decimal_ns(f[0], 1_000_000).map_err(|r| err(format!("time: {r}")))?;
        let devno = parse_u32(f[1], "devno").map_err(err)?;
        let sector = parse_u64(f[2], "blkno").map_err(err)?;
        let sectors = parse_u32(f[3], "bcount").map_err(err)?;
        let hex = f[4].trim_start_matches("0x").trim_start_matches("0X");
        let bits = u32::from_str_radix(hex, 16)
            .map_err(|_| err(format!("flags '{}' is not a hexadecimal number", f[4])))?;
        if let Some(want) = opts.devno {
            if devno != want {
                continue;
            }
        }
        match first_devno {
            None => first_devno = Some((devno, line_no)),
            Some((d, l)) if d != devno => {
                return Err(err(format!(
                    "devno {devno} after devno {d} (line {l}): a trace holds one device; choose \
                     one with the devno filter"
                )))
            }
            _ => {}
        }
        let op = if bits & READ != 0 {
            Op::Read
        } else {
            Op::Write
        };
        let mut flags = Flags::NONE;
        if bits & (TIME_CRITICAL | SYNCHRONOUS) != 0 {
            flags = flags | Flags::SYNC;
        }
        if op == Op::Read && bits & (TIME_LIMITED | ASYNCHRONOUS) != 0 {
            flags = flags | Flags::READAHEAD;
        }
        trace.requests.push(Request {
            issue_ns,
            complete_ns: None,
            op,
            sector,
            sectors,
            flags,
            tag: 0,
            cpu: None,
        });
    }
    Ok(trace)
}

/// Writes `trace` as a DiskSim ascii trace on devno 0. Flush and discard requests cannot be
/// written (DiskSim has neither); META, FUA, PREFLUSH, completions and tags are not kept.
pub fn write_ascii(trace: &Trace) -> Result<String, TraceError> {
    let mut out = String::with_capacity(trace.requests.len() * 40);
    for (i, r) in trace.requests.iter().enumerate() {
        let mut bits = match r.op {
            Op::Read => READ,
            Op::Write => 0,
            Op::Flush | Op::Discard => {
                return Err(TraceError::malformed(
                    "<disksim writer>",
                    Location::Request(i),
                    format!(
                        "{:?} cannot be written: DiskSim traces hold only reads and writes \
                         (filter them out first)",
                        r.op
                    ),
                ))
            }
        };
        if r.flags.contains(Flags::SYNC) {
            bits |= TIME_CRITICAL | SYNCHRONOUS;
        }
        if r.op == Op::Read && r.flags.contains(Flags::READAHEAD) {
            bits |= TIME_LIMITED | ASYNCHRONOUS;
        }
        out.push_str(&format!(
            "{} 0 {} {} {:x}\n",
            format_ns(r.issue_ns, 1_000_000),
            r.sector,
            r.sectors,
            bits
        ));
    }
    Ok(out)
}

/// The (op, flags) a request keeps through a DiskSim ascii round trip.
pub fn ascii_canonical(op: Op, flags: Flags) -> Flags {
    let mut kept = Flags(flags.0 & Flags::SYNC.0);
    if op == Op::Read && flags.contains(Flags::READAHEAD) {
        kept = kept | Flags::READAHEAD;
    }
    kept
}

/// One line of a DiskSim validate trace, every field kept.
#[derive(Clone, Debug, PartialEq)]
pub struct ValidateRecord {
    /// 1-based line in the file.
    pub line: usize,
    /// Read or write.
    pub op: Op,
    /// The drive-cache outcome as measured (`Hit`, `Miss`, `Doub`, `Trip`, ...), verbatim.
    pub buffer_action: String,
    /// First 512-byte block.
    pub sector: u64,
    /// Length in 512-byte blocks.
    pub sectors: u32,
    /// Measured response (service) time, µs.
    pub service_us: f64,
    /// Measured idle time between this request's completion and the next request's arrival, µs.
    pub interarrival_us: f64,
}

impl ValidateRecord {
    /// Whether the measurement recorded a cache hit.
    pub fn is_hit(&self) -> bool {
        self.buffer_action.eq_ignore_ascii_case("hit")
    }

    /// Measured service time in ns (rounded).
    pub fn service_ns(&self) -> u64 {
        (self.service_us * 1000.0).round() as u64
    }

    /// Measured interarrival time in ns (rounded).
    pub fn interarrival_ns(&self) -> u64 {
        (self.interarrival_us * 1000.0).round() as u64
    }
}

/// Reads a DiskSim validate trace into its records.
pub fn read_validate(text: &str, file: &str) -> Result<Vec<ValidateRecord>, TraceError> {
    let mut out = Vec::new();
    let layout = "R|W BUFFACTION BLKNO BCOUNT SERVICE_US INTERARRIVAL_US";
    for record in records(text, file, 6, layout) {
        let (line_no, f) = record?;
        let err = |r: String| TraceError::at_line(file, line_no, r);
        let op = match f[0] {
            "R" => Op::Read,
            "W" => Op::Write,
            other => return Err(err(format!("operation '{other}' is neither R nor W"))),
        };
        let time = |s: &str, what: &str| -> Result<f64, TraceError> {
            match s.parse::<f64>() {
                Ok(v) if (0.0..1e15).contains(&v) => Ok(v),
                _ => Err(err(format!(
                    "{what} '{s}' is not a non-negative number of µs"
                ))),
            }
        };
        crate::text::check_tag_name(f[1]).map_err(|r| err(format!("buffer action: {r}")))?;
        out.push(ValidateRecord {
            line: line_no,
            op,
            buffer_action: f[1].to_string(),
            sector: parse_u64(f[2], "blkno").map_err(err)?,
            sectors: parse_u32(f[3], "bcount").map_err(err)?,
            service_us: time(f[4], "service time")?,
            interarrival_us: time(f[5], "interarrival time")?,
        });
    }
    Ok(out)
}

/// The measured timeline of a validate trace as a [`Trace`]: request i+1 arrives when request
/// i completes plus i's interarrival time (DiskSim's validate rule); each completes after its
/// measured service time. Tags carry the buffer action (`Hit`, `Miss`, ...).
pub fn validate_to_trace(records: &[ValidateRecord]) -> Trace {
    let mut trace = Trace::default();
    let mut arrival_ns = 0u64;
    for rec in records {
        // Buffer actions are a handful of words; past 65536 distinct ones, leave untagged.
        let tag = trace.try_tag(&rec.buffer_action).unwrap_or(0);
        let complete_ns = arrival_ns.saturating_add(rec.service_ns());
        trace.requests.push(Request {
            issue_ns: arrival_ns,
            complete_ns: Some(complete_ns),
            op: rec.op,
            sector: rec.sector,
            sectors: rec.sectors,
            flags: Flags::NONE,
            tag,
            cpu: None,
        });
        arrival_ns = complete_ns.saturating_add(rec.interarrival_ns());
    }
    trace
}

/// Whether `line` looks like a validate record (for format detection).
pub(crate) fn looks_like_validate(line: &str) -> bool {
    let f: Vec<&str> = line.split_whitespace().collect();
    f.len() == 6
        && matches!(f[0], "R" | "W")
        && f[2].parse::<u64>().is_ok()
        && f[3].parse::<u32>().is_ok()
        && f[4].parse::<f64>().is_ok()
}

/// Whether `line` looks like an ascii record (for format detection).
pub(crate) fn looks_like_ascii(line: &str) -> bool {
    let f: Vec<&str> = line.split_whitespace().collect();
    f.len() == 5
        && parse_decimal_ns(f[0], 1_000_000).is_ok()
        && f[1].parse::<u32>().is_ok()
        && f[2].parse::<u64>().is_ok()
        && f[3].parse::<u32>().is_ok()
}
