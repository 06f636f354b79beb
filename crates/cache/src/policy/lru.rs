//! Least recently used: evict the page whose last use is oldest.

use crate::list::PageList;
use crate::Replacement;

/// An LRU cache.
pub struct Lru {
    capacity: usize,
    list: PageList,
}

impl Lru {
    /// An empty cache of `capacity` pages.
    pub fn new(capacity: usize) -> Lru {
        Lru {
            capacity,
            list: PageList::new(),
        }
    }
}

impl Replacement for Lru {
    fn name(&self) -> &'static str {
        "lru"
    }
    fn capacity_pages(&self) -> usize {
        self.capacity
    }
    fn resident_pages(&self) -> usize {
        self.list.len()
    }
    fn access(&mut self, page: u64) -> bool {
        let hit = self.list.remove(page);
        if !hit && self.list.len() >= self.capacity {
            self.list.pop_back();
        }
        self.list.push_front(page);
        hit
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simulate;

    #[test]
    fn evicts_the_least_recent() {
        // Worked by hand, 3 pages: 1 2 3 miss; 1 hits (order 1 3 2); 4 evicts 2; 2 evicts 3;
        // 1 hits; 3 evicts 4.
        let mut c = Lru::new(3);
        let o = simulate(&mut c, &[1, 2, 3, 1, 4, 2, 1, 3]);
        assert_eq!(
            o.hit,
            [false, false, false, true, false, false, true, false]
        );
    }

    #[test]
    fn textbook_stream_takes_twelve_faults() {
        // Silberschatz, Operating System Concepts, ch. 9: LRU with 3 frames, 12 faults.
        let s = [7, 0, 1, 2, 0, 3, 0, 4, 2, 3, 0, 3, 2, 1, 2, 0, 1, 7, 0, 1];
        assert_eq!(simulate(&mut Lru::new(3), &s).misses(), 12);
    }
}
