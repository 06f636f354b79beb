//! Turns a stream of block-layer events (queue, issue, complete, tag markers), as the tracefs,
//! blkparse and blktrace readers produce them, into a [`Trace`]. One mechanism for all three, so
//! that pairing and tagging behave identically whatever the capture tool.

use std::collections::{HashMap, VecDeque};

use crate::error::{Location, TraceError};
use crate::read_options::{DevId, ReadOptions};
use crate::{Flags, Op, Request, Trace};

/// What happened to a request at one instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stage {
    /// A bio entered the block layer (`block_bio_queue`, blktrace `Q`).
    Queue,
    /// A request went to the driver (`block_rq_issue`, blktrace `D`).
    Issue,
    /// The driver completed a request (`block_rq_complete`, blktrace `C`).
    Complete,
}

/// One block event. `op == None` is an rwbs `N` (no data, not a flush): ignored.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BlockEvent {
    pub dev: DevId,
    pub time_ns: u64,
    pub stage: Stage,
    pub op: Option<Op>,
    pub flags: Flags,
    pub sector: u64,
    pub sectors: u32,
}

/// An event with the place in the input it came from.
#[derive(Clone, Debug)]
pub(crate) enum Event {
    Block(BlockEvent),
    /// A `layoutlab tag=NAME` marker: requests after it carry NAME ("" clears it).
    Tag(String),
}

/// The marker convention: `layoutlab tag=NAME`. Returns NAME, or None for other messages.
pub(crate) fn parse_tag_marker(message: &str) -> Option<&str> {
    let rest = message.trim().strip_prefix("layoutlab")?;
    let rest = rest.trim_start().strip_prefix("tag=")?;
    Some(rest.trim())
}

/// Whether (start time) should be subtracted from every time.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Origin {
    /// Times are already relative to the trace's start (blkparse): keep them.
    Keep,
    /// Times are a clock's (tracefs uptime, blktrace ns): the first request becomes 0.
    FirstRequest,
}

/// Builds a trace from `events` (in input order; `at` gives each one's location for errors).
pub(crate) fn assemble(
    file: &str,
    events: &[(Location, Event)],
    opts: &ReadOptions,
    origin: Origin,
) -> Result<Trace, TraceError> {
    let wanted = |dev: DevId| opts.dev.is_none() || opts.dev == Some(dev);
    // One device per trace: refuse to mix silently.
    let mut first_dev: Option<(DevId, Location)> = None;
    let mut any_issue = false;
    for (at, ev) in events {
        if let Event::Block(b) = ev {
            if !wanted(b.dev) {
                continue;
            }
            match first_dev {
                None => first_dev = Some((b.dev, *at)),
                Some((d, first_at)) if d != b.dev => {
                    return Err(TraceError::malformed(
                        file,
                        *at,
                        format!(
                            "events of device {d} (first at {first_at}) and of device {}: a trace \
                             holds one device; choose one with the device filter",
                            b.dev
                        ),
                    ))
                }
                _ => {}
            }
            any_issue |= b.stage == Stage::Issue;
        }
    }
    // Bio-based devices (zram) have no request events: fall back to the queued bios.
    let request_stage = if any_issue {
        Stage::Issue
    } else {
        Stage::Queue
    };

    let mut trace = Trace::default();
    let mut tag = 0u16;
    let mut outstanding: HashMap<(u64, OpKey), VecDeque<usize>> = HashMap::new();
    let mut flushes: VecDeque<usize> = VecDeque::new();
    for (at, ev) in events {
        match ev {
            Event::Tag(name) => {
                crate::text::check_tag_name(name)
                    .map_err(|r| TraceError::malformed(file, *at, r))?;
                tag = trace.try_tag(name).ok_or_else(|| {
                    TraceError::malformed(file, *at, "more than 65536 distinct tags")
                })?
            }
            Event::Block(b) => {
                if !wanted(b.dev) {
                    continue;
                }
                let Some(mut op) = b.op else { continue };
                // A data-less write with a preflush (an fsync's flush bio, `FWS 0 + 0`) is a
                // flush, whichever tool printed it.
                if op != Op::Flush && b.sectors == 0 && b.flags.contains(Flags::PREFLUSH) {
                    op = Op::Flush;
                }
                let flags = if op == Op::Flush {
                    Flags(b.flags.0 & !(Flags::PREFLUSH.0 | Flags::FUA.0))
                } else {
                    b.flags
                };
                if b.stage == request_stage {
                    let (sector, sectors) = if op == Op::Flush {
                        (0, 0)
                    } else {
                        (b.sector, b.sectors)
                    };
                    let index = trace.requests.len();
                    trace.requests.push(Request {
                        issue_ns: b.time_ns,
                        complete_ns: None,
                        op,
                        sector,
                        sectors,
                        flags,
                        tag,
                        cpu: None,
                    });
                    if request_stage == Stage::Issue {
                        if op == Op::Flush {
                            flushes.push_back(index);
                        } else {
                            outstanding
                                .entry((sector, OpKey::of(op)))
                                .or_default()
                                .push_back(index);
                        }
                    }
                } else if b.stage == Stage::Complete && request_stage == Stage::Issue {
                    // The kernel reports a flush's completion at sector u64::MAX and, for a
                    // request whose data went out with a preflush, a second 0-sector
                    // completion: flushes pair in order, 0-sector data completions are echoes.
                    let index = if op == Op::Flush {
                        flushes.pop_front()
                    } else if b.sectors == 0 {
                        None
                    } else {
                        outstanding
                            .get_mut(&(b.sector, OpKey::of(op)))
                            .and_then(VecDeque::pop_front)
                    };
                    if let Some(i) = index {
                        let r = &mut trace.requests[i];
                        r.complete_ns = Some(b.time_ns.max(r.issue_ns));
                    }
                }
            }
        }
    }
    if origin == Origin::FirstRequest {
        if let Some(t0) = trace.requests.iter().map(|r| r.issue_ns).min() {
            for r in &mut trace.requests {
                r.issue_ns -= t0;
                if let Some(c) = r.complete_ns.as_mut() {
                    *c -= t0;
                }
            }
        }
    }
    Ok(trace)
}

/// Op as a hashable pairing key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum OpKey {
    Read,
    Write,
    Discard,
}

impl OpKey {
    fn of(op: Op) -> OpKey {
        match op {
            Op::Read => OpKey::Read,
            Op::Write => OpKey::Write,
            Op::Discard | Op::Flush => OpKey::Discard,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marker_convention() {
        assert_eq!(parse_tag_marker("layoutlab tag=pass1"), Some("pass1"));
        assert_eq!(
            parse_tag_marker("  layoutlab  tag=pass 2 \n"),
            Some("pass 2")
        );
        assert_eq!(parse_tag_marker("layoutlab tag="), Some(""));
        assert_eq!(parse_tag_marker("hello"), None);
    }

    fn ev(stage: Stage, t: u64, op: Op, sector: u64, sectors: u32) -> (Location, Event) {
        (
            Location::Line(1),
            Event::Block(BlockEvent {
                dev: DevId { major: 7, minor: 0 },
                time_ns: t,
                stage,
                op: Some(op),
                flags: Flags::NONE,
                sector,
                sectors,
            }),
        )
    }

    #[test]
    fn pairs_fifo_and_ignores_echoes() {
        let events = vec![
            ev(Stage::Issue, 10, Op::Read, 8, 8),
            ev(Stage::Issue, 11, Op::Read, 8, 8),
            ev(Stage::Issue, 12, Op::Flush, 0, 0),
            ev(Stage::Complete, 20, Op::Read, 8, 8),
            ev(Stage::Complete, 21, Op::Flush, u64::MAX, 0),
            ev(Stage::Complete, 22, Op::Write, 8, 0),
            ev(Stage::Complete, 30, Op::Read, 8, 8),
        ];
        let t = assemble("x", &events, &ReadOptions::default(), Origin::FirstRequest).unwrap();
        let c: Vec<_> = t.requests.iter().map(|r| r.complete_ns).collect();
        assert_eq!(c, vec![Some(10), Some(20), Some(11)]);
        assert_eq!(t.requests[0].issue_ns, 0);
    }
}
