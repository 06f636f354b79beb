//! Test helpers: fresh images and a tiny plan builder that allocates from an image's real
//! free space (read back with `inspect`).
#![allow(dead_code)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use layoutlab_image::{inspect, mkfs};
use layoutlab_layout::mapping::{kind_of, required_mapping, BlockMapGeometry, MapFormat};
use layoutlab_layout::{
    push_run, HardLink, InodeKind, MapBlock, Plan, PlannedInode, Run, Special,
    FAST_SYMLINK_MAX_BYTES,
};

pub fn args(s: &str) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

/// A 2007-style ext3 (no resize inode, 128-byte inodes, 4 KiB blocks).
pub const EXT3: &str = "-t ext3 -b 4096 -I 128 -i 16384 -O ^resize_inode";

pub fn fresh(dir: &Path, name: &str, mib: u64, mkfs_args: &str) -> PathBuf {
    let image = dir.join(name);
    mkfs(&image, mib << 20, &args(mkfs_args)).expect("mkfs");
    image
}

/// Where a file's indirect blocks go.
#[derive(Clone, Copy, Debug)]
pub enum MapPlace {
    /// Just before the data they map (ext3 of 2007).
    Inline,
    /// From a separate cursor (a metacluster-like region).
    Region,
}

/// Allocates from the real free space of a fresh image.
pub struct Builder {
    pub used: Vec<bool>,
    pub cursor: u64,
    pub region_cursor: u64,
    pub block_bytes: u64,
    pub geo: BlockMapGeometry,
    /// How new files and directories are mapped.
    pub format: MapFormat,
    pub plan: Plan,
}

impl Builder {
    pub fn new(image: &Path) -> Builder {
        let ins = inspect(image).expect("inspect fresh image");
        let n = ins.superblock.blocks_count as usize;
        let mut used = vec![false; n];
        for b in 0..ins.superblock.first_data_block {
            used[b as usize] = true;
        }
        for (first, len) in &ins.used_runs {
            for b in *first..*first + *len {
                used[b as usize] = true;
            }
        }
        let bs = ins.superblock.block_bytes as u64;
        Builder {
            used,
            cursor: 0,
            region_cursor: n as u64 * 3 / 4,
            block_bytes: bs,
            geo: BlockMapGeometry::new(bs),
            format: MapFormat::Blocks,
            plan: Plan {
                policy: "test".into(),
                ..Default::default()
            },
        }
    }

    pub fn blocks(&self) -> u64 {
        self.used.len() as u64
    }

    fn take_from(&mut self, region: bool) -> u64 {
        let n = self.used.len() as u64;
        let mut c = if region {
            self.region_cursor
        } else {
            self.cursor
        };
        for _ in 0..n {
            if c >= n {
                c = 0;
            }
            if !self.used[c as usize] {
                self.used[c as usize] = true;
                if region {
                    self.region_cursor = c + 1;
                } else {
                    self.cursor = c + 1;
                }
                return c;
            }
            c += 1;
        }
        panic!("test file system full");
    }

    /// The next free block at or after the data cursor.
    pub fn take(&mut self) -> u64 {
        self.take_from(false)
    }

    /// Marks `blk` used (it must be free).
    pub fn take_at(&mut self, blk: u64) -> u64 {
        assert!(!self.used[blk as usize], "block {blk} is not free");
        self.used[blk as usize] = true;
        blk
    }

    /// The mapping blocks (level, base) that contain logical block `l`, top level first.
    fn containing(&self, l: u64) -> Vec<(u8, u64)> {
        let g = self.geo;
        let mut out = Vec::new();
        for top in (1..=3u8).rev() {
            let base = g.base(top);
            if l >= base && l < base + g.span(top) {
                for level in (1..=top).rev() {
                    let span = g.span(level);
                    out.push((level, base + (l - base) / span * span));
                }
                break;
            }
        }
        out
    }

    /// A file with data at the given logical segments; blocks come from the cursor in logical
    /// order, each mapping block placed when the first block it maps is allocated.
    pub fn file(
        &mut self,
        ino: u32,
        parent: u32,
        name: &str,
        size_bytes: u64,
        segments: &[(u64, u64)],
        place: MapPlace,
    ) -> &mut PlannedInode {
        if self.format == MapFormat::Extents {
            return self.extent_file(ino, parent, name, size_bytes, segments, place);
        }
        let mut data: Vec<Run> = Vec::new();
        let mut mapping = Vec::new();
        let mut placed: BTreeSet<(u8, u64)> = BTreeSet::new();
        for &(start, len) in segments {
            for l in start..start + len {
                for key in self.containing(l) {
                    if placed.insert(key) {
                        let physical = self.take_from(matches!(place, MapPlace::Region));
                        mapping.push(MapBlock {
                            kind: kind_of(key.0),
                            logical: key.1,
                            physical,
                        });
                    }
                }
                let p = self.take();
                match data.last_mut() {
                    Some(r) if r.logical + r.len == l && r.physical + r.len == p => r.len += 1,
                    _ => data.push(Run {
                        logical: l,
                        physical: p,
                        len: 1,
                    }),
                }
            }
        }
        self.plan.inodes.push(PlannedInode {
            ino,
            kind: InodeKind::File,
            parent,
            name: name.into(),
            size_bytes,
            data,
            mapping,
            ..Default::default()
        });
        self.plan.inodes.last_mut().unwrap()
    }

    /// An extent-mapped file: data from the cursor in logical order, then the tree blocks
    /// the mapping module says libext2fs needs, in its allocation order
    /// ([`Builder::fragmented`] makes files of many extents).
    fn extent_file(
        &mut self,
        ino: u32,
        parent: u32,
        name: &str,
        size_bytes: u64,
        segments: &[(u64, u64)],
        place: MapPlace,
    ) -> &mut PlannedInode {
        let mut data: Vec<Run> = Vec::new();
        for &(start, len) in segments {
            for l in start..start + len {
                let p = self.take();
                push_run(&mut data, l, p, 1);
            }
        }
        self.push_extent_inode(ino, InodeKind::File, parent, name, size_bytes, data, place)
    }

    #[allow(clippy::too_many_arguments)]
    fn push_extent_inode(
        &mut self,
        ino: u32,
        kind: InodeKind,
        parent: u32,
        name: &str,
        size_bytes: u64,
        data: Vec<Run>,
        place: MapPlace,
    ) -> &mut PlannedInode {
        let need = required_mapping(MapFormat::Extents, &data, self.block_bytes).unwrap();
        let mapping = need
            .into_iter()
            .map(|(kind, logical)| MapBlock {
                kind,
                logical,
                physical: self.take_from(matches!(place, MapPlace::Region)),
            })
            .collect();
        self.plan.inodes.push(PlannedInode {
            ino,
            kind,
            parent,
            name: name.into(),
            size_bytes,
            data,
            mapping,
            format: MapFormat::Extents,
            ..Default::default()
        });
        self.plan.inodes.last_mut().unwrap()
    }

    /// An extent-mapped file of `extents` one-block extents, each a block apart (so none
    /// merge): enough of them grow leaf and index blocks.
    pub fn fragmented(&mut self, ino: u32, parent: u32, name: &str, extents: u64) {
        let mut data: Vec<Run> = Vec::new();
        for l in 0..extents {
            let p = self.take();
            self.take(); // a gap
            push_run(&mut data, l, p, 1);
        }
        let size = extents * self.block_bytes;
        self.push_extent_inode(
            ino,
            InodeKind::File,
            parent,
            name,
            size,
            data,
            MapPlace::Inline,
        );
    }

    /// A symlink: fast (no block) when the target fits the inode, else one block, mapped as
    /// ext2fs_symlink maps it on this image.
    pub fn symlink(&mut self, ino: u32, parent: u32, name: &str, target: &str) {
        let slow = target.len() > FAST_SYMLINK_MAX_BYTES;
        let data = if slow {
            vec![Run {
                logical: 0,
                physical: self.take(),
                len: 1,
            }]
        } else {
            Vec::new()
        };
        self.plan.inodes.push(PlannedInode {
            ino,
            kind: InodeKind::Symlink,
            parent,
            name: name.into(),
            size_bytes: target.len() as u64,
            data,
            format: if slow { self.format } else { MapFormat::Blocks },
            special: Special::Symlink {
                target: target.into(),
            },
            ..Default::default()
        });
    }

    /// A device node (with `rdev`), fifo or socket.
    pub fn node(&mut self, ino: u32, parent: u32, name: &str, kind: InodeKind, rdev: (u32, u32)) {
        let special = match kind {
            InodeKind::CharDev | InodeKind::BlockDev => Special::Device {
                major: rdev.0,
                minor: rdev.1,
            },
            _ => Special::None,
        };
        self.plan.inodes.push(PlannedInode {
            ino,
            kind,
            parent,
            name: name.into(),
            special,
            ..Default::default()
        });
    }

    /// Another name for inode `ino`.
    pub fn link(&mut self, parent: u32, name: &str, ino: u32) {
        self.plan.links.push(HardLink {
            parent,
            name: name.into(),
            ino,
        });
    }

    /// A dense file of `size_bytes`.
    pub fn dense(&mut self, ino: u32, parent: u32, name: &str, size_bytes: u64, place: MapPlace) {
        let blocks = size_bytes.div_ceil(self.block_bytes);
        self.file(ino, parent, name, size_bytes, &[(0, blocks)], place);
    }

    /// A directory of `blocks` contiguous-as-available blocks.
    pub fn dir(&mut self, ino: u32, parent: u32, name: &str, blocks: u64) {
        if self.format == MapFormat::Extents {
            let mut data: Vec<Run> = Vec::new();
            for l in 0..blocks {
                let p = self.take();
                push_run(&mut data, l, p, 1);
            }
            let size = blocks * self.block_bytes;
            self.push_extent_inode(
                ino,
                InodeKind::Dir,
                parent,
                name,
                size,
                data,
                MapPlace::Inline,
            );
            return;
        }
        let mut data: Vec<Run> = Vec::new();
        for l in 0..blocks {
            let p = self.take();
            match data.last_mut() {
                Some(r) if r.physical + r.len == p => r.len += 1,
                _ => data.push(Run {
                    logical: l,
                    physical: p,
                    len: 1,
                }),
            }
        }
        self.plan.inodes.push(PlannedInode {
            ino,
            kind: InodeKind::Dir,
            parent,
            name: name.into(),
            size_bytes: blocks * self.block_bytes,
            data,
            ..Default::default()
        });
    }
}

/// Every (inode, parent, name) of a plan: first names and hard links alike.
pub fn all_names(plan: &Plan) -> BTreeSet<(u32, u32, String)> {
    plan.inodes
        .iter()
        .filter(|i| i.ino != 2)
        .map(|i| (i.ino, i.parent, i.name.clone()))
        .chain(plan.links.iter().map(|l| (l.ino, l.parent, l.name.clone())))
        .collect()
}

/// Asserts that every plan inode reads back identically (mapping in tree order), that
/// i_blocks counts data plus mapping blocks, and that every name (hard links included) is
/// there. Which of an inode's names is its "first" depends on the walk, so names compare as
/// sets.
pub fn assert_round_trip(image: &Path, plan: &Plan) {
    let back = inspect(image).expect("inspect");
    let want = layoutlab_image::normalize_plan(plan);
    let got_names = all_names(&back.plan("image"));
    for (ino, parent, name) in all_names(plan) {
        assert!(
            got_names.contains(&(ino, parent, name.clone())),
            "name {name:?} of inode {ino} in directory {parent} missing from the image"
        );
    }
    for p in &want.inodes {
        let got = back
            .inode(p.ino)
            .unwrap_or_else(|| panic!("inode {} missing from image", p.ino));
        let mut got_planned = got.planned.clone();
        got_planned.parent = p.parent;
        got_planned.name = p.name.clone();
        assert_eq!(&got_planned, p, "inode {} differs", p.ino);
        assert_eq!(
            got.blocks_fs,
            p.data_blocks() + p.mapping.len() as u64,
            "i_blocks of inode {}",
            p.ino
        );
    }
    // nothing else appeared: the plan's inodes plus the root and lost+found
    for got in &back.inodes {
        let ino = got.planned.ino;
        assert!(
            ino == 2 || ino == 11 || want.inodes.iter().any(|p| p.ino == ino),
            "unexpected inode {ino}"
        );
    }
}

/// Runs `debugfs -R "stat <ino>"` and returns its output.
pub fn debugfs_stat(image: &Path, ino: u32) -> String {
    let out = std::process::Command::new("debugfs")
        .arg("-R")
        .arg(format!("stat <{ino}>"))
        .arg(image)
        .output()
        .expect("debugfs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// FNV-1a of a file's bytes: detects any write to an image.
pub fn digest(path: &Path) -> u64 {
    use std::io::Read;
    let mut f = std::fs::File::open(path).unwrap();
    let mut buf = vec![0u8; 1 << 20];
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    loop {
        let n = f.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        for &b in &buf[..n] {
            h = (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

/// What e2fsck -v should say of `plan`'s inodes, by e2fsck's own rules (pass1.c
/// `check_blocks()`): (non-contiguous files, non-contiguous directories, extent depth
/// histogram). Blocks are visited as `ext2fs_block_iterate` visits them (a TIND, DIND or IND
/// block before the data it maps) or, for extents, leaf extent by leaf extent; a file is
/// non-contiguous when a block is not the one after the previous, and counted only when it has
/// fewer blocks than a group. The histogram counts inodes with an extent tree by its depth.
///
/// `fresh` is e2fsck's summary of the image mke2fs made: its inodes that the plan does not
/// replace (the journal; lost+found and the root unless planned) count as they were there,
/// all of them contiguous and of depth 0.
pub fn expected_vitals(
    plan: &Plan,
    blocks_per_group: u64,
    fresh: &layoutlab_image::FsckVitals,
) -> (u64, u64, Vec<u64>) {
    use layoutlab_layout::MapKind;
    let (mut files, mut dirs) = (fresh.non_contiguous_files, fresh.non_contiguous_dirs);
    let mut hist = fresh.extent_depth_histogram.clone();
    for i in &plan.inodes {
        // A reserved inode the plan rewrites (the root) was in `fresh` at depth 0.
        if i.ino <= 11 && !hist.is_empty() && i.format == MapFormat::Extents {
            hist[0] -= 1;
        }
        let blocks = i.data_blocks() + i.mapping.len() as u64;
        if blocks == 0 && i.format != MapFormat::Extents {
            continue;
        }
        let discontiguous = match i.format {
            MapFormat::Extents => {
                let depth = i
                    .mapping
                    .iter()
                    .filter_map(|m| match m.kind {
                        MapKind::Extent { height } => Some(usize::from(height) + 1),
                        _ => None,
                    })
                    .max()
                    .unwrap_or(0);
                if matches!(i.kind, InodeKind::File | InodeKind::Dir) || i.data_blocks() > 0 {
                    if hist.len() <= depth {
                        hist.resize(depth + 1, 0);
                    }
                    hist[depth] += 1;
                }
                i.data
                    .windows(2)
                    .any(|w| w[1].physical != w[0].physical + w[0].len)
            }
            MapFormat::Blocks => {
                // (logical, rank, physical): at one logical block, TIND before DIND before
                // IND before the data.
                let mut seq: Vec<(u64, u8, u64)> = i
                    .mapping
                    .iter()
                    .map(|m| {
                        let rank = match m.kind {
                            MapKind::Tind => 0,
                            MapKind::Dind => 1,
                            _ => 2,
                        };
                        (m.logical, rank, m.physical)
                    })
                    .collect();
                for r in &i.data {
                    seq.extend((0..r.len).map(|k| (r.logical + k, 3, r.physical + k)));
                }
                seq.sort_unstable();
                seq.windows(2).any(|w| w[1].2 != w[0].2 + 1)
            }
        };
        if discontiguous && blocks < blocks_per_group {
            if i.kind == InodeKind::Dir {
                dirs += 1;
            } else {
                files += 1;
            }
        }
    }
    (files, dirs, hist)
}
