//! Reader and writer of blkparse's default text output:
//!
//! ```text
//!   7,0    1        0     0.015775452 11122  D  RS 24 + 8 [dd]
//!   7,0    0        0     0.015844834    14  C  RS 24 + 8 [0]
//!   7,0    1        0     0.002569127    44  D  FN [kworker/1:1H]
//!   7,0    0        0     0.000000000     0  m   N layoutlab tag=pass1
//! ```
//!
//! Fields: device, CPU, sequence, seconds (ns precision, relative to the trace's first event),
//! pid, action, rwbs, then `SECTOR + SECTORS [COMM]` (or `[ERROR]` on completions). Requests
//! are the `D` (issue) lines, or the `Q` lines when there is no `D`; `C` lines complete them,
//! paired by (device, sector, operation). Message lines (`m N TEXT`) of the form
//! `layoutlab tag=NAME` tag what follows. The per-CPU summary blkparse prints at the end
//! (from the first `CPUn (` line) is skipped. Times are kept as printed.
//!
//! The writer prints a `D` line per request and a `C` line per completed one, in time order
//! (device `0,0`, CPU 0, pid 0, comm `layoutlab`), and a message line at each change of tag.

use crate::assemble::{self, BlockEvent, Event, Origin, Stage};
use crate::error::{Location, TraceError};
use crate::read_options::{DevId, ReadOptions};
use crate::text::{format_ns, parse_decimal_ns, parse_u32, parse_u64};
use crate::{rwbs, Op, Trace};

/// Reads blkparse text. `file` names the input in errors.
pub fn read(text: &str, file: &str, opts: &ReadOptions) -> Result<Trace, TraceError> {
    let mut events = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line_no = i + 1;
        let trimmed = line.trim();
        if trimmed.is_empty() {
            continue;
        }
        if is_summary_start(trimmed) {
            break;
        }
        let parsed = parse_line(trimmed).map_err(|r| TraceError::at_line(file, line_no, r))?;
        if let Some(ev) = parsed {
            events.push((Location::Line(line_no), ev));
        }
    }
    assemble::assemble(file, &events, opts, Origin::Keep)
}

fn is_summary_start(line: &str) -> bool {
    line.strip_prefix("CPU")
        .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()) && rest.contains(" ("))
}

/// Whether `line` has the shape of a blkparse event line (for format detection).
pub(crate) fn looks_like(line: &str) -> bool {
    let f: Vec<&str> = line.split_whitespace().take(7).collect();
    f.len() == 7
        && DevId::parse(f[0]).is_some()
        && f[1].parse::<u32>().is_ok()
        && f[2].parse::<u64>().is_ok()
        && f[3].contains('.')
        && parse_decimal_ns(f[3], 1_000_000_000).is_ok()
        && f[4].parse::<u32>().is_ok()
}

fn parse_line(line: &str) -> Result<Option<Event>, String> {
    let mut it = line.split_whitespace();
    let mut next = |what: &str| {
        it.next()
            .ok_or_else(|| format!("line ends before the {what} field (expected 'DEV CPU SEQ SECONDS PID ACTION RWBS ...')"))
    };
    let dev_text = next("device")?;
    let dev =
        DevId::parse(dev_text).ok_or_else(|| format!("device '{dev_text}' is not MAJOR,MINOR"))?;
    parse_u32(next("cpu")?, "cpu")?;
    parse_u64(next("sequence")?, "sequence")?;
    let time_ns =
        parse_decimal_ns(next("time")?, 1_000_000_000).map_err(|r| format!("time: {r}"))?;
    parse_u32(next("pid")?, "pid")?;
    let action = next("action")?;
    let rwbs_text = next("rwbs")?;
    let rest: Vec<&str> = it.collect();
    if action == "m" {
        let message = rest.join(" ");
        return Ok(assemble::parse_tag_marker(&message).map(|t| Event::Tag(t.to_string())));
    }
    let stage = match action {
        "Q" => Stage::Queue,
        "D" => Stage::Issue,
        "C" => Stage::Complete,
        _ => return Ok(None),
    };
    let (op, flags) = rwbs::parse(rwbs_text)?;
    let (sector, sectors) = match rest.as_slice() {
        [s, "+", n, ..] => (parse_u64(s, "sector")?, parse_u32(n, "sector count")?),
        [s, ..] if s.bytes().all(|b| b.is_ascii_digit()) => (parse_u64(s, "sector")?, 0),
        _ => (0, 0),
    };
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

/// Writes `trace` as blkparse-style text (see the module doc).
pub fn write(trace: &Trace) -> Result<String, TraceError> {
    // (time, request index, kind: 0 message, 1 issue, 2 complete)
    let mut lines: Vec<(u64, usize, u8)> = Vec::with_capacity(trace.requests.len() * 2);
    let mut current_tag = 0u16;
    for (i, r) in trace.requests.iter().enumerate() {
        if r.tag != current_tag {
            crate::text::check_tag_name(trace.tag_name(r.tag)).map_err(|reason| {
                TraceError::malformed("<blkparse writer>", Location::Request(i), reason)
            })?;
            lines.push((r.issue_ns, i, 0));
            current_tag = r.tag;
        }
        lines.push((r.issue_ns, i, 1));
        if let Some(c) = r.complete_ns {
            lines.push((c.max(r.issue_ns), i, 2));
        }
    }
    lines.sort_unstable();
    let mut out = String::with_capacity(lines.len() * 64);
    for (seq, &(t, i, kind)) in lines.iter().enumerate() {
        let r = &trace.requests[i];
        let head = format!(
            "{:>3},{:<3} {:>2} {:>8} {:>15} {:>5}",
            0,
            0,
            0,
            seq,
            format_ns(t, 1_000_000_000),
            0
        );
        match kind {
            0 => out.push_str(&format!(
                "{head}  m   N layoutlab tag={}\n",
                trace.tag_name(r.tag)
            )),
            _ => {
                let rw = rwbs::format(r.op, r.flags, b'N');
                let action = if kind == 1 { 'D' } else { 'C' };
                let tail = if kind == 1 { "[layoutlab]" } else { "[0]" };
                if r.op == Op::Flush {
                    let sector = if kind == 2 { "0 " } else { "" };
                    out.push_str(&format!("{head}  {action} {rw:>3} {sector}{tail}\n"));
                } else {
                    out.push_str(&format!(
                        "{head}  {action} {rw:>3} {} + {} {tail}\n",
                        r.sector, r.sectors
                    ));
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_is_skipped_and_flush_parsed() {
        let text = "  7,0    1        0     0.000000000    44  D  FN [kworker/1:1H]\n\
                    \x20 7,0    0        0     0.000100000    14  C  FN 0 [0]\n\
                    CPU0 (loop0):\n Reads Queued: 0, 0KiB\n";
        let t = read(text, "x", &ReadOptions::default()).unwrap();
        assert_eq!(t.requests.len(), 1);
        assert_eq!(t.requests[0].op, Op::Flush);
        assert_eq!(t.requests[0].complete_ns, Some(100_000));
    }
}
