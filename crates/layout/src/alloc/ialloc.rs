//! Inode placement of Linux 2.6.23 ext3 (fs/ext3/ialloc.c): `find_group_other()` for
//! files, `find_group_orlov()` for directories, then the first free inode of the group
//! (`ext3_new_inode()` scans the group's inode bitmap from bit 0). A group's inode bitmap is
//! a fill mark plus the set of freed inodes below it (an aging stream's unlinks and rmdirs):
//! the first zero bit is the lowest freed inode, else the mark.

use crate::alloc::FreeMap;
use crate::geometry::Geometry;

/// Per-group inode usage.
#[derive(Clone, Debug)]
pub struct InodeMap {
    /// Inodes in use per group.
    used: Vec<u32>,
    /// Per group: inodes below this index have been taken at some time.
    high: Vec<u32>,
    /// Per group: freed indices below `high`.
    holes: Vec<std::collections::BTreeSet<u32>>,
    dirs: Vec<u32>,
    per_group: u32,
}

impl InodeMap {
    /// After mke2fs: inodes 1..=11 (reserved inodes and lost+found) are in use.
    pub fn new(geo: &Geometry) -> InodeMap {
        let mut used = vec![0; geo.groups.len()];
        used[0] = 11.min(geo.inodes_per_group);
        // The root and lost+found.
        let mut dirs = vec![0; geo.groups.len()];
        dirs[0] = 2;
        InodeMap {
            high: used.clone(),
            holes: vec![Default::default(); used.len()],
            used,
            dirs,
            per_group: geo.inodes_per_group,
        }
    }

    /// Directories in `group` (`bg_used_dirs_count`).
    pub fn dirs(&self, group: u64) -> u32 {
        self.dirs[group as usize]
    }

    /// `find_group_orlov()` (2.6.22/2.6.23: the debt limit is computed but not applied).
    /// Top-level directories (parent is the root) start a scan at `random_start` (the
    /// kernel's `get_random_bytes()`) and take the group with the fewest directories among
    /// those with at least average free inodes and free blocks; deeper directories take the
    /// first group from the parent's with few enough directories and enough free inodes
    /// and blocks; failing both, the first group with at least average free inodes.
    pub fn find_group_orlov(
        &self,
        blocks: &FreeMap,
        parent_group: u64,
        parent_is_root: bool,
        random_start: u64,
    ) -> Option<u64> {
        let n = self.used.len() as u64;
        let ipg = i64::from(self.per_group);
        let freei: i64 = (0..n).map(|g| i64::from(self.free(g))).sum();
        let mut avefreei = freei / n as i64;
        let freeb = blocks.total_free() as i64;
        let avefreeb = freeb / n as i64;
        let ndirs: i64 = self.dirs.iter().map(|&d| i64::from(d)).sum();
        let free_inodes = |g: u64| i64::from(self.free(g));
        let free_blocks = |g: u64| blocks.group_free(g) as i64;
        let mut start = parent_group;
        if parent_is_root {
            start = random_start % n;
            let mut best: Option<u64> = None;
            let mut best_ndir = ipg;
            for i in 0..n {
                let g = (start + i) % n;
                if free_inodes(g) == 0
                    || i64::from(self.dirs(g)) >= best_ndir
                    || free_inodes(g) < avefreei
                    || free_blocks(g) < avefreeb
                {
                    continue;
                }
                best = Some(g);
                best_ndir = i64::from(self.dirs(g));
            }
            if best.is_some() {
                return best;
            }
        } else {
            let max_dirs = ndirs / n as i64 + ipg / 16;
            let min_inodes = avefreei - ipg / 4;
            let min_blocks = avefreeb - (blocks.blocks_per_group() / 4) as i64;
            for i in 0..n {
                let g = (start + i) % n;
                if free_inodes(g) == 0
                    || i64::from(self.dirs(g)) >= max_dirs
                    || free_inodes(g) < min_inodes
                    || free_blocks(g) < min_blocks
                {
                    continue;
                }
                return Some(g);
            }
        }
        loop {
            for i in 0..n {
                let g = (start + i) % n;
                if free_inodes(g) > 0 && free_inodes(g) >= avefreei {
                    return Some(g);
                }
            }
            if avefreei == 0 {
                return None;
            }
            avefreei = 0;
        }
    }

    /// Frees inode `ino` (`ext3_free_inode()`: its bit cleared, the group's counts
    /// updated), a directory's when `is_dir`.
    pub fn free_inode(&mut self, ino: u32, is_dir: bool) {
        let g = self.group_of(ino) as usize;
        let idx = (ino - 1) % self.per_group;
        debug_assert!(idx < self.high[g] && !self.holes[g].contains(&idx));
        self.used[g] -= 1;
        if idx + 1 == self.high[g] {
            self.high[g] -= 1;
            // the mark falls back over holes just below it
            while self.high[g] > 0 && self.holes[g].remove(&(self.high[g] - 1)) {
                self.high[g] -= 1;
            }
        } else {
            self.holes[g].insert(idx);
        }
        if is_dir {
            self.dirs[g] -= 1;
        }
    }

    /// Takes the first free inode of `group` for a directory.
    pub fn take_dir(&mut self, group: u64) -> u32 {
        self.dirs[group as usize] += 1;
        self.take(group)
    }

    /// Inodes per group.
    pub fn per_group(&self) -> u32 {
        self.per_group
    }

    /// Free inodes in `group`.
    pub fn free(&self, group: u64) -> u32 {
        self.per_group - self.used[group as usize]
    }

    /// `find_group_other()`: the parent's group if it has a free inode and a free block;
    /// else a quadratic hash seeded with the parent's inode number over groups with both;
    /// else a linear search for any free inode.
    pub fn find_group_other(
        &self,
        blocks: &FreeMap,
        parent_group: u64,
        parent_ino: u32,
    ) -> Option<u64> {
        let n = self.used.len() as u64;
        let ok = |g: u64| self.free(g) > 0 && blocks.group_free(g) > 0;
        if ok(parent_group) {
            return Some(parent_group);
        }
        let mut group = (parent_group + u64::from(parent_ino)) % n;
        let mut i = 1;
        while i < n {
            group += i;
            if group >= n {
                group -= n;
            }
            if ok(group) {
                return Some(group);
            }
            i <<= 1;
        }
        let mut group = parent_group;
        for _ in 0..n {
            group += 1;
            if group >= n {
                group = 0;
            }
            if self.free(group) > 0 {
                return Some(group);
            }
        }
        None
    }

    /// Takes the first free inode of `group`; returns its number.
    pub fn take(&mut self, group: u64) -> u32 {
        let g = group as usize;
        let idx = match self.holes[g].pop_first() {
            Some(idx) => idx,
            None => {
                let idx = self.high[g];
                assert!(idx < self.per_group, "group {group} has no free inode");
                self.high[g] += 1;
                idx
            }
        };
        self.used[g] += 1;
        group as u32 * self.per_group + idx + 1
    }

    /// Group of inode `ino`.
    pub fn group_of(&self, ino: u32) -> u64 {
        u64::from((ino - 1) / self.per_group)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mkfs::MkfsProfile;

    #[test]
    fn root_group_first_then_hash() {
        let p = MkfsProfile::by_name("ext3-2007").unwrap();
        let geo = Geometry::new(&p, 4_000_000_000).unwrap();
        let mut map = geo.free_map();
        let mut inodes = InodeMap::new(&geo);
        assert_eq!(inodes.find_group_other(&map, 0, 2), Some(0));
        assert_eq!(inodes.take(0), 12);
        // Fill group 0's blocks: the hash starts at (0 + 2) % 30 and probes +1, +2, +4...
        let g0 = map.group_first(0);
        while let Some(b) = map.next_free(g0, map.group_end(0)) {
            let e = map.next_used(b, map.group_end(0));
            map.mark_used(b, e - b);
        }
        assert_eq!(inodes.find_group_other(&map, 0, 2), Some(3));
        assert_eq!(inodes.take(3), 3 * geo.inodes_per_group + 1);
    }

    #[test]
    fn orlov_spreads_top_level_directories() {
        let p = MkfsProfile::by_name("ext3-2007").unwrap();
        let geo = Geometry::new(&p, 4_000_000_000).unwrap();
        let map = geo.free_map();
        let mut inodes = InodeMap::new(&geo);
        let mut groups = Vec::new();
        for start in [7, 7, 7, 7] {
            let g = inodes.find_group_orlov(&map, 0, true, start).unwrap();
            inodes.take_dir(g);
            groups.push(g);
        }
        // Group 0 has less than average free blocks (journal); from 7 on, each pick is the
        // first group with the fewest directories.
        assert_eq!(groups, vec![7, 8, 9, 10]);
        // A subdirectory stays in its parent's group while it qualifies.
        assert_eq!(inodes.find_group_orlov(&map, 8, false, 0), Some(8));
    }
}
