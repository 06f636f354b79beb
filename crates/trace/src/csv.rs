//! CSV, one row per request, lossless:
//!
//! ```text
//! issue_ns,complete_ns,op,sector,sectors,flags,tag
//! 0,8000000,read,2048,8,sync|meta,pass1
//! 9000000,,flush,0,0,,
//! ```
//!
//! A trace captured with CPU accounting (see [`crate::cpu`]) has two more columns,
//! `cpu_issue_ns,cpu_complete_ns`: the issuing program's CPU time used at the request's issue
//! and completion. They are written only when every request carries them, so a trace without
//! them is written exactly as before; both headers are read.
//!
//! A trace that knows the queue it was captured through ([`crate::DeviceQueue`]) starts with
//! one `#queue key=value ...` line before the header.
//!
//! `complete_ns` is empty when unknown; `op` is read, write, flush or discard; `flags` joins
//! sync, meta, readahead, fua, preflush (and `bitN` for other bits) with `|`; `tag` is the tag
//! name, quoted as RFC 4180 says when it holds a comma or a quote. Tag names may not hold
//! control characters (line breaks included).

use crate::cpu::CpuStamps;
use crate::error::{Location, TraceError};
use crate::text::{parse_u32, parse_u64};
use crate::{Flags, Op, Request, Trace};

/// The header line.
pub const HEADER: &str = "issue_ns,complete_ns,op,sector,sectors,flags,tag";
/// The header of a trace with CPU stamps.
pub const HEADER_CPU: &str =
    "issue_ns,complete_ns,op,sector,sectors,flags,tag,cpu_issue_ns,cpu_complete_ns";
/// How the header starts (for detection).
pub(crate) const HEADER_START: &str = "issue_ns,";

const FLAG_NAMES: [(Flags, &str); 5] = [
    (Flags::SYNC, "sync"),
    (Flags::META, "meta"),
    (Flags::READAHEAD, "readahead"),
    (Flags::FUA, "fua"),
    (Flags::PREFLUSH, "preflush"),
];

fn op_name(op: Op) -> &'static str {
    match op {
        Op::Read => "read",
        Op::Write => "write",
        Op::Flush => "flush",
        Op::Discard => "discard",
    }
}

fn flags_text(flags: Flags) -> String {
    let mut parts: Vec<String> = Vec::new();
    for bit in 0..8 {
        let f = Flags(1 << bit);
        if flags.contains(f) {
            match FLAG_NAMES.iter().find(|(g, _)| *g == f) {
                Some((_, name)) => parts.push((*name).to_string()),
                None => parts.push(format!("bit{bit}")),
            }
        }
    }
    parts.join("|")
}

fn parse_flags(s: &str) -> Result<Flags, String> {
    let mut flags = Flags::NONE;
    for part in s.split('|').map(str::trim).filter(|p| !p.is_empty()) {
        if let Some((f, _)) = FLAG_NAMES.iter().find(|(_, n)| *n == part) {
            flags = flags | *f;
        } else if let Some(bit) = part.strip_prefix("bit").and_then(|b| b.parse::<u8>().ok()) {
            if bit > 7 {
                return Err(format!("flag '{part}': bits go from 0 to 7"));
            }
            flags = flags | Flags(1 << bit);
        } else {
            return Err(format!(
                "unknown flag '{part}' (expected sync, meta, readahead, fua, preflush or bitN)"
            ));
        }
    }
    Ok(flags)
}

fn quote(s: &str) -> String {
    if s.contains([',', '"']) || s.starts_with(' ') || s.ends_with(' ') {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Splits one CSV line into fields (RFC 4180 quoting, no line breaks inside fields).
fn split_fields(line: &str) -> Result<Vec<String>, String> {
    let mut fields = Vec::new();
    let mut cur = String::new();
    let mut chars = line.chars().peekable();
    let mut at_start = true;
    let mut quoted = false;
    while let Some(c) = chars.next() {
        if quoted {
            if c == '"' {
                if chars.peek() == Some(&'"') {
                    chars.next();
                    cur.push('"');
                } else {
                    quoted = false;
                    match chars.peek() {
                        None | Some(',') => {}
                        Some(other) => {
                            return Err(format!("unexpected '{other}' after a closing quote"))
                        }
                    }
                }
            } else {
                cur.push(c);
            }
        } else if c == ',' {
            fields.push(std::mem::take(&mut cur));
            at_start = true;
            continue;
        } else if c == '"' && at_start {
            quoted = true;
        } else {
            cur.push(c);
        }
        at_start = false;
    }
    if quoted {
        return Err("unterminated quote".into());
    }
    fields.push(cur);
    Ok(fields)
}

/// Reads CSV written by [`write`] (or by hand in the same columns).
pub fn read(text: &str, file: &str) -> Result<Trace, TraceError> {
    let mut trace = Trace::default();
    let mut seen_header = false;
    let mut with_cpu = false;
    for (i, line) in text.lines().enumerate() {
        let line_no = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let err = |r: String| TraceError::at_line(file, line_no, r);
        if !seen_header {
            if let Some(words) = line.trim().strip_prefix(crate::queue::CSV_PREFIX) {
                if trace.queue.is_some() {
                    return Err(err("a second #queue line".into()));
                }
                trace.queue = Some(crate::DeviceQueue::from_words(words).map_err(err)?);
                continue;
            }
            with_cpu = match line.trim() {
                HEADER => false,
                HEADER_CPU => true,
                _ => {
                    return Err(err(format!(
                        "expected the header '{HEADER}' (or, with CPU stamps, '{HEADER_CPU}')"
                    )))
                }
            };
            seen_header = true;
            continue;
        }
        let f = split_fields(line).map_err(err)?;
        let columns = if with_cpu { 9 } else { 7 };
        if f.len() != columns {
            return Err(err(format!("expected {columns} fields, found {}", f.len())));
        }
        let cpu = if with_cpu {
            let at_issue_ns = parse_u64(f[7].trim(), "cpu_issue_ns").map_err(err)?;
            let at_complete_ns = parse_u64(f[8].trim(), "cpu_complete_ns").map_err(err)?;
            if at_complete_ns < at_issue_ns {
                return Err(err(format!(
                    "cpu_complete_ns {at_complete_ns} is before cpu_issue_ns {at_issue_ns}"
                )));
            }
            Some(CpuStamps {
                at_issue_ns,
                at_complete_ns,
            })
        } else {
            None
        };
        let issue_ns = parse_u64(f[0].trim(), "issue_ns").map_err(err)?;
        let complete_ns = match f[1].trim() {
            "" => None,
            s => Some(parse_u64(s, "complete_ns").map_err(err)?),
        };
        let op = match f[2].trim() {
            "read" => Op::Read,
            "write" => Op::Write,
            "flush" => Op::Flush,
            "discard" => Op::Discard,
            other => {
                return Err(err(format!(
                    "op '{other}' is not read, write, flush or discard"
                )))
            }
        };
        let sector = parse_u64(f[3].trim(), "sector").map_err(err)?;
        let sectors = parse_u32(f[4].trim(), "sectors").map_err(err)?;
        let flags = parse_flags(&f[5]).map_err(err)?;
        crate::text::check_tag_name(&f[6]).map_err(err)?;
        let tag = trace
            .try_tag(&f[6])
            .ok_or_else(|| err("more than 65536 distinct tags".into()))?;
        trace.requests.push(Request {
            issue_ns,
            complete_ns,
            op,
            sector,
            sectors,
            flags,
            tag,
            cpu,
        });
    }
    if !seen_header {
        return Err(TraceError::malformed(
            file,
            Location::File,
            format!("empty: no header '{HEADER}'"),
        ));
    }
    Ok(trace)
}

/// Writes `trace` as CSV (header and one row per request).
pub fn write(trace: &Trace) -> Result<String, TraceError> {
    let mut out = String::with_capacity(trace.requests.len() * 48 + HEADER.len() + 1);
    let with_cpu = trace.has_cpu();
    if let Some(q) = &trace.queue {
        out.push_str(crate::queue::CSV_PREFIX);
        out.push_str(&q.to_words());
        out.push('\n');
    }
    out.push_str(if with_cpu { HEADER_CPU } else { HEADER });
    out.push('\n');
    for (i, r) in trace.requests.iter().enumerate() {
        let tag = trace.tag_name(r.tag);
        crate::text::check_tag_name(tag)
            .map_err(|r| TraceError::malformed("<csv writer>", Location::Request(i), r))?;
        let complete = r.complete_ns.map(|c| c.to_string()).unwrap_or_default();
        out.push_str(&format!(
            "{},{},{},{},{},{},{}",
            r.issue_ns,
            complete,
            op_name(r.op),
            r.sector,
            r.sectors,
            flags_text(r.flags),
            quote(tag)
        ));
        if let (true, Some(c)) = (with_cpu, r.cpu) {
            out.push_str(&format!(",{},{}", c.at_issue_ns, c.at_complete_ns));
        }
        out.push('\n');
    }
    Ok(out)
}

#[cfg(test)]
mod queue_tests {
    use super::*;
    use crate::DeviceQueue;

    /// The queue a capture came through survives CSV, is detected as CSV, and a bad or
    /// doubled `#queue` line is an error at its line, not a trace without a queue.
    #[test]
    fn the_queue_line_round_trips_and_bad_ones_are_refused() {
        let mut t = Trace::default();
        let tag = t.tag("pass1");
        t.requests.push(Request {
            issue_ns: 0,
            complete_ns: Some(10),
            op: Op::Read,
            sector: 8,
            sectors: 8,
            flags: Flags::SYNC,
            tag,
            cpu: None,
        });
        t.queue = Some(DeviceQueue {
            rotational: true,
            read_ahead_kb: 128,
            max_sectors_kb: 512,
            scheduler: "none".into(),
            logical_block_bytes: 512,
            physical_block_bytes: 512,
        });
        let text = write(&t).unwrap();
        assert!(text.starts_with("#queue rotational=1 "), "{text}");
        assert_eq!(read(&text, "t.csv").unwrap(), t);
        assert_eq!(
            crate::format::detect(text.as_bytes()),
            Some(crate::Format::Csv)
        );
        let doubled = format!("{}{text}", text.lines().next().unwrap().to_owned() + "\n");
        let e = read(&doubled, "t.csv").unwrap_err().to_string();
        assert!(e.contains("second #queue") && e.contains("line 2"), "{e}");
        let bad = text.replace("rotational=1", "rotational=yes");
        let e = read(&bad, "t.csv").unwrap_err().to_string();
        assert!(e.contains("not 0 or 1"), "{e}");
    }
}
