//! The "fsck" operation's pipeline: for every policy, plan the workload, make the image, and
//! check it with the real e2fsck under trace, priced on the experiment's device
//! ([`crate::steps::check`]), several policies at once.
//!
//! Every number reported comes from the replay of a real e2fsck trace; the published numbers
//! are carried along only to be printed beside ours.

use super::report::{alternatives, render};
use super::sensitivity;
use super::FsckSpec;
use crate::output::Human;
use crate::steps::check::{progress, traced_e2fsck};
pub use crate::steps::check::{
    ClosedLoopRun, MeasuredHere, PassResult, PolicyRun, RunOptions, StageSeconds,
};
use crate::{Experiment, RunArgs};
use anyhow::{bail, Context, Result};
use layoutlab_layout::geometry::Geometry;
use layoutlab_layout::mkfs::MkfsProfile;
use layoutlab_layout::policy::{self, PolicyParams};
use std::path::PathBuf;
use std::time::Instant;

/// Run the experiment (every policy) and report it.
pub fn run_fsck(exp: &Experiment, a: &RunArgs) -> Result<()> {
    let device = &a.device_or(exp);
    let out_dir = &a.out_dir(exp);
    let spec: FsckSpec = exp.params()?;
    let h = Human::new(a.json.as_deref());
    crate::support::warn_if_leftovers();
    // A period e2fsck that is not built fails here, before any image is made.
    let e2fsprogs = a.e2fsprogs(spec.period_e2fsprogs.as_deref())?;
    e2fsprogs.program("e2fsck")?;
    let scale = a.run_scale(exp)?;
    let cpu_scale = a.cpu_scale.unwrap_or(spec.cpu_scale);
    if a.sensitivity {
        sensitivity::check(
            device,
            &exp.sensitivity,
            &alternatives(exp, device),
            &exp.period_cpus,
        )?;
    }
    if a.workdir.is_none() {
        layoutlab_rig::require_root("running e2fsck on a loop device under block tracing")?;
    }
    let (workdir, _memory) =
        crate::support::work_dir_noting(a.workdir.as_deref(), "e2fsck issues")?;
    eprintln!(
        "{} — scale {scale} on {device}; images in {}",
        exp.title,
        workdir.display()
    );
    let opts = RunOptions {
        scale,
        device: device.to_string(),
        workdir: workdir.clone(),
        keep: a.keep,
        cpu_scale,
        // Closed loop measures time on this machine: one policy at a time, so that the
        // policies do not slow each other's route.
        jobs: match (a.closed_loop, a.jobs) {
            (Some(_), _) => 1,
            (None, Some(j)) => j as usize,
            (None, None) => std::thread::available_parallelism().map_or(1, |n| n.get()),
        },
        e2fsck: e2fsprogs,
        closed_loop: a.closed_loop,
    };
    let started = std::time::Instant::now();
    let runs = run(exp, &opts)?;
    let experiment_seconds = started.elapsed().as_secs_f64();
    let _reporting = crate::stages::enter(crate::stages::REPORT);
    render(
        exp,
        a,
        device,
        out_dir,
        (scale, cpu_scale),
        &workdir,
        &runs,
        &h,
        Some((opts.jobs, started, experiment_seconds)),
    )
}

/// Run the fsck operation for every policy of `exp`.
pub fn run(exp: &Experiment, opts: &RunOptions) -> Result<Vec<PolicyRun>> {
    let spec: FsckSpec = exp.params()?;
    let spec = &spec;
    if !(opts.scale > 0.0 && opts.scale <= 1.0) {
        bail!("--scale must be in (0, 1], got {}", opts.scale);
    }
    // Resolve every name before any work, so a typo fails at once and changes nothing.
    let population = crate::stages::timed(crate::stages::PLAN, || {
        spec.population(opts.scale)
            .with_context(|| format!("workload of experiment '{}'", exp.name))
    })?;
    let policies = spec
        .policies
        .iter()
        .map(|p| policy::by_name(p, &PolicyParams::new()))
        .collect::<Result<Vec<_>, _>>()?;
    // Each policy's mkfs profile and the file system it makes (usually one for all).
    let formats = spec
        .policies
        .iter()
        .map(|p| -> Result<(MkfsProfile, Geometry)> {
            crate::steps::plan::format(spec.mkfs_profile_of(p), population.fs_bytes)
        })
        .collect::<Result<Vec<_>>>()?;
    // a file system larger than the drive is priced on as many of them as hold it
    crate::steps::price::linear_device(&opts.device, population.fs_bytes.div_ceil(512))?;
    if let Some(fast) = &spec.fast_device {
        crate::steps::price::check_faster(fast, &opts.device)?;
    }
    layoutlab_rig::require_root("running e2fsck on a loop device under block tracing")?;
    std::fs::create_dir_all(&opts.workdir)
        .with_context(|| format!("creating work directory {}", opts.workdir.display()))?;

    // Never adopt (and so remove) a file we did not make; refuse before any work.
    for pol in &policies {
        let path = image_path(exp, opts, pol.name());
        if path.exists() {
            bail!(
                "{} already exists (from a --keep run?); remove it or choose another --workdir",
                path.display()
            );
        }
    }
    // The images share the work directory: each must fit alone before any is made (its plan's
    // blocks are counted once planned), and at once only as many as fit together.
    let budget = crate::steps::image::SpaceBudget::new(&opts.workdir)?;
    for (pol, (profile, geometry)) in policies.iter().zip(&formats) {
        let (need, detail) =
            crate::steps::image::image_need(&opts.workdir, profile, geometry, None)?;
        budget.check(&format!("the {} image", pol.name()), need, &detail)?;
    }
    let jobs = opts.jobs.clamp(1, policies.len().max(1));
    eprintln!(
        "{} policies, {jobs} at a time: {}",
        policies.len(),
        spec.policies.join(", ")
    );
    let run_policy = |pol: &dyn policy::Policy,
                      (profile, geometry): &(MkfsProfile, Geometry)|
     -> Result<PolicyRun> {
        let t = Instant::now();
        let planning = crate::stages::enter(crate::stages::PLAN);
        let plan = crate::steps::plan::checked(pol, geometry, &population, exp.seed)?;
        let plan_seconds = t.elapsed().as_secs_f64();
        drop(planning);
        progress(
            pol.name(),
            &format!(
                "planned {} inodes, {} indirect blocks in {:.1} s",
                plan.inodes.len(),
                plan.mapping_blocks(),
                t.elapsed().as_secs_f64()
            ),
        );
        let image_path = image_path(exp, opts, pol.name());
        let (need, detail) =
            crate::steps::image::image_need(&opts.workdir, profile, geometry, Some(&plan))?;
        progress(
            pol.name(),
            &format!(
                "its image needs about {:.2} GB in {} (of {:.2} GB free)",
                need as f64 / 1e9,
                opts.workdir.display(),
                budget.free_bytes() as f64 / 1e9
            ),
        );
        // declared before the image, so given back only after the image is removed
        let held = budget.hold(&format!("the {} image", pol.name()), need, &detail)?;
        // kept only after a successful run with --keep: a half-written image never stays
        let t = Instant::now();
        let image = crate::stages::timed(crate::stages::IMAGE, || {
            crate::steps::image::make_image(&image_path, profile, geometry)
        })?;
        let mkfs_seconds = t.elapsed().as_secs_f64();
        let mut run = traced_e2fsck(
            &spec.check_spec(),
            opts,
            geometry,
            &plan,
            image.path(),
            mkfs_seconds,
        )?;
        run.measured_here.stage_seconds.plan = plan_seconds;
        if let Some(end) = policy::metadata_region_end(pol.name(), &PolicyParams::new(), geometry)?
        {
            let fp = policy::ext4_meta_ssd::footprint(&plan, geometry, end);
            if fp.overflow_blocks > 0 {
                progress(
                    pol.name(),
                    &format!(
                        "the metadata region (blocks 0..{end}) is full: {} metadata blocks \
                         overflowed to the data area, next to their goals",
                        fp.overflow_blocks
                    ),
                );
            }
            run.region = Some(fp);
        }
        if opts.keep {
            held.keep();
        }
        Ok(PolicyRun {
            image: opts.keep.then(|| image.keep()),
            ..run
        })
    };
    // Work queue: each worker takes the next policy; results keep the policies' order.
    crate::support::run_queue(policies.len(), jobs, |i| {
        let pol = &policies[i];
        eprintln!("[{}/{}] {}", i + 1, policies.len(), pol.name());
        run_policy(pol.as_ref(), &formats[i]).with_context(|| format!("policy {}", pol.name()))
    })
}

fn image_path(exp: &Experiment, opts: &RunOptions, policy: &str) -> PathBuf {
    opts.workdir.join(format!("{}-{policy}.img", exp.name))
}

/// A fixed pair of runs (no root, no kernel): what the renderer's golden test draws.
#[cfg(test)]
pub(crate) fn fixture_runs() -> Vec<PolicyRun> {
    use layoutlab_device::replay::ThinkSource;
    use layoutlab_layout::BlockClasses;
    const CSV: &str = "issue_ns,complete_ns,op,sector,sectors,flags,tag
0,100000,read,0,8,sync|meta,setup
200000,300000,read,2048,256,meta,pass1
400000,500000,read,409600,8,meta,pass1
600000,700000,write,8192,16,sync,pass1
800000,900000,read,1638400,64,meta,pass2
1000000,1100000,read,4096,8,meta,pass5
";
    let make = |policy: &str, k: f64| {
        let trace = layoutlab_trace::csv::read(CSV, "fixture").expect("fixture trace");
        let requests: Vec<_> = (0..trace.requests.len())
            .map(|i| layoutlab_device::replay::ReplayedRequest {
                issue_ns: i as f64 * 3e9 * k,
                start_ns: i as f64 * 3e9 * k + 1e8,
                complete_ns: i as f64 * 3e9 * k + 2.5e9 * k,
            })
            .collect();
        let replayed = layoutlab_device::replay::Replayed {
            requests,
            wall_ns: 18e9 * k,
            io_busy_ns: 15e9 * k,
            cpu_not_overlapped_ns: 3e9 * k,
            ..Default::default()
        };
        let passes = vec![
            PassResult {
                pass: 0,
                seconds: 3.0 * k,
                mb_read: 12.5,
                requests: 1,
            },
            PassResult {
                pass: 1,
                seconds: 9.0 * k,
                mb_read: 300.25,
                requests: 3,
            },
            PassResult {
                pass: 2,
                seconds: 3.0 * k,
                mb_read: 40.0,
                requests: 1,
            },
            PassResult {
                pass: 5,
                seconds: 3.0 * k,
                mb_read: 1.5,
                requests: 1,
            },
        ];
        PolicyRun {
            policy: policy.to_string(),
            e2fsck: "today".to_string(),
            fsck_clean: true,
            indirect_blocks: 1234,
            extent_mapped: false,
            indirect_blocks_read: 1234,
            total_seconds: 18.0 * k,
            io_seconds: 15.0 * k,
            cpu_seconds: 3.0 * k,
            mb_read: passes.iter().map(|p| p.mb_read).sum(),
            requests: trace.requests.len() as u64,
            capture_queue: None,
            measured_here: MeasuredHere {
                real_seconds: 4.2 * k,
                user_seconds: 0.1,
                sys_seconds: 0.2,
                scheduler_cpu_seconds: Some(0.31),
                scheduler_cpu_in_trace_seconds: Some(0.25),
                scheduler_cpu_outside_trace_seconds: Some(0.06),
                think_source: ThinkSource::Cpu,
                think_seconds: 0.2,
                think_wall_seconds: 0.5,
                stage_seconds: StageSeconds::default(),
                // one run with e2fsck's -tt "Peak memory" (1.40.2's at the default scale), one
                // without: the summary prints 3.4 MB and an empty cell
                e2fsck_tt: if k == 1.0 {
                    vec![layoutlab_rig::Section {
                        label: "Peak memory".into(),
                        real_s: 1.1,
                        user_s: 0.1,
                        sys_s: 0.0,
                        memory: "1549k/1888k (1344k/206k)".into(),
                        read_mib: None,
                        write_mib: None,
                        rate_mib_s: None,
                    }]
                } else {
                    Vec::new()
                },
                capture_ring: None,
                e2fsck_real_time: false,
                cache_drops: 0,
                lock_wait_seconds: 0.0,
            },
            fragmented_files: 7,
            e2fsck_vitals: None,
            file_data_bytes: 987_654_321,
            passes,
            region: None,
            image: None,
            closed_loop: None,
            trace,
            cpu_outside_trace_seconds: 0.0,
            cpu_outside_trace_seconds_here: 0.0,
            replayed,
            served: Vec::new(),
            classes: BlockClasses::default(),
        }
    };
    vec![make("ext3-2007", 1.0), make("ext3-metacluster", 0.4)]
}
