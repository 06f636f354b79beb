//! The report of the "fsck" operation: per-pass tables of every policy, what pass 1 read by
//! class of block, the summary beside the published numbers (at scale 1 only), the offset
//! plots, the sensitivity table, Markdown and HTML, and the JSON contract of `--json`.

use super::run::PolicyRun;
use super::{breakdown, sensitivity, FsckSpec};
use crate::output::{write_json, Human};
use crate::{Experiment, RunArgs};
use anyhow::{Context, Result};
use layoutlab_report::table::passes::{pass_table, PassRow};
use layoutlab_report::{offset_plot, Cell, Column, HtmlBundle, OffsetSeries, Table};
use serde::Serialize;
use std::path::Path;

/// The JSON of an fsck experiment (the contract of `--json`).
#[derive(Serialize)]
struct FsckJson<'a> {
    experiment: &'a str,
    /// The population on the file system (bench5, ubuntu-32g, ...).
    population: &'a str,
    scale: f64,
    device: &'a str,
    cpu_scale: f64,
    runs: &'a [PolicyRun],
    /// Preset variants and their predictions (with --sensitivity).
    #[serde(skip_serializing_if = "Option::is_none")]
    sensitivity: Option<Vec<sensitivity::Row>>,
    /// With a fast device: the runs of policies with a metadata region priced with the region
    /// on it.
    #[serde(skip_serializing_if = "Option::is_none")]
    metadata_on_fast_device: Option<Vec<super::split::SplitRun>>,
    /// Per policy: what pass 1 read, by class of block and window of modelled time.
    pass1_by_class: std::collections::BTreeMap<String, &'a breakdown::Breakdown>,
    reduction: Option<f64>,
    published: PublishedJson,
    #[serde(skip_serializing_if = "Option::is_none")]
    timing: Option<Timing>,
}

/// How long the command took on this machine (not a prediction; see `bench experiment`).
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Timing {
    /// Policies run at once.
    pub jobs: usize,
    /// The experiment's stages, all policies (plan … replay), wall seconds.
    pub experiment_seconds: f64,
    /// Writing tables, plots and reports, wall seconds.
    pub report_seconds: f64,
}

#[derive(Serialize)]
struct PublishedJson {
    source: String,
    total_seconds: std::collections::BTreeMap<String, f64>,
    /// The post's CPU time (user and system) per policy, where it printed them.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    user_seconds: std::collections::BTreeMap<String, f64>,
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    sys_seconds: std::collections::BTreeMap<String, f64>,
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pass_seconds: std::collections::BTreeMap<String, std::collections::BTreeMap<String, f64>>,
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pass_mb_read: std::collections::BTreeMap<String, std::collections::BTreeMap<String, f64>>,
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    vitals: std::collections::BTreeMap<String, f64>,
    reduction: Option<f64>,
}

fn reduction(base: f64, new: f64) -> Option<f64> {
    (base > 0.0).then(|| 1.0 - new / base)
}

/// Print and write the report of `runs` (tables on `h`, files under `out_dir`, JSON to
/// `a.json`): everything [`super::run::run_fsck`] shows, from runs already made. `timing` (jobs, when the
/// run started, seconds the experiment took) goes into the JSON; `None` leaves it out.
#[allow(clippy::too_many_arguments)]
pub fn render(
    exp: &Experiment,
    a: &RunArgs,
    device: &str,
    out_dir: &Path,
    (scale, cpu_scale): (f64, f64),
    workdir: &Path,
    runs: &[PolicyRun],
    h: &Human,
    timing: Option<(usize, std::time::Instant, f64)>,
) -> Result<()> {
    let spec: FsckSpec = exp.params()?;
    let published = &exp.published;
    // Published numbers stand beside the post's own file system only: not beside another
    // scale, nor beside a file system of another size (`fs_gb`).
    let comparable = scale == 1.0 && spec.fs_gb.is_none();
    let mut tables = Vec::new();
    let mut no_request_notes: Vec<String> = Vec::new();
    for r in runs {
        let rows: Vec<PassRow> = r
            .passes
            .iter()
            .map(|p| PassRow {
                pass: if p.pass == 0 {
                    "setup".to_string()
                } else {
                    p.pass.to_string()
                },
                seconds: p.seconds,
                mb_read: p.mb_read,
                requests: Some(p.requests),
            })
            .collect();
        let total = PassRow {
            pass: "total".into(),
            seconds: r.total_seconds,
            mb_read: r.mb_read,
            requests: Some(r.requests),
        };
        // Published numbers are for the full-size file system: beside a run at another
        // scale they would invite comparing unlike with like.
        let mut pubs: Vec<(String, f64)> = published
            .pass_seconds
            .get(&r.policy)
            .filter(|_| comparable)
            .map(|m| m.iter().map(|(k, v)| (k.clone(), *v)).collect())
            .unwrap_or_default();
        if let Some(v) = published
            .total_seconds
            .get(&r.policy)
            .filter(|_| comparable)
        {
            if !pubs.iter().any(|(k, _)| k == "total") {
                pubs.push(("total".to_string(), *v));
            }
        }
        // A pass that issued no request has no row: its CPU time is in the next pass's
        // think time. Its published time is said below the table instead.
        let has_row = |label: &str| label == "total" || rows.iter().any(|row| row.pass == label);
        let without_rows: Vec<String> = pubs
            .iter()
            .filter(|(label, _)| !has_row(label))
            .map(|(label, v)| format!("pass {label} {v:.2} s"))
            .collect();
        pubs.retain(|(label, _)| has_row(label));
        if !without_rows.is_empty() {
            no_request_notes.push(format!(
                "{}: {} issued no request here (their CPU time is in the next pass's); published: {}",
                r.policy,
                if without_rows.len() == 1 { "a pass" } else { "passes" },
                without_rows.join(", ")
            ));
        }
        tables.push(pass_table(
            &format!("e2fsck -fn per pass, {} (predicted on {device})", r.policy),
            &rows,
            &total,
            (!pubs.is_empty()).then_some(pubs.as_slice()),
        )?);
    }
    let mut columns = vec![
        Column::text("policy"),
        Column::number("predicted", Some("s")),
    ];
    // The published column only where something was published for these policies.
    let show_published = comparable
        && runs
            .iter()
            .any(|r| published.total_seconds.contains_key(&r.policy));
    if show_published {
        columns.push(Column::published("time", Some("s")));
    }
    let mut summary = Table::new(
        &format!("{} at scale {scale} on {device}", exp.name),
        columns
            .into_iter()
            .chain([
                Column::number("disk busy", Some("s")),
                Column::number("CPU", Some("s")),
                Column::number("file data", Some("GB")),
                Column::number(
                    if runs.iter().any(|r| r.extent_mapped) {
                        "mapping blocks"
                    } else {
                        "indirect blocks"
                    },
                    None,
                ),
                Column::number("read by e2fsck", None),
                Column::number("e2fsck here", Some("s")),
                Column::number("e2fsck peak memory", Some("MB")),
            ])
            .collect(),
    );
    for r in runs {
        let mut cells = vec![Cell::text(&r.policy), Cell::num(r.total_seconds, 1)];
        if show_published {
            cells.push(published_cell(
                published.total_seconds.get(&r.policy).copied(),
            ));
        }
        summary.push_row(
            cells
                .into_iter()
                .chain([
                    Cell::num(r.io_seconds, 1),
                    Cell::num(r.cpu_seconds, 1),
                    Cell::num(r.file_data_bytes as f64 / 1e9, 1),
                    Cell::num(r.indirect_blocks as f64, 0),
                    Cell::num(r.indirect_blocks_read as f64, 0),
                    Cell::num(r.measured_here.real_seconds, 2),
                    // e2fsck's own -tt figure, today's or a period release's alike (MiB)
                    crate::predict::e2fsck_peak_memory_kib(&r.measured_here.e2fsck_tt)
                        .map_or(Cell::Empty, |kib| Cell::num(kib as f64 / 1024.0, 1)),
                ])
                .collect(),
        )?;
    }
    let ours = (runs.len() >= 2)
        .then(|| reduction(runs[0].total_seconds, runs[runs.len() - 1].total_seconds))
        .flatten();
    let theirs = match (runs.first(), runs.last()) {
        (Some(f), Some(l)) if runs.len() >= 2 => published
            .total_seconds
            .get(&f.policy)
            .zip(published.total_seconds.get(&l.policy))
            .and_then(|(b, n)| reduction(*b, *n)),
        _ => None,
    };
    // What pass 1 read, by class of block and window of modelled time (same windows for
    // every policy, so they line up).
    let pass1_s = runs
        .iter()
        .flat_map(|r| r.passes.iter().filter(|p| p.pass == 1))
        .map(|p| p.seconds)
        .fold(0.0, f64::max);
    let window_s = breakdown::round_window_s(pass1_s, 10.0);
    let breakdowns: Vec<breakdown::Breakdown> = runs
        .iter()
        .map(|r| {
            breakdown::breakdown(&r.classes, &r.trace, &r.replayed, window_s, |t| {
                t == "pass1"
            })
        })
        .collect();
    for (r, b) in runs.iter().zip(&breakdowns) {
        tables.push(breakdown::window_table(
            &format!(
                "pass 1 of {} by what it read, per {window_s} s of modelled time",
                r.policy
            ),
            b,
        )?);
    }
    // Metadata on a faster device: the runs of a policy with a metadata region priced again
    // with the region on the SSD.
    let splits = match &spec.fast_device {
        Some(fast) => {
            let splits = super::split::price_runs(&spec, runs, fast, device, scale, cpu_scale)?;
            let block_bytes = runs
                .first()
                .map_or(4096, |r| u64::from(r.classes.block_size_bytes()));
            tables.extend(super::split::tables(&splits, runs, block_bytes)?);
            Some(splits)
        }
        None => None,
    };
    tables.extend(super::vitals::table(runs, published, comparable)?);
    for t in &tables {
        h.say(&format!("{}\n", t.to_terminal(None)?));
    }
    h.say(&format!("{}\n", summary.to_terminal(None)?));
    for note in &no_request_notes {
        h.say(&format!("note: {note}\n"));
    }
    if let Some(o) = ours {
        h.say(&format!(
            "reduction of e2fsck time, {} → {}: {:.0}%",
            runs[0].policy,
            runs[runs.len() - 1].policy,
            o * 100.0
        ));
        match theirs.filter(|_| comparable) {
            Some(p) => h.say(&format!(" (published: {:.0}%)\n", p * 100.0)),
            None => h.say("\n"),
        }
    }
    if let Some(gb) = spec.fs_gb {
        h.say(&format!(
            "note: the file system is {gb} GB at scale 1 (fs_gb), not the post's {}: the published numbers are not shown beside this run.\n",
            full_size(&spec.workload)
        ));
    } else if !comparable {
        h.say(&format!(
            "note: the published numbers are for the full {} file system (scale 1) and are not shown beside this run; use --scale 1 to compare like with like.\n",
            full_size(&spec.workload)
        ));
    }
    if !published.source.is_empty() {
        h.say(&format!("published (scale 1): {}\n", published.source));
    }
    for r in runs {
        if let Some(c) = &r.closed_loop {
            h.say(&format!("{}\n", c.line(&r.policy, device, r.total_seconds)));
        }
    }

    // Report files: Markdown, an HTML bundle and the seekwatcher-style plot of the modelled runs.
    std::fs::create_dir_all(out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
    let series: Vec<OffsetSeries> = runs
        .iter()
        .map(|r| OffsetSeries {
            name: r.policy.clone(),
            points: crate::support::io_points(&r.trace, |i| r.replayed.requests[i].start_ns / 1e9),
        })
        .collect();
    let svg = offset_plot(
        &format!("{}: e2fsck -fn on {device} (modelled time)", exp.name),
        &series,
    );
    let mut html = HtmlBundle::new(&exp.title);
    for t in tables.iter().chain(std::iter::once(&summary)) {
        html.table(t.clone());
    }
    html.figure(
        &format!(
            "Where on the disk e2fsck -fn read, against modelled time on {device}, one colour per layout ({}).",
            runs.iter().map(|r| r.policy.as_str()).collect::<Vec<_>>().join(", ")
        ),
        "fsck-offset.svg",
        svg,
    );
    for (r, b) in runs.iter().zip(&breakdowns) {
        let svg = breakdown::class_plot(
            &format!(
                "{}: e2fsck -fn, {} on {device}, by what each request read",
                exp.name, r.policy
            ),
            &r.trace,
            &r.replayed,
            b,
        );
        html.figure(
            &format!(
                "e2fsck -fn on the {} layout: each request's disk offset against modelled time, coloured by the kind of block it read (inode table, mapping block, directory, bitmap and so on).",
                r.policy
            ),
            &format!("fsck-classes-{}.svg", r.policy),
            svg,
        );
    }
    html.save(out_dir)?;
    eprintln!(
        "report: {}/{{report.md,index.html,fsck-offset.svg,fsck-classes-POLICY.svg}}",
        out_dir.display()
    );
    if a.keep {
        for r in runs {
            let p = workdir.join(format!("{}-{}.trace.csv", exp.name, r.policy));
            layoutlab_trace::format::write_path(&r.trace, &p, layoutlab_trace::Format::Csv)?;
            // Per request: what it read and its modelled times (for analysis beside the trace).
            let b = breakdown::breakdown(&r.classes, &r.trace, &r.replayed, window_s, |_| true);
            let mut csv = String::from("index,class,start_s,complete_s\n");
            for (i, (c, q)) in b.request_class.iter().zip(&r.replayed.requests).enumerate() {
                csv.push_str(&format!(
                    "{i},{},{:.9},{:.9}\n",
                    c.as_str(),
                    q.start_ns / 1e9,
                    q.complete_ns / 1e9
                ));
            }
            let cp = workdir.join(format!("{}-{}.classes.csv", exp.name, r.policy));
            std::fs::write(&cp, csv).with_context(|| format!("writing {}", cp.display()))?;
            if !r.served.is_empty() {
                // Closed loop: what the emulator served, to compare captures of one image
                // request by request (where their arrivals part, and by how much).
                let sp = workdir.join(format!("{}-{}.served.csv", exp.name, r.policy));
                std::fs::write(&sp, served_csv(&r.served))
                    .with_context(|| format!("writing {}", sp.display()))?;
            }
            eprintln!(
                "kept {} and {}",
                r.image
                    .as_ref()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default(),
                p.display()
            );
        }
    }
    let sensitivity = if a.sensitivity {
        eprintln!("sensitivity: replaying the captured traces on variants of {device}");
        let traces: Vec<(String, &layoutlab_trace::Trace, f64)> = runs
            .iter()
            .map(|r| (r.policy.clone(), &r.trace, r.cpu_outside_trace_seconds_here))
            .collect();
        let alts = alternatives(exp, device);
        let rows = crate::stages::timed(crate::stages::PRICE, || {
            sensitivity::run(
                device,
                &exp.sensitivity,
                &alts,
                &exp.period_cpus,
                &traces,
                cpu_scale,
            )
        })?;
        let policies: Vec<String> = runs.iter().map(|r| r.policy.clone()).collect();
        let t = sensitivity::table(
            &format!("sensitivity of the prediction at scale {scale}: one preset value changed at a time, same traces"),
            &policies,
            &rows,
        )?;
        h.say(&format!("{}\n", t.to_terminal(None)?));
        let mut md = t.to_markdown()?;
        md.push_str("\nWhy each value is uncertain:\n\n");
        for s in &exp.sensitivity {
            md.push_str(&format!("- {}\n", s.why));
        }
        for r in rows
            .iter()
            .filter(|r| r.change.starts_with("another drive"))
        {
            md.push_str(&format!("- {}\n", r.why));
        }
        std::fs::write(out_dir.join("sensitivity.md"), md)?;
        Some(rows)
    } else {
        None
    };
    if let Some(path) = &a.json {
        write_json(
            path,
            &FsckJson {
                sensitivity,
                metadata_on_fast_device: splits,
                experiment: &exp.name,
                population: &spec.workload,
                scale,
                device,
                cpu_scale,
                runs,
                pass1_by_class: runs
                    .iter()
                    .zip(&breakdowns)
                    .map(|(r, b)| (r.policy.clone(), b))
                    .collect(),
                reduction: ours,
                published: PublishedJson {
                    source: published.source.clone(),
                    total_seconds: published.total_seconds.clone(),
                    user_seconds: published.user_seconds.clone(),
                    sys_seconds: published.sys_seconds.clone(),
                    pass_seconds: published.pass_seconds.clone(),
                    pass_mb_read: published.pass_mb_read.clone(),
                    vitals: published.vitals.clone(),
                    reduction: theirs,
                },
                timing: timing.map(|(jobs, started, experiment_seconds)| Timing {
                    jobs,
                    experiment_seconds,
                    report_seconds: started.elapsed().as_secs_f64() - experiment_seconds,
                }),
            },
        )?;
    }
    Ok(())
}

/// The size of the full-scale file system as its author would name it: "400 GB" for a disk
/// sold in decimal units, "32 GiB" for a file system made in binary ones.
fn full_size(workload: &str) -> String {
    let Ok(pop) = layoutlab_workload::population_by_name(workload) else {
        return "full-size".to_string();
    };
    let gib = 1u64 << 30;
    if pop.fs_bytes % gib == 0 {
        format!("{} GiB", pop.fs_bytes / gib)
    } else {
        format!("{:.0} GB", pop.fs_bytes as f64 / 1e9)
    }
}

/// The experiment's alternative presets (drives and other classes), when the run is on the
/// experiment's own device (they shadow that preset, not one given with `--device`).
pub(super) fn alternatives<'a>(exp: &'a Experiment, device: &str) -> sensitivity::Alternatives<'a> {
    if device == exp.device {
        sensitivity::Alternatives {
            drives: &exp.alternatives,
            classes: &exp.other_classes,
        }
    } else {
        sensitivity::Alternatives::default()
    }
}

/// A published number, or an empty cell. (They are for scale 1; the summary says so.)
fn published_cell(v: Option<f64>) -> Cell {
    v.map(|v| Cell::published(v, 1)).unwrap_or(Cell::Empty)
}

/// A closed-loop capture's served requests as CSV, one line each in arrival order: the
/// request, its receipt (wall ns since the emulator started), the followed program's CPU then
/// (ns, times the CPU factor; empty where the wall placed it) and its model arrival and
/// completion (model ns).
fn served_csv(served: &[layoutlab_rig::EmulatedRequest]) -> String {
    let mut csv = String::from(
        "index,op,sector,sectors,received_ns,cpu_ns,arrival_ns,complete_ns,reply_late_ns\n",
    );
    for (i, s) in served.iter().enumerate() {
        csv.push_str(&format!(
            "{i},{:?},{},{},{},{},{:.0},{:.0},{:.0}\n",
            s.request.op,
            s.request.sector,
            s.request.sectors,
            s.received_ns,
            s.cpu_ns.map(|c| c.to_string()).unwrap_or_default(),
            s.arrival_ns,
            s.complete_ns,
            s.reply_late_ns
        ));
    }
    csv
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// The report of a fixed pair of runs, byte for byte as the `layoutlab` binary printed and
    /// wrote it before the experiments moved into this crate (golden files made by that
    /// binary from the same runs). A deliberate change of the report re-blesses them:
    /// `LAYOUTLAB_BLESS=1 cargo test -p layoutlab-experiments golden`.
    fn check_golden(case: &str, device: &str, scale: f64) {
        let golden = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/golden/metacluster-fsck")
            .join(case);
        let tmp = std::env::temp_dir().join(format!("ll-golden-{}-{case}", std::process::id()));
        std::fs::create_dir_all(&tmp).unwrap();
        let exp = crate::experiment::load("metacluster-fsck").unwrap();
        let args = RunArgs {
            json: Some(tmp.join("result.json")),
            out: tmp.clone(),
            ..RunArgs::default()
        };
        let h = Human::capture();
        let runs = super::super::run::fixture_runs();
        render(
            &exp,
            &args,
            device,
            &args.out_dir(&exp),
            (scale, 1.0),
            &tmp,
            &runs,
            &h,
            None,
        )
        .unwrap();
        std::fs::write(tmp.join("human.txt"), h.captured()).unwrap();
        let out_dir = args.out_dir(&exp);
        let made = |name: &str| -> PathBuf {
            if name == "human.txt" || name == "result.json" {
                tmp.join(name)
            } else {
                out_dir.join(name)
            }
        };
        let names = [
            "human.txt",
            "result.json",
            "report.md",
            "index.html",
            "fsck-offset.svg",
        ];
        if std::env::var_os("LAYOUTLAB_BLESS").is_some() {
            for n in names {
                std::fs::copy(made(n), golden.join(n)).unwrap();
            }
        }
        for n in names {
            let ours = std::fs::read(made(n)).unwrap();
            let want = std::fs::read(golden.join(n)).unwrap();
            assert!(
                ours == want,
                "{case}/{n} differs from the golden file {}:\n{}",
                golden.join(n).display(),
                String::from_utf8_lossy(&ours)
            );
        }
        std::fs::remove_dir_all(&tmp).unwrap();
    }

    #[test]
    fn golden_report_at_the_default_scale() {
        check_golden("default", "sata-400g-2007", 0.05);
    }

    #[test]
    fn golden_report_at_scale_1_on_another_device() {
        check_golden("scale1", "sata-500g-2008", 1.0);
    }
}
