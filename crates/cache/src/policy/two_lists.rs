//! The mechanism Linux's file LRU is built from since 2.6.28 (mm/vmscan.c, mm/swap.c): an
//! inactive and an active list, a referenced bit, and reclaim from the inactive tail after
//! moving active pages down while the inactive list is "low". The two policies that use it
//! (`linux_26`, `linux_refault`) differ only in the flags and hooks they pass; this file
//! decides nothing about which pages matter.

use crate::list::PageList;
use std::collections::HashSet;

/// How the period's kernel differs from today's in the shared mechanism.
#[derive(Clone, Copy, Debug)]
pub struct Flavour {
    /// Deactivation clears the referenced bit (2.6.28-2.6.33: `page_referenced()` did
    /// `TestClearPageReferenced`; today's `folio_referenced()` leaves PG_referenced alone).
    pub deactivate_clears_referenced: bool,
    /// Inactive is low when `inactive × ratio < active`; `ratio` per the kernel's
    /// `inactive_is_low()` (today: `int_sqrt(10 × GB)`, 1 under 1 GB) or 2.6.3x's
    /// `inactive_file_is_low()` (`active > inactive`, ratio 1).
    pub inactive_ratio: usize,
}

/// Two lists and the referenced bit.
pub struct TwoLists {
    /// Pages it may hold.
    pub capacity: usize,
    flavour: Flavour,
    /// Inactive list, head (newest) at the front.
    pub inactive: PageList,
    /// Active list, head at the front.
    pub active: PageList,
    referenced: HashSet<u64>,
}

/// What a touch did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Touch {
    /// The page was resident; `activated` when this touch moved it to the active list.
    Hit {
        /// Moved from inactive to active.
        activated: bool,
    },
    /// Not resident.
    Miss,
}

impl TwoLists {
    /// Empty lists of `capacity` pages.
    pub fn new(capacity: usize, flavour: Flavour) -> TwoLists {
        TwoLists {
            capacity,
            flavour,
            inactive: PageList::new(),
            active: PageList::new(),
            referenced: HashSet::new(),
        }
    }

    /// Pages resident.
    pub fn resident(&self) -> usize {
        self.inactive.len() + self.active.len()
    }

    /// `mark_page_accessed()` on a resident page: inactive and referenced → activate;
    /// otherwise set referenced. `Touch::Miss` when not resident.
    pub fn touch(&mut self, page: u64) -> Touch {
        if self.active.contains(page) {
            self.referenced.insert(page);
            return Touch::Hit { activated: false };
        }
        if !self.inactive.contains(page) {
            return Touch::Miss;
        }
        if self.referenced.remove(&page) {
            self.inactive.remove(page);
            self.active.push_front(page);
            Touch::Hit { activated: true }
        } else {
            self.referenced.insert(page);
            Touch::Hit { activated: false }
        }
    }

    /// Make room for one page: deactivate while inactive is low, then reclaim the inactive
    /// tail (an unmapped clean file page goes whatever its referenced bit says:
    /// `page_check_references()` → RECLAIM_CLEAN). Returns the evicted page.
    pub fn make_room(&mut self) -> Option<u64> {
        if self.resident() < self.capacity {
            return None;
        }
        while self.inactive.len() * self.flavour.inactive_ratio < self.active.len()
            || self.inactive.is_empty()
        {
            let Some(p) = self.active.pop_back() else {
                break;
            };
            if self.flavour.deactivate_clears_referenced {
                self.referenced.remove(&p);
            }
            self.inactive.push_front(p);
        }
        let v = self.inactive.pop_back()?;
        self.referenced.remove(&v);
        Some(v)
    }

    /// Put a page straight on the active list (an activation of a page just loaded).
    pub fn activate(&mut self, page: u64) {
        if self.inactive.remove(page) {
            self.referenced.remove(&page);
            self.active.push_front(page);
        }
    }

    /// Load a missed page: to the inactive head, or straight to the active list
    /// (`activate`: a refault the kernel judged part of the workingset); either way the
    /// read's own `mark_page_accessed()` sets its referenced bit.
    pub fn insert(&mut self, page: u64, activate: bool) {
        if activate {
            self.active.push_front(page);
        } else {
            self.inactive.push_front(page);
        }
        self.referenced.insert(page);
    }
}
