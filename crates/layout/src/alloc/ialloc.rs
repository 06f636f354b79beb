//! Inode placement of Linux 2.6.23 ext3 (fs/ext3/ialloc.c) for regular files:
//! `find_group_other()`, then the first free inode of the group (`ext3_new_inode()` scans
//! the group's inode bitmap from bit 0). Inodes are never freed in these workloads, so a
//! group's inode bitmap is a fill count.

use crate::alloc::FreeMap;
use crate::geometry::Geometry;

/// Per-group inode usage.
#[derive(Clone, Debug)]
pub struct InodeMap {
    used: Vec<u32>,
    per_group: u32,
}

impl InodeMap {
    /// After mke2fs: inodes 1..=11 (reserved inodes and lost+found) are in use.
    pub fn new(geo: &Geometry) -> InodeMap {
        let mut used = vec![0; geo.groups.len()];
        used[0] = 11.min(geo.inodes_per_group);
        InodeMap {
            used,
            per_group: geo.inodes_per_group,
        }
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
        let idx = self.used[group as usize];
        assert!(idx < self.per_group, "group {group} has no free inode");
        self.used[group as usize] += 1;
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
}
