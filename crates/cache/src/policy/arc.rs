//! ARC, the Adaptive Replacement Cache (Megiddo & Modha, FAST '03, Fig. 4): T1 holds pages
//! seen once recently, T2 pages seen at least twice; ghost lists B1 and B2 remember what each
//! evicted, and a hit in a ghost list moves the target size `p` of T1 towards the list that
//! would have kept the page. The paper leaves nothing open: `p` starts at 0 and adapts by
//! the ratios δ1 = max(1, |B2|/|B1|), δ2 = max(1, |B1|/|B2|) (real numbers, as written).

use crate::list::PageList;
use crate::Replacement;

/// An ARC cache.
pub struct Arc {
    capacity: usize,
    /// Target size of T1.
    p: f64,
    t1: PageList,
    t2: PageList,
    b1: PageList,
    b2: PageList,
}

impl Arc {
    /// An empty cache of `capacity` pages.
    pub fn new(capacity: usize) -> Arc {
        Arc {
            capacity,
            p: 0.0,
            t1: PageList::new(),
            t2: PageList::new(),
            b1: PageList::new(),
            b2: PageList::new(),
        }
    }

    /// Target size of T1 now (for tests).
    pub fn target_t1(&self) -> f64 {
        self.p
    }

    /// (|T1|, |T2|, |B1|, |B2|) now (for tests).
    pub fn sizes(&self) -> (usize, usize, usize, usize) {
        (self.t1.len(), self.t2.len(), self.b1.len(), self.b2.len())
    }

    /// REPLACE(x, p) of the paper: demote T1's LRU page to B1, or T2's to B2.
    fn replace(&mut self, in_b2: bool) {
        let t1 = self.t1.len() as f64;
        if !self.t1.is_empty() && ((in_b2 && t1 == self.p) || t1 > self.p) {
            let v = self.t1.pop_back().expect("non-empty");
            self.b1.push_front(v);
        } else if let Some(v) = self.t2.pop_back() {
            self.b2.push_front(v);
        } else if let Some(v) = self.t1.pop_back() {
            // T2 empty and |T1| ≤ p: the paper's case cannot arise with |T1|+|T2| = c, but
            // keep the cache bounded all the same.
            self.b1.push_front(v);
        }
    }
}

impl Replacement for Arc {
    fn name(&self) -> &'static str {
        "arc"
    }
    fn capacity_pages(&self) -> usize {
        self.capacity
    }
    fn resident_pages(&self) -> usize {
        self.t1.len() + self.t2.len()
    }
    fn access(&mut self, x: u64) -> bool {
        let c = self.capacity as f64;
        // Case I: a hit in T1 or T2.
        if self.t1.remove(x) || self.t2.remove(x) {
            self.t2.push_front(x);
            return true;
        }
        // Case II: a ghost hit in B1 — recency would have kept it: grow T1's target.
        if self.b1.contains(x) {
            let d = (self.b2.len() as f64 / self.b1.len() as f64).max(1.0);
            self.p = (self.p + d).min(c);
            self.replace(false);
            self.b1.remove(x);
            self.t2.push_front(x);
            return false;
        }
        // Case III: a ghost hit in B2 — frequency would have: shrink T1's target.
        if self.b2.contains(x) {
            let d = (self.b1.len() as f64 / self.b2.len() as f64).max(1.0);
            self.p = (self.p - d).max(0.0);
            self.replace(true);
            self.b2.remove(x);
            self.t2.push_front(x);
            return false;
        }
        // Case IV: not remembered at all.
        let l1 = self.t1.len() + self.b1.len();
        let total = l1 + self.t2.len() + self.b2.len();
        if l1 == self.capacity {
            if self.t1.len() < self.capacity {
                self.b1.pop_back();
                self.replace(false);
            } else {
                self.t1.pop_back();
            }
        } else if total >= self.capacity {
            if total == 2 * self.capacity {
                self.b2.pop_back();
            }
            self.replace(false);
        }
        self.t1.push_front(x);
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worked_by_hand_from_fig_4() {
        // c = 2. 1, 2 miss into T1. 1 hits → T2 = [1], T1 = [2]. 3 misses (case IV-B,
        // |L1| = 1 < 2, total 2): REPLACE with p = 0 demotes T1's 2 to B1; T1 = [3].
        let mut a = Arc::new(2);
        for (x, hit) in [(1, false), (2, false), (1, true), (3, false)] {
            assert_eq!(a.access(x), hit, "access {x}");
        }
        assert_eq!(a.sizes(), (1, 1, 1, 0));
        // 2 again: a ghost hit in B1 (case II): p = 0 + max(1, 0/1) = 1; REPLACE: |T1| = 1
        // is not > p = 1, so T2's 1 goes to B2; 2 enters T2.
        assert!(!a.access(2));
        assert_eq!(a.target_t1(), 1.0);
        assert_eq!(a.sizes(), (1, 1, 0, 1));
        // 1 again: a ghost hit in B2 (case III): p = 1 - max(1, 0/1) = 0; REPLACE: |T1| = 1
        // > 0, so T1's 3 goes to B1; 1 enters T2: T2 = [1, 2].
        assert!(!a.access(1));
        assert_eq!(a.target_t1(), 0.0);
        assert_eq!(a.sizes(), (0, 2, 1, 0));
        assert!(a.access(2) && a.access(1));
    }

    #[test]
    fn a_scan_does_not_flush_pages_used_twice() {
        // Pages 1 and 2 are used twice (T2); a long scan of new pages passes through T1
        // and leaves them resident, where LRU would lose them.
        let mut a = Arc::new(4);
        for x in [1, 2, 1, 2] {
            a.access(x);
        }
        for x in 100..200 {
            a.access(x);
        }
        assert!(a.access(1) && a.access(2));
    }
}
