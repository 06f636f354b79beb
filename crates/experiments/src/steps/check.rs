//! The e2fsck check under trace, one step that the fsck and aging operations both compose:
//! write a plan into its image through libext2fs, run the real `e2fsck -fn -tt` on it through
//! a loop device (or the emulated device, closed loop) under block tracing, and price the trace
//! on the run's device ([`crate::steps::price`]), per pass.
//!
//! It owns the check's options, its result ([`PolicyRun`]) and the mapping from e2fsck's
//! passes to the trace's tags; it does not own which policies, populations or ages are checked
//! (the operations), nor how a plan or an image is made ([`crate::steps::plan`],
//! [`crate::steps::image`]). Every number comes from the replay of a real e2fsck trace.

use anyhow::{bail, Result};
use layoutlab_device::replay::{think_summary, Replayed, ThinkSource};
use layoutlab_layout::geometry::Geometry;
use layoutlab_layout::{BlockClasses, Plan};
use layoutlab_rig::{E2fsprogs, FsckOptions, LoopDevice};
use layoutlab_trace::{Op, Trace};
use serde::Serialize;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// What the operation's table says about the check: the queue the OS of the modelled disk
/// presented, and how e2fsck is run (the `[fsck]` and `[aging]` tables' fields of these names).
#[derive(Clone, Debug)]
pub struct CheckSpec {
    /// Block-device readahead the OS used with the modelled disk (KiB).
    pub os_read_ahead_kb: u32,
    /// Largest request the OS sent the modelled disk (KiB); `None`: leave the loop device's.
    pub os_max_sectors_kb: Option<u32>,
    /// The capture device's `queue/rotational`; `None`: the preset's (every hard disk 1).
    /// Set only to switch the flag alone (issue 27's request-stream factor).
    pub os_rotational: Option<bool>,
    /// Extra arguments to the real e2fsck, after `-fnv -tt -C 3`.
    pub e2fsck_extra_args: Vec<String>,
    /// Run e2fsck seeing one CPU, so libext2fs reads bitmaps with one thread (as in 2007).
    pub e2fsck_single_cpu: bool,
    /// Run e2fsck under `SCHED_FIFO` (priority 1) on the plain capture device as well as on
    /// the emulated one: it then takes a CPU as soon as each read completes, instead of
    /// queueing behind the machine's other work (docs/rig.md, "A capture that waits less for
    /// a CPU").
    pub e2fsck_real_time: bool,
}

impl CheckSpec {
    /// The queue the capture device presents: `device`'s preset with this table's read-ahead,
    /// largest request and rotational flag.
    pub fn queue(&self, device: &str) -> Result<layoutlab_rig::QueueSpec> {
        crate::support::capture_queue_flagged(
            device,
            Some(self.os_read_ahead_kb),
            self.os_max_sectors_kb,
            self.os_rotational,
        )
    }

    /// `e2fsck`'s options under this table (its arguments as that release takes them, one CPU,
    /// real-time), open loop: no CPU share, no pace.
    pub fn fsck_options(
        &self,
        e2fsck: E2fsprogs,
        trace: layoutlab_rig::TraceOptions,
    ) -> Result<FsckOptions> {
        Ok(FsckOptions {
            e2fsck: e2fsck.program("e2fsck")?,
            extra_args: e2fsck_args(&self.e2fsck_extra_args, e2fsck),
            single_cpu: self.e2fsck_single_cpu,
            real_time: self.e2fsck_real_time,
            cpu_share: None,
            pace: None,
            trace,
        })
    }
}

/// How to run the checks (from the command line).
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Scale of disk and files (1.0 = as published).
    pub scale: f64,
    /// Device preset (name or file) the traces are replayed on.
    pub device: String,
    /// Where images live while the experiment runs.
    pub workdir: PathBuf,
    /// Keep images and traces after the run.
    pub keep: bool,
    /// Multiplier of CPU time between requests.
    pub cpu_scale: f64,
    /// Policies run at once (each: plan, image, traced e2fsck, replay); at least 1.
    pub jobs: usize,
    /// Whose e2fsck checks the images (today's or a period release built by `make deps`).
    pub e2fsck: E2fsprogs,
    /// Capture closed loop at this time scale K: e2fsck checks the image on the emulated
    /// device (`device emulate`), whose requests complete at the model's time divided by K.
    pub closed_loop: Option<f64>,
}

/// A closed-loop capture's result: the time measured on the emulated device.
#[derive(Clone, Debug, Serialize)]
pub struct ClosedLoopRun {
    /// The time scale K the device answered at.
    pub time_scale: f64,
    /// The traced work's time on the emulated device, first request to last completion,
    /// charging the model's time while a request was in the device and the time between as
    /// the clock that placed the next request counts it ([`crate::support::charged_ns`]: a
    /// paced request after the program's CPU times the CPU factor F, `--cpu-scale`); for
    /// e2fsck plus its CPU before and after (as `total_seconds` adds them, times F), s.
    pub measured_seconds: f64,
    /// Requests the emulator served (one per request the kernel traced).
    pub requests_served: u64,
    /// Of those, the requests whose arrival the traced program's CPU time placed on the
    /// model's clock (`layoutlab_rig::CpuPace`: e2fsck's closed-loop captures); the others
    /// the wall time (the kernel experiments, whose work runs in kernel threads).
    pub requests_paced: u64,
    /// The traced program's CPU time between its first and last paced request's receipts as
    /// the pace counted it (its task-clock, times the CPU factor F), s: beside the scheduler
    /// trace's count (`measured_here.scheduler_cpu_in_trace_seconds`), which the replay's think
    /// time comes from, it shows that both clocks counted the same CPU.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paced_cpu_seconds: Option<f64>,
    /// The share of one CPU the traced program was held to (K/F), when it was throttled
    /// ([`crate::support::closed_loop_cpu_share`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_share: Option<f64>,
}

impl ClosedLoopRun {
    /// The result of a closed-loop capture at time scale K that served `served`, with
    /// `extra_seconds` of the program's CPU outside the served requests (e2fsck's before its
    /// first request and after its last, as `total_seconds` adds them).
    pub fn of(
        time_scale: f64,
        served: &[layoutlab_rig::EmulatedRequest],
        extra_seconds: f64,
    ) -> ClosedLoopRun {
        ClosedLoopRun {
            time_scale,
            measured_seconds: crate::support::charged_ns(served, time_scale) / 1e9 + extra_seconds,
            requests_served: served.len() as u64,
            requests_paced: served.iter().filter(|r| r.cpu_ns.is_some()).count() as u64,
            paced_cpu_seconds: {
                let first = served.iter().find_map(|r| r.cpu_ns);
                let last = served.iter().rev().find_map(|r| r.cpu_ns);
                first
                    .zip(last)
                    .map(|(first, last)| last.saturating_sub(first) as f64 / 1e9)
            },
            cpu_share: None,
        }
    }

    /// The report's line for one check (`what`: a policy, or a policy's cell) measured on the
    /// emulated `device`, beside `replay_seconds`, the open-loop replay of the same stream:
    /// the fsck and aging operations print it alike.
    pub fn line(&self, what: &str, device: &str, replay_seconds: f64) -> String {
        format!(
            "closed loop, {what}: {:.2} s measured on the emulated {device} (time scale {}, {} requests served); open-loop replay of the same stream {replay_seconds:.2} s",
            self.measured_seconds, self.time_scale, self.requests_served
        )
    }
}

/// One e2fsck pass as the model predicts it.
#[derive(Clone, Debug, Serialize)]
pub struct PassResult {
    /// 1..5 (0 = before pass 1: superblock, descriptors, journal).
    pub pass: u32,
    /// Predicted wall seconds on the device model.
    pub seconds: f64,
    /// MB read from the device, as e2fsck -tt and the published tables count them (2^20 bytes).
    pub mb_read: f64,
    /// Requests issued.
    pub requests: u64,
}

/// e2fsck's own `-tt` figures on this machine (loop device over a sparse image), and the
/// scheduler's account of its CPU time: context and cross-checks; the prediction uses only
/// the think times (`think_seconds`, from the source `think_source` says).
#[derive(Clone, Debug, Serialize)]
pub struct MeasuredHere {
    /// Real seconds of the whole run.
    pub real_seconds: f64,
    /// User CPU seconds.
    pub user_seconds: f64,
    /// System CPU seconds.
    pub sys_seconds: f64,
    /// e2fsck's CPU seconds over the whole run as the scheduler accounted them (its
    /// `sched_switch` events); should agree with `user_seconds + sys_seconds`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scheduler_cpu_seconds: Option<f64>,
    /// Of that, between its first request's issue and its last request's completion.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scheduler_cpu_in_trace_seconds: Option<f64>,
    /// Of that, before the first request and after the last one (start-up, e2fsck's last
    /// work): no I/O overlaps it, so the prediction adds it (times `cpu_scale`) to `setup`
    /// and to the last pass.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scheduler_cpu_outside_trace_seconds: Option<f64>,
    /// Where the replay took the time between requests from: "cpu" (the scheduler's
    /// account, independent of how busy this machine was) or "wall" (the clock gaps).
    pub think_source: ThinkSource,
    /// Time between requests the replay used (before `cpu_scale`), seconds.
    pub think_seconds: f64,
    /// The wall-clock gaps that time replaces (a diagnostic: grows with the machine's load).
    pub think_wall_seconds: f64,
    /// Where this machine spent its time on the policy (what `layoutlab bench experiment`
    /// reports; policies run at once, so these add up to more than the run's wall time).
    pub stage_seconds: StageSeconds,
    /// e2fsck's own `-tt` sections as it printed them (each pass, "Peak memory", the totals):
    /// its CPU, memory and MiB read per pass, today's or a period release's alike.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub e2fsck_tt: Vec<layoutlab_rig::Section>,
    /// The capture's ring buffer: what [`e2fsck_events`] expected and what came.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capture_ring: Option<CaptureRing>,
    /// Whether e2fsck ran under `SCHED_FIFO` (closed loop, or `e2fsck_real_time`): it then
    /// waited less for a CPU here, which changes this machine's wall times, not the requests.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub e2fsck_real_time: bool,
    /// How many times another process (one that does not take the rig lock) dropped the page
    /// cache while e2fsck ran ([`layoutlab_rig::FsckRun::cache_drops`]); not 0: e2fsck may have
    /// read blocks again, and the stream is a disturbed sample. (Absent from the JSON of runs
    /// made before it was counted, 2026-11-27.)
    pub cache_drops: u64,
    /// Seconds the traced check waited for the rig lock before e2fsck started (inside
    /// `stage_seconds.traced_check`): another run's kernel work, not this check's.
    pub lock_wait_seconds: f64,
}

/// The ring buffer a check's capture was given and what the capture then held: the test that
/// [`e2fsck_events`] bounds a real check (`crates/cli/tests/metadata_on_ssd.rs`).
#[derive(Clone, Copy, Debug, Serialize)]
pub struct CaptureRing {
    /// Ring buffer per CPU, KiB.
    pub buffer_kib: u32,
    /// Marker lines expected at most.
    pub markers_expected: u64,
    /// Marker lines the capture held.
    pub markers: u64,
    /// Requests expected at most.
    pub requests_expected: u64,
}

/// Wall seconds of each stage of one policy's run on this machine.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct StageSeconds {
    /// Planning the layout (the policy, in memory).
    pub plan: f64,
    /// The real mke2fs.
    pub mkfs: f64,
    /// Writing the plan into the image through libext2fs.
    pub materialize: f64,
    /// The traced e2fsck (loop device, tracefs, parsing the trace).
    pub traced_check: f64,
    /// Replaying the trace on the device model.
    pub replay: f64,
}

/// One policy's run.
#[derive(Clone, Debug, Serialize)]
pub struct PolicyRun {
    /// Policy name.
    pub policy: String,
    /// Whose e2fsck checked the image ("today", "1.41.4", ...).
    pub e2fsck: String,
    /// Whether the real `e2fsck -fn` found the image clean.
    pub fsck_clean: bool,
    /// Mapping blocks in the plan: indirect (IND/DIND/TIND) blocks, or extent-tree blocks of
    /// an extent-mapped file system (the key keeps its first name).
    pub indirect_blocks: u64,
    /// Whether the plan maps files with extent trees (the report then says "mapping blocks").
    #[serde(skip)]
    pub extent_mapped: bool,
    /// How many of them the traced e2fsck read.
    pub indirect_blocks_read: u64,
    /// Per pass, predicted on the device model.
    pub passes: Vec<PassResult>,
    /// Predicted wall seconds of the whole e2fsck run.
    pub total_seconds: f64,
    /// Predicted seconds the disk was busy.
    pub io_seconds: f64,
    /// CPU seconds (measured here, times cpu_scale) not overlapped with I/O, start-up and
    /// e2fsck's work after its last request included.
    pub cpu_seconds: f64,
    /// MB (2^20 bytes) read in total.
    pub mb_read: f64,
    /// Requests in total.
    pub requests: u64,
    /// e2fsck's own timing on this machine.
    pub measured_here: MeasuredHere,
    /// Files with more than one fragment.
    pub fragmented_files: u64,
    /// e2fsck `-v`'s summary of the image (non-contiguous files, extent depths, counts).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub e2fsck_vitals: Option<layoutlab_rig::FsckVitals>,
    /// Bytes of file data the layout placed (a full file system truncates the last files,
    /// and a policy that reserves space for metadata fits less).
    pub file_data_bytes: u64,
    /// The queue the traced loop device presented (rotational, read-ahead, request size,
    /// scheduler, block sizes), read back from sysfs: it shapes e2fsck's stream.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capture_queue: Option<layoutlab_trace::DeviceQueue>,
    /// For a policy with a metadata region (`ext4-meta-ssd`): where the plan's metadata lies
    /// relative to it (the SSD it needs, the overflow).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub region: Option<layoutlab_layout::policy::ext4_meta_ssd::MetadataFootprint>,
    /// Where the image was kept (with --keep).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image: Option<PathBuf>,
    /// With --closed-loop: the time measured on the emulated device. `total_seconds` and the
    /// passes stay the open-loop replay of the same stream, beside it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub closed_loop: Option<ClosedLoopRun>,
    /// The captured trace (not serialized).
    #[serde(skip)]
    pub trace: Trace,
    /// CPU seconds (times cpu_scale) before the trace's first request and after its last,
    /// which the total adds to the replay of `trace` (not serialized: `measured_here` has it).
    #[serde(skip)]
    pub cpu_outside_trace_seconds: f64,
    /// The same CPU seconds as measured here (CPU factor 1), for replays at another factor
    /// (`--sensitivity`'s CPU rows; not serialized).
    #[serde(skip)]
    pub cpu_outside_trace_seconds_here: f64,
    /// Its replay (not serialized).
    #[serde(skip)]
    pub replayed: Replayed,
    /// With --closed-loop: every request the emulator served, in arrival order, with its
    /// receipt, the program's CPU then and its model times (not serialized; `--keep` writes
    /// it beside the trace, to tell where two captures of one image part).
    #[serde(skip)]
    pub served: Vec<layoutlab_rig::EmulatedRequest>,
    /// What each block of the image holds, to attribute the trace (not serialized).
    #[serde(skip)]
    pub classes: BlockClasses,
}

/// Bytes of a MiB, as e2fsck -tt counts them.
pub const MIB: f64 = (1u64 << 20) as f64;

/// Say what is happening on long work (stderr, so --json - stays clean), naming the policy:
/// policies run at once, so their lines interleave.
pub(crate) fn progress(policy: &str, msg: &str) {
    eprintln!("  [{policy}] {msg}");
}

/// libext2fs keeps process-wide state (error tables, the default I/O manager); images are
/// written one at a time, which costs little beside the traced checks that run at once.
static LIBEXT2FS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The experiment's extra e2fsck arguments for `e2fsck`. A period release before 1.43 has no
/// metadata prefetch and no `-E readahead_kb=` (e2fsck/unix.c parse_extended_opts() of
/// 1.40.2/1.41.x refuses it): the setting that made today's e2fsck read as 1.41 did is dropped,
/// since the period program reads that way by itself.
fn e2fsck_args(extra: &[String], e2fsck: E2fsprogs) -> Vec<String> {
    if !e2fsck.is_period() {
        return extra.to_vec();
    }
    let mut out = Vec::new();
    let mut i = 0;
    while i < extra.len() {
        if extra[i] == "-E"
            && extra
                .get(i + 1)
                .is_some_and(|v| v.starts_with("readahead_kb="))
        {
            i += 2;
            continue;
        }
        out.push(extra[i].clone());
        i += 1;
    }
    out
}

/// What `e2fsck -fn -C` on `plan`'s image writes to the trace marker and, at most, reads in
/// requests of one block each: the basis of the capture's ring-buffer size.
///
/// - Marker lines (e2fsprogs `e2fsck/unix.c` `e2fsck_update_progress`, one `write` per call;
///   the calls in `pass1.c`, `pass2.c`, `pass3.c`, `pass4.c`, `pass5.c`): pass 1 one per group,
///   pass 2 one per directory block, pass 3 one per directory, pass 4 one per group, pass 5
///   one per group for each bitmap, each pass one more at its start; 16 for the rig's tags.
///   Counted on a 1 GiB ext4 of /usr/share (8 groups, 3,507 directories): e2fsck 1.47 wrote
///   9, 3,844, 3,508, 9 and 17 lines in passes 1-5. In a tree those lines are most of the
///   trace: 16 copies of ubuntu-32g make about a million lines (about 60 MB in the ring, against
///   the default 16 MiB per CPU), and pass 3 writes one per directory without a request
///   between them, faster than a reader waiting for a CPU on a loaded machine empties it.
/// - Requests: one per block of metadata in use: the used part of the inode tables (the
///   plan's inodes, plus a partial block per group), directory, mapping and symlink blocks,
///   both bitmaps of each group and the descriptors. A check that reads whole inode tables
///   (ext3) reads them in requests of many blocks, which this does not count: there the
///   streaming thread, and the overrun error, remain the guard.
pub fn e2fsck_events(plan: &Plan, geometry: &Geometry) -> layoutlab_rig::ExpectedEvents {
    let groups = geometry.group_count();
    let directories = plan
        .inodes
        .iter()
        .filter(|i| i.kind == layoutlab_layout::InodeKind::Dir)
        .count() as u64;
    let blocks_of = |kind: layoutlab_layout::InodeKind| -> u64 {
        plan.inodes
            .iter()
            .filter(|i| i.kind == kind)
            .map(|i| i.data_blocks())
            .sum()
    };
    let dir_blocks = blocks_of(layoutlab_layout::InodeKind::Dir);
    let symlink_blocks = blocks_of(layoutlab_layout::InodeKind::Symlink);
    let inode_bytes = geometry.inode_table_blocks * u64::from(geometry.block_size_bytes)
        / u64::from(geometry.inodes_per_group.max(1));
    let used_table_blocks = (plan.inodes.len() as u64 * inode_bytes)
        .div_ceil(u64::from(geometry.block_size_bytes))
        + groups;
    layoutlab_rig::ExpectedEvents {
        markers: 4 * groups + dir_blocks + directories + 5 + 16,
        requests: used_table_blocks
            + dir_blocks
            + plan.mapping_blocks()
            + symlink_blocks
            + 2 * groups
            + geometry.gdt_blocks
            + 16,
    }
}

/// Writes `plan` into `image` (made by mke2fs in `mkfs_seconds`), runs the real e2fsck on it
/// under block tracing as `spec` and `opts` say, and prices the trace on `opts.device` (as
/// many of it as hold the file system); an error if e2fsck finds the image unclean or the
/// kernel lost trace events.
pub fn traced_e2fsck(
    spec: &CheckSpec,
    opts: &RunOptions,
    geometry: &Geometry,
    plan: &Plan,
    image: &Path,
    mkfs_seconds: f64,
) -> Result<PolicyRun> {
    // Sized before the image is written, so a check too large for the cap writes nothing.
    let expected = e2fsck_events(plan, geometry);
    let trace = layoutlab_rig::TraceOptions::default().sized_for(expected)?;
    let ring_kib = trace.buffer_size_kb;
    progress(
        &plan.policy,
        &format!(
            "capture ring buffer {} MiB per CPU (at most {} progress lines and {} requests)",
            trace.buffer_size_kb.div_ceil(1024),
            expected.markers,
            expected.requests
        ),
    );
    let t = Instant::now();
    let mut stages = StageSeconds {
        mkfs: mkfs_seconds,
        ..StageSeconds::default()
    };
    let stats = {
        let _stage = crate::stages::enter(crate::stages::IMAGE);
        let _one_at_a_time = LIBEXT2FS.lock().unwrap_or_else(|p| p.into_inner());
        layoutlab_image::materialize(image, plan)?
    };
    stages.materialize = t.elapsed().as_secs_f64();
    progress(
        &plan.policy,
        &format!(
            "image written through libext2fs in {:.1} s ({} data blocks, {} indirect blocks)",
            t.elapsed().as_secs_f64(),
            stats.file_data_blocks,
            stats.mapping_blocks
        ),
    );

    let t = Instant::now();
    let run = {
        let _stage = crate::stages::enter(crate::stages::CAPTURE);
        let queue = spec.queue(&opts.device)?;
        // Open loop replays think time × F; only a closed-loop capture throttles and paces.
        let fsck_opts = spec.fsck_options(opts.e2fsck, trace)?;
        match opts.closed_loop {
            None => {
                let loopdev = LoopDevice::attach_presenting(image, true, &queue)?;
                // Only the loop device's own cache: e2fsck's reads must reach the traced
                // device. The image file's host page cache may stay warm — host time is inside
                // each request's service time on the loop device, which the device model
                // replaces.
                loopdev.flush_buffers()?;
                (
                    layoutlab_rig::run_e2fsck_traced(loopdev.path(), loopdev.dev(), &fsck_opts)?,
                    None,
                )
            }
            Some(time_scale) => {
                // A period machine ran the check alone: on the emulated device e2fsck runs
                // real-time, so its time between requests is its CPU, not its wait for one.
                let emulator =
                    crate::support::start_emulator(&opts.device, image, time_scale, true, queue)?;
                // And the model's clock follows e2fsck's CPU between requests, not the wall:
                // the loop worker's and the route's waits for a CPU then move no arrival
                // (`layoutlab_rig::CpuPace`). A period CPU F times slower advances it F ns per
                // ns of CPU here, and on the wall e2fsck gets K/F of one CPU, as the device
                // answers K times faster than the model.
                let pace = emulator.cpu_pace();
                pace.set_cpu_scale(opts.cpu_scale)?;
                let fsck_opts = FsckOptions {
                    real_time: true,
                    pace: Some(pace),
                    cpu_share: crate::support::closed_loop_cpu_share(opts.cpu_scale, time_scale),
                    ..fsck_opts
                };
                let dev = emulator.device();
                dev.flush_buffers()?;
                let run = layoutlab_rig::run_e2fsck_traced(dev.path(), dev.dev(), &fsck_opts)?;
                let served = emulator.stop()?;
                (run, Some((time_scale, served)))
            }
        }
    };
    let (run, served) = run;
    if run.exit_code != 0 {
        bail!(
            "traced e2fsck exited {} on the {} image:\n{}",
            run.exit_code,
            plan.policy,
            run.stdout
        );
    }
    layoutlab_rig::window::check_complete(&run.capture)?;
    stages.traced_check = t.elapsed().as_secs_f64();
    let scheduler_cpu_seconds = run.capture.cpu.as_ref().map(|c| c.total_ns as f64 / 1e9);
    let scheduler_cpu_in_trace_seconds = run
        .capture
        .cpu
        .as_ref()
        .map(|c| c.during_trace_ns() as f64 / 1e9);
    // CPU with no request of the program in flight before its first and after its last
    // request: part of the command's time, outside the replay's window.
    let (head_seconds, tail_seconds) =
        crate::steps::phases::head_tail_cpu_seconds(&run.capture, opts.cpu_scale);
    let cpu_outside_trace_seconds_here = {
        let (head, tail) = crate::steps::phases::head_tail_cpu_seconds(&run.capture, 1.0);
        head + tail
    };
    let tt_sections = run.times.sections.clone();
    if run.cache_drops > 0 {
        progress(
            &plan.policy,
            &format!(
                "note: another process dropped the page cache {} time(s) while e2fsck ran: it may \
                 have read blocks again, so this capture is a disturbed sample (JSON \
                 measured_here.cache_drops; docs/fidelity.md, \"The spread of one capture\")",
                run.cache_drops
            ),
        );
    }
    let trace = run.capture.trace;
    let think = think_summary(&trace);
    let think_source = ThinkSource::of(&trace);
    let total = run.times.total();
    progress(
        &plan.policy,
        &format!(
            "traced e2fsck ({}) -fn -tt: clean; {} requests in {:.1} s here{}; CPU {} (e2fsck -tt: {:.2} s)",
            opts.e2fsck,
            trace.requests.len(),
            t.elapsed().as_secs_f64(),
            if run.lock_wait_seconds >= 0.1 {
                format!(
                    " (of which {:.1} s waiting for another run's kernel work: the rig lock)",
                    run.lock_wait_seconds
                )
            } else {
                String::new()
            },
            scheduler_cpu_seconds.map_or("not accounted".to_string(), |s| format!("{s:.2} s")),
            total.map_or(0.0, |s| s.user_s + s.sys_s),
        ),
    );

    let read = indirect_blocks_read(plan, &trace, geometry.block_size_bytes);
    let t = Instant::now();
    let fs_sectors = geometry.blocks_count * u64::from(geometry.block_size_bytes) / 512;
    let _pricing = crate::stages::enter(crate::stages::PRICE);
    let mut device = crate::steps::price::linear_device(&opts.device, fs_sectors)?;
    let replayed = crate::steps::price::on(device.as_mut(), &trace, opts.cpu_scale);
    stages.replay = t.elapsed().as_secs_f64();
    let (closed_loop, served) = match served {
        Some((time_scale, served)) => (
            Some(ClosedLoopRun {
                cpu_share: crate::support::closed_loop_cpu_share(opts.cpu_scale, time_scale),
                ..ClosedLoopRun::of(time_scale, &served, head_seconds + tail_seconds)
            }),
            served,
        ),
        None => (None, Vec::new()),
    };
    let passes: Vec<PassResult> =
        crate::steps::phases::tag_phases(&replayed, head_seconds, tail_seconds)
            .into_iter()
            .map(|p| PassResult {
                pass: pass_number(&p.tag),
                seconds: p.seconds,
                mb_read: p.mb_read,
                requests: p.requests,
            })
            .collect();
    Ok(PolicyRun {
        policy: plan.policy.clone(),
        e2fsck: opts.e2fsck.name().to_string(),
        fsck_clean: true,
        indirect_blocks: plan.mapping_blocks(),
        extent_mapped: plan
            .inodes
            .iter()
            .any(|i| i.format == layoutlab_layout::MapFormat::Extents),
        indirect_blocks_read: read,
        total_seconds: replayed.wall_ns / 1e9 + head_seconds + tail_seconds,
        io_seconds: replayed.io_busy_ns / 1e9,
        cpu_seconds: replayed.cpu_not_overlapped_ns / 1e9 + head_seconds + tail_seconds,
        mb_read: passes.iter().map(|p| p.mb_read).sum(),
        requests: trace.requests.len() as u64,
        capture_queue: trace.queue.clone(),
        measured_here: MeasuredHere {
            real_seconds: total.map(|s| s.real_s).unwrap_or(0.0),
            user_seconds: total.map(|s| s.user_s).unwrap_or(0.0),
            sys_seconds: total.map(|s| s.sys_s).unwrap_or(0.0),
            scheduler_cpu_seconds,
            scheduler_cpu_in_trace_seconds,
            scheduler_cpu_outside_trace_seconds: run
                .capture
                .cpu
                .as_ref()
                .map(|c| (c.before_trace_ns + c.after_trace_ns) as f64 / 1e9),
            think_source,
            think_seconds: match (think_source, think.cpu) {
                (ThinkSource::Cpu, Some(cpu)) => cpu.total_ns() as f64 / 1e9,
                _ => think.wall.total_ns() as f64 / 1e9,
            },
            think_wall_seconds: think.wall.total_ns() as f64 / 1e9,
            stage_seconds: stages,
            e2fsck_tt: tt_sections,
            capture_ring: Some(CaptureRing {
                buffer_kib: ring_kib,
                markers_expected: expected.markers,
                markers: run.capture.marker_events,
                requests_expected: expected.requests,
            }),
            e2fsck_real_time: spec.e2fsck_real_time || opts.closed_loop.is_some(),
            cache_drops: run.cache_drops,
            lock_wait_seconds: run.lock_wait_seconds,
        },
        file_data_bytes: plan.file_data_blocks() * u64::from(geometry.block_size_bytes),
        fragmented_files: plan
            .fragments_per_file()
            .iter()
            .filter(|(_, f)| *f > 1)
            .count() as u64,
        e2fsck_vitals: run.vitals.clone(),
        passes,
        region: None,
        image: None,
        closed_loop,
        trace,
        cpu_outside_trace_seconds: head_seconds + tail_seconds,
        cpu_outside_trace_seconds_here,
        replayed,
        served,
        classes: BlockClasses::new(geometry, plan),
    })
}

/// "pass3" → 3; "setup" (before pass 1) → 0.
pub fn pass_number(tag: &str) -> u32 {
    tag.strip_prefix("pass")
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// How many of the plan's indirect blocks some read request of the trace covered.
pub fn indirect_blocks_read(plan: &Plan, trace: &Trace, block_size_bytes: u32) -> u64 {
    let sectors_per_block = u64::from(block_size_bytes) / 512;
    let mut wanted: HashSet<u64> = plan
        .inodes
        .iter()
        .flat_map(|i| i.mapping.iter().map(|m| m.physical))
        .collect();
    let total = wanted.len() as u64;
    for r in trace.requests.iter().filter(|r| r.op == Op::Read) {
        let first = r.sector / sectors_per_block;
        let last = (r.sector + u64::from(r.sectors)).div_ceil(sectors_per_block);
        for b in first..last {
            wanted.remove(&b);
        }
        if wanted.is_empty() {
            break;
        }
    }
    total - wanted.len() as u64
}
