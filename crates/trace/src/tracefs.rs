//! Reader of tracefs text (`/sys/kernel/tracing/trace` or `trace_pipe`) holding the block
//! events `block_rq_issue`, `block_rq_complete` and `block_bio_queue`, as kernel 6.18 prints
//! them (print fmt of `events/block/*/format`):
//!
//! ```text
//!  dd-10455 [000] .....  477.293901: block_rq_issue: 7,0 WS 65536 () 0 + 128 be,0,4 [dd]
//!  ksoftirqd/0-14 [000] ..s..  477.293977: block_rq_complete: 7,0 WS () 0 + 128 be,0,4 [0]
//!  dd-10455 [000] .....  477.293777: block_bio_queue: 7,0 WS 0 + 128 [dd]
//!  bash-10401 [001] ...1.  477.285816: tracing_mark_write: layoutlab tag=write
//! ```
//!
//! Requests are the `block_rq_issue` events (or, when there are none, as on a bio-based device
//! such as zram, the `block_bio_queue` events). Completions pair with issues by (device,
//! sector, operation), first in first out. A `tracing_mark_write` line `layoutlab tag=NAME`
//! tags the requests that follow (write it into `trace_marker`). Times become ns relative to
//! the first request. Lost-event notices are errors: such a trace is incomplete.

use crate::assemble::{self, BlockEvent, Event, Origin, Stage};
use crate::error::{Location, TraceError};
use crate::format::{DevId, ReadOptions};
use crate::text::{parse_decimal_ns, parse_u32, parse_u64};
use crate::{rwbs, Trace};

/// Reads tracefs text. `file` names the input in errors.
pub fn read(text: &str, file: &str, opts: &ReadOptions) -> Result<Trace, TraceError> {
    let mut events = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line_no = i + 1;
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if trimmed.contains("[LOST") && trimmed.contains("EVENTS]") {
            return Err(TraceError::at_line(
                file,
                line_no,
                "the kernel dropped events (ring buffer overrun): capture again with a larger \
                 buffer_size_kb",
            ));
        }
        let parsed = parse_line(trimmed).map_err(|r| TraceError::at_line(file, line_no, r))?;
        if let Some(ev) = parsed {
            events.push((Location::Line(line_no), ev));
        }
    }
    assemble::assemble(file, &events, opts, Origin::FirstRequest)
}

/// Whether `line` has the shape of a tracefs event line (for format detection).
pub(crate) fn looks_like(line: &str) -> bool {
    split_event(line).is_some_and(|(_, name, _)| !name.is_empty() && !name.contains(' '))
}

/// Splits `TASK-PID [CPU] FLAGS SECONDS: EVENT: PAYLOAD` into (time ns, event, payload).
/// The task name may hold spaces or colons, so the timestamp is found as the first token that
/// ends in `: ` and reads as seconds with a fraction.
fn split_event(line: &str) -> Option<(u64, &str, &str)> {
    let mut from = 0;
    while let Some(pos) = line[from..].find(": ") {
        let at = from + pos;
        let before = &line[..at];
        let token = before.rsplit(char::is_whitespace).next().unwrap_or("");
        if token.contains('.') {
            if let Ok(ns) = parse_decimal_ns(token, 1_000_000_000) {
                let rest = &line[at + 2..];
                let (name, payload) = match rest.find(':') {
                    Some(p) => (&rest[..p], rest[p + 1..].trim_start()),
                    None => (rest, ""),
                };
                return Some((ns, name.trim(), payload));
            }
        }
        from = at + 2;
    }
    None
}

fn parse_line(line: &str) -> Result<Option<Event>, String> {
    let (time_ns, name, payload) = split_event(line).ok_or_else(|| {
        "not a tracefs event line (expected 'TASK-PID [CPU] FLAGS SECONDS: EVENT: ...')".to_string()
    })?;
    let stage = match name {
        "block_rq_issue" => Stage::Issue,
        "block_rq_complete" => Stage::Complete,
        "block_bio_queue" => Stage::Queue,
        "tracing_mark_write" | "print" => {
            return Ok(assemble::parse_tag_marker(payload).map(|t| Event::Tag(t.to_string())))
        }
        _ => return Ok(None),
    };
    let mut fields = payload.split_whitespace();
    let dev_text = fields.next().ok_or(format!("{name}: no device field"))?;
    let dev = DevId::parse(dev_text)
        .ok_or_else(|| format!("{name}: device '{dev_text}' is not MAJOR,MINOR"))?;
    let rwbs_text = fields.next().ok_or(format!("{name}: no rwbs field"))?;
    let (op, flags) = rwbs::parse(rwbs_text).map_err(|r| format!("{name}: {r}"))?;
    // What follows the rwbs: `BYTES (CMD) SECTOR + N ...` (issue), `(CMD) SECTOR + N ...`
    // (complete), `SECTOR + N [COMM]` (bio_queue). CMD may hold spaces: find the sector as
    // the text after the first ") " that reads as `SECTOR + N`.
    let after_rwbs = {
        let start = payload.find(rwbs_text).unwrap_or(0) + rwbs_text.len();
        &payload[start..]
    };
    let tail = if stage == Stage::Queue {
        after_rwbs.trim_start()
    } else {
        let mut found = None;
        let mut from = 0;
        while let Some(p) = after_rwbs[from..].find(')') {
            let cand = after_rwbs[from + p + 1..].trim_start();
            if sector_and_count(cand).is_ok() {
                found = Some(cand);
                break;
            }
            from += p + 1;
        }
        found.ok_or_else(|| {
            format!(
                "{name}: expected '(CMD) SECTOR + SECTORS' after rwbs, found '{}'",
                after_rwbs.trim()
            )
        })?
    };
    let (sector, sectors) = sector_and_count(tail).map_err(|r| format!("{name}: {r}"))?;
    Ok(Some(Event::Block(BlockEvent {
        dev,
        time_ns,
        stage,
        op,
        flags,
        sector,
        sectors,
    })))
}

/// Parses `SECTOR + COUNT ...`.
fn sector_and_count(s: &str) -> Result<(u64, u32), String> {
    let mut f = s.split_whitespace();
    let sector = parse_u64(f.next().unwrap_or(""), "sector")?;
    if f.next() != Some("+") {
        return Err(format!("expected 'SECTOR + SECTORS', found '{s}'"));
    }
    let sectors = parse_u32(f.next().unwrap_or(""), "sector count")?;
    Ok((sector, sectors))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Flags, Op};

    const SAMPLE: &str = "\
# tracer: nop
            bash-1   [001] ...1.   10.000000: tracing_mark_write: layoutlab tag=pass1
              dd-2   [000] .....   10.000100: block_bio_queue: 7,0 RA 40000 + 8 [dd]
              dd-2   [000] .....   10.000200: block_rq_issue: 7,0 RA 4096 () 40000 + 8 be,0,4 [dd]
 my task: x-3   [000] .....   10.000250: block_rq_issue: 8,0 R 4096 () 9 + 8 be,0,4 [my task: x]
     ksoftirqd/0-14 [000] ..s..   10.000300: block_rq_complete: 7,0 RA () 40000 + 8 be,0,4 [0]
";

    #[test]
    fn reads_issue_complete_tag_with_filter() {
        let opts = ReadOptions {
            dev: Some(DevId { major: 7, minor: 0 }),
            devno: None,
        };
        let t = read(SAMPLE, "s", &opts).unwrap();
        assert_eq!(t.requests.len(), 1);
        let r = t.requests[0];
        assert_eq!((r.issue_ns, r.complete_ns), (0, Some(100_000)));
        assert_eq!(
            (r.op, r.sector, r.sectors, r.flags),
            (Op::Read, 40000, 8, Flags::READAHEAD)
        );
        assert_eq!(t.tag_name(r.tag), "pass1");
    }

    #[test]
    fn several_devices_without_filter_is_an_error() {
        let e = read(SAMPLE, "s", &ReadOptions::default()).unwrap_err();
        assert_eq!(e.line(), Some(5));
        assert!(e.reason().contains("one device"), "{e}");
    }

    #[test]
    fn lost_events_is_an_error() {
        let e = read("CPU:1 [LOST 23 EVENTS]\n", "s", &ReadOptions::default()).unwrap_err();
        assert_eq!(e.line(), Some(1));
        assert!(e.reason().contains("dropped"));
    }
}
