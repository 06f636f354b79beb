//! Layout metrics of a plan or an inspected image: how contiguous the files are, how scattered
//! the free space is, and how spread out the blocks e2fsck must read (mapping and directory
//! blocks) are. One entry point, [`LayoutMetrics::of`] (a plan on its [`Geometry`]), or
//! [`LayoutMetrics::with_free_map`] (any plan with its free space given, e.g. an image's block
//! bitmap). Definitions, sources and what each predicts: docs/metrics.md.
//!
//! Linear in the plan's runs and mapping blocks plus one word-at-a-time pass over the free map
//! (`blocks / 64` words); the only sorts are of mapping blocks, directory runs and per-file
//! fragment counts. No per-block hashing.
//!
//! ```
//! use layoutlab_layout::metrics::LayoutMetrics;
//! use layoutlab_layout::{policy, Geometry, MkfsProfile, PolicyParams};
//! let profile = MkfsProfile::by_name("ext3-2007").unwrap();
//! let pop = layoutlab_workload::population_by_name("bench5").unwrap().scale(0.002).unwrap();
//! let geo = Geometry::new(&profile, pop.fs_bytes).unwrap();
//! let plan = policy::by_name("ext3-2007", &PolicyParams::new()).unwrap().plan(&geo, &pop, 1).unwrap();
//! let m = LayoutMetrics::of(&plan, &geo);
//! assert!(m.layout_score.score > 0.9 && m.layout_score.score <= 1.0);
//! assert_eq!(m.fragments.files, 350);
//! assert!(m.free_space.free_blocks < geo.free_map().total_free());
//! ```

use crate::alloc::FreeMap;
use crate::geometry::{Geometry, MetaKind};
use crate::plan::{InodeKind, Plan};
use serde::{Deserialize, Serialize};
use std::cmp::Reverse;

/// e2freefrag's default chunk size (misc/e2freefrag.h `DEFAULT_CHUNKSIZE`): 1 MiB.
pub const DEFAULT_CHUNK_BYTES: u64 = 1 << 20;

/// Buckets of e2freefrag's free-extent histogram (misc/e2freefrag.h `MAX_HIST`).
pub const FREE_HISTOGRAM_BUCKETS: usize = 32;

/// Every layout metric of one file system state (a plan on its geometry, or an image).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LayoutMetrics {
    /// Block size in bytes.
    pub block_size_bytes: u32,
    /// Blocks in the file system.
    pub blocks_count: u64,
    /// Block groups.
    pub groups: u64,
    /// Layout score of the regular files (Smith & Seltzer, as Conway et al. use it).
    pub layout_score: LayoutScore,
    /// Fragments per regular file.
    pub fragments: FragmentStats,
    /// Free-space fragmentation, as e2freefrag reports it.
    pub free_space: FreeSpace,
    /// Where the mapping blocks (indirect and extent-tree blocks) are.
    pub mapping: MappingDispersion,
    /// Where the directory blocks are.
    pub directories: Dispersion,
}

/// The layout score: of every regular file's blocks after its first, the fraction that sits
/// physically right after the file's previous logical block.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LayoutScore {
    /// Block-weighted aggregate: `contiguous_blocks / scored_blocks` (1.0 when no file has
    /// two blocks: nothing is out of place).
    pub score: f64,
    /// Blocks (after a file's first) right after their previous logical block on disk.
    pub contiguous_blocks: u64,
    /// Blocks scored: Σ (blocks − 1) over regular files of ≥ 2 blocks.
    pub scored_blocks: u64,
    /// Regular files of ≥ 2 blocks.
    pub scored_files: u64,
}

/// Fragments (physically contiguous pieces) per regular file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FragmentStats {
    /// Regular files.
    pub files: u64,
    /// Regular files with no data block (size 0, or all holes): 0 fragments, left out of
    /// the statistics below.
    pub empty_files: u64,
    /// Regular files of exactly one block (one fragment; included below).
    pub single_block_files: u64,
    /// Files of ≥ 1 block with more than one fragment.
    pub fragmented_files: u64,
    /// Fragments over all files of ≥ 1 block.
    pub total_fragments: u64,
    /// Mean fragments per file of ≥ 1 block (0 when there is none).
    pub mean: f64,
    /// Median (nearest rank) over files of ≥ 1 block.
    pub median: u64,
    /// 90th percentile (nearest rank).
    pub p90: u64,
    /// 99th percentile (nearest rank).
    pub p99: u64,
    /// Most fragments of any file.
    pub max: u64,
    /// Files per power-of-two fragment count (1, 2–3, 4–7, ...), up to the bucket of `max`.
    pub histogram: Vec<FragmentBucket>,
}

/// Files whose fragment count is in `min..=max`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FragmentBucket {
    /// Fewest fragments in the bucket.
    pub min_fragments: u64,
    /// Most fragments in the bucket.
    pub max_fragments: u64,
    /// Files.
    pub files: u64,
}

/// Free space as e2fsprogs' e2freefrag reports it for an unmounted file system
/// (misc/e2freefrag.c `scan_block_bitmap()`, `update_chunk_stats()`, `dump_chunk_info()`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FreeSpace {
    /// Blocks in the file system.
    pub total_blocks: u64,
    /// Free blocks.
    pub free_blocks: u64,
    /// `free_blocks` as a percentage of `total_blocks`.
    pub free_percent: f64,
    /// Maximal runs of free blocks, over the whole file system from `s_first_data_block`
    /// (a run may cross a group boundary, as in e2freefrag's scan).
    pub free_extents: u64,
    /// Smallest free extent in blocks (0 when there is none).
    pub min_extent_blocks: u64,
    /// Largest free extent in blocks.
    pub max_extent_blocks: u64,
    /// Mean free extent in blocks (exact; e2freefrag's KB figure truncates).
    pub avg_extent_blocks: f64,
    /// e2freefrag's "Min. free extent" in KB.
    pub min_extent_kb: u64,
    /// e2freefrag's "Max. free extent" in KB.
    pub max_extent_kb: u64,
    /// e2freefrag's "Avg. free extent" in KB: `(Σ blocks / extents) × KB per block`, in
    /// integers as e2freefrag computes it.
    pub avg_extent_kb: u64,
    /// Non-empty buckets of the histogram by power-of-two size.
    pub histogram: Vec<FreeBucket>,
    /// Chunk size in bytes ([`DEFAULT_CHUNK_BYTES`]).
    pub chunk_bytes: u64,
    /// Blocks per chunk.
    pub chunk_blocks: u64,
    /// e2freefrag's "Total chunks": `(blocks + chunk_blocks) / chunk_blocks` (its formula,
    /// one more than the whole chunks when the size is a multiple).
    pub total_chunks: u64,
    /// Aligned chunks all of whose blocks are free.
    pub free_chunks: u64,
    /// `free_chunks` as a percentage of `total_chunks`.
    pub free_chunks_percent: f64,
}

/// One bucket of the free-extent histogram: extents of `min_blocks..=max_blocks` blocks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FreeBucket {
    /// e2freefrag's bucket index: ⌊log2(extent blocks)⌋ + 1, the last (31) open-ended.
    pub index: u32,
    /// Smallest extent (blocks) the bucket holds.
    pub min_blocks: u64,
    /// Largest extent (blocks) the bucket holds (`u64::MAX` for the last).
    pub max_blocks: u64,
    /// e2freefrag's range label, e.g. `"   4K...    8K-"`.
    pub range: String,
    /// Free extents in the bucket.
    pub extents: u64,
    /// Free blocks in those extents.
    pub blocks: u64,
    /// `blocks` as a percentage of all free blocks.
    pub percent: f64,
}

/// How spread out a set of blocks is, read in disk order (one elevator sweep).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Dispersion {
    /// Blocks in the set.
    pub blocks: u64,
    /// Maximal physically contiguous runs: the seeks of one sweep (the first included).
    pub runs: u64,
    /// Block groups holding at least one of them.
    pub groups: u64,
    /// First to last block, inclusive (0 for an empty set).
    pub span_blocks: u64,
    /// Blocks inside the span that are not in the set: what a sweep passes over.
    pub skipped_blocks: u64,
    /// Mean distance (blocks) from each block to the next in disk order: `(span − 1) /
    /// (blocks − 1)`; 0 with fewer than two blocks.
    pub mean_gap: f64,
    /// Median (nearest rank) of those distances; 0 with fewer than two blocks.
    pub median_gap: u64,
}

/// Mapping blocks: their disk-order dispersion plus two orders e2fsck and readers see.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MappingDispersion {
    /// Disk-order dispersion of all mapping blocks.
    #[serde(flatten)]
    pub disk: Dispersion,
    /// Mean absolute distance (blocks) between consecutive mapping blocks in e2fsck pass 1's
    /// order: inodes by number, each inode's tree top-down by logical block.
    pub fsck_order_mean_distance: f64,
    /// Mean absolute distance (blocks) from each mapping block to the first data block of
    /// the range it maps.
    pub to_data_mean: f64,
    /// Median (nearest rank) of those distances.
    pub to_data_median: u64,
}

impl LayoutMetrics {
    /// Metrics of `plan` laid out on `geo`: free space is the geometry's free map minus every
    /// block the plan uses; lost+found (made by mke2fs, so in the geometry, not in a policy's
    /// plan) counts as a directory when the plan has no inode 11.
    pub fn of(plan: &Plan, geo: &Geometry) -> LayoutMetrics {
        let mut free = geo.free_map();
        for inode in &plan.inodes {
            for r in &inode.data {
                mark_used_where_free(&mut free, r.physical, r.len);
            }
            for m in &inode.mapping {
                mark_used_where_free(&mut free, m.physical, 1);
            }
        }
        let lost_found: Vec<(u64, u64)> = if plan.inodes.iter().any(|i| i.ino == 11) {
            Vec::new()
        } else {
            geo.meta
                .iter()
                .filter(|m| m.kind == MetaKind::LostFound)
                .map(|m| (m.start, m.blocks))
                .collect()
        };
        compute(plan, &free, geo.block_size_bytes, &lost_found)
    }

    /// Metrics of `plan` when `free` already marks every used block (e.g. an image's block
    /// bitmap, as `layoutlab image inspect --metrics` reads it).
    pub fn with_free_map(plan: &Plan, free: &FreeMap, block_size_bytes: u32) -> LayoutMetrics {
        compute(plan, free, block_size_bytes, &[])
    }
}

/// Marks the free blocks of `start..start+len` used; blocks already used stay so (a plan's
/// root directory shares its first block with mke2fs's; an image's bitmap may list block 0
/// of a 1 KiB file system, which the map already holds as used). Blocks past the end are
/// ignored.
pub fn mark_used_where_free(map: &mut FreeMap, start: u64, len: u64) {
    let end = start.saturating_add(len).min(map.blocks_count());
    let mut at = start;
    while let Some(s) = map.next_free(at, end) {
        let e = map.next_used(s, end);
        map.mark_used(s, e - s);
        at = e;
    }
}

fn compute(
    plan: &Plan,
    free: &FreeMap,
    block_size_bytes: u32,
    extra_dir_runs: &[(u64, u64)],
) -> LayoutMetrics {
    let (layout_score, fragments) = file_metrics(plan);
    let mut dir_runs: Vec<(u64, u64)> = extra_dir_runs.to_vec();
    for inode in plan.inodes.iter().filter(|i| i.kind == InodeKind::Dir) {
        dir_runs.extend(inode.data.iter().map(|r| (r.physical, r.len)));
    }
    LayoutMetrics {
        block_size_bytes,
        blocks_count: free.blocks_count(),
        groups: free.group_count(),
        layout_score,
        fragments,
        free_space: free_space(free, block_size_bytes, DEFAULT_CHUNK_BYTES),
        mapping: mapping_dispersion(plan, free),
        directories: dispersion(dir_runs, free),
    }
}

/// Nearest-rank percentile `p` (0..=100) of ascending `sorted` (0 when empty).
fn nearest_rank(sorted: &[u64], p: u64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (p * sorted.len() as u64).div_ceil(100).max(1);
    sorted[rank as usize - 1]
}

fn file_metrics(plan: &Plan) -> (LayoutScore, FragmentStats) {
    let mut frags = Vec::new();
    let (mut files, mut empty, mut single) = (0, 0, 0);
    let (mut contiguous, mut scored, mut scored_files) = (0u64, 0u64, 0u64);
    for inode in plan.inodes.iter().filter(|i| i.kind == InodeKind::File) {
        files += 1;
        let blocks = inode.data_blocks();
        if blocks == 0 {
            empty += 1;
            continue;
        }
        // Every fragment after the first begins with a block that does not follow its
        // predecessor on disk; every other block after the file's first does.
        let f = inode.fragments();
        frags.push(f);
        if blocks == 1 {
            single += 1;
            continue;
        }
        contiguous += blocks - f;
        scored += blocks - 1;
        scored_files += 1;
    }
    let score = LayoutScore {
        score: if scored == 0 {
            1.0
        } else {
            contiguous as f64 / scored as f64
        },
        contiguous_blocks: contiguous,
        scored_blocks: scored,
        scored_files,
    };
    frags.sort_unstable();
    let total: u64 = frags.iter().sum();
    let max = frags.last().copied().unwrap_or(0);
    let mut histogram = Vec::new();
    if max > 0 {
        let top = 63 - max.leading_zeros();
        histogram = (0..=top)
            .map(|k| FragmentBucket {
                min_fragments: 1 << k,
                max_fragments: (1u64 << (k + 1)) - 1,
                files: 0,
            })
            .collect();
        for &f in &frags {
            histogram[(63 - f.leading_zeros()) as usize].files += 1;
        }
    }
    let stats = FragmentStats {
        files,
        empty_files: empty,
        single_block_files: single,
        fragmented_files: frags.iter().filter(|&&f| f > 1).count() as u64,
        total_fragments: total,
        mean: if frags.is_empty() {
            0.0
        } else {
            total as f64 / frags.len() as f64
        },
        median: nearest_rank(&frags, 50),
        p90: nearest_rank(&frags, 90),
        p99: nearest_rank(&frags, 99),
        max,
        histogram,
    };
    (score, stats)
}

/// e2fsprogs' `ext2fs_log2_u32()`: ⌊log2(n)⌋ (0 for 0 and 1).
fn log2_floor(n: u64) -> u32 {
    if n == 0 {
        0
    } else {
        63 - n.leading_zeros()
    }
}

/// e2freefrag's figures for the free space `free` (see [`FreeSpace`]), chunks of
/// `chunk_bytes` (a power of two ≥ the block size).
pub fn free_space(free: &FreeMap, block_size_bytes: u32, chunk_bytes: u64) -> FreeSpace {
    let blocks = free.blocks_count();
    let first = free.first_data_block();
    let bs = u64::from(block_size_bytes);
    let mut extents = [0u64; FREE_HISTOGRAM_BUCKETS];
    let mut ext_blocks = [0u64; FREE_HISTOGRAM_BUCKETS];
    let (mut count, mut sum, mut min, mut max) = (0u64, 0u64, u64::MAX, 0u64);
    // scan_block_bitmap(): one pass from s_first_data_block; a free run ends only at a used
    // block (or the end), never at a chunk or group boundary.
    let mut at = first;
    while let Some(s) = free.next_free(at, blocks) {
        let e = free.next_used(s, blocks);
        let len = e - s;
        // update_chunk_stats(): idx = ext2fs_log2_u32(size) + 1, capped at MAX_HIST - 1
        let idx = ((log2_floor(len) + 1) as usize).min(FREE_HISTOGRAM_BUCKETS - 1);
        extents[idx] += 1;
        ext_blocks[idx] += len;
        count += 1;
        sum += len;
        min = min.min(len);
        max = max.max(len);
        at = e;
    }
    // Chunks: chunk c covers blocks c*n..(c+1)*n; e2freefrag starts chunk 0 at
    // s_first_data_block, so with 1 KiB blocks chunk 0 is one block short and never free; a
    // short last chunk never is either.
    let chunk_blocks = (chunk_bytes / bs).max(1);
    let total_chunks = (blocks + chunk_blocks) / chunk_blocks;
    let mut free_chunks = 0;
    for c in 0..total_chunks {
        let start = c * chunk_blocks;
        let end = start + chunk_blocks;
        if end > blocks || (c == 0 && first > 0) {
            continue;
        }
        if free.next_used(start, end) == end {
            free_chunks += 1;
        }
    }
    let free_blocks = sum;
    let kb_per_block = bs >> 10;
    let bits = log2_floor(bs);
    // dump_chunk_info(): bucket i ends at 1 << (i + blocksize_bits - units) of the current
    // unit (K, then M once a start reaches 1024, ...); the last bucket is open-ended.
    let mut histogram = Vec::new();
    let units = b"KMGTPEZY";
    let (mut unit, mut unit_bits, mut start_label) = (0usize, 10u32, 0u64);
    for i in 0..FREE_HISTOGRAM_BUCKETS {
        let end_label = 1u64 << (i as u32 + bits - unit_bits);
        if extents[i] != 0 {
            let u = units[unit] as char;
            let end_str = if i == FREE_HISTOGRAM_BUCKETS - 1 {
                "max ".to_string()
            } else {
                format!("{end_label:>5}{u}-")
            };
            histogram.push(FreeBucket {
                index: i as u32,
                min_blocks: if i == 0 { 0 } else { 1 << (i - 1) },
                max_blocks: if i == FREE_HISTOGRAM_BUCKETS - 1 {
                    u64::MAX
                } else {
                    (1u64 << i) - 1
                },
                range: format!("{start_label:>5}{u}...{end_str:>7}"),
                extents: extents[i],
                blocks: ext_blocks[i],
                percent: ext_blocks[i] as f64 * 100.0 / free_blocks as f64,
            });
        }
        start_label = end_label;
        if start_label == 1 << 10 {
            start_label = 1;
            unit_bits += 10;
            unit += 1;
        }
    }
    FreeSpace {
        total_blocks: blocks,
        free_blocks,
        free_percent: free_blocks as f64 * 100.0 / blocks as f64,
        free_extents: count,
        min_extent_blocks: if count == 0 { 0 } else { min },
        max_extent_blocks: max,
        avg_extent_blocks: if count == 0 {
            0.0
        } else {
            sum as f64 / count as f64
        },
        min_extent_kb: if count == 0 { 0 } else { min * kb_per_block },
        max_extent_kb: max * kb_per_block,
        avg_extent_kb: sum.checked_div(count).unwrap_or(0) * kb_per_block,
        histogram,
        chunk_bytes,
        chunk_blocks,
        total_chunks,
        free_chunks,
        free_chunks_percent: free_chunks as f64 * 100.0 / total_chunks as f64,
    }
}

impl FreeSpace {
    /// The report `e2freefrag -c CHUNK_KB` prints for these figures, from its "Blocksize:"
    /// line on (its first line names the device), in its format to the character.
    pub fn e2freefrag_report(&self, block_size_bytes: u32) -> String {
        let mut s = format!(
            "Blocksize: {block_size_bytes} bytes\nTotal blocks: {}\nFree blocks: {} ({:.1}%)\n",
            self.total_blocks, self.free_blocks, self.free_percent
        );
        s += &format!(
            "\nChunksize: {} bytes ({} blocks)\nTotal chunks: {}\nFree chunks: {} ({:.1}%)\n",
            self.chunk_bytes,
            self.chunk_blocks,
            self.total_chunks,
            self.free_chunks,
            self.free_chunks_percent
        );
        s += &format!(
            "\nMin. free extent: {} KB \nMax. free extent: {} KB\nAvg. free extent: {} KB\n",
            self.min_extent_kb, self.max_extent_kb, self.avg_extent_kb
        );
        s += &format!("Num. free extent: {}\n", self.free_extents);
        s += "\nHISTOGRAM OF FREE EXTENT SIZES:\n";
        s += &format!(
            "{} :  {:>12}  {:>12}  {:>7}\n",
            "Extent Size Range", "Free extents", "Free Blocks", "Percent"
        );
        for b in &self.histogram {
            s += &format!(
                "{}  :  {:>12}  {:>12}  {:>6.2}%\n",
                b.range, b.extents, b.blocks, b.percent
            );
        }
        s
    }
}

/// Disk-order dispersion of the blocks in `runs` ((first, len); any order, not overlapping).
pub fn dispersion(mut runs: Vec<(u64, u64)>, map: &FreeMap) -> Dispersion {
    runs.retain(|r| r.1 > 0);
    if runs.is_empty() {
        return Dispersion::default();
    }
    runs.sort_unstable();
    let mut merged: Vec<(u64, u64)> = Vec::with_capacity(runs.len());
    for (start, len) in runs {
        match merged.last_mut() {
            Some(last) if last.0 + last.1 >= start => {
                last.1 = last.1.max(start + len - last.0);
            }
            _ => merged.push((start, len)),
        }
    }
    let blocks: u64 = merged.iter().map(|r| r.1).sum();
    let first = merged[0].0;
    let last_run = merged[merged.len() - 1];
    let span = last_run.0 + last_run.1 - first;
    let mut groups = 0;
    let mut last_group: Option<u64> = None;
    for &(start, len) in &merged {
        let g0 = map.group_of(start);
        let g1 = map.group_of(start + len - 1);
        let from = match last_group {
            Some(l) if l >= g0 => l + 1,
            _ => g0,
        };
        if g1 >= from {
            groups += g1 - from + 1;
        }
        last_group = Some(g1);
    }
    // Gaps between consecutive blocks: 1 inside a run (blocks − runs of them), and the
    // distances between runs (all ≥ 2 once merged).
    let gaps = blocks - 1;
    let ones = blocks - merged.len() as u64;
    let mut between: Vec<u64> = merged
        .windows(2)
        .map(|w| w[1].0 - (w[0].0 + w[0].1 - 1))
        .collect();
    between.sort_unstable();
    let median_gap = if gaps == 0 {
        0
    } else {
        let rank = gaps.div_ceil(2);
        if rank <= ones {
            1
        } else {
            between[(rank - ones - 1) as usize]
        }
    };
    Dispersion {
        blocks,
        runs: merged.len() as u64,
        groups,
        span_blocks: span,
        skipped_blocks: span - blocks,
        mean_gap: if gaps == 0 {
            0.0
        } else {
            (span - 1) as f64 / gaps as f64
        },
        median_gap,
    }
}

fn mapping_dispersion(plan: &Plan, map: &FreeMap) -> MappingDispersion {
    let positions: Vec<(u64, u64)> = plan
        .inodes
        .iter()
        .flat_map(|i| i.mapping.iter().map(|m| (m.physical, 1)))
        .collect();
    let count = positions.len();
    let disk = dispersion(positions, map);
    // e2fsck pass 1: inodes in inode-table order, each block map walked top-down
    // (ext2fs_block_iterate3: TIND before the DIND before the IND of a range).
    let mut order: Vec<usize> = (0..plan.inodes.len())
        .filter(|&i| !plan.inodes[i].mapping.is_empty())
        .collect();
    order.sort_unstable_by_key(|&i| plan.inodes[i].ino);
    let (mut travel, mut prev): (u64, Option<u64>) = (0, None);
    let mut to_data = Vec::with_capacity(count);
    for &i in &order {
        let inode = &plan.inodes[i];
        let mut tree: Vec<_> = inode.mapping.iter().collect();
        tree.sort_by_key(|m| (m.logical, Reverse(m.kind)));
        for m in tree {
            if let Some(p) = prev {
                travel += p.abs_diff(m.physical);
            }
            prev = Some(m.physical);
            // the first data block at or after the first logical block it maps
            let runs = &inode.data;
            let k = runs.partition_point(|r| r.logical + r.len <= m.logical);
            if let Some(r) = runs.get(k) {
                let data = r.physical + m.logical.saturating_sub(r.logical);
                to_data.push(data.abs_diff(m.physical));
            }
        }
    }
    to_data.sort_unstable();
    MappingDispersion {
        disk,
        fsck_order_mean_distance: if count < 2 {
            0.0
        } else {
            travel as f64 / (count - 1) as f64
        },
        to_data_mean: if to_data.is_empty() {
            0.0
        } else {
            to_data.iter().sum::<u64>() as f64 / to_data.len() as f64
        },
        to_data_median: nearest_rank(&to_data, 50),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{MapBlock, MapKind, PlannedInode, Run};

    fn file(ino: u32, runs: &[(u64, u64)]) -> PlannedInode {
        let mut data = Vec::new();
        let mut logical = 0;
        for &(physical, len) in runs {
            data.push(Run {
                logical,
                physical,
                len,
            });
            logical += len;
        }
        PlannedInode {
            ino,
            kind: InodeKind::File,
            parent: 2,
            name: format!("f{ino}"),
            size_bytes: logical * 4096,
            data,
            ..Default::default()
        }
    }

    fn plan(inodes: Vec<PlannedInode>) -> Plan {
        Plan {
            policy: "hand".into(),
            inodes,
            links: Vec::new(),
        }
    }

    /// 1000 blocks of 4 KiB in groups of 256; the plan's blocks used, the rest free.
    fn map_of(p: &Plan) -> FreeMap {
        let mut m = FreeMap::new(1000, 0, 256);
        for i in &p.inodes {
            for r in &i.data {
                m.mark_used(r.physical, r.len);
            }
            for b in &i.mapping {
                m.mark_used(b.physical, 1);
            }
        }
        m
    }

    #[test]
    fn a_contiguous_file_scores_one() {
        let p = plan(vec![file(12, &[(100, 50)])]);
        let m = LayoutMetrics::with_free_map(&p, &map_of(&p), 4096);
        assert_eq!(m.layout_score.score, 1.0);
        assert_eq!(m.layout_score.contiguous_blocks, 49);
        assert_eq!(m.layout_score.scored_blocks, 49);
        assert_eq!(m.fragments.max, 1);
        assert_eq!(m.fragments.fragmented_files, 0);
    }

    #[test]
    fn a_file_in_three_pieces() {
        // 10 blocks: 4 + 3 + 3; two of the nine blocks after the first start a new piece.
        let p = plan(vec![file(12, &[(100, 4), (200, 3), (50, 3)])]);
        let m = LayoutMetrics::with_free_map(&p, &map_of(&p), 4096);
        assert_eq!(m.fragments.max, 3);
        assert_eq!(m.layout_score.contiguous_blocks, 7);
        assert_eq!(m.layout_score.scored_blocks, 9);
        assert!((m.layout_score.score - 7.0 / 9.0).abs() < 1e-12);
        // runs that continue each other on disk are one piece
        let q = plan(vec![file(12, &[(100, 4), (104, 6)])]);
        let n = LayoutMetrics::with_free_map(&q, &map_of(&q), 4096);
        assert_eq!(n.fragments.max, 1);
        assert_eq!(n.layout_score.score, 1.0);
    }

    #[test]
    fn score_is_block_weighted_and_small_files_are_counted_apart() {
        // a: 101 blocks in 2 pieces (99/100 contiguous); b: 3 blocks in 3 pieces (0/2);
        // c: 1 block; d: empty.
        let mut d = file(15, &[]);
        d.size_bytes = 0;
        let p = plan(vec![
            file(12, &[(100, 50), (300, 51)]),
            file(13, &[(10, 1), (20, 1), (30, 1)]),
            file(14, &[(40, 1)]),
            d,
        ]);
        let m = LayoutMetrics::with_free_map(&p, &map_of(&p), 4096);
        assert_eq!(m.layout_score.contiguous_blocks, 99);
        assert_eq!(m.layout_score.scored_blocks, 102);
        assert!((m.layout_score.score - 99.0 / 102.0).abs() < 1e-12);
        assert_eq!(m.layout_score.scored_files, 2);
        let f = &m.fragments;
        assert_eq!((f.files, f.empty_files, f.single_block_files), (4, 1, 1));
        assert_eq!(f.total_fragments, 2 + 3 + 1);
        assert!((f.mean - 2.0).abs() < 1e-12);
        // sorted 1, 2, 3: nearest rank
        assert_eq!((f.median, f.p90, f.p99, f.max), (2, 3, 3, 3));
        assert_eq!(
            f.histogram,
            vec![
                FragmentBucket {
                    min_fragments: 1,
                    max_fragments: 1,
                    files: 1
                },
                FragmentBucket {
                    min_fragments: 2,
                    max_fragments: 3,
                    files: 2
                },
            ]
        );
    }

    #[test]
    fn a_known_free_space_pattern() {
        // 1000 blocks, 4 KiB: used 0..10, 11..20, 23..1000 except 500..532 and 700..701.
        // Free: 10 (1 block), 20..23 (3), 500..532 (32), 700 (1).
        let mut map = FreeMap::new(1000, 0, 256);
        map.mark_used(0, 10);
        map.mark_used(11, 9);
        map.mark_used(23, 500 - 23);
        map.mark_used(532, 700 - 532);
        map.mark_used(701, 299);
        let f = free_space(&map, 4096, DEFAULT_CHUNK_BYTES);
        assert_eq!(f.free_blocks, 1 + 3 + 32 + 1);
        assert_eq!(f.free_extents, 4);
        assert_eq!((f.min_extent_blocks, f.max_extent_blocks), (1, 32));
        assert_eq!((f.min_extent_kb, f.max_extent_kb), (4, 128));
        // 37 / 4 = 9 blocks (integer), × 4 KB
        assert_eq!(f.avg_extent_kb, 36);
        let rows: Vec<(u32, u64, u64)> = f
            .histogram
            .iter()
            .map(|b| (b.index, b.extents, b.blocks))
            .collect();
        // 1 block → bucket 1, 3 → 2, 32 → 6
        assert_eq!(rows, vec![(1, 2, 2), (2, 1, 3), (6, 1, 32)]);
        assert_eq!(f.histogram[0].range, "    4K...    8K-");
        assert_eq!(f.histogram[2].range, "  128K...  256K-");
        // 256-block chunks: 1000 blocks → e2freefrag's total of (1000 + 256) / 256 = 4;
        // none is wholly free
        assert_eq!((f.chunk_blocks, f.total_chunks, f.free_chunks), (256, 4, 0));
        map.mark_free(256, 244);
        let g = free_space(&map, 4096, DEFAULT_CHUNK_BYTES);
        // 256..532 is free now: chunk 1 (256..512) is
        assert_eq!(g.free_chunks, 1);
        assert_eq!(g.max_extent_blocks, 532 - 256);
    }

    #[test]
    fn with_one_kib_blocks_chunk_zero_is_never_free() {
        // first_data_block 1, 1024-block chunks: chunk 0 starts at block 1 in e2freefrag.
        let map = FreeMap::new(5000, 1, 8192);
        let f = free_space(&map, 1024, DEFAULT_CHUNK_BYTES);
        assert_eq!(f.free_blocks, 4999);
        assert_eq!(f.free_extents, 1);
        assert_eq!(f.total_chunks, (5000 + 1024) / 1024);
        // chunks 1, 2, 3 are whole and free; 0 is short of block 0, 4 is short of the end
        assert_eq!(f.free_chunks, 3);
        // 4999 blocks → bucket ⌊log2 4999⌋ + 1 = 13: 4M...8M- at 1 KiB blocks
        assert_eq!(f.histogram.len(), 1);
        assert_eq!(f.histogram[0].index, 13);
        assert_eq!(f.histogram[0].range, "    4M...    8M-");
    }

    #[test]
    fn dispersion_by_hand() {
        let map = FreeMap::new(1000, 0, 100);
        // blocks 10, 11, 12, 50, 300, 301: runs 10..13, 50, 300..302; groups 0 and 3
        let d = dispersion(vec![(300, 2), (10, 3), (50, 1)], &map);
        assert_eq!(d.blocks, 6);
        assert_eq!(d.runs, 3);
        assert_eq!(d.groups, 2);
        assert_eq!(d.span_blocks, 292);
        assert_eq!(d.skipped_blocks, 286);
        // gaps 1, 1, 38, 250, 1 → sorted 1 1 1 38 250: median (rank 3) 1, mean 291 / 5
        assert_eq!(d.median_gap, 1);
        assert!((d.mean_gap - 291.0 / 5.0).abs() < 1e-12);
        // a run across a group boundary counts both groups, once
        let e = dispersion(vec![(95, 10), (104, 0), (150, 1)], &map);
        assert_eq!(e.groups, 2);
        assert_eq!(e.runs, 2);
        assert_eq!(dispersion(vec![], &map), Dispersion::default());
    }

    #[test]
    fn mapping_blocks_by_hand() {
        // ino 13: 2000 blocks at 100.. with its IND at 99 (maps logical 12 → block 112) and a
        // DIND + IND at 3000/3001 mapping logical 1036 → block 1136.
        // ino 12: an extent leaf at 5000 mapping logical 0 → block 20.
        let mut a = file(13, &[(100, 2000)]);
        a.mapping = vec![
            MapBlock {
                kind: MapKind::Ind,
                logical: 12,
                physical: 99,
            },
            MapBlock {
                kind: MapKind::Ind,
                logical: 1036,
                physical: 3001,
            },
            MapBlock {
                kind: MapKind::Dind,
                logical: 1036,
                physical: 3000,
            },
        ];
        let mut b = file(12, &[(20, 10)]);
        b.mapping = vec![MapBlock {
            kind: MapKind::Extent { height: 0 },
            logical: 0,
            physical: 5000,
        }];
        let p = plan(vec![a, b]);
        let mut map = FreeMap::new(10_000, 0, 1000);
        map.mark_used(99, 1);
        let m = mapping_dispersion(&p, &map);
        assert_eq!(m.disk.blocks, 4);
        assert_eq!(m.disk.runs, 3);
        // groups 0, 3, 5
        assert_eq!(m.disk.groups, 3);
        // pass-1 order: ino 12's leaf 5000, then ino 13's IND 99, DIND 3000, IND 3001
        assert!((m.fsck_order_mean_distance - (4901.0 + 2901.0 + 1.0) / 3.0).abs() < 1e-9);
        // to data: 5000→20 (4980), 99→112 (13), 3000→1136 (1864), 3001→1136 (1865)
        assert!((m.to_data_mean - (4980.0 + 13.0 + 1864.0 + 1865.0) / 4.0).abs() < 1e-9);
        assert_eq!(m.to_data_median, 1864);
    }

    #[test]
    fn of_a_plan_on_its_geometry_counts_mke2fs_blocks_as_used() {
        let profile = crate::MkfsProfile::by_name("ext3-2007").unwrap();
        let geo = Geometry::new(&profile, 256 << 20).unwrap();
        let root = geo.root_dir_block();
        let (s, _) = geo.free_ranges(1)[0];
        let mut root_inode = file(2, &[(root, 1)]);
        root_inode.kind = InodeKind::Dir;
        let p = plan(vec![root_inode, file(12, &[(s, 8), (s + 10, 2)])]);
        let m = LayoutMetrics::of(&p, &geo);
        assert_eq!(m.free_space.free_blocks, geo.free_map().total_free() - 10);
        assert_eq!(m.fragments.max, 2);
        // the root's block and lost+found's, in group 0
        let lf: u64 = geo
            .meta
            .iter()
            .filter(|x| x.kind == MetaKind::LostFound)
            .map(|x| x.blocks)
            .sum();
        assert_eq!(m.directories.blocks, 1 + lf);
        assert_eq!(m.directories.groups, 1);
        assert_eq!(m.groups, geo.group_count());
    }
}
