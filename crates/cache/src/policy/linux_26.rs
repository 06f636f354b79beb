//! Linux 2.6.28-2.6.33's file LRU, the period's (mm/vmscan.c, mm/swap.c of 2.6.32): a page
//! read enters the inactive list with its referenced bit set by the read's
//! `mark_page_accessed()`; a second touch while inactive activates it. Reclaim takes the
//! inactive tail; while `inactive_file_is_low()` (active > inactive) it first moves the
//! active tail to the inactive head, clearing the referenced bit (`page_referenced()` did
//! `TestClearPageReferenced` then) — for unmapped file pages the active list is a FIFO.
//!
//! Simplifications: one page at a time (the kernel scans SWAP_CLUSTER_MAX = 32 pages a batch
//! and in proportion to list sizes); no mapped or dirty pages (random reads have none).

use super::two_lists::{Flavour, Touch, TwoLists};
use crate::Replacement;

/// The 2.6.3x file LRU.
pub struct Linux26 {
    lists: TwoLists,
}

impl Linux26 {
    /// An empty cache of `capacity` pages.
    pub fn new(capacity: usize) -> Linux26 {
        Linux26 {
            lists: TwoLists::new(
                capacity,
                Flavour {
                    deactivate_clears_referenced: true,
                    inactive_ratio: 1,
                },
            ),
        }
    }

    /// (inactive, active) pages now (for tests).
    pub fn list_sizes(&self) -> (usize, usize) {
        (self.lists.inactive.len(), self.lists.active.len())
    }
}

impl Replacement for Linux26 {
    fn name(&self) -> &'static str {
        "linux-2.6.3x"
    }
    fn capacity_pages(&self) -> usize {
        self.lists.capacity
    }
    fn resident_pages(&self) -> usize {
        self.lists.resident()
    }
    fn access(&mut self, page: u64) -> bool {
        match self.lists.touch(page) {
            Touch::Hit { .. } => true,
            Touch::Miss => {
                self.lists.make_room();
                self.lists.insert(page, false);
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simulate;

    #[test]
    fn worked_by_hand_second_touch_activates_and_single_use_pages_pass_by() {
        // 4 pages. 1 2 3 4 miss into inactive (referenced by the read); 1 and 2 hit and
        // activate: inactive [4 3], active [2 1].
        let mut c = Linux26::new(4);
        let o = simulate(&mut c, &[1, 2, 3, 4, 1, 2]);
        assert_eq!(o.misses(), 4);
        assert_eq!(c.list_sizes(), (2, 2));
        // 5: active (2) is not > inactive (2): the inactive tail 3 goes. 1 hits on the
        // active list. 6 evicts 4, 7 evicts 5, 3 (gone) evicts 6.
        let o = simulate(&mut c, &[5, 1, 6, 7, 3]);
        assert_eq!(o.hit, [false, true, false, false, false]);
        // 1 and 2 survived five misses of single-use pages; 6 did not.
        assert!(c.access(1) && c.access(2));
        assert!(!c.access(6));
    }

    #[test]
    fn deactivation_clears_the_referenced_bit() {
        // 4 pages: active [2 1], inactive [4 3]; 1 hits on active (bit set); 4's second
        // touch activates it: active [4 2 1], inactive [3].
        let mut c = Linux26::new(4);
        simulate(&mut c, &[1, 1, 2, 2, 3, 4, 1, 4]);
        assert_eq!(c.list_sizes(), (1, 3));
        // 6: inactive 1 < active 3: 1 moves down, its bit cleared; 3 goes.
        assert!(!c.access(6));
        assert_eq!(c.list_sizes(), (2, 2));
        // One touch only re-references 1 (today's kernel would re-activate it: see
        // linux_refault's test of the same stream).
        assert!(c.access(1));
        assert_eq!(c.list_sizes(), (2, 2));
    }
}
