//! The host queue in front of a device model: FCFS or SPTF at a depth. Trace replay
//! (`replay.rs`) and the synthetic jobs (`job.rs`) both drive it; it knows neither.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use serde::{Deserialize, Serialize};

use crate::{Device, IoRequest};

/// How the queue in front of the device picks the next request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Discipline {
    /// First come, first served: requests reach the device in arrival order, up to `depth`
    /// outstanding at once (so a parallel device such as an SSD overlaps them).
    #[default]
    Fcfs,
    /// Shortest positioning time first: whenever the device finishes a request it is handed,
    /// among the `depth` oldest waiting requests, the one with the smallest
    /// [`Device::positioning_ns`]; one request at a time (a single actuator, as NCQ on a disk).
    Sptf,
}

/// A request handed to the device by the [`Scheduler`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Dispatched {
    /// The caller's id of the request.
    pub id: usize,
    /// When it arrived at the queue.
    pub arrival_ns: f64,
    /// When the device was handed it.
    pub start_ns: f64,
    /// When the device completed it.
    pub complete_ns: f64,
}

/// The host queue in front of a device: FCFS or SPTF at a depth. Shared by trace replay and the
/// synthetic jobs.
///
/// Time-driven by the caller: push arrivals in time order, and call [`Scheduler::dispatch`]
/// at [`Scheduler::next_dispatch_ns`] whenever no arrival comes earlier.
pub struct Scheduler {
    discipline: Discipline,
    depth: usize,
    pending: VecDeque<(usize, f64, IoRequest)>,
    /// Completion times (as f64 bits: non-negative floats order like their bits) of requests
    /// handed to the device and not yet complete at the last dispatch.
    outstanding: BinaryHeap<Reverse<u64>>,
    last_complete_ns: f64,
}

impl Scheduler {
    /// A queue with `discipline` and `depth` (at least 1).
    pub fn new(discipline: Discipline, depth: usize) -> Scheduler {
        Scheduler {
            discipline,
            depth: depth.max(1),
            pending: VecDeque::new(),
            outstanding: BinaryHeap::new(),
            last_complete_ns: 0.0,
        }
    }

    /// A request arrives at `arrival_ns` (not earlier than any earlier arrival or dispatch).
    pub fn push(&mut self, id: usize, arrival_ns: f64, req: IoRequest) {
        self.pending.push_back((id, arrival_ns, req));
    }

    /// Whether requests wait in the queue.
    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// The earliest time at or after `now_ns` when the queue can hand a request to the device,
    /// or `None` if nothing waits.
    pub fn next_dispatch_ns(&mut self, now_ns: f64) -> Option<f64> {
        if self.pending.is_empty() {
            return None;
        }
        let t = match self.discipline {
            Discipline::Sptf => self.last_complete_ns.max(now_ns),
            Discipline::Fcfs => {
                while let Some(&Reverse(bits)) = self.outstanding.peek() {
                    if f64::from_bits(bits) > now_ns {
                        break;
                    }
                    self.outstanding.pop();
                }
                if self.outstanding.len() < self.depth {
                    now_ns
                } else {
                    // Full: the earliest outstanding completion frees a slot.
                    f64::from_bits(self.outstanding.peek().map(|r| r.0).unwrap_or(0))
                }
            }
        };
        Some(t)
    }

    /// Hands one waiting request to `dev` at `at_ns` (from [`Scheduler::next_dispatch_ns`]).
    /// Returns `None` if nothing waits.
    pub fn dispatch(&mut self, dev: &mut dyn Device, at_ns: f64) -> Option<Dispatched> {
        let k = match self.discipline {
            Discipline::Fcfs => 0,
            Discipline::Sptf => {
                let window = self.pending.len().min(self.depth);
                let mut best = 0;
                let mut best_ns = f64::INFINITY;
                for (k, (_, _, req)) in self.pending.iter().take(window).enumerate() {
                    let p = dev.positioning_ns(at_ns, req);
                    // Strictly smaller: ties go to the oldest request.
                    if p < best_ns {
                        best_ns = p;
                        best = k;
                    }
                }
                best
            }
        };
        let (id, arrival_ns, req) = self.pending.remove(k)?;
        let start_ns = at_ns.max(arrival_ns);
        let complete_ns = dev.submit(start_ns, &req).max(start_ns);
        self.last_complete_ns = complete_ns;
        if self.discipline == Discipline::Fcfs {
            self.outstanding.push(Reverse(complete_ns.to_bits()));
        }
        Some(Dispatched {
            id,
            arrival_ns,
            start_ns,
            complete_ns,
        })
    }
}
