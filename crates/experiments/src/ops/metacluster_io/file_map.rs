//! Where a planned file's blocks are, both ways: what the passes over a captured trace
//! ([`super::bio_order`], [`super::ra_windows`]) ask of the plan to tell a request's file data
//! from its indirect blocks and to find the blocks past a read.

use layoutlab_layout::{MapKind, PlannedInode};
use std::collections::HashMap;

/// A file's data runs and mapping blocks, indexed for lookups by physical and logical block.
pub(crate) struct FileMap {
    /// Data runs: (logical, physical, len), in logical order.
    by_logical: Vec<(u64, u64, u64)>,
    /// Data runs: (physical, len, logical), in physical order.
    by_physical: Vec<(u64, u64, u64)>,
    /// Mapping blocks of each level, top level first: how many data blocks one of them maps,
    /// and (first logical block mapped, physical), in logical order.
    levels: Vec<(u64, Vec<(u64, u64)>)>,
    /// Each mapping block (physical) and the first logical block it maps.
    mapping: HashMap<u64, u64>,
    /// The file's size in blocks.
    pub blocks: u64,
}

impl FileMap {
    /// The map of `inode` with blocks of `block_size` bytes (4-byte block pointers).
    pub fn new(inode: &PlannedInode, block_size: u64) -> FileMap {
        let per_block = block_size / 4;
        let mut by_logical: Vec<(u64, u64, u64)> = inode
            .data
            .iter()
            .map(|r| (r.logical, r.physical, r.len))
            .collect();
        by_logical.sort_unstable();
        let mut by_physical: Vec<(u64, u64, u64)> =
            by_logical.iter().map(|&(l, p, n)| (p, n, l)).collect();
        by_physical.sort_unstable();
        let mut levels = Vec::new();
        for (span, kind) in [
            (per_block * per_block * per_block, MapKind::Tind),
            (per_block * per_block, MapKind::Dind),
            (per_block, MapKind::Ind),
        ] {
            let mut v: Vec<(u64, u64)> = inode
                .mapping
                .iter()
                .filter(|m| m.kind == kind)
                .map(|m| (m.logical, m.physical))
                .collect();
            v.sort_unstable();
            if !v.is_empty() {
                levels.push((span, v));
            }
        }
        FileMap {
            by_logical,
            by_physical,
            levels,
            mapping: inode
                .mapping
                .iter()
                .map(|m| (m.physical, m.logical))
                .collect(),
            blocks: inode.size_bytes.div_ceil(block_size),
        }
    }

    /// The logical block of physical block `b`, if it is file data.
    pub fn logical(&self, b: u64) -> Option<u64> {
        let i = self.by_physical.partition_point(|&(p, _, _)| p <= b);
        let &(p, n, l) = self.by_physical.get(i.checked_sub(1)?)?;
        (b < p + n).then(|| l + (b - p))
    }

    /// The physical block of logical block `l`, if it is allocated.
    pub fn physical(&self, l: u64) -> Option<u64> {
        let i = self.by_logical.partition_point(|&(s, _, _)| s <= l);
        let &(s, p, n) = self.by_logical.get(i.checked_sub(1)?)?;
        (l < s + n).then(|| p + (l - s))
    }

    /// The first logical block mapped by physical block `b`, if it is a mapping block.
    pub fn mapped_from(&self, b: u64) -> Option<u64> {
        self.mapping.get(&b).copied()
    }

    /// Whether physical block `b` is a mapping block of the file.
    pub fn is_mapping(&self, b: u64) -> bool {
        self.mapping.contains_key(&b)
    }

    /// The mapping blocks on the way to logical block `l`, top level first.
    pub fn path(&self, l: u64) -> Vec<u64> {
        let mut out = Vec::new();
        for (span, v) in &self.levels {
            let i = v.partition_point(|&(s, _)| s <= l);
            if let Some(&(s, p)) = i.checked_sub(1).and_then(|i| v.get(i)) {
                if l < s + span {
                    out.push(p);
                }
            }
        }
        out
    }
}

#[cfg(test)]
pub(crate) mod fixtures {
    use layoutlab_layout::{MapBlock, MapFormat, MapKind, PlannedInode, Run};
    use layoutlab_trace::{Flags, Op, Request, Trace};

    /// A captured read of `blocks` 4 KiB blocks from `block`, issued at `issue` ns and complete
    /// 500 ns later, with CPU stamps a tenth of those.
    pub fn read(issue: u64, block: u64, blocks: u64) -> Request {
        Request {
            issue_ns: issue,
            complete_ns: Some(issue + 500),
            op: Op::Read,
            sector: block * 8,
            sectors: (blocks * 8) as u32,
            flags: Flags::NONE,
            tag: 1,
            cpu: Some(layoutlab_trace::cpu::CpuStamps {
                at_issue_ns: issue / 10,
                at_complete_ns: issue / 10 + 5,
            }),
        }
    }

    /// A trace of `reqs`, tagged as one benchmark's.
    pub fn trace(reqs: Vec<Request>) -> Trace {
        Trace {
            requests: reqs,
            tags: vec![String::new(), "b".into()],
            queue: None,
        }
    }

    /// Each request as (first block, blocks).
    pub fn blocks(t: &Trace) -> Vec<(u64, u64)> {
        t.requests
            .iter()
            .map(|r| (r.sector / 8, u64::from(r.sectors) / 8))
            .collect()
    }

    /// A 2007-layout file of 2,100 4 KiB blocks: 12 direct blocks at 1000, the indirect block
    /// at 1012 mapping logical 12..1035 at 1013..2036, then the double-indirect block at 2037
    /// and its first indirect block at 2038, mapping 1036.. at 2039...
    pub fn file_2007() -> PlannedInode {
        PlannedInode {
            ino: 12,
            kind: layoutlab_layout::InodeKind::File,
            parent: 2,
            name: "f".into(),
            size_bytes: 2100 * 4096,
            data: vec![
                Run {
                    logical: 0,
                    physical: 1000,
                    len: 12,
                },
                Run {
                    logical: 12,
                    physical: 1013,
                    len: 1024,
                },
                Run {
                    logical: 1036,
                    physical: 2039,
                    len: 1064,
                },
            ],
            mapping: vec![
                MapBlock {
                    kind: MapKind::Ind,
                    logical: 12,
                    physical: 1012,
                },
                MapBlock {
                    kind: MapKind::Dind,
                    logical: 1036,
                    physical: 2037,
                },
                MapBlock {
                    kind: MapKind::Ind,
                    logical: 1036,
                    physical: 2038,
                },
            ],
            format: MapFormat::Blocks,
            special: layoutlab_layout::Special::None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::file_2007;
    use super::*;

    #[test]
    fn blocks_are_found_both_ways_and_each_path_top_down() {
        let m = FileMap::new(&file_2007(), 4096);
        assert_eq!(m.blocks, 2100);
        for (l, p) in [
            (0, 1000),
            (11, 1011),
            (12, 1013),
            (1035, 2036),
            (1036, 2039),
        ] {
            assert_eq!(m.physical(l), Some(p), "logical {l}");
            assert_eq!(m.logical(p), Some(l), "physical {p}");
        }
        assert_eq!(m.physical(2100), None);
        for mapping in [1012, 2037, 2038, 999] {
            assert_eq!(m.logical(mapping), None);
        }
        assert_eq!(m.path(5), Vec::<u64>::new());
        assert_eq!(m.path(12), [1012]);
        assert_eq!(m.path(1036), [2037, 2038]);
        assert_eq!(m.mapped_from(2038), Some(1036));
        assert!(m.is_mapping(2037) && !m.is_mapping(2039));
    }
}
