//! CPU accounting of the traced program: how much CPU time its tasks had used at each instant.
//!
//! A trace captured on a loop device keeps, between a request's completion and the next issue,
//! the program's "think time". Measured as a wall-clock gap it also holds the time the program
//! waited for a CPU (another job on the machine) and the wake-up path, so the same experiment
//! predicted different totals depending on how busy the machine was at capture time. The
//! scheduler knows better: `sched_switch` events give every interval a task spent on a CPU. A
//! [`CpuTimeline`] sums those intervals over the traced program's tasks (the process and every
//! child or thread it forked), and [`stamp`] writes into every request the program's CPU time
//! used so far at its issue and at its completion ([`CpuStamps`]). The replay then takes as
//! think time the CPU time between two instants, not the wall time.
//!
//! ```
//! use layoutlab_trace::cpu::CpuTimeline;
//! // One task on a CPU from 10 to 30 and from 50 to 60 (ns).
//! let t = CpuTimeline::from_intervals([(10, 30), (50, 60)]);
//! assert_eq!(t.used_ns(0), 0);
//! assert_eq!(t.used_ns(20), 10);
//! assert_eq!(t.used_ns(40), 20);
//! assert_eq!(t.used_ns(55), 25);
//! assert_eq!(t.total_ns(), 30);
//! ```

use serde::{Deserialize, Serialize};

use crate::Trace;

/// The traced program's CPU time used (its tasks' on-CPU time summed, counted from the trace's
/// origin) at a request's issue and at its completion.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CpuStamps {
    /// CPU ns used when the request was issued.
    pub at_issue_ns: u64,
    /// CPU ns used when it completed (equal to `at_issue_ns` when the completion is unknown).
    pub at_complete_ns: u64,
}

/// On-CPU time of a set of tasks as a function of time: a step function of how many of them
/// ran, integrated. Times are whatever clock the intervals were given in (the rig uses
/// `CLOCK_MONOTONIC` ns).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CpuTimeline {
    /// Change points in time order: (time, CPU ns used up to that time, tasks running after).
    points: Vec<(u64, u64, u32)>,
}

impl CpuTimeline {
    /// Builds the timeline from on-CPU intervals `(start, end)` of any number of tasks (they
    /// may overlap: two threads on two CPUs count twice). Empty or reversed intervals count
    /// nothing.
    pub fn from_intervals(intervals: impl IntoIterator<Item = (u64, u64)>) -> CpuTimeline {
        let mut edges: Vec<(u64, i32)> = Vec::new();
        for (start, end) in intervals {
            if end > start {
                edges.push((start, 1));
                edges.push((end, -1));
            }
        }
        edges.sort_unstable();
        let mut points: Vec<(u64, u64, u32)> = Vec::with_capacity(edges.len());
        let (mut used, mut running, mut last) = (0u64, 0i64, 0u64);
        for (time, delta) in edges {
            used += (time - last) * running as u64;
            running += i64::from(delta);
            last = time;
            match points.last_mut() {
                Some(p) if p.0 == time => *p = (time, used, running as u32),
                _ => points.push((time, used, running as u32)),
            }
        }
        CpuTimeline { points }
    }

    /// CPU ns used up to instant `at`.
    pub fn used_ns(&self, at: u64) -> u64 {
        let i = self.points.partition_point(|p| p.0 <= at);
        if i == 0 {
            return 0;
        }
        let (time, used, running) = self.points[i - 1];
        used + (at - time) * u64::from(running)
    }

    /// CPU ns used over the whole timeline.
    pub fn total_ns(&self) -> u64 {
        self.points.last().map_or(0, |p| p.1)
    }

    /// First and last instant at which a task started or stopped running.
    pub fn span(&self) -> Option<(u64, u64)> {
        Some((self.points.first()?.0, self.points.last()?.0))
    }
}

/// Stamps every request of `trace` with the CPU time `timeline` says was used at its issue
/// and completion, counted from the trace's origin, which is instant `origin` on the
/// timeline's clock (request times are ns after it).
pub fn stamp(trace: &mut Trace, timeline: &CpuTimeline, origin: u64) {
    let base = timeline.used_ns(origin);
    for r in &mut trace.requests {
        let at_issue_ns = timeline.used_ns(origin + r.issue_ns) - base;
        let at_complete_ns = match r.complete_ns {
            Some(c) => timeline.used_ns(origin + c) - base,
            None => at_issue_ns,
        };
        r.cpu = Some(CpuStamps {
            at_issue_ns,
            at_complete_ns,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_tasks_add_up() {
        // Two threads: [0, 10) and [5, 15): 20 ns of CPU in 15 ns of time.
        let t = CpuTimeline::from_intervals([(0, 10), (5, 15)]);
        assert_eq!(t.used_ns(5), 5);
        assert_eq!(t.used_ns(10), 15);
        assert_eq!(t.used_ns(15), 20);
        assert_eq!(t.used_ns(1_000), 20);
        assert_eq!(t.total_ns(), 20);
        assert_eq!(t.span(), Some((0, 15)));
    }

    #[test]
    fn empty_and_reversed_intervals_count_nothing() {
        let t = CpuTimeline::from_intervals([(5, 5), (9, 3)]);
        assert_eq!(t.total_ns(), 0);
        assert_eq!(t.used_ns(100), 0);
        assert_eq!(t.span(), None);
    }

    #[test]
    fn stamps_count_from_the_origin() {
        use crate::{Flags, Op, Request};
        let mut trace = Trace::default();
        for (issue, complete) in [(0, 100), (300, 400)] {
            trace.requests.push(Request {
                issue_ns: issue,
                complete_ns: Some(complete),
                op: Op::Read,
                sector: 0,
                sectors: 8,
                flags: Flags::SYNC,
                tag: 0,
                cpu: None,
            });
        }
        // Origin at 1000 on the timeline's clock; the program runs 900..1010 (10 ns of it
        // while the first request is outstanding) and 1150..1250 (between the first completion and the second issue).
        let t = CpuTimeline::from_intervals([(900, 1010), (1150, 1250)]);
        stamp(&mut trace, &t, 1000);
        let s: Vec<_> = trace.requests.iter().map(|r| r.cpu.unwrap()).collect();
        assert_eq!(
            s[0],
            CpuStamps {
                at_issue_ns: 0,
                at_complete_ns: 10
            }
        );
        assert_eq!(
            s[1],
            CpuStamps {
                at_issue_ns: 110,
                at_complete_ns: 110
            }
        );
        // The think time between them is the 100 ns the program ran, not the 200 ns gap.
        assert_eq!(s[1].at_issue_ns - s[0].at_complete_ns, 100);
    }
}
