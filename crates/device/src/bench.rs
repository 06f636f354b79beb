//! The replay benchmark: how many requests per second the replay engine and a model sustain.
//!
//! The synthetic trace mixes sequential runs (1 to 64 requests of 4 to 128 KiB back to back)
//! with seeks to uniformly random places, issued synchronously with a few microseconds of
//! think time, as a file-system checker or a cold-cache read walk would issue them.

use std::time::Instant;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use layoutlab_trace::{Flags, Op, Request, Trace};

use crate::replay::{replay, ReplayOptions};
use crate::Device;

/// What [`bench_replay`] measured.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BenchReport {
    /// Requests replayed.
    pub requests: u64,
    /// Wall-clock seconds of the replay (trace generation excluded).
    pub seconds: f64,
    /// `requests / seconds`.
    pub requests_per_second: f64,
    /// On-CPU seconds of the replaying thread (Linux `/proc/thread-self/schedstat`), which a
    /// machine shared with other jobs does not inflate; `None` where unavailable.
    pub cpu_seconds: Option<f64>,
    /// `requests / cpu_seconds`.
    pub cpu_requests_per_second: Option<f64>,
}

/// On-CPU time of the calling thread, ns (Linux only).
fn thread_cpu_ns() -> Option<f64> {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// The preset `layoutlab bench replay` runs on: the HDD model with its cache (issue 2's drive).
pub const BENCH_PRESET: &str = "sata-400g-2007";

/// Requests in the standard benchmark trace.
pub const BENCH_REQUESTS: usize = 1_000_000;

/// Loads [`BENCH_PRESET`] and runs [`bench_replay`] on [`BENCH_REQUESTS`] requests (seed 1).
pub fn bench_default() -> Result<BenchReport, crate::DeviceError> {
    let mut dev = crate::preset::load_preset(BENCH_PRESET)?;
    Ok(bench_replay(dev.as_mut(), BENCH_REQUESTS, 1))
}

/// A seeded synthetic trace of `n_requests` within `capacity_sectors` (see the module docs).
pub fn synthetic_trace(n_requests: usize, seed: u64, capacity_sectors: u64) -> Trace {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut t = Trace::default();
    t.requests.reserve(n_requests);
    let max_sectors = 256u64;
    let top = capacity_sectors.saturating_sub(max_sectors * 64).max(1);
    let mut sector = 0u64;
    let mut run_left = 0u32;
    let mut clock = 0u64;
    for _ in 0..n_requests {
        if run_left == 0 {
            sector = rng.gen_range(0..top) & !7;
            run_left = rng.gen_range(1..=64);
        }
        let sectors = 8u32 << rng.gen_range(0..5u32);
        // Capture-device timing: a fast device, 20-120 µs per request, 2-12 µs of think.
        let issue = clock;
        let complete = issue + rng.gen_range(20_000..120_000);
        clock = complete + rng.gen_range(2_000..12_000);
        t.requests.push(Request {
            issue_ns: issue,
            complete_ns: Some(complete),
            op: Op::Read,
            sector,
            sectors,
            flags: Flags::SYNC,
            tag: 0,
            cpu: None,
        });
        sector += sectors as u64;
        run_left -= 1;
    }
    t
}

/// Replays a synthetic trace of `n_requests` (seeded) on `dev` and times it.
pub fn bench_replay(dev: &mut dyn Device, n_requests: usize, seed: u64) -> BenchReport {
    let trace = synthetic_trace(n_requests, seed, dev.capacity_sectors());
    let start = Instant::now();
    let cpu0 = thread_cpu_ns();
    let r = replay(dev, &trace, &ReplayOptions::default());
    let cpu1 = thread_cpu_ns();
    let seconds = start.elapsed().as_secs_f64();
    std::hint::black_box(&r);
    let rate = |s: f64| if s > 0.0 { n_requests as f64 / s } else { 0.0 };
    let cpu_seconds = cpu0.zip(cpu1).map(|(a, b)| (b - a) / 1e9);
    BenchReport {
        requests: n_requests as u64,
        seconds,
        requests_per_second: rate(seconds),
        cpu_seconds,
        cpu_requests_per_second: cpu_seconds.map(rate),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::IoRequest;

    pub(super) struct Null;
    impl Device for Null {
        fn name(&self) -> &str {
            "null"
        }
        fn capacity_sectors(&self) -> u64 {
            1 << 30
        }
        fn submit(&mut self, arrival_ns: f64, _req: &IoRequest) -> f64 {
            arrival_ns + 1000.0
        }
    }

    #[test]
    fn synthetic_trace_is_seeded_in_range_and_mixed() {
        let a = synthetic_trace(10_000, 7, 1 << 30);
        assert_eq!(a, synthetic_trace(10_000, 7, 1 << 30));
        assert_ne!(a, synthetic_trace(10_000, 8, 1 << 30));
        let seq = a
            .requests
            .windows(2)
            .filter(|w| w[1].sector == w[0].sector + w[0].sectors as u64)
            .count();
        assert!(seq > 8_000 && seq < 10_000, "sequential share {seq}");
        assert!(a
            .requests
            .iter()
            .all(|r| r.sector + r.sectors as u64 <= 1 << 30));
    }

    #[test]
    fn bench_counts_requests() {
        let r = bench_replay(&mut Null, 1000, 1);
        assert_eq!(r.requests, 1000);
        if let Some(cpu) = r.cpu_seconds {
            assert!(
                cpu >= 0.0 && cpu <= r.seconds + 0.01,
                "{cpu} vs {}",
                r.seconds
            );
        }
        assert!(r.seconds > 0.0 && r.requests_per_second > 0.0);
    }
}

/// Measurements printed for docs and reports (`cargo test --release -p layoutlab-device --
/// --ignored --nocapture measure`); not timed tests.
#[cfg(test)]
mod measure {
    use super::*;
    use crate::job::{run_job, JobSpec, Rw};
    use crate::preset::load_preset;
    use crate::replay::Discipline;

    #[test]
    #[ignore]
    fn measure_presets_and_replay_speed() {
        for name in ["ssd-sata-2010", "ssd-nvme-2024"] {
            for (rw, bs, qd) in [
                (Rw::RandRead, 4096, 1),
                (Rw::RandRead, 4096, 32),
                (Rw::RandWrite, 4096, 1),
                (Rw::RandWrite, 4096, 32),
                (Rw::Read, 131072, 32),
                (Rw::Write, 131072, 32),
            ] {
                let mut dev = load_preset(name).unwrap();
                let spec = JobSpec {
                    rw,
                    bs_bytes: bs,
                    span_bytes: 16 << 30,
                    number: Some(200_000),
                    iodepth: qd,
                    discipline: Discipline::Fcfs,
                    ..JobSpec::default()
                };
                let r = run_job(dev.as_mut(), &spec).unwrap();
                println!(
                    "{name} {rw:?} bs={bs} qd={qd}: {:.0} IOPS {:.1} MB/s mean {:.4} ms p99 {:.4} ms",
                    r.iops, r.mb_per_s, r.mean_ms, r.p99_ms
                );
            }
            let mut dev = load_preset(name).unwrap();
            let b = bench_replay(dev.as_mut(), 1_000_000, 1);
            let null = bench_replay(&mut super::tests::Null, 1_000_000, 1);
            println!("engine alone (null device): {null:?}");
            println!("{name} replay bench: {b:?}");
        }
        // The HDD model, built from a shared DiskSim drive until the HDD presets land.
        let parv = crate::shared_disksim("barracuda.parv");
        if let Ok(spec) = crate::parv::import_parv(&parv) {
            let mut hdd = crate::hdd::Hdd::new(spec).unwrap();
            for _ in 0..3 {
                let b = bench_replay(&mut hdd, 1_000_000, 1);
                println!("hdd (barracuda.parv) replay bench: {b:?}");
            }
        }
    }
}

/// Replay speed alone, for profiling (`-- --ignored measure_replay_speed`).
#[cfg(test)]
mod measure_speed {
    use super::*;

    #[test]
    #[ignore]
    fn measure_replay_speed() {
        let mut hdd = crate::preset::load_preset(BENCH_PRESET).unwrap();
        let hdd = hdd.as_mut();
        let trace = synthetic_trace(1_000_000, 1, hdd.capacity_sectors());
        let cpu_ns = || thread_cpu_ns().unwrap_or(f64::NAN);
        for _ in 0..5 {
            let t = Instant::now();
            let c0 = cpu_ns();
            let r = replay(hdd, &trace, &ReplayOptions::default());
            let on_cpu_s = (cpu_ns() - c0) / 1e9;
            let s = t.elapsed().as_secs_f64();
            std::hint::black_box(&r);
            println!("{BENCH_PRESET}: {:.1} M req/s on CPU", 1.0 / on_cpu_s);
            let t = Instant::now();
            let n = replay(&mut super::tests::Null, &trace, &ReplayOptions::default());
            let sn = t.elapsed().as_secs_f64();
            std::hint::black_box(&n);
            println!(
                "wall clock: hdd {:.1} M req/s, engine alone {:.1} M req/s",
                1.0 / s,
                1.0 / sn
            );
        }
    }
}
