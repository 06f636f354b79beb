//! An ordered set of pages with O(1) insert at either end, removal and membership: the
//! recency lists every policy here is built from (the kernel's `struct list_head` LRUs).

use std::collections::HashMap;

#[derive(Clone, Copy, Debug)]
struct Links {
    /// Towards the front (most recent).
    prev: Option<u64>,
    /// Towards the back (least recent).
    next: Option<u64>,
}

/// Pages in order, front = most recently inserted at the front.
#[derive(Clone, Debug, Default)]
pub struct PageList {
    links: HashMap<u64, Links>,
    front: Option<u64>,
    back: Option<u64>,
}

impl PageList {
    /// An empty list.
    pub fn new() -> PageList {
        PageList::default()
    }

    /// Number of pages.
    pub fn len(&self) -> usize {
        self.links.len()
    }

    /// No pages.
    pub fn is_empty(&self) -> bool {
        self.links.is_empty()
    }

    /// `page` is in the list.
    pub fn contains(&self, page: u64) -> bool {
        self.links.contains_key(&page)
    }

    /// The least recent page.
    pub fn back(&self) -> Option<u64> {
        self.back
    }

    /// The most recent page.
    pub fn front(&self) -> Option<u64> {
        self.front
    }

    /// The page after `page` towards the front (more recent), if any.
    pub fn towards_front(&self, page: u64) -> Option<u64> {
        self.links.get(&page).and_then(|l| l.prev)
    }

    /// Insert `page` (not in the list) at the front.
    pub fn push_front(&mut self, page: u64) {
        debug_assert!(!self.contains(page), "page {page} already listed");
        let old = self.front;
        self.links.insert(
            page,
            Links {
                prev: None,
                next: old,
            },
        );
        match old {
            Some(o) => self.links.get_mut(&o).expect("front is listed").prev = Some(page),
            None => self.back = Some(page),
        }
        self.front = Some(page);
    }

    /// Insert `page` (not in the list) at the back.
    pub fn push_back(&mut self, page: u64) {
        debug_assert!(!self.contains(page), "page {page} already listed");
        let old = self.back;
        self.links.insert(
            page,
            Links {
                prev: old,
                next: None,
            },
        );
        match old {
            Some(o) => self.links.get_mut(&o).expect("back is listed").next = Some(page),
            None => self.front = Some(page),
        }
        self.back = Some(page);
    }

    /// Remove `page`; false when it was not listed.
    pub fn remove(&mut self, page: u64) -> bool {
        let Some(l) = self.links.remove(&page) else {
            return false;
        };
        match l.prev {
            Some(p) => self.links.get_mut(&p).expect("linked").next = l.next,
            None => self.front = l.next,
        }
        match l.next {
            Some(n) => self.links.get_mut(&n).expect("linked").prev = l.prev,
            None => self.back = l.prev,
        }
        true
    }

    /// Remove and return the least recent page.
    pub fn pop_back(&mut self) -> Option<u64> {
        let b = self.back?;
        self.remove(b);
        Some(b)
    }

    /// Move `page` (listed or not) to the front.
    pub fn to_front(&mut self, page: u64) {
        self.remove(page);
        self.push_front(page);
    }

    /// Pages from front to back.
    pub fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        std::iter::successors(self.front, move |p| self.links[p].next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_order_through_inserts_and_removals() {
        let mut l = PageList::new();
        for p in [1, 2, 3] {
            l.push_front(p);
        }
        l.push_back(0);
        assert_eq!(l.iter().collect::<Vec<_>>(), [3, 2, 1, 0]);
        assert!(l.remove(2));
        assert!(!l.remove(2));
        l.to_front(0);
        assert_eq!(l.iter().collect::<Vec<_>>(), [0, 3, 1]);
        assert_eq!(l.pop_back(), Some(1));
        assert_eq!(l.towards_front(3), Some(0));
        assert_eq!((l.front(), l.back(), l.len()), (Some(0), Some(3), 2));
    }
}
