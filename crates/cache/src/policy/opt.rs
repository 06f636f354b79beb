//! Belady's MIN (1966), "OPT": on a miss, evict the resident page whose next use is farthest
//! in the future. It must load the missed page, like every other policy here, so it is the
//! fewest misses any of them can have (Mattson et al. 1970).

use crate::Replacement;
use std::collections::{BTreeSet, HashMap};

/// OPT over a known stream; it must be accessed in exactly that order.
pub struct Opt {
    capacity: usize,
    pages: Vec<u64>,
    /// For each position, the next position of the same page (`usize::MAX`: never).
    next_use: Vec<usize>,
    position: usize,
    /// Resident pages by next use.
    by_next_use: BTreeSet<(usize, u64)>,
    resident: HashMap<u64, usize>,
}

impl Opt {
    /// A cache of `capacity` pages that will see `pages`.
    pub fn new(capacity: usize, pages: &[u64]) -> Opt {
        let mut next_use = vec![usize::MAX; pages.len()];
        let mut seen: HashMap<u64, usize> = HashMap::new();
        for (i, &p) in pages.iter().enumerate().rev() {
            if let Some(&j) = seen.get(&p) {
                next_use[i] = j;
            }
            seen.insert(p, i);
        }
        Opt {
            capacity,
            pages: pages.to_vec(),
            next_use,
            position: 0,
            by_next_use: BTreeSet::new(),
            resident: HashMap::new(),
        }
    }
}

impl Replacement for Opt {
    fn name(&self) -> &'static str {
        "opt"
    }
    fn capacity_pages(&self) -> usize {
        self.capacity
    }
    fn resident_pages(&self) -> usize {
        self.resident.len()
    }
    fn access(&mut self, page: u64) -> bool {
        let i = self.position;
        assert!(
            self.pages.get(i) == Some(&page),
            "OPT was built for another stream (access {i} is {page})"
        );
        self.position += 1;
        let next = self.next_use[i];
        let hit = match self.resident.get(&page) {
            Some(&old) => {
                self.by_next_use.remove(&(old, page));
                true
            }
            None => {
                if self.resident.len() >= self.capacity {
                    let far = *self.by_next_use.iter().next_back().expect("full");
                    self.by_next_use.remove(&far);
                    self.resident.remove(&far.1);
                }
                false
            }
        };
        // Several never-reused pages share usize::MAX; the page number breaks the tie.
        self.by_next_use.insert((next, page));
        self.resident.insert(page, next);
        hit
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simulate;

    #[test]
    fn evicts_the_page_used_farthest_ahead() {
        // The textbook stream (Silberschatz, Operating System Concepts, ch. 9): with 3 frames
        // OPT takes 9 faults (LRU 12, FIFO 15). The first eviction, at 2, is 7 (next used at
        // position 17, after 0 at 4 and 1 at 13).
        let s = [7, 0, 1, 2, 0, 3, 0, 4, 2, 3, 0, 3, 2, 1, 2, 0, 1, 7, 0, 1];
        let mut c = Opt::new(3, &s);
        assert_eq!(simulate(&mut c, &s).misses(), 9);
    }

    #[test]
    #[should_panic(expected = "another stream")]
    fn refuses_a_stream_it_was_not_built_for() {
        let mut c = Opt::new(2, &[1, 2]);
        c.access(2);
    }
}
