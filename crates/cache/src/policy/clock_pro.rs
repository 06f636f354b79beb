//! CLOCK-Pro (Jiang, Chen & Zhang, USENIX ATC '05, section 3): LIRS's reuse-distance idea on
//! one clock. Resident pages are hot or cold; a cold page starts a *test period* when loaded
//! (or when HAND_cold finds it referenced), and a second use within it makes the page hot. A
//! cold page evicted during its test period stays on the clock as non-resident metadata, so
//! a quick re-fault still counts. Three hands sweep the clock: HAND_cold evicts cold pages,
//! HAND_hot demotes unreferenced hot pages and ends test periods it passes, HAND_test ends test
//! periods (removing non-resident pages) when more than `m` are remembered. The target number
//! of cold pages `m_c` adapts: +1 when a page is re-accessed in its test period while
//! non-resident, −1 when a test period ends without one.
//!
//! Choices where the paper leaves it open: `m_c` starts at 1 and stays in [1, m − 1]; a page
//! loaded by a miss starts unreferenced (the fault is not counted as a reference, as CLOCK
//! does); new and promoted pages go to the list head, just behind HAND_hot.

use crate::Replacement;
use std::collections::HashMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Hot,
    Cold,
    /// Cold, evicted, still in its test period.
    NonResident,
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    kind: Kind,
    referenced: bool,
    in_test: bool,
    prev: u64,
    next: u64,
}

/// A CLOCK-Pro cache.
pub struct ClockPro {
    capacity: usize,
    /// Target number of resident cold pages.
    cold_target: usize,
    clock: HashMap<u64, Entry>,
    hand_hot: Option<u64>,
    hand_cold: Option<u64>,
    hand_test: Option<u64>,
    hot: usize,
    cold: usize,
    non_resident: usize,
}

impl ClockPro {
    /// An empty cache of `capacity` ≥ 2 pages.
    pub fn new(capacity: usize) -> ClockPro {
        ClockPro {
            capacity,
            cold_target: 1,
            clock: HashMap::new(),
            hand_hot: None,
            hand_cold: None,
            hand_test: None,
            hot: 0,
            cold: 0,
            non_resident: 0,
        }
    }

    /// (hot, resident cold, non-resident) pages and the cold target now (for tests).
    pub fn counts(&self) -> (usize, usize, usize, usize) {
        (self.hot, self.cold, self.non_resident, self.cold_target)
    }

    /// Whether `page` is resident and hot (for tests).
    pub fn is_hot(&self, page: u64) -> bool {
        self.clock.get(&page).is_some_and(|e| e.kind == Kind::Hot)
    }

    fn count(&mut self, kind: Kind, delta: isize) {
        let c = match kind {
            Kind::Hot => &mut self.hot,
            Kind::Cold => &mut self.cold,
            Kind::NonResident => &mut self.non_resident,
        };
        *c = c.checked_add_signed(delta).expect("count stays ≥ 0");
    }

    /// Unlinks `page`; a hand on it moves to the next page (or none on an empty clock).
    fn unlink(&mut self, page: u64) -> Entry {
        let e = self.clock.remove(&page).expect("on the clock");
        let next = if e.next == page { None } else { Some(e.next) };
        if e.next != page {
            self.clock.get_mut(&e.prev).expect("linked").next = e.next;
            self.clock.get_mut(&e.next).expect("linked").prev = e.prev;
        }
        for hand in [&mut self.hand_hot, &mut self.hand_cold, &mut self.hand_test] {
            if *hand == Some(page) {
                *hand = next;
            }
        }
        self.count(e.kind, -1);
        e
    }

    /// Links `page` at the list head: just behind HAND_hot, the last place it reaches.
    fn link_at_head(&mut self, page: u64, kind: Kind, in_test: bool) {
        let entry = |prev, next| Entry {
            kind,
            referenced: false,
            in_test,
            prev,
            next,
        };
        match self.hand_hot {
            None => {
                self.clock.insert(page, entry(page, page));
                self.hand_hot = Some(page);
                self.hand_cold = Some(page);
                self.hand_test = Some(page);
            }
            Some(h) => {
                let prev = self.clock[&h].prev;
                self.clock.insert(page, entry(prev, h));
                self.clock.get_mut(&prev).expect("linked").next = page;
                self.clock.get_mut(&h).expect("linked").prev = page;
            }
        }
        self.count(kind, 1);
    }

    fn next_of(&self, page: u64) -> u64 {
        self.clock[&page].next
    }

    /// A test period ends without a re-access: the cold target shrinks.
    fn test_ended(&mut self) {
        self.cold_target = self.cold_target.saturating_sub(1).max(1);
    }

    /// HAND_hot: turn one unreferenced hot page cold, clearing references and ending the
    /// test periods it passes.
    fn run_hand_hot(&mut self) {
        let mut guard = 2 * self.clock.len() + 2;
        while self.hot > 0 && guard > 0 {
            guard -= 1;
            let p = self.hand_hot.expect("a non-empty clock has hands");
            let e = self.clock[&p];
            match e.kind {
                Kind::Hot if e.referenced => {
                    self.clock.get_mut(&p).expect("on").referenced = false;
                    self.hand_hot = Some(self.next_of(p));
                }
                Kind::Hot => {
                    let m = self.clock.get_mut(&p).expect("on");
                    m.kind = Kind::Cold;
                    m.in_test = false;
                    self.hot -= 1;
                    self.cold += 1;
                    self.hand_hot = Some(self.next_of(p));
                    return;
                }
                Kind::Cold => {
                    if e.in_test {
                        self.clock.get_mut(&p).expect("on").in_test = false;
                        self.test_ended();
                    }
                    self.hand_hot = Some(self.next_of(p));
                }
                Kind::NonResident => {
                    self.unlink(p);
                    self.test_ended();
                }
            }
        }
    }

    /// HAND_test: forget one non-resident page, ending the test periods it passes.
    fn run_hand_test(&mut self) {
        let mut guard = 2 * self.clock.len() + 2;
        while self.non_resident > 0 && guard > 0 {
            guard -= 1;
            let p = self.hand_test.expect("a non-empty clock has hands");
            let e = self.clock[&p];
            match e.kind {
                Kind::NonResident => {
                    self.unlink(p);
                    self.test_ended();
                    return;
                }
                Kind::Cold if e.in_test => {
                    self.clock.get_mut(&p).expect("on").in_test = false;
                    self.test_ended();
                    self.hand_test = Some(self.next_of(p));
                }
                _ => self.hand_test = Some(self.next_of(p)),
            }
        }
    }

    /// HAND_cold: free one resident page.
    fn run_hand_cold(&mut self) {
        let mut guard = 4 * self.clock.len() + 4;
        loop {
            assert!(guard > 0, "CLOCK-Pro: HAND_cold found no page to evict");
            guard -= 1;
            if self.cold == 0 {
                self.run_hand_hot();
            }
            let p = self.hand_cold.expect("a full cache has hands");
            let e = self.clock[&p];
            if e.kind != Kind::Cold {
                self.hand_cold = Some(self.next_of(p));
                continue;
            }
            if !e.referenced {
                if e.in_test {
                    let m = self.clock.get_mut(&p).expect("on");
                    m.kind = Kind::NonResident;
                    self.cold -= 1;
                    self.non_resident += 1;
                    self.hand_cold = Some(self.next_of(p));
                    if self.non_resident > self.capacity {
                        self.run_hand_test();
                    }
                } else {
                    self.unlink(p);
                }
                return;
            }
            // Referenced: in its test period it proves itself hot; otherwise a test starts.
            self.unlink(p);
            if e.in_test {
                self.link_at_head(p, Kind::Hot, false);
                if self.hot > self.capacity - self.cold_target {
                    self.run_hand_hot();
                }
            } else {
                self.link_at_head(p, Kind::Cold, true);
            }
        }
    }
}

impl Replacement for ClockPro {
    fn name(&self) -> &'static str {
        "clock-pro"
    }
    fn capacity_pages(&self) -> usize {
        self.capacity
    }
    fn resident_pages(&self) -> usize {
        self.hot + self.cold
    }
    fn access(&mut self, page: u64) -> bool {
        if let Some(e) = self.clock.get_mut(&page) {
            if e.kind != Kind::NonResident {
                e.referenced = true;
                return true;
            }
        }
        if self.hot + self.cold >= self.capacity {
            self.run_hand_cold();
        }
        match self.clock.get(&page).map(|e| e.kind) {
            Some(Kind::NonResident) => {
                // Re-accessed within its test period: more room for cold pages pays.
                self.cold_target = (self.cold_target + 1).min(self.capacity - 1);
                self.unlink(page);
                self.link_at_head(page, Kind::Hot, false);
                if self.hot > self.capacity - self.cold_target {
                    self.run_hand_hot();
                }
            }
            _ => self.link_at_head(page, Kind::Cold, true),
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::lru::Lru;
    use crate::simulate;

    #[test]
    fn worked_by_hand_a_reaccess_in_the_test_period_makes_a_page_hot() {
        // 3 pages. 1 2 3 load cold, each in its test period; 1 is referenced.
        let mut c = ClockPro::new(3);
        assert_eq!(
            simulate(&mut c, &[1, 2, 3, 1]).hit,
            [false, false, false, true]
        );
        assert_eq!(c.counts(), (0, 3, 0, 1));
        // 4: HAND_cold starts at 1: referenced and in test → hot, moved to the head (hot 1 ≤
        // m_h = 2); then 2: unreferenced, in test → non-resident. 4 loads cold.
        assert!(!c.access(4));
        assert!(c.is_hot(1));
        assert_eq!(c.counts(), (1, 2, 1, 1));
        // Clock order from HAND_hot: 2 (non-resident), 3, 1, 4; HAND_cold is at 3.
        // 2 again, non-resident in its test period. Room first: HAND_cold evicts 3
        // (unreferenced, in test → non-resident). Then m_c grows to 2 and 2 comes back hot at
        // the head; hot 2 > m_h = 1, so HAND_hot runs: it forgets non-resident 3 (its test
        // ends unused: m_c back to 1) and demotes 1 (its reference was cleared on promotion).
        assert!(!c.access(2));
        assert!(c.is_hot(2) && !c.is_hot(1));
        assert_eq!(c.counts(), (1, 2, 0, 1));
        // Resident now: 2 (hot), 1 and 4 (cold).
        assert!(c.access(1) && c.access(4) && c.access(2));
    }

    #[test]
    fn a_loop_larger_than_the_cache_keeps_some_pages_where_lru_keeps_none() {
        // As LIRS's test: a loop over 11 pages with 10 pages of memory.
        let pages: Vec<u64> = (0..30).flat_map(|_| 0..11u64).collect();
        assert_eq!(
            simulate(&mut Lru::new(10), &pages).misses(),
            pages.len() as u64
        );
        let hits = pages.len() as u64 - simulate(&mut ClockPro::new(10), &pages).misses();
        assert!(hits > pages.len() as u64 / 2, "{hits}");
    }
}
