//! Replay of a captured trace on a device model, keeping the application's behaviour.
//!
//! The rules (see docs/replay.md): a request issued after earlier requests completed waits for
//! the *modelled* completion of the latest of those, plus the original think time scaled by
//! `cpu_scale`; a request issued while others were outstanding keeps its original offset from
//! the previous issue; requests are never issued out of trace order. When every
//! request carries CPU stamps (a capture with the scheduler's accounting), think times and
//! offsets are the CPU time the program ran between the two instants, so the prediction does
//! not depend on how busy the capturing machine was; otherwise they are the wall-clock gaps
//! ([`ThinkSource`]). The host queue in front of
//! the device is FCFS or SPTF at a configurable depth ([`Scheduler`]).
//!
//! ```
//! use layoutlab_device::{preset::load_preset, replay::{replay, ReplayOptions}};
//! use layoutlab_trace::{Flags, Op, Request, Trace};
//! // Captured on a fast device: read, 2 ms of CPU, read.
//! let mut t = Trace::default();
//! let pass = t.tag("pass1");
//! for (issue, complete, sector) in [(0, 100_000, 0), (2_100_000, 2_200_000, 4096)] {
//!     t.requests.push(Request { issue_ns: issue, complete_ns: Some(complete), op: Op::Read,
//!         sector, sectors: 8, flags: Flags::SYNC, tag: pass, cpu: None });
//! }
//! let mut ssd = load_preset("ssd-sata-2010").unwrap();
//! let r = replay(ssd.as_mut(), &t, &ReplayOptions::default());
//! // The 2 ms of think time is kept, between the modelled completion and the next issue.
//! assert_eq!(r.requests[1].issue_ns - r.requests[0].complete_ns, 2_000_000.0);
//! assert!((r.cpu_not_overlapped_ns - 2_000_000.0).abs() < 1e-6);
//! assert_eq!(r.tags[0].tag, "pass1");
//! ```

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use layoutlab_trace::{Op, Trace};
use serde::{Deserialize, Serialize};

pub use crate::queue::{Discipline, Dispatched, Scheduler};
use crate::{Device, IoRequest};

/// Options of [`replay`].
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReplayOptions {
    /// Multiplies every think time (CPU time between a completion and the next issue);
    /// 2.0 models a CPU half as fast as the one the trace was captured on.
    pub cpu_scale: f64,
    /// Queue discipline.
    pub discipline: Discipline,
    /// Queue depth: FCFS outstanding limit and SPTF window. `None`: the device's
    /// [`Device::queue_depth`].
    pub depth: Option<usize>,
}

impl Default for ReplayOptions {
    fn default() -> Self {
        ReplayOptions {
            cpu_scale: 1.0,
            discipline: Discipline::Fcfs,
            depth: None,
        }
    }
}

/// Modelled times of one request (ns on the trace's clock).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ReplayedRequest {
    /// When the application issued it in the model.
    pub issue_ns: f64,
    /// When the queue handed it to the device.
    pub start_ns: f64,
    /// When the device completed it.
    pub complete_ns: f64,
}

/// Totals of one tag (e.g. one e2fsck pass).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TagSummary {
    /// The tag's name ("" for untagged requests).
    pub tag: String,
    /// Wall time attributed to the tag: the interval from each of its requests' modelled issue
    /// to the next request's issue (the last request also gets the tail to the final
    /// completion). The tags' seconds add up to [`Replayed::wall_ns`].
    pub seconds: f64,
    /// Bytes read.
    pub bytes_read: u64,
    /// Bytes written.
    pub bytes_written: u64,
    /// Number of requests.
    pub requests: u64,
}

/// The result of [`replay`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Replayed {
    /// Per request, in trace order.
    pub requests: Vec<ReplayedRequest>,
    /// From the first modelled issue to the last modelled completion, ns.
    pub wall_ns: f64,
    /// Time during which at least one request was issued and not yet complete, ns.
    pub io_busy_ns: f64,
    /// Time with no request outstanding (the application computing), ns:
    /// `wall_ns - io_busy_ns`.
    pub cpu_not_overlapped_ns: f64,
    /// Totals per tag that has requests, in the trace's tag order.
    pub tags: Vec<TagSummary>,
}

/// What request `i`'s modelled issue time is anchored to.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Anchor {
    /// The first request: its original issue time.
    Start,
    /// Issued `think_ns` after the original completion of request `j` (the latest completion
    /// at or before the issue).
    AfterCompletion { j: usize, think_ns: u64 },
    /// Issued `gap_ns` after the previous request, while others were outstanding (or with no
    /// completion times known: open loop).
    AfterIssue { gap_ns: u64 },
}

/// Where a replay takes the time a program spent between its requests from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ThinkSource {
    /// The CPU time the traced program ran between the two instants (the trace carries the
    /// scheduler's accounting, [`layoutlab_trace::Request::cpu`], on every request): does not
    /// depend on how busy the capturing machine was.
    Cpu,
    /// The wall-clock gap in the trace: holds the time the program waited for a CPU too.
    Wall,
}

impl ThinkSource {
    /// What a replay of `trace` uses: CPU time when every request carries CPU stamps.
    pub fn of(trace: &Trace) -> ThinkSource {
        if trace.has_cpu() {
            ThinkSource::Cpu
        } else {
            ThinkSource::Wall
        }
    }
}

/// The program's time between requests, summed over a trace, as each source measures it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ThinkTotals {
    /// Between a completion and the next issue (the program waited, then computed), ns.
    pub after_completion_ns: u64,
    /// Between two issues while requests were outstanding (read-ahead, queued writes), ns.
    pub between_issues_ns: u64,
}

impl ThinkTotals {
    /// Both kinds together, ns.
    pub fn total_ns(&self) -> u64 {
        self.after_completion_ns + self.between_issues_ns
    }
}

/// The think times a replay of `trace` uses, and (as a diagnostic) the wall-clock gaps they
/// replace. `cpu` is `None` for a trace without CPU stamps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ThinkSummary {
    /// From the wall-clock gaps.
    pub wall: ThinkTotals,
    /// From the CPU stamps, when every request has them.
    pub cpu: Option<ThinkTotals>,
}

/// Sums the think times of `trace` from both sources (see [`ThinkSummary`]).
pub fn think_summary(trace: &Trace) -> ThinkSummary {
    let sum = |source| {
        let mut f = AnchorFinder::new(source);
        let mut t = ThinkTotals::default();
        for (i, r) in trace.requests.iter().enumerate() {
            match f.next(i, r) {
                Anchor::AfterCompletion { think_ns, .. } => t.after_completion_ns += think_ns,
                Anchor::AfterIssue { gap_ns } => t.between_issues_ns += gap_ns,
                Anchor::Start => {}
            }
        }
        t
    };
    ThinkSummary {
        wall: sum(ThinkSource::Wall),
        cpu: trace.has_cpu().then(|| sum(ThinkSource::Cpu)),
    }
}

/// Finds each request's [`Anchor`] while walking the trace in issue order (trace-only; the
/// device plays no part). The anchors' times come from `source`: with CPU stamps, the CPU time
/// used between the two instants replaces the wall-clock gap.
struct AnchorFinder {
    source: ThinkSource,
    /// Original completions not yet passed by an issue, sorted by time (completions arrive
    /// nearly in order, so inserting from the back is cheap): (time, request, CPU used then).
    open: VecDeque<(u64, usize, u64)>,
    latest: Option<(u64, usize, u64)>,
    prev_issue: u64,
    prev_issue_cpu: u64,
}

impl AnchorFinder {
    fn new(source: ThinkSource) -> AnchorFinder {
        AnchorFinder {
            source,
            open: VecDeque::new(),
            latest: None,
            prev_issue: 0,
            prev_issue_cpu: 0,
        }
    }

    /// The anchor of request `i` (requests must come in order).
    fn next(&mut self, i: usize, r: &layoutlab_trace::Request) -> Anchor {
        while let Some(&(c, j, cpu)) = self.open.front() {
            if c > r.issue_ns {
                break;
            }
            self.open.pop_front();
            // Popped in completion order, so the last popped is the latest so far.
            self.latest = Some((c, j, cpu));
        }
        let cpu = r.cpu.unwrap_or_default();
        let by_cpu = self.source == ThinkSource::Cpu;
        let anchor = if i == 0 {
            Anchor::Start
        } else {
            match self.latest {
                Some((c, j, c_cpu)) if c >= self.prev_issue => Anchor::AfterCompletion {
                    j,
                    think_ns: if by_cpu {
                        cpu.at_issue_ns.saturating_sub(c_cpu)
                    } else {
                        r.issue_ns.saturating_sub(c)
                    },
                },
                _ => Anchor::AfterIssue {
                    gap_ns: if by_cpu {
                        cpu.at_issue_ns.saturating_sub(self.prev_issue_cpu)
                    } else {
                        r.issue_ns.saturating_sub(self.prev_issue)
                    },
                },
            }
        };
        if let Some(c) = r.complete_ns {
            let entry = (c, i, cpu.at_complete_ns);
            match self.open.back() {
                Some(&(last, _, _)) if last > c => {
                    let mut k = self.open.len() - 1;
                    while k > 0 && self.open[k - 1].0 > c {
                        k -= 1;
                    }
                    self.open.insert(k, entry);
                }
                _ => self.open.push_back(entry),
            }
        }
        self.prev_issue = r.issue_ns;
        self.prev_issue_cpu = cpu.at_issue_ns;
        anchor
    }
}

/// Every request's anchor.
#[cfg(test)]
fn anchors(trace: &Trace) -> Vec<Anchor> {
    let mut f = AnchorFinder::new(ThinkSource::of(trace));
    trace
        .requests
        .iter()
        .enumerate()
        .map(|(i, r)| f.next(i, r))
        .collect()
}

/// Modelled issue time of request `i` from its anchor, or `None` if the anchor request has
/// not been handed to the device yet.
#[inline]
fn arrival_ns(
    anchor: Anchor,
    i: usize,
    trace: &Trace,
    out: &[ReplayedRequest],
    cpu_scale: f64,
) -> Option<f64> {
    let a = match anchor {
        Anchor::Start => return Some(trace.requests[0].issue_ns as f64),
        Anchor::AfterIssue { gap_ns } => out[i - 1].issue_ns + gap_ns as f64,
        Anchor::AfterCompletion { j, think_ns } => {
            let c = out[j].complete_ns;
            if c.is_nan() {
                return None;
            }
            c + think_ns as f64 * cpu_scale
        }
    };
    // Never issued before the previous request (trace order is kept).
    Some(a.max(out[i - 1].issue_ns))
}

/// Converts a trace request to what a device sees.
fn io_request(r: &layoutlab_trace::Request) -> IoRequest {
    IoRequest {
        op: r.op,
        sector: r.sector,
        sectors: r.sectors,
        flags: r.flags,
    }
}

/// Replays `trace` on `dev` (see the module documentation for the rules).
///
/// The model clock is the trace's: the first request is issued at its original time.
pub fn replay(dev: &mut dyn Device, trace: &Trace, opts: &ReplayOptions) -> Replayed {
    let cpu_scale = if opts.cpu_scale.is_finite() && opts.cpu_scale >= 0.0 {
        opts.cpu_scale
    } else {
        1.0
    };
    let depth = opts.depth.unwrap_or_else(|| dev.queue_depth()).max(1);
    let mut summary = Summary::new(trace.tags.len());
    let out = match opts.discipline {
        Discipline::Fcfs => replay_fcfs(dev, trace, cpu_scale, depth, &mut summary),
        Discipline::Sptf => {
            let out = replay_events(dev, trace, cpu_scale, Discipline::Sptf, depth);
            for (r, m) in trace.requests.iter().zip(&out) {
                summary.add(r, m);
            }
            out
        }
    };
    summary.finish(trace, out)
}

fn unreplayed(n: usize) -> Vec<ReplayedRequest> {
    vec![
        ReplayedRequest {
            issue_ns: f64::NAN,
            start_ns: f64::NAN,
            complete_ns: f64::NAN,
        };
        n
    ]
}

/// FCFS in one pass: requests reach the device in trace order, so when request `i` is
/// considered every earlier one (its anchor included) has already been handed over, and
/// `i`'s dispatch depends on nothing later. Equal to [`replay_events`] with FCFS (tested).
fn replay_fcfs(
    dev: &mut dyn Device,
    trace: &Trace,
    cpu_scale: f64,
    depth: usize,
    summary: &mut Summary,
) -> Vec<ReplayedRequest> {
    let n = trace.requests.len();
    // Filled in order, so each entry is written once.
    let mut out: Vec<ReplayedRequest> = Vec::with_capacity(n);
    let mut finder = AnchorFinder::new(ThinkSource::of(trace));
    // Completion times (f64 bits) of requests at the device, earliest first.
    let mut outstanding: BinaryHeap<Reverse<u64>> = BinaryHeap::with_capacity(depth + 1);
    let mut last_dispatch = f64::NEG_INFINITY;
    for (i, r) in trace.requests.iter().enumerate() {
        let anchor = finder.next(i, r);
        let a = arrival_ns(anchor, i, trace, &out, cpu_scale)
            .expect("FCFS hands every earlier request over first");
        let mut t = a.max(last_dispatch);
        while let Some(&Reverse(bits)) = outstanding.peek() {
            if f64::from_bits(bits) > t {
                break;
            }
            outstanding.pop();
        }
        if outstanding.len() >= depth {
            // Full: the earliest completion frees a slot.
            if let Some(Reverse(bits)) = outstanding.pop() {
                t = t.max(f64::from_bits(bits));
            }
        }
        let c = dev.submit(t, &io_request(r)).max(t);
        outstanding.push(Reverse(c.to_bits()));
        last_dispatch = t;
        let m = ReplayedRequest {
            issue_ns: a,
            start_ns: t,
            complete_ns: c,
        };
        summary.add(r, &m);
        out.push(m);
    }
    out
}

/// The general event loop over the [`Scheduler`]: arrivals and dispatches in time order.
fn replay_events(
    dev: &mut dyn Device,
    trace: &Trace,
    cpu_scale: f64,
    discipline: Discipline,
    depth: usize,
) -> Vec<ReplayedRequest> {
    let n = trace.requests.len();
    let mut sched = Scheduler::new(discipline, depth);
    let mut out = unreplayed(n);
    let mut finder = AnchorFinder::new(ThinkSource::of(trace));
    let mut anchor = None;
    let mut next = 0usize;
    let mut now = f64::NEG_INFINITY;
    loop {
        // The next arrival, if its anchor is already known.
        let arrival = if next < n {
            let an = *anchor.get_or_insert_with(|| finder.next(next, &trace.requests[next]));
            arrival_ns(an, next, trace, &out, cpu_scale)
        } else {
            None
        };
        let dispatch_at = sched.next_dispatch_ns(now.max(0.0));
        match (arrival, dispatch_at) {
            (Some(a), d) if d.is_none_or(|d| a <= d) => {
                out[next].issue_ns = a;
                sched.push(next, a, io_request(&trace.requests[next]));
                now = now.max(a);
                next += 1;
                anchor = None;
            }
            (_, Some(d)) => {
                now = now.max(d);
                if let Some(done) = sched.dispatch(dev, d) {
                    out[done.id].start_ns = done.start_ns;
                    out[done.id].complete_ns = done.complete_ns;
                }
            }
            // Nothing can arrive and nothing waits: every request is done.
            _ => break,
        }
    }
    out
}

/// Wall, busy and per-tag totals, accumulated request by request in issue order (so the
/// one-pass FCFS replay needs no second sweep over its output).
struct Summary {
    first_issue_ns: f64,
    last_complete_ns: f64,
    busy_ns: f64,
    /// The current run of overlapping `[issue, complete]` intervals.
    run_start_ns: f64,
    run_end_ns: f64,
    /// Per tag: (ns, requests, bytes read, bytes written); seconds are formed at the end.
    acc: Vec<(f64, u64, u64, u64)>,
    /// The previous request's tag and issue: its interval ends at the next issue.
    prev: Option<(usize, f64)>,
}

impl Summary {
    fn new(tags: usize) -> Summary {
        Summary {
            first_issue_ns: f64::NAN,
            last_complete_ns: f64::NEG_INFINITY,
            busy_ns: 0.0,
            run_start_ns: f64::NAN,
            run_end_ns: f64::NEG_INFINITY,
            acc: vec![(0.0, 0, 0, 0); tags.max(1)],
            prev: None,
        }
    }

    #[inline]
    fn add(&mut self, r: &layoutlab_trace::Request, m: &ReplayedRequest) {
        if self.first_issue_ns.is_nan() {
            self.first_issue_ns = m.issue_ns;
        }
        self.last_complete_ns = self.last_complete_ns.max(m.complete_ns);
        // Issues come in time order, so the union of intervals is one sweep.
        if m.issue_ns > self.run_end_ns {
            if self.run_end_ns > self.run_start_ns {
                self.busy_ns += self.run_end_ns - self.run_start_ns;
            }
            self.run_start_ns = m.issue_ns;
            self.run_end_ns = m.complete_ns;
        } else {
            self.run_end_ns = self.run_end_ns.max(m.complete_ns);
        }
        if let Some((t, issue)) = self.prev {
            self.acc[t].0 += m.issue_ns - issue;
        }
        let t = r.tag as usize;
        if t >= self.acc.len() {
            self.acc.resize(t + 1, (0.0, 0, 0, 0));
        }
        let a = &mut self.acc[t];
        a.1 += 1;
        match r.op {
            Op::Read => a.2 += r.bytes(),
            Op::Write => a.3 += r.bytes(),
            Op::Flush | Op::Discard => {}
        }
        self.prev = Some((t, m.issue_ns));
    }

    fn finish(mut self, trace: &Trace, requests: Vec<ReplayedRequest>) -> Replayed {
        let Some((t, issue)) = self.prev else {
            return Replayed::default();
        };
        // The last request also takes the tail to the final completion.
        self.acc[t].0 += self.last_complete_ns - issue;
        if self.run_end_ns > self.run_start_ns {
            self.busy_ns += self.run_end_ns - self.run_start_ns;
        }
        let wall = self.last_complete_ns - self.first_issue_ns;
        let mut tags: Vec<TagSummary> = self
            .acc
            .iter()
            .enumerate()
            .map(|(t, &(ns, reqs, rd, wr))| TagSummary {
                tag: trace.tags.get(t).cloned().unwrap_or_default(),
                seconds: ns / 1e9,
                bytes_read: rd,
                bytes_written: wr,
                requests: reqs,
            })
            .collect();
        tags.retain(|t| t.requests > 0);
        Replayed {
            requests,
            wall_ns: wall,
            io_busy_ns: self.busy_ns,
            cpu_not_overlapped_ns: (wall - self.busy_ns).max(0.0),
            tags,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use layoutlab_trace::{Flags, Request};
    use proptest::prelude::*;

    /// A serial device whose service time is `base_ns + per_sector_ns * sectors`.
    struct Linear {
        base_ns: f64,
        per_sector_ns: f64,
        free_ns: f64,
    }
    impl Device for Linear {
        fn name(&self) -> &str {
            "linear"
        }
        fn capacity_sectors(&self) -> u64 {
            u64::MAX
        }
        fn submit(&mut self, arrival_ns: f64, req: &IoRequest) -> f64 {
            let start = arrival_ns.max(self.free_ns);
            self.free_ns = start + self.base_ns + self.per_sector_ns * req.sectors as f64;
            self.free_ns
        }
        fn positioning_ns(&self, _at: f64, req: &IoRequest) -> f64 {
            (req.sector as f64 - 1000.0).abs()
        }
    }
    fn linear(base_ns: f64, per_sector_ns: f64) -> Linear {
        Linear {
            base_ns,
            per_sector_ns,
            free_ns: 0.0,
        }
    }

    fn req(issue: u64, complete: Option<u64>, sector: u64) -> Request {
        Request {
            issue_ns: issue,
            complete_ns: complete,
            op: Op::Read,
            sector,
            sectors: 8,
            flags: Flags::SYNC,
            tag: 0,
            cpu: None,
        }
    }

    /// A random trace mixing synchronous chains and overlapping (readahead-like) bursts.
    fn arb_trace() -> impl Strategy<Value = Trace> {
        prop::collection::vec(
            (0u64..50_000, 1u64..200_000, any::<bool>(), 0u64..1_000_000),
            1..60,
        )
        .prop_map(|steps| {
            let mut t = Trace::default();
            let mut clock = 0u64;
            for (gap, service, overlap, sector) in steps {
                let issue = if overlap {
                    clock + gap / 10
                } else {
                    // After every earlier completion.
                    let done = t
                        .requests
                        .iter()
                        .filter_map(|r: &Request| r.complete_ns)
                        .max()
                        .unwrap_or(0);
                    done.max(clock) + gap
                };
                clock = issue;
                t.requests.push(req(issue, Some(issue + service), sector));
            }
            t
        })
    }

    #[test]
    fn sync_chain_on_zero_latency_device_keeps_only_think_time() {
        let mut t = Trace::default();
        // Three synchronous reads: 1 ms I/O, 2 ms think, 1 ms I/O, 3 ms think, 1 ms I/O.
        t.requests.push(req(0, Some(1_000_000), 0));
        t.requests.push(req(3_000_000, Some(4_000_000), 8));
        t.requests.push(req(7_000_000, Some(8_000_000), 16));
        let r = replay(&mut linear(0.0, 0.0), &t, &ReplayOptions::default());
        let issues: Vec<f64> = r.requests.iter().map(|q| q.issue_ns).collect();
        assert_eq!(issues, vec![0.0, 2_000_000.0, 5_000_000.0]);
        assert_eq!(r.wall_ns, 5_000_000.0);
        assert_eq!(r.io_busy_ns, 0.0);
        assert_eq!(r.cpu_not_overlapped_ns, 5_000_000.0);
    }

    #[test]
    fn cpu_scale_scales_think_time_only() {
        let mut t = Trace::default();
        t.requests.push(req(0, Some(1_000_000), 0));
        t.requests.push(req(3_000_000, Some(4_000_000), 8));
        let opts = ReplayOptions {
            cpu_scale: 2.0,
            ..ReplayOptions::default()
        };
        let r = replay(&mut linear(500_000.0, 0.0), &t, &opts);
        // 0.5 ms I/O, then 2 ms think doubled.
        assert_eq!(r.requests[1].issue_ns, 500_000.0 + 4_000_000.0);
        assert_eq!(r.wall_ns, 5_000_000.0);
        assert_eq!(r.io_busy_ns, 1_000_000.0);
    }

    fn stamped(
        mut r: layoutlab_trace::Request,
        at_issue_ns: u64,
        at_complete_ns: u64,
    ) -> layoutlab_trace::Request {
        r.cpu = Some(layoutlab_trace::cpu::CpuStamps {
            at_issue_ns,
            at_complete_ns,
        });
        r
    }

    #[test]
    fn cpu_stamps_replace_wall_gaps() {
        // Captured on a busy machine: 2 ms between completion and issue, of which the program
        // ran 0.5 ms (it waited 1.5 ms for a CPU).
        let mut t = Trace::default();
        t.requests.push(stamped(req(0, Some(1_000_000), 0), 0, 0));
        t.requests.push(stamped(
            req(3_000_000, Some(4_000_000), 8),
            500_000,
            500_000,
        ));
        assert_eq!(ThinkSource::of(&t), ThinkSource::Cpu);
        let r = replay(&mut linear(500_000.0, 0.0), &t, &ReplayOptions::default());
        assert_eq!(r.requests[1].issue_ns, 500_000.0 + 500_000.0);
        assert_eq!(r.cpu_not_overlapped_ns, 500_000.0);
        // cpu_scale still multiplies the CPU time.
        let slow = ReplayOptions {
            cpu_scale: 3.0,
            ..ReplayOptions::default()
        };
        let r = replay(&mut linear(500_000.0, 0.0), &t, &slow);
        assert_eq!(r.requests[1].issue_ns, 500_000.0 + 1_500_000.0);
        let s = think_summary(&t);
        assert_eq!(s.wall.after_completion_ns, 2_000_000);
        assert_eq!(s.cpu.unwrap().after_completion_ns, 500_000);
    }

    #[test]
    fn cpu_stamps_replace_issue_offsets_too() {
        // Read-ahead: the second request issued 100 µs of wall time after the first, with
        // 10 µs of the program's CPU in between, while the first is outstanding.
        let mut t = Trace::default();
        t.requests
            .push(stamped(req(0, Some(900_000), 0), 0, 50_000));
        t.requests
            .push(stamped(req(100_000, Some(950_000), 8), 10_000, 60_000));
        let r = replay(&mut linear(2_000_000.0, 0.0), &t, &ReplayOptions::default());
        assert_eq!(r.requests[1].issue_ns, 10_000.0);
        assert_eq!(think_summary(&t).cpu.unwrap().between_issues_ns, 10_000);
    }

    #[test]
    fn a_trace_with_some_requests_unstamped_replays_on_wall_gaps() {
        let mut t = Trace::default();
        t.requests.push(stamped(req(0, Some(1_000_000), 0), 0, 0));
        t.requests.push(req(3_000_000, Some(4_000_000), 8));
        assert_eq!(ThinkSource::of(&t), ThinkSource::Wall);
        let mut plain = t.clone();
        plain.requests[0].cpu = None;
        let a = replay(&mut linear(500_000.0, 0.0), &t, &ReplayOptions::default());
        let b = replay(
            &mut linear(500_000.0, 0.0),
            &plain,
            &ReplayOptions::default(),
        );
        assert_eq!(a, b);
        assert_eq!(a.requests[1].issue_ns, 500_000.0 + 2_000_000.0);
        assert!(think_summary(&t).cpu.is_none());
    }

    #[test]
    fn overlapping_requests_keep_their_issue_offsets() {
        let mut t = Trace::default();
        // Readahead: three requests issued 10 µs apart before any completes.
        t.requests.push(req(0, Some(900_000), 0));
        t.requests.push(req(10_000, Some(950_000), 8));
        t.requests.push(req(20_000, Some(1_000_000), 16));
        let r = replay(&mut linear(2_000_000.0, 0.0), &t, &ReplayOptions::default());
        let issues: Vec<f64> = r.requests.iter().map(|q| q.issue_ns).collect();
        assert_eq!(issues, vec![0.0, 10_000.0, 20_000.0]);
        // Serial device: they complete back to back.
        assert_eq!(r.requests[2].complete_ns, 6_000_000.0);
    }

    #[test]
    fn open_loop_requests_keep_original_issue_times() {
        let mut t = Trace::default();
        for i in 0..5 {
            t.requests.push(req(i * 1_000_000, None, i * 8));
        }
        let r = replay(&mut linear(3_000_000.0, 0.0), &t, &ReplayOptions::default());
        for (i, q) in r.requests.iter().enumerate() {
            assert_eq!(q.issue_ns, i as f64 * 1e6);
        }
        assert_eq!(r.requests[4].complete_ns, 15_000_000.0);
    }

    #[test]
    fn sptf_picks_the_closest_waiting_request() {
        let mut t = Trace::default();
        // Four requests arrive together; the device is positioned "at" sector 1000.
        for s in [5000u64, 1200, 900, 3000] {
            t.requests.push(req(0, None, s));
        }
        let opts = ReplayOptions {
            discipline: Discipline::Sptf,
            depth: Some(4),
            ..ReplayOptions::default()
        };
        let r = replay(&mut linear(1000.0, 0.0), &t, &opts);
        let mut order: Vec<usize> = (0..4).collect();
        order.sort_by(|&a, &b| r.requests[a].start_ns.total_cmp(&r.requests[b].start_ns));
        // All four wait when the device is first free; by distance from sector 1000.
        assert_eq!(order, vec![2, 1, 3, 0]);
    }

    #[test]
    fn tag_seconds_partition_wall_time() {
        let mut t = Trace::default();
        let p1 = t.tag("pass1");
        let p2 = t.tag("pass2");
        t.requests.push(Request {
            tag: p1,
            ..req(0, Some(1_000), 0)
        });
        t.requests.push(Request {
            tag: p1,
            ..req(2_000, Some(3_000), 8)
        });
        t.requests.push(Request {
            tag: p2,
            ..req(10_000, Some(11_000), 16)
        });
        let r = replay(&mut linear(1_000.0, 0.0), &t, &ReplayOptions::default());
        assert_eq!(r.tags.len(), 2);
        assert_eq!(r.tags[0].tag, "pass1");
        assert_eq!(r.tags[0].requests, 2);
        assert_eq!(r.tags[0].bytes_read, 8192);
        let sum: f64 = r.tags.iter().map(|t| t.seconds).sum();
        assert!((sum - r.wall_ns / 1e9).abs() < 1e-12);
        assert!((r.tags[1].seconds - 1e-6).abs() < 1e-15);
    }

    #[test]
    fn empty_trace_is_empty() {
        let r = replay(
            &mut linear(1.0, 1.0),
            &Trace::default(),
            &ReplayOptions::default(),
        );
        assert!(r.requests.is_empty());
        assert_eq!(r.wall_ns, 0.0);
    }

    proptest! {
        #[test]
        fn one_pass_fcfs_equals_the_event_loop(
            t in arb_trace(), depth in 1usize..6, base in 0.0f64..3e5, scale in 0.0f64..3.0
        ) {
            let fast = replay_fcfs(&mut linear(base, 30.0), &t, scale, depth, &mut Summary::new(1));
            let slow = replay_events(&mut linear(base, 30.0), &t, scale, Discipline::Fcfs, depth);
            prop_assert_eq!(&fast, &slow);
            // The streamed summary equals one taken over the finished output.
            let opts = ReplayOptions { cpu_scale: scale, depth: Some(depth), ..ReplayOptions::default() };
            let streamed = replay(&mut linear(base, 30.0), &t, &opts);
            let mut after = Summary::new(t.tags.len());
            for (r, m) in t.requests.iter().zip(&slow) {
                after.add(r, m);
            }
            prop_assert_eq!(streamed, after.finish(&t, slow));
        }

        #[test]
        fn zero_latency_device_reproduces_think_times(t in arb_trace()) {
            let r = replay(&mut linear(0.0, 0.0), &t, &ReplayOptions::default());
            for (i, a) in anchors(&t).iter().enumerate() {
                if let Anchor::AfterCompletion { j, think_ns } = *a {
                    let gap = r.requests[i].issue_ns - r.requests[j].complete_ns;
                    // Equal unless trace order forced it later.
                    prop_assert!(gap >= think_ns as f64);
                    if r.requests[i].issue_ns > r.requests[i - 1].issue_ns {
                        prop_assert_eq!(gap, think_ns as f64);
                    }
                }
            }
        }

        #[test]
        fn slower_device_never_finishes_earlier(t in arb_trace(), extra in 0.0f64..1e6) {
            let opts = ReplayOptions::default();
            let fast = replay(&mut linear(10_000.0, 100.0), &t, &opts);
            let slow = replay(&mut linear(10_000.0 + extra, 100.0), &t, &opts);
            for (f, s) in fast.requests.iter().zip(&slow.requests) {
                prop_assert!(s.issue_ns >= f.issue_ns);
                prop_assert!(s.complete_ns >= f.complete_ns);
            }
            prop_assert!(slow.wall_ns >= fast.wall_ns);
        }

        #[test]
        fn issues_are_monotone_and_sync_chains_respected(
            t in arb_trace(), sptf in any::<bool>(), depth in 1usize..8, base in 0.0f64..1e6
        ) {
            let opts = ReplayOptions {
                discipline: if sptf { Discipline::Sptf } else { Discipline::Fcfs },
                depth: Some(depth),
                ..ReplayOptions::default()
            };
            let r = replay(&mut linear(base, 50.0), &t, &opts);
            for w in r.requests.windows(2) {
                prop_assert!(w[1].issue_ns >= w[0].issue_ns);
            }
            for (i, a) in anchors(&t).iter().enumerate() {
                let q = r.requests[i];
                prop_assert!(q.start_ns >= q.issue_ns && q.complete_ns >= q.start_ns);
                if let Anchor::AfterCompletion { j, .. } = *a {
                    prop_assert!(q.issue_ns >= r.requests[j].complete_ns);
                }
            }
            prop_assert!((r.io_busy_ns + r.cpu_not_overlapped_ns - r.wall_ns).abs() < 1e-3);
        }
    }
}
