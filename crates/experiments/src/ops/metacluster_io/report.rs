//! The report of "metacluster-io" (rendering only; the runs are [`super::run`]'s): the table
//! beside the published times (scale 1 only), the offset plots of benchmark 3, Markdown and
//! HTML, and the JSON contract of `--json`.

use super::benchmark_name;
pub use super::run::BenchRun;
use crate::output::{write_json, Human};
use crate::{Experiment, RunArgs};
use anyhow::{Context, Result};
use layoutlab_report::{offset_plot, Cell, Column, HtmlBundle, OffsetSeries, Table};
use serde::Serialize;
use std::path::Path;

/// JSON of `--json`.
#[derive(Serialize)]
struct MetaclusterIoJson<'a> {
    experiment: &'a str,
    scale: f64,
    device: &'a str,
    file_bytes: FileBytes,
    runs: &'a [BenchRun],
}

/// The sizes a run used, for the JSON.
#[derive(Clone, Copy, Serialize)]
pub(super) struct FileBytes {
    /// The sequential benchmarks' file, bytes.
    pub(super) sequential: u64,
    /// The random benchmarks' file, bytes.
    pub(super) random: u64,
    /// The file system, bytes.
    pub(super) file_system: u64,
}

/// Difference of `r` from the baseline policy's run of the same benchmark and option, %.
fn difference(runs: &[BenchRun], r: &BenchRun, baseline: &str) -> Option<f64> {
    let base = runs.iter().find(|b| {
        b.benchmark == r.benchmark && b.ind_readahead == r.ind_readahead && b.policy == baseline
    })?;
    (r.policy != baseline && base.seconds > 0.0)
        .then(|| (r.seconds - base.seconds) / base.seconds * 100.0)
}

/// The table of `runs`; published times only at scale 1.
pub fn table(exp: &Experiment, device: &str, scale: f64, runs: &[BenchRun]) -> Result<Table> {
    let comparable = scale == 1.0;
    let baseline = runs.first().map(|r| r.policy.clone()).unwrap_or_default();
    let mut columns = vec![
        Column::text("benchmark"),
        Column::text("policy"),
        Column::text("ind. read-ahead"),
        Column::number("predicted", Some("s")),
    ];
    if comparable {
        columns.push(Column::published("time", Some("s")));
    }
    // Closed loop: the time measured on the emulated disk beside the replay of the same
    // stream (the captured reads only; the write stream and the read-ahead option are not
    // captures).
    let closed_k = runs
        .iter()
        .find_map(|r| r.closed_loop.as_ref().map(|c| c.time_scale));
    if let Some(k) = closed_k {
        columns.push(Column::number(
            &format!("closed loop (K = {k}), measured"),
            Some("s"),
        ));
    }
    columns.extend([
        Column::number(&format!("vs {baseline}"), Some("%")),
        Column::number("requests", None),
        Column::number("read", Some("MB")),
        Column::number("written", Some("MB")),
        Column::number("indirect reads", None),
        Column::number("indirect→data", Some("MB")),
        Column::number("on indirect", Some("s")),
        Column::number("on other reads", Some("s")),
    ]);
    let mut t = Table::new(
        &format!("{} at scale {scale}, predicted on {device}", exp.name),
        columns,
    );
    for r in runs {
        let mut row = vec![
            Cell::text(format!("{}. {}", r.benchmark, benchmark_name(r.benchmark))),
            Cell::text(&r.policy),
            Cell::text(match (r.benchmark, r.ind_readahead) {
                (1, _) => "n/a (write)",
                (_, true) => "yes",
                (_, false) => "no",
            }),
            Cell::num(r.seconds, 1),
        ];
        if comparable {
            row.push(
                exp.published
                    .figures
                    .get(&format!("{}.{}", r.benchmark, r.policy))
                    .map_or(Cell::Empty, |v| Cell::published(*v, 1)),
            );
        }
        if closed_k.is_some() {
            row.push(
                r.closed_loop
                    .as_ref()
                    .map_or(Cell::Empty, |c| Cell::num(c.measured_seconds, 1)),
            );
        }
        row.extend([
            difference(runs, r, &baseline).map_or(Cell::Empty, |d| Cell::num(d, 1)),
            Cell::count(r.requests),
            Cell::num(r.mb_read, 1),
            Cell::num(r.mb_written, 1),
            Cell::count(r.indirect_reads),
            r.ind_to_data_mb.map_or(Cell::Empty, |d| Cell::num(d, 1)),
            Cell::num(r.indirect_seconds, 2),
            Cell::num(r.other_read_seconds, 2),
        ]);
        t.push_row(row)?;
    }
    Ok(t)
}

/// Print the table, write the report files and the JSON of `runs`.
#[allow(clippy::too_many_arguments)]
pub(super) fn render(
    exp: &Experiment,
    a: &RunArgs,
    device: &str,
    out_dir: &Path,
    scale: f64,
    files: FileBytes,
    runs: &[BenchRun],
    h: &Human,
    seconds_here: f64,
) -> Result<()> {
    let t = table(exp, device, scale, runs)?;
    h.say(&format!("{}\n", t.to_terminal(None)?));
    // Reads moved back in front of an indirect block, per policy, over benchmarks 2-4 (each
    // counted once: the read-ahead option's run moves the same ones).
    let moved: Vec<String> = exp_policies(runs)
        .into_iter()
        .map(|p| {
            let n: u64 = runs
                .iter()
                .filter(|r| r.policy == p && !r.ind_readahead)
                .filter_map(|r| r.period_order_moved)
                .sum();
            format!("{n} on {p}")
        })
        .collect();
    let notes = format!(
        "notes: benchmarks 2-4 are the real kernel's reads (today's ext4 driver in ext3 mode, \
         buffered pread, caches dropped) of images laid out by each policy, replayed on {device} \
         in the 2007 kernel's order: today's kernel reads an indirect block before the data in \
         front of it, which 2.6.18-2.6.24's ext3 submitted first (its BH_Boundary), so that \
         data read is put back in front ({moved}; the captured order is kept in \
         traces/capture-order/); \
         benchmark 1 is not captured (today's kernel does not allocate as 2007's ext3 did): it is \
         the write stream the layout implies (data in file order, indirect blocks where the \
         policy put them, ordered-mode journal commits every 5 s, metadata written home by \
         writeback; docs/experiments/metacluster-io.md); the drive takes writes into a one-segment buffer and sustains its media rate on a sequential stream (docs/hdd-model.md, \"Writes\"); journal commits and home writes, which do not append, wait for the media. 'indirect→data' is the mean distance from an indirect-block read to the next data read (the seek back); 'on indirect'/'on other reads' are the modelled device time of the reads of indirect blocks and of the rest. 'ind. read-ahead' inserts the patch's \
         asynchronous read of the next indirect blocks from the metacluster into the trace \
         (on the 2007 layout only a double-indirect block has one to read ahead: the indirect block after it). MB are 2^20 bytes. This run took {:.0} s here.\n",
        seconds_here,
        moved = moved.join(", ")
    );
    h.say(&notes);
    let b4 = runs.iter().find(|r| r.benchmark == 4 && !r.ind_readahead);
    h.say(&match b4.and_then(|r| r.large_read_advice) {
        Some(super::LargeReadAdvice::Today) | None => String::new(),
        Some(a) => format!(
            "benchmark 4: its reads as 2.6.24 issued them for a program that {} (--set large_read_advice={}; shipped: today's kernel, one request per read).\n",
            match (a, b4.and_then(|r| r.windows.as_ref())) {
                (super::LargeReadAdvice::None, Some(w)) => format!(
                    "gave no advice: {} KiB read-ahead windows two by two, and one window past each read's end",
                    w.window_bytes / 1024
                ),
                (super::LargeReadAdvice::None, None) => "gave no advice".to_string(),
                _ => "advised POSIX_FADV_RANDOM: page by page".to_string(),
            },
            a.name()
        ),
    });
    if scale == 1.0 {
        h.say(&format!("published: {}\n", exp.published.source));
    } else {
        h.say("note: the published times are for the full-size files (scale 1) and are not shown beside this run; use --scale 1 to compare like with like.\n");
    }
    std::fs::create_dir_all(out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
    // Every trace, so each can be replayed alone (`layoutlab trace replay`) or plotted.
    let traces = out_dir.join("traces");
    std::fs::create_dir_all(&traces)?;
    for r in runs {
        let name = format!(
            "b{}-{}{}.csv",
            r.benchmark,
            r.policy,
            if r.ind_readahead { "-readahead" } else { "" }
        );
        std::fs::write(traces.join(&name), layoutlab_trace::csv::write(&r.trace)?)?;
        if let Some(t) = &r.capture_order {
            // Kept apart, so `traces/b*.csv` stays the priced set.
            let dir = traces.join("capture-order");
            std::fs::create_dir_all(&dir)?;
            std::fs::write(dir.join(&name), layoutlab_trace::csv::write(t)?)?;
        }
    }
    let mut svgs = Vec::new();
    for with in [false, true] {
        let series: Vec<OffsetSeries> = runs
            .iter()
            .filter(|r| r.benchmark == 3 && r.ind_readahead == with)
            .map(|r| OffsetSeries {
                name: r.policy.clone(),
                points: crate::support::io_points(&r.trace, |i| r.start_s[i]),
            })
            .collect();
        if series.is_empty() {
            continue;
        }
        let name = if with {
            "b3-offset-readahead.svg"
        } else {
            "b3-offset.svg"
        };
        let svg =
            offset_plot(
                &format!(
                "benchmark 3 (random 512-byte reads){} on {device}: disk offset over modelled time",
                if with { ", with indirect read-ahead" } else { "" }
            ),
                &series,
            );
        let caption = format!(
            "Benchmark 3 (random 512-byte reads{}): where on the disk each layout's reads went, against modelled time on {device}, one colour per layout.",
            if with {
                ", with the patch's indirect-block read-ahead"
            } else {
                ""
            }
        );
        svgs.push((caption, name, svg));
    }
    let mut html = HtmlBundle::new(&exp.title);
    html.table(t.clone());
    html.text(notes.trim_end());
    for (caption, name, svg) in svgs {
        html.figure(&caption, name, svg);
    }
    html.save(out_dir)?;
    eprintln!(
        "report: {}/{{report.md,index.html,b3-offset.svg,b3-offset-readahead.svg,traces/}}",
        out_dir.display()
    );
    if let Some(path) = &a.json {
        write_json(
            path,
            &MetaclusterIoJson {
                experiment: &exp.name,
                scale,
                device,
                file_bytes: files,
                runs,
            },
        )?;
    }
    Ok(())
}

/// The policies of `runs`, in their first appearance's order.
fn exp_policies(runs: &[BenchRun]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in runs {
        if !out.contains(&r.policy) {
            out.push(r.policy.clone());
        }
    }
    out
}
