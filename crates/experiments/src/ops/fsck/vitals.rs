//! The file system as e2fsck saw it, beside the post's description of its own: e2fsck `-v`'s
//! vital statistics and the MB e2fsck itself counted per pass (`-tt`).
//!
//! These are outputs of the allocator and of the data set, not inputs: a difference here
//! explains part of a difference in time (issue 27's "layout and tree" factor), and nothing
//! is tuned toward the published column.

use super::run::PolicyRun;
use crate::experiment::Published;
use anyhow::Result;
use layoutlab_report::{Cell, Column, Table};

/// One row: its label, the key of its published value, and how to read it from a run.
type Row = (&'static str, &'static str, fn(&PolicyRun) -> Option<f64>);

fn vital(r: &PolicyRun, f: fn(&layoutlab_rig::FsckVitals) -> u64) -> Option<f64> {
    r.e2fsck_vitals.as_ref().map(|v| f(v) as f64)
}

fn depth(r: &PolicyRun, d: usize) -> Option<f64> {
    let v = r.e2fsck_vitals.as_ref()?;
    // A histogram shorter than `d` means no inode that deep: a zero, as e2fsck would print.
    (!v.extent_depth_histogram.is_empty())
        .then(|| v.extent_depth_histogram.get(d).copied().unwrap_or(0) as f64)
}

fn own_mb(r: &PolicyRun, label: &str) -> Option<f64> {
    r.measured_here
        .e2fsck_tt
        .iter()
        .find(|s| s.label == label)
        .and_then(|s| s.read_mib)
        .map(|m| m as f64)
}

const ROWS: &[Row] = &[
    ("inodes used", "inodes_used", |r| {
        vital(r, |v| v.inodes_used)
    }),
    ("blocks used", "blocks_used", |r| {
        vital(r, |v| v.blocks_used)
    }),
    ("non-contiguous files", "non_contiguous_files", |r| {
        vital(r, |v| v.non_contiguous_files)
    }),
    ("non-contiguous directories", "non_contiguous_dirs", |r| {
        vital(r, |v| v.non_contiguous_dirs)
    }),
    ("inodes with extents, depth 0", "extent_depth_0", |r| {
        depth(r, 0)
    }),
    ("inodes with extents, depth 1", "extent_depth_1", |r| {
        depth(r, 1)
    }),
    ("inodes with an indirect block", "ind_inodes", |r| {
        vital(r, |v| v.ind_dind_tind[0])
    }),
    ("MB e2fsck read, pass 1", "mb_pass1", |r| {
        own_mb(r, "Pass 1")
    }),
    ("MB e2fsck read, pass 2", "mb_pass2", |r| {
        own_mb(r, "Pass 2")
    }),
    ("MB e2fsck read, total", "mb_total", |r| own_mb(r, "")),
];

/// The published value of `key` for `policy`: the vital statistics describe the post's one
/// file system (keys of `published.vitals`); the MB per pass are per policy.
fn published_value(published: &Published, policy: &str, key: &str) -> Option<f64> {
    let pass = |p: &str| {
        published
            .pass_mb_read
            .get(policy)
            .and_then(|m| m.get(p))
            .copied()
    };
    match key {
        "mb_pass1" => pass("1"),
        "mb_pass2" => pass("2"),
        "mb_total" => pass("total"),
        _ => published.vitals.get(key).copied(),
    }
}

/// The table, one column per policy and, at scale 1 where the post published them, its value
/// beside each; `None` when no run has e2fsck's `-v` summary. Rows that no run and nothing
/// published fill are left out (an ext4 tree has no indirect blocks; an ext3 one no extents).
pub fn table(runs: &[PolicyRun], published: &Published, comparable: bool) -> Result<Option<Table>> {
    if runs.iter().all(|r| r.e2fsck_vitals.is_none()) {
        return Ok(None);
    }
    let show_published = |policy: &str| {
        comparable
            && ROWS
                .iter()
                .any(|(_, key, _)| published_value(published, policy, key).is_some())
    };
    let mut columns = vec![Column::text("e2fsck saw")];
    for r in runs {
        columns.push(Column::number(&r.policy, None));
        if show_published(&r.policy) {
            columns.push(Column::published(&r.policy, None));
        }
    }
    let mut table = Table::new(
        "the file system as e2fsck saw it (-v and -tt): allocator outputs, not inputs",
        columns,
    );
    for (label, key, read) in ROWS {
        let ours: Vec<Option<f64>> = runs.iter().map(read).collect();
        let theirs: Vec<Option<f64>> = runs
            .iter()
            .map(|r| {
                show_published(&r.policy)
                    .then(|| published_value(published, &r.policy, key))
                    .flatten()
            })
            .collect();
        if ours.iter().all(|v| v.is_none_or(|v| v == 0.0)) && theirs.iter().all(Option::is_none) {
            continue;
        }
        let mut cells = vec![Cell::text(*label)];
        for (r, (o, t)) in runs.iter().zip(ours.iter().zip(&theirs)) {
            cells.push(o.map_or(Cell::Empty, |v| Cell::num(v, 0)));
            if show_published(&r.policy) {
                cells.push(t.map_or(Cell::Empty, |v| Cell::published(v, 0)));
            }
        }
        table.push_row(cells)?;
    }
    Ok(Some(table))
}
