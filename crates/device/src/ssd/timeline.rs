//! Busy intervals of a shared resource (a channel, the host link), booked out of order.

use std::collections::VecDeque;

/// A resource (a channel, the host link) used in intervals, in any order: NCQ and NVMe complete
/// out of order, so a transfer whose data is ready early does not wait behind one submitted
/// earlier whose data is not. Busy intervals are sorted, disjoint, and dropped once past.
#[derive(Clone, Debug, Default)]
pub(super) struct Timeline {
    pub(super) busy: VecDeque<(f64, f64)>,
}

impl Timeline {
    /// Forgets intervals that end by `now_ns` (no later request can be ready before it).
    pub(super) fn prune(&mut self, now_ns: f64) {
        while self.busy.front().is_some_and(|&(_, end)| end <= now_ns) {
            self.busy.pop_front();
        }
    }

    /// Books `dur_ns` in the earliest gap starting at or after `ready_ns`; returns its end.
    pub(super) fn reserve(&mut self, ready_ns: f64, dur_ns: f64) -> f64 {
        let mut t = ready_ns;
        let mut i = self.busy.partition_point(|&(_, end)| end <= t);
        while i < self.busy.len() {
            let (start, end) = self.busy[i];
            if start >= t + dur_ns {
                break;
            }
            t = t.max(end);
            i += 1;
        }
        let end = t + dur_ns;
        // Merge with touching neighbours so back-to-back transfers stay one interval.
        if i > 0 && self.busy[i - 1].1 == t {
            self.busy[i - 1].1 = end;
            if i < self.busy.len() && self.busy[i].0 == end {
                self.busy[i - 1].1 = self.busy[i].1;
                self.busy.remove(i);
            }
        } else if i < self.busy.len() && self.busy[i].0 == end {
            self.busy[i].0 = t;
        } else {
            self.busy.insert(i, (t, end));
        }
        end
    }
}
