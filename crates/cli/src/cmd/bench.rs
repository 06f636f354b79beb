//! `layoutlab bench ...`: how fast layoutlab itself is (targets live here, not in timed tests).

use super::device::load_device;
use super::{write_json, Human};
use anyhow::{bail, Context, Result};
use clap::Subcommand;
use layoutlab_device::bench::bench_replay;
use layoutlab_experiments::stages;
use layoutlab_report::{Cell, Column, Table};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Benchmarks.
#[derive(Subcommand)]
pub enum Command {
    /// The emulator against the Memulator's bar: the real e2fsck on IMAGE through `device
    /// emulate`, traced; for each request, the completion the kernel saw (block_rq_complete −
    /// block_rq_issue) against the model's service time; the share within max(2%, 100 µs)
    /// (bar: ≥ 99%) and the route's per-request overhead. Root only.
    ///
    /// Example: layoutlab bench emulate fs.img --device sata-400g-2007,sata-160g-2009
    Emulate {
        /// An ext image (opened read-only; its bytes are never changed).
        image: PathBuf,
        /// Device presets, comma-separated.
        #[arg(
            long,
            value_delimiter = ',',
            default_value = "sata-400g-2007,sata-160g-2009"
        )]
        device: Vec<String>,
        /// Time scale K of the emulated device.
        #[arg(long, default_value_t = 1.0)]
        time_scale: f64,
        /// Write the results as JSON to PATH ("-" for stdout).
        #[arg(long, value_name = "PATH")]
        json: Option<PathBuf>,
    },
    /// Replay a synthetic trace (mixed seeks and sequential runs) through a device model and
    /// report requests per second on one core. Target: ≥ 10 million requests/s on the HDD model.
    Replay {
        /// Requests in the synthetic trace.
        #[arg(long, default_value_t = 1_000_000)]
        requests: usize,
        /// Device preset.
        #[arg(long, default_value = "sata-400g-2007")]
        device: String,
        /// Seed of the synthetic trace.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Write the result as JSON to PATH ("-" for stdout).
        #[arg(long, value_name = "PATH")]
        json: Option<PathBuf>,
    },
    /// Plan a population with each policy in memory (generation, plan and its consistency check,
    /// no I/O) and report the wall time of each. Target: ubuntu-32g (312,214 inodes) in ≤ 10 s
    /// per policy.
    Plan {
        /// Population (bench5, ubuntu-32g, or a population .toml).
        #[arg(long, default_value = "ubuntu-32g")]
        workload: String,
        /// Policies, comma-separated.
        #[arg(
            long,
            value_delimiter = ',',
            default_value = "ext3-2007,ext4-2008,ext4-2009"
        )]
        policy: Vec<String>,
        /// mkfs profile of the file system planned on.
        #[arg(long, default_value = "ext4-2009")]
        mkfs_profile: String,
        /// Scale of the population (1 = full size).
        #[arg(long, default_value_t = 1.0)]
        scale: f64,
        /// Write the results as JSON to PATH ("-" for stdout).
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// Apply an aging stream with a layout policy in memory and report aging operations per
    /// second on one core: the policy plans the tree alone, then the tree and the stream, and
    /// the difference is the engine's time on the stream's operations (creates, extends,
    /// truncates, unlinks, renames, mkdirs, rmdirs: frees and reuse included). Target:
    /// ≥ 200,000 operations/s.
    Age {
        /// Population aged (bench5, ubuntu-32g, or a population .toml).
        #[arg(long, default_value = "ubuntu-32g")]
        workload: String,
        /// Fraction of the population kept (tree populations: of its files; bench5: of its
        /// sizes).
        #[arg(long, default_value_t = 0.1)]
        scale: f64,
        /// Capacities the stream writes.
        #[arg(long, default_value_t = 5.0)]
        age: f64,
        /// Live data the stream holds, as a fraction of the file system.
        #[arg(long, default_value_t = 0.8)]
        fullness: f64,
        /// Policies, comma-separated.
        #[arg(
            long,
            value_delimiter = ',',
            default_value = "ext3-2007,ext3-metacluster,rext3,ext4-2009"
        )]
        policy: Vec<String>,
        /// Seed of the stream.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Write the result as JSON to PATH ("-" for stdout): the slowest policy's
        /// `{"operations", "seconds", "operations_per_second"}`, and each policy's in
        /// `"policies"`.
        #[arg(long, value_name = "PATH")]
        json: Option<PathBuf>,
    },
    /// Run a named experiment (the real `layoutlab reproduce`) at each scale and report its
    /// wall time and where it went: plan, image, capture, price, report, teardown and other (the stages
    /// of docs/architecture.md's pipeline; time when several run at once is shared among them,
    /// so they add up to the wall time). `all`: every shipped experiment in turn, as
    /// `reproduce all` runs them, at one scale (default: each one's own), beside the budget:
    /// at the default scale each ≤ 120 s and all ≤ 600 s (issue 32), at scale 1 each ≤ 600 s
    /// and all ≤ 1,800 s (issue 28). A failed experiment is reported and the others still run
    /// (exit status 2 at the end). Targets: metacluster-fsck ≤ 15 s at its default scale and
    /// ≤ 90 s at scale 1 on a 2-core machine. Root (it runs e2fsck on loop devices).
    ///
    /// Example: layoutlab bench experiment all --scale 1 --only metacluster-fsck,fio-randread
    Experiment {
        /// Experiment name (see `layoutlab experiments`), or `all`.
        #[arg(default_value = "metacluster-fsck")]
        name: String,
        /// Scales to run, comma-separated; "default" is the experiment's own. Default:
        /// "default,1" for one experiment, "default" for `all` (which takes one scale).
        #[arg(long, value_delimiter = ',')]
        scale: Option<Vec<String>>,
        /// With `all`: only these experiments, comma-separated (`make bench` names those whose
        /// scale 1 is within its budget).
        #[arg(long, value_delimiter = ',', value_name = "LIST")]
        only: Option<Vec<String>>,
        /// Policies at once (passed to reproduce --jobs; default: one per CPU).
        #[arg(long)]
        jobs: Option<u32>,
        /// Set a key of the experiment's table for the runs, as `reproduce --set` does
        /// (repeatable; checked by the same path before any run; one experiment only, since
        /// the keys are its operation's). Example: --set policies=ext3-2007
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,
        /// Write the results as JSON to PATH ("-" for stdout): one object per run,
        /// `{"experiment", "scale", "status", "error", "wall_seconds", "stage_seconds",
        /// "budget_seconds", "within_budget", "jobs", "policy_stage_seconds"}`.
        #[arg(long, value_name = "PATH")]
        json: Option<PathBuf>,
    },
}

/// One run of one experiment: its wall time and where it went.
#[derive(serde::Serialize)]
struct ExperimentBench {
    experiment: String,
    /// The scale it ran at (the experiment's own default when asked for "default"; absent if
    /// the run failed before saying).
    scale: Option<f64>,
    /// "done" or "failed".
    status: &'static str,
    /// Why it failed: the last lines of what it printed.
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    /// The whole `layoutlab reproduce` command, wall seconds.
    wall_seconds: f64,
    /// Wall seconds per stage (plan, image, capture, price, report, teardown, other), from the run's
    /// own clock (`reproduce --stage-times`): they add up to `wall_seconds`, "other" taking
    /// the process's start and exit too. Empty if the run failed.
    stage_seconds: BTreeMap<String, f64>,
    /// The budget at this scale, seconds (none at scales other than the default and 1).
    budget_seconds: Option<f64>,
    /// Done within its budget.
    within_budget: Option<bool>,
    /// Policies at once (fsck experiments' `timing.jobs`; 1 otherwise).
    jobs: u64,
    /// fsck experiments: each policy's own stage times (plan, mkfs, materialize,
    /// traced_check, replay) summed over the policies, which overlap when run at once.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    policy_stage_seconds: BTreeMap<String, f64>,
}

/// Each experiment's budget and that of all of them, by scale: at the default scale a new
/// user waits at most two minutes for one and ten for all (issue 32); at scale 1 at most ten
/// minutes for one and thirty for all (issue 28).
fn budget(scale: &str) -> Option<(f64, f64)> {
    match scale {
        "default" => Some((120.0, 600.0)),
        s if s.parse::<f64>() == Ok(1.0) => Some((600.0, 1800.0)),
        _ => None,
    }
}

fn bench_experiment(
    name: &str,
    scale: &str,
    jobs: Option<u32>,
    sets: &[String],
) -> Result<ExperimentBench> {
    let dir = std::env::temp_dir().join(format!(
        "layoutlab-bench-{}-{}-{}",
        std::process::id(),
        name,
        scale.replace('.', "_")
    ));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let json = dir.join("run.json");
    let stages_json = dir.join("stages.json");
    let log = dir.join("log.txt");
    let mut cmd = std::process::Command::new(std::env::current_exe()?);
    cmd.args(["reproduce", name, "--json"])
        .arg(&json)
        .arg("--stage-times")
        .arg(&stages_json)
        .arg("--out")
        .arg(dir.join("out"))
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log)?);
    if scale != "default" {
        cmd.args(["--scale", scale]);
    }
    if let Some(j) = jobs {
        cmd.args(["--jobs", &j.to_string()]);
    }
    for s in sets {
        cmd.args(["--set", s]);
    }
    eprintln!(
        "bench: layoutlab reproduce {name} --scale {scale}{}",
        sets.iter()
            .map(|s| format!(" --set {s}"))
            .collect::<String>()
    );
    let t = std::time::Instant::now();
    let status = cmd.status().context("running layoutlab reproduce")?;
    let wall_seconds = t.elapsed().as_secs_f64();
    let text = std::fs::read_to_string(&json);
    let stages_text = std::fs::read_to_string(&stages_json);
    let log_text = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    let budget_seconds = budget(scale).map(|(one, _)| one);
    if !status.success() {
        let lines: Vec<&str> = log_text.lines().collect();
        let error = lines[lines.len().saturating_sub(3)..].join("\n");
        eprintln!("bench: {name} failed ({status}) after {wall_seconds:.1} s:\n{error}");
        return Ok(ExperimentBench {
            experiment: name.to_string(),
            scale: None,
            status: "failed",
            error: Some(error),
            wall_seconds,
            stage_seconds: BTreeMap::new(),
            budget_seconds,
            within_budget: budget_seconds.map(|_| false),
            jobs: jobs.map_or(1, u64::from),
            policy_stage_seconds: BTreeMap::new(),
        });
    }
    let v: serde_json::Value = serde_json::from_str(&text.context("reading the run's JSON")?)?;
    let clock: serde_json::Value =
        serde_json::from_str(&stages_text.context("reading the run's stage times")?)?;
    let stage_seconds = stages_of(&clock, wall_seconds)?;
    let mut policy_stage_seconds = BTreeMap::new();
    for r in v["runs"].as_array().map(Vec::as_slice).unwrap_or_default() {
        if let Some(stages) = r["measured_here"]["stage_seconds"].as_object() {
            for (stage, s) in stages {
                *policy_stage_seconds.entry(stage.clone()).or_insert(0.0) +=
                    s.as_f64().unwrap_or(0.0);
            }
        }
    }
    Ok(ExperimentBench {
        experiment: name.to_string(),
        scale: v["scale"].as_f64(),
        status: "done",
        error: None,
        wall_seconds,
        stage_seconds,
        budget_seconds,
        within_budget: budget_seconds.map(|b| wall_seconds <= b),
        jobs: v["timing"]["jobs"].as_u64().unwrap_or(1),
        policy_stage_seconds,
    })
}

/// The run's stages (`reproduce --stage-times`), with the time outside its clock (the
/// process's start and exit, as measured here) added to "other", so that they add up to
/// `wall_seconds`.
fn stages_of(clock: &serde_json::Value, wall_seconds: f64) -> Result<BTreeMap<String, f64>> {
    let Some(stages) = clock["stage_seconds"].as_object() else {
        bail!("the run's stage times have no stage_seconds: {clock}");
    };
    let mut out: BTreeMap<String, f64> = stages
        .iter()
        .map(|(k, v)| (k.clone(), v.as_f64().unwrap_or(0.0)))
        .collect();
    let run_wall = clock["wall_seconds"].as_f64().unwrap_or(0.0);
    *out.entry(stages::OTHER.to_string()).or_insert(0.0) += (wall_seconds - run_wall).max(0.0);
    // The run's clock started after this one and stopped before it; rounding aside, the
    // difference is what "other" just took.
    let sum: f64 = out.values().sum();
    if (sum - wall_seconds).abs() > 1e-6 * wall_seconds.max(1.0) {
        bail!("the run's stages add up to {sum} s, more than the {wall_seconds} s it took");
    }
    Ok(out)
}

/// `bench experiment NAME|all`: each experiment at each scale, a row each: its wall time,
/// its stages, and its budget where the scale has one.
fn bench_experiments(
    names: &[String],
    scales: &[String],
    jobs: Option<u32>,
    sets: &[String],
    json: Option<PathBuf>,
) -> Result<()> {
    let mut results = Vec::new();
    for scale in scales {
        for name in names {
            results.push(bench_experiment(name, scale.trim(), jobs, sets)?);
        }
    }
    let title = match names {
        [one] => format!("{one}: wall time per stage on this machine"),
        _ => format!(
            "every experiment at scale {}: wall time per stage on this machine",
            scales.join(",")
        ),
    };
    let mut t = Table::new(
        &title,
        [Column::text("experiment"), Column::number("scale", None)]
            .into_iter()
            .chain(std::iter::once(Column::number("wall", Some("s"))))
            .chain(stages::ALL.iter().map(|s| Column::number(s, Some("s"))))
            .chain([Column::number("budget", Some("s")), Column::text("within")])
            .collect(),
    );
    for r in &results {
        let mut row = vec![
            Cell::text(&r.experiment),
            r.scale.map_or(Cell::Empty, |s| Cell::num(s, 3)),
            Cell::num(r.wall_seconds, 1),
        ];
        row.extend(stages::ALL.iter().map(|s| match r.stage_seconds.get(*s) {
            Some(v) => Cell::num(*v, 1),
            None => Cell::Empty,
        }));
        row.push(r.budget_seconds.map_or(Cell::Empty, |b| Cell::num(b, 0)));
        row.push(Cell::text(match (r.status, r.within_budget) {
            ("failed", _) => "FAILED",
            (_, Some(true)) => "yes",
            (_, Some(false)) => "NO",
            _ => "",
        }));
        t.push_row(row)?;
    }
    if names.len() > 1 {
        for scale in scales {
            let rows: Vec<&ExperimentBench> = results
                .iter()
                .zip(scales.iter().flat_map(|s| names.iter().map(move |_| s)))
                .filter(|(_, s)| *s == scale)
                .map(|(r, _)| r)
                .collect();
            let total: f64 = rows.iter().map(|r| r.wall_seconds).sum();
            let all_budget = budget(scale.trim()).map(|(_, all)| all);
            let mut row = vec![Cell::text("all"), Cell::Empty, Cell::num(total, 1)];
            row.extend(stages::ALL.iter().map(|s| {
                Cell::num(
                    rows.iter()
                        .filter_map(|r| r.stage_seconds.get(*s))
                        .sum::<f64>(),
                    1,
                )
            }));
            row.push(all_budget.map_or(Cell::Empty, |b| Cell::num(b, 0)));
            row.push(Cell::text(match all_budget {
                Some(b) if total <= b => "yes",
                Some(_) => "NO",
                None => "",
            }));
            t.push_total(row)?;
        }
    }
    Human::new(json.as_deref()).say(&format!(
        "{}\nstages share the time when several run at once, so they add up to the wall time; \
         \"other\" is loading, checks, cleanup and the process's start and exit.\n",
        t.to_terminal(None)?
    ));
    if let Some(path) = json {
        write_json(&path, &results)?;
    }
    let failed: Vec<&str> = results
        .iter()
        .filter(|r| r.status == "failed")
        .map(|r| r.experiment.as_str())
        .collect();
    if !failed.is_empty() {
        bail!("failed: {} (the table and JSON say why)", failed.join(", "));
    }
    Ok(())
}

/// Run a benchmark.
pub fn run(cmd: Command) -> Result<()> {
    match cmd {
        Command::Emulate {
            image,
            device,
            time_scale,
            json,
        } => {
            let human = Human::new(json.as_deref());
            let mut results = Vec::new();
            for preset in &device {
                let r = super::emulate::bench(preset, &image, time_scale)?;
                human.say(&format!(
                    "{} (K = {}; route {:.0} µs; load average {:.1} → {:.1}): {} kernel requests, {} served, {} paired; {:.2}% within \
                     max(2%, 100 µs) of the model; kernel − model µs: p1 {:.0}, p50 {:.0}, \
                     p99 {:.0}, max {:.0}; model service µs p1/p50/p99 {:.0}/{:.0}/{:.0}; \
                     reply lateness p50 {:.0} µs, p99 {:.0} µs; delay above the route's best \
                     in (issue → daemon) p50 {:.0} µs, p99 {:.0} µs, out (reply → complete) \
                     p50 {:.0} µs, p99 {:.0} µs; {} arrivals raised to the model's last \
                     completion (model µs p50 {:.0}, p99 {:.0}, max {:.0}), {} of them issued by \
                     the kernel before that completion (by at most {:.0} µs); \
                     e2fsck {:.2} s here; closed loop {:.3} s, \
                     open-loop replay of that stream {:.3} s; plain loop device: {} requests, \
                     open loop {:.3} s\n",
                    r.preset,
                    r.time_scale,
                    r.route_us,
                    r.load_average[0],
                    r.load_average[1],
                    r.kernel_requests,
                    r.served_requests,
                    r.matched,
                    r.share_within * 100.0,
                    r.error_us[0],
                    r.error_us[1],
                    r.error_us[2],
                    r.error_us[3],
                    r.model_us[0],
                    r.model_us[1],
                    r.model_us[2],
                    r.reply_late_us[0],
                    r.reply_late_us[1],
                    r.inbound_above_best_us[0],
                    r.inbound_above_best_us[1],
                    r.outbound_above_best_us[0],
                    r.outbound_above_best_us[1],
                    r.raised,
                    r.raised_model_us[0],
                    r.raised_model_us[1],
                    r.raised_model_us[2],
                    r.raised_issued_early,
                    r.raised_issued_early_max_us,
                    r.wall_s,
                    r.closed_loop_s,
                    r.open_loop_same_stream_s,
                    r.plain_requests,
                    r.plain_open_loop_s
                ));
                results.push(r);
            }
            if let Some(path) = json {
                write_json(&path, &results)?;
            }
            Ok(())
        }
        Command::Replay {
            requests,
            device,
            seed,
            json,
        } => {
            let mut dev = load_device(&device)?;
            let r = bench_replay(dev.as_mut(), requests, seed);
            Human::new(json.as_deref()).say(&format!(
                "replayed {} requests on {} in {:.3} s: {:.2} million requests/s\n",
                r.requests,
                device,
                r.seconds,
                r.requests_per_second / 1e6
            ));
            if let Some(path) = json {
                write_json(&path, &r)?;
            }
            Ok(())
        }
        Command::Plan {
            workload,
            policy,
            mkfs_profile,
            scale,
            json,
        } => bench_plan(&workload, &policy, &mkfs_profile, scale, json),
        Command::Age {
            workload,
            scale,
            age,
            fullness,
            policy,
            seed,
            json,
        } => bench_age(&workload, scale, (age, fullness, seed), &policy, json),
        Command::Experiment {
            name,
            scale,
            only,
            jobs,
            set,
            json,
        } => {
            // `--set` is checked as `reproduce --set` checks it (the operation's keys and
            // values), before root is asked for or anything runs.
            if !set.is_empty() {
                if name == "all" {
                    bail!(
                        "--set goes with one experiment (its keys are its operation's), \
                         not `bench experiment all`"
                    );
                }
                layoutlab_experiments::sweep::with_sets(&name, &set)?;
            }
            layoutlab_rig::require_root("running the experiments on loop devices")?;
            let shipped = layoutlab_experiments::experiment::names();
            let names: Vec<String> = if name == "all" {
                match only {
                    Some(list) => {
                        if let Some(n) = list.iter().find(|n| !shipped.contains(&n.as_str())) {
                            bail!("unknown experiment '{n}'; valid: {}", shipped.join(", "));
                        }
                        list
                    }
                    None => shipped.iter().map(|s| s.to_string()).collect(),
                }
            } else {
                if only.is_some() {
                    bail!("--only goes with `bench experiment all`");
                }
                // a typo fails here, before any run
                layoutlab_experiments::experiment::load(&name)?;
                vec![name.clone()]
            };
            let scales = match scale {
                Some(s) if name == "all" && s.len() != 1 => {
                    bail!(
                        "bench experiment all runs every experiment at one scale; got --scale {}",
                        s.join(",")
                    )
                }
                Some(s) => s,
                None if name == "all" => vec!["default".to_string()],
                None => vec!["default".to_string(), "1".to_string()],
            };
            for s in &scales {
                let s = s.trim();
                if s != "default" && !s.parse::<f64>().is_ok_and(|v| v > 0.0 && v <= 1.0) {
                    bail!("--scale takes \"default\" or numbers in (0, 1], got '{s}'");
                }
            }
            bench_experiments(&names, &scales, jobs, &set, json)
        }
    }
}

/// One policy's speed on an aging stream.
#[derive(serde::Serialize)]
struct AgeBench {
    policy: String,
    /// Aging operations applied.
    operations: u64,
    /// Seconds the engine spent on them (the aged plan's time less the tree's).
    seconds: f64,
    operations_per_second: f64,
}

/// The JSON of `bench age`: the slowest policy at the top.
#[derive(serde::Serialize)]
struct AgeBenchOut {
    workload: String,
    scale: f64,
    age: f64,
    operations: u64,
    seconds: f64,
    operations_per_second: f64,
    slowest_policy: String,
    policies: Vec<AgeBench>,
}

fn bench_age(
    workload: &str,
    scale: f64,
    (age, fullness, seed): (f64, f64, u64),
    policies: &[String],
    json: Option<PathBuf>,
) -> Result<()> {
    use layoutlab_layout::{policy, policy_by_name, Geometry, MkfsProfile, PolicyParams};
    use std::time::Instant;
    let tree = layoutlab_workload::population_shrunk(workload, scale)?;
    let (tree, _) =
        layoutlab_experiments::aging::trim_to(&tree, (tree.fs_bytes as f64 * fullness) as u64);
    let t = Instant::now();
    let aged = layoutlab_workload::aging::age(
        &tree,
        &layoutlab_workload::aging::AgingSpec {
            fullness: Some(fullness),
            ..layoutlab_workload::aging::AgingSpec::new(age, seed)
        },
        layoutlab_layout::mkfs::metadata_margin_bytes(tree.fs_bytes),
    )?;
    let operations = (aged.ops.len() - tree.ops.len()) as u64;
    eprintln!(
        "{} aging operations ({age}× capacity of {}) generated in {:.2} s",
        operations,
        tree.name,
        t.elapsed().as_secs_f64()
    );
    let mut results = Vec::new();
    for name in policies {
        let profile =
            MkfsProfile::by_name(policy::default_mkfs_profile(name).unwrap_or("ext3-2007"))?;
        let geo = Geometry::new(&profile, tree.fs_bytes)?;
        let p = policy_by_name(name, &PolicyParams::new())?;
        // the best of three of each, so that a busy moment of this machine does not decide
        let best = |pop: &layoutlab_workload::Population| -> Result<f64> {
            let mut best = f64::INFINITY;
            for _ in 0..3 {
                let t = Instant::now();
                p.plan(&geo, pop, seed)?;
                best = best.min(t.elapsed().as_secs_f64());
            }
            Ok(best)
        };
        let seconds = (best(&aged)? - best(&tree)?).max(1e-9);
        results.push(AgeBench {
            policy: name.clone(),
            operations,
            seconds,
            operations_per_second: operations as f64 / seconds,
        });
    }
    let Some(slowest) = results
        .iter()
        .min_by(|a, b| a.operations_per_second.total_cmp(&b.operations_per_second))
    else {
        bail!("--policy names no policy");
    };
    let mut t = Table::new(
        &format!(
            "aging {} by {age}× capacity (in memory, one core)",
            tree.name
        ),
        vec![
            Column::text("policy"),
            Column::number("operations", None),
            Column::number("seconds", Some("s")),
            Column::number("operations/s", None),
        ],
    );
    for r in &results {
        t.push_row(vec![
            Cell::text(&r.policy),
            Cell::count(r.operations),
            Cell::num(r.seconds, 3),
            Cell::count(r.operations_per_second as u64),
        ])?;
    }
    Human::new(json.as_deref()).say(&format!(
        "{}
",
        t.to_terminal(None)?
    ));
    if let Some(path) = json {
        write_json(
            &path,
            &AgeBenchOut {
                workload: tree.name.clone(),
                scale,
                age,
                operations,
                seconds: slowest.seconds,
                operations_per_second: slowest.operations_per_second,
                slowest_policy: slowest.policy.clone(),
                policies: results,
            },
        )?;
    }
    Ok(())
}

/// One policy's planning time.
#[derive(serde::Serialize)]
struct PlanBench {
    workload: String,
    policy: String,
    scale: f64,
    inodes: usize,
    /// Generating the population, wall seconds (once, shared by the policies).
    generate_seconds: f64,
    /// The policy's plan, wall seconds.
    plan_seconds: f64,
    /// `Plan::check`, wall seconds.
    check_seconds: f64,
}

fn bench_plan(
    workload: &str,
    policies: &[String],
    mkfs_profile: &str,
    scale: f64,
    json: Option<PathBuf>,
) -> Result<()> {
    use layoutlab_layout::{policy_by_name, Geometry, MkfsProfile, PolicyParams};
    use std::time::Instant;
    let t = Instant::now();
    let pop = layoutlab_workload::population_by_name(workload)?.scale(scale)?;
    let generate_seconds = t.elapsed().as_secs_f64();
    let profile = MkfsProfile::by_name(mkfs_profile)?;
    let geo = Geometry::new(&profile, pop.fs_bytes)?;
    let mut results = Vec::new();
    for name in policies {
        let p = policy_by_name(name, &PolicyParams::new())?;
        let t = Instant::now();
        let plan = p.plan(&geo, &pop, 1)?;
        let plan_seconds = t.elapsed().as_secs_f64();
        let t = Instant::now();
        plan.check(&geo)
            .map_err(|e| anyhow::anyhow!("policy {name} made an inconsistent plan: {e}"))?;
        results.push(PlanBench {
            workload: workload.to_string(),
            policy: name.clone(),
            scale,
            inodes: plan.inodes.len(),
            generate_seconds,
            plan_seconds,
            check_seconds: t.elapsed().as_secs_f64(),
        });
    }
    let mut t = Table::new(
        &format!("planning {workload} at scale {scale} on {mkfs_profile} (in memory, one core)"),
        vec![
            Column::text("policy"),
            Column::number("inodes", None),
            Column::number("plan", Some("s")),
            Column::number("check", Some("s")),
        ],
    );
    for r in &results {
        t.push_row(vec![
            Cell::text(&r.policy),
            Cell::count(r.inodes as u64),
            Cell::num(r.plan_seconds, 2),
            Cell::num(r.check_seconds, 2),
        ])?;
    }
    Human::new(json.as_deref()).say(&format!(
        "{}\npopulation generated in {generate_seconds:.2} s\n",
        t.to_terminal(None)?
    ));
    if let Some(path) = json {
        write_json(&path, &results)?;
    }
    Ok(())
}
