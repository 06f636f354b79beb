//! The product of a layout policy: every inode and every block it owns.

use crate::geometry::Geometry;
use crate::mapping::{required_mapping, MapFormat};
pub use crate::mapping::{MapKind, Run};
use layoutlab_workload::Population;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};

/// What an inode is (its `i_mode` file type).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum InodeKind {
    /// A regular file.
    #[default]
    File,
    /// A directory.
    Dir,
    /// A symbolic link (its target in [`Special::Symlink`]).
    Symlink,
    /// A character device (its numbers in [`Special::Device`]).
    CharDev,
    /// A block device (its numbers in [`Special::Device`]).
    BlockDev,
    /// A named pipe.
    Fifo,
    /// A unix-domain socket.
    Socket,
}

impl InodeKind {
    /// The kind's name as `ls -l` would describe it, for messages.
    pub fn name(self) -> &'static str {
        match self {
            InodeKind::File => "regular file",
            InodeKind::Dir => "directory",
            InodeKind::Symlink => "symlink",
            InodeKind::CharDev => "character device",
            InodeKind::BlockDev => "block device",
            InodeKind::Fifo => "fifo",
            InodeKind::Socket => "socket",
        }
    }
}

/// Longest symlink target kept in the inode itself (a "fast" symlink): `i_block` is 60
/// bytes and the target needs its NUL (lib/ext2fs/symlink.c, fs/ext4/namei.c).
pub const FAST_SYMLINK_MAX_BYTES: usize = 59;

/// What an inode carries beyond its blocks.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Special {
    /// Nothing (files, directories, fifos, sockets).
    #[default]
    None,
    /// A symlink's target: in the inode when at most [`FAST_SYMLINK_MAX_BYTES`] bytes,
    /// else in the symlink's one data block.
    Symlink {
        /// The target path.
        target: String,
    },
    /// A device node's numbers.
    Device {
        /// Major number.
        major: u32,
        /// Minor number.
        minor: u32,
    },
}

/// A second (third, ...) name of an inode: a hard link.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HardLink {
    /// The directory holding the name.
    pub parent: u32,
    /// The name.
    pub name: String,
    /// The inode it names (not a directory).
    pub ino: u32,
}

/// Appends `len` blocks at file block `logical` → `physical` to `runs`, extending the last run
/// when the new blocks continue it in both spaces. Plans and inspected images keep runs
/// maximal this way, so two descriptions of one layout compare equal.
pub fn push_run(runs: &mut Vec<Run>, logical: u64, physical: u64, len: u64) {
    if let Some(last) = runs.last_mut() {
        if last.logical + last.len == logical && last.physical + last.len == physical {
            last.len += len;
            return;
        }
    }
    runs.push(Run {
        logical,
        physical,
        len,
    });
}

/// One mapping (metadata) block of a file: an indirect block of a block-mapped file or an
/// extent-tree block of an extent-mapped one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MapBlock {
    /// Its kind.
    pub kind: MapKind,
    /// The first logical data block of the range it maps.
    pub logical: u64,
    /// Where it is.
    pub physical: u64,
}

/// One inode of the plan.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedInode {
    /// Inode number.
    pub ino: u32,
    /// File, directory, symlink, device, ...
    pub kind: InodeKind,
    /// Inode number of the directory it is linked in (the root links in itself: 2).
    pub parent: u32,
    /// Its name in the parent ("" for the root).
    pub name: String,
    /// Size in bytes (i_size).
    pub size_bytes: u64,
    /// Data runs in logical order (for a directory: its directory blocks).
    pub data: Vec<Run>,
    /// Mapping blocks, in the order the allocator allocated them.
    pub mapping: Vec<MapBlock>,
    /// How its blocks are mapped (block map or extent tree).
    #[serde(default)]
    pub format: MapFormat,
    /// A symlink's target or a device's numbers.
    #[serde(default)]
    pub special: Special,
}

impl PlannedInode {
    /// The root directory as mke2fs leaves it: inode 2, its own parent, one block at the
    /// geometry's root directory block, mapped by `format` (the ext3 and ext4 planners start
    /// from it).
    pub fn fresh_root(geo: &Geometry, format: MapFormat) -> PlannedInode {
        PlannedInode {
            ino: crate::alloc::ext3_fs::ROOT_INO,
            kind: InodeKind::Dir,
            parent: crate::alloc::ext3_fs::ROOT_INO,
            size_bytes: u64::from(geo.block_size_bytes),
            data: vec![Run {
                logical: 0,
                physical: geo.root_dir_block(),
                len: 1,
            }],
            format,
            ..Default::default()
        }
    }

    /// Number of data blocks.
    pub fn data_blocks(&self) -> u64 {
        self.data.iter().map(|r| r.len).sum()
    }

    /// The physical block of logical block `l`, `None` in a hole or past the end (a binary
    /// search: the runs are in logical order).
    pub fn physical_of(&self, l: u64) -> Option<u64> {
        let i = self.data.partition_point(|r| r.logical <= l);
        let r = self.data.get(i.checked_sub(1)?)?;
        (l < r.logical + r.len).then(|| r.physical + (l - r.logical))
    }

    /// Physically contiguous pieces of the data (runs that continue each other on disk and
    /// in the file count as one).
    pub fn fragments(&self) -> u64 {
        let mut n = 0;
        let mut prev: Option<&Run> = None;
        for r in &self.data {
            match prev {
                Some(p) if p.physical + p.len == r.physical && p.logical + p.len == r.logical => {}
                _ => n += 1,
            }
            prev = Some(r);
        }
        n
    }
}

/// Blocks a plan puts in one group.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupSummary {
    /// Group number.
    pub group: u64,
    /// Regular-file data blocks.
    pub data_blocks: u64,
    /// Indirect (mapping) blocks.
    pub mapping_blocks: u64,
    /// Directory blocks.
    pub dir_blocks: u64,
}

/// A file the plan could not give all the bytes the population asked for (ENOSPC).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShortFile {
    /// Inode number (0: the file could not be created).
    pub ino: u32,
    /// Path from the root.
    pub name: String,
    /// Bytes asked for.
    pub requested_bytes: u64,
    /// Bytes planned.
    pub planned_bytes: u64,
}

/// Where a policy put everything.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// Policy name, e.g. "ext3-2007".
    pub policy: String,
    /// Inodes in creation order (directories before what they contain).
    pub inodes: Vec<PlannedInode>,
    /// Extra names of inodes (hard links), in the order they were made.
    #[serde(default)]
    pub links: Vec<HardLink>,
}

impl Plan {
    /// Total number of indirect (mapping) blocks in the plan.
    pub fn mapping_blocks(&self) -> u64 {
        self.inodes.iter().map(|i| i.mapping.len() as u64).sum()
    }

    /// Total regular-file data blocks.
    pub fn file_data_blocks(&self) -> u64 {
        self.inodes
            .iter()
            .filter(|i| i.kind == InodeKind::File)
            .map(|i| i.data_blocks())
            .sum()
    }

    /// (inode, fragments) of every regular file.
    pub fn fragments_per_file(&self) -> Vec<(u32, u64)> {
        self.inodes
            .iter()
            .filter(|i| i.kind == InodeKind::File)
            .map(|i| (i.ino, i.fragments()))
            .collect()
    }

    /// Every name in the plan — each inode's first name and every hard link — as (inode,
    /// path from the root), in plan order, the links last. A name under a directory the plan
    /// does not hold stops at that directory.
    pub fn name_paths(&self) -> Vec<(u32, String)> {
        let by_ino: HashMap<u32, (u32, &str)> = self
            .inodes
            .iter()
            .map(|i| (i.ino, (i.parent, i.name.as_str())))
            .collect();
        let path = |parent: u32, name: &str| {
            let mut parts = vec![name];
            let mut at = parent;
            while at != 2 {
                let Some(&(p, n)) = by_ino.get(&at) else {
                    break;
                };
                parts.push(n);
                at = p;
            }
            parts.reverse();
            parts.join("/")
        };
        self.inodes
            .iter()
            .filter(|i| i.ino != 2)
            .map(|i| (i.ino, path(i.parent, &i.name)))
            .chain(self.links.iter().map(|l| (l.ino, path(l.parent, &l.name))))
            .collect()
    }

    /// Data, mapping and directory blocks per group.
    pub fn group_summary(&self, geo: &Geometry) -> Vec<GroupSummary> {
        let mut out: Vec<GroupSummary> = (0..geo.group_count())
            .map(|group| GroupSummary {
                group,
                ..Default::default()
            })
            .collect();
        let bpg = geo.blocks_per_group;
        let fdb = geo.first_data_block;
        for inode in &self.inodes {
            for run in &inode.data {
                // A run may cross group boundaries: split it.
                let mut b = run.physical;
                let end = run.physical + run.len;
                while b < end {
                    let g = (b - fdb) / bpg;
                    let stop = (fdb + (g + 1) * bpg).min(end);
                    let s = &mut out[g as usize];
                    match inode.kind {
                        InodeKind::Dir => s.dir_blocks += stop - b,
                        _ => s.data_blocks += stop - b,
                    }
                    b = stop;
                }
            }
            for m in &inode.mapping {
                out[((m.physical - fdb) / bpg) as usize].mapping_blocks += 1;
            }
        }
        out
    }

    /// Files whose planned size is below the size the population asked for (its create and
    /// every append to it), matched by path; a file the plan does not hold at all (its create failed with ENOSPC) is listed
    /// with `ino` 0 and 0 bytes.
    pub fn short_files(&self, pop: &Population) -> Vec<ShortFile> {
        let index: std::collections::HashMap<u32, usize> = self
            .inodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.ino, i))
            .collect();
        let path_of = |mut i: usize| -> String {
            let mut parts = Vec::new();
            while self.inodes[i].ino != 2 {
                parts.push(self.inodes[i].name.as_str());
                match index.get(&self.inodes[i].parent) {
                    Some(&p) if p != i => i = p,
                    _ => break,
                }
            }
            parts.reverse();
            parts.join("/")
        };
        let planned: std::collections::HashMap<String, usize> = (0..self.inodes.len())
            .filter(|&i| self.inodes[i].kind == InodeKind::File)
            .map(|i| (path_of(i), i))
            .collect();
        pop.file_sizes()
            .into_iter()
            .filter_map(|(path, requested)| match planned.get(path) {
                Some(&i) if self.inodes[i].size_bytes >= requested => None,
                Some(&i) => Some(ShortFile {
                    ino: self.inodes[i].ino,
                    name: path.to_string(),
                    requested_bytes: requested,
                    planned_bytes: self.inodes[i].size_bytes,
                }),
                None => Some(ShortFile {
                    ino: 0,
                    name: path.to_string(),
                    requested_bytes: requested,
                    planned_bytes: 0,
                }),
            })
            .collect()
    }

    /// Checks the plan against the file system it is for: every block inside the file
    /// system, used once, never one of mke2fs's (except the root directory's own first
    /// block); every inode's blocks mapped exactly once from logical block 0 and matching its
    /// kind and size; mapping blocks exactly those its tree ([`MapFormat`]) needs; parents
    /// are directories made earlier; hard links name existing non-directories. Returns the
    /// first violation found.
    pub fn check(&self, geo: &Geometry) -> Result<(), String> {
        let mut used = geo.free_map();
        let root_block = geo.root_dir_block();
        let bs = u64::from(geo.block_size_bytes);
        let mut claim = |start: u64, len: u64, what: &str| -> Result<(), String> {
            if start + len > geo.blocks_count || start < geo.first_data_block {
                return Err(format!(
                    "{what}: blocks {start}+{len} outside the file system"
                ));
            }
            let clash = used.next_used(start, start + len);
            if clash < start + len {
                let whose = if geo.is_meta(clash) {
                    "mke2fs metadata"
                } else {
                    "another inode"
                };
                return Err(format!("{what}: block {clash} already used by {whose}"));
            }
            used.mark_used(start, len);
            Ok(())
        };
        let mut kinds: HashMap<u32, InodeKind> = HashMap::new();
        let mut names: HashSet<(u32, &str)> = HashSet::new();
        for inode in &self.inodes {
            if inode.ino != 2 {
                match kinds.get(&inode.parent) {
                    Some(InodeKind::Dir) => {}
                    _ => {
                        return Err(format!(
                            "inode {}: parent {} is not a directory made before it",
                            inode.ino, inode.parent
                        ))
                    }
                }
                if !names.insert((inode.parent, inode.name.as_str())) {
                    return Err(format!(
                        "inode {}: name {:?} is used twice in directory {}",
                        inode.ino, inode.name, inode.parent
                    ));
                }
            }
            if kinds.insert(inode.ino, inode.kind).is_some() {
                return Err(format!("inode {} is planned twice", inode.ino));
            }
            let mut next_logical = 0;
            for run in &inode.data {
                if run.logical != next_logical || run.len == 0 {
                    return Err(format!(
                        "inode {}: run {:?} does not continue logical block {next_logical}",
                        inode.ino, run
                    ));
                }
                next_logical += run.len;
                let what = format!("inode {} data", inode.ino);
                if inode.ino == 2 && run.physical == root_block {
                    if run.len > 1 {
                        claim(run.physical + 1, run.len - 1, &what)?;
                    }
                } else {
                    claim(run.physical, run.len, &what)?;
                }
            }
            check_kind(inode, next_logical, bs)?;
            let mut want = required_mapping(inode.format, &inode.data, bs)
                .map_err(|e| format!("inode {}: {e}", inode.ino))?;
            let mut have: Vec<(MapKind, u64)> =
                inode.mapping.iter().map(|m| (m.kind, m.logical)).collect();
            want.sort();
            have.sort();
            if want != have {
                return Err(format!(
                    "inode {}: mapping blocks {:?} but the tree needs {:?}",
                    inode.ino,
                    have.iter().take(8).collect::<Vec<_>>(),
                    want.iter().take(8).collect::<Vec<_>>()
                ));
            }
            for m in &inode.mapping {
                claim(
                    m.physical,
                    1,
                    &format!("inode {} {:?} at {}", inode.ino, m.kind, m.logical),
                )?;
            }
        }
        for link in &self.links {
            match kinds.get(&link.ino) {
                None => {
                    return Err(format!(
                        "hard link {:?}: inode {} is not planned",
                        link.name, link.ino
                    ))
                }
                Some(InodeKind::Dir) => {
                    return Err(format!(
                        "hard link {:?}: inode {} is a directory",
                        link.name, link.ino
                    ))
                }
                Some(_) => {}
            }
            if kinds.get(&link.parent) != Some(&InodeKind::Dir) {
                return Err(format!(
                    "hard link {:?}: parent {} is not a directory",
                    link.name, link.parent
                ));
            }
            if !names.insert((link.parent, link.name.as_str())) {
                return Err(format!(
                    "hard link {:?}: the name is used twice in directory {}",
                    link.name, link.parent
                ));
            }
        }
        Ok(())
    }
}

/// Size, block count and special data agree with the inode's kind (`blocks` data blocks
/// mapped, `bs`-byte blocks).
pub fn check_kind(inode: &PlannedInode, blocks: u64, bs: u64) -> Result<(), String> {
    let ino = inode.ino;
    let special_ok = match (inode.kind, &inode.special) {
        (InodeKind::Symlink, Special::Symlink { .. }) => true,
        (InodeKind::CharDev | InodeKind::BlockDev, Special::Device { .. }) => true,
        (InodeKind::Symlink | InodeKind::CharDev | InodeKind::BlockDev, _) => false,
        (_, Special::None) => true,
        _ => false,
    };
    if !special_ok {
        return Err(format!(
            "inode {ino}: a {} cannot carry {:?}",
            inode.kind.name(),
            inode.special
        ));
    }
    match inode.kind {
        InodeKind::File => {
            if inode.size_bytes.div_ceil(bs) != blocks {
                return Err(format!(
                    "inode {ino}: size {} bytes but {blocks} blocks",
                    inode.size_bytes
                ));
            }
        }
        InodeKind::Dir => {
            if blocks == 0 || inode.size_bytes != blocks * bs {
                return Err(format!(
                    "inode {ino}: a directory of {blocks} blocks must have size {} bytes, not {}",
                    blocks * bs,
                    inode.size_bytes
                ));
            }
        }
        InodeKind::Symlink => {
            let Special::Symlink { target } = &inode.special else {
                unreachable!("checked above")
            };
            let len = target.len();
            let want_blocks = u64::from(len > FAST_SYMLINK_MAX_BYTES);
            if len == 0 || len as u64 >= bs || target.contains('\0') {
                return Err(format!(
                    "inode {ino}: symlink target of {len} bytes (1..{} without NUL)",
                    bs - 1
                ));
            }
            if inode.size_bytes != len as u64 || blocks != want_blocks {
                return Err(format!(
                    "inode {ino}: a symlink to {len} bytes has size {len} and {want_blocks} block(s), not {} and {blocks}",
                    inode.size_bytes
                ));
            }
        }
        InodeKind::CharDev | InodeKind::BlockDev | InodeKind::Fifo | InodeKind::Socket => {
            if blocks != 0 || inode.size_bytes != 0 {
                return Err(format!(
                    "inode {ino}: a {} has no size and no blocks",
                    inode.kind.name()
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_logical_block_maps_inside_its_run_and_nowhere_in_a_hole_or_past_the_end() {
        let run = |logical, physical, len| Run {
            logical,
            physical,
            len,
        };
        let inode = PlannedInode {
            data: vec![run(0, 100, 4), run(6, 500, 2)],
            ..PlannedInode::default()
        };
        assert_eq!(inode.physical_of(0), Some(100));
        assert_eq!(inode.physical_of(3), Some(103));
        // Logical 4-5 are a hole.
        assert_eq!(inode.physical_of(4), None);
        assert_eq!(inode.physical_of(7), Some(501));
        assert_eq!(inode.physical_of(8), None);
        assert_eq!(PlannedInode::default().physical_of(0), None);
    }
}
