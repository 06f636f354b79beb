//! `layoutlab device ...`: presets, DiskSim import, validation against measured drives, fio-like jobs.

use super::{parse_size, write_json, Human};
use anyhow::{bail, Context, Result};
use clap::{Args as ClapArgs, Subcommand};
use layoutlab_device::job::{run_job, JobSpec, Rw};
use layoutlab_device::replay::Discipline;
use layoutlab_device::ssd::Precondition;
use layoutlab_device::{preset, validate};
use layoutlab_report::{CdfPlot, CdfSeries, Cell, Column, Table};
use std::path::PathBuf;

/// Device commands.
#[derive(Subcommand)]
pub enum Command {
    /// List the device presets (files in presets/ and the ones built in).
    List {
        /// Write the list as JSON to PATH ("-" for stdout).
        #[arg(long, value_name = "PATH")]
        json: Option<PathBuf>,
    },
    /// Import a DiskSim parameter file (.parv, following its `source` includes) as a preset TOML.
    ///
    /// Example: layoutlab device import ../shared/data/disksim/barracuda.parv -o presets/barracuda.toml
    Import {
        /// The DiskSim .parv file.
        parv: PathBuf,
        /// Where to write the preset (default: stdout).
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
    /// Replay a DiskSim "validate" trace closed-loop on a drive imported from its .parv and
    /// compare our per-request response times with the measured ones (demerit figure).
    ///
    /// Example: layoutlab device validate --parv barracuda.parv --trace barracuda.trace --svg cdf.svg
    Validate(ValidateArgs),
    /// Run a fio-like synthetic job on a device model and report IOPS, bandwidth and latency.
    ///
    /// Example: layoutlab device fio --device sata-500g-2008 --rw randread --bs 4k --span 16g --runtime 30
    Fio(FioArgs),
    /// A block device whose requests complete when PRESET's model says, with IMAGE's data
    /// (a FUSE file under a loop device with direct I/O; docs/emulate.md). Runs CMD against it
    /// (`{dev}` is the device), or until SIGINT/SIGTERM.
    ///
    /// Example: layoutlab device emulate sata-400g-2007 fs.img -- e2fsck -fn {dev}
    Emulate(super::emulate::EmulateArgs),
}

/// Arguments of `device validate`.
#[derive(ClapArgs)]
pub struct ValidateArgs {
    /// DiskSim parameter file of the drive.
    #[arg(long)]
    parv: PathBuf,
    /// DiskSim validate trace of the same drive (measured service times).
    #[arg(long)]
    trace: PathBuf,
    /// Write the report as JSON to PATH ("-" for stdout).
    #[arg(long, value_name = "PATH")]
    json: Option<PathBuf>,
    /// Write both response-time CDFs as an SVG.
    #[arg(long, value_name = "PATH")]
    svg: Option<PathBuf>,
}

/// Arguments of `device fio`.
#[derive(ClapArgs)]
pub struct FioArgs {
    /// Device preset name or preset file.
    #[arg(long)]
    device: String,
    /// Access pattern: read, write, randread, randwrite.
    #[arg(long, default_value = "randread")]
    rw: String,
    /// Request size (e.g. 4k, 256k).
    #[arg(long, default_value = "4k", value_parser = parse_size)]
    bs: u64,
    /// Bytes of the device the job touches, from --offset (fio's size=).
    #[arg(long, value_parser = parse_size)]
    span: u64,
    /// Where the span starts.
    #[arg(long, default_value = "0", value_parser = parse_size)]
    offset: u64,
    /// Model seconds to run.
    #[arg(long, conflicts_with = "number")]
    runtime: Option<f64>,
    /// Number of requests to run.
    #[arg(long)]
    number: Option<u64>,
    /// Requests kept in flight.
    #[arg(long, default_value_t = 1)]
    iodepth: u32,
    /// Queue discipline when iodepth > 1: fcfs or sptf.
    #[arg(long, default_value = "fcfs")]
    scheduler: String,
    /// Seed of the random offsets.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// SSD starting state instead of the preset's: sequential (fresh: written once in order,
    /// spare area free) or random (SNIA PTS steady state). SSD presets only.
    #[arg(long, value_parser = parse_precondition)]
    precondition: Option<Precondition>,
    /// Write the report as JSON to PATH ("-" for stdout).
    #[arg(long, value_name = "PATH")]
    json: Option<PathBuf>,
}

pub use layoutlab_experiments::support::{load_device, load_device_with};

/// The SSD starting state of `--precondition`.
pub fn parse_precondition(s: &str) -> Result<Precondition, String> {
    match s {
        "sequential" | "fresh" => Ok(Precondition::Sequential),
        "random" | "steady" => Ok(Precondition::Random),
        _ => Err(format!(
            "unknown state '{s}'; valid: sequential (fresh: full, spare area free), random (steady state)"
        )),
    }
}

/// Parse a queue discipline name.
pub fn parse_discipline(s: &str) -> Result<Discipline> {
    match s {
        "fcfs" => Ok(Discipline::Fcfs),
        "sptf" => Ok(Discipline::Sptf),
        _ => bail!("unknown scheduler '{s}'; valid: fcfs, sptf"),
    }
}

/// Run a device command.
pub fn run(cmd: Command) -> Result<()> {
    match cmd {
        Command::Emulate(a) => super::emulate::run(a),
        Command::List { json } => {
            let names = preset::preset_names();
            if let Some(path) = json {
                return write_json(&path, &names);
            }
            for n in names {
                let desc = match preset::load_preset(&n) {
                    Ok(d) => format!("{:.1} GB", d.capacity_sectors() as f64 * 512.0 / 1e9),
                    Err(e) => format!("(does not load: {e})"),
                };
                super::emit(&format!("{n:<24} {desc}\n"), false);
            }
            Ok(())
        }
        Command::Import { parv, output } => {
            let spec = layoutlab_device::parv::import_parv(&parv)?;
            let text = layoutlab_device::hdd::spec_toml::spec_to_toml_string(&spec);
            match output {
                Some(out) => {
                    std::fs::write(&out, text)
                        .with_context(|| format!("writing {}", out.display()))?;
                    eprintln!("wrote {}", out.display());
                }
                None => super::emit(&text, false),
            }
            Ok(())
        }
        Command::Validate(a) => {
            let report = validate::run(&a.parv, &a.trace)?;
            let mut t = Table::new(
                &format!(
                    "validation of {} against {}",
                    report.disk,
                    a.trace.display()
                ),
                vec![Column::text("quantity"), Column::number("value", None)],
            );
            t.push_row(vec![
                Cell::text("requests"),
                Cell::num(report.requests as f64, 0),
            ])?;
            t.push_row(vec![
                Cell::text("mean measured (ms)"),
                Cell::num(report.mean_measured_ms, 3),
            ])?;
            t.push_row(vec![
                Cell::text("mean model (ms)"),
                Cell::num(report.mean_model_ms, 3),
            ])?;
            t.push_row(vec![
                Cell::text("demerit (ms)"),
                Cell::num(report.demerit_ms, 3),
            ])?;
            t.push_row(vec![
                Cell::text("demerit (% of mean)"),
                Cell::num(report.demerit_pct, 1),
            ])?;
            Human::new(a.json.as_deref()).say(&t.to_terminal(None)?);
            if let Some(svg) = a.svg {
                let plot = CdfPlot {
                    title: format!("{}: response-time CDF", report.disk),
                    x_label: "response time".into(),
                    x_unit: Some("ms".into()),
                    ..CdfPlot::default()
                };
                let text = plot.render(&[
                    CdfSeries {
                        name: "measured".into(),
                        values: report.measured_ms.clone(),
                    },
                    CdfSeries {
                        name: "layoutlab model".into(),
                        values: report.model_ms.clone(),
                    },
                ]);
                std::fs::write(&svg, text).with_context(|| format!("writing {}", svg.display()))?;
                eprintln!("wrote {}", svg.display());
            }
            if let Some(path) = a.json {
                #[derive(serde::Serialize)]
                struct Out<'a> {
                    disk: &'a str,
                    requests: usize,
                    demerit_ms: f64,
                    demerit_disksim_ms: f64,
                    demerit_pct: f64,
                    mean_measured_ms: f64,
                    mean_model_ms: f64,
                }
                write_json(
                    &path,
                    &Out {
                        disk: &report.disk,
                        requests: report.requests,
                        demerit_ms: report.demerit_ms,
                        demerit_disksim_ms: report.demerit_disksim_ms,
                        demerit_pct: report.demerit_pct,
                        mean_measured_ms: report.mean_measured_ms,
                        mean_model_ms: report.mean_model_ms,
                    },
                )?;
            }
            Ok(())
        }
        Command::Fio(a) => {
            let mut dev = load_device_with(
                &a.device,
                &preset::LoadOptions {
                    ssd_precondition: a.precondition,
                },
            )?;
            if a.runtime.is_none() && a.number.is_none() {
                bail!("give --runtime SECONDS or --number N");
            }
            let spec = JobSpec {
                rw: a.rw.parse::<Rw>()?,
                bs_bytes: a.bs,
                span_bytes: a.span,
                offset_bytes: a.offset,
                runtime_s: a.runtime,
                number: a.number,
                iodepth: a.iodepth,
                discipline: parse_discipline(&a.scheduler)?,
                seed: a.seed,
            };
            let r = run_job(dev.as_mut(), &spec)?;
            let mut t = Table::new(
                &format!(
                    "{} on {} (bs {} B, span {} B, iodepth {})",
                    a.rw, a.device, a.bs, a.span, a.iodepth
                ),
                vec![Column::text("metric"), Column::number("value", None)],
            );
            for (k, v, p) in [
                ("requests", r.requests as f64, 0),
                ("IOPS", r.iops, 1),
                ("MB/s", r.mb_per_s, 2),
                ("lat mean (ms)", r.mean_ms, 3),
                ("lat min (ms)", r.min_ms, 3),
                ("lat max (ms)", r.max_ms, 3),
                ("lat stdev (ms)", r.stdev_ms, 3),
                ("lat p50 (ms)", r.p50_ms, 3),
                ("lat p99 (ms)", r.p99_ms, 3),
            ] {
                t.push_row(vec![Cell::text(k), Cell::num(v, p)])?;
            }
            Human::new(a.json.as_deref()).say(&t.to_terminal(None)?);
            if let Some(path) = a.json {
                write_json(&path, &r)?;
            }
            Ok(())
        }
    }
}
