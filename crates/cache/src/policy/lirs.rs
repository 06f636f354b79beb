//! LIRS, Low Inter-reference Recency Set (Jiang & Zhang, SIGMETRICS '02, section 3): a block
//! is kept by how recently it was used *twice* (its IRR), not once. LIR blocks (low IRR)
//! always stay; a small part of the cache, L_hirs, holds HIR blocks in list Q. Stack S orders
//! blocks by recency (LIR, resident HIR, and non-resident HIR whose history still counts) and
//! is pruned so its bottom is always LIR.
//!
//! Choices where the paper leaves it open: L_hirs is 1% of the cache, at least one page (the
//! paper's section 4 setting); S keeps non-resident HIR entries until pruning removes them
//! (the basic algorithm; no bound on S).

use crate::list::PageList;
use crate::Replacement;
use std::collections::HashMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Status {
    Lir,
    HirResident,
    HirNonResident,
}

/// A LIRS cache.
pub struct Lirs {
    capacity: usize,
    lir_max: usize,
    lir_count: usize,
    /// Stack S, top at the front.
    s: PageList,
    /// Resident HIR blocks; the paper's end (newest) at the front, its front (next victim)
    /// at the back.
    q: PageList,
    status: HashMap<u64, Status>,
}

impl Lirs {
    /// An empty cache of `capacity` ≥ 2 pages.
    pub fn new(capacity: usize) -> Lirs {
        let hir = (capacity / 100).max(1);
        Lirs {
            capacity,
            lir_max: capacity - hir,
            lir_count: 0,
            s: PageList::new(),
            q: PageList::new(),
            status: HashMap::new(),
        }
    }

    /// The LIR blocks now, top of S first (for tests).
    pub fn lir_blocks(&self) -> Vec<u64> {
        self.s
            .iter()
            .filter(|p| self.status[p] == Status::Lir)
            .collect()
    }

    /// Stack S, top first (for tests).
    pub fn stack(&self) -> Vec<u64> {
        self.s.iter().collect()
    }

    /// Remove HIR blocks from the bottom of S until an LIR block is there; a non-resident
    /// one leaves the cache's memory entirely.
    fn prune(&mut self) {
        while let Some(b) = self.s.back() {
            match self.status[&b] {
                Status::Lir => break,
                Status::HirResident => {
                    self.s.remove(b);
                }
                Status::HirNonResident => {
                    self.s.remove(b);
                    self.status.remove(&b);
                }
            }
        }
    }

    /// The LIR block at the bottom of S becomes a resident HIR block at the end of Q.
    fn demote_bottom(&mut self) {
        let b = self.s.pop_back().expect("S has an LIR bottom");
        debug_assert_eq!(self.status[&b], Status::Lir);
        self.status.insert(b, Status::HirResident);
        self.lir_count -= 1;
        self.q.push_front(b);
        self.prune();
    }
}

impl Replacement for Lirs {
    fn name(&self) -> &'static str {
        "lirs"
    }
    fn capacity_pages(&self) -> usize {
        self.capacity
    }
    fn resident_pages(&self) -> usize {
        self.lir_count + self.q.len()
    }
    fn access(&mut self, x: u64) -> bool {
        match self.status.get(&x).copied() {
            Some(Status::Lir) => {
                let was_bottom = self.s.back() == Some(x);
                self.s.to_front(x);
                if was_bottom {
                    self.prune();
                }
                true
            }
            Some(Status::HirResident) => {
                if self.s.contains(x) {
                    // Its IRR is now below the oldest LIR block's recency: it becomes LIR.
                    self.s.to_front(x);
                    self.q.remove(x);
                    self.status.insert(x, Status::Lir);
                    self.lir_count += 1;
                    self.demote_bottom();
                } else {
                    self.s.push_front(x);
                    self.q.to_front(x);
                }
                true
            }
            remembered => {
                if remembered.is_none() && self.lir_count < self.lir_max {
                    // Warm-up: the first blocks fill the LIR set.
                    self.s.push_front(x);
                    self.status.insert(x, Status::Lir);
                    self.lir_count += 1;
                    return false;
                }
                if self.resident_pages() >= self.capacity {
                    let v = self.q.pop_back().expect("a full cache has a resident HIR");
                    if self.s.contains(v) {
                        self.status.insert(v, Status::HirNonResident);
                    } else {
                        self.status.remove(&v);
                    }
                }
                if self.s.contains(x) {
                    self.s.to_front(x);
                    self.status.insert(x, Status::Lir);
                    self.lir_count += 1;
                    self.demote_bottom();
                } else {
                    self.s.push_front(x);
                    self.status.insert(x, Status::HirResident);
                    self.q.push_front(x);
                }
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::lru::Lru;
    use crate::simulate;

    const A: u64 = 1;
    const B: u64 = 2;
    const C: u64 = 3;
    const D: u64 = 4;

    #[test]
    fn worked_by_hand_from_section_3() {
        // 3 pages: L_lirs = 2, L_hirs = 1 (the paper's example sizes). A, B fill the LIR set;
        // C is resident HIR; D evicts C (C stays in S, non-resident); C's second touch has
        // an IRR below B's recency: C becomes LIR (evicting D, which stays in S), A, the
        // bottom LIR, becomes resident HIR and is pruned from S: S = [C, D, B].
        let mut l = Lirs::new(3);
        let first = simulate(&mut l, &[A, B, C, D, C]);
        assert_eq!(first.hit, [false; 5]);
        assert_eq!(l.stack(), [C, D, B]);
        assert_eq!(l.lir_blocks(), [C, B]);
        // A hits (resident HIR, not in S: stays HIR). B hits at the bottom: pruning drops
        // non-resident D. D misses (evicting A, which is in S). A misses and, being in S,
        // becomes LIR: C, the bottom LIR, is demoted and pruned.
        let then = simulate(&mut l, &[A, B, D, A]);
        assert_eq!(then.hit, [true, true, false, false]);
        assert_eq!(l.stack(), [A, D, B]);
        assert_eq!(l.lir_blocks(), [A, B]);
        assert_eq!(l.resident_pages(), 3);
    }

    #[test]
    fn a_loop_larger_than_the_cache_keeps_its_lir_part() {
        // The paper's motivating weakness of LRU: a loop over 11 blocks with 10 pages. LRU
        // misses every access; LIRS keeps 9 LIR blocks and hits them on every later pass.
        let pages: Vec<u64> = (0..20).flat_map(|_| 0..11u64).collect();
        assert_eq!(
            simulate(&mut Lru::new(10), &pages).misses(),
            pages.len() as u64
        );
        let hits = pages.len() as u64 - simulate(&mut Lirs::new(10), &pages).misses();
        assert!(hits >= 19 * 8, "{hits}");
    }
}
