//! Today's Linux file LRU without the multi-generational LRU (this machine's 6.18 has no
//! /sys/kernel/mm/lru_gen): the two lists of `two_lists.rs` plus refault-distance activation
//! (mm/workingset.c, Weiner 2014). Each eviction and each activation ages the lruvec by one
//! (`workingset_age_nonresident()`); an evicted page leaves a shadow holding the age at its
//! eviction. When it is read again, its refault distance — the age now minus the shadow's —
//! is the number of pages that had to go, or be activated, since: if it is no more than the
//! active list's size (`workingset_test_recent()`: with no swap, NR_ACTIVE_FILE only) the page
//! would have stayed with that much more inactive space, so it enters the active list at once.
//!
//! Metadata read through the buffer cache is activated by its first read: since Linux 3.15
//! `grow_dev_page()`/`grow_dev_folio()` creates the block device's page with FGP_ACCESSED
//! (referenced), and the lookup that follows, `__find_get_block_slow()`, marks it accessed
//! again (fs/buffer.c) — a second mark, which activates. In 2.6.32 the page was created
//! unmarked and `touch_buffer()` only set its referenced bit.
//!
//! Differences from 2.6.3x kept here: deactivation keeps PG_referenced (`folio_referenced()`
//! no longer clears it), and `inactive_is_low()` uses `int_sqrt(10 × GB)` as the ratio.
//! Simplifications: one page a reclaim step; the extra deactivation the kernel does after
//! refaults (`sc->may_deactivate`) is not modelled.
//!
//! Shadow entries: [`LinuxRefault::new`] keeps every one. The kernel's shadow-node shrinker
//! (`count_shadow_nodes()`, mm/workingset.c) frees xarray nodes holding only shadows, oldest
//! first, beyond `pages >> 3` nodes, `pages` being the memcg's LRU pages plus its slab pages;
//! [`LinuxRefault::with_shadow_limit`] models that bound, one shadow a node (random reads of a
//! large file or device leave each evicted page alone in its 64-slot node). Whether the bound
//! matters for the random-read stream is measured in docs/experiments/cache-policies.md.

use super::two_lists::{Flavour, Touch, TwoLists};
use crate::Replacement;
use std::collections::{HashMap, VecDeque};

/// Today's Linux file LRU.
pub struct LinuxRefault {
    lists: TwoLists,
    /// Evictions plus activations so far (the lruvec's `nonresident_age`).
    age: u64,
    /// Age at eviction of each evicted page.
    shadows: HashMap<u64, u64>,
    /// Shadows in the order they were made, for trimming the oldest (entries whose page
    /// refaulted since are skipped).
    shadow_order: VecDeque<(u64, u64)>,
    /// Most shadows kept (`None`: all).
    shadow_limit: Option<usize>,
    /// Refaults activated (for tests and reports).
    pub activated_refaults: u64,
}

/// `int_sqrt(10 × GB)` of `inactive_is_low()`, 1 below 1 GB.
pub fn inactive_ratio(capacity_pages: usize) -> usize {
    let gb = (capacity_pages as u64 * 4096) >> 30;
    if gb == 0 {
        1
    } else {
        ((10 * gb) as f64).sqrt() as usize
    }
}

impl LinuxRefault {
    /// An empty cache of `capacity` pages.
    pub fn new(capacity: usize) -> LinuxRefault {
        LinuxRefault {
            lists: TwoLists::new(
                capacity,
                Flavour {
                    deactivate_clears_referenced: false,
                    inactive_ratio: inactive_ratio(capacity),
                },
            ),
            age: 0,
            shadows: HashMap::new(),
            shadow_order: VecDeque::new(),
            shadow_limit: None,
            activated_refaults: 0,
        }
    }

    /// As [`LinuxRefault::new`], keeping at most `limit` shadows, the newest: the shadow
    /// shrinker's bound (`count_shadow_nodes()`: the memcg's LRU and slab pages `>> 3`).
    pub fn with_shadow_limit(capacity: usize, limit: usize) -> LinuxRefault {
        LinuxRefault {
            shadow_limit: Some(limit),
            ..LinuxRefault::new(capacity)
        }
    }

    /// Shadows held now (for tests).
    pub fn shadows(&self) -> usize {
        self.shadows.len()
    }

    /// Record `page`'s eviction at the current age, trimming the oldest beyond the limit.
    fn leave_shadow(&mut self, page: u64) {
        self.shadows.insert(page, self.age);
        let Some(limit) = self.shadow_limit else {
            return;
        };
        self.shadow_order.push_back((page, self.age));
        while self.shadows.len() > limit {
            let Some((p, at)) = self.shadow_order.pop_front() else {
                break;
            };
            if self.shadows.get(&p) == Some(&at) {
                self.shadows.remove(&p);
            }
        }
    }

    /// (inactive, active) pages now (for tests).
    pub fn list_sizes(&self) -> (usize, usize) {
        (self.lists.inactive.len(), self.lists.active.len())
    }
}

impl Replacement for LinuxRefault {
    fn name(&self) -> &'static str {
        "linux-6"
    }
    fn capacity_pages(&self) -> usize {
        self.lists.capacity
    }
    fn resident_pages(&self) -> usize {
        self.lists.resident()
    }
    fn access_buffer(&mut self, page: u64) -> bool {
        if self.access(page) {
            return true;
        }
        // The lookup after `grow_dev_folio()`: a second mark of a referenced page.
        if let super::two_lists::Touch::Hit { activated: true } = self.lists.touch(page) {
            self.age += 1;
        }
        false
    }
    fn access(&mut self, page: u64) -> bool {
        match self.lists.touch(page) {
            Touch::Hit { activated } => {
                if activated {
                    self.age += 1;
                }
                true
            }
            Touch::Miss => {
                if let Some(v) = self.lists.make_room() {
                    self.leave_shadow(v);
                    self.age += 1;
                }
                // The distance is measured before this page's own load ages anything.
                let recent = self
                    .shadows
                    .remove(&page)
                    .is_some_and(|at| self.age - at <= self.lists.active.len() as u64);
                if recent {
                    self.activated_refaults += 1;
                    self.age += 1;
                }
                self.lists.insert(page, recent);
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
    fn ratio_follows_inactive_is_low() {
        assert_eq!(inactive_ratio(1000), 1);
        assert_eq!(inactive_ratio(262_144), 3); // 1 GB: int_sqrt(10)
        assert_eq!(inactive_ratio(262_144 * 10), 10); // 10 GB: int_sqrt(100)
    }

    #[test]
    fn worked_by_hand_a_short_refault_distance_activates() {
        // 4 pages. 1 2 touched twice: active [2 1] (age 2). 3 4 fill inactive [4 3].
        let mut c = LinuxRefault::new(4);
        simulate(&mut c, &[1, 1, 2, 2, 3, 4]);
        assert_eq!((c.list_sizes(), c.age), ((2, 2), 2));
        // 5 evicts 3 (shadow age 2; age 3). 3 again: evicts 4 (shadow 3, age 4); its
        // distance is 4 - 2 = 2 ≤ 2 active pages: it enters the active list (age 5).
        assert_eq!(simulate(&mut c, &[5, 3]).hit, [false, false]);
        assert_eq!(c.activated_refaults, 1);
        assert_eq!(c.list_sizes(), (1, 3));
        // 1 hits on the active list: its referenced bit is set. 6: active 3 > inactive 1, so
        // the active tail, 1, moves down — keeping the bit — and the inactive tail 5 goes.
        assert!(c.access(1));
        assert!(!c.access(6));
        assert_eq!(c.list_sizes(), (2, 2));
        // 1 kept PG_referenced through deactivation: one touch re-activates it (2.6.3x
        // would have cleared the bit and only re-referenced it).
        assert!(c.access(1));
        assert_eq!(c.list_sizes(), (1, 3));
    }

    #[test]
    fn a_metadata_block_is_active_after_its_first_read() {
        // 4 pages: an indirect block read once is active at once (two marks); a data page
        // read once is inactive. Five single-use data pages then pass: the block stays.
        let mut c = LinuxRefault::new(4);
        assert!(!c.access_buffer(100));
        assert_eq!(c.list_sizes(), (0, 1));
        assert!(!c.access(1));
        assert_eq!(c.list_sizes(), (1, 1));
        for p in 2..7 {
            assert!(!c.access(p));
        }
        assert!(c.access_buffer(100));
        // The period's kernel only references it: the same stream evicts it.
        let mut old = super::super::linux_26::Linux26::new(4);
        assert!(!old.access_buffer(100));
        assert_eq!(old.list_sizes(), (1, 0));
        for p in 1..7 {
            old.access(p);
        }
        assert!(!old.access_buffer(100));
    }

    #[test]
    fn a_trimmed_shadow_cannot_activate_its_refault() {
        // The hand-worked stream above with the shadow of 3 (the older of the two made)
        // trimmed: a limit of one shadow keeps only 4's, so 3 refaults inactive.
        let mut c = LinuxRefault::with_shadow_limit(4, 1);
        simulate(&mut c, &[1, 1, 2, 2, 3, 4, 5, 3]);
        assert_eq!(c.activated_refaults, 0);
        assert_eq!((c.list_sizes(), c.shadows()), ((2, 2), 1));
        // With room for both shadows it activates, as unbounded.
        let mut c = LinuxRefault::with_shadow_limit(4, 2);
        simulate(&mut c, &[1, 1, 2, 2, 3, 4, 5, 3]);
        assert_eq!(c.activated_refaults, 1);
    }

    #[test]
    fn a_long_refault_distance_does_not_activate() {
        // 2 pages: 1 is read, evicted, then many single-use pages pass before it returns.
        let mut c = LinuxRefault::new(2);
        let mut s = vec![1u64];
        s.extend(10..40);
        s.push(1);
        simulate(&mut c, &s);
        assert_eq!(c.activated_refaults, 0);
    }
}
