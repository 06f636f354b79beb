//! Layout metrics as people read them (`image inspect --metrics`, `plan --metrics`,
//! `image make --metrics`): what each number means is in [`HELP`] and docs/metrics.md.

use anyhow::Result;
use layoutlab_layout::metrics::LayoutMetrics;
use layoutlab_report::{Cell, Column, Table};

/// The `--metrics` flag's long help: what each metric is and what it predicts.
pub const HELP: &str = "\
Print the layout metrics (with --json: the LayoutMetrics struct as JSON instead).

  layout score      Of every regular file's blocks after its first, the fraction that sits on
                    disk right after the file's previous block; summed over all files, block-
                    weighted (Smith & Seltzer 1997, as Conway et al. FAST '17 use it). 1.0 =
                    every file contiguous. Predicts sequential-read seeks within files.
  fragments         Physically contiguous pieces per regular file: mean, median, p90, p99,
                    max and a power-of-two histogram over files with >= 1 block (empty files
                    are counted apart; a 1-block file is 1 fragment).
  free space        As e2freefrag reports it: free blocks, free extents (maximal free runs,
                    across group boundaries), min/max/avg extent in KB, the histogram of free
                    extents by power-of-two size, and the wholly free aligned 1 MiB chunks.
                    Predicts how well the next large files can be laid out.
  mapping blocks    Indirect and extent-tree blocks: how many groups hold them, the runs and
                    gaps one disk-order sweep meets, the mean distance between consecutive ones
                    in e2fsck pass 1's order (inode order), and the distance from each to the
                    data it maps. Predicts e2fsck pass 1's reads and a reader's seeks.
  directory blocks  Groups holding them, runs (seeks of a sweep), span and skipped blocks in
                    disk order, the order e2fsck pass 2 reads them in.

Definitions and sources: docs/metrics.md.";

/// The metrics as terminal tables: a summary, the free-extent histogram, the fragment
/// histogram.
pub fn tables(m: &LayoutMetrics, title: &str) -> Result<String> {
    let mut t = Table::new(
        &format!("layout metrics: {title}"),
        vec![Column::text("metric"), Column::number("value", None)],
    );
    let s = &m.layout_score;
    let f = &m.fragments;
    let fr = &m.free_space;
    let mp = &m.mapping;
    let d = &m.directories;
    let rows: Vec<(&str, f64, usize)> = vec![
        ("layout score (block-weighted)", s.score, 4),
        (
            "  blocks scored (after each file's first)",
            s.scored_blocks as f64,
            0,
        ),
        (
            "  of them right after the previous block",
            s.contiguous_blocks as f64,
            0,
        ),
        ("regular files", f.files as f64, 0),
        ("  empty (no block)", f.empty_files as f64, 0),
        ("  one block", f.single_block_files as f64, 0),
        ("  more than one fragment", f.fragmented_files as f64, 0),
        ("fragments per file: mean", f.mean, 3),
        ("fragments per file: median", f.median as f64, 0),
        ("fragments per file: p90", f.p90 as f64, 0),
        ("fragments per file: p99", f.p99 as f64, 0),
        ("fragments per file: max", f.max as f64, 0),
        ("free blocks", fr.free_blocks as f64, 0),
        ("free blocks [%]", fr.free_percent, 1),
        ("free extents", fr.free_extents as f64, 0),
        ("free extent min [KB]", fr.min_extent_kb as f64, 0),
        ("free extent max [KB]", fr.max_extent_kb as f64, 0),
        (
            "free extent avg [KB] (e2freefrag)",
            fr.avg_extent_kb as f64,
            0,
        ),
        ("free extent avg [blocks]", fr.avg_extent_blocks, 1),
        ("free 1 MiB chunks", fr.free_chunks as f64, 0),
        ("free 1 MiB chunks [%]", fr.free_chunks_percent, 1),
        ("mapping blocks", mp.disk.blocks as f64, 0),
        ("  groups holding them", mp.disk.groups as f64, 0),
        ("  runs in disk order", mp.disk.runs as f64, 0),
        (
            "  gap to the next, disk order: mean [blocks]",
            mp.disk.mean_gap,
            1,
        ),
        (
            "  gap to the next, disk order: median [blocks]",
            mp.disk.median_gap as f64,
            0,
        ),
        (
            "  distance, e2fsck pass-1 order: mean [blocks]",
            mp.fsck_order_mean_distance,
            1,
        ),
        (
            "  distance to the data mapped: mean [blocks]",
            mp.to_data_mean,
            1,
        ),
        (
            "  distance to the data mapped: median [blocks]",
            mp.to_data_median as f64,
            0,
        ),
        ("directory blocks", d.blocks as f64, 0),
        ("  groups holding them", d.groups as f64, 0),
        ("  runs in disk order (seeks of a sweep)", d.runs as f64, 0),
        ("  span [blocks]", d.span_blocks as f64, 0),
        (
            "  skipped inside the span [blocks]",
            d.skipped_blocks as f64,
            0,
        ),
        ("  gap to the next: median [blocks]", d.median_gap as f64, 0),
    ];
    for (k, v, p) in rows {
        t.push_row(vec![Cell::text(k), Cell::num(v, p)])?;
    }
    t.note(format!(
        "{} blocks of {} bytes in {} groups; definitions: layoutlab image inspect --help, docs/metrics.md",
        m.blocks_count, m.block_size_bytes, m.groups
    ));
    let mut out = t.to_terminal(None)?;

    let mut h = Table::new(
        "free extents by size (as e2freefrag)",
        vec![
            Column::text("extent size range"),
            Column::number("free extents", None),
            Column::number("free blocks", None),
            Column::number("of free", Some("%")),
        ],
    );
    for b in &fr.histogram {
        h.push_row(vec![
            Cell::text(b.range.split_whitespace().collect::<String>()),
            Cell::count(b.extents),
            Cell::count(b.blocks),
            Cell::num(b.percent, 2),
        ])?;
    }
    out += "\n";
    if fr.histogram.is_empty() {
        out += "no free extents\n";
    } else {
        out += &h.to_terminal(None)?;
    }

    let mut g = Table::new(
        "regular files by fragments",
        vec![Column::text("fragments"), Column::number("files", None)],
    );
    for b in &f.histogram {
        let range = if b.min_fragments == b.max_fragments {
            b.min_fragments.to_string()
        } else {
            format!("{}-{}", b.min_fragments, b.max_fragments)
        };
        g.push_row(vec![Cell::text(range), Cell::count(b.files)])?;
    }
    out += "\n";
    if f.histogram.is_empty() {
        out += "no regular file has a block\n";
    } else {
        out += &g.to_terminal(None)?;
    }
    Ok(out)
}
