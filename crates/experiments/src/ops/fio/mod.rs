//! The "fio" operation: one fio-like job per block size on the experiment's device model (no
//! kernel, no root), its table beside the published numbers, the report and the JSON.

use crate::output::{write_json, Human};
use crate::support::{load_device, parse_size};
use crate::{Experiment, Operation, RunArgs};
use anyhow::{bail, Context, Result};
use layoutlab_device::job::{run_job, JobReport, JobSpec, Rw};
use layoutlab_device::replay::Discipline;
use layoutlab_report::{Cell, Column, HtmlBundle, Table};
use serde::{Deserialize, Serialize};

/// The "fio" operation (registered in [`crate::OPERATIONS`]).
pub struct Fio;

/// Parameters of the "fio" operation, an experiment's `[fio]` table: one job per block size.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FioSpec {
    /// read, write, randread, randwrite.
    pub rw: String,
    /// Bytes of the device touched (fio's size=), e.g. "16g".
    pub span: String,
    /// Model seconds per job.
    pub runtime_s: f64,
    /// Requests in flight.
    pub iodepth: u32,
    /// Block sizes, e.g. ["4k", "8k"].
    pub bs: Vec<String>,
    /// A past version of the device's preset (a name in [`HISTORY`], `DEVICE@COMMIT`) whose
    /// IOPS are printed beside today's, e.g. the preset as first registered, when values were
    /// changed later with the published numbers in view. Used only when the run's device is
    /// that preset's.
    #[serde(default)]
    pub as_registered: Option<String>,
}

/// Past versions of shipped presets, in today's schema with the values of their commit
/// (`presets/history/`): (`DEVICE@COMMIT`, TOML text).
pub const HISTORY: &[(&str, &str)] = &[(
    "sata-500g-2008@0b6ce26",
    include_str!("../../../../../presets/history/sata-500g-2008@0b6ce26.toml"),
)];

/// The text of history entry `name`, or an error listing the valid ones.
fn history(name: &str) -> Result<&'static str> {
    HISTORY
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, t)| *t)
        .with_context(|| {
            format!(
                "[fio] as_registered = \"{name}\" is not a preset in presets/history/; valid: {}",
                HISTORY
                    .iter()
                    .map(|(n, _)| *n)
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
}

impl Operation for Fio {
    fn name(&self) -> &'static str {
        "fio"
    }

    /// Fio only prices jobs on a device model: nothing is mounted or traced.
    fn needs_root(&self, _exp: &Experiment) -> bool {
        false
    }

    fn check(&self, exp: &Experiment) -> Result<()> {
        let f: FioSpec = exp.params()?;
        if f.bs.is_empty() {
            bail!("[fio] bs is empty");
        }
        if let Some(h) = &f.as_registered {
            history(h)?;
        }
        Ok(())
    }

    fn run(&self, exp: &Experiment, args: &RunArgs) -> Result<()> {
        run_fio(exp, args)
    }
}

/// One block size of a fio experiment.
#[derive(Serialize)]
struct FioRun {
    bs: String,
    bs_bytes: u64,
    #[serde(flatten)]
    report: JobReport,
    /// IOPS of the same job on the preset as first registered (`[fio] as_registered`).
    #[serde(skip_serializing_if = "Option::is_none")]
    as_registered_iops: Option<f64>,
}

fn run_fio(exp: &Experiment, a: &RunArgs) -> Result<()> {
    let device = &a.device_or(exp);
    let out_dir = &a.out_dir(exp);
    let spec: FioSpec = exp.params()?;
    let h = Human::new(a.json.as_deref());
    let span = parse_size(&spec.span).map_err(anyhow::Error::msg)?;
    let rw: Rw = spec.rw.parse()?;
    // The preset as first registered, when it is this run's device's.
    let registered = match &spec.as_registered {
        Some(h) if h.split('@').next() == Some(device.as_str()) => Some((h.clone(), history(h)?)),
        _ => None,
    };
    let mut runs = Vec::new();
    let pricing = crate::stages::enter(crate::stages::PRICE);
    for bs in &spec.bs {
        let bs_bytes = parse_size(bs).map_err(anyhow::Error::msg)?;
        let mut dev = load_device(device)?;
        let job = JobSpec {
            rw,
            bs_bytes,
            span_bytes: span,
            offset_bytes: 0,
            runtime_s: Some(spec.runtime_s),
            number: None,
            iodepth: spec.iodepth,
            discipline: Discipline::Fcfs,
            seed: exp.seed,
        };
        let report = run_job(dev.as_mut(), &job)?;
        let as_registered_iops = match &registered {
            Some((name, text)) => {
                let mut old = layoutlab_device::preset::load_preset_str(
                    text,
                    &format!("presets/history/{name}.toml"),
                )?;
                Some(run_job(old.as_mut(), &job)?.iops)
            }
            None => None,
        };
        runs.push(FioRun {
            bs: bs.clone(),
            bs_bytes,
            report,
            as_registered_iops,
        });
    }
    drop(pricing);
    let _reporting = crate::stages::enter(crate::stages::REPORT);
    let mut t = Table::new(
        &format!(
            "{} on {device}: {} qd{} span {}",
            exp.name, spec.rw, spec.iodepth, spec.span
        ),
        {
            let mut c = vec![Column::text("bs"), Column::number("IOPS", None)];
            if let Some((name, _)) = &registered {
                c.push(Column::number(
                    &format!(
                        "IOPS, first preset ({})",
                        name.split('@').nth(1).unwrap_or("")
                    ),
                    None,
                ));
            }
            c.extend([
                Column::published("IOPS", None),
                Column::number("vs published", Some("%")),
                Column::number("mean", Some("ms")),
                Column::published("mean", Some("ms")),
                Column::number("min", Some("ms")),
                Column::number("max", Some("ms")),
                Column::number("stdev", Some("ms")),
            ]);
            c
        },
    );
    for r in &runs {
        let p = exp.published.iops.get(&r.bs).copied();
        let mut row = vec![Cell::text(&r.bs), Cell::num(r.report.iops, 1)];
        if registered.is_some() {
            row.push(
                r.as_registered_iops
                    .map_or(Cell::Empty, |v| Cell::num(v, 1)),
            );
        }
        row.extend([
            p.map(|v| Cell::published(v, 0)).unwrap_or(Cell::Empty),
            p.map(|v| Cell::num(100.0 * (r.report.iops / v - 1.0), 1))
                .unwrap_or(Cell::Empty),
            Cell::num(r.report.mean_ms, 3),
            exp.published
                .mean_ms
                .get(&r.bs)
                .map(|v| Cell::published(*v, 3))
                .unwrap_or(Cell::Empty),
            Cell::num(r.report.min_ms, 3),
            Cell::num(r.report.max_ms, 3),
            Cell::num(r.report.stdev_ms, 3),
        ]);
        t.push_row(row)?;
    }
    h.say(&format!("{}\n", t.to_terminal(None)?));
    if !exp.published.source.is_empty() {
        h.say(&format!("published: {}\n", exp.published.source));
    }
    let history_note = match &registered {
        Some((name, _)) => format!(
            "\nThe first preset ({name}) is {device} as first registered, before three of its values \
             were changed with the published IOPS in view: docs/experiments/fio-randread.md, \
             \"The preset's history\".\n"
        ),
        None => String::new(),
    };
    h.say(&history_note);
    std::fs::create_dir_all(out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
    let mut html = HtmlBundle::new(&exp.title);
    html.table(t);
    if !history_note.is_empty() {
        html.text(history_note.trim());
    }
    html.save(out_dir)?;
    if let Some(path) = &a.json {
        write_json(
            path,
            &serde_json::json!({
                "experiment": exp.name,
                "device": device,
                "runs": runs,
                "published": exp.published,
            }),
        )?;
    }
    Ok(())
}
