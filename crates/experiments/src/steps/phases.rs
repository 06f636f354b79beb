//! Turn a captured trace's tags into phases: select the requests of one tag, and attribute a
//! replay's time to its tags with the CPU time the program spent before its first and after
//! its last request.
//!
//! The tags are tracefs marker names (`pass1`, `reads`, `p0-direct-write`); each operation
//! names its phases its own way (e2fsck's pass number, predict's phase name), so the step
//! returns the tag and the operation maps it.

use layoutlab_device::replay::{Replayed, ThinkSource};
use layoutlab_trace::{Op, Trace};

/// Which tag table a selection of one tag keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TagTable {
    /// The whole table of the captured trace: the requests keep their tag numbers, so the
    /// selection can be read beside the capture (metacluster-io's phases).
    Kept,
    /// A new table (the untagged name, then the one tag): a trace of its own, as a replay of the phase alone reports it
    /// (request-merging's, random-read's and cache-policies' phases).
    Own,
}

/// The requests of `trace` tagged `tag` (of direction `op`, if given), in trace order, with the
/// capture's queue. An unknown tag selects nothing.
pub fn of_tag(trace: &Trace, tag: &str, op: Option<Op>, table: TagTable) -> Trace {
    let mut out = Trace {
        // The selection came through the capture's queue.
        queue: trace.queue.clone(),
        ..Trace::default()
    };
    if table == TagTable::Kept {
        out.tags = trace.tags.clone();
    }
    let Some(t) = trace.tags.iter().position(|x| x == tag) else {
        return out;
    };
    let keep = match table {
        TagTable::Kept => t as u16,
        TagTable::Own => out.tag(tag),
    };
    out.requests = trace
        .requests
        .iter()
        .filter(|r| r.tag as usize == t && op.is_none_or(|o| r.op == o))
        .map(|r| {
            let mut r = *r;
            r.tag = keep;
            r
        })
        .collect();
    out
}

/// The CPU seconds a traced program spent before its first request and after its last, each
/// times `cpu_scale`: part of the command's time, outside the replay's window. Zero when the
/// capture accounted no CPU, or when the trace's think time is not CPU time (a wall-clock
/// think time already holds what the program did between requests, and nothing says how
/// long it ran before the first one).
pub fn head_tail_cpu_seconds(capture: &layoutlab_rig::Capture, cpu_scale: f64) -> (f64, f64) {
    match (&capture.cpu, ThinkSource::of(&capture.trace)) {
        (Some(c), ThinkSource::Cpu) => (
            c.before_trace_ns as f64 / 1e9 * cpu_scale,
            c.after_trace_ns as f64 / 1e9 * cpu_scale,
        ),
        _ => (0.0, 0.0),
    }
}

/// One tag of a replay, as a phase.
#[derive(Clone, Debug, PartialEq)]
pub struct TagPhase {
    /// The tag's name.
    pub tag: String,
    /// Its replayed seconds; the first phase also holds the CPU time before the trace, the last
    /// the CPU time after it.
    pub seconds: f64,
    /// MiB it read.
    pub mb_read: f64,
    /// Its requests.
    pub requests: u64,
}

/// `replayed`'s tags in order, as phases, the first charged `head_s` and the last `tail_s` (the
/// program's CPU before its first and after its last request, [`head_tail_cpu_seconds`]), so
/// the phases add up to the command's whole modelled time.
pub fn tag_phases(replayed: &Replayed, head_s: f64, tail_s: f64) -> Vec<TagPhase> {
    const MIB: f64 = (1u64 << 20) as f64;
    let mut phases: Vec<TagPhase> = replayed
        .tags
        .iter()
        .map(|t| TagPhase {
            tag: t.tag.clone(),
            seconds: t.seconds,
            mb_read: t.bytes_read as f64 / MIB,
            requests: t.requests,
        })
        .collect();
    if let Some(first) = phases.first_mut() {
        first.seconds += head_s;
    }
    if let Some(last) = phases.last_mut() {
        last.seconds += tail_s;
    }
    phases
}

#[cfg(test)]
mod tests {
    use super::*;
    use layoutlab_device::replay::TagSummary;

    /// Two phases and a setup, reads and writes mixed: what request-merging's and
    /// metacluster-io's captures look like.
    const CSV: &str = "issue_ns,complete_ns,op,sector,sectors,flags,tag
0,100,read,0,8,sync|meta,setup
200,300,read,2048,256,,p0-direct-read
400,500,write,4096,16,sync,p0-direct-read
600,700,read,8192,64,,p1-buffered-read
800,900,read,9000,8,,p0-direct-read
";

    fn trace() -> Trace {
        layoutlab_trace::csv::read(CSV, "phases").expect("the fixture trace")
    }

    #[test]
    fn own_table_is_the_tag_alone_renumbered() {
        let t = trace();
        let own = of_tag(&t, "p0-direct-read", None, TagTable::Own);
        // A new trace's table starts with the untagged name, "".
        assert_eq!(own.tags, vec![String::new(), "p0-direct-read".to_string()]);
        assert_eq!(
            own.requests.iter().map(|r| r.sector).collect::<Vec<_>>(),
            vec![2048, 4096, 9000]
        );
        assert!(own.requests.iter().all(|r| r.tag == 1));
        let reads = of_tag(&t, "p0-direct-read", Some(Op::Read), TagTable::Own);
        assert_eq!(
            reads.requests.iter().map(|r| r.sector).collect::<Vec<_>>(),
            vec![2048, 9000]
        );
    }

    #[test]
    fn kept_table_keeps_the_capture_numbering() {
        let t = trace();
        let kept = of_tag(&t, "p1-buffered-read", None, TagTable::Kept);
        assert_eq!(kept.tags, t.tags);
        assert_eq!(kept.requests.len(), 1);
        assert_eq!(kept.tag_name(kept.requests[0].tag), "p1-buffered-read");
        assert_eq!(kept.requests[0], t.requests[3]);
    }

    #[test]
    fn an_unknown_tag_selects_nothing() {
        let t = trace();
        let own = of_tag(&t, "pass9", None, TagTable::Own);
        assert!(own.requests.is_empty());
        assert_eq!(own.tags, Trace::default().tags);
        let kept = of_tag(&t, "pass9", None, TagTable::Kept);
        assert!(kept.requests.is_empty());
        assert_eq!(kept.tags, t.tags);
    }

    #[test]
    fn head_and_tail_cpu_go_to_the_first_and_last_phase() {
        let tag = |name: &str, seconds: f64, mib: u64| TagSummary {
            tag: name.into(),
            seconds,
            bytes_read: mib << 20,
            requests: 1,
            ..TagSummary::default()
        };
        let replayed = Replayed {
            tags: vec![
                tag("setup", 1.0, 1),
                tag("pass1", 2.0, 3),
                tag("pass5", 4.0, 0),
            ],
            ..Replayed::default()
        };
        let phases = tag_phases(&replayed, 0.5, 0.25);
        let seconds: Vec<f64> = phases.iter().map(|p| p.seconds).collect();
        assert_eq!(seconds, vec![1.5, 2.0, 4.25]);
        assert_eq!(phases[1].mb_read, 3.0);
        assert_eq!(phases[2].tag, "pass5");
        // One phase takes both.
        let one = Replayed {
            tags: vec![tag("reads", 1.0, 0)],
            ..Replayed::default()
        };
        assert_eq!(tag_phases(&one, 0.5, 0.25)[0].seconds, 1.75);
        assert!(tag_phases(&Replayed::default(), 0.5, 0.25).is_empty());
    }
}
