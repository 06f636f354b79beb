//! `layoutlab reproduce NAME`: run a named experiment and print ours beside the published numbers.
//!
//! The experiments themselves live in the `layoutlab-experiments` crate, one module per
//! operation; this is the glue from flags to [`RunArgs`].

use super::write_json;
use anyhow::Result;
use clap::Args as ClapArgs;
use layoutlab_experiments::{experiment, RunArgs};
use std::path::PathBuf;

/// Arguments of `reproduce`.
#[derive(ClapArgs)]
pub struct Args {
    /// Experiment name (see `layoutlab experiments`), path to an experiment TOML file, or
    /// `all`: every shipped experiment in turn, with one page of every result
    /// (OUT/index.html: question, set-up, ours beside published, plots, the command to rerun
    /// each, the presets and their sources), readable offline and on a phone.
    name: String,
    /// With `all`: only these experiments, comma-separated.
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    only: Option<Vec<String>>,
    /// Shrink the disk and every file together (1.0 = as published). Default: the experiment's.
    #[arg(long)]
    scale: Option<f64>,
    /// Device preset (name or .toml file) to price the traces on; inode-readahead,
    /// request-merging, large-delete and random-read take a comma-separated list (one capture
    /// priced on each; the first is the capture's). Default: the experiment's.
    #[arg(long)]
    device: Option<String>,
    /// Write the results as JSON to PATH ("-" for stdout).
    #[arg(long, value_name = "PATH")]
    json: Option<PathBuf>,
    /// Where images are made while the experiment runs (sparse files). Default for fsck
    /// experiments: a private in-memory file system (tmpfs, capped at half the available
    /// memory) removed afterwards. The kernel's read-ahead depends on how fast the loop device
    /// answers, so images on a disk give a request stream that depends on that disk
    /// (docs/replay.md).
    #[arg(long, value_name = "DIR")]
    workdir: Option<PathBuf>,
    /// Keep the images (and the captured traces as CSV) in the work directory (needs
    /// --workdir: the default one is gone at the end).
    #[arg(long, requires = "workdir")]
    keep: bool,
    /// Where the report (Markdown, HTML, SVG) is written.
    #[arg(long, value_name = "DIR", default_value = "results")]
    out: PathBuf,
    /// Multiply the CPU time measured between requests (2.0 = a CPU half as fast as this one),
    /// or name a CPU preset in cpus/ whose factor F = here / period is used. With
    /// --closed-loop K and F > K, e2fsck itself runs throttled to K/F of one CPU (a cpu
    /// cgroup), and the measured time charges its computing at F (docs/emulate.md).
    #[arg(long, value_parser = cpu_scale_arg)]
    cpu_scale: Option<f64>,
    /// File systems to run, comma-separated: shorthand for `--set file_systems=LIST`
    /// (large-delete: ext3, ext4-2007, ext4, xfs, btrfs) and `--set targets=LIST`
    /// (random-read). Default: the experiment's.
    #[arg(long, value_name = "LIST")]
    fs: Option<String>,
    /// Policies run at once, each with its own image, loop device and traced e2fsck (fsck
    /// experiments; metacluster-aging: the policies of one age). Default: as many as this
    /// machine has CPUs. Predictions do not depend on it (think times come
    /// from each e2fsck's own CPU time). With --closed-loop: one at a time (fsck: one policy,
    /// aging: one cell, each on its own emulated device), whatever is asked.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=64))]
    jobs: Option<u32>,
    /// Also replay the captured traces on variants of the device preset, one borrowed or
    /// assumed value changed at a time (the experiment file's [[sensitivity]] list), on the
    /// file's `alternatives` (other drives of the class and era) and `other_classes` (devices of
    /// another class), with no think time and at each `period_cpus` factor, and report how much
    /// each moves both totals and the reduction (fsck experiments).
    #[arg(long)]
    sensitivity: bool,
    /// Capture closed loop (the operations that take it: `layoutlab experiments --json` says
    /// which, and the others refuse it naming them): the traced work (e2fsck, a delete, a walk,
    /// a benchmark's reads) runs on the emulated device (`device emulate`: requests complete
    /// when the preset's model says, K times faster), and the report gives the time measured
    /// there beside the open-loop replay of the same stream (docs/emulate.md). K defaults to 1.
    #[arg(long, value_name = "K", num_args = 0..=1, default_missing_value = "1")]
    closed_loop: Option<f64>,
    /// The tree walked: shorthand for `--set tree=NAME` (inode-readahead: a population name
    /// or a population .toml file). Default: the experiment's.
    #[arg(long, value_name = "NAME")]
    tree: Option<String>,
    /// The settings swept, comma-separated: shorthand for `--set settings=LIST`
    /// (inode-readahead: inode_readahead_blks values, e.g. 0,8,32 for a quicker run).
    /// Default: the experiment's.
    #[arg(long, value_name = "LIST")]
    settings: Option<String>,
    /// I/O mode: shorthand for `--set modes=MODE` (random-read: buffered, direct, or both:
    /// `modes=buffered,direct`). Default: the experiment's.
    #[arg(long, value_name = "MODE")]
    mode: Option<String>,
    /// Whose e2fsck checks the images (fsck experiments): today (the system's), 1.40.2,
    /// 1.41.4, 1.41.14 (built by `make deps`), or period (the release the experiment's
    /// published runs used).
    #[arg(long, value_name = "VERSION", value_parser = ["today", "1.40.2", "1.41.4", "1.41.14", "period"])]
    e2fsck: Option<String>,
    /// Set a key of the experiment's table for this run, as a sweep's `--set` does (repeatable;
    /// one value, or a comma-separated list for a key whose value is a list), checked by the
    /// experiment's operation before anything runs. `layoutlab experiments --json` lists each
    /// operation's options with their help. E.g. random-read and large-delete
    /// `--set layout=kernel`: today's kernel writes the ext4 files the engine otherwise plans
    /// (the engine's proof).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Write where this run's wall time went as JSON to PATH: `{"wall_seconds",
    /// "stage_seconds": {"plan", "image", "capture", "price", "report", "teardown", "other"}}`, the stages
    /// adding up to the wall time (time when several stages run at once is shared among them;
    /// `layoutlab bench experiment` reads it).
    #[arg(long, value_name = "PATH")]
    stage_times: Option<PathBuf>,
    /// With `all`: up to N experiments at once, each its own process (one failing does not
    /// stop the others). One starts when MemAvailable, less what the running ones are still
    /// expected to take (their expected peak less what their processes hold now) and less
    /// --memory-reserve, covers its expected peak; otherwise it waits and says why. Expected
    /// peaks and the order (longest first) come from a previous all.json (--memory-from, or
    /// OUT/all.json of a run at the same scale): each one's peak resident set or the memory
    /// the machine lost while it ran (its tmpfs and zram pages too), the larger. No experiment
    /// states its need before it runs yet: one with no earlier figure is counted as needing
    /// half the memory available when it is tried (what the experiments' own guards let one
    /// take), so two such do not start together. The page keeps the shipped order.
    /// Default 1: one after another in the shipped order, as before (docs/reproduce-all.md).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=64))]
    parallel: Option<u32>,
    /// With `all --parallel`: an earlier run's all.json whose peak_rss_bytes and
    /// memory_taken_bytes give each experiment's expected need and whose seconds order the run
    /// (longest first).
    #[arg(long, value_name = "ALL.JSON")]
    memory_from: Option<PathBuf>,
    /// With `all --parallel`: memory never counted as free, left to everyone else.
    #[arg(long, value_name = "SIZE", default_value = "4g", value_parser = super::parse_size)]
    memory_reserve: u64,
}

/// Arguments of `experiments`.
#[derive(ClapArgs)]
pub struct ListArgs {
    /// Write the list as JSON to PATH ("-" for stdout).
    #[arg(long, value_name = "PATH")]
    json: Option<PathBuf>,
}

/// List the shipped experiments.
pub fn list(a: ListArgs) -> Result<()> {
    let mut rows = Vec::new();
    for n in experiment::names() {
        let e = experiment::load(n)?;
        let op = e.operation()?;
        // What the operation declares: its options (each with this experiment's value, the
        // run's default) and the capture flags it honours.
        let options: Vec<serde_json::Value> = op
            .options()
            .iter()
            .map(|o| {
                serde_json::json!({
                    "key": o.key,
                    "help": o.help,
                    "flag": o.flag.map(|f| format!("--{f}")),
                    "value": e.params.get(o.key),
                })
            })
            .collect();
        rows.push(serde_json::json!({
            "name": e.name,
            "operation": e.operation,
            "device": e.device,
            "title": e.title,
            "needs_root": op.needs_root(&e),
            "sensitivity": op.supports_sensitivity(),
            "closed_loop": op.supports_closed_loop(),
            "cpu_scale": op.supports_cpu_scale(),
            "options": options,
        }));
        if a.json.is_none() {
            super::emit(&format!("{:<20} {}\n", e.name, e.title), false);
        }
    }
    if let Some(p) = a.json {
        write_json(&p, &rows)?;
    }
    Ok(())
}

/// Run an experiment.
pub fn run(a: Args) -> Result<()> {
    layoutlab_experiments::stages::begin();
    layoutlab_rig::cleanup::install();
    if a.name == "all" {
        if a.stage_times.is_some() {
            anyhow::bail!("--stage-times times one experiment; `reproduce all` gives each one's seconds in all.json");
        }
        return run_all(&a);
    }
    if a.only.is_some() {
        anyhow::bail!("--only goes with `reproduce all`");
    }
    if a.parallel.is_some() || a.memory_from.is_some() {
        anyhow::bail!("--parallel and --memory-from go with `reproduce all` (one experiment's policies at once: --jobs)");
    }
    let exp = resolve(&a)?;
    let args = RunArgs {
        scale: a.scale,
        device: a.device,
        json: a.json,
        workdir: a.workdir,
        keep: a.keep,
        out: a.out,
        cpu_scale: a.cpu_scale,
        jobs: a.jobs,
        sensitivity: a.sensitivity,
        e2fsck: a.e2fsck,
        closed_loop: a.closed_loop,
    };
    layoutlab_experiments::check_capture_flags(&exp, &args)?;
    exp.operation()?.run(&exp, &args)?;
    if let Some(path) = &a.stage_times {
        write_json(path, &layoutlab_experiments::stages::snapshot())?;
    }
    Ok(())
}

/// The experiment `a` runs: the file with every `--set`, the shorthand flags (`--fs`, `--tree`,
/// `--settings`, `--mode`) first as the `--set` entries they stand for, all checked by the
/// experiment's operation before anything runs.
fn resolve(a: &Args) -> Result<layoutlab_experiments::Experiment> {
    let plain = experiment::load(&a.name)?;
    let mut sets = Vec::new();
    for (flag, value) in [
        ("fs", &a.fs),
        ("tree", &a.tree),
        ("settings", &a.settings),
        ("mode", &a.mode),
    ] {
        if let Some(v) = value {
            sets.push(layoutlab_experiments::shorthand_set(&plain, flag, v)?);
        }
    }
    sets.extend(a.set.iter().cloned());
    if sets.is_empty() {
        return Ok(plain);
    }
    layoutlab_experiments::sweep::with_sets(&a.name, &sets)
}

/// `reproduce all`: each experiment as its own `layoutlab reproduce NAME` process (its output
/// kept beside its report), the page rewritten after each one, so that Ctrl-C leaves a page
/// that shows what finished.
fn run_all(a: &Args) -> Result<()> {
    use layoutlab_experiments::all_page::{self, Section, Status};
    use layoutlab_experiments::all_schedule;
    use std::io::IsTerminal;
    use std::sync::{Arc, Mutex};
    use std::time::Instant;

    let names: Vec<String> = match &a.only {
        Some(list) => {
            for n in list {
                if !experiment::names().contains(&n.as_str()) {
                    anyhow::bail!(
                        "unknown experiment '{n}'; valid: {}",
                        experiment::names().join(", ")
                    );
                }
            }
            list.clone()
        }
        None => experiment::names().iter().map(|s| s.to_string()).collect(),
    };
    if a.device.is_some()
        || a.fs.is_some()
        || a.sensitivity
        || a.keep
        || a.mode.is_some()
        || a.tree.is_some()
        || a.settings.is_some()
        || !a.set.is_empty()
    {
        anyhow::bail!("reproduce all runs each experiment as shipped: only --scale, --out, --only, --json, --workdir, --parallel, --memory-from and --memory-reserve apply");
    }
    // A previous run's wall times (the run order, the time left) and peaks (what each is
    // expected to need): --memory-from (read before anything is made), else an earlier run in
    // the same place at this scale.
    let given = a.memory_from.as_deref().map(Hints::read).transpose()?;
    std::fs::create_dir_all(&a.out)
        .map_err(|e| anyhow::anyhow!("creating {}: {e}", a.out.display()))?;
    let out = a.out.canonicalize()?;
    let hints = match given {
        Some(h) => h,
        None => {
            let p = out.join("all.json");
            let h = if p.exists() {
                Hints::read(&p).ok()
            } else {
                None
            };
            match h {
                Some(mut h) if earlier_scale(&p) == a.scale => {
                    h.source = format!("from the previous run in {}", out.display());
                    h
                }
                // another scale's peaks say nothing of this one's; its times still order
                Some(h) => Hints {
                    seconds: h.seconds,
                    source:
                        "unknown (no --memory-from; the previous run here was at another scale)"
                            .into(),
                    ..Hints::default()
                },
                None => Hints {
                    source: "unknown (no --memory-from, no previous run here)".into(),
                    ..Hints::default()
                },
            }
        }
    };
    let parallel = a.parallel.unwrap_or(1) as usize;
    let reserve_bytes = a.memory_reserve;
    let mut sections = Vec::new();
    let mut presets: Vec<(String, String)> = Vec::new();
    for n in &names {
        let exp = experiment::load(n)?;
        let text = layoutlab_experiments::SHIPPED
            .iter()
            .find(|(k, _)| k == n)
            .map(|(_, t)| *t)
            .unwrap_or("");
        let mut command = format!("layoutlab reproduce {n}");
        if let Some(s) = a.scale {
            command.push_str(&format!(" --scale {s}"));
        }
        all_page::add_preset(&mut presets, &exp.device);
        sections.push(Section {
            name: n.clone(),
            title: exp.title.clone(),
            setup: all_page::setup_of(text),
            command,
            status: Status::Pending,
            seconds: None,
            span_seconds: None,
            output: String::new(),
            error: None,
            report: None,
            report_href: format!("{n}/"),
            device: exp.device.clone(),
        });
    }
    let title = "layoutlab: every experiment";
    let note = format!(
        "Generated by `layoutlab reproduce all{}{}` on {}. Every number is from this run; published numbers only sit beside ours.",
        a.scale.map_or(String::new(), |s| format!(" --scale {s}")),
        if parallel > 1 { format!(" --parallel {parallel}") } else { String::new() },
        std::process::Command::new("date").arg("-u").output().ok().map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string()).unwrap_or_default()
    );
    let state = Arc::new(Mutex::new(sections));
    let write_page = {
        let out = out.clone();
        let presets = presets.clone();
        let note = note.clone();
        move |sections: &[Section]| {
            let page = all_page::render(title, sections, &presets, &note);
            // Whole or not at all: written beside and renamed over, so a reader (a browser's
            // reload, a test polling it) never sees it half written, and neither does anyone
            // after the signal's cleanup `_exit`s while a worker thread is mid-write (a loaded
            // CI run found the page empty after Ctrl-C that way).
            let part = out.join(".index.html.part");
            if std::fs::write(&part, page).is_ok() {
                let _ = std::fs::rename(&part, out.join("index.html"));
            }
        }
    };
    write_page(&state.lock().unwrap());
    // On Ctrl-C or SIGTERM: the running experiment's own process cleans up after itself; the
    // page marks it interrupted and keeps what finished.
    let live: Arc<Mutex<Vec<u32>>> = Arc::new(Mutex::new(Vec::new()));
    let on_signal = {
        let state = Arc::clone(&state);
        let write_page = write_page.clone();
        let live = Arc::clone(&live);
        layoutlab_rig::cleanup::register("reproduce all: the page", move || {
            // The running experiment is told to stop (SIGTERM: it tears down its own devices)
            // and waited for, so nothing outlives this process.
            let pids = live.lock().map(|l| l.clone()).unwrap_or_default();
            super::stop_children(&pids);
            if let Ok(mut s) = state.lock() {
                for sec in s.iter_mut() {
                    if sec.status == Status::Running {
                        sec.status = Status::Interrupted;
                    }
                }
                write_page(&s);
            }
        })
    };
    let tty = std::io::stderr().is_terminal();
    let total = names.len() as u64;
    let bar = if tty {
        let b = indicatif::ProgressBar::new(total);
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "[{elapsed_precise}] {bar:30} {pos}/{len} {msg}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        b.enable_steady_tick(std::time::Duration::from_millis(500));
        Some(b)
    } else {
        None
    };
    let say = |line: String| match &bar {
        Some(b) => b.println(line),
        None => eprintln!("{line}"),
    };
    // What each is expected to need, and in what order they are tried (N = 1: the shipped
    // order, as before).
    let candidates: Vec<all_schedule::Candidate> = names
        .iter()
        .enumerate()
        .map(|(i, n)| all_schedule::Candidate {
            index: i,
            need_bytes: hints.peak_bytes.get(n).copied(),
            expected_seconds: hints.seconds.get(n).copied(),
        })
        .collect();
    let mut pending = if parallel > 1 {
        all_schedule::run_order(&candidates)
    } else {
        candidates.clone()
    };
    if parallel > 1 {
        let unknown: Vec<&str> = names
            .iter()
            .filter(|n| !hints.peak_bytes.contains_key(*n))
            .map(String::as_str)
            .collect();
        say(format!(
            "up to {parallel} at once, {} kept free; expected needs {}{}",
            gb(reserve_bytes),
            hints.source,
            if unknown.is_empty() {
                String::new()
            } else {
                format!(
                    "; unknown for {} (each counted as half the memory available when it is tried)",
                    unknown.join(", ")
                )
            }
        ));
    }
    let started = Instant::now();
    let exe = std::env::current_exe()?;
    let mut results: Vec<(usize, serde_json::Value)> = Vec::new();
    let mut failed = 0;
    let mut done = 0usize;
    /// One running experiment: its shipped index, process id, expected need and start.
    struct Live {
        index: usize,
        pid: u32,
        need_bytes: u64,
        from_seconds: f64,
        /// MemAvailable when it started, and the most it has fallen below that since (sampled
        /// every 2 s at most): what it took, page cache aside, tmpfs and zram pages included,
        /// and what ran beside it or anyone else took meanwhile.
        available_at_start: u64,
        most_taken_bytes: u64,
        /// Whether another experiment ran at any moment beside it.
        beside: bool,
    }
    // An experiment that fails while another runs beside it had part of the machine: half
    // the memory available when it started for its in-memory work directory (metadata-on-ssd-
    // ext3's 9 GB image beside metacluster-aging, 2026-11-28), the rig lock's turns. It runs
    // again once, alone, after the others; its first attempt is kept in all.json.
    let mut first_attempts: std::collections::BTreeMap<usize, serde_json::Value> =
        Default::default();
    let mut running: Vec<Live> = Vec::new();
    let (ended_tx, ended_rx) = std::sync::mpsc::channel();
    // Who was last said to wait, so that a wait is printed once, not at every look at memory
    // (its figures move by megabytes between looks).
    let mut last_wait: Vec<usize> = Vec::new();
    loop {
        // Start what may start now.
        while !pending.is_empty() {
            let held: Vec<all_schedule::Running> = running
                .iter()
                .map(|r| all_schedule::Running {
                    index: r.index,
                    need_bytes: r.need_bytes,
                    held_bytes: tree_rss_bytes(r.pid),
                })
                .collect();
            let limits = all_schedule::Limits {
                parallel,
                available_bytes: layoutlab_rig::mem_available_bytes()?,
                reserve_bytes,
            };
            let (i, need_bytes) = match all_schedule::next(&pending, &held, &limits) {
                all_schedule::Next::Start {
                    index,
                    alone,
                    need_bytes,
                } => {
                    if first_attempts.contains_key(&index) {
                        say(format!(
                            "{} runs again, alone: it failed beside another experiment",
                            names[index]
                        ));
                    } else if alone && parallel > 1 {
                        say(format!(
                            "{} starts alone: it is expected to need {}, more than the {} free",
                            names[index],
                            gb(need_bytes),
                            gb(all_schedule::free_bytes(&held, &limits))
                        ));
                    }
                    (index, need_bytes)
                }
                all_schedule::Next::Memory(waits) => {
                    let why = format!(
                        "waiting for memory: {} free ({} available, {} kept free, the running ones' expected peaks less what they hold); {}",
                        gb(waits[0].free_bytes),
                        gb(limits.available_bytes),
                        gb(reserve_bytes),
                        waits
                            .iter()
                            .map(|w| format!("{} needs {}", names[w.index], gb(w.need_bytes)))
                            .collect::<Vec<_>>()
                            .join(", ")
                    );
                    let who: Vec<usize> = waits.iter().map(|w| w.index).collect();
                    if who != last_wait {
                        say(why);
                        last_wait = who;
                    }
                    break;
                }
                all_schedule::Next::Full | all_schedule::Next::Nothing => break,
            };
            pending.retain(|c| c.index != i);
            last_wait.clear();
            let n = &names[i];
            let dir = out.join(n);
            std::fs::create_dir_all(&dir)?;
            state.lock().unwrap()[i].status = Status::Running;
            write_page(&state.lock().unwrap());
            let mut cmd = std::process::Command::new(&exe);
            cmd.arg("reproduce")
                .arg(n)
                .arg("--out")
                .arg(&out)
                .arg("--json")
                .arg(dir.join("result.json"))
                .arg("--stage-times")
                .arg(dir.join("stages.json"))
                .stdout(std::fs::File::create(dir.join("output.txt"))?)
                .stderr(std::fs::File::create(dir.join("log.txt"))?);
            if let Some(s) = a.scale {
                cmd.arg("--scale").arg(s.to_string());
            }
            if let Some(w) = &a.workdir {
                cmd.arg("--workdir").arg(w);
            }
            let from_seconds = started.elapsed().as_secs_f64();
            let available_at_start = layoutlab_rig::mem_available_bytes()?;
            let child = super::spawn_child(&mut cmd, &live)?;
            let pid = child.id();
            let beside = !running.is_empty();
            for r in &mut running {
                r.beside = true;
            }
            running.push(Live {
                index: i,
                pid,
                need_bytes,
                from_seconds,
                available_at_start,
                most_taken_bytes: 0,
                beside,
            });
            let tx = ended_tx.clone();
            // wait4 on this child alone: the others are waited for by their own threads
            std::thread::spawn(move || {
                let _ = tx.send((pid, layoutlab_rig::wait_with_usage(child)));
            });
            let left: f64 = pending
                .iter()
                .filter_map(|c| hints.seconds.get(&names[c.index]))
                .sum();
            let estimate = if hints.seconds.is_empty() {
                String::new()
            } else {
                format!(", about {:.0} s of runs left to start", left.max(0.0))
            };
            // the one that started first, then those beside it
            let beside: Vec<&str> = running
                .iter()
                .filter(|r| r.index != i)
                .map(|r| names[r.index].as_str())
                .collect();
            let beside = if beside.is_empty() {
                String::new()
            } else {
                format!(" beside {}", beside.join(", "))
            };
            let msg = format!("running {n}{beside} ({done} done{estimate})");
            match &bar {
                Some(b) => b.set_message(msg),
                None => eprintln!("[{}/{}] {msg}", total as usize - pending.len(), total),
            }
        }
        if running.is_empty() {
            break;
        }
        // Wait for one to end; look at memory again every few seconds while some wait for it.
        let ended = ended_rx.recv_timeout(std::time::Duration::from_secs(2));
        let available = layoutlab_rig::mem_available_bytes()?;
        for r in &mut running {
            r.most_taken_bytes = r
                .most_taken_bytes
                .max(r.available_at_start.saturating_sub(available));
        }
        let (pid, waited) = match ended {
            Ok(e) => e,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => continue,
            Err(e) => anyhow::bail!("waiting for an experiment: {e}"),
        };
        let (status, usage) = waited?;
        let k = running
            .iter()
            .position(|r| r.pid == pid)
            .expect("an ended experiment was running");
        let ended = running.remove(k);
        live.lock().unwrap().retain(|p| *p != pid);
        let i = ended.index;
        let n = &names[i];
        let dir = out.join(n);
        let to_seconds = started.elapsed().as_secs_f64();
        let secs = to_seconds - ended.from_seconds;
        let log = std::fs::read_to_string(dir.join("log.txt")).unwrap_or_default();
        {
            let mut s = state.lock().unwrap();
            let sec = &mut s[i];
            sec.seconds = Some(secs);
            sec.span_seconds = Some((ended.from_seconds, to_seconds));
            sec.output = std::fs::read_to_string(dir.join("output.txt")).unwrap_or_default();
            sec.report = all_page::load_report(&dir);
            if status.success() {
                sec.status = Status::Done;
            } else if layoutlab_rig::cleanup::signal_caught() {
                sec.status = Status::Interrupted;
                sec.error = Some("stopped by a signal (Ctrl-C or SIGTERM)".into());
                write_page(&s);
                drop(s);
                // the signal's cleanup exits the process; nothing more starts
                loop {
                    std::thread::sleep(std::time::Duration::from_secs(1));
                }
            } else if ended.beside && parallel > 1 && !first_attempts.contains_key(&i) {
                let lines: Vec<&str> = log.lines().collect();
                let error = lines[lines.len().saturating_sub(15)..].join("\n");
                sec.status = Status::Pending;
                sec.error = Some(format!(
                    "failed beside another experiment after {secs:.1} s; to run again alone. \
                     Its error then:\n{error}"
                ));
                first_attempts.insert(
                    i,
                    serde_json::json!({
                        "seconds": secs,
                        "from_seconds": ended.from_seconds,
                        "to_seconds": to_seconds,
                        "error": error,
                    }),
                );
                pending.push(all_schedule::Candidate {
                    index: i,
                    // More than any machine: it starts only when nothing runs, and nothing
                    // starts beside it.
                    need_bytes: Some(u64::MAX),
                    expected_seconds: None,
                });
                write_page(&s);
                drop(s);
                // The second attempt writes its own log.
                let first_log = dir.join("log-first-attempt.txt");
                let _ = std::fs::rename(dir.join("log.txt"), &first_log);
                say(format!(
                    "{n} failed beside another experiment after {secs:.1} s; it runs again alone \
                     after the others (its log: {})",
                    first_log.display()
                ));
                continue;
            } else {
                sec.status = Status::Failed;
                let lines: Vec<&str> = log.lines().collect();
                sec.error = Some(lines[lines.len().saturating_sub(15)..].join("\n"));
                failed += 1;
            }
            if status.success() {
                // A first attempt's error stays in all.json (`first_attempt`), not on the page.
                sec.error = None;
            }
            write_page(&s);
        }
        let result: serde_json::Value = std::fs::read_to_string(dir.join("result.json"))
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or(serde_json::Value::Null);
        // Where its time went (the run's own clock; absent if it failed).
        let stage_seconds: serde_json::Value = std::fs::read_to_string(dir.join("stages.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .map_or(serde_json::Value::Null, |v| v["stage_seconds"].clone());
        results.push((
            i,
            serde_json::json!({
                "name": n,
                "status": if status.success() { "done" } else { "failed" },
                "seconds": secs,
                "from_seconds": ended.from_seconds,
                "to_seconds": to_seconds,
                "expected_need_bytes": ended.need_bytes,
                "cpu_seconds": usage.cpu_seconds,
                "peak_rss_bytes": usage.peak_rss_bytes,
                "memory_taken_bytes": ended.most_taken_bytes,
                "stage_seconds": stage_seconds,
                "result": result,
                "first_attempt": first_attempts.get(&i),
            }),
        ));
        done += 1;
        match &bar {
            Some(b) => b.inc(1),
            None => eprintln!(
                "[{done}/{total}] {n}: {} in {secs:.1} s (total {:.0} s)",
                if status.success() { "done" } else { "FAILED" },
                started.elapsed().as_secs_f64()
            ),
        }
    }
    if let Some(b) = &bar {
        b.finish_with_message(format!("{} experiments", total));
    }
    layoutlab_rig::cleanup::forget(&on_signal);
    let all = serde_json::json!({
        "seconds": started.elapsed().as_secs_f64(),
        "scale": a.scale,
        "parallel": parallel,
        "experiments": all_schedule::in_shipped_order(results),
    });
    std::fs::write(
        out.join("all.json"),
        serde_json::to_string_pretty(&all)? + "\n",
    )?;
    if let Some(p) = &a.json {
        write_json(p, &all)?;
    }
    eprintln!(
        "page: {} ({} experiments in {:.0} s{})",
        out.join("index.html").display(),
        total,
        started.elapsed().as_secs_f64(),
        if failed > 0 {
            format!(", {failed} FAILED")
        } else {
            String::new()
        }
    );
    if failed > 0 {
        anyhow::bail!("{failed} experiment(s) failed; their errors are on the page");
    }
    Ok(())
}

/// The scale an earlier `all.json` records (None: the experiments' own, or not recorded).
fn earlier_scale(path: &std::path::Path) -> Option<f64> {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|v| v["scale"].as_f64())
}

/// Gibibytes, for messages (the unit --memory-reserve is given in).
fn gb(bytes: u64) -> String {
    format!("{:.2} GiB", bytes as f64 / (1u64 << 30) as f64)
}

/// What a previous `all.json` says of each experiment: its wall seconds (the run order) and its
/// peak resident set (its expected need), and where that came from.
#[derive(Default)]
struct Hints {
    seconds: std::collections::BTreeMap<String, f64>,
    peak_bytes: std::collections::BTreeMap<String, u64>,
    source: String,
}

impl Hints {
    /// Reads `path` (an `all.json`); a missing file gives no hints, a bad one is an error.
    fn read(path: &std::path::Path) -> Result<Hints> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| anyhow::anyhow!("reading {}: {e}", path.display()))?;
        let v: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| anyhow::anyhow!("{} is not an all.json: {e}", path.display()))?;
        let xs = v["experiments"].as_array().ok_or_else(|| {
            anyhow::anyhow!(
                "{} is not an all.json (no \"experiments\" list)",
                path.display()
            )
        })?;
        let mut h = Hints {
            source: format!(
                "from what {} measured (each one's peak resident set or the memory taken while it ran, the larger; scale {})",
                path.display(),
                match v.get("scale") {
                    Some(serde_json::Value::Number(s)) => s.to_string(),
                    Some(serde_json::Value::Null) => "each one's default".into(),
                    _ => "not recorded".into(),
                }
            ),
            ..Hints::default()
        };
        for x in xs {
            let Some(name) = x["name"].as_str() else {
                continue;
            };
            // A run that failed stopped early: its seconds and memory are not what the
            // experiment takes (metadata-on-ssd-ext3, refused for its image beside
            // metacluster-aging after 7.4 s and 0.56 GB, was then counted as needing 0.56 GB
            // and started beside it again). Nothing said: counted as unknown.
            if x["status"].as_str().is_some_and(|s| s != "done") {
                continue;
            }
            if let Some(s) = x["seconds"].as_f64() {
                h.seconds.insert(name.to_string(), s);
            }
            // its processes' peak, or what the machine lost while it ran (its tmpfs and
            // zram pages too), whichever is larger
            let peak = x["peak_rss_bytes"].as_u64();
            let taken = x["memory_taken_bytes"].as_u64();
            if let Some(b) = peak.max(taken) {
                h.peak_bytes.insert(name.to_string(), b);
            }
        }
        Ok(h)
    }
}

/// Resident bytes of `pid` and every process under it now (their sum: what they hold in memory
/// beside one another; pages they share are counted twice, which only errs on the safe side).
fn tree_rss_bytes(pid: u32) -> u64 {
    let mut parent_of = Vec::new();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for e in dir.flatten() {
            let Some(p) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default();
            // the field after the command's closing parenthesis is the state, then the parent
            let ppid = stat
                .rsplit_once(')')
                .and_then(|(_, r)| r.split_whitespace().nth(1)?.parse::<u32>().ok());
            if let Some(pp) = ppid {
                parent_of.push((p, pp));
            }
        }
    }
    tree_of(pid, &parent_of)
        .iter()
        .filter_map(|p| {
            let status = std::fs::read_to_string(format!("/proc/{p}/status")).ok()?;
            let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
            line.split_whitespace().nth(1)?.parse::<u64>().ok()
        })
        .sum::<u64>()
        * 1024 // VmRSS is in kB
}

/// `pid` and every process under it, from (process, parent) pairs.
fn tree_of(pid: u32, parent_of: &[(u32, u32)]) -> Vec<u32> {
    let mut tree = vec![pid];
    let mut k = 0;
    while k < tree.len() {
        let p = tree[k];
        tree.extend(
            parent_of
                .iter()
                .filter(|(c, pp)| *pp == p && *c != p)
                .map(|(c, _)| *c),
        );
        k += 1;
    }
    tree
}

/// `--cpu-scale`: a positive number, or a CPU preset's factor (see `cpus/`).
fn cpu_scale_arg(arg: &str) -> Result<f64, String> {
    layoutlab_device::cpu::resolve_cpu_scale(arg).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tree_is_the_process_and_everything_under_it() {
        // 1 ─ 10 ─ 11 ─ 12, 10 ─ 13; 20 elsewhere
        let pairs = [(10, 1), (11, 10), (12, 11), (13, 10), (20, 1)];
        let mut t = tree_of(10, &pairs);
        t.sort_unstable();
        assert_eq!(t, [10, 11, 12, 13]);
        assert_eq!(tree_of(12, &pairs), [12]);
    }

    #[test]
    fn hints_take_the_larger_of_peak_and_memory_taken() {
        let p = std::env::temp_dir().join(format!("ll-hints-{}.json", std::process::id()));
        std::fs::write(
            &p,
            r#"{"scale": 0.5, "experiments": [
                {"name": "a", "seconds": 3.0, "peak_rss_bytes": 100, "memory_taken_bytes": 700},
                {"name": "b", "seconds": 1.0, "peak_rss_bytes": 500, "memory_taken_bytes": 20},
                {"name": "c", "seconds": null, "peak_rss_bytes": null},
                {"name": "d", "peak_rss_bytes": 9},
                {"name": "e", "status": "failed", "seconds": 7.4, "peak_rss_bytes": 5},
                {"name": "f", "status": "done", "seconds": 9.0, "peak_rss_bytes": 6}
            ]}"#,
        )
        .unwrap();
        let h = Hints::read(&p).unwrap();
        assert_eq!(h.peak_bytes.get("a"), Some(&700), "tmpfs/zram pages count");
        assert_eq!(h.peak_bytes.get("b"), Some(&500));
        assert_eq!(h.peak_bytes.get("c"), None, "a failed run says nothing");
        assert_eq!(
            h.peak_bytes.get("d"),
            Some(&9),
            "an all.json from before the field"
        );
        assert_eq!(h.seconds.get("a"), Some(&3.0));
        assert_eq!(
            h.peak_bytes.get("e"),
            None,
            "a failed run's memory is no need"
        );
        assert_eq!(h.seconds.get("e"), None, "nor its seconds a duration");
        assert_eq!(
            (h.seconds.get("f"), h.peak_bytes.get("f")),
            (Some(&9.0), Some(&6))
        );
        assert_eq!(earlier_scale(&p), Some(0.5));
        std::fs::write(&p, "{\"seconds\": 1}").unwrap();
        let e = Hints::read(&p).err().unwrap().to_string();
        assert!(e.contains("no \"experiments\" list"), "{e}");
        std::fs::remove_file(&p).unwrap();
    }
}
