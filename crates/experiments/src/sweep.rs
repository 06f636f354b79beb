//! Sweeps: an experiment's matrix expanded into self-contained cells (`layoutlab sweep`).
//!
//! A cell is the experiment's own TOML with some axes fixed (one policy, one scale, one
//! device, one value of a key of its operation's table), so that a node needs only the
//! `layoutlab` binary and the sweep directory to run it: `layoutlab reproduce CELL.toml`. This
//! module owns the expansion ([`expand`]), the cell ids, the directory layout and the state of
//! each cell as read back from the files its run left ([`status`], [`collect`]). Running
//! cells (processes, Slurm) is the command line's (`crates/cli/src/cmd/sweep.rs`).
//!
//! Directory layout of a sweep `DIR`:
//! - `DIR/sweep.json`: the manifest ([`Manifest`]): experiment, axes, cells in array order;
//! - `DIR/cells/ID/cell.toml`: the cell's experiment file;
//! - `DIR/cells/ID/result.json`: the experiment's own `--json` for the cell (written when the
//!   run succeeded, renamed into place, so its presence means done);
//! - `DIR/cells/ID/log.txt`, `output.txt`: the run's stderr and stdout;
//! - `DIR/cells/ID/started.json`, `exit.json`: when and where it started, how it ended.

use crate::{experiment, Experiment, SHIPPED};
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The axes a sweep sets, each with its values (`--set KEY=V1,V2`).
pub type Axes = BTreeMap<String, Vec<toml::Value>>;

/// One cell of a sweep.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Cell {
    /// Position in the array (`SLURM_ARRAY_TASK_ID`).
    pub index: usize,
    /// Stable id: a hash of the experiment's name and the cell's sorted axes.
    pub id: String,
    /// The value of each axis in this cell.
    pub axes: BTreeMap<String, toml::Value>,
}

/// `DIR/sweep.json`: what a sweep is made of.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Manifest {
    /// The experiment's name.
    pub experiment: String,
    /// Its operation.
    pub operation: String,
    /// Whether a cell needs root on the node that runs it (loop devices, tracefs, mounts).
    pub needs_root: bool,
    /// The axes and their values.
    pub axes: Axes,
    /// The cells, in array order.
    pub cells: Vec<Cell>,
    /// `--closed-loop K`: every cell captures on the emulated device at time scale K
    /// (`reproduce --closed-loop K`); absent: open loop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub closed_loop: Option<f64>,
}

/// A matrix expanded: the manifest and each cell's experiment file.
#[derive(Clone, Debug)]
pub struct Matrix {
    /// What goes into `sweep.json`.
    pub manifest: Manifest,
    /// Each cell's TOML, in the manifest's order.
    pub specs: Vec<String>,
}

/// The keys a sweep of `exp` can set: `device`, `policy` and `scale` where the operation has
/// them, and every key of the operation's own table.
pub fn valid_keys(exp: &Experiment) -> Vec<String> {
    let mut keys = vec!["device".to_string()];
    if exp.params.contains_key("policies") {
        keys.push("policy".into());
    }
    if exp.params.contains_key("default_scale") {
        keys.push("scale".into());
    }
    for k in exp.params.keys() {
        if k != "policies" && k != "default_scale" {
            keys.push(k.clone());
        }
    }
    // The operation's options may be absent from the file (their default applies): they are
    // what `experiments --json` tells a user to set, so they must be settable.
    if let Ok(op) = crate::operation(&exp.operation) {
        for o in op.options() {
            if !keys.iter().any(|k| k == o.key) {
                keys.push(o.key.to_string());
            }
        }
    }
    keys
}

/// The error for `--set KEY` when `KEY` is not in `keys` (`what`: "an axis", "a key"): the
/// valid keys, and the operation's options with their help.
fn unknown_key(exp: &Experiment, key: &str, what: &str, keys: &[String]) -> anyhow::Error {
    let op = crate::operation(&exp.operation);
    let options: Vec<String> = op
        .map(|o| o.options())
        .unwrap_or_default()
        .iter()
        .map(|o| format!("\n  {}: {}", o.key, o.help))
        .collect();
    anyhow::anyhow!(
        "--set {key}: not {what} of {} (a {} experiment); valid: {}{}",
        exp.name,
        exp.operation,
        keys.join(", "),
        if options.is_empty() {
            String::new()
        } else {
            format!("\n{}'s options:{}", exp.operation, options.concat())
        }
    )
}

/// Parse `KEY=V1,V2,...` into the key and its values (TOML literals where they parse as
/// one, e.g. numbers and booleans; otherwise strings).
pub fn parse_set(s: &str) -> Result<(String, Vec<toml::Value>)> {
    let Some((key, values)) = s.split_once('=') else {
        bail!("--set {s}: expected KEY=V1,V2,...");
    };
    let key = key.trim().to_string();
    let mut out = Vec::new();
    for v in values.split(',').map(str::trim) {
        if v.is_empty() {
            bail!("--set {s}: empty value");
        }
        let parsed = toml::from_str::<toml::Table>(&format!("v = {v}"))
            .ok()
            .and_then(|mut t| t.remove("v"))
            .unwrap_or_else(|| toml::Value::String(v.to_string()));
        out.push(parsed);
    }
    Ok((key, out))
}

/// The stable id of a cell: FNV-1a (64 bit) of the experiment name and its sorted axes,
/// written `KEY=VALUE` one per line; 12 hex digits. The same axes give the same id on every
/// machine and version, so a resubmission finds the cells already done.
pub fn cell_id(experiment: &str, axes: &BTreeMap<String, toml::Value>) -> String {
    let mut text = format!("{experiment}\n");
    for (k, v) in axes {
        text.push_str(&format!("{k}={v}\n"));
    }
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{:012x}", h >> 16)
}

/// The text of an experiment: a shipped one by name, or a file.
fn experiment_text(name_or_path: &str) -> Result<String> {
    if let Some((_, t)) = SHIPPED.iter().find(|(n, _)| *n == name_or_path) {
        return Ok(t.to_string());
    }
    std::fs::read_to_string(name_or_path)
        .with_context(|| format!("reading experiment file {name_or_path}"))
}

/// Expand `name_or_path`'s matrix with `sets` (`KEY=V1,V2,...`, each overriding an axis).
/// Without `--set`, an experiment comparing policies has one cell per policy. Every unknown
/// key or value is an error listing the valid ones; nothing is written here.
pub fn expand(name_or_path: &str, sets: &[String]) -> Result<Matrix> {
    if name_or_path == ALL {
        return expand_all(sets);
    }
    let exp = experiment::load(name_or_path)?;
    let text = experiment_text(name_or_path)?;
    let keys = valid_keys(&exp);
    let mut axes: Axes = BTreeMap::new();
    if let Some(toml::Value::Array(ps)) = exp.params.get("policies") {
        axes.insert("policy".into(), ps.clone());
    }
    for s in sets {
        let (key, values) = parse_set(s)?;
        if !keys.contains(&key) {
            return Err(unknown_key(&exp, &key, "an axis", &keys));
        }
        check_values(&key, &values)?;
        axes.insert(key, values);
    }
    let mut combos: Vec<BTreeMap<String, toml::Value>> = vec![BTreeMap::new()];
    for (k, vs) in &axes {
        combos = combos
            .into_iter()
            .flat_map(|c| {
                vs.iter().map(move |v| {
                    let mut c = c.clone();
                    c.insert(k.clone(), v.clone());
                    c
                })
            })
            .collect();
    }
    let base: toml::Table = toml::from_str(&text).context("parsing the experiment")?;
    let mut cells = Vec::new();
    let mut specs = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for (index, a) in combos.into_iter().enumerate() {
        let id = cell_id(&exp.name, &a);
        if !seen.insert(id.clone()) {
            bail!("--set gives the same cell twice ({a:?}); list each value once");
        }
        let spec = cell_spec(&base, &exp, &id, &a)?;
        experiment::parse(&spec, &format!("cell {id} ({})", describe(&a)))?;
        cells.push(Cell { index, id, axes: a });
        specs.push(spec);
    }
    Ok(Matrix {
        manifest: Manifest {
            experiment: exp.name.clone(),
            operation: exp.operation.clone(),
            needs_root: exp.operation()?.needs_root(&exp),
            axes,
            cells,
            closed_loop: None,
        },
        specs,
    })
}

/// The experiment `name_or_path` with `sets` applied (`KEY=VALUE`, the keys a sweep's `--set`
/// takes): what `layoutlab reproduce NAME --set KEY=VALUE` runs, e.g. `--set layout=kernel`.
/// A key whose value is a list in the file takes a list (`--set settings=0,8,32`); any other
/// takes one value. The operation's check validates the result, so a bad value is refused
/// before anything runs. Nothing else of the matrix (no policy axis) is added.
pub fn with_sets(name_or_path: &str, sets: &[String]) -> Result<Experiment> {
    let exp = experiment::load(name_or_path)?;
    let keys = valid_keys(&exp);
    let mut one: BTreeMap<String, toml::Value> = BTreeMap::new();
    for s in sets {
        let (key, mut values) = parse_set(s)?;
        if !keys.contains(&key) {
            return Err(unknown_key(&exp, &key, "a key", &keys));
        }
        check_values(&key, &values)?;
        let is_list = matches!(exp.params.get(&key), Some(toml::Value::Array(_)));
        let value = if is_list {
            toml::Value::Array(values)
        } else if values.len() == 1 {
            values.remove(0)
        } else {
            bail!("--set {s}: reproduce runs one value (`layoutlab sweep` runs several)");
        };
        one.insert(key, value);
    }
    let base: toml::Table =
        toml::from_str(&experiment_text(name_or_path)?).context("parsing the experiment")?;
    let spec = cell_spec(&base, &exp, &cell_id(&exp.name, &one), &one)?;
    experiment::parse(&spec, &format!("{} with {}", exp.name, describe(&one)))
}

/// The name of the sweep of every shipped experiment (`layoutlab sweep all`).
pub const ALL: &str = "all";

/// `reproduce all` as one sweep: one cell per shipped experiment (`--set experiment=A,B`
/// picks some), each the experiment's own file, at `--set scale=S` (one value) where the
/// experiment has a scale; an experiment without one (fio-randread, mkfs-overhead,
/// request-merging) runs as shipped, its only scale being 1. The cell's axes are
/// `experiment` and, where it applies, `scale`.
pub fn expand_all(sets: &[String]) -> Result<Matrix> {
    let mut names: Vec<String> = experiment::names().iter().map(|s| s.to_string()).collect();
    let mut scale: Option<toml::Value> = None;
    for s in sets {
        let (key, values) = parse_set(s)?;
        match key.as_str() {
            "experiment" => {
                for v in &values {
                    if !v.as_str().is_some_and(|n| names.iter().any(|x| x == n)) {
                        bail!(
                            "--set experiment: unknown experiment {v}; valid: {}",
                            names.join(", ")
                        );
                    }
                }
                names.retain(|n| values.iter().any(|v| v.as_str() == Some(n)));
            }
            "scale" => {
                check_values("scale", &values)?;
                let [v] = values.as_slice() else {
                    bail!("--set scale: a sweep of all experiments takes one scale (each experiment is one cell)");
                };
                scale = Some(v.clone());
            }
            _ => bail!(
                "--set {key}: not an axis of a sweep of all experiments; valid: experiment, scale"
            ),
        }
    }
    let mut axes: Axes = BTreeMap::new();
    axes.insert(
        "experiment".into(),
        names
            .iter()
            .map(|n| toml::Value::String(n.clone()))
            .collect(),
    );
    if let Some(v) = &scale {
        axes.insert("scale".into(), vec![v.clone()]);
    }
    let mut cells = Vec::new();
    let mut specs = Vec::new();
    let mut needs = false;
    for (index, name) in names.iter().enumerate() {
        let exp = experiment::load(name)?;
        let base: toml::Table = toml::from_str(&experiment_text(name)?)
            .with_context(|| format!("parsing experiment {name}"))?;
        let mut own = BTreeMap::new();
        if let (Some(v), true) = (&scale, exp.params.contains_key("default_scale")) {
            own.insert("scale".to_string(), v.clone());
        }
        let mut a = own.clone();
        a.insert("experiment".into(), toml::Value::String(name.clone()));
        let id = cell_id(ALL, &a);
        let spec = cell_spec(&base, &exp, &id, &own)?;
        experiment::parse(&spec, &format!("cell {id} ({})", describe(&a)))?;
        needs |= exp.operation()?.needs_root(&exp);
        cells.push(Cell { index, id, axes: a });
        specs.push(spec);
    }
    Ok(Matrix {
        manifest: Manifest {
            experiment: ALL.into(),
            operation: "every experiment's own".into(),
            needs_root: needs,
            axes,
            cells,
            closed_loop: None,
        },
        specs,
    })
}

/// `policy=x, scale=0.01` for messages.
pub fn describe(axes: &BTreeMap<String, toml::Value>) -> String {
    axes.iter()
        .map(|(k, v)| match v {
            toml::Value::String(s) => format!("{k}={s}"),
            v => format!("{k}={v}"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Check the values of the axes whose valid values are known here (policy, device, scale);
/// the others are checked by the operation when each cell's file is parsed.
fn check_values(key: &str, values: &[toml::Value]) -> Result<()> {
    for v in values {
        match key {
            "policy" => {
                let names = layoutlab_layout::policy::POLICY_NAMES;
                if !v.as_str().is_some_and(|s| names.contains(&s)) {
                    bail!(
                        "--set policy: unknown policy {v}; valid: {}",
                        names.join(", ")
                    );
                }
            }
            "device" => {
                let names = layoutlab_device::preset::preset_names();
                if !v.as_str().is_some_and(|s| names.iter().any(|n| n == s)) {
                    bail!(
                        "--set device: unknown preset {v} (a cell names a shipped preset, so a node needs only the binary); valid: {}",
                        names.join(", ")
                    );
                }
            }
            "scale" => {
                let s = v.as_float().or(v.as_integer().map(|i| i as f64));
                if !s.is_some_and(|s| s > 0.0 && s <= 1.0) {
                    bail!("--set scale: {v} is not a scale in (0, 1]");
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// The cell's experiment file: the experiment's table with the axes applied.
fn cell_spec(
    base: &toml::Table,
    exp: &Experiment,
    id: &str,
    axes: &BTreeMap<String, toml::Value>,
) -> Result<String> {
    let mut t = base.clone();
    let op = exp.operation.clone();
    for (k, v) in axes {
        let v = v.clone();
        let table = t
            .get_mut(&op)
            .and_then(|x| x.as_table_mut())
            .with_context(|| format!("the experiment has no [{op}] table"))?;
        match k.as_str() {
            "device" => {
                t.insert("device".into(), v);
            }
            "policy" => {
                // a policy's own mkfs profile goes with it; the others' would name policies
                // the cell does not compare
                if let Some(toml::Value::Table(m)) = table.get_mut("mkfs_profiles") {
                    m.retain(|p, _| v.as_str() == Some(p));
                }
                table.insert("policies".into(), toml::Value::Array(vec![v]));
            }
            "scale" => {
                let f = v.as_float().or(v.as_integer().map(|i| i as f64));
                table.insert(
                    "default_scale".into(),
                    toml::Value::Float(f.unwrap_or_default()),
                );
            }
            _ => {
                // a list in the experiment (ages, workloads) is swept one value per cell
                let v = match (table.get(k), v) {
                    (Some(toml::Value::Array(_)), v @ toml::Value::Array(_)) => v,
                    (Some(toml::Value::Array(_)), v) => toml::Value::Array(vec![v]),
                    (_, v) => v,
                };
                table.insert(k.clone(), v);
            }
        }
    }
    Ok(format!(
        "# layoutlab sweep: cell {id} of {} ({}). Run it with\n# layoutlab reproduce cell.toml\n{}",
        exp.name,
        describe(axes),
        toml::to_string(&t)?
    ))
}

/// The state of a cell, from the files its run left.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    /// Its result is there.
    Done,
    /// It ended without a result (error, signal, killed).
    Failed,
    /// It started and has not ended (or its runner was killed with SIGKILL).
    Running,
    /// It has not started.
    Pending,
}

impl State {
    /// As `status` prints it.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Done => "done",
            State::Failed => "failed",
            State::Running => "running",
            State::Pending => "pending",
        }
    }
}

/// The directory of cell `id`.
pub fn cell_dir(dir: &Path, id: &str) -> PathBuf {
    dir.join("cells").join(id)
}

/// Read `DIR/sweep.json`.
pub fn read_manifest(dir: &Path) -> Result<Manifest> {
    let p = dir.join("sweep.json");
    let t = std::fs::read_to_string(&p).with_context(|| {
        format!(
            "reading {} (is {} a sweep directory?)",
            p.display(),
            dir.display()
        )
    })?;
    serde_json::from_str(&t).with_context(|| format!("parsing {}", p.display()))
}

/// The state of cell `id` in `dir`.
pub fn state(dir: &Path, id: &str) -> State {
    let d = cell_dir(dir, id);
    if read_json(&d.join("result.json")).is_some() {
        State::Done
    } else if d.join("exit.json").exists() {
        State::Failed
    } else if d.join("started.json").exists() {
        State::Running
    } else {
        State::Pending
    }
}

fn read_json(p: &Path) -> Option<serde_json::Value> {
    serde_json::from_str(&std::fs::read_to_string(p).ok()?).ok()
}

/// One cell's state as `sweep status` reports it.
#[derive(Clone, Debug, Serialize)]
pub struct CellStatus {
    /// Cell id.
    pub id: String,
    /// Array index.
    pub index: usize,
    /// Axis values.
    pub axes: BTreeMap<String, toml::Value>,
    /// done | failed | running | pending.
    pub status: State,
    /// Wall seconds of its last run, when it ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seconds: Option<f64>,
    /// Where it last ran (host name).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The last lines of its log, when it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_tail: Option<String>,
}

/// Every cell's state.
pub fn status(dir: &Path) -> Result<(Manifest, Vec<CellStatus>)> {
    let m = read_manifest(dir)?;
    let cells = m
        .cells
        .iter()
        .map(|c| {
            let d = cell_dir(dir, &c.id);
            let st = state(dir, &c.id);
            let exit = read_json(&d.join("exit.json"));
            let started = read_json(&d.join("started.json"));
            let log_tail = (st == State::Failed).then(|| {
                let log = std::fs::read_to_string(d.join("log.txt")).unwrap_or_default();
                let lines: Vec<&str> = log.lines().collect();
                let mut tail = lines[lines.len().saturating_sub(15)..].join("\n");
                if let Some(why) = exit.as_ref().and_then(|e| e["why"].as_str()) {
                    tail.push_str(&format!("\n[{why}]"));
                }
                tail
            });
            CellStatus {
                id: c.id.clone(),
                index: c.index,
                axes: c.axes.clone(),
                status: st,
                seconds: exit.as_ref().and_then(|e| e["seconds"].as_f64()),
                host: started
                    .as_ref()
                    .and_then(|s| s["host"].as_str().map(str::to_string)),
                log_tail,
            }
        })
        .collect();
    Ok((m, cells))
}

/// The merged results: `{"experiment": NAME, "cells": [{"id", "axes", "status", "result"}]}`
/// (`result` is the experiment's own JSON for the cell, `null` unless done).
pub fn collect(dir: &Path) -> Result<serde_json::Value> {
    let m = read_manifest(dir)?;
    let cells: Vec<serde_json::Value> = m
        .cells
        .iter()
        .map(|c| {
            let st = state(dir, &c.id);
            let result = read_json(&cell_dir(dir, &c.id).join("result.json"))
                .unwrap_or(serde_json::Value::Null);
            serde_json::json!({
                "id": c.id,
                "axes": c.axes,
                "status": if st == State::Done { "done" } else { "failed" },
                "result": result,
            })
        })
        .collect();
    Ok(serde_json::json!({"experiment": m.experiment, "cells": cells}))
}

/// The cells of the sweep in `dir` as sections of `reproduce all`'s page (one per cell: its
/// axes, status, time, output, tables and plots, the command that reruns it), with the page's
/// title and the presets the cells priced on and their sources.
pub fn page(dir: &Path) -> Result<String> {
    use crate::all_page::{self, Section, Status};
    let m = read_manifest(dir)?;
    let mut sections = Vec::new();
    let mut presets: Vec<(String, String)> = Vec::new();
    for c in &m.cells {
        let d = cell_dir(dir, &c.id);
        let toml_text = std::fs::read_to_string(d.join("cell.toml")).unwrap_or_default();
        let exp = experiment::parse(&toml_text, &d.join("cell.toml").display().to_string()).ok();
        let st = state(dir, &c.id);
        let exit = read_json(&d.join("exit.json"));
        // a cell's report is under its experiment's name (a sweep of all: each cell's own)
        let report = d.join("report").join(
            exp.as_ref()
                .map_or(m.experiment.as_str(), |e| e.name.as_str()),
        );
        let device = exp.as_ref().map(|e| e.device.clone()).unwrap_or_default();
        all_page::add_preset(&mut presets, &device);
        let log = std::fs::read_to_string(d.join("log.txt")).unwrap_or_default();
        sections.push(Section {
            name: format!("{} [{}]", describe(&c.axes), c.id),
            title: exp.as_ref().map(|e| e.title.clone()).unwrap_or_default(),
            setup: all_page::setup_of(&toml_text),
            command: format!(
                "layoutlab sweep run-cell {} {} --force",
                dir.display(),
                c.index
            ),
            status: match st {
                State::Done => Status::Done,
                State::Failed => Status::Failed,
                State::Running => Status::Running,
                State::Pending => Status::Pending,
            },
            seconds: exit
                .as_ref()
                .and_then(|e| e.get("seconds"))
                .and_then(|v| v.as_f64()),
            // cells run under Slurm or `run-cell` carry no common clock
            span_seconds: None,
            output: std::fs::read_to_string(d.join("output.txt")).unwrap_or_default(),
            error: (st == State::Failed).then(|| {
                let why = exit
                    .as_ref()
                    .and_then(|e| e.get("why"))
                    .and_then(|v| v.as_str())
                    .unwrap_or("no result")
                    .to_string();
                let tail: Vec<&str> = log.lines().rev().take(15).collect();
                let tail: Vec<&str> = tail.into_iter().rev().collect();
                format!("{why}\n{}", tail.join("\n"))
            }),
            report: all_page::load_report(&report),
            // The page may be written anywhere: figures link to their files by absolute path.
            report_href: format!("{}/", report.display()),
            device,
        });
    }
    let done = sections.iter().filter(|s| s.status == Status::Done).count();
    Ok(all_page::render(
        &format!("layoutlab sweep: {}", m.experiment),
        &sections,
        &presets,
        &format!(
            "{} cells of {} ({done} done), from {}; each cell reruns with the command shown.",
            m.cells.len(),
            m.experiment,
            dir.display()
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sets(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn a_sweep_of_all_at_scale_1_is_one_cell_per_experiment_as_shipped_at_scale_1() {
        let m = expand(ALL, &sets(&["scale=1"])).unwrap();
        let names = experiment::names();
        assert_eq!(m.manifest.cells.len(), names.len());
        assert_eq!(m.manifest.experiment, ALL);
        assert!(m.manifest.needs_root);
        let ids: std::collections::BTreeSet<&str> =
            m.manifest.cells.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids.len(), names.len(), "ids repeat: {:?}", m.manifest.cells);
        for ((c, spec), name) in m.manifest.cells.iter().zip(&m.specs).zip(&names) {
            assert_eq!(c.axes["experiment"].as_str(), Some(*name));
            let cell = experiment::parse(spec, "cell").unwrap();
            let shipped = experiment::load(name).unwrap();
            assert_eq!(cell.name, shipped.name);
            assert_eq!(cell.operation, shipped.operation);
            match shipped.params.get("default_scale") {
                // the scale is the cell's; every other key is the experiment's own
                Some(_) => {
                    assert_eq!(c.axes["scale"].as_integer(), Some(1), "{name}");
                    assert_eq!(cell.params["default_scale"].as_float(), Some(1.0), "{name}");
                    let mut p = cell.params.clone();
                    let mut q = shipped.params.clone();
                    p.remove("default_scale");
                    q.remove("default_scale");
                    assert_eq!(p, q, "{name}");
                }
                // no scale: runs as shipped, its only scale being 1
                None => {
                    assert!(!c.axes.contains_key("scale"), "{name}");
                    assert_eq!(cell.params, shipped.params, "{name}");
                }
            }
        }
        // stable: the same cells every time, so a resubmission finds what is done
        assert_eq!(
            expand(ALL, &sets(&["scale=1"])).unwrap().manifest.cells,
            m.manifest.cells
        );
    }

    /// An operation's option that the experiment file leaves out (its default applies) is
    /// settable, as `experiments --json` says: `--set os_rotational=false` reaches the fsck
    /// table (the request-stream row of docs/fidelity.md), random-read, large-delete and
    /// metacluster-io, and a key that is neither in the file nor an option is still refused.
    #[test]
    fn an_operations_option_absent_from_the_file_is_settable() {
        let exp = experiment::load("metacluster-fsck").unwrap();
        assert!(!exp.params.contains_key("os_rotational"));
        let set = with_sets("metacluster-fsck", &sets(&["os_rotational=false"])).unwrap();
        assert_eq!(set.params["os_rotational"].as_bool(), Some(false));
        let spec: crate::ops::fsck::FsckSpec = set.params().unwrap();
        assert_eq!(spec.check_spec().os_rotational, Some(false));
        let shipped: crate::ops::fsck::FsckSpec = exp.params().unwrap();
        assert_eq!(shipped.check_spec().os_rotational, None);
        // random-read takes the same switch.
        let set = with_sets("random-read", &sets(&["os_rotational=false"])).unwrap();
        let spec: crate::ops::random_read::RandomReadSpec = set.params().unwrap();
        assert_eq!(spec.os_rotational, Some(false));
        // ... and large-delete (its file systems are made on the flagged devices) and
        // metacluster-io (its images are mounted on the flagged device): absent from the file,
        // `None` as shipped, `Some(false)` when set.
        fn shipped_and_set<T: serde::de::DeserializeOwned>(
            name: &str,
            flag: fn(&T) -> Option<bool>,
        ) -> (Option<bool>, Option<bool>) {
            let exp = experiment::load(name).unwrap();
            assert!(!exp.params.contains_key("os_rotational"), "{name}");
            let set = with_sets(name, &sets(&["os_rotational=false"])).unwrap();
            (flag(&exp.params().unwrap()), flag(&set.params().unwrap()))
        }
        use crate::ops::{large_delete::LargeDeleteSpec, metacluster_io::MetaclusterIoSpec};
        let ld = shipped_and_set("large-delete", |s: &LargeDeleteSpec| s.os_rotational);
        let mio = shipped_and_set("metacluster-io", |s: &MetaclusterIoSpec| s.os_rotational);
        assert_eq!(ld, (None, Some(false)));
        assert_eq!(mio, (None, Some(false)));
        let err = with_sets("metacluster-fsck", &sets(&["no_such_key=1"]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("not a key of metacluster-fsck"), "{err}");
    }

    #[test]
    fn a_sweep_of_all_picks_experiments_and_refuses_other_axes() {
        let m = expand(
            ALL,
            &sets(&["experiment=fio-randread,metacluster-fsck", "scale=0.5"]),
        )
        .unwrap();
        let picked: Vec<&str> = m
            .manifest
            .cells
            .iter()
            .map(|c| c.axes["experiment"].as_str().unwrap())
            .collect();
        // the shipped order (by file name), whatever the order of --set
        assert_eq!(picked, ["fio-randread", "metacluster-fsck"]);
        assert!(m.manifest.needs_root);
        let only_fio = expand(ALL, &sets(&["experiment=fio-randread"])).unwrap();
        assert!(!only_fio.manifest.needs_root);
        for (bad, says) in [
            ("scale=0.5,1", "one scale"),
            ("scale=2", "not a scale"),
            ("policy=ext3-2007", "valid: experiment, scale"),
            (
                "experiment=nope",
                "valid: cache-policies, ext3-vs-ext4-fsck",
            ),
        ] {
            let e = expand(ALL, &sets(&[bad])).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn aging_cells_take_one_age_and_one_policy_with_its_own_mkfs_profile() {
        let m = expand(
            "metacluster-aging",
            &sets(&[
                "policy=ext3-2007,ext4-2009",
                "ages=0,25",
                "workloads=bench5",
            ]),
        )
        .unwrap();
        assert_eq!(m.manifest.cells.len(), 4);
        for (c, spec) in m.manifest.cells.iter().zip(&m.specs) {
            // the cell's file is a valid experiment (its mkfs_profiles name only its policy)
            let e = experiment::parse(spec, "cell").unwrap();
            let a: crate::aging::AgingOpSpec = e.params().unwrap();
            let policy = c.axes["policy"].as_str().unwrap();
            assert_eq!(a.policies, vec![policy]);
            assert_eq!(a.ages, vec![c.axes["ages"].as_integer().unwrap() as f64]);
            assert_eq!(a.workloads, vec!["bench5"]);
            assert_eq!(a.mkfs_profiles.len(), usize::from(policy == "ext4-2009"));
        }
    }

    #[test]
    fn fsck_cells_are_one_policy_each_times_the_set_axes() {
        let m = expand("metacluster-fsck", &sets(&["scale=0.005,0.01"])).unwrap();
        assert_eq!(m.manifest.cells.len(), 4);
        assert!(m.manifest.needs_root);
        for (c, spec) in m.manifest.cells.iter().zip(&m.specs) {
            let e = experiment::parse(spec, "cell").unwrap();
            let f: crate::fsck::FsckSpec = e.params().unwrap();
            assert_eq!(f.policies, vec![c.axes["policy"].as_str().unwrap()]);
            assert_eq!(f.default_scale, c.axes["scale"].as_float().unwrap());
            // everything else as the experiment has it
            assert_eq!(f.os_read_ahead_kb, 128);
            assert_eq!(e.device, "sata-400g-2007");
            assert_eq!(e.name, "metacluster-fsck");
        }
        let ids: std::collections::BTreeSet<_> =
            m.manifest.cells.iter().map(|c| c.id.clone()).collect();
        assert_eq!(ids.len(), 4);
    }

    #[test]
    fn ids_do_not_depend_on_the_order_axes_are_given() {
        let a = expand(
            "metacluster-fsck",
            &sets(&["scale=0.01", "device=sata-400g-2007"]),
        )
        .unwrap();
        let b = expand(
            "metacluster-fsck",
            &sets(&["device=sata-400g-2007", "scale=0.01"]),
        )
        .unwrap();
        assert_eq!(a.manifest.cells, b.manifest.cells);
        // and a known value, so that ids stay what they were across versions
        let mut axes = BTreeMap::new();
        axes.insert("policy".into(), toml::Value::String("ext3-2007".into()));
        assert_eq!(cell_id("metacluster-fsck", &axes), "e1e4cd6a5bd1");
        assert_eq!(cell_id("metacluster-fsck", &axes).len(), 12);
    }

    #[test]
    fn unknown_keys_and_values_list_the_valid_ones() {
        let e = format!(
            "{:#}",
            expand("metacluster-fsck", &sets(&["age=1,2"])).unwrap_err()
        );
        assert!(
            e.contains("age")
                && e.contains("policy")
                && e.contains("scale")
                && e.contains("os_read_ahead_kb"),
            "{e}"
        );
        let e = format!(
            "{:#}",
            expand("metacluster-fsck", &sets(&["policy=ext9"])).unwrap_err()
        );
        assert!(e.contains("ext9") && e.contains("ext3-metacluster"), "{e}");
        let e = format!(
            "{:#}",
            expand("metacluster-fsck", &sets(&["device=floppy"])).unwrap_err()
        );
        assert!(e.contains("floppy") && e.contains("sata-400g-2007"), "{e}");
        let e = format!(
            "{:#}",
            expand("metacluster-fsck", &sets(&["scale=2"])).unwrap_err()
        );
        assert!(e.contains("(0, 1]"), "{e}");
        // a key of the table with a value of the wrong type: the operation's check names it
        let e = format!(
            "{:#}",
            expand("metacluster-fsck", &sets(&["os_read_ahead_kb=lots"])).unwrap_err()
        );
        assert!(e.contains("os_read_ahead_kb"), "{e}");
    }

    #[test]
    fn set_values_are_toml_literals_or_strings() {
        let (k, v) = parse_set("scale=0.01,1").unwrap();
        assert_eq!(k, "scale");
        assert_eq!(v, vec![toml::Value::Float(0.01), toml::Value::Integer(1)]);
        let (_, v) = parse_set("policy=ext3-2007").unwrap();
        assert_eq!(v, vec![toml::Value::String("ext3-2007".into())]);
        assert!(parse_set("scale").is_err());
        assert!(parse_set("scale=0.1,").is_err());
    }

    #[test]
    fn state_follows_the_files_a_run_leaves() {
        let dir = std::env::temp_dir().join(format!("ll-sweep-state-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let d = cell_dir(&dir, "abc");
        std::fs::create_dir_all(&d).unwrap();
        assert_eq!(state(&dir, "abc"), State::Pending);
        std::fs::write(d.join("started.json"), "{}").unwrap();
        assert_eq!(state(&dir, "abc"), State::Running);
        std::fs::write(d.join("exit.json"), "{\"code\": 1}").unwrap();
        assert_eq!(state(&dir, "abc"), State::Failed);
        std::fs::write(d.join("result.json"), "{\"runs\": []}").unwrap();
        assert_eq!(state(&dir, "abc"), State::Done);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
