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
//!
//! The code: [`spec`] (what a stream should do, and its checks), `targets` (the tree as
//! the population leaves it, its measured distributions and the targets drawn from them, and
//! how much of a file system is left to metadata), `ager` (the engine), [`stats`] (what a
//! stream did).

mod ager;
pub mod spec;
pub mod stats;
mod targets;

use crate::{Error, NsOp, Population};
use ager::Ager;

pub use spec::{AgingSpec, DepthWeight, SizeShape, SizeWeight};
pub use stats::{DepthRow, SizeRow, StreamStats};
pub use targets::{agrawal_fast07_sizes, fullness_cap};

/// Block size live data is counted in.
pub(super) const BLOCK: u64 = 4096;
/// Power-of-two size buckets, as [`crate::PopulationStats::size_histogram`] counts them:
/// bucket `k` holds sizes in `[2^(k-1), 2^k)`, bucket 0 the empty files.
pub(super) const SIZE_BUCKETS: usize = 65;
/// Deepest file (path components) a depth distribution may ask for.
pub const MAX_DEPTH: u32 = 64;
/// Largest `age` accepted (Geriatrix's own example ages by 1000 × capacity).
pub const MAX_AGE: f64 = 1000.0;
/// Most operations a stream may be expected to take (a create and an unlink per file
/// written): 5·10⁸ take minutes to generate (about 2 million a second here) and some 50 GB
/// as a [`Population`] (about 100 bytes each); [`stream_stats`] and [`generate`] keep none.
pub const MAX_OPERATIONS: f64 = 5e8;
pub(super) const NONE: u32 = u32::MAX;

/// The aged population: `pop`'s operations followed by an aging stream made by `spec`.
/// Errors with [`Error::BadAging`] when the spec is out of range or the tree cannot reach
/// its targets (naming the parameter), or with `pop`'s own [`Error::BadTree`].
///
/// `margin_bytes` of the file system are left to metadata: live file data stays below
/// [`fullness_cap`] of it. How much a file system takes for metadata is mkfs knowledge,
/// which the caller brings (`layoutlab_layout::mkfs::metadata_margin_bytes`). The margin
/// moves nothing but the cap: a stream held below it is the same whatever the margin, and
/// [`StreamStats::metadata_margin_bytes`] records it.
pub fn age(pop: &Population, spec: &AgingSpec, margin_bytes: u64) -> Result<Population, Error> {
    age_with_stats(pop, spec, margin_bytes).map(|(p, _)| p)
}

/// [`age`], with the stream's statistics.
pub fn age_with_stats(
    pop: &Population,
    spec: &AgingSpec,
    margin_bytes: u64,
) -> Result<(Population, StreamStats), Error> {
    let mut ops = pop.ops.clone();
    let stats = generate(pop, spec, margin_bytes, &mut |op| ops.push(op))?;
    Ok((
        Population {
            name: format!("{} aged {}x (seed {})", pop.name, spec.age, spec.seed),
            fs_bytes: pop.fs_bytes,
            ops,
        },
        stats,
    ))
}

/// The population [`age`] makes with `spec` and the oldest of `ages`, and for each of `ages`
/// (capacities written, in their order) the number of its operations that [`age`] with that
/// age would make: every younger stream is a prefix of the oldest one, since the stream's
/// goal decides only when it stops (`Ager::run_marked`). One stream then serves every age:
/// `aged.ops[..ends[i]]` is `age(pop, spec with ages[i]).ops`, which
/// `younger_streams_are_prefixes` in `tests/aging.rs` holds. `spec.age` is ignored.
pub fn age_prefixes(
    pop: &Population,
    spec: &AgingSpec,
    margin_bytes: u64,
    ages: &[f64],
) -> Result<(Population, Vec<usize>), Error> {
    let oldest = ages.iter().copied().fold(0.0, f64::max);
    let spec = AgingSpec {
        age: oldest,
        ..spec.clone()
    };
    spec.validate()?;
    pop.check_tree()?;
    for &a in ages {
        AgingSpec {
            age: a,
            ..spec.clone()
        }
        .validate()?;
    }
    let fs = pop.fs_bytes as f64;
    // the goal as Ager::new computes it from each age
    let goals: Vec<u64> = ages.iter().map(|&a| (a * fs) as u64).collect();
    let mut ops = pop.ops.clone();
    let mut ager = Ager::new(pop, &spec, margin_bytes)?;
    let marks = ager.run_marked(&goals, &mut |op| ops.push(op))?;
    let tree = pop.ops.len();
    Ok((
        Population {
            name: format!("{} aged {}x (seed {})", pop.name, spec.age, spec.seed),
            fs_bytes: pop.fs_bytes,
            ops,
        },
        marks.into_iter().map(|m| tree + m as usize).collect(),
    ))
}

/// The statistics of the stream [`age`] would append, without keeping its operations
/// (a stream of tens of millions of operations needs gigabytes as a [`Population`]).
pub fn stream_stats(
    pop: &Population,
    spec: &AgingSpec,
    margin_bytes: u64,
) -> Result<StreamStats, Error> {
    generate(pop, spec, margin_bytes, &mut |_| {})
}

/// Makes the stream ([`age`]'s `margin_bytes`), giving each operation to `sink` in order.
pub fn generate(
    pop: &Population,
    spec: &AgingSpec,
    margin_bytes: u64,
    sink: &mut dyn FnMut(NsOp),
) -> Result<StreamStats, Error> {
    spec.validate()?;
    pop.check_tree()?;
    let mut ager = Ager::new(pop, spec, margin_bytes)?;
    ager.run(sink)?;
    Ok(ager.stats())
}

pub(super) fn bucket_of(bytes: u64) -> usize {
    (64 - bytes.leading_zeros()) as usize
}

pub(super) fn blocks_of(bytes: u64) -> u64 {
    bytes.div_ceil(BLOCK)
}

/// Upper bound (exclusive) of size bucket `b`.
pub(super) fn below(b: usize) -> u64 {
    if b >= 64 {
        u64::MAX
    } else {
        1u64 << b
    }
}
