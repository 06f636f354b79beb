//! What an aging stream did ([`StreamStats`]), and the distance of a histogram from its
//! target.

use serde::{Deserialize, Serialize};

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
    /// Kept for metadata (the margin [`super::age`] was given).
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

/// Total-variation distance between counts (normalised) and a target distribution.
pub(super) fn tv(counts: &[u64], target: &[f64]) -> f64 {
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
