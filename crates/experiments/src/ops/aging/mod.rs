//! The "aging" operation (`reproduce metacluster-aging`): Andrew Morton's question to the
//! metaclustering patch — "what happens if that disk has been in continuous
//! create/delete/truncate/append usage for six months?" — answered for every policy.
//!
//! For each workload, policy and age (capacities written by an aging stream,
//! `layoutlab_workload::aging`): the tree, then the stream, is planned by the policy (which
//! frees and reuses space as its kernel does), written through libext2fs, checked by the real
//! `e2fsck -fn` under block tracing and the trace priced on the experiment's device (the
//! e2fsck check step, [`crate::steps::check`]); the plan's layout metrics
//! ([`layoutlab_layout::metrics`]) and the modelled cost of reading its largest files
//! sequentially and at random ([`read_cost`]) go beside it.
//!
//! The tree is trimmed to the stream's target fullness before anything (creates that would
//! take the live data past it are left out, in creation order): bench5 fills its disk, and
//! a stream cannot hold a file system fuller than it is. Age 0 is that trimmed tree.

use crate::output::{write_json, Human};
use crate::steps::check::{traced_e2fsck, CheckSpec, RunOptions};
use crate::{Experiment, Operation, RunArgs};
use anyhow::{bail, Context, Result};
use layoutlab_device::Device;
use layoutlab_layout::metrics::LayoutMetrics;
use layoutlab_layout::mkfs::metadata_margin_bytes;
use layoutlab_layout::policy::{self, PolicyParams};
use layoutlab_layout::{Geometry, InodeKind, MapKind, MkfsProfile, Plan, PlannedInode};
use layoutlab_report::{Cell, Column, HtmlBundle, SweepChart, SweepSeries, Table};
use layoutlab_trace::{Flags, Op, Request, Trace};
use layoutlab_workload::aging::{age_prefixes, AgingSpec as StreamSpec};
use layoutlab_workload::{CheckedPopulation, NsOp, Population};
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashSet};
use std::time::Instant;

/// The "aging" operation (registered in [`crate::OPERATIONS`]).
pub struct Aging;

/// Parameters of the "aging" operation: an experiment's `[aging]` table.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgingOpSpec {
    /// Scale used when `--scale` is not given: bench5 keeps its files at this fraction of
    /// their size, a tree population keeps this fraction of its files
    /// ([`layoutlab_workload::population_shrunk`]).
    pub default_scale: f64,
    /// Populations aged, in order.
    pub workloads: Vec<String>,
    /// Layout policies compared, in order.
    pub policies: Vec<String>,
    /// mkfs profile of every policy not in `mkfs_profiles`.
    pub mkfs_profile: String,
    /// A policy's own mkfs profile, where it differs.
    #[serde(default)]
    pub mkfs_profiles: BTreeMap<String, String>,
    /// Ages: capacities written by the aging stream (0: the tree as made).
    pub ages: Vec<f64>,
    /// Live data the stream holds, as a fraction of the file system (the tree is trimmed to
    /// it first).
    pub fullness: f64,
    /// Block-device readahead of the OS (KiB), as in metacluster-fsck.
    pub os_read_ahead_kb: u32,
    /// Largest request the OS sent (KiB): also the largest read of the read-cost model.
    pub os_max_sectors_kb: u32,
    /// Scale factor of measured CPU time between requests.
    pub cpu_scale: f64,
    /// Extra arguments to the real e2fsck.
    #[serde(default)]
    pub e2fsck_extra_args: Vec<String>,
    /// Run e2fsck seeing one CPU.
    #[serde(default)]
    pub e2fsck_single_cpu: bool,
    /// Run the traced e2fsck under `SCHED_FIFO` at priority 1, as the fsck operation's key of
    /// that name does: the capture device's requests stay those of a plain run, and each check
    /// waits less for a CPU while the other policies' passes plan beside it (issue 28;
    /// docs/rig.md, "A capture that waits less for a CPU").
    #[serde(default)]
    pub e2fsck_real_time: bool,
    /// Each policy's period e2fsprogs (`--e2fsck period` checks its images with that
    /// release's e2fsck): the ext3 of 2007 with 1.40.2, ext4 of 2009 with 1.41.4.
    #[serde(default)]
    pub period_e2fsprogs: std::collections::BTreeMap<String, String>,
    /// How many of the largest regular files the read-cost model reads.
    pub read_files: usize,
    /// Random 4 KiB reads per file in the random-read cost.
    pub random_reads: usize,
    /// Metadata on a faster device (issue 29): the SSD preset that holds the metadata region
    /// of each policy that keeps one (`ext4-meta-ssd`); those cells' e2fsck traces and read
    /// costs are also priced with the region on it and the rest on the experiment's disks
    /// ([`crate::steps::price`]). None: no split.
    #[serde(default)]
    pub fast_device: Option<String>,
}

impl AgingOpSpec {
    fn mkfs_profile_of(&self, policy: &str) -> &str {
        crate::experiment::mkfs_profile_for(policy, &self.mkfs_profile, &self.mkfs_profiles)
    }

    /// What the e2fsck check under trace takes from this table.
    fn check_spec(&self) -> CheckSpec {
        CheckSpec {
            os_read_ahead_kb: self.os_read_ahead_kb,
            os_max_sectors_kb: Some(self.os_max_sectors_kb),
            os_rotational: None,
            e2fsck_extra_args: self.e2fsck_extra_args.clone(),
            e2fsck_single_cpu: self.e2fsck_single_cpu,
            e2fsck_real_time: self.e2fsck_real_time,
        }
    }

    fn validate(&self) -> Result<()> {
        if self.policies.is_empty() || self.workloads.is_empty() || self.ages.is_empty() {
            bail!("[aging] policies, workloads and ages must each name at least one");
        }
        crate::experiment::check_mkfs_profiles(&self.policies, &self.mkfs_profiles)?;
        // Keyed by policy name; a policy a narrowed run (a sweep cell) does not compare may stay.
        for (p, v) in &self.period_e2fsprogs {
            policy::by_name(p, &PolicyParams::new())
                .with_context(|| format!("period_e2fsprogs names policy '{p}'"))?;
            layoutlab_rig::E2fsprogs::by_name(v)?;
        }
        if !(self.fullness > 0.0 && self.fullness < 1.0) {
            bail!("[aging] fullness must be in (0, 1), got {}", self.fullness);
        }
        if let Some(a) = self.ages.iter().find(|a| !(a.is_finite() && **a >= 0.0)) {
            bail!("[aging] ages: {a} is not a number of capacities ≥ 0");
        }
        if self.read_files == 0 {
            bail!("[aging] read_files must be at least 1");
        }
        if let Some(fast) = &self.fast_device {
            crate::support::load_device(fast)?;
        }
        Ok(())
    }
}

impl Operation for Aging {
    fn name(&self) -> &'static str {
        "aging"
    }

    /// It runs e2fsck on a loop device under block tracing.
    fn supports_cpu_scale(&self) -> bool {
        true
    }

    fn needs_root(&self, _exp: &Experiment) -> bool {
        true
    }

    /// `--closed-loop` runs each cell's traced e2fsck on its own emulated device, through the
    /// check step the fsck operation uses, one cell at a time.
    fn supports_closed_loop(&self) -> bool {
        true
    }

    fn options(&self) -> &'static [crate::OpOption] {
        &[crate::OpOption {
            key: "e2fsck_real_time",
            help: "run the traced e2fsck under SCHED_FIFO (priority 1), true or false (the experiment file's value by default); the requests stay the same, each check waits less for a CPU while other policies plan",
            flag: None,
            flag_aliases: &[],
        }]
    }

    fn check(&self, exp: &Experiment) -> Result<()> {
        let spec: AgingOpSpec = exp.params()?;
        spec.validate()
    }

    fn run(&self, exp: &Experiment, args: &RunArgs) -> Result<()> {
        run_aging(exp, args)
    }
}

/// The cost of reading files, as the device model prices it.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ReadCost {
    /// Files read (the largest regular files of the plan).
    pub files: usize,
    /// Bytes of them.
    pub bytes: u64,
    /// Seconds to read them whole, one after another, in logical order.
    pub sequential_seconds: f64,
    /// MB/s (10^6) of that.
    pub sequential_mb_per_s: f64,
    /// Seconds of the random 4 KiB reads.
    pub random_seconds: f64,
    /// Random reads done.
    pub random_reads: usize,
    /// Requests of the sequential read (data and mapping blocks).
    pub sequential_requests: usize,
}

/// One (workload, policy, age) cell.
#[derive(Clone, Debug, Serialize)]
pub struct AgingRun {
    /// Policy.
    pub policy: String,
    /// Population (its name as scaled).
    pub population: String,
    /// Capacities written by the aging stream.
    pub age: f64,
    /// Whether the real e2fsck -fn found the image clean.
    pub fsck_clean: bool,
    /// Layout score (block-weighted, Conway et al.).
    pub layout_score: f64,
    /// e2fsck per pass on the device model.
    pub passes: Vec<crate::steps::check::PassResult>,
    /// Predicted e2fsck seconds (the open-loop replay of the traced stream).
    pub total_seconds: f64,
    /// With `--closed-loop`: the check's time measured on the emulated device, beside
    /// `total_seconds`, the open-loop replay of the same stream.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub closed_loop: Option<crate::steps::check::ClosedLoopRun>,
    /// Requests e2fsck issued.
    pub requests: u64,
    /// Mapping (indirect or extent-tree) blocks in the plan.
    pub mapping_blocks: u64,
    /// Of them, outside their policy's metaclusters / regions (the policies that keep them
    /// together; 0 for the others): indirect blocks that overflowed.
    pub mapping_blocks_outside: u64,
    /// Operations in the aging stream (after the tree's).
    pub aging_operations: u64,
    /// Regular files and bytes of file data at the end.
    pub files: u64,
    /// Bytes of regular-file data at the end.
    pub file_bytes: u64,
    /// The cost of reading the largest files (on the experiment's disks).
    pub reads: ReadCost,
    /// With `fast_device`, for a policy with a metadata region: the same check and reads
    /// with the region on the SSD.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub split: Option<AgingSplit>,
    /// Every layout metric of the plan.
    pub metrics: LayoutMetrics,
    /// Seconds this machine spent on the cell (plan, image, traced e2fsck, replay).
    pub seconds_here: f64,
}

/// A cell priced with its metadata region on the fast device (issue 29).
#[derive(Clone, Debug, Serialize)]
pub struct AgingSplit {
    /// Where the plan's metadata lies relative to the region: the SSD it needs, the overflow.
    pub region: layoutlab_layout::policy::ext4_meta_ssd::MetadataFootprint,
    /// The cell's e2fsck trace priced on the split device, per pass and device.
    pub fsck: crate::steps::price::SplitRun,
    /// The read cost on the split device.
    pub reads: ReadCost,
    /// Of the sequential read's bytes, those the SSD served (mapping blocks; file data that
    /// a full data area sent into the region).
    pub sequential_ssd_bytes: u64,
}

/// The JSON contract: the metacluster-fsck schema plus ages, layout scores and read costs.
#[derive(Serialize)]
struct Output<'a> {
    experiment: &'a str,
    device: &'a str,
    scale: f64,
    fullness: f64,
    /// Whether the traced e2fsck ran under `SCHED_FIFO` (`e2fsck_real_time`, or closed loop).
    e2fsck_real_time: bool,
    /// The time scale K of a closed-loop run (`--closed-loop`); absent open loop.
    #[serde(skip_serializing_if = "Option::is_none")]
    closed_loop: Option<f64>,
    runs: &'a [AgingRun],
    conclusion: &'a [String],
    seconds: f64,
}

/// `pop` with its creates that would take the live data beyond `budget` bytes left out (and
/// every later operation on what they would have made), in creation order.
pub fn trim_to(pop: &Population, budget: u64) -> (Population, usize) {
    let mut live = 0u64;
    let mut dropped: HashSet<&str> = HashSet::new();
    let mut ops = Vec::with_capacity(pop.ops.len());
    let mut left_out = 0;
    for op in &pop.ops {
        let path = op.path();
        let parent = path.rsplit_once('/').map_or("", |(d, _)| d);
        let depends = match op {
            NsOp::Link { target, .. } => dropped.contains(target.as_str()),
            _ => false,
        };
        if dropped.contains(path) || dropped.contains(parent) || depends {
            dropped.insert(path);
            continue;
        }
        match op {
            NsOp::Create { bytes, .. }
            | NsOp::Append { bytes, .. }
            | NsOp::Extend { bytes, .. } => {
                if live + bytes > budget {
                    if matches!(op, NsOp::Create { .. }) {
                        left_out += 1;
                    }
                    dropped.insert(path);
                    continue;
                }
                live += bytes;
            }
            _ => {}
        }
        ops.push(op.clone());
    }
    (
        Population {
            name: pop.name.clone(),
            fs_bytes: pop.fs_bytes,
            ops,
        },
        left_out,
    )
}

/// A mapping block as (first logical block covered, blocks covered, physical block).
type Covered = (u64, u64, u64);

/// The mapping blocks that lead to each logical block, top down: for a block-mapped file the
/// TIND, DIND and IND blocks over it, for an extent-mapped one the index and leaf blocks.
struct MapLookup {
    /// Per kind, (first logical covered, span, physical), sorted by logical.
    levels: Vec<Vec<Covered>>,
}

impl MapLookup {
    fn new(node: &PlannedInode, block_bytes: u64) -> MapLookup {
        let addr = block_bytes / 4;
        let mut by_kind: BTreeMap<std::cmp::Reverse<(u8, u8)>, Vec<Covered>> = BTreeMap::new();
        for m in &node.mapping {
            let (rank, span) = match m.kind {
                MapKind::Tind => ((3, 0), addr * addr * addr),
                MapKind::Dind => ((2, 0), addr * addr),
                MapKind::Ind => ((1, 0), addr),
                MapKind::Extent { height } => ((0, height), u64::MAX),
            };
            by_kind
                .entry(std::cmp::Reverse(rank))
                .or_default()
                .push((m.logical, span, m.physical));
        }
        let levels = by_kind
            .into_values()
            .map(|mut v| {
                v.sort();
                v
            })
            .collect();
        MapLookup { levels }
    }

    /// Physical blocks of the mapping blocks over logical block `l`, top down.
    fn over(&self, l: u64) -> impl Iterator<Item = u64> + '_ {
        self.levels.iter().filter_map(move |level| {
            let i = level.partition_point(|&(first, _, _)| first <= l);
            let &(first, span, physical) = level.get(i.checked_sub(1)?)?;
            (l - first < span).then_some(physical)
        })
    }
}

/// A request of `blocks` blocks at `block`, issued when the previous one completed.
fn push_read(trace: &mut Trace, block: u64, blocks: u64, block_bytes: u64, meta: bool) {
    let i = trace.requests.len() as u64;
    let spb = block_bytes / 512;
    trace.requests.push(Request {
        issue_ns: 2 * i,
        complete_ns: Some(2 * i + 1),
        op: Op::Read,
        sector: block * spb,
        sectors: (blocks * spb) as u32,
        flags: if meta { Flags::META } else { Flags::default() },
        tag: 0,
        cpu: None,
    });
}

/// The reads whose cost [`read_cost`] prices: the plan's largest regular files read whole,
/// then at random.
#[derive(Clone, Debug, Default)]
pub struct ReadTraces {
    /// The files read whole, one after another.
    pub sequential: Trace,
    /// The random 4 KiB reads.
    pub random: Trace,
    /// Files read.
    pub files: usize,
    /// Their bytes.
    pub bytes: u64,
    /// Random reads done.
    pub random_reads: usize,
}

/// The reads of the plan's `n` largest regular files: whole and in logical order (requests
/// of at most `max_kb`, a mapping block read just before the first data block it maps: what
/// a reader with a large read-ahead gets), then `random` 4 KiB reads each at a seeded random
/// block (a mapping block read once, then cached). One synchronous reader, no think time: the
/// layout's cost alone. They depend on the plan only, so one set is priced on each device.
pub fn read_traces(
    plan: &Plan,
    block_bytes: u64,
    (n, random, max_kb): (usize, usize, u32),
    seed: u64,
) -> ReadTraces {
    let mut files: Vec<&PlannedInode> = plan
        .inodes
        .iter()
        .filter(|i| i.kind == InodeKind::File && i.data_blocks() > 0)
        .collect();
    files.sort_by_key(|i| (std::cmp::Reverse(i.data_blocks()), i.ino));
    files.truncate(n);
    let max_blocks = (u64::from(max_kb) * 1024 / block_bytes).max(1);
    let mut seq = Trace::default();
    let mut rnd = Trace::default();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut bytes = 0;
    for node in &files {
        bytes += node.size_bytes;
        let maps = MapLookup::new(node, block_bytes);
        let mut cached: HashSet<u64> = HashSet::new();
        // (first block, blocks) of the request being built
        let mut cur: Option<(u64, u64)> = None;
        for r in &node.data {
            for l in r.logical..r.logical + r.len {
                let p = r.physical + (l - r.logical);
                let need: Vec<u64> = maps.over(l).filter(|m| !cached.contains(m)).collect();
                let continues = matches!(cur, Some((s, len)) if s + len == p && len < max_blocks);
                if !need.is_empty() || !continues {
                    if let Some((s, len)) = cur.take() {
                        push_read(&mut seq, s, len, block_bytes, false);
                    }
                    for m in need {
                        cached.insert(m);
                        push_read(&mut seq, m, 1, block_bytes, true);
                    }
                    cur = Some((p, 1));
                } else if let Some((_, len)) = cur.as_mut() {
                    *len += 1;
                }
            }
        }
        if let Some((s, len)) = cur.take() {
            push_read(&mut seq, s, len, block_bytes, false);
        }
        let mut cached: HashSet<u64> = HashSet::new();
        for _ in 0..random {
            let l = rng.gen_range(0..node.data_blocks());
            for m in maps.over(l).collect::<Vec<_>>() {
                if cached.insert(m) {
                    push_read(&mut rnd, m, 1, block_bytes, true);
                }
            }
            let p = node.physical_of(l).expect("a logical block of the file");
            push_read(&mut rnd, p, 1, block_bytes, false);
        }
    }
    ReadTraces {
        sequential: seq,
        random: rnd,
        files: files.len(),
        bytes,
        random_reads: random * files.len(),
    }
}

/// The cost of `reads` on a fresh device from `device` each (the sequential and the random
/// reads each start on an idle device with an empty cache).
pub fn read_cost(
    reads: &ReadTraces,
    device: &dyn Fn() -> Result<Box<dyn Device>>,
) -> Result<ReadCost> {
    let priced = |t: &Trace| -> Result<f64> {
        let mut dev = device()?;
        Ok(crate::steps::price::on(dev.as_mut(), t, 1.0).wall_ns / 1e9)
    };
    let sequential_seconds = priced(&reads.sequential)?;
    Ok(ReadCost {
        files: reads.files,
        bytes: reads.bytes,
        sequential_seconds,
        sequential_mb_per_s: if sequential_seconds > 0.0 {
            reads.bytes as f64 / 1e6 / sequential_seconds
        } else {
            0.0
        },
        random_seconds: priced(&reads.random)?,
        random_reads: reads.random_reads,
        sequential_requests: reads.sequential.requests.len(),
    })
}

/// Run the experiment, print and write the report.
pub fn run_aging(exp: &Experiment, a: &RunArgs) -> Result<()> {
    let spec: AgingOpSpec = exp.params()?;
    spec.validate()?;
    let device = a.device_or(exp);
    let out_dir = a.out_dir(exp);
    let h = Human::new(a.json.as_deref());
    crate::support::warn_if_leftovers();
    let scale = a.run_scale(exp)?;
    let cpu_scale = a.cpu_scale.unwrap_or(spec.cpu_scale);
    // every name resolved before any work
    let pops = spec
        .workloads
        .iter()
        .map(|w| {
            layoutlab_workload::population_shrunk(w, scale)
                .with_context(|| format!("workload '{w}' of experiment '{}'", exp.name))
        })
        .collect::<Result<Vec<_>>>()?;
    for p in &spec.policies {
        policy::by_name(p, &PolicyParams::new())?;
        MkfsProfile::by_name(spec.mkfs_profile_of(p))?;
    }
    // Whose e2fsck checks each policy's images; a period one not built fails here.
    let mut e2fsck_of = std::collections::BTreeMap::new();
    for p in &spec.policies {
        let period = spec.period_e2fsprogs.get(p).map(String::as_str);
        let e = a
            .e2fsprogs(period)
            .with_context(|| format!("the e2fsck of policy {p}"))?;
        e.program("e2fsck")?;
        e2fsck_of.insert(p.clone(), e);
    }
    crate::support::load_device(&device)?;
    if let Some(fast) = &spec.fast_device {
        crate::steps::price::check_faster(fast, &device)?;
    }
    if let Some(k) = a.closed_loop {
        // The capture's device is the experiment's disk (a split device is priced from the
        // same stream, never captured on): refused here, before any work, if the route cannot
        // honour it.
        crate::support::check_emulable(&device, k)?;
    }
    layoutlab_rig::require_root("running e2fsck on a loop device under block tracing")?;
    let (workdir, _memory) = crate::support::work_dir(a.workdir.as_deref())?;
    std::fs::create_dir_all(&workdir)
        .with_context(|| format!("creating work directory {}", workdir.display()))?;
    let opts = RunOptions {
        scale,
        device: device.clone(),
        workdir: workdir.clone(),
        keep: false,
        cpu_scale,
        jobs: 1,
        e2fsck: layoutlab_rig::E2fsprogs::Today,
        closed_loop: a.closed_loop,
    };
    let check_spec = spec.check_spec();
    let started = Instant::now();
    let cells = pops.len() * spec.policies.len() * spec.ages.len();
    // Closed loop measures time on this machine: one cell at a time, each on its own emulator,
    // so that the cells do not slow each other's route (as the fsck operation's policies).
    let jobs = match a.closed_loop {
        Some(_) => 1,
        None => crate::support::jobs(a.jobs).clamp(1, spec.policies.len()),
    };
    eprintln!(
        "{} — scale {scale} on {device}: {} workloads × {} policies × {} ages = {cells} cells, {jobs} at a time{}",
        exp.title,
        pops.len(),
        spec.policies.len(),
        spec.ages.len(),
        match (a.closed_loop, &spec.fast_device) {
            (None, _) => String::new(),
            (Some(k), fast) => format!(
                " (closed loop at time scale {k}: one cell at a time, each e2fsck on its own emulated {device}{})",
                fast.as_ref().map_or(String::new(), |f| format!(
                    "; the split device with {f} is priced open loop from the same stream"
                ))
            ),
        }
    );
    let oldest = spec.ages.iter().copied().fold(0.0, f64::max);
    let mut runs = Vec::new();
    // the next workload's stream, when made while this one's passes ran
    let mut ahead: Option<AgedStream> = None;
    for (w, pop) in pops.iter().enumerate() {
        let AgedStream {
            aged,
            ends,
            tree_ops,
        } = match ahead.take() {
            Some(made) => made,
            None => make_stream(pop, &spec, exp.seed)?,
        };
        // The ages in the order their prefixes end, for the one pass of each policy.
        let mut by_end: Vec<usize> = (0..spec.ages.len()).collect();
        by_end.sort_by_key(|&i| ends[i]);
        // Each policy plans every age in one pass over the stream and checks each age's plan
        // as it comes (issue 28): its own image, loop device and traced e2fsck, as
        // metacluster-fsck's policies do; the policies at once, one per CPU, within memory.
        // Predictions take e2fsck's think time from its CPU time, not the wall clock
        // (docs/replay.md), so running them together changes no number.
        let (checked, aged) = (aged.tree(), aged.population());
        let jobs_here = cell_jobs(jobs, a.jobs.is_some(), aged.ops.len())?;
        eprintln!(
            "{}: {jobs_here} policies' passes at once (of {jobs} asked)",
            pop.name
        );
        let first = w * spec.policies.len() * spec.ages.len();
        // The next workload's stream is made beside these passes when they are small (issue
        // 28: bench5's, while ubuntu-32g's stream took 52 s alone at scale 1); beside big
        // passes it waits for them, as their memory guard counted no other stream, and with
        // one job (`--jobs 1`) everything still runs one at a time.
        let small = passes_bytes(aged.ops.len(), jobs_here) <= AHEAD_BESIDE_BYTES;
        let next = pops.get(w + 1).filter(|_| jobs > 1 && small);
        let (got, next_stream) = std::thread::scope(|scope| {
            let making = next.map(|p| scope.spawn(|| make_stream(p, &spec, exp.seed)));
            let got = crate::support::run_queue(spec.policies.len(), jobs_here, |k| {
                let pname = &spec.policies[k];
                let opts = RunOptions {
                    e2fsck: e2fsck_of[pname],
                    ..opts.clone()
                };
                let cell = |i: usize| first + k * spec.ages.len() + i + 1;
                let pass = PolicyPass {
                    exp,
                    spec: &spec,
                    check_spec: &check_spec,
                    opts: &opts,
                    pop: aged,
                    pname,
                };
                let mut made: Vec<Option<AgingRun>> = vec![None; spec.ages.len()];
                let mut failed: Option<anyhow::Error> = None;
                let mut since = Instant::now();
                let ends_in_order: Vec<usize> = by_end.iter().map(|&i| ends[i]).collect();
                let (profile, geo) =
                    crate::steps::plan::format(spec.mkfs_profile_of(pname), aged.fs_bytes)?;
                let pol = policy::by_name(pname, &PolicyParams::new())?;
                let planning = crate::stages::enter(crate::stages::PLAN);
                pol.plan_prefixes_checked(
                    &geo,
                    checked,
                    exp.seed,
                    &ends_in_order,
                    &mut |j, plan| {
                        let i = by_end[j];
                        let n = spec.ages[i];
                        eprintln!("[{}/{cells}] {} {pname} age {n}", cell(i), pop.name);
                        let aging_operations = (ends[i] - tree_ops) as u64;
                        match pass.cell(&profile, &geo, plan, n, aging_operations) {
                            Ok(mut run) => {
                                // this cell's share of the pass since the previous age's,
                                // and its check
                                run.seconds_here = since.elapsed().as_secs_f64();
                                since = Instant::now();
                                // the aged population's name says how it was aged; tables
                                // group by the tree
                                run.population = pop.name.clone();
                                made[i] = Some(run);
                                std::ops::ControlFlow::Continue(())
                            }
                            Err(e) => {
                                failed = Some(e.context(format!("{} {pname} age {n}", pop.name)));
                                std::ops::ControlFlow::Break(())
                            }
                        }
                    },
                )
                .with_context(|| format!("{pname} planning {} aged up to {oldest}", pop.name))?;
                drop(planning);
                if let Some(e) = failed {
                    return Err(e);
                }
                Ok(made
                    .into_iter()
                    .map(|r| r.expect("the pass gave every age's plan"))
                    .collect::<Vec<AgingRun>>())
            });
            let next_stream =
                making.map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)));
            (got, next_stream)
        });
        let got = got?;
        ahead = next_stream.transpose()?;
        // back in the experiment's order: per age, the policies
        for i in 0..spec.ages.len() {
            for policy_runs in &got {
                runs.push(policy_runs[i].clone());
            }
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    let _reporting = crate::stages::enter(crate::stages::REPORT);
    let conclusion = conclude(&spec, &runs);
    // tables
    for pop in &pops {
        let table = age_table(&spec, &runs, &pop.name)?;
        h.say(&table.to_terminal(Some(120))?);
        if let Some(t) = split_table(&runs, &pop.name)? {
            h.say(&t.to_terminal(Some(120))?);
        }
    }
    let closed_lines = closed_loop_lines(&runs, &device);
    for line in closed_lines.iter().chain(&conclusion) {
        h.say(&format!("{line}\n"));
    }
    // report files
    std::fs::create_dir_all(&out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
    let mut html = HtmlBundle::new(&exp.title);
    html.text(&format!("scale {scale} on {device}"));
    for pop in &pops {
        let table = age_table(&spec, &runs, &pop.name)?;
        html.table(table);
        if let Some(t) = split_table(&runs, &pop.name)? {
            html.table(t);
        }
        for (what, unit, file, value) in [
            (
                "e2fsck time",
                Some("s"),
                "fsck",
                (|r: &AgingRun| r.total_seconds) as fn(&AgingRun) -> f64,
            ),
            ("layout score", None, "score", |r: &AgingRun| r.layout_score),
        ] {
            let chart = SweepChart::new(
                &format!("{} — {what} after aging", pop.name),
                "age",
                spec.ages.iter().map(|a| format!("{a}×")).collect(),
                what,
                unit,
            );
            let series: Vec<SweepSeries> = spec
                .policies
                .iter()
                .map(|p| SweepSeries {
                    name: p.clone(),
                    values: spec
                        .ages
                        .iter()
                        .map(|&n| {
                            runs.iter()
                                .find(|r| r.population == pop.name && &r.policy == p && r.age == n)
                                .map(value)
                        })
                        .collect(),
                })
                .collect();
            let svg = chart.render(&series);
            let name = format!("{}-{file}.svg", pop.name.replace(['/', '@'], "_"));
            html.figure(
                &format!(
                    "The {what} of {} after each amount of aging (in capacities written), one line per policy.",
                    pop.name
                ),
                &name,
                svg,
            );
        }
    }
    for line in closed_lines.iter().chain(&conclusion) {
        html.text(line);
    }
    html.save(&out_dir)?;
    if let Some(path) = &a.json {
        write_json(
            path,
            &Output {
                experiment: &exp.name,
                device: &device,
                scale,
                fullness: spec.fullness,
                e2fsck_real_time: spec.e2fsck_real_time || a.closed_loop.is_some(),
                closed_loop: a.closed_loop,
                runs: &runs,
                conclusion: &conclusion,
                seconds,
            },
        )?;
    }
    eprintln!(
        "{cells} cells in {seconds:.0} s; report in {}",
        out_dir.display()
    );
    Ok(())
}

/// A workload's oldest stream, which every age's cell plans a prefix of.
struct AgedStream {
    /// The tree (trimmed to the fullness) and the stream after it, checked once (every
    /// operation possible in order) for all the policies' passes rather than by each (issue 28).
    aged: CheckedPopulation,
    /// Where each age's prefix ends: `ends[i]` operations are the tree aged `ages[i]`.
    ends: Vec<usize>,
    /// The tree's operations, before the stream's.
    tree_ops: usize,
}

/// `pop` trimmed to the experiment's fullness, aged to its oldest age with `seed`, checked.
fn make_stream(pop: &Population, spec: &AgingOpSpec, seed: u64) -> Result<AgedStream> {
    let budget = (pop.fs_bytes as f64 * spec.fullness) as u64;
    let (tree, left_out) = trim_to(pop, budget);
    if left_out > 0 {
        eprintln!(
            "{}: {left_out} files left out to hold {:.0}% of the file system",
            pop.name,
            spec.fullness * 100.0
        );
    }
    // One stream, the oldest age's, for every age: a younger age's stream is its prefix
    // (`age_prefixes`), so `ends[i]` operations of it are the tree aged `ages[i]`.
    let t = Instant::now();
    let generating = crate::stages::enter(crate::stages::PLAN);
    let oldest = spec.ages.iter().copied().fold(0.0, f64::max);
    let (aged, ends) = if oldest == 0.0 {
        (tree.clone(), vec![tree.ops.len(); spec.ages.len()])
    } else {
        age_prefixes(
            &tree,
            &StreamSpec {
                fullness: Some(spec.fullness),
                ..StreamSpec::new(oldest, seed)
            },
            metadata_margin_bytes(tree.fs_bytes),
            &spec.ages,
        )
        .with_context(|| format!("aging {} by {oldest} capacities", pop.name))?
    };
    let tree_ops = tree.ops.len();
    drop(tree);
    eprintln!(
        "{}: {} aging operations made in {:.1} s for ages {}",
        pop.name,
        aged.ops.len() - tree_ops,
        t.elapsed().as_secs_f64(),
        spec.ages
            .iter()
            .map(|a| format!("{a}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let aged = CheckedPopulation::new(aged)
        .with_context(|| format!("{} aged up to {oldest}", pop.name))?;
    drop(generating);
    Ok(AgedStream {
        aged,
        ends,
        tree_ops,
    })
}

/// The next workload's stream is made beside the passes of one whose passes the memory guard
/// counts at most this many bytes ([`passes_bytes`]): bench5's, not ubuntu-32g's. Making it
/// early raises the peak by at most what that workload holds meanwhile, these passes and
/// their stream (170 bytes per operation against each pass's 96): under 3 GiB.
const AHEAD_BESIDE_BYTES: u64 = 1 << 30;

/// What the memory guard counts for `jobs` passes over `ops` operations at once.
fn passes_bytes(ops: usize, jobs: usize) -> u64 {
    (ops as u64).max(1) * CELL_BYTES_PER_OP * jobs as u64
}

/// Memory one policy's pass may take per operation of the oldest stream, bytes. Measured
/// (`cargo run --release -p layoutlab-layout --example pass_memory -- ubuntu-32g 0.25`: each
/// pass's peak resident set above the stream, every age's plan checked, 2026-11-27): 63.4
/// bytes per operation at most (ext3-2007; ext4-2009 61.0) over ubuntu-32g@0.25's 9.1 million
/// operations, after issue 28's cut of the ext3 planner's per-operation tables (17 bytes of
/// them); the stream itself, which all passes share, is 170 bytes per operation and is not
/// in this. Half as much again for what a cell holds beside its pass (its age's plan, the
/// plan's metrics, the image's writer), rounded: 96. That half is a margin chosen, not
/// measured alone; the check against it: at scale 1 with two passes at once the process
/// peaked at 11.34 GB, under the stream (170 × 36.5 million = 6.2 GB) and two cells at 96
/// bytes per operation (7.0 GB). It was 400, the whole matrix's peak per operation with the
/// stream inside, which kept ubuntu-32g's scale 1 to one pass at a time.
const CELL_BYTES_PER_OP: u64 = 96;

/// Policies' passes run at once: `jobs`, unless the user did not ask for a number and that
/// many passes over `ops` operations each would not fit in half the memory available now
/// (the full scale's ubuntu-32g: there the passes run one at a time, as the cells did).
fn cell_jobs(jobs: usize, asked: bool, ops: usize) -> Result<usize> {
    if asked || jobs <= 1 {
        return Ok(jobs.max(1));
    }
    let budget = layoutlab_rig::mem_available_bytes()? / 2;
    Ok(jobs.min((budget / passes_bytes(ops, 1)).max(1) as usize))
}

/// One policy's pass over a workload's oldest stream: what every age's cell of it shares.
struct PolicyPass<'a> {
    exp: &'a Experiment,
    spec: &'a AgingOpSpec,
    check_spec: &'a CheckSpec,
    opts: &'a RunOptions,
    /// The tree and the oldest stream.
    pop: &'a Population,
    pname: &'a str,
}

impl PolicyPass<'_> {
    /// The cell of age `n`, whose plan the pass just made: the plan checked, its image
    /// written, checked by the traced e2fsck and priced, its reads priced.
    fn cell(
        &self,
        profile: &MkfsProfile,
        geo: &Geometry,
        plan: Plan,
        n: f64,
        aging_operations: u64,
    ) -> Result<AgingRun> {
        let &PolicyPass {
            exp,
            spec,
            check_spec,
            opts,
            pop,
            pname,
        } = self;
        let geo = geo.clone();
        plan.check(&geo).map_err(|e| {
            anyhow::anyhow!("policy {pname} made an inconsistent plan at age {n}: {e}")
        })?;
        let metrics = LayoutMetrics::of(&plan, &geo);
        let image_path = opts.workdir.join(format!("{}-{pname}-{n}.img", exp.name));
        if image_path.exists() {
            bail!(
                "{} already exists; remove it or choose another --workdir",
                image_path.display()
            );
        }
        let image = crate::stages::timed(crate::stages::IMAGE, || {
            crate::steps::image::make_image(&image_path, profile, &geo)
        })?;
        let run = traced_e2fsck(check_spec, opts, &geo, &plan, image.path(), 0.0)?;
        drop(image);
        // the read-cost model: priced in memory (inside the pass's plan stage otherwise)
        let _pricing = crate::stages::enter(crate::stages::PRICE);
        let bs = u64::from(geo.block_size_bytes);
        let traces = read_traces(
            &plan,
            bs,
            (spec.read_files, spec.random_reads, spec.os_max_sectors_kb),
            exp.seed,
        );
        // the disks alone: as many of the preset as hold the file system, as the check's replay
        let fs_sectors = geo.blocks_count * bs / 512;
        let reads = read_cost(&traces, &|| {
            crate::steps::price::linear_device(&opts.device, fs_sectors)
        })?;
        let split = match (
            &spec.fast_device,
            policy::metadata_region_end(pname, &PolicyParams::new(), &geo)?,
        ) {
            (Some(fast), Some(end)) => Some(split_cell(
                &run,
                &plan,
                &geo,
                &traces,
                fast,
                &opts.device,
                end,
                opts.cpu_scale,
            )?),
            _ => None,
        };
        let outside = policy::overflowed_mapping_blocks(pname, &PolicyParams::new(), &plan, &geo)?
            .unwrap_or(0);
        Ok(AgingRun {
            policy: pname.to_string(),
            population: pop.name.clone(),
            age: n,
            fsck_clean: run.fsck_clean,
            layout_score: metrics.layout_score.score,
            passes: run.passes,
            total_seconds: run.total_seconds,
            closed_loop: run.closed_loop,
            requests: run.requests,
            mapping_blocks: plan.mapping_blocks(),
            mapping_blocks_outside: outside,
            aging_operations,
            files: plan
                .inodes
                .iter()
                .filter(|i| i.kind == InodeKind::File)
                .count() as u64,
            file_bytes: plan
                .inodes
                .iter()
                .filter(|i| i.kind == InodeKind::File)
                .map(|i| i.size_bytes)
                .sum(),
            reads,
            split,
            metrics,
            // the pass sets it: the cell's share of the pass and its check
            seconds_here: 0.0,
        })
    }
}

/// Each closed-loop cell's measured time beside its replay, as the fsck operation prints a
/// policy's (none open loop).
fn closed_loop_lines(runs: &[AgingRun], device: &str) -> Vec<String> {
    runs.iter()
        .filter_map(|r| {
            let c = r.closed_loop.as_ref()?;
            let what = format!("{} {} age {}", r.population, r.policy, r.age);
            Some(c.line(&what, device, r.total_seconds))
        })
        .collect()
}

/// `run`'s check and `traces`' reads priced with the metadata region (blocks `0..end`) on
/// `fast` and the rest on `slow`'s disks, and where the plan's metadata lies against it.
#[allow(clippy::too_many_arguments)]
fn split_cell(
    run: &crate::steps::check::PolicyRun,
    plan: &Plan,
    geo: &Geometry,
    traces: &ReadTraces,
    fast: &str,
    slow: &str,
    end: u64,
    cpu_scale: f64,
) -> Result<AgingSplit> {
    use crate::steps::price;
    let spb = u64::from(geo.block_size_bytes) / 512;
    let region = layoutlab_layout::policy::ext4_meta_ssd::footprint(plan, geo, end);
    let make = || price::split_device(fast, slow, end * spb, geo.blocks_count * spb);
    let fsck = price::split(run, &mut make()?, cpu_scale);
    let reads = read_cost(traces, &|| Ok(Box::new(make()?.device) as Box<dyn Device>))?;
    let sequential_ssd_bytes = traces
        .sequential
        .requests
        .iter()
        .filter(|r| r.sector < end * spb)
        .map(|r| u64::from(r.sectors) * 512)
        .sum();
    Ok(AgingSplit {
        region,
        fsck,
        reads,
        sequential_ssd_bytes,
    })
}

fn age_table(spec: &AgingOpSpec, runs: &[AgingRun], population: &str) -> Result<Table> {
    let mut t = Table::new(
        &format!("{population}: e2fsck -fn and reads after aging"),
        vec![
            Column::text("policy"),
            Column::number("age", Some("×")),
            Column::number("e2fsck", Some("s")),
            Column::number("layout score", None),
            Column::number("frag/file", None),
            Column::number("map blocks", None),
            Column::number("outside", None),
            Column::number("seq read", Some("MB/s")),
            Column::number("random", Some("s")),
        ],
    );
    for p in &spec.policies {
        for r in runs
            .iter()
            .filter(|r| r.population == population && &r.policy == p)
        {
            t.push_row(vec![
                Cell::text(&r.policy),
                Cell::num(r.age, 0),
                Cell::num(r.total_seconds, 1),
                Cell::num(r.layout_score, 3),
                Cell::num(r.metrics.fragments.mean, 2),
                Cell::num(r.mapping_blocks as f64, 0),
                Cell::num(r.mapping_blocks_outside as f64, 0),
                Cell::num(r.reads.sequential_mb_per_s, 1),
                Cell::num(r.reads.random_seconds, 2),
            ])?;
        }
    }
    Ok(t)
}

/// With a fast device: each cell on the disks alone and, for a policy with a metadata region,
/// on the split device: the check, each device's busy time, the reads, the region's overflow
/// and the SSD the metadata needs. None when no cell was split.
fn split_table(runs: &[AgingRun], population: &str) -> Result<Option<Table>> {
    let runs: Vec<&AgingRun> = runs.iter().filter(|r| r.population == population).collect();
    let Some(device) = runs
        .iter()
        .find_map(|r| r.split.as_ref().map(|s| &s.fsck.device))
    else {
        return Ok(None);
    };
    let mut t = Table::new(
        &format!(
            "{population}: metadata on the SSD ({device}) after aging, against the disks alone"
        ),
        vec![
            Column::text("policy"),
            Column::number("age", Some("×")),
            Column::text("metadata on"),
            Column::number("e2fsck", Some("s")),
            Column::number("SSD busy", Some("s")),
            Column::number("disk busy", Some("s")),
            Column::number("seq read", Some("MB/s")),
            Column::number("random", Some("s")),
            Column::number("overflow", Some("blocks")),
            Column::number("SSD needed", Some("GB")),
        ],
    );
    for r in runs {
        t.push_row(vec![
            Cell::text(&r.policy),
            Cell::num(r.age, 0),
            Cell::text("disks"),
            Cell::num(r.total_seconds, 2),
            Cell::text(""),
            Cell::text(""),
            Cell::num(r.reads.sequential_mb_per_s, 1),
            Cell::num(r.reads.random_seconds, 2),
            Cell::text(""),
            Cell::text(""),
        ])?;
        if let Some(s) = &r.split {
            let busy = |ssd: bool| {
                s.fsck
                    .passes
                    .iter()
                    .map(|p| {
                        if ssd {
                            p.ssd.busy_seconds
                        } else {
                            p.hdd.busy_seconds
                        }
                    })
                    .sum::<f64>()
            };
            let bs = f64::from(r.metrics.block_size_bytes);
            t.push_row(vec![
                Cell::text(&r.policy),
                Cell::num(r.age, 0),
                Cell::text("SSD"),
                Cell::num(s.fsck.total_seconds, 2),
                Cell::num(busy(true), 2),
                Cell::num(busy(false), 2),
                Cell::num(s.reads.sequential_mb_per_s, 1),
                Cell::num(s.reads.random_seconds, 2),
                Cell::count(s.region.overflow_blocks),
                Cell::num(s.region.used_end_block as f64 * bs / 1e9, 2),
            ])?;
        }
    }
    Ok(Some(t))
}

/// What the numbers say: per workload, which policy's e2fsck time grew least with age, and
/// what became of metaclustering's advantage over vanilla ext3 (with the overflowed indirect
/// blocks as evidence).
pub fn conclude(spec: &AgingOpSpec, runs: &[AgingRun]) -> Vec<String> {
    let mut out = Vec::new();
    let mut pops: Vec<&str> = runs.iter().map(|r| r.population.as_str()).collect();
    pops.dedup();
    let (first_age, last_age) = (
        spec.ages.iter().cloned().fold(f64::INFINITY, f64::min),
        spec.ages.iter().cloned().fold(0.0, f64::max),
    );
    let at = |pop: &str, p: &str, n: f64| {
        runs.iter()
            .find(|r| r.population == pop && r.policy == p && r.age == n)
    };
    for pop in pops {
        let mut best: Option<(&str, f64, f64)> = None;
        for p in &spec.policies {
            if let (Some(a), Some(b)) = (at(pop, p, first_age), at(pop, p, last_age)) {
                if best.is_none_or(|(_, _, t)| b.total_seconds < t) {
                    best = Some((p, a.total_seconds, b.total_seconds));
                }
            }
        }
        if let Some((p, a, b)) = best {
            out.push(format!(
                "{pop}: after {last_age}× capacity written, {p} checks fastest: e2fsck {a:.1} s at age {first_age} → {b:.1} s"
            ));
        }
        if let (Some(v0), Some(m0), Some(v1), Some(m1)) = (
            at(pop, "ext3-2007", first_age),
            at(pop, "ext3-metacluster", first_age),
            at(pop, "ext3-2007", last_age),
            at(pop, "ext3-metacluster", last_age),
        ) {
            let gain =
                |v: &AgingRun, m: &AgingRun| 100.0 * (1.0 - m.total_seconds / v.total_seconds);
            out.push(format!(
                "{pop}: metaclustering saves {:.0}% of e2fsck time at age {first_age} and {:.0}% at age {last_age}; \
                 {} of its {} indirect blocks are outside the metaclusters at age {last_age} ({} at age {first_age}); \
                 they lie in {} runs over {} groups at age {last_age} (against {} runs over {} groups at age {first_age}), \
                 files in {:.1} fragments on average (against {:.1})",
                gain(v0, m0),
                gain(v1, m1),
                m1.mapping_blocks_outside,
                m1.mapping_blocks,
                m0.mapping_blocks_outside,
                m1.metrics.mapping.disk.runs,
                m1.metrics.mapping.disk.groups,
                m0.metrics.mapping.disk.runs,
                m0.metrics.mapping.disk.groups,
                m1.metrics.fragments.mean,
                m0.metrics.fragments.mean,
            ));
        }
    }
    out
}
