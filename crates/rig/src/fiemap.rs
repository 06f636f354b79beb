//! Per-file layout as the kernel reports it, for any file system: the extents of every
//! regular file from the `FS_IOC_FIEMAP` ioctl (include/uapi/linux/fiemap.h;
//! Documentation/filesystems/fiemap.rst), and from them fragments per file and the layout
//! score.
//!
//! FIEMAP reports byte ranges: an extent's offset in the file (`fe_logical`), its address on
//! the device (`fe_physical`), its length and flags. The mapping is asked with
//! `FIEMAP_FLAG_SYNC` (the file's dirty data is written back first, so delayed allocation has
//! placed it), from offset 0 to the end, in batches until an extent says `FIEMAP_EXTENT_LAST`.
//! What each file system reports differs (docs/aging-kernel.md): ext4 one extent per on-disk
//! extent (at most 32,768 blocks each); XFS may report preallocated blocks beyond the end of
//! file; btrfs reports addresses in its own logical address space (single-device, `single`
//! data profile: an offset into the data chunks, contiguous where the device is within a
//! chunk), small files inline in the metadata (`FIEMAP_EXTENT_DATA_INLINE`: no data block)
//! and compressed extents as `FIEMAP_EXTENT_ENCODED`.
//!
//! From the extents, in blocks of the file system's block size, counting only blocks below
//! the end of file (`ceil(size / block)`) and not inline data:
//! - **fragments**: physically discontiguous pieces of a file's blocks (runs that continue
//!   each other both in the file and on the device count as one: `filefrag`'s count, and
//!   [`layoutlab_layout::PlannedInode::fragments`]);
//! - **layout score** (Conway et al., "File Systems Fated for Senescence? Nonsense, Says
//!   Science!", FAST '17, §3): of the blocks after a file's first, the fraction whose physical
//!   block follows the physical block of the previous logical block; over many files, block
//!   weighted (the sum of such blocks over the sum of blocks after each file's first); 1 is
//!   perfectly sequential, and a set with no file of two blocks or more scores 1.

use crate::error::{Result, RigError};
use layoutlab_layout::{push_run, Run};
use std::collections::HashSet;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// The extent is the file's last.
pub const FIEMAP_EXTENT_LAST: u32 = 0x1;
/// The data's location is not known.
pub const FIEMAP_EXTENT_UNKNOWN: u32 = 0x2;
/// Delayed allocation: no physical block yet.
pub const FIEMAP_EXTENT_DELALLOC: u32 = 0x4;
/// The data is encoded (e.g. btrfs compression): its physical length differs.
pub const FIEMAP_EXTENT_ENCODED: u32 = 0x8;
/// The offsets are not block aligned.
pub const FIEMAP_EXTENT_NOT_ALIGNED: u32 = 0x100;
/// The data sits in the file system's metadata (btrfs inline, ext4 inline_data).
pub const FIEMAP_EXTENT_DATA_INLINE: u32 = 0x200;
/// Allocated but not written (preallocation): reads as zeros.
pub const FIEMAP_EXTENT_UNWRITTEN: u32 = 0x800;
/// Shared with another file (reflink, snapshot).
pub const FIEMAP_EXTENT_SHARED: u32 = 0x2000;

const FIEMAP_FLAG_SYNC: u32 = 0x1;
/// `_IOWR('f', 11, struct fiemap)`: struct fiemap's header is 32 bytes.
const FS_IOC_FIEMAP: libc::c_ulong = 0xC020_660B;
/// Extents asked per ioctl.
const BATCH: usize = 512;

/// One extent as FIEMAP reports it (bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Extent {
    /// Offset in the file.
    pub logical: u64,
    /// Address on the device (btrfs: in its logical address space).
    pub physical: u64,
    /// Length.
    pub length: u64,
    /// `FIEMAP_EXTENT_*` flags.
    pub flags: u32,
}

impl Extent {
    /// Inline data (no data block of its own).
    pub fn is_inline(&self) -> bool {
        self.flags & FIEMAP_EXTENT_DATA_INLINE != 0
    }

    /// Without a physical location (delayed allocation, unknown).
    pub fn is_unplaced(&self) -> bool {
        self.flags & (FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_DELALLOC) != 0
    }
}

/// `struct fiemap_extent` (56 bytes).
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct RawExtent {
    fe_logical: u64,
    fe_physical: u64,
    fe_length: u64,
    fe_reserved64: [u64; 2],
    fe_flags: u32,
    fe_reserved: [u32; 3],
}

/// `struct fiemap` with room for [`BATCH`] extents.
#[repr(C)]
struct RawFiemap {
    fm_start: u64,
    fm_length: u64,
    fm_flags: u32,
    fm_mapped_extents: u32,
    fm_extent_count: u32,
    fm_reserved: u32,
    fm_extents: [RawExtent; BATCH],
}

/// Every extent of the file `path` (its data written back first), in file order.
pub fn fiemap(path: &Path) -> Result<Vec<Extent>> {
    let f = std::fs::File::open(path)
        .map_err(|e| RigError::io(format!("open {}", path.display()), e))?;
    let mut raw = Box::new(RawFiemap {
        fm_start: 0,
        fm_length: 0,
        fm_flags: 0,
        fm_mapped_extents: 0,
        fm_extent_count: 0,
        fm_reserved: 0,
        fm_extents: [RawExtent::default(); BATCH],
    });
    let mut out = Vec::new();
    let mut start = 0u64;
    loop {
        raw.fm_start = start;
        raw.fm_length = u64::MAX - start;
        raw.fm_flags = FIEMAP_FLAG_SYNC;
        raw.fm_mapped_extents = 0;
        raw.fm_extent_count = BATCH as u32;
        // SAFETY: raw is a struct fiemap with fm_extent_count extents of room.
        let rc = unsafe { libc::ioctl(f.as_raw_fd(), FS_IOC_FIEMAP as _, &mut *raw) };
        if rc != 0 {
            return Err(RigError::last_os(format!("FIEMAP {}", path.display())));
        }
        let n = raw.fm_mapped_extents as usize;
        if n == 0 {
            return Ok(out);
        }
        for e in &raw.fm_extents[..n] {
            out.push(Extent {
                logical: e.fe_logical,
                physical: e.fe_physical,
                length: e.fe_length,
                flags: e.fe_flags,
            });
        }
        let last = raw.fm_extents[n - 1];
        if last.fe_flags & FIEMAP_EXTENT_LAST != 0 {
            return Ok(out);
        }
        start = last.fe_logical + last.fe_length;
    }
}

/// A regular file's layout: its size and extents.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct FileLayout {
    /// Its name relative to the walked root (the first in name order when it has several).
    pub path: String,
    /// Its inode number (to join with a layout read back otherwise, e.g. an inspected
    /// image's plan).
    pub ino: u64,
    /// Size in bytes.
    pub size: u64,
    /// Names (hard links).
    pub links: u64,
    /// FIEMAP's extents, in file order.
    pub extents: Vec<Extent>,
}

impl FileLayout {
    /// Blocks below the end of file: `ceil(size / block)`.
    pub fn eof_blocks(&self, block: u64) -> u64 {
        self.size.div_ceil(block)
    }

    /// The file's data blocks below the end of file as maximal runs (in blocks; runs that
    /// continue each other in the file and on the device merged), inline and unplaced
    /// extents left out.
    pub fn runs(&self, block: u64) -> Vec<Run> {
        let eof = self.eof_blocks(block);
        let mut runs = Vec::new();
        for e in self
            .extents
            .iter()
            .filter(|e| !e.is_inline() && !e.is_unplaced())
        {
            let logical = e.logical / block;
            if logical >= eof {
                continue;
            }
            let len = (e.logical + e.length).div_ceil(block).min(eof) - logical;
            push_run(&mut runs, logical, e.physical / block, len);
        }
        runs
    }

    /// Blocks below the end of file that some extent (inline included) maps.
    pub fn covered_blocks(&self, block: u64) -> u64 {
        let eof = self.eof_blocks(block);
        let mut covered: Vec<(u64, u64)> = self
            .extents
            .iter()
            .map(|e| {
                (
                    (e.logical / block).min(eof),
                    (e.logical + e.length).div_ceil(block).min(eof),
                )
            })
            .collect();
        covered.sort_unstable();
        let (mut n, mut reach) = (0u64, 0u64);
        for (a, b) in covered {
            let a = a.max(reach);
            if b > a {
                n += b - a;
                reach = b;
            }
        }
        n
    }

    /// Bytes of extents beyond the end of file (XFS's speculative preallocation, or
    /// `fallocate` with KEEP_SIZE), measured from the block holding the end of file.
    pub fn bytes_beyond_eof(&self, block: u64) -> u64 {
        let end = self.eof_blocks(block) * block;
        self.extents
            .iter()
            .map(|e| (e.logical + e.length).saturating_sub(end.max(e.logical)))
            .sum()
    }

    /// Physically discontiguous pieces of the file's blocks (0 when it has none).
    pub fn fragments(&self, block: u64) -> u64 {
        self.runs(block).len() as u64
    }

    /// (blocks after the file's first that follow the previous logical block on the
    /// device, blocks after the file's first): the layout score's numerator and denominator.
    pub fn contiguity(&self, block: u64) -> (u64, u64) {
        let runs = self.runs(block);
        let blocks: u64 = runs.iter().map(|r| r.len).sum();
        // runs are maximal: each boundary between two is a discontiguity (or a hole)
        let contiguous: u64 = runs.iter().map(|r| r.len - 1).sum();
        (contiguous, blocks.saturating_sub(1))
    }

    /// The file's layout score (1 when it has fewer than two blocks).
    pub fn layout_score(&self, block: u64) -> f64 {
        let (c, n) = self.contiguity(block);
        if n == 0 {
            1.0
        } else {
            c as f64 / n as f64
        }
    }
}

/// The block size the file system under `dir` reports (`statvfs` f_bsize).
pub fn block_size(dir: &Path) -> Result<u64> {
    Ok(crate::system::statvfs(dir)?.f_bsize as u64)
}

/// The layout of every regular file under `root` (once per inode, whatever its number of
/// names), in path order. Symlinks are not followed; directories on other file systems are
/// not entered.
pub fn file_layouts(root: &Path) -> Result<Vec<FileLayout>> {
    let dev = std::fs::metadata(root)
        .map_err(|e| RigError::io(format!("stat {}", root.display()), e))?
        .dev();
    let mut files = Vec::new();
    let mut seen: HashSet<u64> = HashSet::new();
    let mut stack = vec![String::new()];
    let mut names: Vec<(String, std::fs::Metadata)> = Vec::new();
    while let Some(rel) = stack.pop() {
        let dir = root.join(&rel);
        let rd = std::fs::read_dir(&dir)
            .map_err(|e| RigError::io(format!("read directory {}", dir.display()), e))?;
        for entry in rd {
            let entry =
                entry.map_err(|e| RigError::io(format!("read directory {}", dir.display()), e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = if rel.is_empty() {
                name
            } else {
                format!("{rel}/{name}")
            };
            let md = entry
                .metadata()
                .map_err(|e| RigError::io(format!("stat {path}"), e))?;
            if md.is_dir() && md.dev() == dev {
                stack.push(path);
            } else if md.is_file() {
                names.push((path, md));
            }
        }
    }
    names.sort_by(|a, b| a.0.cmp(&b.0));
    for (path, md) in names {
        if !seen.insert(md.ino()) {
            continue;
        }
        let extents = fiemap(&root.join(&path))?;
        files.push(FileLayout {
            path,
            ino: md.ino(),
            size: md.len(),
            links: md.nlink(),
            extents,
        });
    }
    Ok(files)
}

/// Mean, median, 90th and 99th percentiles and maximum of a distribution (the fields and
/// nearest-rank percentiles of the layout crate's `FragmentStats`).
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct Distribution {
    /// Mean.
    pub mean: f64,
    /// Median (nearest rank).
    pub median: u64,
    /// 90th percentile (nearest rank).
    pub p90: u64,
    /// 99th percentile (nearest rank).
    pub p99: u64,
    /// Largest.
    pub max: u64,
}

impl Distribution {
    /// Of `values` (zeros for an empty set).
    pub fn of(values: &mut [u64]) -> Distribution {
        if values.is_empty() {
            return Distribution::default();
        }
        values.sort_unstable();
        // nearest rank of percentile p, in integers (a float product can land just above
        // a whole rank and round up past it)
        let rank = |p: usize| values[(p * values.len()).div_ceil(100).max(1) - 1];
        Distribution {
            mean: values.iter().sum::<u64>() as f64 / values.len() as f64,
            median: rank(50),
            p90: rank(90),
            p99: rank(99),
            max: *values.last().expect("not empty"),
        }
    }
}

/// A file system's files summed up.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct LayoutSummary {
    /// Block size the figures count in.
    pub block_bytes: u64,
    /// Regular files.
    pub files: u64,
    /// Of them, files with at least one data block (the fragments' population).
    pub files_with_blocks: u64,
    /// Files whose data is inline (no data block).
    pub inline_files: u64,
    /// Data blocks below the ends of file.
    pub data_blocks: u64,
    /// Fragments per file with data blocks.
    pub fragments: Distribution,
    /// Files in more than one fragment.
    pub fragmented_files: u64,
    /// Block-weighted layout score (Conway et al., FAST '17).
    pub layout_score: f64,
    /// Bytes mapped beyond the ends of file (preallocation).
    pub bytes_beyond_eof: u64,
}

/// Sums up `files` in blocks of `block` bytes.
pub fn summarize(files: &[FileLayout], block: u64) -> LayoutSummary {
    let mut frags = Vec::new();
    let (mut contiguous, mut pairs, mut blocks, mut inline, mut beyond) = (0, 0, 0, 0, 0);
    for f in files {
        let runs = f.runs(block);
        if !runs.is_empty() {
            frags.push(runs.len() as u64);
        } else if f.extents.iter().any(Extent::is_inline) {
            inline += 1;
        }
        let (c, n) = f.contiguity(block);
        contiguous += c;
        pairs += n;
        blocks += runs.iter().map(|r| r.len).sum::<u64>();
        beyond += f.bytes_beyond_eof(block);
    }
    LayoutSummary {
        block_bytes: block,
        files: files.len() as u64,
        files_with_blocks: frags.len() as u64,
        inline_files: inline,
        data_blocks: blocks,
        fragmented_files: frags.iter().filter(|&&n| n > 1).count() as u64,
        fragments: Distribution::of(&mut frags),
        layout_score: if pairs == 0 {
            1.0
        } else {
            contiguous as f64 / pairs as f64
        },
        bytes_beyond_eof: beyond,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ext(logical: u64, physical: u64, length: u64) -> Extent {
        Extent {
            logical,
            physical,
            length,
            flags: 0,
        }
    }

    #[test]
    fn the_raw_structs_have_the_kernels_sizes() {
        assert_eq!(std::mem::size_of::<RawExtent>(), 56);
        assert_eq!(std::mem::size_of::<RawFiemap>(), 32 + 56 * BATCH);
        // _IOWR('f', 11, 32 bytes): dir 3 << 30 | size << 16 | 'f' << 8 | 11
        assert_eq!(FS_IOC_FIEMAP, (3 << 30) | (32 << 16) | (0x66 << 8) | 11);
    }

    #[test]
    fn score_and_fragments_count_blocks_after_the_first() {
        let b = 4096;
        // 10 blocks: 4 at 100, then 3 continuing at 104 (a second extent, contiguous), then
        // 3 at 200: 9 blocks after the first, 8 follow their predecessor
        let f = FileLayout {
            path: "f".into(),
            size: 10 * b - 1,
            ino: 12,
            links: 1,
            extents: vec![
                ext(0, 100 * b, 4 * b),
                ext(4 * b, 104 * b, 3 * b),
                ext(7 * b, 200 * b, 3 * b),
                // preallocated beyond the end of file: not counted, reported
                ext(10 * b, 203 * b, 6 * b),
            ],
        };
        assert_eq!(f.fragments(b), 2);
        assert_eq!(f.contiguity(b), (8, 9));
        assert_eq!(f.covered_blocks(b), 10);
        assert_eq!(f.bytes_beyond_eof(b), 6 * b);
        let one = FileLayout {
            path: "g".into(),
            size: 1,
            ino: 12,
            links: 1,
            extents: vec![ext(0, 7 * b, b)],
        };
        let inline = FileLayout {
            path: "h".into(),
            size: 100,
            ino: 12,
            links: 1,
            extents: vec![Extent {
                flags: FIEMAP_EXTENT_DATA_INLINE | FIEMAP_EXTENT_NOT_ALIGNED | FIEMAP_EXTENT_LAST,
                ..ext(0, 0, b)
            }],
        };
        assert_eq!((inline.fragments(b), inline.covered_blocks(b)), (0, 1));
        let s = summarize(&[f, one, inline], b);
        assert_eq!((s.files, s.files_with_blocks, s.inline_files), (3, 2, 1));
        assert_eq!(s.data_blocks, 11);
        assert!((s.layout_score - 8.0 / 9.0).abs() < 1e-12);
        assert_eq!(
            (s.fragments.median, s.fragments.max, s.fragmented_files),
            (1, 2, 1)
        );
        assert_eq!(summarize(&[], b).layout_score, 1.0);
    }

    #[test]
    fn distributions_use_nearest_rank() {
        let d = Distribution::of(&mut [5, 1, 2, 3, 4, 6, 7, 8, 9, 10]);
        assert_eq!((d.median, d.p90, d.p99, d.max), (5, 9, 10, 10));
        assert!((d.mean - 5.5).abs() < 1e-12);
    }
}
