//! Aging streams: what "six months of create/delete/truncate/append" does to a tree, as
//! namespace operations appended to a [`Population`] (docs/aging.md).
//!
//! The model follows Geriatrix (Kadekodi et al., "Geriatrix: Aging what you see and what you
//! don't see", USENIX ATC '18; the tool's source, github.com/saurabhkadekodi/geriatrix,
//! `src/geriatrix.cpp` at commit b903755):
//! - the stream runs until `age × capacity` bytes have been written (`-i`, "number of runs
//!   over the file system image size"; `performStableAging()` stops at
//!   `workload_size >= till_size`);
//! - live data is held at a fullness (`-u`);
//! - a new file's size is drawn from the target size distribution (`performRapidAging()`
//!   draws a bucket from the distribution's cutoffs), and a delete takes a file from the
//!   size bucket furthest *above* its ideal fraction of the files, and within it from the
//!   depth furthest above its own (`deleteFile()`: `size_buckets->begin()`, keyed by
//!   ideal − actual; `dir_buckets->rbegin()`, keyed by actual − ideal): the histograms
//!   converge to the targets as files turn over;
//! - a create that does not fit is not dropped: frees make room for it (`createFile()` skips
//!   the buckets that do not fit and `performOp()` deletes instead).
//!
//! What differs, and why:
//! - the start is any population's tree, not an empty file system filled by "rapid aging":
//!   the targets default to the tree's own distributions, measured from it;
//! - Geriatrix's stable phase creates in the bucket furthest *below* its ideal. With
//!   writes driven by fullness (below) that greedy choice locks on one bucket — a create and
//!   a delete in the same bucket, over and over (on ubuntu-32g at 1/10 scale it wrote 200
//!   bytes per create); creates here draw from the target and the removals steer;
//! - Geriatrix only creates and deletes. Morton's question (issue 16) names truncate and
//!   append, so a share of the writes are extends ([`NsOp::Extend`]) and a share of the
//!   frees are truncates, both taking a file of the most over-represented bucket into a
//!   bucket drawn from the target above (below) it or within its own; renames move a file
//!   from the most over-represented depth to the most under-represented one; mkdir/rmdir
//!   churn the directories around the tree's count;
//! - Geriatrix tosses a fair coin between create and delete; here a write happens while
//!   live data is below the target and a free once it is at it: live data never exceeds
//!   the target and stays within about one file of it;
//! - Geriatrix's third distribution, files' relative age, is not followed: a victim is drawn
//!   uniformly from its (size, depth) bucket;
//! - sizes within a bucket are drawn from the tree's own files of that bucket (Geriatrix
//!   creates every file of a bucket at the bucket's one size).
//!
//! The target sizes may instead be given (`sizes`) or be Agrawal et al.'s (FAST '07) shape
//! as the code base has it (`size_shape = "agrawal-fast07"`: [`agrawal_fast07_sizes`]).
//!
//! `steer = false` gives the naive generator the steering is measured against: victims
//! uniform over all files, extends by a size drawn from the target, truncates to a uniform
//! fraction, renames anywhere.
//!
//! Files with more than one name (hard links) are never touched; symlinks and device nodes
//! neither. Their data counts toward fullness.

use crate::{Error, NsOp, Population};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;

/// Block size live data is counted in.
const BLOCK: u64 = 4096;
/// Power-of-two size buckets, as [`crate::PopulationStats::size_histogram`] counts them:
/// bucket `k` holds sizes in `[2^(k-1), 2^k)`, bucket 0 the empty files.
const SIZE_BUCKETS: usize = 65;
/// Deepest file (path components) a depth distribution may ask for.
pub const MAX_DEPTH: u32 = 64;
/// Largest `age` accepted (Geriatrix's own example ages by 1000 × capacity).
pub const MAX_AGE: f64 = 1000.0;
/// Most operations a stream may be expected to take (a create and an unlink per file
/// written): 5·10⁸ take minutes to generate (about 2 million a second here) and some 50 GB
/// as a [`Population`] (about 100 bytes each); [`stream_stats`] and [`generate`] keep none.
pub const MAX_OPERATIONS: f64 = 5e8;
const NONE: u32 = u32::MAX;

/// What an aging stream should do (TOML section `[aging]`; see docs/aging.md).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgingSpec {
    /// Seed of every random choice.
    #[serde(default)]
    pub seed: u64,
    /// Bytes to write, in multiples of the file system's capacity (0 ≤ age ≤ [`MAX_AGE`]).
    pub age: f64,
    /// Live data to hold, as a fraction of capacity in (0, 1]; at most [`max_fullness`] of the
    /// file system. Default: the tree's own fullness, capped at [`max_fullness`].
    #[serde(default)]
    pub fullness: Option<f64>,
    /// Fraction of the writes that are extends of an existing file (the rest create files).
    #[serde(default = "default_extend_share")]
    pub extend_share: f64,
    /// Fraction of the frees that are truncates (the rest unlink files).
    #[serde(default = "default_truncate_share")]
    pub truncate_share: f64,
    /// Fraction of the operations that are renames.
    #[serde(default = "default_rename_share")]
    pub rename_share: f64,
    /// Fraction of the operations that consider a mkdir or rmdir.
    #[serde(default = "default_dir_share")]
    pub dir_share: f64,
    /// Steer sizes and depths toward their targets (Geriatrix); false = the naive generator.
    #[serde(default = "default_steer")]
    pub steer: bool,
    /// Target file-size distribution by count; default: the tree's own (or `size_shape`'s).
    #[serde(default)]
    pub sizes: Option<Vec<SizeWeight>>,
    /// Where the target size distribution comes from when `sizes` is not given.
    #[serde(default)]
    pub size_shape: SizeShape,
    /// Target distribution of files over depths (path components); default: the tree's own.
    #[serde(default)]
    pub depths: Option<Vec<DepthWeight>>,
}

fn default_extend_share() -> f64 {
    0.2
}
fn default_truncate_share() -> f64 {
    0.2
}
fn default_rename_share() -> f64 {
    0.05
}
fn default_dir_share() -> f64 {
    0.02
}
fn default_steer() -> bool {
    true
}

/// Where a target size distribution comes from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum SizeShape {
    /// The tree's own files, measured.
    #[default]
    #[serde(rename = "tree")]
    Tree,
    /// Agrawal et al. (FAST '07) by count: the lognormal body and Pareto tail with the
    /// parameters Impressions (FAST '09, Table 2) gives them, as populations/ubuntu-32g.toml
    /// holds them, below 2 GiB (as the tree generator draws them); sizes uniform within a
    /// bucket.
    #[serde(rename = "agrawal-fast07")]
    AgrawalFast07,
}

/// One bucket of a target size distribution.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SizeWeight {
    /// The bucket's upper bound (exclusive): 1 for empty files, else a power of two; the
    /// bucket holds sizes from half of it.
    pub below_bytes: u64,
    /// Relative weight (by count of files).
    pub weight: f64,
}

/// One bucket of a target depth distribution.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DepthWeight {
    /// Path components of the file's name: 1 = in the root directory.
    pub depth: u32,
    /// Relative weight (by count of files).
    pub weight: f64,
}

impl AgingSpec {
    /// A spec with the defaults: `age` × capacity written, seed `seed`.
    pub fn new(age: f64, seed: u64) -> AgingSpec {
        AgingSpec {
            seed,
            age,
            fullness: None,
            extend_share: default_extend_share(),
            truncate_share: default_truncate_share(),
            rename_share: default_rename_share(),
            dir_share: default_dir_share(),
            steer: true,
            sizes: None,
            size_shape: SizeShape::Tree,
            depths: None,
        }
    }

    /// Reads the `[aging]` section of a TOML document (other sections are ignored); errors
    /// name `source_name`, the key and why.
    pub fn from_toml_str(text: &str, source_name: &str) -> Result<AgingSpec, Error> {
        #[derive(Deserialize)]
        struct Doc {
            aging: Option<AgingSpec>,
        }
        let bad = |key: &str, reason: String| Error::BadAging {
            source_name: source_name.to_string(),
            key: key.to_string(),
            reason,
        };
        let doc: Doc = toml::from_str(text).map_err(|e| bad("(syntax)", e.to_string()))?;
        let spec = doc
            .aging
            .ok_or_else(|| bad("(section)", "no [aging] section".into()))?;
        spec.validate().map_err(|e| match e {
            Error::BadAging { key, reason, .. } => bad(&key, reason),
            other => other,
        })?;
        Ok(spec)
    }

    /// Checks what can be checked without the tree: every parameter's range, and
    /// distributions that are distributions. Errors with [`Error::BadAging`] naming the key.
    pub fn validate(&self) -> Result<(), Error> {
        let bad = |key: &str, reason: String| {
            Err(Error::BadAging {
                source_name: "aging spec".into(),
                key: key.into(),
                reason,
            })
        };
        if !(self.age.is_finite() && (0.0..=MAX_AGE).contains(&self.age)) {
            return bad(
                "age",
                format!(
                    "{} is not a number of capacities in [0, {MAX_AGE}] (bytes written = age × capacity)",
                    self.age
                ),
            );
        }
        if let Some(f) = self.fullness {
            if !(f.is_finite() && f > 0.0 && f <= 1.0) {
                return bad(
                    "fullness",
                    format!("{f} is not a fraction of capacity in (0, 1]"),
                );
            }
        }
        for (key, v) in [
            ("extend_share", self.extend_share),
            ("truncate_share", self.truncate_share),
            ("rename_share", self.rename_share),
            ("dir_share", self.dir_share),
        ] {
            if !(v.is_finite() && (0.0..=1.0).contains(&v)) {
                return bad(key, format!("{v} is not a fraction in [0, 1]"));
            }
        }
        // writes must keep happening for the stream to reach its volume
        if self.rename_share + self.dir_share > 0.9 {
            return bad(
                "rename_share",
                format!(
                    "rename_share + dir_share = {} leaves under 10% of the operations to write and free data (at most 0.9)",
                    self.rename_share + self.dir_share
                ),
            );
        }
        if self.sizes.is_some() && self.size_shape != SizeShape::Tree {
            return bad(
                "size_shape",
                "give either sizes or size_shape, not both".into(),
            );
        }
        if let Some(sizes) = &self.sizes {
            if sizes.is_empty() {
                return bad(
                    "sizes",
                    "an empty distribution (leave it out to use the tree's own)".into(),
                );
            }
            let mut seen = HashSet::new();
            for (i, s) in sizes.iter().enumerate() {
                let key = format!("sizes[{i}]");
                if !(s.below_bytes == 1 || (s.below_bytes >= 2 && s.below_bytes.is_power_of_two()))
                {
                    return bad(
                        &format!("{key}.below_bytes"),
                        format!("{} is not 1 (empty files) or a power of two", s.below_bytes),
                    );
                }
                if !seen.insert(s.below_bytes) {
                    return bad(
                        &format!("{key}.below_bytes"),
                        format!("{} appears twice", s.below_bytes),
                    );
                }
                if !(s.weight.is_finite() && s.weight >= 0.0) {
                    return bad(
                        &format!("{key}.weight"),
                        format!("{} is not a weight ≥ 0", s.weight),
                    );
                }
            }
            if sizes.iter().all(|s| s.weight == 0.0) {
                return bad("sizes", "every weight is 0".into());
            }
            if !sizes.iter().map(|s| s.weight).sum::<f64>().is_finite() {
                return bad("sizes", "the weights' sum is not a finite number".into());
            }
            if sizes.iter().all(|s| s.weight == 0.0 || s.below_bytes == 1) {
                return bad(
                    "sizes",
                    "only empty files: a stream of them writes nothing and never reaches its volume".into(),
                );
            }
        }
        if let Some(depths) = &self.depths {
            if depths.is_empty() {
                return bad(
                    "depths",
                    "an empty distribution (leave it out to use the tree's own)".into(),
                );
            }
            let mut seen = HashSet::new();
            for (i, d) in depths.iter().enumerate() {
                let key = format!("depths[{i}]");
                if !(1..=MAX_DEPTH).contains(&d.depth) {
                    return bad(
                        &format!("{key}.depth"),
                        format!(
                            "{} is not in 1..={MAX_DEPTH} (1 = in the root directory)",
                            d.depth
                        ),
                    );
                }
                if !seen.insert(d.depth) {
                    return bad(
                        &format!("{key}.depth"),
                        format!("{} appears twice", d.depth),
                    );
                }
                if !(d.weight.is_finite() && d.weight >= 0.0) {
                    return bad(
                        &format!("{key}.weight"),
                        format!("{} is not a weight ≥ 0", d.weight),
                    );
                }
            }
            if depths.iter().all(|d| d.weight == 0.0) {
                return bad("depths", "every weight is 0".into());
            }
            if !depths.iter().map(|d| d.weight).sum::<f64>().is_finite() {
                return bad("depths", "the weights' sum is not a finite number".into());
            }
        }
        Ok(())
    }
}

/// The larger of what e2fsprogs 1.40's and 1.47's `ext2fs_default_journal_size()`
/// (lib/ext2fs/mkjournal.c) give a file system of `blocks` 4 KiB blocks, in blocks: the two
/// tables layoutlab's mkfs profiles use (crates/layout/src/geometry.rs). 1.40 gives 128 MiB
/// from 1Mi blocks; 1.47 gives 64 MiB from 512Ki blocks, growing to 1 GiB from 32Mi blocks.
fn journal_blocks(blocks: u64) -> u64 {
    let v140 = match blocks {
        0..=2047 => 0,
        2048..=32767 => 1024,
        32768..=262_143 => 4096,
        262_144..=524_287 => 8192,
        524_288..=1_048_575 => 16384,
        _ => 32768,
    };
    let v147 = match blocks {
        0..=2047 => 0,
        2048..=32767 => 1024,
        32768..=262_143 => 4096,
        262_144..=524_287 => 8192,
        524_288..=4_194_303 => 16384,
        4_194_304..=8_388_607 => 32768,
        8_388_608..=16_777_215 => 65536,
        16_777_216..=33_554_431 => 131_072,
        _ => 262_144,
    };
    v140.max(v147)
}

/// Bytes of a `fs_bytes` file system an aging stream leaves to metadata: live file data is
/// held below `fs_bytes − margin`, because the planners do not model ENOSPC.
///
/// The sum of (docs/aging.md):
/// - inode tables: 1/64 of the file system (256-byte inodes at 16 KiB per inode, ext4's
///   mke2fs.conf; 128 at 8 KiB, ext3-2007's: the same fraction);
/// - the journal: the larger of e2fsprogs 1.40's and 1.47's default sizes (4 MiB to 1 GiB);
/// - bitmaps, group descriptors and reserved GDT blocks: 1/256 (what mke2fs takes beyond
///   inode tables and journal is at most 0.2% with layoutlab's profiles from 64 MiB to
///   400 GB);
/// - mapping blocks: 1/128 (one ext3 indirect block maps 1024 data blocks, but the
///   ext3-metacluster policy keeps 1/128 of every group for them, its `size` default, and
///   data never takes that space);
/// - directories: 1/128 (ubuntu-32g's 28,022 directories take 0.3% of its 32 GiB; twice
///   that, and a margin for the directories an aging stream makes).
pub fn metadata_margin_bytes(fs_bytes: u64) -> u64 {
    fs_bytes / 64
        + journal_blocks(fs_bytes / BLOCK) * BLOCK
        + fs_bytes / 256
        + fs_bytes / 128
        + fs_bytes / 128
}

/// The largest fullness an aging stream may hold on a `fs_bytes` file system: what the
/// [`metadata_margin_bytes`] leave.
pub fn max_fullness(fs_bytes: u64) -> f64 {
    if fs_bytes == 0 {
        return 0.0;
    }
    fs_bytes.saturating_sub(metadata_margin_bytes(fs_bytes)) as f64 / fs_bytes as f64
}

/// A row of [`StreamStats::size_histogram`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SizeRow {
    /// Upper bound (exclusive) of the bucket; 1 for empty files.
    pub below_bytes: u64,
    /// Fraction of files the target puts in it.
    pub target_fraction: f64,
    /// Fraction of the tree's files in it before aging.
    pub initial_fraction: f64,
    /// Fraction of the files in it once the stream is done.
    pub final_fraction: f64,
}

/// A row of [`StreamStats::depth_histogram`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DepthRow {
    /// Path components.
    pub depth: u32,
    /// Fraction of files the target puts at this depth.
    pub target_fraction: f64,
    /// Fraction of the files at this depth once the stream is done.
    pub final_fraction: f64,
}

/// What an aging stream did.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StreamStats {
    /// Capacity: the population's `fs_bytes`.
    pub capacity_bytes: u64,
    /// Kept for metadata ([`metadata_margin_bytes`]).
    pub metadata_margin_bytes: u64,
    /// Fullness held (live data blocks × 4 KiB / capacity, at most).
    pub target_fullness: f64,
    /// Fullness of the tree before aging.
    pub initial_fullness: f64,
    /// Fullness once the stream is done.
    pub final_fullness: f64,
    /// Lowest fullness from the first free at or below the target on (how far below it
    /// writes wait for room).
    pub lowest_fullness_after_settling: f64,
    /// Highest fullness from the first free at or below the target on (never above it).
    pub highest_fullness_after_settling: f64,
    /// Operations of the tree.
    pub initial_operations: u64,
    /// Operations of the stream.
    pub operations: u64,
    /// Creates.
    pub creates: u64,
    /// Extends.
    pub extends: u64,
    /// Truncates.
    pub truncates: u64,
    /// Unlinks.
    pub unlinks: u64,
    /// Renames.
    pub renames: u64,
    /// Mkdirs.
    pub mkdirs: u64,
    /// Rmdirs.
    pub rmdirs: u64,
    /// Bytes the stream writes (creates and extends).
    pub bytes_written: u64,
    /// Bytes it was to write: age × capacity.
    pub goal_bytes: u64,
    /// Regular files before and after.
    pub files_initial: u64,
    /// Regular files once done.
    pub files_final: u64,
    /// Directories (not the root) once done.
    pub directories_final: u64,
    /// Total-variation distance (½ Σ|p − q|) of the tree's size histogram from the target.
    pub size_distance_initial: f64,
    /// The same once the stream is done.
    pub size_distance: f64,
    /// Total-variation distance of the files' depth histogram from its target, once done.
    pub depth_distance: f64,
    /// Total-variation distance of the directories' depth histogram from the tree's, once
    /// done.
    pub dir_depth_distance: f64,
    /// Size histogram: target, initial and final fractions, per bucket used by any.
    pub size_histogram: Vec<SizeRow>,
    /// Depth histogram of files: target and final fractions.
    pub depth_histogram: Vec<DepthRow>,
}

/// The aged population: `pop`'s operations followed by an aging stream made by `spec`.
/// Errors with [`Error::BadAging`] when the spec is out of range or the tree cannot reach
/// its targets (naming the parameter), or with `pop`'s own [`Error::BadTree`].
pub fn age(pop: &Population, spec: &AgingSpec) -> Result<Population, Error> {
    age_with_stats(pop, spec).map(|(p, _)| p)
}

/// [`age`], with the stream's statistics.
pub fn age_with_stats(
    pop: &Population,
    spec: &AgingSpec,
) -> Result<(Population, StreamStats), Error> {
    let mut ops = pop.ops.clone();
    let stats = generate(pop, spec, &mut |op| ops.push(op))?;
    Ok((
        Population {
            name: format!("{} aged {}x (seed {})", pop.name, spec.age, spec.seed),
            fs_bytes: pop.fs_bytes,
            ops,
        },
        stats,
    ))
}

/// The statistics of the stream [`age`] would append, without keeping its operations
/// (a stream of tens of millions of operations needs gigabytes as a [`Population`]).
pub fn stream_stats(pop: &Population, spec: &AgingSpec) -> Result<StreamStats, Error> {
    generate(pop, spec, &mut |_| {})
}

/// Makes the stream, giving each operation to `sink` in order.
pub fn generate(
    pop: &Population,
    spec: &AgingSpec,
    sink: &mut dyn FnMut(NsOp),
) -> Result<StreamStats, Error> {
    spec.validate()?;
    pop.check_tree()?;
    let mut ager = Ager::new(pop, spec)?;
    ager.run(sink)?;
    Ok(ager.stats())
}

fn bucket_of(bytes: u64) -> usize {
    (64 - bytes.leading_zeros()) as usize
}

fn blocks_of(bytes: u64) -> u64 {
    bytes.div_ceil(BLOCK)
}

/// Where a bucket's sizes come from.
enum Pool {
    /// Nothing (weight 0).
    Empty,
    /// The tree's own files of the bucket.
    Sample(Vec<u64>),
    /// Uniform over an inclusive range.
    Range(u64, u64),
}

impl Pool {
    fn draw(&self, rng: &mut ChaCha8Rng) -> u64 {
        match self {
            Pool::Empty => unreachable!("no draw from an empty pool"),
            Pool::Sample(v) => v[rng.gen_range(0..v.len())],
            Pool::Range(lo, hi) => rng.gen_range(*lo..=*hi),
        }
    }
}

/// A file the stream may touch (one name, a regular file).
struct FileRec {
    path: String,
    size: u64,
    dir: u32,
    bucket: u8,
    depth: u16,
    /// Index in `sets[bucket][depth]`.
    pos: u32,
    /// Index in `all`.
    all_pos: u32,
}

struct DirRec {
    path: String,
    /// Its parent directory (never freed while this one lives: it is not empty).
    parent: u32,
    depth: u32,
    /// Names in it, of any kind.
    entries: u32,
    /// Index in `by_depth[depth]`.
    depth_pos: u32,
    /// Index in `empty`, or NONE.
    empty_pos: u32,
    /// May be removed (made by the tree or the stream; not the root).
    removable: bool,
}

/// An indexable set of ids: O(1) insert, remove (given the position) and uniform choice.
fn set_remove<F: FnMut(u32, u32)>(v: &mut Vec<u32>, pos: u32, mut moved: F) {
    let last = v.pop().expect("removing from a non-empty set");
    if (pos as usize) < v.len() {
        v[pos as usize] = last;
        moved(last, pos);
    }
}

/// The generator's state: the tree as the stream has left it so far (movable files by size
/// bucket and depth, directories by depth, the empty ones), the histograms against their
/// targets, and live data against the target fullness.
struct Ager<'a> {
    spec: &'a AgingSpec,
    rng: ChaCha8Rng,
    initial_names: HashSet<&'a str>,
    serial: u64,
    // files
    files: Vec<FileRec>,
    free_files: Vec<u32>,
    /// Movable files by (bucket, depth): index `bucket * nd + depth`.
    sets: Vec<Vec<u32>>,
    all: Vec<u32>,
    movable_in_bucket: [u64; SIZE_BUCKETS],
    movable_at_depth: Vec<u64>,
    // histograms (every live regular file, hard-linked ones too)
    count: [u64; SIZE_BUCKETS],
    dcount: Vec<u64>,
    files_live: u64,
    // targets
    target: [f64; SIZE_BUCKETS],
    pools: Vec<Pool>,
    dtarget: Vec<f64>,
    nd: usize,
    // directories
    dirs: Vec<DirRec>,
    free_dirs: Vec<u32>,
    by_depth: Vec<Vec<u32>>,
    empty: Vec<u32>,
    dirs_live: u64,
    dir_target: Vec<f64>,
    dirs_goal: u64,
    // space
    live_blocks: u64,
    target_blocks: u64,
    goal_bytes: u64,
    // stats
    st: StreamStats,
    initial_hist: [u64; SIZE_BUCKETS],
    settled: bool,
    /// A create's size that did not fit yet.
    pending: Option<u64>,
}

impl<'a> Ager<'a> {
    fn new(pop: &'a Population, spec: &'a AgingSpec) -> Result<Ager<'a>, Error> {
        let bad = |key: &str, reason: String| Error::BadAging {
            source_name: "aging spec".into(),
            key: key.into(),
            reason,
        };
        // 1. the tree once the population's operations are done
        #[derive(Clone, Copy)]
        enum Node {
            Dir(u32),
            File(u32),
            Other,
        }
        struct IFile<'b> {
            size: u64,
            names: Vec<&'b str>,
            linked: bool,
        }
        struct IDir<'b> {
            path: &'b str,
            parent: u32,
            depth: u32,
            entries: u32,
            alive: bool,
        }
        let parent_of = |p: &'a str| p.rsplit_once('/').map_or("", |(d, _)| d);
        let mut node: std::collections::HashMap<&'a str, Node> = Default::default();
        let mut initial_names: HashSet<&'a str> = HashSet::new();
        let mut idirs: Vec<IDir<'a>> = vec![IDir {
            path: "",
            parent: 0,
            depth: 0,
            entries: 0,
            alive: true,
        }];
        let mut ifiles: Vec<IFile<'a>> = Vec::new();
        node.insert("", Node::Dir(0));
        let dir_id = |node: &std::collections::HashMap<&'a str, Node>, p: &str| match node.get(p) {
            Some(Node::Dir(d)) => *d as usize,
            _ => unreachable!("check_tree: the parent is a directory"),
        };
        for op in &pop.ops {
            let path = op.path();
            match op {
                NsOp::Mkdir { .. } => {
                    let p = dir_id(&node, parent_of(path));
                    idirs[p].entries += 1;
                    let depth = idirs[p].depth + 1;
                    node.insert(path, Node::Dir(idirs.len() as u32));
                    idirs.push(IDir {
                        path,
                        parent: p as u32,
                        depth,
                        entries: 0,
                        alive: true,
                    });
                    initial_names.insert(path);
                }
                NsOp::Create { bytes, .. } => {
                    idirs[dir_id(&node, parent_of(path))].entries += 1;
                    node.insert(path, Node::File(ifiles.len() as u32));
                    ifiles.push(IFile {
                        size: *bytes,
                        names: vec![path],
                        linked: false,
                    });
                    initial_names.insert(path);
                }
                NsOp::Symlink { .. } | NsOp::Mknod { .. } => {
                    idirs[dir_id(&node, parent_of(path))].entries += 1;
                    node.insert(path, Node::Other);
                    initial_names.insert(path);
                }
                NsOp::Link { target, .. } => {
                    idirs[dir_id(&node, parent_of(path))].entries += 1;
                    let n = node[target.as_str()];
                    if let Node::File(f) = n {
                        ifiles[f as usize].names.push(path);
                        ifiles[f as usize].linked = true;
                    }
                    node.insert(path, n);
                    initial_names.insert(path);
                }
                NsOp::Append { bytes, .. } | NsOp::Extend { bytes, .. } => {
                    if let Node::File(f) = node[path] {
                        ifiles[f as usize].size += bytes;
                    }
                }
                NsOp::Truncate { bytes, .. } => {
                    if let Node::File(f) = node[path] {
                        ifiles[f as usize].size = *bytes;
                    }
                }
                NsOp::Unlink { .. } | NsOp::Rmdir { .. } => {
                    idirs[dir_id(&node, parent_of(path))].entries -= 1;
                    match node.remove(path) {
                        Some(Node::File(f)) => ifiles[f as usize].names.retain(|n| *n != path),
                        Some(Node::Dir(d)) => idirs[d as usize].alive = false,
                        _ => {}
                    }
                }
                NsOp::Rename { to, .. } => {
                    idirs[dir_id(&node, parent_of(path))].entries -= 1;
                    idirs[dir_id(&node, parent_of(to.as_str()))].entries += 1;
                    let n = node.remove(path).expect("check_tree: the name exists");
                    if let Node::File(f) = n {
                        for name in ifiles[f as usize].names.iter_mut() {
                            if *name == path {
                                *name = to.as_str();
                            }
                        }
                    }
                    node.insert(to.as_str(), n);
                    initial_names.insert(to.as_str());
                }
            }
        }
        drop(node);

        // 2. measured distributions of the tree
        let mut count = [0u64; SIZE_BUCKETS];
        let mut max_depth = 1usize;
        let mut file_depths: Vec<u64> = Vec::new();
        let mut sizes_by_bucket: Vec<Vec<u64>> = vec![Vec::new(); SIZE_BUCKETS];
        let depth_of = |p: &str| p.bytes().filter(|&c| c == b'/').count() + 1;
        let mut file_blocks = 0u64;
        let mut movable_blocks = 0u64;
        let mut files_live = 0u64;
        for f in ifiles.iter().filter(|f| !f.names.is_empty()) {
            let d = depth_of(f.names[0]);
            max_depth = max_depth.max(d);
            if file_depths.len() <= d {
                file_depths.resize(d + 1, 0);
            }
            file_depths[d] += 1;
            count[bucket_of(f.size)] += 1;
            sizes_by_bucket[bucket_of(f.size)].push(f.size);
            file_blocks += blocks_of(f.size);
            if !f.linked {
                movable_blocks += blocks_of(f.size);
            }
            files_live += 1;
        }
        for d in idirs.iter().filter(|d| d.alive) {
            max_depth = max_depth.max(d.depth as usize);
        }
        let pst = pop.stats();
        // files' blocks, and slow symlinks' (pst.data_blocks counts both)
        debug_assert!(pst.data_blocks >= file_blocks);
        let live_blocks = pst.data_blocks;
        let fixed_blocks = live_blocks - movable_blocks;

        // 3. fullness
        let fs = pop.fs_bytes;
        let cap = max_fullness(fs);
        let initial_fullness = (live_blocks * BLOCK) as f64 / fs as f64;
        let fullness = match spec.fullness {
            Some(f) if f > cap => {
                return Err(bad(
                    "fullness",
                    format!(
                        "{f} is above what fits: a {fs}-byte file system keeps {} bytes for metadata (inode tables, journal, bitmaps, mapping blocks, directories), so at most {cap:.4} of it can hold file data",
                        metadata_margin_bytes(fs)
                    ),
                ))
            }
            Some(f) => f,
            None if live_blocks == 0 => {
                return Err(bad(
                    "fullness",
                    "the tree holds no data, so it has no fullness to keep; give one".into(),
                ))
            }
            None => initial_fullness.min(cap),
        };
        let target_blocks = (fullness * fs as f64 / BLOCK as f64).floor() as u64;
        if fixed_blocks >= target_blocks {
            return Err(bad(
                "fullness",
                format!(
                    "{fullness} holds {target_blocks} blocks of 4 KiB, but what the stream cannot remove (hard-linked files, symlinks) takes {fixed_blocks}"
                ),
            ));
        }
        let room_blocks = target_blocks - fixed_blocks;
        let room_bytes = room_blocks * BLOCK;

        // 4. target sizes, and where each bucket's sizes come from
        let mut target = [0f64; SIZE_BUCKETS];
        let mut pools: Vec<Pool> = (0..SIZE_BUCKETS).map(|_| Pool::Empty).collect();
        let shaped = match spec.size_shape {
            SizeShape::Tree => None,
            SizeShape::AgrawalFast07 => Some(agrawal_fast07_sizes(room_bytes)),
        };
        match shaped.as_ref().or(spec.sizes.as_ref()) {
            None => {
                if files_live == 0 {
                    return Err(bad(
                        "sizes",
                        "the tree has no regular file to measure a size distribution from; give one".into(),
                    ));
                }
                if count[1..].iter().all(|&c| c == 0) {
                    return Err(bad(
                        "sizes",
                        "the tree's files are all empty: a stream of them writes nothing; give a distribution".into(),
                    ));
                }
                for b in 0..SIZE_BUCKETS {
                    if count[b] == 0 {
                        continue;
                    }
                    target[b] = count[b] as f64 / files_live as f64;
                    let mut v = std::mem::take(&mut sizes_by_bucket[b]);
                    let smallest = v.iter().copied().min().unwrap_or(0);
                    v.retain(|&s| blocks_of(s) <= room_blocks);
                    if v.is_empty() {
                        return Err(bad(
                            "fullness",
                            format!(
                                "{fullness} leaves {room_bytes} bytes for the files the stream may touch, but the tree's size distribution has files of {} bytes (bucket below {} bytes) that would not fit; ask for more fullness or give [aging] sizes",
                                smallest,
                                below(b)
                            ),
                        ));
                    }
                    pools[b] = Pool::Sample(v);
                }
            }
            Some(sizes) => {
                let sum: f64 = sizes.iter().map(|s| s.weight).sum();
                for (i, s) in sizes.iter().enumerate() {
                    if s.weight == 0.0 {
                        continue;
                    }
                    let b = bucket_of(s.below_bytes - 1);
                    let lo = if b == 0 { 0 } else { 1u64 << (b - 1) };
                    let hi = (s.below_bytes - 1).min(room_bytes);
                    if lo > hi {
                        return Err(bad(
                            &format!("sizes[{i}].below_bytes"),
                            format!(
                                "files of {lo} bytes or more do not fit in the {room_bytes} bytes fullness {fullness} leaves for the files the stream may touch"
                            ),
                        ));
                    }
                    target[b] = s.weight / sum;
                    pools[b] = Pool::Range(lo, hi);
                }
            }
        }

        // a volume that tiny files would take billions of operations to write
        let mean_create: f64 = (0..SIZE_BUCKETS)
            .map(|b| {
                target[b]
                    * match &pools[b] {
                        Pool::Empty => 0.0,
                        Pool::Sample(v) => v.iter().sum::<u64>() as f64 / v.len() as f64,
                        Pool::Range(lo, hi) => (*lo as f64 + *hi as f64) / 2.0,
                    }
            })
            .sum();
        let goal = spec.age * fs as f64;
        let expected_ops = 2.0 * goal / mean_create.max(1.0);
        if expected_ops > MAX_OPERATIONS {
            return Err(bad(
                "age",
                format!(
                    "{} × capacity in files of {mean_create:.0} bytes on average takes about {expected_ops:.1e} operations (a create and an unlink each); at most {MAX_OPERATIONS:.0e}: ask for less age or larger files",
                    spec.age
                ),
            ));
        }

        // 5. target depths
        let nd = match &spec.depths {
            Some(d) => d
                .iter()
                .map(|d| d.depth as usize)
                .max()
                .unwrap_or(1)
                .max(max_depth),
            None => max_depth,
        } + 2;
        let mut dtarget = vec![0f64; nd];
        match &spec.depths {
            None => {
                if files_live == 0 {
                    return Err(bad(
                        "depths",
                        "the tree has no regular file to measure a depth distribution from; give one".into(),
                    ));
                }
                for (d, &c) in file_depths.iter().enumerate() {
                    dtarget[d] = c as f64 / files_live as f64;
                }
            }
            Some(depths) => {
                let sum: f64 = depths.iter().map(|d| d.weight).sum();
                for d in depths {
                    dtarget[d.depth as usize] = d.weight / sum;
                }
            }
        }

        // 6. the stream's own records
        let mut a = Ager {
            spec,
            rng: ChaCha8Rng::seed_from_u64(spec.seed),
            initial_names,
            serial: 0,
            files: Vec::new(),
            free_files: Vec::new(),
            sets: vec![Vec::new(); SIZE_BUCKETS * nd],
            all: Vec::new(),
            movable_in_bucket: [0; SIZE_BUCKETS],
            movable_at_depth: vec![0; nd],
            count,
            dcount: vec![0; nd],
            files_live,
            target,
            pools,
            dtarget,
            nd,
            dirs: Vec::new(),
            free_dirs: Vec::new(),
            by_depth: vec![Vec::new(); nd],
            empty: Vec::new(),
            dirs_live: 0,
            dir_target: vec![0.0; nd],
            dirs_goal: 0,
            live_blocks,
            target_blocks,
            goal_bytes: (spec.age * fs as f64) as u64,
            st: StreamStats::default(),
            initial_hist: count,
            settled: false,
            pending: None,
        };
        for (d, &c) in file_depths.iter().enumerate() {
            a.dcount[d] = c;
        }
        // directories keep their tree numbers while the tree's are read
        let mut dir_map: Vec<u32> = vec![NONE; idirs.len()];
        for (i, d) in idirs.iter().enumerate().filter(|(_, d)| d.alive) {
            let id = a.dirs.len() as u32;
            dir_map[i] = id;
            a.dirs.push(DirRec {
                path: d.path.to_string(),
                parent: dir_map[d.parent as usize],
                depth: d.depth,
                entries: d.entries,
                depth_pos: a.by_depth[d.depth as usize].len() as u32,
                empty_pos: NONE,
                removable: i != 0,
            });
            a.by_depth[d.depth as usize].push(id);
            if i != 0 {
                a.dirs_live += 1;
                a.dir_target[d.depth as usize] += 1.0;
                if d.entries == 0 {
                    a.dirs[id as usize].empty_pos = a.empty.len() as u32;
                    a.empty.push(id);
                }
            }
        }
        a.dirs_goal = a.dirs_live;
        if a.dirs_live > 0 {
            let n = a.dirs_live as f64;
            a.dir_target.iter_mut().for_each(|t| *t /= n);
        }
        // parent directory of each file: by its name's directory path
        let dir_by_path: std::collections::HashMap<&str, u32> = idirs
            .iter()
            .enumerate()
            .filter(|(_, d)| d.alive)
            .map(|(i, d)| (d.path, dir_map[i]))
            .collect();
        for f in ifiles.iter().filter(|f| !f.names.is_empty() && !f.linked) {
            let path = f.names[0];
            let dir = dir_by_path[parent_of(path)];
            a.add_file(path.to_string(), f.size, dir);
        }
        a.st = StreamStats {
            capacity_bytes: fs,
            metadata_margin_bytes: metadata_margin_bytes(fs),
            target_fullness: fullness,
            initial_fullness,
            initial_operations: pop.ops.len() as u64,
            goal_bytes: a.goal_bytes,
            files_initial: files_live,
            size_distance_initial: tv(&count, &a.target),
            lowest_fullness_after_settling: f64::NAN,
            highest_fullness_after_settling: f64::NAN,
            ..Default::default()
        };
        Ok(a)
    }

    fn fullness(&self) -> f64 {
        (self.live_blocks * BLOCK) as f64 / self.st.capacity_bytes as f64
    }

    fn run(&mut self, sink: &mut dyn FnMut(NsOp)) -> Result<(), Error> {
        if self.goal_bytes == 0 {
            return Ok(());
        }
        while self.st.bytes_written < self.goal_bytes {
            if !self.step(sink) {
                return Err(Error::BadAging {
                    source_name: "aging spec".into(),
                    key: "fullness".into(),
                    reason: format!(
                        "no operation can write or free data at fullness {} (live {} blocks of 4 KiB, target {}): the tree cannot reach its targets",
                        self.fullness(),
                        self.live_blocks,
                        self.target_blocks
                    ),
                });
            }
            if self.settled {
                let f = self.fullness();
                let s = &mut self.st;
                if s.lowest_fullness_after_settling.is_nan() {
                    s.lowest_fullness_after_settling = f;
                    s.highest_fullness_after_settling = f;
                }
                s.lowest_fullness_after_settling = s.lowest_fullness_after_settling.min(f);
                s.highest_fullness_after_settling = s.highest_fullness_after_settling.max(f);
            }
        }
        Ok(())
    }

    /// One operation; false when none was possible.
    fn step(&mut self, sink: &mut dyn FnMut(NsOp)) -> bool {
        let r: f64 = self.rng.gen();
        if r < self.spec.dir_share {
            if self.dir_op(sink) {
                return true;
            }
        } else if r < self.spec.dir_share + self.spec.rename_share && self.rename(sink) {
            return true;
        }
        if self.live_blocks < self.target_blocks {
            // while a create waits for room, the room is its: no extend takes it
            let extend = self.pending.is_none() && self.rng.gen::<f64>() < self.spec.extend_share;
            if (extend && self.extend(sink)) || self.create(sink) {
                return true;
            }
        }
        // the target is reached: from the first free at or below it on, the fullness is
        // the one held
        if self.live_blocks <= self.target_blocks {
            self.settled = true;
        }
        if self.rng.gen::<f64>() < self.spec.truncate_share && self.truncate(sink) {
            return true;
        }
        self.unlink(sink)
    }

    // ----- bookkeeping -----

    fn set_index(&self, bucket: usize, depth: usize) -> usize {
        bucket * self.nd + depth
    }

    /// Records a new movable file (counts, sets, histograms); returns its id.
    fn add_file(&mut self, path: String, size: u64, dir: u32) -> u32 {
        let depth = self.dirs[dir as usize].depth as usize + 1;
        let bucket = bucket_of(size);
        let si = self.set_index(bucket, depth);
        let rec = FileRec {
            path,
            size,
            dir,
            bucket: bucket as u8,
            depth: depth as u16,
            pos: self.sets[si].len() as u32,
            all_pos: self.all.len() as u32,
        };
        let id = match self.free_files.pop() {
            Some(id) => {
                self.files[id as usize] = rec;
                id
            }
            None => {
                self.files.push(rec);
                (self.files.len() - 1) as u32
            }
        };
        self.sets[si].push(id);
        self.all.push(id);
        self.movable_in_bucket[bucket] += 1;
        self.movable_at_depth[depth] += 1;
        id
    }

    /// Takes file `id` out of its (bucket, depth) set.
    fn unset(&mut self, id: u32) {
        let f = &self.files[id as usize];
        let (b, d, pos) = (f.bucket as usize, f.depth as usize, f.pos);
        let si = self.set_index(b, d);
        let files = &mut self.files;
        set_remove(&mut self.sets[si], pos, |moved, to| {
            files[moved as usize].pos = to
        });
        self.movable_in_bucket[b] -= 1;
        self.movable_at_depth[d] -= 1;
    }

    /// Puts file `id` back into the set its size and depth say.
    fn reset(&mut self, id: u32) {
        let f = &self.files[id as usize];
        let (b, d) = (f.bucket as usize, f.depth as usize);
        let si = self.set_index(b, d);
        self.files[id as usize].pos = self.sets[si].len() as u32;
        self.sets[si].push(id);
        self.movable_in_bucket[b] += 1;
        self.movable_at_depth[d] += 1;
    }

    fn resize(&mut self, id: u32, size: u64) {
        self.unset(id);
        let f = &mut self.files[id as usize];
        self.live_blocks = self.live_blocks - blocks_of(f.size) + blocks_of(size);
        self.count[f.bucket as usize] -= 1;
        f.size = size;
        f.bucket = bucket_of(size) as u8;
        self.count[f.bucket as usize] += 1;
        self.reset(id);
    }

    fn add_entry(&mut self, dir: u32) {
        let d = &mut self.dirs[dir as usize];
        d.entries += 1;
        if d.entries == 1 && d.empty_pos != NONE {
            let pos = d.empty_pos;
            d.empty_pos = NONE;
            let dirs = &mut self.dirs;
            set_remove(&mut self.empty, pos, |moved, to| {
                dirs[moved as usize].empty_pos = to
            });
        }
    }

    fn remove_entry(&mut self, dir: u32) {
        let d = &mut self.dirs[dir as usize];
        d.entries -= 1;
        if d.entries == 0 && d.removable {
            d.empty_pos = self.empty.len() as u32;
            self.empty.push(dir);
        }
    }

    /// A name in `dir` no operation has made: `g` + a base-36 serial (+ `tag`).
    fn fresh_path(&mut self, dir: u32, tag: char) -> String {
        loop {
            self.serial += 1;
            let parent = &self.dirs[dir as usize].path;
            let mut p = String::with_capacity(parent.len() + 16);
            if !parent.is_empty() {
                p.push_str(parent);
                p.push('/');
            }
            p.push(tag);
            let mut n = self.serial;
            loop {
                p.push(std::char::from_digit((n % 36) as u32, 36).expect("digit"));
                n /= 36;
                if n == 0 {
                    break;
                }
            }
            if !self.initial_names.contains(p.as_str()) {
                return p;
            }
        }
    }

    // ----- choices -----

    /// Ideal count of bucket b minus its count, with `n` files.
    fn size_deficit(&self, b: usize, n: u64) -> f64 {
        self.target[b] * n as f64 - self.count[b] as f64
    }

    fn depth_deficit(&self, d: usize, n: u64) -> f64 {
        self.dtarget[d] * n as f64 - self.dcount[d] as f64
    }

    /// Bucket for a new file: a draw from the target (steered or not; the steering is in
    /// what is removed, extended, truncated and renamed).
    fn create_bucket(&mut self) -> usize {
        self.draw_bucket(0, SIZE_BUCKETS - 1)
            .expect("a target has a bucket")
    }

    /// A bucket in `lo..=hi` drawn from the target restricted to it; None when it has no
    /// weight there.
    fn draw_bucket(&mut self, lo: usize, hi: usize) -> Option<usize> {
        let total: f64 = (lo..=hi).map(|b| self.target[b]).sum();
        if total <= 0.0 {
            return None;
        }
        let x = self.rng.gen::<f64>() * total;
        let mut acc = 0.0;
        let mut last = None;
        for b in (lo..=hi).filter(|&b| self.target[b] > 0.0) {
            acc += self.target[b];
            last = Some(b);
            if x < acc {
                return Some(b);
            }
        }
        last
    }

    /// Depth for a new file: a draw from the target.
    fn create_depth(&mut self) -> usize {
        let x: f64 = self.rng.gen();
        let mut acc = 0.0;
        let mut last = 1;
        for d in (1..self.nd).filter(|&d| self.dtarget[d] > 0.0) {
            acc += self.dtarget[d];
            last = d;
            if x < acc {
                return d;
            }
        }
        last
    }

    /// A random movable file of bucket `b`, at its most over-represented depth.
    fn pick_in_bucket(&mut self, b: usize) -> Option<u32> {
        let n = self.files_live;
        let d = argmax(
            (0..self.nd).filter(|&d| !self.sets[self.set_index(b, d)].is_empty()),
            |d| -self.depth_deficit(d, n),
        )?;
        let set = &self.sets[self.set_index(b, d)];
        Some(set[self.rng.gen_range(0..set.len())])
    }

    fn pick_any(&mut self) -> Option<u32> {
        if self.all.is_empty() {
            None
        } else {
            Some(self.all[self.rng.gen_range(0..self.all.len())])
        }
    }

    /// The most over-represented bucket with a movable file, among `range`.
    fn most_over(&self, range: std::ops::Range<usize>) -> Option<usize> {
        let n = self.files_live;
        argmax(range.filter(|&b| self.movable_in_bucket[b] > 0), |b| {
            -self.size_deficit(b, n)
        })
    }

    /// A parent directory at depth `depth`, made (with its parents) when there is none.
    fn parent_at(&mut self, depth: usize, sink: &mut dyn FnMut(NsOp)) -> u32 {
        if depth == 0 {
            return 0;
        }
        if !self.by_depth[depth].is_empty() {
            let v = &self.by_depth[depth];
            return v[self.rng.gen_range(0..v.len())];
        }
        let up = self.parent_at(depth - 1, sink);
        self.mkdir_in(up, sink)
    }

    fn mkdir_in(&mut self, parent: u32, sink: &mut dyn FnMut(NsOp)) -> u32 {
        let path = self.fresh_path(parent, 'h');
        let depth = self.dirs[parent as usize].depth + 1;
        self.add_entry(parent);
        let rec = DirRec {
            path: path.clone(),
            parent,
            depth,
            entries: 0,
            depth_pos: self.by_depth[depth as usize].len() as u32,
            empty_pos: NONE,
            removable: true,
        };
        let id = match self.free_dirs.pop() {
            Some(id) => {
                self.dirs[id as usize] = rec;
                id
            }
            None => {
                self.dirs.push(rec);
                (self.dirs.len() - 1) as u32
            }
        };
        self.by_depth[depth as usize].push(id);
        self.dirs[id as usize].empty_pos = self.empty.len() as u32;
        self.empty.push(id);
        self.dirs_live += 1;
        self.st.mkdirs += 1;
        self.st.operations += 1;
        sink(NsOp::Mkdir { path });
        id
    }

    // ----- operations -----

    fn create(&mut self, sink: &mut dyn FnMut(NsOp)) -> bool {
        // a drawn size waits until it fits: frees make room for it (dropping it would
        // favour small files whenever live data is near the target)
        let size = match self.pending.take() {
            Some(size) => size,
            None => {
                let b = self.create_bucket();
                self.pools[b].draw(&mut self.rng)
            }
        };
        if self.live_blocks + blocks_of(size) > self.target_blocks {
            self.pending = Some(size);
            return false;
        }
        let depth = self.create_depth();
        let dir = self.parent_at(depth - 1, sink);
        let path = self.fresh_path(dir, 'g');
        self.add_entry(dir);
        self.add_file(path.clone(), size, dir);
        self.count[bucket_of(size)] += 1;
        self.dcount[depth] += 1;
        self.files_live += 1;
        self.live_blocks += blocks_of(size);
        self.st.creates += 1;
        self.st.operations += 1;
        self.st.bytes_written += size;
        sink(NsOp::Create { path, bytes: size });
        true
    }

    /// Largest size file `id` may grow to without live data passing the target.
    fn max_fit(&self, id: u32) -> u64 {
        let size = self.files[id as usize].size;
        let room = self.target_blocks.saturating_sub(self.live_blocks);
        (blocks_of(size) + room) * BLOCK
    }

    fn extend(&mut self, sink: &mut dyn FnMut(NsOp)) -> bool {
        let (id, new_size) = if self.spec.steer {
            // a file of the most over-represented bucket grows into a bucket drawn from the
            // target above it (or within its own), by at most what a create would write: an
            // extend of a 1 GiB file is not a 1 GiB write, and extends must not outweigh
            // creates in the volume written
            let Some(o) = self.most_over(0..SIZE_BUCKETS - 1) else {
                return false;
            };
            let id = self.pick_in_bucket(o).expect("the bucket has a file");
            let size = self.files[id as usize].size;
            let b = self.create_bucket();
            let most = self.pools[b].draw(&mut self.rng).max(1);
            let up = match self.draw_bucket(o + 1, SIZE_BUCKETS - 1) {
                Some(u) if self.rng.gen::<f64>() < self.above_weight(o) => {
                    Some(self.pools[u].draw(&mut self.rng)).filter(|&n| n - size <= most)
                }
                _ => None,
            };
            let new = match up {
                Some(n) => n,
                None => {
                    let top = below(o) - 1;
                    if size >= top {
                        return false;
                    }
                    size + self.rng.gen_range(1..=most.min(top - size))
                }
            };
            (id, new)
        } else {
            let Some(id) = self.pick_any() else {
                return false;
            };
            let b = self.create_bucket();
            let more = self.pools[b].draw(&mut self.rng).max(1);
            (id, self.files[id as usize].size.saturating_add(more))
        };
        let size = self.files[id as usize].size;
        if new_size <= size || new_size > self.max_fit(id) {
            return false;
        }
        self.resize(id, new_size);
        self.st.extends += 1;
        self.st.operations += 1;
        self.st.bytes_written += new_size - size;
        sink(NsOp::Extend {
            path: self.files[id as usize].path.clone(),
            bytes: new_size - size,
        });
        true
    }

    /// Target weight of the buckets above `b`, given bucket `b` and above.
    fn above_weight(&self, b: usize) -> f64 {
        let above: f64 = self.target[b + 1..].iter().sum();
        let from: f64 = above + self.target[b];
        if from > 0.0 {
            above / from
        } else {
            1.0
        }
    }

    /// Target weight of the buckets below `b`, given bucket `b` and below.
    fn below_weight(&self, b: usize) -> f64 {
        let under: f64 = self.target[..b].iter().sum();
        let upto: f64 = under + self.target[b];
        if upto > 0.0 {
            under / upto
        } else {
            1.0
        }
    }

    fn truncate(&mut self, sink: &mut dyn FnMut(NsOp)) -> bool {
        let (id, new_size) = if self.spec.steer {
            // a file of the most over-represented bucket shrinks into a bucket drawn from
            // the target below it (or within its own)
            let Some(o) = self.most_over(1..SIZE_BUCKETS) else {
                return false;
            };
            let id = self.pick_in_bucket(o).expect("the bucket has a file");
            let size = self.files[id as usize].size;
            match self.draw_bucket(0, o - 1) {
                Some(u) if self.rng.gen::<f64>() < self.below_weight(o) => {
                    (id, self.pools[u].draw(&mut self.rng))
                }
                _ => {
                    let low = 1u64 << (o - 1);
                    if size <= low {
                        return false;
                    }
                    (id, self.rng.gen_range(low..size))
                }
            }
        } else {
            let Some(id) = self.pick_any() else {
                return false;
            };
            let size = self.files[id as usize].size;
            if size == 0 {
                return false;
            }
            (id, self.rng.gen_range(0..size))
        };
        if new_size >= self.files[id as usize].size {
            return false;
        }
        self.resize(id, new_size);
        self.st.truncates += 1;
        self.st.operations += 1;
        sink(NsOp::Truncate {
            path: self.files[id as usize].path.clone(),
            bytes: new_size,
        });
        true
    }

    fn unlink(&mut self, sink: &mut dyn FnMut(NsOp)) -> bool {
        let id = if self.spec.steer {
            let Some(o) = self.most_over(0..SIZE_BUCKETS) else {
                return false;
            };
            self.pick_in_bucket(o).expect("the bucket has a file")
        } else {
            let Some(id) = self.pick_any() else {
                return false;
            };
            id
        };
        self.unset(id);
        let f = &mut self.files[id as usize];
        let path = std::mem::take(&mut f.path);
        let (size, bucket, depth, dir, all_pos) = (
            f.size,
            f.bucket as usize,
            f.depth as usize,
            f.dir,
            f.all_pos,
        );
        let files = &mut self.files;
        set_remove(&mut self.all, all_pos, |moved, to| {
            files[moved as usize].all_pos = to
        });
        self.free_files.push(id);
        self.count[bucket] -= 1;
        self.dcount[depth] -= 1;
        self.files_live -= 1;
        self.live_blocks -= blocks_of(size);
        self.remove_entry(dir);
        self.st.unlinks += 1;
        self.st.operations += 1;
        sink(NsOp::Unlink { path });
        true
    }

    fn rename(&mut self, sink: &mut dyn FnMut(NsOp)) -> bool {
        if self.all.is_empty() {
            return false;
        }
        let n = self.files_live;
        let mut choice = None;
        if self.spec.steer {
            let over = argmax(
                (1..self.nd).filter(|&d| self.movable_at_depth[d] > 0),
                |d| -self.depth_deficit(d, n),
            );
            let under = argmax(
                (1..self.nd).filter(|&d| self.dtarget[d] > 0.0 && !self.by_depth[d - 1].is_empty()),
                |d| self.depth_deficit(d, n),
            );
            if let (Some(o), Some(u)) = (over, under) {
                if o != u && self.depth_deficit(u, n) >= 0.5 && self.depth_deficit(o, n) <= -0.5 {
                    let b = argmax(
                        (0..SIZE_BUCKETS).filter(|&b| !self.sets[self.set_index(b, o)].is_empty()),
                        |b| -self.size_deficit(b, n),
                    )
                    .expect("a file at that depth");
                    let set = &self.sets[self.set_index(b, o)];
                    let id = set[self.rng.gen_range(0..set.len())];
                    let v = &self.by_depth[u - 1];
                    let to_dir = v[self.rng.gen_range(0..v.len())];
                    choice = Some((id, to_dir));
                }
            }
        }
        let (id, to_dir) = match choice {
            Some(c) => c,
            None if self.spec.steer => {
                // balanced: a new name in the same directory
                let id = self.pick_any().expect("a file");
                (id, self.files[id as usize].dir)
            }
            None => {
                let id = self.pick_any().expect("a file");
                let to_dir = loop {
                    let d = self.rng.gen_range(0..self.dirs.len()) as u32;
                    let rec = &self.dirs[d as usize];
                    // a live directory (freed slots have no depth position) shallow enough
                    if (rec.depth as usize) + 1 < self.nd
                        && self.by_depth[rec.depth as usize]
                            .get(rec.depth_pos as usize)
                            .copied()
                            == Some(d)
                    {
                        break d;
                    }
                };
                (id, to_dir)
            }
        };
        let to = self.fresh_path(to_dir, 'g');
        self.unset(id);
        let from_dir = self.files[id as usize].dir;
        let old_depth = self.files[id as usize].depth as usize;
        let new_depth = self.dirs[to_dir as usize].depth as usize + 1;
        self.add_entry(to_dir);
        self.remove_entry(from_dir);
        let f = &mut self.files[id as usize];
        let from = std::mem::replace(&mut f.path, to.clone());
        f.dir = to_dir;
        f.depth = new_depth as u16;
        self.dcount[old_depth] -= 1;
        self.dcount[new_depth] += 1;
        self.reset(id);
        self.st.renames += 1;
        self.st.operations += 1;
        sink(NsOp::Rename { path: from, to });
        true
    }

    /// mkdir while there are no more directories than the tree had (a tree without any
    /// gets none), rmdir of an empty one while there are more: the count churns between
    /// the tree's and one more.
    fn dir_op(&mut self, sink: &mut dyn FnMut(NsOp)) -> bool {
        if self.dirs_live < self.dirs_goal
            || (self.dirs_live == self.dirs_goal && self.dirs_goal > 0)
        {
            let n = self.dirs_live + 1;
            let depth = if self.spec.steer {
                argmax(
                    (1..self.nd - 1).filter(|&d| !self.by_depth[d - 1].is_empty()),
                    |d| self.dir_target[d] * n as f64 - self.by_depth[d].len() as f64,
                )
            } else {
                let v: Vec<usize> = (1..self.nd - 1)
                    .filter(|&d| self.dir_target[d] > 0.0 && !self.by_depth[d - 1].is_empty())
                    .collect();
                (!v.is_empty()).then(|| v[self.rng.gen_range(0..v.len())])
            };
            let Some(depth) = depth else { return false };
            let v = &self.by_depth[depth - 1];
            let parent = v[self.rng.gen_range(0..v.len())];
            self.mkdir_in(parent, sink);
            return true;
        }
        if self.dirs_live > self.dirs_goal && !self.empty.is_empty() {
            let id = self.empty[self.rng.gen_range(0..self.empty.len())];
            let d = &mut self.dirs[id as usize];
            let path = std::mem::take(&mut d.path);
            let (depth, depth_pos, empty_pos, parent) =
                (d.depth as usize, d.depth_pos, d.empty_pos, d.parent);
            d.empty_pos = NONE;
            d.depth_pos = NONE;
            let dirs = &mut self.dirs;
            set_remove(&mut self.empty, empty_pos, |moved, to| {
                dirs[moved as usize].empty_pos = to
            });
            set_remove(&mut self.by_depth[depth], depth_pos, |moved, to| {
                dirs[moved as usize].depth_pos = to
            });
            self.remove_entry(parent);
            self.free_dirs.push(id);
            self.dirs_live -= 1;
            self.st.rmdirs += 1;
            self.st.operations += 1;
            sink(NsOp::Rmdir { path });
            return true;
        }
        false
    }

    fn stats(&self) -> StreamStats {
        let mut s = self.st.clone();
        s.final_fullness = self.fullness();
        if !self.settled {
            s.lowest_fullness_after_settling = s.final_fullness;
            s.highest_fullness_after_settling = s.final_fullness;
        }
        s.files_final = self.files_live;
        s.directories_final = self.dirs_live;
        s.size_distance = tv(&self.count, &self.target);
        s.depth_distance = tv(&self.dcount, &self.dtarget);
        let dir_counts: Vec<u64> = (0..self.nd)
            .map(|d| {
                if d == 0 {
                    0
                } else {
                    self.by_depth[d].len() as u64
                }
            })
            .collect();
        s.dir_depth_distance = tv(&dir_counts, &self.dir_target);
        let total = |c: &[u64]| c.iter().sum::<u64>().max(1) as f64;
        let (ni, nf) = (total(&self.initial_hist), total(&self.count));
        s.size_histogram = (0..SIZE_BUCKETS)
            .filter(|&b| self.target[b] > 0.0 || self.initial_hist[b] > 0 || self.count[b] > 0)
            .map(|b| SizeRow {
                below_bytes: below(b),
                target_fraction: self.target[b],
                initial_fraction: self.initial_hist[b] as f64 / ni,
                final_fraction: self.count[b] as f64 / nf,
            })
            .collect();
        let nd = total(&self.dcount);
        s.depth_histogram = (1..self.nd)
            .filter(|&d| self.dtarget[d] > 0.0 || self.dcount[d] > 0)
            .map(|d| DepthRow {
                depth: d as u32,
                target_fraction: self.dtarget[d],
                final_fraction: self.dcount[d] as f64 / nd,
            })
            .collect();
        s
    }
}

/// The Agrawal et al. (FAST '07) size distribution by count, per power-of-two bucket, as
/// [`SizeWeight`]s: the hybrid of populations/ubuntu-32g.toml's `[shape]` (Impressions,
/// FAST '09, Table 2) below 2 GiB, sizes rounded down to whole bytes as the tree generator
/// does; buckets whose smallest file is over `room_bytes` are left out (the tail is cut
/// where the tree generator cuts it at 2 GiB).
pub fn agrawal_fast07_sizes(room_bytes: u64) -> Vec<SizeWeight> {
    let shape = crate::populations::tree::TreePopulation::from_toml_str(
        crate::UBUNTU_32G_TOML,
        "embedded ubuntu-32g",
    )
    .expect("the embedded population is valid")
    .shape;
    let cdf = |x: f64| -> f64 {
        let lognormal = if x <= 0.0 {
            0.0
        } else {
            0.5 * (1.0 + erf((x.ln() - shape.lognormal_mu) / (shape.lognormal_sigma * 2f64.sqrt())))
        };
        let pareto = if x <= shape.pareto_xm_bytes {
            0.0
        } else {
            1.0 - (shape.pareto_xm_bytes / x).powf(shape.pareto_k)
        };
        shape.lognormal_weight * lognormal + (1.0 - shape.lognormal_weight) * pareto
    };
    // sizes in [0, 1) round down to 0 (bucket 0); bucket k holds [2^(k-1), 2^k)
    (0..=31usize)
        .filter(|&b| b == 0 || (1u64 << (b - 1)) <= room_bytes)
        .map(|b| SizeWeight {
            below_bytes: 1u64 << b,
            weight: cdf((1u64 << b) as f64)
                - if b == 0 {
                    0.0
                } else {
                    cdf((1u64 << (b - 1)) as f64)
                },
        })
        .filter(|w| w.weight > 0.0)
        .collect()
}

/// The error function (Abramowitz and Stegun 7.1.26: absolute error below 1.5e-7).
fn erf(x: f64) -> f64 {
    let t = 1.0 / (1.0 + 0.327_591_1 * x.abs());
    let y = 1.0
        - (((((1.061_405_429 * t - 1.453_152_027) * t) + 1.421_413_741) * t - 0.284_496_736) * t
            + 0.254_829_592)
            * t
            * (-x * x).exp();
    if x >= 0.0 {
        y
    } else {
        -y
    }
}

/// Upper bound (exclusive) of size bucket `b`.
fn below(b: usize) -> u64 {
    if b >= 64 {
        u64::MAX
    } else {
        1u64 << b
    }
}

/// Total-variation distance between counts (normalised) and a target distribution.
fn tv(counts: &[u64], target: &[f64]) -> f64 {
    let n: u64 = counts.iter().sum();
    if n == 0 {
        // nothing against nothing is no distance; nothing against something is all of it
        return if target.iter().any(|&q| q > 0.0) {
            1.0
        } else {
            0.0
        };
    }
    let len = counts.len().max(target.len());
    0.5 * (0..len)
        .map(|i| {
            let p = counts.get(i).copied().unwrap_or(0) as f64 / n as f64;
            let q = target.get(i).copied().unwrap_or(0.0);
            (p - q).abs()
        })
        .sum::<f64>()
}

/// The item with the largest key; ties go to the first.
fn argmax<I: Iterator<Item = usize>>(it: I, key: impl Fn(usize) -> f64) -> Option<usize> {
    let mut best: Option<(usize, f64)> = None;
    for i in it {
        let k = key(i);
        if best.map_or(true, |(_, bk)| k > bk) {
            best = Some((i, k));
        }
    }
    best.map(|(i, _)| i)
}
