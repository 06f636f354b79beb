//! `layoutlab sweep`: an experiment's matrix as self-contained cells, run here in parallel or
//! as one Slurm job array (`sbatch --array`, no daemon of ours).
//!
//! The expansion, the cell files and their state are `layoutlab_experiments::sweep`'s; this
//! is the glue that runs cells: each cell is `layoutlab sweep run-cell DIR INDEX`, a small
//! wrapper around `layoutlab reproduce DIR/cells/ID/cell.toml --json ...` that records when
//! and where it started and how it ended (and, if the run was SIGKILLed, runs `layoutlab
//! clean` so that nothing of it is left on the node). The local backend runs these as
//! processes; the Slurm job script maps `SLURM_ARRAY_TASK_ID` to INDEX.

use super::write_json;
use anyhow::{bail, Context, Result};
use clap::{Args as ClapArgs, Subcommand, ValueEnum};
use layoutlab_experiments::sweep::{self, State};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

/// Arguments of `sweep`.
#[derive(ClapArgs)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct Args {
    #[command(subcommand)]
    command: Option<Sub>,
    #[command(flatten)]
    start: StartArgs,
}

/// Run a sweep.
#[derive(ClapArgs)]
struct StartArgs {
    /// Experiment name (see `layoutlab experiments`), path to an experiment TOML file, or
    /// `all`: `reproduce all` as one sweep, one cell per shipped experiment (axes: `scale`,
    /// one value, where an experiment has one; `experiment=A,B` to pick some).
    #[arg(required = true)]
    experiment: Option<String>,
    /// An axis and its values, KEY=V1,V2,... (repeatable). Keys: device, policy and scale
    /// where the experiment has them, and any key of its operation's table (e.g.
    /// os_read_ahead_kb=128,256). An fsck experiment's cells are one policy each unless
    /// `--set policy=...` says which.
    #[arg(long = "set", value_name = "KEY=V1,V2")]
    sets: Vec<String>,
    /// The sweep directory: its manifest, one directory per cell (spec, log, result). On a
    /// cluster, a directory every node sees at the same path.
    #[arg(long, value_name = "DIR", required = true)]
    out: Option<PathBuf>,
    /// Where cells run: `local` (processes on this machine) or `slurm` (one `sbatch --array`).
    #[arg(long, value_enum, default_value = "local")]
    backend: Backend,
    /// Cells run at once (local). Default: as many as this machine has CPUs.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=256))]
    jobs: Option<u32>,
    /// Slurm partition (slurm).
    #[arg(long, value_name = "P")]
    partition: Option<String>,
    /// Extra `#SBATCH` line of the job script, e.g. --sbatch-arg=--mem=4G (slurm; repeatable).
    #[arg(long, value_name = "ARG", allow_hyphen_values = true)]
    sbatch_arg: Vec<String>,
    /// Run cells already done again.
    #[arg(long)]
    force: bool,
    /// Run only the cells that failed (`sweep status` lists them).
    #[arg(long, conflicts_with = "force")]
    only_failed: bool,
    /// Write the job script and do not submit it (slurm).
    #[arg(long)]
    no_submit: bool,
    /// Every cell captures closed loop at time scale K (`reproduce --closed-loop K`, for the
    /// experiments whose operation takes it; docs/emulate.md). Local cells then run one at a
    /// time unless --jobs says otherwise: a closed-loop time is measured, and cells at once
    /// share the CPUs. K defaults to 1.
    #[arg(long, value_name = "K", num_args = 0..=1, default_missing_value = "1")]
    closed_loop: Option<f64>,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum Backend {
    Local,
    Slurm,
}

#[derive(Subcommand)]
enum Sub {
    /// Done/pending/running/failed per cell, with the end of each failure's log.
    Status {
        /// The sweep directory.
        dir: PathBuf,
        /// Write the status as JSON to PATH ("-" for stdout).
        #[arg(long, value_name = "PATH")]
        json: Option<PathBuf>,
    },
    /// Merge the cells' results: {"experiment", "cells": [{"id", "axes", "status", "result"}]}.
    Collect {
        /// The sweep directory.
        dir: PathBuf,
        /// Where the JSON goes ("-" for stdout, the default).
        #[arg(long, value_name = "PATH", default_value = "-")]
        json: PathBuf,
        /// Also write the sweep as `reproduce all`'s page (one section per cell: axes, status,
        /// time, tables, plots, the command that reruns it) to PATH, e.g. sw/index.html.
        #[arg(long, value_name = "PATH")]
        page: Option<PathBuf>,
    },
    /// Run one cell (what the local backend and the Slurm job script call).
    #[command(hide = true)]
    RunCell {
        /// The sweep directory.
        dir: PathBuf,
        /// The cell's index in the manifest (SLURM_ARRAY_TASK_ID).
        index: usize,
        /// Run it even if it is done.
        #[arg(long)]
        force: bool,
    },
}

/// Run `sweep`.
pub fn run(a: Args) -> Result<()> {
    match a.command {
        Some(Sub::Status { dir, json }) => status(&dir, json.as_deref()),
        Some(Sub::Collect { dir, json, page }) => {
            let v = sweep::collect(&dir)?;
            if let Some(p) = page {
                let html = sweep::page(&dir)?;
                std::fs::write(&p, html).with_context(|| format!("writing {}", p.display()))?;
                eprintln!("page: {}", p.display());
            }
            write_json(&json, &v)
        }
        Some(Sub::RunCell { dir, index, force }) => run_cell(&dir, index, force),
        None => start(a.start),
    }
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .map(|l| l.split_whitespace().nth(2) == Some("0"))
        })
        .unwrap_or(false)
}

fn start(a: StartArgs) -> Result<()> {
    let name = a.experiment.clone().unwrap_or_default();
    let Some(out) = &a.out else {
        bail!("--out DIR is required: where the cells, their logs and results go");
    };
    // Everything is checked before anything is written.
    let mut matrix = sweep::expand(&name, &a.sets)?;
    if let Some(k) = a.closed_loop {
        if !(k.is_finite() && k > 0.0) {
            bail!("--closed-loop {k}: the time scale must be a positive number");
        }
        let op = layoutlab_experiments::OPERATIONS
            .iter()
            .find(|o| o.name() == matrix.manifest.operation);
        if !op.is_some_and(|o| o.supports_closed_loop()) {
            let with: Vec<&str> = layoutlab_experiments::OPERATIONS
                .iter()
                .filter(|o| o.supports_closed_loop())
                .map(|o| o.name())
                .collect();
            bail!(
                "--closed-loop captures on the emulated device and applies to {} experiments; \
                 '{}' is a {} sweep",
                with.join(", "),
                matrix.manifest.experiment,
                matrix.manifest.operation
            );
        }
        matrix.manifest.closed_loop = Some(k);
    }
    let m = &matrix.manifest;
    if a.backend == Backend::Local {
        if a.partition.is_some() || !a.sbatch_arg.is_empty() || a.no_submit {
            bail!("--partition, --sbatch-arg and --no-submit go with --backend slurm");
        }
        if m.needs_root && !is_root() {
            bail!(
                "cells of {} ({} experiment) need root (loop devices, tracefs): run as root",
                m.experiment,
                m.operation
            );
        }
    } else if a.jobs.is_some() {
        bail!("--jobs goes with --backend local (Slurm decides how many cells run at once)");
    }
    if let Ok(old) = sweep::read_manifest(out) {
        if old.experiment != m.experiment {
            bail!(
                "{} holds a sweep of {}, not {}: choose another --out",
                out.display(),
                old.experiment,
                m.experiment
            );
        }
        if old.closed_loop != m.closed_loop {
            let says = |k: Option<f64>| {
                k.map_or("open loop".to_string(), |k| {
                    format!("closed loop at K = {k}")
                })
            };
            bail!(
                "{} holds a sweep captured {}, not {}: its done cells would mix the two; choose another --out",
                out.display(),
                says(old.closed_loop),
                says(m.closed_loop)
            );
        }
    }
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let dir = out.canonicalize()?;
    for (c, spec) in m.cells.iter().zip(&matrix.specs) {
        let d = sweep::cell_dir(&dir, &c.id);
        std::fs::create_dir_all(&d)?;
        std::fs::write(d.join("cell.toml"), spec)?;
    }
    std::fs::write(
        dir.join("sweep.json"),
        serde_json::to_string_pretty(m)? + "\n",
    )?;
    let todo: Vec<usize> = m
        .cells
        .iter()
        .filter(|c| {
            let st = sweep::state(&dir, &c.id);
            if a.only_failed {
                st == State::Failed
            } else {
                a.force || st != State::Done
            }
        })
        .map(|c| c.index)
        .collect();
    eprintln!(
        "{}: {} cells ({}), {} to run{}",
        m.experiment,
        m.cells.len(),
        m.axes
            .iter()
            .map(|(k, v)| format!("{k} × {}", v.len()))
            .collect::<Vec<_>>()
            .join(", "),
        todo.len(),
        if m.needs_root {
            "; each needs root on its node (loop devices, tracefs)"
        } else {
            ""
        }
    );
    let exe = std::env::current_exe()?.canonicalize()?;
    match a.backend {
        Backend::Local => {
            let jobs = a.jobs.map_or_else(
                || match m.closed_loop {
                    Some(_) => 1,
                    None => std::thread::available_parallelism().map_or(1, |n| n.get()),
                },
                |j| j as usize,
            );
            run_local(&exe, &dir, &todo, jobs, a.force)?;
            let (_, cells) = sweep::status(&dir)?;
            let failed = cells.iter().filter(|c| c.status != State::Done).count();
            if failed > 0 {
                bail!(
                    "{failed} of {} cells are not done: `layoutlab sweep status {}` shows their logs; `--only-failed` reruns them",
                    cells.len(),
                    dir.display()
                );
            }
            eprintln!(
                "all {} cells done: layoutlab sweep collect {}",
                cells.len(),
                dir.display()
            );
            Ok(())
        }
        Backend::Slurm => {
            if todo.is_empty() {
                eprintln!("nothing to submit: every cell is done (--force runs them again)");
                return Ok(());
            }
            let script = job_script(&exe, &dir, m, &todo, &a);
            let path = dir.join("sweep.sbatch");
            std::fs::write(&path, script)?;
            eprintln!("job script: {}", path.display());
            if a.no_submit {
                return Ok(());
            }
            let o = Command::new("sbatch")
                .arg("--parsable")
                .arg(&path)
                .output()
                .context("running sbatch (is Slurm's client installed? Debian: slurm-client)")?;
            if !o.status.success() {
                bail!(
                    "sbatch failed: {}",
                    String::from_utf8_lossy(&o.stderr).trim()
                );
            }
            let job = String::from_utf8_lossy(&o.stdout).trim().to_string();
            let mut jobs = std::fs::read_to_string(dir.join("slurm-jobs.txt")).unwrap_or_default();
            jobs.push_str(&format!("{job}\n"));
            std::fs::write(dir.join("slurm-jobs.txt"), jobs)?;
            println!("{job}");
            eprintln!(
                "submitted job array {job} ({} cells); follow it with `layoutlab sweep status {}`",
                todo.len(),
                dir.display()
            );
            Ok(())
        }
    }
}

/// `0-3,5,7-8` for Slurm's `--array`.
pub fn array_spec(indices: &[usize]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < indices.len() {
        let mut j = i;
        while j + 1 < indices.len() && indices[j + 1] == indices[j] + 1 {
            j += 1;
        }
        parts.push(if j > i {
            format!("{}-{}", indices[i], indices[j])
        } else {
            indices[i].to_string()
        });
        i = j + 1;
    }
    parts.join(",")
}

fn job_script(
    exe: &Path,
    dir: &Path,
    m: &sweep::Manifest,
    todo: &[usize],
    a: &StartArgs,
) -> String {
    let q = |p: &Path| shell_quote(&p.to_string_lossy());
    let mut s = String::from("#!/bin/bash\n");
    s.push_str(&format!(
        "# layoutlab sweep of {}: {} cells; SLURM_ARRAY_TASK_ID is the cell's index in sweep.json.\n",
        m.experiment,
        m.cells.len()
    ));
    if m.needs_root {
        s.push_str("# Each cell needs root on its node (loop devices, tracefs).\n");
    }
    s.push_str(&format!("#SBATCH --job-name=layoutlab-{}\n", m.experiment));
    s.push_str(&format!("#SBATCH --array={}\n", array_spec(todo)));
    s.push_str("#SBATCH --requeue\n");
    s.push_str("#SBATCH --ntasks=1\n#SBATCH --cpus-per-task=1\n");
    s.push_str(&format!(
        "#SBATCH --output={}/slurm-%A_%a.out\n",
        dir.to_string_lossy()
    ));
    if let Some(p) = &a.partition {
        s.push_str(&format!("#SBATCH --partition={p}\n"));
    }
    for x in &a.sbatch_arg {
        s.push_str(&format!("#SBATCH {x}\n"));
    }
    s.push_str("set -eu\n");
    s.push_str(&format!(
        "# The binary must be at this path on every node, or named by $LAYOUTLAB.\nexec \"${{LAYOUTLAB:-{}}}\" sweep run-cell {} \"$SLURM_ARRAY_TASK_ID\"{}\n",
        exe.to_string_lossy(),
        q(dir),
        if a.force { " --force" } else { "" }
    ));
    s
}

fn shell_quote(s: &str) -> String {
    if s.chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

fn run_local(exe: &Path, dir: &Path, todo: &[usize], jobs: usize, force: bool) -> Result<()> {
    layoutlab_rig::cleanup::install();
    let queue = Arc::new(Mutex::new(todo.to_vec()));
    let live: Arc<Mutex<Vec<u32>>> = Arc::new(Mutex::new(Vec::new()));
    // On Ctrl-C or SIGTERM every running cell is told to stop and waited for: each cleans up
    // after itself and is recorded failed.
    let guard = {
        let live = Arc::clone(&live);
        layoutlab_rig::cleanup::register("sweep: the running cells", move || {
            let pids = live.lock().map(|l| l.clone()).unwrap_or_default();
            super::stop_children(&pids);
        })
    };
    let total = todo.len();
    let done = Arc::new(Mutex::new(0usize));
    let workers: Vec<_> = (0..jobs.min(total.max(1)))
        .map(|_| {
            let queue = Arc::clone(&queue);
            let live = Arc::clone(&live);
            let done = Arc::clone(&done);
            let exe = exe.to_path_buf();
            let dir = dir.to_path_buf();
            std::thread::spawn(move || -> Result<()> {
                loop {
                    let Some(i) = ({
                        let mut q = queue.lock().unwrap();
                        (!q.is_empty()).then(|| q.remove(0))
                    }) else {
                        return Ok(());
                    };
                    if layoutlab_rig::cleanup::signal_caught() {
                        return Ok(());
                    }
                    let mut cmd = Command::new(&exe);
                    cmd.arg("sweep")
                        .arg("run-cell")
                        .arg(&dir)
                        .arg(i.to_string());
                    if force {
                        cmd.arg("--force");
                    }
                    cmd.stdout(std::process::Stdio::null())
                        .stderr(std::process::Stdio::null());
                    let mut child = super::spawn_child(&mut cmd, &live)?;
                    let st = child.wait()?;
                    live.lock().unwrap().retain(|p| *p != child.id());
                    let mut d = done.lock().unwrap();
                    *d += 1;
                    eprintln!(
                        "[{}/{total}] cell {i}: {}",
                        *d,
                        if st.success() { "done" } else { "FAILED" }
                    );
                }
            })
        })
        .collect();
    for w in workers {
        w.join()
            .map_err(|_| anyhow::anyhow!("a sweep worker panicked"))??;
    }
    layoutlab_rig::cleanup::forget(&guard);
    Ok(())
}

fn now_unix() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// One cell: `layoutlab reproduce cell.toml`, its result renamed into place on success, how
/// it ended in exit.json.
fn run_cell(dir: &Path, index: usize, force: bool) -> Result<()> {
    layoutlab_rig::cleanup::install();
    let m = sweep::read_manifest(dir)?;
    let Some(cell) = m.cells.get(index) else {
        bail!(
            "{}: no cell {index} (the sweep has cells 0-{})",
            dir.display(),
            m.cells.len().saturating_sub(1)
        );
    };
    let d = sweep::cell_dir(dir, &cell.id);
    if !force && sweep::state(dir, &cell.id) == State::Done {
        eprintln!(
            "cell {} ({}) is done; --force runs it again",
            cell.id,
            sweep::describe(&cell.axes)
        );
        return Ok(());
    }
    for f in ["result.json", "result.json.part", "exit.json"] {
        let _ = std::fs::remove_file(d.join(f));
    }
    let started = now_unix();
    std::fs::write(
        d.join("started.json"),
        serde_json::to_string_pretty(&serde_json::json!({
            "host": hostname(),
            "pid": std::process::id(),
            "unix_time": started,
            "slurm_job": std::env::var("SLURM_JOB_ID").ok(),
            "slurm_array_job": std::env::var("SLURM_ARRAY_JOB_ID").ok(),
        }))? + "\n",
    )?;
    let exe = std::env::current_exe()?;
    let part = d.join("result.json.part");
    let mut cmd = Command::new(&exe);
    cmd.arg("reproduce")
        .arg(d.join("cell.toml"))
        .arg("--json")
        .arg(&part)
        .arg("--out")
        .arg(d.join("report"))
        .arg("--jobs")
        .arg("1");
    if let Some(k) = m.closed_loop {
        cmd.arg("--closed-loop").arg(k.to_string());
    }
    cmd.stdout(std::fs::File::create(d.join("output.txt"))?)
        .stderr(std::fs::File::create(d.join("log.txt"))?);
    let mut child = cmd.spawn()?;
    let pid = child.id();
    let exit_path = d.join("exit.json");
    // Stopped (Ctrl-C, SIGTERM, scancel): the run tears down its own devices; the cell is
    // recorded failed, to be run again.
    let guard = {
        let exit_path = exit_path.clone();
        let exe = exe.clone();
        layoutlab_rig::cleanup::register("sweep: the running cell", move || {
            super::stop_children(&[pid]);
            // The run cleans up after itself on SIGTERM, but a resource it could not remove
            // in time (a scancelled cell once left its tracefs instance, busy while the run's
            // main thread was still in it) stays; the run is gone now, so what carries its pid
            // is removed as after a SIGKILL.
            let _ = Command::new(&exe).arg("clean").output();
            let _ = std::fs::write(
                &exit_path,
                serde_json::json!({"code": null, "seconds": now_unix() - started,
                    "why": "stopped by a signal (Ctrl-C, SIGTERM or scancel)"})
                .to_string(),
            );
        })
    };
    let st = child.wait()?;
    layoutlab_rig::cleanup::forget(&guard);
    let seconds = now_unix() - started;
    use std::os::unix::process::ExitStatusExt;
    let mut why = None;
    if let Some(sig) = st.signal() {
        why = Some(format!("killed by signal {sig}"));
        // SIGKILL leaves the rig no chance to clean up: remove what the dead run left.
        let o = Command::new(&exe).arg("clean").output();
        if let Ok(o) = o {
            let mut log = std::fs::read_to_string(d.join("log.txt")).unwrap_or_default();
            log.push_str("\n[layoutlab clean after the killed run]\n");
            log.push_str(&String::from_utf8_lossy(&o.stdout));
            log.push_str(&String::from_utf8_lossy(&o.stderr));
            let _ = std::fs::write(d.join("log.txt"), log);
        }
    }
    let ok = st.success()
        && std::fs::read_to_string(&part)
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .is_some();
    if ok {
        std::fs::rename(&part, d.join("result.json"))?;
    } else if why.is_none() {
        why = Some(format!("exit status {}", st.code().unwrap_or(-1)));
    }
    std::fs::write(
        &exit_path,
        serde_json::to_string_pretty(&serde_json::json!({
            "code": st.code(),
            "seconds": seconds,
            "why": why,
        }))? + "\n",
    )?;
    if !ok {
        bail!(
            "cell {} ({}) failed ({}); its log: {}",
            cell.id,
            sweep::describe(&cell.axes),
            why.unwrap_or_default(),
            d.join("log.txt").display()
        );
    }
    Ok(())
}

fn status(dir: &Path, json: Option<&Path>) -> Result<()> {
    let (m, cells) = sweep::status(dir)?;
    if let Some(p) = json {
        write_json(
            p,
            &serde_json::json!({"experiment": m.experiment, "cells": cells}),
        )?;
        if p == Path::new("-") {
            return Ok(());
        }
    }
    let mut count = std::collections::BTreeMap::new();
    for c in &cells {
        *count.entry(c.status.as_str()).or_insert(0) += 1;
        println!(
            "{:<14} {:<3} {:<8} {:>8}  {}",
            c.id,
            c.index,
            c.status.as_str(),
            c.seconds.map_or(String::new(), |s| format!("{s:.1} s")),
            sweep::describe(&c.axes)
        );
        if let Some(t) = &c.log_tail {
            for l in t.lines() {
                println!("    | {l}");
            }
        }
    }
    println!(
        "{}: {}",
        m.experiment,
        count
            .iter()
            .map(|(k, v)| format!("{v} {k}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::array_spec;

    #[test]
    fn array_specs_compress_runs() {
        assert_eq!(array_spec(&[0, 1, 2, 3]), "0-3");
        assert_eq!(array_spec(&[1, 3, 4, 5, 9]), "1,3-5,9");
        assert_eq!(array_spec(&[7]), "7");
    }
}
