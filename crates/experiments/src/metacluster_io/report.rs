//! Runs "metacluster-io" (every policy, every benchmark, with and without the indirect-block
//! read-ahead) and reports it: the table beside the published times (scale 1 only), the
//! offset plots of benchmark 3, Markdown and HTML, and the JSON contract of `--json`.

use super::ind_readahead;
use super::run::{self as kernel, file_inode, plan_image, scaled_bytes};
use super::write_stream;
use super::{benchmark_name, MetaclusterIoSpec};
use crate::output::{write_json, Human};
use crate::{Experiment, RunArgs};
use anyhow::{bail, Context, Result};
use layoutlab_device::replay::Replayed;
use layoutlab_layout::PlannedInode;
use layoutlab_report::{offset_plot, Cell, Column, HtmlBundle, OffsetSeries, Table};
use layoutlab_trace::{Op, Trace};
use serde::Serialize;
use std::collections::HashSet;
use std::path::Path;

const MIB: f64 = (1u64 << 20) as f64;

/// One benchmark on one layout, with or without the read-ahead option.
#[derive(Clone, Debug, Serialize)]
pub struct BenchRun {
    /// 1..=4, as numbered in the post.
    pub benchmark: u32,
    /// Layout policy.
    pub policy: String,
    /// Whether the patch's indirect-block read-ahead was applied to the trace.
    pub ind_readahead: bool,
    /// Predicted elapsed seconds on the device preset.
    pub seconds: f64,
    /// Requests.
    pub requests: u64,
    /// MB (2^20 bytes) read.
    pub mb_read: f64,
    /// MB (2^20 bytes) written.
    pub mb_written: f64,
    /// Where the requests come from: "kernel trace" (read by today's kernel, captured) or
    /// "write stream" (built from the layout: benchmark 1).
    pub source: String,
    /// Requests that read an indirect block of the file.
    pub indirect_reads: u64,
    /// Modelled seconds the device spent on them (positioning and transfer).
    pub indirect_seconds: f64,
    /// Mean distance on disk from an indirect-block read to the next read of file data, MB
    /// (2^20 bytes): the seek back that the metacluster adds (`None`: no such pair).
    pub ind_to_data_mb: Option<f64>,
    /// Modelled seconds the device spent on the other reads (file data; after an indirect
    /// block in the metacluster, the way back to the data is part of this).
    pub other_read_seconds: f64,
    /// Read-ahead requests the option inserted, and captured reads it made unnecessary.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub readahead_inserted_dropped: Option<(u64, u64)>,
    /// The requests (not serialized).
    #[serde(skip)]
    pub trace: Trace,
    /// Their modelled start times, s (not serialized).
    #[serde(skip)]
    pub start_s: Vec<f64>,
    /// The queue the traced loop device presented (docs/rig.md), when the trace came from
    /// a capture.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capture_queue: Option<layoutlab_trace::DeviceQueue>,
}

/// JSON of `--json`.
#[derive(Serialize)]
struct MetaclusterIoJson<'a> {
    experiment: &'a str,
    scale: f64,
    device: &'a str,
    file_bytes: FileBytes,
    runs: &'a [BenchRun],
}

#[derive(Clone, Copy, Serialize)]
struct FileBytes {
    sequential: u64,
    random: u64,
    file_system: u64,
}

#[allow(clippy::too_many_arguments)]
fn summarize(
    benchmark: u32,
    policy: &str,
    ind_readahead: bool,
    source: &str,
    trace: Trace,
    replayed: &Replayed,
    mapping: &HashSet<u64>,
    spb: u64,
) -> BenchRun {
    let (mut read, mut written) = (0u64, 0u64);
    let (mut indirect_reads, mut indirect_ns, mut other_ns) = (0u64, 0f64, 0f64);
    let (mut last_ind, mut back_sum, mut back_n) = (None::<u64>, 0f64, 0u64);
    for (r, m) in trace.requests.iter().zip(&replayed.requests) {
        match r.op {
            Op::Read => {
                read += r.bytes();
                let first = r.sector / spb;
                let last = (r.sector + u64::from(r.sectors)).div_ceil(spb);
                if (first..last).any(|b| mapping.contains(&b)) {
                    indirect_reads += 1;
                    indirect_ns += m.complete_ns - m.start_ns;
                    last_ind = Some(r.sector);
                } else {
                    other_ns += m.complete_ns - m.start_ns;
                    if let Some(s) = last_ind.take() {
                        back_sum += s.abs_diff(r.sector) as f64 * 512.0 / MIB;
                        back_n += 1;
                    }
                }
            }
            Op::Write => written += r.bytes(),
            _ => {}
        }
    }
    BenchRun {
        capture_queue: trace.queue.clone(),
        benchmark,
        policy: policy.to_string(),
        ind_readahead,
        seconds: replayed.wall_ns / 1e9,
        requests: trace.requests.len() as u64,
        mb_read: read as f64 / MIB,
        mb_written: written as f64 / MIB,
        source: source.to_string(),
        indirect_reads,
        indirect_seconds: indirect_ns / 1e9,
        other_read_seconds: other_ns / 1e9,
        ind_to_data_mb: (back_n > 0).then(|| back_sum / back_n as f64),
        readahead_inserted_dropped: None,
        start_s: replayed.requests.iter().map(|q| q.start_ns / 1e9).collect(),
        trace,
    }
}

/// Replays a captured read trace as is and with the read-ahead option: two runs.
#[allow(clippy::too_many_arguments)]
fn price_reads(
    benchmark: u32,
    policy: &str,
    trace: Trace,
    inode: &PlannedInode,
    block_size: u64,
    spec: &MetaclusterIoSpec,
    device: &str,
    cpu_scale: f64,
) -> Result<[BenchRun; 2]> {
    let _stage = crate::stages::enter(crate::stages::PRICE);
    let spb = block_size / 512;
    let mapping: HashSet<u64> = inode.mapping.iter().map(|m| m.physical).collect();
    let applied = ind_readahead::apply(&trace, inode, block_size, spec.ind_readahead_blocks);
    let plain = crate::steps::price::on_preset(device, &trace, cpu_scale)?;
    let ahead = crate::steps::price::on_preset(device, &applied.trace, cpu_scale)?;
    let without = summarize(
        benchmark,
        policy,
        false,
        "kernel trace",
        trace,
        &plain,
        &mapping,
        spb,
    );
    let mut with = summarize(
        benchmark,
        policy,
        true,
        "kernel trace + read-ahead",
        applied.trace,
        &ahead,
        &mapping,
        spb,
    );
    with.readahead_inserted_dropped = Some((applied.inserted, applied.dropped));
    Ok([without, with])
}

/// Run the experiment and report it.
pub fn run_metacluster_io(exp: &Experiment, a: &RunArgs) -> Result<()> {
    let spec: MetaclusterIoSpec = exp.params()?;
    spec.validate()?;
    let device = a.device_or(exp);
    let out_dir = a.out_dir(exp);
    let h = Human::new(a.json.as_deref());
    let scale = a.run_scale(exp)?;
    let cpu_scale = a.cpu_scale.unwrap_or(spec.cpu_scale);
    // Every name resolved before any work: a typo fails at once and changes nothing.
    for p in &spec.policies {
        layoutlab_layout::policy_by_name(p, &layoutlab_layout::PolicyParams::new())?;
    }
    let profile = layoutlab_layout::MkfsProfile::by_name(&spec.mkfs_profile)?;
    let dev = crate::support::load_device(&device)?;
    let queue = crate::support::capture_queue(
        &device,
        Some(spec.os_read_ahead_kb),
        Some(spec.os_max_sectors_kb),
    )?;
    let block = u64::from(profile.block_size_bytes);
    let fs_bytes = scaled_bytes(spec.fs_gb, scale, block)?;
    let seq_bytes = scaled_bytes(spec.seq_file_gb, scale, block)?;
    let random_bytes = scaled_bytes(spec.random_file_gb, scale, block)?;
    if dev.capacity_sectors() * 512 < fs_bytes {
        bail!(
            "device '{device}' holds {:.1} GB, less than the {:.1} GB file system",
            dev.capacity_sectors() as f64 * 512.0 / 1e9,
            fs_bytes as f64 / 1e9
        );
    }
    drop(dev);
    layoutlab_rig::require_root("mounting images on loop devices and tracing the kernel's reads")?;
    crate::support::warn_if_leftovers();
    let memory;
    let workdir = match &a.workdir {
        Some(d) => {
            std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
            if !layoutlab_rig::is_memory_fs(d)? {
                eprintln!(
                    "note: {} is not in memory: the kernel's read-ahead, and so the requests \
                     the benchmarks issue, depend on how fast this disk answers (docs/replay.md)",
                    d.display()
                );
            }
            d.clone()
        }
        None => {
            let cap = layoutlab_rig::mem_available_bytes()? / 2;
            memory = layoutlab_rig::Mount::tmpfs(cap)
                .context("mounting the in-memory work directory (or choose one: --workdir DIR)")?;
            memory.target().to_path_buf()
        }
    };
    eprintln!(
        "{} — scale {scale}: {:.2} GB file system, {:.2} GB and {:.2} GB files; priced on {device}",
        exp.title,
        fs_bytes as f64 / 1e9,
        seq_bytes as f64 / 1e9,
        random_bytes as f64 / 1e9
    );
    let started = std::time::Instant::now();
    let mut runs: Vec<BenchRun> = Vec::new();
    let wants = |b: u32| spec.benchmarks.contains(&b);
    for policy in &spec.policies {
        if wants(1) || wants(2) {
            let (profile, geometry, plan) =
                plan_image(&spec.mkfs_profile, policy, fs_bytes, seq_bytes, exp.seed)?;
            let inode = file_inode(&plan)?;
            eprintln!(
                "[{policy}] {:.2} GB file: {} indirect blocks",
                seq_bytes as f64 / 1e9,
                inode.mapping.len()
            );
            if wants(1) {
                // The write stream is modelled, not captured: building it is pricing.
                let _stage = crate::stages::enter(crate::stages::PRICE);
                let mut dev = crate::support::load_device(&device)?;
                let (trace, counts) = write_stream::build(
                    inode,
                    &geometry,
                    u64::from(profile.inode_size_bytes),
                    &spec,
                    dev.as_mut(),
                    "b1",
                );
                let replayed = crate::steps::price::on_preset(&device, &trace, 1.0)?;
                let mapping = inode.mapping.iter().map(|m| m.physical).collect();
                let r = summarize(
                    1,
                    policy,
                    false,
                    "write stream",
                    trace,
                    &replayed,
                    &mapping,
                    block / 512,
                );
                eprintln!(
                    "  b1 (write stream: {} data, {} journal blocks in {} commits, {} home writes): {:.1} s",
                    counts.data_blocks, counts.journal_blocks, counts.commits, counts.home_blocks, r.seconds
                );
                runs.push(r);
            }
            if wants(2) {
                let mut kfs = kernel::mount_image(&profile, &geometry, &plan, &workdir, &queue)?;
                let acc = kernel::accesses(2, seq_bytes, &spec, scale, exp.seed);
                let (trace, here) = kernel::traced_reads(&mut kfs, "b2", &acc, false)?;
                drop(kfs);
                let pair = price_reads(2, policy, trace, inode, block, &spec, &device, cpu_scale)?;
                eprintln!(
                    "  b2 (kernel, {:.1} s here): {:.1} s, {:.1} s with read-ahead",
                    here, pair[0].seconds, pair[1].seconds
                );
                runs.extend(pair);
            }
        }
        if wants(3) || wants(4) {
            let (profile, geometry, plan) =
                plan_image(&spec.mkfs_profile, policy, fs_bytes, random_bytes, exp.seed)?;
            let inode = file_inode(&plan)?;
            eprintln!(
                "[{policy}] {:.2} GB file: {} indirect blocks",
                random_bytes as f64 / 1e9,
                inode.mapping.len()
            );
            let mut kfs = kernel::mount_image(&profile, &geometry, &plan, &workdir, &queue)?;
            for b in [3u32, 4].into_iter().filter(|b| wants(*b)) {
                let acc = kernel::accesses(b, random_bytes, &spec, scale, exp.seed);
                let (trace, here) = kernel::traced_reads(&mut kfs, &format!("b{b}"), &acc, true)?;
                let pair = price_reads(b, policy, trace, inode, block, &spec, &device, cpu_scale)?;
                eprintln!(
                    "  b{b} ({} reads, {:.1} s here): {:.1} s, {:.1} s with read-ahead",
                    acc.len(),
                    here,
                    pair[0].seconds,
                    pair[1].seconds
                );
                runs.extend(pair);
            }
        }
    }
    let seconds_here = started.elapsed().as_secs_f64();
    runs.sort_by_key(|r| (r.benchmark, r.ind_readahead));
    let _reporting = crate::stages::enter(crate::stages::REPORT);
    render(
        exp,
        a,
        &device,
        &out_dir,
        scale,
        FileBytes {
            sequential: seq_bytes,
            random: random_bytes,
            file_system: fs_bytes,
        },
        &runs,
        &h,
        seconds_here,
    )
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

#[allow(clippy::too_many_arguments)]
fn render(
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
    let notes = format!(
        "notes: benchmarks 2-4 are the real kernel's reads (today's ext4 driver in ext3 mode, \
         buffered pread, caches dropped) of images laid out by each policy, replayed on {device}; \
         benchmark 1 is not captured (today's kernel does not allocate as 2007's ext3 did): it is \
         the write stream the layout implies (data in file order, indirect blocks where the \
         policy put them, ordered-mode journal commits every 5 s, metadata written home by \
         writeback; docs/experiments/metacluster-io.md); the drive takes writes into a one-segment buffer and sustains its media rate on a sequential stream (docs/hdd-model.md, \"Writes\"); journal commits and home writes, which do not append, wait for the media. 'indirect→data' is the mean distance from an indirect-block read to the next data read (the seek back); 'on indirect'/'on other reads' are the modelled device time of the reads of indirect blocks and of the rest. 'ind. read-ahead' inserts the patch's \
         asynchronous read of the next indirect blocks from the metacluster into the trace \
         (on the 2007 layout only a double-indirect block has one to read ahead: the indirect block after it). MB are 2^20 bytes. This run took {:.0} s here.\n",
        seconds_here
    );
    h.say(&notes);
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
        std::fs::write(traces.join(name), layoutlab_trace::csv::write(&r.trace)?)?;
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
