//! `layoutlab bench ...`: how fast layoutlab itself is (targets live here, not in timed tests).

use super::device::load_device;
use super::{write_json, Human};
use anyhow::{bail, Context, Result};
use clap::Subcommand;
use layoutlab_device::bench::bench_replay;
use layoutlab_report::{Cell, Column, Table};
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
    /// wall time and, for fsck experiments, the wall time of each stage: plan, mkfs,
    /// materialise, traced check, replay (summed over policies, which run at once) and report.
    /// `all`: every shipped experiment in turn at its default scale, beside the budget of
    /// `reproduce all` (each ≤ 120 s, all ≤ 600 s). Targets: metacluster-fsck ≤ 15 s at its
    /// default scale and ≤ 90 s at scale 1 on a 2-core machine. Root (it runs e2fsck on loop
    /// devices).
    Experiment {
        /// Experiment name (see `layoutlab experiments`), or `all`.
        #[arg(default_value = "metacluster-fsck")]
        name: String,
        /// Scales to run, comma-separated; "default" is the experiment's own.
        #[arg(long, value_delimiter = ',', default_value = "default,1")]
        scale: Vec<String>,
        /// Policies at once (passed to reproduce --jobs; default: one per CPU).
        #[arg(long)]
        jobs: Option<u32>,
        /// Write the results as JSON to PATH ("-" for stdout).
        #[arg(long, value_name = "PATH")]
        json: Option<PathBuf>,
    },
}

/// One scale's timing, from the run's own `--json` (`timing`, `measured_here.stage_seconds`).
#[derive(serde::Serialize)]
struct ExperimentBench {
    experiment: String,
    scale: f64,
    jobs: u64,
    /// The whole `layoutlab reproduce` command, wall seconds.
    wall_seconds: f64,
    /// Stages summed over policies, wall seconds (they overlap when policies run at once).
    stage_seconds: std::collections::BTreeMap<String, f64>,
    /// Writing the report, wall seconds.
    report_seconds: f64,
}

fn bench_experiment(name: &str, scale: &str, jobs: Option<u32>) -> Result<ExperimentBench> {
    let dir = std::env::temp_dir().join(format!(
        "layoutlab-bench-{}-{}",
        std::process::id(),
        scale.replace('.', "_")
    ));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let json = dir.join("run.json");
    let mut cmd = std::process::Command::new(std::env::current_exe()?);
    cmd.args(["reproduce", name, "--json"])
        .arg(&json)
        .arg("--out")
        .arg(dir.join("out"))
        .stdout(std::process::Stdio::null());
    if scale != "default" {
        cmd.args(["--scale", scale]);
    }
    if let Some(j) = jobs {
        cmd.args(["--jobs", &j.to_string()]);
    }
    eprintln!("bench: layoutlab reproduce {name} --scale {scale}");
    let t = std::time::Instant::now();
    let status = cmd.status().context("running layoutlab reproduce")?;
    let wall_seconds = t.elapsed().as_secs_f64();
    let text = std::fs::read_to_string(&json);
    let _ = std::fs::remove_dir_all(&dir);
    if !status.success() {
        bail!("layoutlab reproduce {name} --scale {scale} failed ({status})");
    }
    let v: serde_json::Value = serde_json::from_str(&text.context("reading the run's JSON")?)?;
    // Only fsck experiments time their stages; the others have their wall time alone.
    let mut stage_seconds = std::collections::BTreeMap::new();
    for r in v["runs"].as_array().map(Vec::as_slice).unwrap_or_default() {
        if let Some(stages) = r["measured_here"]["stage_seconds"].as_object() {
            for (stage, s) in stages {
                *stage_seconds.entry(stage.clone()).or_insert(0.0) += s.as_f64().unwrap_or(0.0);
            }
        }
    }
    Ok(ExperimentBench {
        experiment: name.to_string(),
        scale: v["scale"].as_f64().unwrap_or(f64::NAN),
        jobs: v["timing"]["jobs"].as_u64().unwrap_or(1),
        wall_seconds,
        stage_seconds,
        report_seconds: v["timing"]["report_seconds"].as_f64().unwrap_or(0.0),
    })
}

/// Each experiment's budget at its default scale, and that of `reproduce all` (issue 32: a new
/// user waits at most two minutes for one experiment and ten for all of them).
const EXPERIMENT_BUDGET_S: f64 = 120.0;
const ALL_BUDGET_S: f64 = 600.0;

/// `bench experiment all`: every shipped experiment at its default scale, its wall time beside
/// its budget.
fn bench_all(jobs: Option<u32>, json: Option<PathBuf>) -> Result<()> {
    let names = layoutlab_experiments::experiment::names();
    let mut results = Vec::new();
    for name in names {
        results.push(bench_experiment(name, "default", jobs)?);
    }
    let mut t = Table::new(
        "every experiment at its default scale: wall time on this machine",
        vec![
            Column::text("experiment"),
            Column::number("scale", None),
            Column::number("wall", Some("s")),
            Column::number("budget", Some("s")),
            Column::text("within"),
        ],
    );
    let total: f64 = results.iter().map(|r| r.wall_seconds).sum();
    for r in &results {
        t.push_row(vec![
            Cell::text(&r.experiment),
            if r.scale.is_finite() {
                Cell::num(r.scale, 3)
            } else {
                Cell::Empty
            },
            Cell::num(r.wall_seconds, 1),
            Cell::num(EXPERIMENT_BUDGET_S, 0),
            Cell::text(if r.wall_seconds <= EXPERIMENT_BUDGET_S {
                "yes"
            } else {
                "NO"
            }),
        ])?;
    }
    t.push_total(vec![
        Cell::text("all"),
        Cell::Empty,
        Cell::num(total, 1),
        Cell::num(ALL_BUDGET_S, 0),
        Cell::text(if total <= ALL_BUDGET_S { "yes" } else { "NO" }),
    ])?;
    Human::new(json.as_deref()).say(&format!("{}\n", t.to_terminal(None)?));
    if let Some(path) = json {
        write_json(&path, &results)?;
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
                     p50 {:.0} µs, p99 {:.0} µs; e2fsck {:.2} s here; closed loop {:.3} s, \
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
            jobs,
            json,
        } if name == "all" => {
            layoutlab_rig::require_root("running the experiments on loop devices")?;
            if scale.iter().any(|s| s.trim() != "default") && scale != ["default", "1"] {
                bail!("bench experiment all runs each experiment at its default scale; --scale does not apply");
            }
            bench_all(jobs, json)
        }
        Command::Experiment {
            name,
            scale,
            jobs,
            json,
        } => {
            layoutlab_rig::require_root("running the experiment's e2fsck on loop devices")?;
            let results = scale
                .iter()
                .map(|s| bench_experiment(&name, s.trim(), jobs))
                .collect::<Result<Vec<_>>>()?;
            let stages = ["plan", "mkfs", "materialize", "traced_check", "replay"];
            let mut t = Table::new(
                &format!("{name}: wall time per stage on this machine"),
                std::iter::once(Column::number("scale", None))
                    .chain(std::iter::once(Column::number("wall", Some("s"))))
                    .chain(std::iter::once(Column::number("jobs", None)))
                    .chain(stages.iter().map(|s| Column::number(s, Some("s"))))
                    .chain(std::iter::once(Column::number("report", Some("s"))))
                    .collect(),
            );
            for r in &results {
                // Experiments that do not time their stages (not fsck) leave them blank.
                let timed = !r.stage_seconds.is_empty();
                let mut row = vec![
                    if r.scale.is_finite() {
                        Cell::num(r.scale, 3)
                    } else {
                        Cell::Empty
                    },
                    Cell::num(r.wall_seconds, 1),
                    Cell::num(r.jobs as f64, 0),
                ];
                row.extend(stages.iter().map(|s| match r.stage_seconds.get(*s) {
                    Some(v) => Cell::num(*v, 1),
                    None if timed => Cell::num(0.0, 1),
                    None => Cell::Empty,
                }));
                row.push(Cell::num(r.report_seconds, 2));
                t.push_row(row)?;
            }
            Human::new(json.as_deref()).say(&format!(
                "{}\nstages are summed over policies, which run at once: they add up to more than the wall time.\n",
                t.to_terminal(None)?
            ));
            if let Some(path) = json {
                write_json(&path, &results)?;
            }
            Ok(())
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
