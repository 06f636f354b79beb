//! What the rig adds to the tracefs text before the trace crate reads it
//! (`layoutlab_trace::tracefs::read` owns the format): e2fsck's progress lines become tags, and
//! the markers are listed with their times.
//!
//! e2fsck writes `PASS CUR MAX DEVICE` into the instance's `trace_marker` (see `fsck.rs`). The
//! first line of each new pass number is rewritten to `layoutlab tag=passN` (the marker the
//! trace crate understands), the others are dropped: they carry no tag and would only make
//! the text longer. Marker times are ns since the first request of the device, the trace
//! crate's origin.

/// The prefix of a marker written by [`crate::Marker::mark`].
pub(crate) const MARK_PREFIX: &str = "layoutlab tag=";

const MARK_EVENT: &str = ": tracing_mark_write: ";

/// The text with progress lines turned into tags, the markers (absolute ns, tag), the
/// absolute ns of the device's first request (if any) and, for checkers whose whole output
/// goes to the marker ([`ProgressStyle::XfsRepair`], [`ProgressStyle::BtrfsCheck`]), that
/// output.
#[derive(Debug, Default)]
pub(crate) struct Rewritten {
    pub text: String,
    pub marks_abs_ns: Vec<(u64, String)>,
    pub first_issue_abs_ns: Option<u64>,
    pub output: String,
    /// Marker events in the text (the rig's tags and every line the program wrote).
    pub marker_events: u64,
}

/// How a checker announces its phases in what it writes to the trace marker.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ProgressStyle {
    /// e2fsck's `-C FD` lines `PASS CUR MAX DEVICE` (`PASS CUR MAX` before 1.41): tags
    /// `pass1` … `pass5`.
    #[default]
    E2fsck,
    /// xfs_repair's `Phase N - ...` lines (its whole stderr and stdout go to the marker):
    /// tags `phase1` … `phase7`.
    XfsRepair,
    /// btrfs check's `[N/7] checking ...` lines (its whole stderr and stdout go to the
    /// marker): tags `step1` … `step7`.
    BtrfsCheck,
}

impl ProgressStyle {
    /// The tag a line of the checker's output starts, if it starts one.
    pub fn tag_of(self, line: &str) -> Option<String> {
        let line = line.trim_start();
        match self {
            ProgressStyle::E2fsck => parse_progress(line).map(|p| format!("pass{p}")),
            ProgressStyle::XfsRepair => {
                let rest = line.strip_prefix("Phase ")?;
                let n: u32 = rest.split_whitespace().next()?.parse().ok()?;
                Some(format!("phase{n}"))
            }
            ProgressStyle::BtrfsCheck => {
                let rest = line.strip_prefix('[')?;
                let (n, rest) = rest.split_once('/')?;
                let n: u32 = n.parse().ok()?;
                rest.split_once(']')?.0.parse::<u32>().ok()?;
                Some(format!("step{n}"))
            }
        }
    }
}

/// The pass of an e2fsck progress line: `PASS CUR MAX DEVICE` (e2fsck/unix.c
/// `e2fsck_update_progress`, 1.41 on) or `PASS CUR MAX` (1.40, whose `sprintf` has no device).
pub(crate) fn parse_progress(line: &str) -> Option<u32> {
    let mut fields = line.split_whitespace();
    let pass = fields.next()?.parse().ok()?;
    fields.next()?.parse::<u64>().ok()?;
    fields.next()?.parse::<u64>().ok()?;
    // at most the device after the numbers
    fields.nth(1).is_none().then_some(pass)
}

/// Seconds with up to 9 fraction digits (tracefs prints 6) → ns.
fn parse_ts_ns(token: &str) -> Option<u64> {
    let (secs, frac) = token.split_once('.')?;
    let secs: u64 = secs.parse().ok()?;
    if frac.is_empty() || frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let frac_ns: u64 = frac.parse::<u64>().ok()? * 10u64.pow(9 - frac.len() as u32);
    Some(secs * 1_000_000_000 + frac_ns)
}

/// The timestamp token just before `": EVENT: "` at byte `at`.
fn ts_before(line: &str, at: usize) -> Option<u64> {
    parse_ts_ns(line[..at].split_whitespace().last()?)
}

/// Whether `line` is an event line (`COMM-PID [CPU] FLAGS TS: EVENT: ...`) rather than the
/// continuation of a marker whose text held a newline.
fn is_event_line(line: &str) -> bool {
    line.split_whitespace()
        .take(6)
        .any(|t| t.strip_suffix(':').and_then(parse_ts_ns).is_some())
}

/// Rewrites `text` for device `dev` as described in the module doc, reading progress in
/// `style`.
pub(crate) fn rewrite(text: &str, dev: (u32, u32), style: ProgressStyle) -> Rewritten {
    let issue_key = format!(": block_rq_issue: {},{} ", dev.0, dev.1);
    let mut out = Rewritten {
        text: String::with_capacity(text.len()),
        ..Rewritten::default()
    };
    let whole_output = style != ProgressStyle::E2fsck;
    let mut last_tag: Option<String> = None;
    // The header (`COMM-PID [CPU] FLAGS TS: tracing_mark_write: `) and time of the last marker
    // line, for tags that start on a continuation line of it.
    let mut last_marker: Option<(String, Option<u64>)> = None;
    let new_tag = |payload: &str,
                   header: &str,
                   ts: Option<u64>,
                   out: &mut Rewritten,
                   last_tag: &mut Option<String>| {
        if let Some(tag) = style.tag_of(payload) {
            if last_tag.as_deref() == Some(tag.as_str()) {
                return;
            }
            *last_tag = Some(tag.clone());
            if let Some(ts) = ts {
                out.marks_abs_ns.push((ts, tag.clone()));
            }
            out.text.push_str(header);
            out.text.push_str(MARK_PREFIX);
            out.text.push_str(&tag);
            out.text.push('\n');
        }
    };
    for line in text.lines() {
        // The earliest, not the first printed: `trace_pipe` is not in time order across CPUs
        // (the trace crate orders by time, and its origin is this earliest issue).
        if let Some(at) = line.find(&issue_key) {
            if let Some(ts) = ts_before(line, at) {
                out.first_issue_abs_ns = Some(out.first_issue_abs_ns.map_or(ts, |f| f.min(ts)));
            }
        }
        if let Some(at) = line.find(MARK_EVENT) {
            out.marker_events += 1;
            let payload = line[at + MARK_EVENT.len()..].trim();
            let ts = ts_before(line, at);
            if let Some(tag) = payload.strip_prefix(MARK_PREFIX) {
                if let Some(ts) = ts {
                    out.marks_abs_ns.push((ts, tag.trim().to_string()));
                }
            } else if whole_output || parse_progress(payload).is_some() {
                let header = &line[..at + MARK_EVENT.len()];
                if whole_output {
                    out.output.push_str(payload);
                    out.output.push('\n');
                    last_marker = Some((header.to_string(), ts));
                }
                new_tag(payload, header, ts, &mut out, &mut last_tag);
                continue;
            }
        } else if whole_output
            && !line.trim().is_empty()
            && !line.starts_with('#')
            && !is_event_line(line)
        {
            // A line of a marker whose text held a newline: the checker's output.
            out.output.push_str(line.trim_end());
            out.output.push('\n');
            if let Some((header, ts)) = last_marker.clone() {
                new_tag(line, &header, ts, &mut out, &mut last_tag);
            }
            continue;
        }
        out.text.push_str(line);
        out.text.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use layoutlab_trace::format::{DevId, ReadOptions};
    use layoutlab_trace::{Flags, Op};

    const SAMPLE: &str = "\
# tracer: nop
          e2fsck-900     [001] .....   100.000010: tracing_mark_write: layoutlab tag=setup
          e2fsck-900     [001] .....   100.000020: block_rq_issue: 7,0 RA 4096 () 2048 + 8 none,0,4 [e2fsck]
          e2fsck-900     [001] .....   100.000025: block_rq_issue: 7,1 R 4096 () 2048 + 8 none,0,4 [e2fsck]
          <idle>-0       [000] ..s1.   100.000120: block_rq_complete: 7,0 RA () 2048 + 8 none,0,4 [0]
          e2fsck-900     [001] .....   100.000200: tracing_mark_write: 2 0 5 /dev/loop0
          e2fsck-900     [001] .....   100.000250: tracing_mark_write: 2 1 5 /dev/loop0
          e2fsck-900     [001] .....   100.000300: block_rq_issue: 7,0 R 4096 () 0 + 8 none,0,4 [e2fsck]
          <idle>-0       [000] ..s1.   100.000400: block_rq_complete: 7,0 R () 0 + 8 none,0,4 [0]
";

    #[test]
    fn progress_lines_become_tags_the_trace_crate_reads() {
        let rw = rewrite(SAMPLE, (7, 0), ProgressStyle::E2fsck);
        assert_eq!(rw.first_issue_abs_ns, Some(100_000_020_000));
        assert_eq!(
            rw.marks_abs_ns,
            vec![
                (100_000_010_000, "setup".to_string()),
                (100_000_200_000, "pass2".to_string())
            ]
        );
        assert!(!rw.text.contains("2 1 5"));
        let opts = ReadOptions {
            dev: Some(DevId { major: 7, minor: 0 }),
            devno: None,
        };
        let t = layoutlab_trace::tracefs::read(&rw.text, "sample", &opts).unwrap();
        assert_eq!(t.requests.len(), 2);
        let (a, b) = (t.requests[0], t.requests[1]);
        assert_eq!(
            (a.issue_ns, a.complete_ns, a.op),
            (0, Some(100_000), Op::Read)
        );
        assert!(a.flags.contains(Flags::READAHEAD));
        assert_eq!(t.tag_name(a.tag), "setup");
        assert_eq!((b.issue_ns, t.tag_name(b.tag)), (280_000, "pass2"));
    }

    #[test]
    fn progress_lines_parse() {
        assert_eq!(parse_progress("1 0 32 /dev/loop0"), Some(1));
        assert_eq!(parse_progress("5 65 65 /dev/loop0"), Some(5));
        // e2fsck 1.40.2 writes no device name
        assert_eq!(parse_progress("1 0 32"), Some(1));
        assert_eq!(parse_progress("1 0 32 /dev/loop0 extra"), None);
        assert_eq!(parse_progress("1 0"), None);
        assert_eq!(parse_progress("garbage"), None);
    }

    const XFS: &str = "\
     xfs_repair-70   [000] .....   200.000001: tracing_mark_write: layoutlab tag=setup
     xfs_repair-70   [000] .....   200.000010: tracing_mark_write: Phase 1 - find and verify superblock...
     xfs_repair-70   [000] .....   200.000020: block_rq_issue: 7,0 R 4096 () 0 + 8 none,0,4 [xfs_repair]
          <idle>-0   [000] ..s1.   200.000120: block_rq_complete: 7,0 R () 0 + 8 none,0,4 [0]
     xfs_repair-70   [000] .....   200.000200: tracing_mark_write:         - agno = 0
        - agno = 1
Phase 2 - using internal log
     xfs_repair-70   [000] .....   200.000300: block_rq_issue: 7,0 R 4096 () 64 + 8 none,0,4 [xfs_repair]
          <idle>-0   [000] ..s1.   200.000400: block_rq_complete: 7,0 R () 64 + 8 none,0,4 [0]
     xfs_repair-70   [000] .....   200.000500: tracing_mark_write: Phase 2 - again (not a new phase)
";

    #[test]
    fn xfs_repair_output_becomes_phase_tags_and_its_lines_come_back() {
        let rw = rewrite(XFS, (7, 0), ProgressStyle::XfsRepair);
        let tags: Vec<&str> = rw.marks_abs_ns.iter().map(|(_, t)| t.as_str()).collect();
        // The phase that starts on a continuation line takes its marker's time.
        assert_eq!(tags, ["setup", "phase1", "phase2"]);
        assert_eq!(rw.marks_abs_ns[2].0, 200_000_200_000);
        assert!(rw
            .output
            .contains("- agno = 1\nPhase 2 - using internal log\n"));
        assert!(rw.output.starts_with("Phase 1 - find"));
        let opts = ReadOptions {
            dev: Some(DevId { major: 7, minor: 0 }),
            devno: None,
        };
        let t = layoutlab_trace::tracefs::read(&rw.text, "xfs", &opts).unwrap();
        let tags: Vec<&str> = t.requests.iter().map(|r| t.tag_name(r.tag)).collect();
        assert_eq!(tags, ["phase1", "phase2"]);
    }

    #[test]
    fn checker_progress_lines_parse() {
        let b = ProgressStyle::BtrfsCheck;
        assert_eq!(b.tag_of("[2/7] checking extents").as_deref(), Some("step2"));
        assert_eq!(b.tag_of("[x/7] checking").as_deref(), None);
        assert_eq!(b.tag_of("UUID: 9058"), None);
        let x = ProgressStyle::XfsRepair;
        assert_eq!(
            x.tag_of("Phase 7 - verify link counts...").as_deref(),
            Some("phase7")
        );
        assert_eq!(x.tag_of("No modify flag set, skipping phase 5"), None);
        let e = ProgressStyle::E2fsck;
        assert_eq!(e.tag_of("3 0 10 /dev/loop1").as_deref(), Some("pass3"));
    }
}
