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

/// The text with progress lines turned into tags, the markers (absolute ns, tag) and the
/// absolute ns of the device's first request (if any).
#[derive(Debug, Default)]
pub(crate) struct Rewritten {
    pub text: String,
    pub marks_abs_ns: Vec<(u64, String)>,
    pub first_issue_abs_ns: Option<u64>,
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

/// Rewrites `text` for device `dev` as described in the module doc.
pub(crate) fn rewrite(text: &str, dev: (u32, u32)) -> Rewritten {
    let issue_key = format!(": block_rq_issue: {},{} ", dev.0, dev.1);
    let mut out = Rewritten {
        text: String::with_capacity(text.len()),
        ..Rewritten::default()
    };
    let mut last_pass = None;
    for line in text.lines() {
        if out.first_issue_abs_ns.is_none() {
            if let Some(at) = line.find(&issue_key) {
                out.first_issue_abs_ns = ts_before(line, at);
            }
        }
        if let Some(at) = line.find(MARK_EVENT) {
            let payload = line[at + MARK_EVENT.len()..].trim();
            let ts = ts_before(line, at);
            if let Some(tag) = payload.strip_prefix(MARK_PREFIX) {
                if let Some(ts) = ts {
                    out.marks_abs_ns.push((ts, tag.trim().to_string()));
                }
            } else if let Some(pass) = parse_progress(payload) {
                if last_pass == Some(pass) {
                    continue;
                }
                last_pass = Some(pass);
                let tag = format!("pass{pass}");
                if let Some(ts) = ts {
                    out.marks_abs_ns.push((ts, tag.clone()));
                }
                out.text.push_str(&line[..at + MARK_EVENT.len()]);
                out.text.push_str(MARK_PREFIX);
                out.text.push_str(&tag);
                out.text.push('\n');
                continue;
            }
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
        let rw = rewrite(SAMPLE, (7, 0));
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
        assert_eq!(parse_progress("1 0 32"), None);
        assert_eq!(parse_progress("garbage"), None);
    }
}
