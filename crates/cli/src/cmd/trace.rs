//! `layoutlab trace ...`: convert between trace formats, replay on a device model, plot.

use super::device::{load_device_with, parse_discipline};
use super::{write_json, Human};
use anyhow::{bail, Context, Result};
use clap::{Args as ClapArgs, Subcommand};
use layoutlab_device::replay::{replay, ReplayOptions};
use layoutlab_report::{offset_plot, Cell, Column, OffsetSeries, Table};
use layoutlab_trace::{format as tformat, stats, Format, Trace};
use std::path::{Path, PathBuf};

/// Trace commands.
#[derive(Subcommand)]
pub enum Command {
    /// Convert a trace between formats (detected from content/extension unless given).
    ///
    /// Readers: tracefs, blktrace (per-CPU binary), blkparse, disksim (ascii), disksim-validate,
    /// fio (iolog v2/v3), csv. Writers: fio (iolog v3), disksim, blkparse, csv.
    /// Example: layoutlab trace convert sda.blktrace.0 out.iolog --to fio
    Convert {
        /// Input trace.
        input: PathBuf,
        /// Output file.
        output: PathBuf,
        /// Input format (default: detected).
        #[arg(long)]
        from: Option<String>,
        /// Output format (default: from the output's extension).
        #[arg(long)]
        to: Option<String>,
    },
    /// Summarise a trace: requests and bytes per tag.
    Stats {
        /// The trace.
        input: PathBuf,
        /// Input format (default: detected).
        #[arg(long)]
        from: Option<String>,
        /// Write the summary as JSON to PATH ("-" for stdout).
        #[arg(long, value_name = "PATH")]
        json: Option<PathBuf>,
    },
    /// Replay a trace on a device model, keeping the application's think time.
    ///
    /// Example: layoutlab trace replay fsck.csv --device sata-400g-2007 --json -
    Replay(ReplayArgs),
    /// Plot one or more traces seekwatcher-style: offset over time, MB/s, IOPS, seeks/s (SVG).
    ///
    /// Example: layoutlab trace plot a.csv b.csv -o compare.svg
    Plot {
        /// Traces to overlay.
        #[arg(required = true)]
        inputs: Vec<PathBuf>,
        /// Output SVG.
        #[arg(short, long)]
        output: PathBuf,
        /// Title.
        #[arg(long, default_value = "I/O over time")]
        title: String,
    },
}

/// Arguments of `trace replay`.
#[derive(ClapArgs)]
pub struct ReplayArgs {
    /// The trace.
    input: PathBuf,
    /// Input format (default: detected).
    #[arg(long)]
    from: Option<String>,
    /// Device preset name or preset file.
    #[arg(long)]
    device: String,
    /// Multiply the trace's CPU time between requests (2.0 = a CPU half as fast), or name a
    /// CPU preset in cpus/ whose factor F = here / period is used.
    #[arg(long, default_value_t = 1.0, value_parser = cpu_scale_arg)]
    cpu_scale: f64,
    /// Queue discipline: fcfs or sptf.
    #[arg(long, default_value = "fcfs")]
    scheduler: String,
    /// Queue depth (default: the device's).
    #[arg(long)]
    depth: Option<usize>,
    /// SSD starting state instead of the preset's: sequential (fresh) or random (steady
    /// state). SSD presets, and composites with SSD members, only.
    #[arg(long, value_parser = super::device::parse_precondition)]
    precondition: Option<layoutlab_device::ssd::Precondition>,
    /// A what-if of the preset: replace the value at a dotted path of its file, e.g.
    /// `--vary cache.write_segments=16` (a drive that stacks write commands in its buffer) or
    /// `--vary seek.single_cylinder_ms=0.6`. Repeatable. The path must be a `{ value, source }`
    /// entry of the preset (a typo is an error, not a replay of the unchanged drive); VALUE is
    /// read as TOML (a number, true/false, or a quoted string).
    #[arg(long, value_name = "KEY=VALUE", value_parser = parse_vary)]
    vary: Vec<(String, toml::Value)>,
    /// A what-if of the host: replay every read longer than SECTORS as consecutive reads of at
    /// most SECTORS, issued one behind the other (writes and reads flagged `meta` as captured).
    /// 8 is a kernel that read a
    /// file one 4 KiB page at a time, as 2.6.2x did for a program that advised
    /// `POSIX_FADV_RANDOM`; 256 a queue of 128 KiB requests.
    #[arg(long, value_name = "SECTORS", value_parser = clap::value_parser!(u32).range(1..))]
    split_reads: Option<u32>,
    /// Also write the trace as the model served it, in layoutlab's CSV trace format: each
    /// request's issue and completion are the modelled ones (the think times kept), so its
    /// service time, the gap behind the previous completion, can be read request by request
    /// (or the file plotted, replayed again or converted like any trace).
    #[arg(long, value_name = "PATH")]
    modelled: Option<PathBuf>,
    /// Write the result as JSON to PATH ("-" for stdout).
    #[arg(long, value_name = "PATH")]
    json: Option<PathBuf>,
}

/// `KEY=VALUE` of `--vary`: the dotted path and the value read as TOML.
fn parse_vary(arg: &str) -> Result<(String, toml::Value), String> {
    let (key, value) = arg
        .split_once('=')
        .ok_or_else(|| format!("'{arg}': expected KEY=VALUE, e.g. cache.write_segments=16"))?;
    let key = key.trim();
    if key.is_empty() {
        return Err(format!("'{arg}': empty KEY"));
    }
    let doc: toml::Table = format!("v = {}", value.trim()).parse().map_err(|_| {
        format!("'{arg}': VALUE is not a TOML value (a number, true/false, or a quoted string)")
    })?;
    Ok((key.to_string(), doc["v"].clone()))
}

/// Read a trace, in `from` format if given.
pub fn read_trace(path: &Path, from: Option<&str>) -> Result<Trace> {
    let t = match from {
        Some(f) => tformat::read_as(path, Format::from_name(f)?)?,
        None => tformat::read_path(path)?,
    };
    Ok(t)
}

pub use layoutlab_experiments::support::io_points;

/// Run a trace command.
pub fn run(cmd: Command) -> Result<()> {
    match cmd {
        Command::Convert {
            input,
            output,
            from,
            to,
        } => {
            let trace = read_trace(&input, from.as_deref())?;
            let fmt = match to {
                Some(t) => Format::from_name(&t)?,
                None => Format::from_extension(&output).with_context(|| {
                    format!(
                        "cannot tell the output format from '{}'; give --to",
                        output.display()
                    )
                })?,
            };
            tformat::write_path(&trace, &output, fmt)?;
            eprintln!(
                "wrote {} requests to {} ({})",
                trace.requests.len(),
                output.display(),
                fmt.name()
            );
            Ok(())
        }
        Command::Stats { input, from, json } => {
            let trace = read_trace(&input, from.as_deref())?;
            let per = stats::per_tag(&trace);
            if let Some(path) = json {
                #[derive(serde::Serialize)]
                struct Row<'a> {
                    tag: &'a str,
                    requests: u64,
                    read_bytes: u64,
                    write_bytes: u64,
                }
                let rows: Vec<Row> = per
                    .iter()
                    .map(|s| Row {
                        tag: &s.tag,
                        requests: s.requests,
                        read_bytes: s.read_bytes,
                        write_bytes: s.write_bytes,
                    })
                    .collect();
                return write_json(&path, &rows);
            }
            let mut t = Table::new(
                &format!("{} ({} requests)", input.display(), trace.requests.len()),
                vec![
                    Column::text("tag"),
                    Column::number("requests", None),
                    Column::number("read", Some("MB")),
                    Column::number("written", Some("MB")),
                ],
            );
            for s in &per {
                t.push_row(vec![
                    Cell::text(if s.tag.is_empty() { "-" } else { &s.tag }),
                    Cell::num(s.requests as f64, 0),
                    Cell::num(s.read_bytes as f64 / 1e6, 1),
                    Cell::num(s.write_bytes as f64 / 1e6, 1),
                ])?;
            }
            super::emit(&t.to_terminal(None)?, false);
            Ok(())
        }
        Command::Replay(a) => {
            let mut trace = read_trace(&a.input, a.from.as_deref())?;
            if let Some(n) = a.split_reads {
                trace = trace.split_reads(n);
            }
            let mut dev = if a.vary.is_empty() {
                load_device_with(
                    &a.device,
                    &layoutlab_device::preset::LoadOptions {
                        ssd_precondition: a.precondition,
                    },
                )?
            } else {
                if a.precondition.is_some() {
                    bail!("--vary and --precondition together are not supported: vary the preset's `precondition` instead");
                }
                let (text, path) = layoutlab_device::preset::preset_source(&a.device)?;
                let varied = layoutlab_device::preset::vary_preset(
                    &text,
                    &path,
                    &a.vary,
                    "varied on the command line (trace replay --vary)",
                )
                .with_context(|| format!("--vary on {}", a.device))?;
                layoutlab_device::preset::load_preset_str(&varied, &path)?
            };
            let opts = ReplayOptions {
                cpu_scale: a.cpu_scale,
                discipline: parse_discipline(&a.scheduler)?,
                depth: a.depth,
            };
            if layoutlab_device::replay::ThinkSource::of(&trace)
                == layoutlab_device::replay::ThinkSource::Wall
            {
                // stderr: stdout and --json - stay as they always were for such traces.
                eprintln!(
                    "note: {} carries no CPU accounting (cpu_issue_ns/cpu_complete_ns): the time \
                     between requests is the wall-clock gap, which also holds the time the \
                     program waited for a CPU on the capturing machine (docs/replay.md)",
                    a.input.display()
                );
            }
            let r = replay(dev.as_mut(), &trace, &opts);
            if let Some(path) = &a.modelled {
                tformat::write_path(&modelled_trace(&trace, &r), path, Format::Csv)
                    .with_context(|| format!("--modelled {}", path.display()))?;
            }
            let mut t = Table::new(
                &format!("{} on {}", a.input.display(), a.device),
                vec![
                    Column::text("tag"),
                    Column::number("time", Some("s")),
                    Column::number("requests", None),
                    Column::number("read", Some("MB")),
                ],
            );
            for s in &r.tags {
                t.push_row(vec![
                    Cell::text(if s.tag.is_empty() { "-" } else { &s.tag }),
                    Cell::num(s.seconds, 3),
                    Cell::num(s.requests as f64, 0),
                    Cell::num(s.bytes_read as f64 / 1e6, 1),
                ])?;
            }
            t.push_total(vec![
                Cell::text("total"),
                Cell::num(r.wall_ns / 1e9, 3),
                Cell::num(trace.requests.len() as f64, 0),
                Cell::num(
                    r.tags.iter().map(|s| s.bytes_read).sum::<u64>() as f64 / 1e6,
                    1,
                ),
            ])?;
            let h = Human::new(a.json.as_deref());
            h.say(&t.to_terminal(None)?);
            h.say(&format!(
                "I/O busy {:.3} s, CPU not overlapped with I/O {:.3} s\n",
                r.io_busy_ns / 1e9,
                r.cpu_not_overlapped_ns / 1e9
            ));
            if let Some(path) = a.json {
                #[derive(serde::Serialize)]
                struct Out<'a> {
                    device: &'a str,
                    requests: usize,
                    wall_seconds: f64,
                    io_busy_seconds: f64,
                    cpu_not_overlapped_seconds: f64,
                    tags: &'a [layoutlab_device::replay::TagSummary],
                }
                write_json(
                    &path,
                    &Out {
                        device: &a.device,
                        requests: trace.requests.len(),
                        wall_seconds: r.wall_ns / 1e9,
                        io_busy_seconds: r.io_busy_ns / 1e9,
                        cpu_not_overlapped_seconds: r.cpu_not_overlapped_ns / 1e9,
                        tags: &r.tags,
                    },
                )?;
            }
            Ok(())
        }
        Command::Plot {
            inputs,
            output,
            title,
        } => {
            let mut series = Vec::new();
            for p in &inputs {
                let trace = read_trace(p, None)?;
                series.push(OffsetSeries {
                    name: p.display().to_string(),
                    points: {
                        let t0 = trace.requests.first().map(|r| r.issue_ns).unwrap_or(0);
                        io_points(&trace, |i| (trace.requests[i].issue_ns - t0) as f64 / 1e9)
                    },
                });
            }
            let svg = offset_plot(&title, &series);
            std::fs::write(&output, svg)
                .with_context(|| format!("writing {}", output.display()))?;
            eprintln!("wrote {}", output.display());
            Ok(())
        }
    }
}

/// `trace` with each request's issue and completion replaced by the model's (rounded to the
/// ns); everything else, the CPU stamps included, as captured.
fn modelled_trace(trace: &Trace, r: &layoutlab_device::replay::Replayed) -> Trace {
    let mut t = trace.clone();
    for (q, m) in t.requests.iter_mut().zip(&r.requests) {
        q.issue_ns = m.issue_ns.round() as u64;
        q.complete_ns = Some(m.complete_ns.round() as u64);
    }
    t
}

/// `--cpu-scale`: a positive number, or a CPU preset's factor (see `cpus/`).
fn cpu_scale_arg(arg: &str) -> Result<f64, String> {
    layoutlab_device::cpu::resolve_cpu_scale(arg).map_err(|e| e.to_string())
}
