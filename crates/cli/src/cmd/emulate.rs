//! `layoutlab device emulate PRESET IMAGE [-- CMD ...]`: a block device whose requests complete
//! when the preset's model says they do, with IMAGE's data (crates/rig/src/emulate.rs,
//! docs/emulate.md).

use anyhow::{bail, Context, Result};
use clap::Args as ClapArgs;
use layoutlab_device::replay::{replay, ReplayOptions};
use layoutlab_experiments::support::{capture_queue, charged_ns, load_device, start_emulator};
use layoutlab_rig::{EmulatedRequest, Emulator};
use layoutlab_trace::Op;
use serde::Serialize;
use std::path::PathBuf;

/// Arguments of `device emulate`.
#[derive(ClapArgs)]
pub struct EmulateArgs {
    /// Device preset name or preset file: the model that times every request.
    preset: String,
    /// The image whose bytes the device holds (read-only unless --read-write).
    image: PathBuf,
    /// K: the device answers K times faster than the model; the model's time is what is
    /// charged (and reported).
    #[arg(long, default_value_t = 1.0)]
    time_scale: f64,
    /// Let the device write to IMAGE (default: read-only; writes are refused).
    #[arg(long)]
    read_write: bool,
    /// Block-device readahead the emulated device presents (KiB), as the fsck experiments'.
    #[arg(long, default_value_t = 128)]
    read_ahead_kb: u32,
    /// Largest request (KiB) the emulated device accepts, as the fsck experiments'.
    #[arg(long, default_value_t = 512)]
    max_sectors_kb: u32,
    /// Write every served request (arrival and completion on the model's clock) as JSON.
    #[arg(long, value_name = "PATH")]
    log: Option<PathBuf>,
    /// The command to run against the device; `{dev}` in it becomes the device's path (also in
    /// $LAYOUTLAB_DEVICE). Without one, the device stays until SIGINT/SIGTERM.
    #[arg(last = true)]
    command: Vec<String>,
}

/// The JSON of `--log`.
#[derive(Serialize)]
struct Log<'a> {
    preset: &'a str,
    time_scale: f64,
    requests: Vec<LoggedRequest>,
}

#[derive(Serialize)]
struct LoggedRequest {
    write: bool,
    /// A cache flush (the file system's barrier; no sectors): present only when true, so a
    /// log of reads and writes reads as before.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    flush: bool,
    sector: u64,
    sectors: u32,
    arrival_ns: f64,
    /// Wall ns since the start when the daemon received it (the arrival is this times K,
    /// or the model's last completion when no reply was pending).
    received_ns: u64,
    complete_ns: f64,
    reply_late_ns: f64,
}

/// Starts the emulator over `image` on `preset` with the fsck experiments' queue
/// (read-ahead and request size as asked).
pub fn start(
    preset: &str,
    image: &std::path::Path,
    time_scale: f64,
    read_only: bool,
    read_ahead_kb: u32,
    max_sectors_kb: u32,
) -> Result<Emulator> {
    let queue = capture_queue(preset, Some(read_ahead_kb), Some(max_sectors_kb))?;
    start_emulator(preset, image, time_scale, read_only, queue)
}

/// Runs `device emulate`.
pub fn run(a: EmulateArgs) -> Result<()> {
    layoutlab_rig::cleanup::install();
    if !a.image.is_file() {
        bail!("{}: no such image file", a.image.display());
    }
    let emulator = start(
        &a.preset,
        &a.image,
        a.time_scale,
        !a.read_write,
        a.read_ahead_kb,
        a.max_sectors_kb,
    )?;
    let dev = emulator.device().path().to_path_buf();
    eprintln!(
        "layoutlab: emulating {} on {} over {} ({}, time scale {})",
        a.preset,
        dev.display(),
        a.image.display(),
        if a.read_write {
            "read-write"
        } else {
            "read-only"
        },
        a.time_scale
    );
    println!("{}", dev.display());
    if a.command.is_empty() {
        // Until SIGINT/SIGTERM, whose handler tears everything down and exits 130/143.
        loop {
            std::thread::sleep(std::time::Duration::from_secs(3600));
        }
    }
    let dev_text = dev.display().to_string();
    let args: Vec<String> = a
        .command
        .iter()
        .map(|s| s.replace("{dev}", &dev_text))
        .collect();
    let status = std::process::Command::new(&args[0])
        .args(&args[1..])
        .env("LAYOUTLAB_DEVICE", &dev_text)
        .status()
        .with_context(|| format!("running {}", args[0]))?;
    let served = emulator.stop()?;
    print_summary(&served, a.time_scale);
    if let Some(path) = &a.log {
        let log = Log {
            preset: &a.preset,
            time_scale: a.time_scale,
            requests: served
                .iter()
                .map(|r| LoggedRequest {
                    write: r.request.op == Op::Write,
                    flush: r.request.op == Op::Flush,
                    sector: r.request.sector,
                    sectors: r.request.sectors,
                    arrival_ns: r.arrival_ns,
                    received_ns: r.received_ns,
                    complete_ns: r.complete_ns,
                    reply_late_ns: r.reply_late_ns,
                })
                .collect(),
        };
        super::write_json(path, &log)?;
    }
    if !status.success() {
        bail!("{} exited with {status}", args.join(" "));
    }
    Ok(())
}

/// Requests served, the model's time they took and how late the daemon's replies were.
fn print_summary(served: &[EmulatedRequest], time_scale: f64) {
    let model_s = served.iter().map(|r| r.complete_ns).fold(0.0f64, f64::max) / 1e9;
    let mut late: Vec<f64> = served.iter().map(|r| r.reply_late_ns / 1e3).collect();
    late.sort_by(f64::total_cmp);
    let pct = |p: f64| {
        late.get(((late.len() as f64 - 1.0) * p).round() as usize)
            .copied()
            .unwrap_or(0.0)
    };
    eprintln!(
        "layoutlab: {} requests; {model_s:.3} s of model time ({:.3} s of wall time at K = {time_scale}); \
         reply lateness p50 {:.0} µs, p99 {:.0} µs, max {:.0} µs",
        served.len(),
        model_s / time_scale,
        pct(0.5),
        pct(0.99),
        pct(1.0)
    );
}

/// One preset's result of `bench emulate`.
#[derive(Serialize, Debug)]
pub struct BenchResult {
    /// The preset.
    pub preset: String,
    /// The time scale K.
    pub time_scale: f64,
    /// Requests the kernel traced on the emulated device.
    pub kernel_requests: usize,
    /// Requests the daemon served.
    pub served_requests: usize,
    /// Kernel requests paired with a served request of the same op, sector and length.
    pub matched: usize,
    /// Of the matched, the share whose kernel completion (block_rq_complete −
    /// block_rq_issue) is within max(2%, 100 µs) of the model's service time (divided by K).
    pub share_within: f64,
    /// Kernel time minus the model's service time (wall, µs), percentiles 1, 50, 99 and max.
    pub error_us: [f64; 4],
    /// The model's service times (wall, µs), percentiles 1, 50, 99.
    pub model_us: [f64; 3],
    /// The daemon's reply lateness (µs), percentiles 50, 99.
    pub reply_late_us: [f64; 2],
    /// Delay from block_rq_issue to the daemon's receipt above the smallest seen (µs),
    /// percentiles 50 and 99: the loop driver's worker waiting for a CPU.
    pub inbound_above_best_us: [f64; 2],
    /// Delay from the daemon's reply to block_rq_complete above the smallest seen (µs),
    /// percentiles 50 and 99.
    pub outbound_above_best_us: [f64; 2],
    /// Requests whose arrival the model's clock raised to its last completion (received
    /// while no reply was pending, before that completion's time: `ModelClock` in
    /// crates/rig/src/emulate.rs).
    pub raised: usize,
    /// How far they were raised (model µs), percentiles 50 and 99 and max.
    pub raised_model_us: [f64; 3],
    /// Of the raised requests, those the kernel issued (block_rq_issue) before it completed
    /// (block_rq_complete) every request served before them: where the premise of the raise,
    /// a program that waited for the last completion, did not hold.
    pub raised_issued_early: usize,
    /// For those, how much earlier the kernel issued them than that completion (wall µs),
    /// max.
    pub raised_issued_early_max_us: f64,
    /// The closed-loop result: e2fsck's time on the emulated device, first arrival to last
    /// completion, charging the model's time while a request was in the device and the real
    /// time (CPU) between, s.
    pub closed_loop_s: f64,
    /// The open-loop replay, on the same preset, of the stream the kernel issued to the
    /// emulated device (its trace, think times as the replay takes them), s.
    pub open_loop_same_stream_s: f64,
    /// Requests of the same e2fsck captured on a plain loop device presenting the same queue
    /// (the open-loop capture): does closed loop change the stream?
    pub plain_requests: usize,
    /// The open-loop replay of that plain capture on the preset, s.
    pub plain_open_loop_s: f64,
    /// The wall time of the traced e2fsck, s.
    pub wall_s: f64,
    /// The route's latency the emulator measured at start and sends every reply early by
    /// (µs; `Emulator::route_ns`).
    pub route_us: f64,
    /// The machine's 1-minute load average when the bench started and when its emulated
    /// e2fsck ended: the bar is a property of the route under that load.
    pub load_average: [f64; 2],
}

/// The 1-minute load average (`/proc/loadavg`), NaN if unreadable.
fn load_average() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|t| t.split_whitespace().next().and_then(|x| x.parse().ok()))
        .unwrap_or(f64::NAN)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// Pairs each kernel request (in issue order) with the first unpaired served request of the
/// same op, sector and length among the next few: the loop driver sends one FUSE request per
/// block request, in issue order, but two in flight may reach the daemon swapped.
fn pair(kernel: &[layoutlab_trace::Request], served: &[EmulatedRequest]) -> Vec<(usize, usize)> {
    const WINDOW: usize = 64;
    let mut used = vec![false; served.len()];
    let mut first_free = 0;
    let mut out = Vec::new();
    for (k, r) in kernel.iter().enumerate() {
        while first_free < served.len() && used[first_free] {
            first_free += 1;
        }
        let end = (first_free + WINDOW).min(served.len());
        if let Some(s) = (first_free..end).find(|&s| {
            !used[s]
                && served[s].request.op == r.op
                && served[s].request.sector == r.sector
                && served[s].request.sectors == r.sectors
        }) {
            used[s] = true;
            out.push((k, s));
        }
    }
    out
}

/// The requests whose arrival the model's clock raised, checked against the kernel's clock.
struct Raised {
    /// How far each was raised, model µs, sorted.
    raised_model_us: Vec<f64>,
    /// For each raised request the kernel issued before it completed every request served
    /// earlier: by how much (wall µs).
    issued_early_us: Vec<f64>,
}

/// Finds the served requests whose model arrival is later than their receipt times K, and
/// for each (when paired with a kernel request) compares the kernel's issue of it with the
/// latest kernel completion of the requests served before it.
fn raised_requests(
    kernel: &[layoutlab_trace::Request],
    served: &[EmulatedRequest],
    pairs: &[(usize, usize)],
    time_scale: f64,
) -> Raised {
    let mut kernel_of = vec![None; served.len()];
    for &(k, s) in pairs {
        kernel_of[s] = Some(k);
    }
    let mut raised_model_us = Vec::new();
    let mut issued_early_us = Vec::new();
    // The latest kernel completion among the requests served so far.
    let mut latest_done: Option<u64> = None;
    for (s, r) in served.iter().enumerate() {
        let by = r.arrival_ns - (r.received_ns as f64 * time_scale).round();
        if by > 0.0 {
            raised_model_us.push(by / 1e3);
            if let (Some(k), Some(done)) = (kernel_of[s], latest_done) {
                let issue = kernel[k].issue_ns;
                if issue < done {
                    issued_early_us.push((done - issue) as f64 / 1e3);
                }
            }
        }
        if let Some(done) = kernel_of[s].and_then(|k| kernel[k].complete_ns) {
            latest_done = Some(latest_done.map_or(done, |d| d.max(done)));
        }
    }
    raised_model_us.sort_by(f64::total_cmp);
    Raised {
        raised_model_us,
        issued_early_us,
    }
}

/// `bench emulate`: the real e2fsck (`-fn -E readahead_kb=0`, as the fsck experiments run it)
/// on the emulated device, traced; each request's completion as the kernel saw it against the
/// model's service time.
pub fn bench(preset: &str, image: &std::path::Path, time_scale: f64) -> Result<BenchResult> {
    layoutlab_rig::cleanup::install();
    let load_before = load_average();
    let emulator = start(preset, image, time_scale, true, 128, 512)?;
    let route_us = emulator.route_ns() as f64 / 1e3;
    let dev = emulator.device();
    dev.flush_buffers()?;
    let opts = layoutlab_rig::FsckOptions {
        extra_args: vec!["-E".into(), "readahead_kb=0".into()],
        ..layoutlab_rig::FsckOptions::default()
    };
    let t = std::time::Instant::now();
    let run = layoutlab_rig::run_e2fsck_traced(dev.path(), dev.dev(), &opts)?;
    let wall_s = t.elapsed().as_secs_f64();
    let load_after = load_average();
    let served = emulator.stop()?;
    let closed_loop_s = charged_ns(&served, time_scale) / 1e9;
    let open_loop_same_stream_s = {
        let mut model = load_device(preset)?;
        replay(
            model.as_mut(),
            &run.capture.trace,
            &ReplayOptions::default(),
        )
        .wall_ns
            / 1e9
    };
    let plain = {
        let queue = capture_queue(preset, Some(128), Some(512))?;
        let dev = layoutlab_rig::LoopDevice::attach_presenting(image, true, &queue)?;
        dev.flush_buffers()?;
        layoutlab_rig::run_e2fsck_traced(dev.path(), dev.dev(), &opts)?
    };
    let plain_open_loop_s = {
        let mut model = load_device(preset)?;
        replay(
            model.as_mut(),
            &plain.capture.trace,
            &ReplayOptions::default(),
        )
        .wall_ns
            / 1e9
    };
    if run.exit_code != 0 {
        bail!(
            "e2fsck exited {} on {}:\n{}",
            run.exit_code,
            image.display(),
            run.stdout
        );
    }
    if run.capture.lost_events > 0 {
        bail!("the kernel lost {} trace events", run.capture.lost_events);
    }
    let kernel = &run.capture.trace.requests;
    let pairs = pair(kernel, &served);
    let mut errors = Vec::new();
    let mut models = Vec::new();
    let mut within = 0usize;
    let (mut inbound, mut outbound) = (Vec::new(), Vec::new());
    for &(k, s) in &pairs {
        let Some(done) = kernel[k].complete_ns else {
            continue;
        };
        let seen = (done - kernel[k].issue_ns) as f64;
        let model = (served[s].complete_ns - served[s].arrival_ns) / time_scale;
        let error = seen - model;
        if error.abs() <= (0.02 * model).max(100_000.0) {
            within += 1;
        }
        // Both clocks are CLOCK_MONOTONIC-based but start at different points: each
        // request's offset between them, less the smallest, is the delay it met above the
        // route's best on the way in (issue → daemon) and on the way out (reply → complete).
        inbound.push(served[s].received_ns as f64 - kernel[k].issue_ns as f64);
        outbound.push(done as f64 - served[s].complete_ns / time_scale - served[s].reply_late_ns);
        errors.push(error / 1e3);
        models.push(model / 1e3);
    }
    errors.sort_by(f64::total_cmp);
    models.sort_by(f64::total_cmp);
    let raised = raised_requests(kernel, &served, &pairs, time_scale);
    let mut late: Vec<f64> = served.iter().map(|r| r.reply_late_ns / 1e3).collect();
    late.sort_by(f64::total_cmp);
    let above_best = |mut v: Vec<f64>| {
        let best = v.iter().copied().fold(f64::INFINITY, f64::min);
        v.iter_mut().for_each(|x| *x = (*x - best) / 1e3);
        v.sort_by(f64::total_cmp);
        [percentile(&v, 0.5), percentile(&v, 0.99)]
    };
    Ok(BenchResult {
        inbound_above_best_us: above_best(inbound),
        outbound_above_best_us: above_best(outbound),
        preset: preset.to_string(),
        time_scale,
        kernel_requests: kernel.len(),
        served_requests: served.len(),
        matched: errors.len(),
        share_within: within as f64 / errors.len().max(1) as f64,
        error_us: [
            percentile(&errors, 0.01),
            percentile(&errors, 0.5),
            percentile(&errors, 0.99),
            percentile(&errors, 1.0),
        ],
        model_us: [
            percentile(&models, 0.01),
            percentile(&models, 0.5),
            percentile(&models, 0.99),
        ],
        reply_late_us: [percentile(&late, 0.5), percentile(&late, 0.99)],
        raised: raised.raised_model_us.len(),
        raised_model_us: [
            percentile(&raised.raised_model_us, 0.5),
            percentile(&raised.raised_model_us, 0.99),
            percentile(&raised.raised_model_us, 1.0),
        ],
        raised_issued_early: raised.issued_early_us.len(),
        raised_issued_early_max_us: raised.issued_early_us.iter().copied().fold(0.0, f64::max),
        closed_loop_s,
        open_loop_same_stream_s,
        plain_requests: plain.capture.trace.requests.len(),
        plain_open_loop_s,
        wall_s,
        route_us,
        load_average: [load_before, load_after],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use layoutlab_rig::EmuRequest;
    use layoutlab_trace::{Flags, Request};

    fn kernel(issue_ns: u64, complete_ns: u64, sector: u64) -> Request {
        Request {
            issue_ns,
            complete_ns: Some(complete_ns),
            op: Op::Read,
            sector,
            sectors: 8,
            flags: Flags::default(),
            tag: 0,
            cpu: None,
        }
    }

    fn served(received_ns: u64, arrival_ns: f64, sector: u64) -> EmulatedRequest {
        EmulatedRequest {
            request: EmuRequest {
                op: Op::Read,
                sector,
                sectors: 8,
            },
            arrival_ns,
            received_ns,
            cpu_ns: None,
            complete_ns: arrival_ns + 5e6,
            reply_late_ns: 0.0,
        }
    }

    /// At K = 2: request 1 is raised and the kernel issued it after request 0 completed (the
    /// raise's premise held); request 2 is raised too, but the kernel issued it 30 µs before
    /// request 1's completion (it did not); request 3 is not raised.
    #[test]
    fn raised_requests_are_counted_and_checked_against_the_kernels_clock() {
        let kernel = [
            kernel(1_000_000, 3_500_000, 0),
            kernel(3_520_000, 6_000_000, 8),
            kernel(5_970_000, 8_500_000, 16),
            kernel(20_000_000, 22_500_000, 24),
        ];
        let served = [
            served(0, 0.0, 0),
            served(2_480_000, 5e6, 8),
            served(4_990_000, 10e6, 16),
            served(19_000_000, 38e6, 24),
        ];
        let pairs = pair(&kernel, &served);
        assert_eq!(pairs, [(0, 0), (1, 1), (2, 2), (3, 3)]);
        let r = raised_requests(&kernel, &served, &pairs, 2.0);
        assert_eq!(r.raised_model_us, [20.0, 40.0]);
        assert_eq!(r.issued_early_us, [30.0]);
    }
}
