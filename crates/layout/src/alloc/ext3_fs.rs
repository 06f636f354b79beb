//! The ext3 (2.6.23) path from a namespace operation to allocations, shared by the ext3
//! policies: inode placement (fs/ext3/ialloc.c), the root directory's growth
//! (fs/ext3/namei.c), the first block's goal (fs/ext3/inode.c `ext3_find_near()`) and the
//! sequential write ([`write_file`]). A policy supplies the free map (with any holes) and
//! where indirect blocks go.

use crate::alloc::ext3_alloc::Ext3Alloc;
use crate::alloc::ialloc::InodeMap;
use crate::alloc::writer::{write_file, IndirectPlacer};
use crate::geometry::{addr_per_block, Geometry};
use crate::plan::{InodeKind, Plan, PlannedInode, Run};
use crate::LayoutError;
use layoutlab_workload::{NsOp, Population};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Root directory inode number.
pub const ROOT_INO: u32 = 2;

/// `EXT3_DIR_REC_LEN(name_len)`: 8 bytes of header plus the name, rounded up to 4.
pub fn dir_rec_len(name_len: usize) -> u64 {
    (8 + name_len as u64 + 3) & !3
}

/// Block usage of a directory as entries are added (fs/ext3/namei.c `ext3_add_entry()`).
#[derive(Clone, Debug)]
pub struct DirGrowth {
    block_bytes: u64,
    dir_index: bool,
    /// Blocks in the directory.
    pub blocks: u64,
    indexed: bool,
    last_block_bytes: u64,
    leaf_bytes: u64,
    leaves: u64,
}

impl DirGrowth {
    /// A fresh mke2fs root: one block holding ".", ".." and "lost+found".
    pub fn fresh_root(block_bytes: u64, dir_index: bool) -> DirGrowth {
        DirGrowth {
            block_bytes,
            dir_index,
            blocks: 1,
            indexed: false,
            last_block_bytes: dir_rec_len(1) + dir_rec_len(2) + dir_rec_len(10),
            leaf_bytes: 0,
            leaves: 0,
        }
    }

    /// Adds an entry; returns how many blocks the directory grows by.
    ///
    /// Unindexed: the entry goes in the last block if it fits, else a new block. With
    /// dir_index, the first overflow of a one-block directory converts it
    /// (`make_indexed_dir()`: block 0 becomes the dx root, its entries move to a new block,
    /// which `do_split()` halves into another new block: +2). Later leaf splits are modelled
    /// with evenly spread hashes — a leaf splits when the leaves are full on average — as the
    /// real hash seed is random; docs/policies.md says where this matters.
    pub fn add_entry(&mut self, name_len: usize) -> u64 {
        let rec = dir_rec_len(name_len);
        if self.indexed {
            self.leaf_bytes += rec;
            if self.leaf_bytes > self.leaves * self.block_bytes {
                self.leaves += 1;
                self.blocks += 1;
                return 1;
            }
            return 0;
        }
        if self.last_block_bytes + rec <= self.block_bytes {
            self.last_block_bytes += rec;
            return 0;
        }
        if self.dir_index && self.blocks == 1 {
            self.indexed = true;
            self.leaf_bytes = self.last_block_bytes - dir_rec_len(1) - dir_rec_len(2) + rec;
            self.leaves = 2;
            self.blocks = 3;
            return 2;
        }
        self.blocks += 1;
        self.last_block_bytes = rec;
        1
    }
}

/// Plans `pop` on `geo` with an ext3 policy's allocator and indirect-block placer.
///
/// The writer of each file is a new process (`dd`, `cp`, ...) whose pid picks the colour of
/// the file's first block (`ext3_find_near()`: `(current->pid % 16) * blocks_per_group / 16`
/// into the inode's group): pids start at a seeded value and grow by 1-4 per file, as a
/// shell loop forking one writer per file makes them.
pub fn plan_ext3(
    policy: &str,
    geo: &Geometry,
    pop: &Population,
    seed: u64,
    mut alloc: Ext3Alloc,
    placer: &mut dyn IndirectPlacer,
    dir_index: bool,
) -> Result<Plan, LayoutError> {
    let bs = u64::from(geo.block_size_bytes);
    let addr = addr_per_block(geo.block_size_bytes);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut pid: u64 = rng.gen_range(300..30_000);
    let mut inodes = InodeMap::new(geo);
    let root_group = inodes.group_of(ROOT_INO);
    let mut root = PlannedInode {
        ino: ROOT_INO,
        kind: InodeKind::Dir,
        parent: ROOT_INO,
        name: String::new(),
        size_bytes: bs,
        data: vec![Run {
            logical: 0,
            physical: geo.root_dir_block(),
            len: 1,
        }],
        mapping: Vec::new(),
    };
    let mut dir = DirGrowth::fresh_root(bs, dir_index);
    let mut files = Vec::with_capacity(pop.ops.len());
    for op in &pop.ops {
        let (path, bytes) = match op {
            NsOp::Create { path, bytes } => (path, *bytes),
            NsOp::Mkdir { path } => {
                return Err(LayoutError::Unsupported(format!(
                    "mkdir '{path}': only files in the root directory are modelled so far"
                )))
            }
        };
        if path.contains('/') || path.is_empty() || path.len() > 255 {
            return Err(LayoutError::Unsupported(format!(
                "path '{path}': only names in the root directory are modelled so far"
            )));
        }
        let group = inodes
            .find_group_other(&alloc.map, root_group, ROOT_INO)
            .ok_or(LayoutError::NoInodes {
                created: files.len() as u64,
            })?;
        let ino = inodes.take(group);
        for _ in 0..dir.add_entry(path.len()) {
            // ext3_append() -> ext3_getblk(): directories have no reservation window and
            // ext3_find_near() aims just past the directory's last block.
            let last = root
                .data
                .last()
                .map(|r| r.physical + r.len - 1)
                .unwrap_or(0);
            let logical = root.data.iter().map(|r| r.len).sum::<u64>();
            let (b, _) = alloc
                .new_blocks(last, 1, None)
                .ok_or_else(|| LayoutError::BadSize {
                    fs_bytes: geo.blocks_count * bs,
                    reason: format!("no free block left for the root directory at file '{path}'"),
                })?;
            match root.data.last_mut() {
                Some(r) if r.physical + r.len == b => r.len += 1,
                _ => root.data.push(Run {
                    logical,
                    physical: b,
                    len: 1,
                }),
            }
        }
        pid += rng.gen_range(1..=4);
        let colour = (pid % 16) * (geo.blocks_per_group / 16);
        let goal = alloc.map.group_first(group) + colour;
        let want = bytes.div_ceil(bs);
        let out = write_file(&mut alloc, placer, goal, want, addr);
        let size_bytes = if out.blocks_written == want {
            bytes
        } else {
            out.blocks_written * bs
        };
        files.push(PlannedInode {
            ino,
            kind: InodeKind::File,
            parent: ROOT_INO,
            name: path.clone(),
            size_bytes,
            data: out.data,
            mapping: out.mapping,
        });
    }
    root.size_bytes = dir.blocks * bs;
    let mut inodes_out = Vec::with_capacity(files.len() + 1);
    inodes_out.push(root);
    inodes_out.extend(files);
    Ok(Plan {
        policy: policy.to_string(),
        inodes: inodes_out,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_indexes_at_first_overflow() {
        let mut d = DirGrowth::fresh_root(4096, true);
        let mut grown = Vec::new();
        for i in 0..350 {
            let g = d.add_entry(4);
            if g > 0 {
                grown.push((i, g));
            }
        }
        // (4096 - 44) / 12 = 337 four-character names fit in block 0.
        assert_eq!(grown, vec![(337, 2)]);
        assert_eq!(d.blocks, 3);
        let mut lin = DirGrowth::fresh_root(4096, false);
        let n: u64 = (0..350).map(|_| lin.add_entry(4)).sum();
        assert_eq!(n, 1);
    }
}
