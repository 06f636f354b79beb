//! Stand-in reader of the tracefs text the rig captures (block_rq_issue/complete and
//! `layoutlab tag=NAME` markers) until the trace crate's tracefs reader lands; then this file
//! goes and [`crate::TracefsSession::stop`] calls that reader instead.
//!
//! Line form (kernel 6.x, `trace_pipe`):
//! `  e2fsck-1234 [001] ..... 479.040763: block_rq_issue: 7,0 R 4096 () 0 + 8 none,0,4 [e2fsck]`
//! `  <idle>-0    [000] ..s1. 479.040801: block_rq_complete: 7,0 R () 0 + 8 none,0,4 [0]`
//! `  e2fsck-1234 [000] ..... 479.041000: tracing_mark_write: layoutlab tag=pass1`
//! Timestamps are seconds with microsecond digits (the text output's resolution).
//!
//! Markers of the form `PASS CUR MAX DEVICE` are e2fsck's progress lines (`-C FD` with FD the
//! instance's `trace_marker`): the first line of a new pass number tags what follows
//! `passN`, exactly where e2fsck entered the pass.

use crate::error::{Result, RigError};
use layoutlab_trace::{Flags, Op, Request, Trace};
use std::collections::{HashMap, VecDeque};
use std::io::BufRead;

/// The prefix of a marker written by [`crate::Marker::mark`].
pub(crate) const MARK_PREFIX: &str = "layoutlab tag=";

/// What one capture's text holds besides requests.
#[derive(Debug, Default)]
pub(crate) struct Parsed {
    pub trace: Trace,
    /// Markers in order: (ns since origin, tag).
    pub marks: Vec<(u64, String)>,
    /// Issues that never completed inside the capture.
    pub incomplete: usize,
}

fn parse_ts_ns(token: &str) -> Option<u64> {
    let (secs, frac) = token.split_once('.')?;
    let secs: u64 = secs.parse().ok()?;
    if frac.is_empty() || frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let frac_ns: u64 = frac.parse::<u64>().ok()? * 10u64.pow(9 - frac.len() as u32);
    Some(secs * 1_000_000_000 + frac_ns)
}

fn parse_rwbs(s: &str) -> Option<(Op, Flags)> {
    let b = s.as_bytes();
    let is_op = |c: u8| matches!(c, b'W' | b'D' | b'F' | b'R' | b'N');
    let mut i = 0;
    let mut flags = Flags::NONE;
    if b.len() > 1 && b[0] == b'F' && is_op(b[1]) {
        flags = flags | Flags::PREFLUSH;
        i = 1;
    }
    let op = match *b.get(i)? {
        b'W' => Op::Write,
        b'R' => Op::Read,
        b'D' => Op::Discard,
        b'F' | b'N' => Op::Flush,
        _ => return None,
    };
    for &c in &b[i + 1..] {
        flags = flags
            | match c {
                b'F' => Flags::FUA,
                b'A' => Flags::READAHEAD,
                b'S' => Flags::SYNC,
                b'M' => Flags::META,
                _ => Flags::NONE,
            };
    }
    Some((op, flags))
}

/// The pass of an e2fsck progress line `PASS CUR MAX DEVICE`.
pub(crate) fn parse_progress(line: &str) -> Option<u32> {
    let mut fields = line.split_whitespace();
    let pass = fields.next()?.parse().ok()?;
    fields.next()?.parse::<u64>().ok()?;
    fields.next()?.parse::<u64>().ok()?;
    fields.next()?;
    Some(pass)
}

/// (dev, rwbs, sector, sectors) of an issue/complete payload.
fn parse_payload(payload: &str) -> Option<((u32, u32), &str, u64, u32)> {
    let mut tokens = payload.split_whitespace();
    let (major, minor) = tokens.next()?.split_once(',')?;
    let dev = (major.parse().ok()?, minor.parse().ok()?);
    let rwbs = tokens.next()?;
    let all: Vec<&str> = payload.split_whitespace().collect();
    let plus = all.iter().position(|t| *t == "+")?;
    let sector = all.get(plus.checked_sub(1)?)?.parse().ok()?;
    let sectors = all.get(plus + 1)?.parse().ok()?;
    Some((dev, rwbs, sector, sectors))
}

/// Reads tracefs text for device `dev`; times become ns since `origin_ns` (same clock), or
/// since the first event when `origin_ns` is later than it.
pub(crate) fn parse(
    reader: impl BufRead,
    source_name: &str,
    dev: (u32, u32),
    origin_ns: u64,
) -> Result<Parsed> {
    let mut parsed = Parsed::default();
    let mut current_tag = 0u16;
    let mut pending: HashMap<(u64, u32), VecDeque<usize>> = HashMap::new();
    let mut origin = None;
    let mut last_progress_pass = None;
    for (index, line) in reader.lines().enumerate() {
        let line_no = index + 1;
        let line = line.map_err(|e| RigError::io(format!("read {source_name}"), e))?;
        let bad = |reason: &str| RigError::Parse {
            source_name: source_name.to_string(),
            line: line_no,
            reason: format!("{reason}: {line:?}"),
        };
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let event = ["block_rq_issue", "block_rq_complete", "tracing_mark_write"]
            .into_iter()
            .find_map(|name| line.find(&format!(": {name}: ")).map(|at| (name, at)));
        let Some((name, at)) = event else { continue };
        let ts_token = line[..at]
            .split_whitespace()
            .last()
            .ok_or_else(|| bad("no timestamp"))?;
        let ts_ns = parse_ts_ns(ts_token).ok_or_else(|| bad("bad timestamp"))?;
        let origin_ns = *origin.get_or_insert(origin_ns.min(ts_ns));
        let rel_ns = ts_ns.saturating_sub(origin_ns);
        let payload = &line[at + name.len() + 4..];
        match name {
            "tracing_mark_write" => {
                let payload = payload.trim();
                let tag = match payload.strip_prefix(MARK_PREFIX) {
                    Some(tag) => Some(tag.to_string()),
                    None => parse_progress(payload)
                        .filter(|pass| last_progress_pass != Some(*pass))
                        .map(|pass| {
                            last_progress_pass = Some(pass);
                            format!("pass{pass}")
                        }),
                };
                if let Some(tag) = tag {
                    current_tag = parsed.trace.tag(&tag);
                    parsed.marks.push((rel_ns, tag));
                }
            }
            _ => {
                let (line_dev, rwbs, sector, sectors) =
                    parse_payload(payload).ok_or_else(|| bad("bad block event payload"))?;
                if line_dev != dev {
                    continue;
                }
                let (op, flags) = parse_rwbs(rwbs).ok_or_else(|| bad("bad rwbs field"))?;
                if name == "block_rq_issue" {
                    pending
                        .entry((sector, sectors))
                        .or_default()
                        .push_back(parsed.trace.requests.len());
                    parsed.trace.requests.push(Request {
                        issue_ns: rel_ns,
                        complete_ns: None,
                        op,
                        sector,
                        sectors,
                        flags,
                        tag: current_tag,
                    });
                } else if let Some(i) = pending
                    .get_mut(&(sector, sectors))
                    .and_then(|q| q.pop_front())
                {
                    parsed.trace.requests[i].complete_ns = Some(rel_ns);
                }
            }
        }
    }
    parsed.incomplete = pending.values().map(VecDeque::len).sum();
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
# tracer: nop
          e2fsck-900     [001] .....   100.000010: tracing_mark_write: layoutlab tag=pass1
          e2fsck-900     [001] .....   100.000020: block_rq_issue: 7,0 RA 4096 () 2048 + 8 none,0,4 [e2fsck]
          e2fsck-900     [001] .....   100.000025: block_rq_issue: 7,1 R 4096 () 2048 + 8 none,0,4 [e2fsck]
          <idle>-0       [000] ..s1.   100.000120: block_rq_complete: 7,0 RA () 2048 + 8 none,0,4 [0]
          e2fsck-900     [001] .....   100.000200: tracing_mark_write: 2 0 5 /dev/loop0
          e2fsck-900     [001] .....   100.000250: tracing_mark_write: 2 1 5 /dev/loop0
          e2fsck-900     [001] .....   100.000300: block_rq_issue: 7,0 FWS 0 () 0 + 0 none,0,4 [e2fsck]
";

    #[test]
    fn parses_requests_tags_and_completions_of_one_device() {
        let p = parse(SAMPLE.as_bytes(), "sample", (7, 0), 100_000_000_000).unwrap();
        let t = &p.trace;
        assert_eq!(t.requests.len(), 2);
        let r = t.requests[0];
        assert_eq!((r.issue_ns, r.complete_ns), (20_000, Some(120_000)));
        assert_eq!((r.op, r.sector, r.sectors), (Op::Read, 2048, 8));
        assert!(r.flags.contains(Flags::READAHEAD));
        assert_eq!(t.tag_name(r.tag), "pass1");
        let w = t.requests[1];
        assert_eq!(w.op, Op::Write);
        assert!(w.flags.contains(Flags::PREFLUSH | Flags::SYNC));
        assert_eq!(t.tag_name(w.tag), "pass2");
        assert_eq!(p.incomplete, 1);
        assert_eq!(
            p.marks,
            vec![
                (10_000, "pass1".to_string()),
                (200_000, "pass2".to_string())
            ]
        );
    }

    #[test]
    fn progress_lines_parse() {
        assert_eq!(parse_progress("1 0 32 /dev/loop0"), Some(1));
        assert_eq!(parse_progress("5 65 65 /dev/loop0"), Some(5));
        assert_eq!(parse_progress("1 0 32"), None);
        assert_eq!(parse_progress("garbage"), None);
    }

    #[test]
    fn malformed_line_names_its_line() {
        let text = "x-1 [000] ..... 1.5: block_rq_issue: garbage\n";
        let err = parse(text.as_bytes(), "t.txt", (7, 0), 0)
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("t.txt:1:"), "{err}");
    }
}
