//! fio-like synthetic jobs run on a device model.
//!
//! A job keeps `iodepth` requests in flight, issuing a new one the moment one completes (fio's
//! default with `iodepth_batch=1`), through the replay engine's host queue
//! ([`crate::queue::Scheduler`]). Sequential jobs walk the span in `bs` steps and wrap;
//! random jobs pick offsets aligned to `bs` uniformly within the span (with replacement,
//! unlike fio's default random map; over short runs on large spans the two agree). Latency is
//! fio's completion latency: from issue to completion.
//!
//! ```
//! use layoutlab_device::{job::{parse_size_bytes, run_job, JobSpec, Rw}, preset::load_preset};
//! let mut dev = load_preset("ssd-nvme-2024").unwrap();
//! let spec = JobSpec { rw: Rw::RandRead, bs_bytes: parse_size_bytes("4k").unwrap(),
//!     span_bytes: parse_size_bytes("16g").unwrap(), number: Some(1000), iodepth: 4,
//!     ..JobSpec::default() };
//! let report = run_job(dev.as_mut(), &spec).unwrap();
//! assert_eq!(report.requests, 1000);
//! assert!(report.min_ms <= report.p50_ms && report.p50_ms <= report.max_ms);
//! ```

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use layoutlab_trace::{Flags, Op};

use crate::queue::{Discipline, Scheduler};
use crate::{Device, DeviceError, IoRequest};

/// The access pattern (fio's `rw`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Rw {
    /// Sequential reads.
    Read,
    /// Sequential writes.
    Write,
    /// Random reads.
    RandRead,
    /// Random writes.
    RandWrite,
}

impl std::str::FromStr for Rw {
    type Err = DeviceError;
    fn from_str(s: &str) -> Result<Rw, DeviceError> {
        match s {
            "read" => Ok(Rw::Read),
            "write" => Ok(Rw::Write),
            "randread" => Ok(Rw::RandRead),
            "randwrite" => Ok(Rw::RandWrite),
            _ => Err(DeviceError::Invalid(format!(
                "unknown rw '{s}'; valid: read, write, randread, randwrite"
            ))),
        }
    }
}

/// Parses a size the way fio does: a number with an optional suffix k, m, g, t (powers of
/// 1024, case-insensitive, an optional trailing "b" or "ib"), e.g. "4k", "16g", "512", "1.5m".
pub fn parse_size_bytes(text: &str) -> Result<u64, DeviceError> {
    let t = text.trim().to_ascii_lowercase();
    let t = t
        .strip_suffix("ib")
        .or_else(|| t.strip_suffix('b'))
        .unwrap_or(&t);
    let (digits, shift) = match t.char_indices().last() {
        Some((i, 'k')) => (&t[..i], 10),
        Some((i, 'm')) => (&t[..i], 20),
        Some((i, 'g')) => (&t[..i], 30),
        Some((i, 't')) => (&t[..i], 40),
        _ => (t, 0),
    };
    let bad = || {
        DeviceError::Invalid(format!(
            "size '{text}': expected a number with k/m/g/t, e.g. 4k or 1.5m"
        ))
    };
    let too_large = || DeviceError::Invalid(format!("size '{text}' is too large"));
    if let Ok(n) = digits.parse::<u64>() {
        return n.checked_mul(1u64 << shift).ok_or_else(too_large);
    }
    // A fraction ("1.5m"), rounded to the nearest byte.
    if !digits.contains('.') || digits.starts_with('-') || digits.starts_with('+') {
        return Err(bad());
    }
    let x: f64 = digits.parse().map_err(|_| bad())?;
    let bytes = (x * (1u64 << shift) as f64).round();
    if !bytes.is_finite() || bytes >= u64::MAX as f64 {
        return Err(too_large());
    }
    Ok(bytes as u64)
}

/// A synthetic job.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobSpec {
    /// Access pattern.
    pub rw: Rw,
    /// Request size, bytes (a multiple of 512).
    pub bs_bytes: u64,
    /// Bytes of the device the job touches (fio's `size`).
    pub span_bytes: u64,
    /// Where the span starts, bytes (fio's `offset`).
    pub offset_bytes: u64,
    /// Stop issuing after this much model time, seconds.
    pub runtime_s: Option<f64>,
    /// Stop after this many requests.
    pub number: Option<u64>,
    /// Requests kept in flight.
    pub iodepth: u32,
    /// Queue discipline used when `iodepth > 1`.
    pub discipline: Discipline,
    /// Seed of the random offsets.
    pub seed: u64,
}

impl Default for JobSpec {
    fn default() -> Self {
        JobSpec {
            rw: Rw::RandRead,
            bs_bytes: 4096,
            span_bytes: 1 << 30,
            offset_bytes: 0,
            runtime_s: None,
            number: Some(1000),
            iodepth: 1,
            discipline: Discipline::Fcfs,
            seed: 1,
        }
    }
}

/// What a job measured (fio's names where it has them).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct JobReport {
    /// Completed requests per second of model time.
    pub iops: f64,
    /// Bandwidth, MB/s (10^6 bytes).
    pub mb_per_s: f64,
    /// Completion latency: mean, ms.
    pub mean_ms: f64,
    /// Minimum, ms.
    pub min_ms: f64,
    /// Maximum, ms.
    pub max_ms: f64,
    /// Population standard deviation, ms.
    pub stdev_ms: f64,
    /// Median (nearest rank), ms.
    pub p50_ms: f64,
    /// 90th percentile, ms.
    pub p90_ms: f64,
    /// 99th percentile, ms.
    pub p99_ms: f64,
    /// 99.9th percentile, ms.
    pub p999_ms: f64,
    /// Completed requests.
    pub requests: u64,
}

impl JobSpec {
    /// Checks the job against `capacity_sectors`.
    pub fn validate(&self, capacity_sectors: u64) -> Result<(), DeviceError> {
        let bad = |m: String| Err(DeviceError::Invalid(m));
        if self.bs_bytes == 0
            || !self.bs_bytes.is_multiple_of(512)
            || self.bs_bytes / 512 > u32::MAX as u64
        {
            return bad(format!(
                "bs {} must be a positive multiple of 512",
                self.bs_bytes
            ));
        }
        if !self.offset_bytes.is_multiple_of(512) {
            return bad(format!(
                "offset {} must be a multiple of 512",
                self.offset_bytes
            ));
        }
        if self.span_bytes < self.bs_bytes {
            return bad(format!(
                "span {} is smaller than bs {}",
                self.span_bytes, self.bs_bytes
            ));
        }
        let cap = capacity_sectors.saturating_mul(512);
        if self.offset_bytes.saturating_add(self.span_bytes) > cap {
            return bad(format!(
                "offset {} + span {} exceeds the device ({} bytes)",
                self.offset_bytes, self.span_bytes, cap
            ));
        }
        if self.iodepth == 0 {
            return bad("iodepth must be >= 1".into());
        }
        match (self.runtime_s, self.number) {
            (None, None) => bad("give a runtime or a number of requests".into()),
            (Some(r), _) if !(r.is_finite() && r > 0.0) => bad(format!("runtime {r} must be > 0")),
            (_, Some(0)) => bad("number must be >= 1".into()),
            _ => Ok(()),
        }
    }
}

/// Runs `spec` on `dev` from model time 0 (the device's state carries over between calls).
pub fn run_job(dev: &mut dyn Device, spec: &JobSpec) -> Result<JobReport, DeviceError> {
    spec.validate(dev.capacity_sectors())?;
    let mut rng = ChaCha8Rng::seed_from_u64(spec.seed);
    let blocks = spec.span_bytes / spec.bs_bytes;
    let sectors = (spec.bs_bytes / 512) as u32;
    let op = match spec.rw {
        Rw::Read | Rw::RandRead => Op::Read,
        Rw::Write | Rw::RandWrite => Op::Write,
    };
    let random = matches!(spec.rw, Rw::RandRead | Rw::RandWrite);
    let mut seq_block = 0u64;
    let mut next_req = || {
        let block = if random {
            rng.gen_range(0..blocks)
        } else {
            let b = seq_block;
            seq_block = (seq_block + 1) % blocks;
            b
        };
        IoRequest {
            op,
            sector: (spec.offset_bytes + block * spec.bs_bytes) / 512,
            sectors,
            flags: Flags::SYNC,
        }
    };
    let limit_n = spec.number.unwrap_or(u64::MAX);
    let limit_ns = spec.runtime_s.map_or(f64::INFINITY, |s| s * 1e9);
    let depth = spec.iodepth as usize;
    let mut sched = Scheduler::new(spec.discipline, depth);
    // Completions of dispatched requests not yet seen by the job, earliest first.
    let mut inflight: std::collections::BinaryHeap<std::cmp::Reverse<(u64, u64)>> =
        std::collections::BinaryHeap::new();
    let mut latencies_ns: Vec<f64> = Vec::new();
    let mut issued = 0u64;
    let mut now = 0.0f64;
    let mut last_complete = 0.0f64;
    let mut arrivals: Vec<f64> = Vec::new();
    while issued < limit_n && issued < depth as u64 {
        arrivals.push(0.0);
        sched.push(issued as usize, 0.0, next_req());
        issued += 1;
    }
    loop {
        let next_complete = inflight.peek().map(|r| f64::from_bits(r.0 .0));
        let dispatch_at = sched.next_dispatch_ns(now);
        match (next_complete, dispatch_at) {
            (Some(c), d) if d.is_none_or(|d| c <= d) => {
                inflight.pop();
                now = now.max(c);
                last_complete = last_complete.max(c);
                // A completion frees the job to issue another at once.
                if issued < limit_n && c < limit_ns {
                    arrivals.push(c);
                    sched.push(issued as usize, c, next_req());
                    issued += 1;
                }
            }
            (_, Some(d)) => {
                now = now.max(d);
                if let Some(done) = sched.dispatch(dev, d) {
                    latencies_ns.push(done.complete_ns - arrivals[done.id]);
                    inflight.push(std::cmp::Reverse((
                        done.complete_ns.to_bits(),
                        done.id as u64,
                    )));
                }
            }
            _ => break,
        }
    }
    Ok(summarize(&latencies_ns, last_complete, spec.bs_bytes))
}

/// fio-style statistics of completion latencies over `elapsed_ns` of model time.
fn summarize(latencies_ns: &[f64], elapsed_ns: f64, bs_bytes: u64) -> JobReport {
    let n = latencies_ns.len();
    if n == 0 {
        return JobReport::default();
    }
    let mut sorted = latencies_ns.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mean = sorted.iter().sum::<f64>() / n as f64;
    let var = sorted.iter().map(|l| (l - mean) * (l - mean)).sum::<f64>() / n as f64;
    let pct = |p: f64| {
        let rank = ((p / 100.0) * n as f64).ceil() as usize;
        sorted[rank.clamp(1, n) - 1] / 1e6
    };
    let secs = elapsed_ns / 1e9;
    JobReport {
        iops: if secs > 0.0 { n as f64 / secs } else { 0.0 },
        mb_per_s: if secs > 0.0 {
            n as f64 * bs_bytes as f64 / secs / 1e6
        } else {
            0.0
        },
        mean_ms: mean / 1e6,
        min_ms: sorted[0] / 1e6,
        max_ms: sorted[n - 1] / 1e6,
        stdev_ms: var.sqrt() / 1e6,
        p50_ms: pct(50.0),
        p90_ms: pct(90.0),
        p99_ms: pct(99.0),
        p999_ms: pct(99.9),
        requests: n as u64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Serial device: fixed service time; positioning = distance from the last sector served.
    struct Fixed {
        service_ns: f64,
        free_ns: f64,
        head: u64,
        seen: Vec<u64>,
    }
    impl Device for Fixed {
        fn name(&self) -> &str {
            "fixed"
        }
        fn capacity_sectors(&self) -> u64 {
            1 << 30
        }
        fn submit(&mut self, arrival_ns: f64, req: &IoRequest) -> f64 {
            self.free_ns = arrival_ns.max(self.free_ns) + self.service_ns;
            self.head = req.sector;
            self.seen.push(req.sector);
            self.free_ns
        }
        fn positioning_ns(&self, _at: f64, req: &IoRequest) -> f64 {
            self.head.abs_diff(req.sector) as f64
        }
    }
    fn fixed(service_ns: f64) -> Fixed {
        Fixed {
            service_ns,
            free_ns: 0.0,
            head: 0,
            seen: Vec::new(),
        }
    }

    #[test]
    fn qd1_on_a_fixed_latency_device_gives_exact_iops_and_latency() {
        let mut d = fixed(5e6);
        let spec = JobSpec {
            number: Some(200),
            ..JobSpec::default()
        };
        let r = run_job(&mut d, &spec).unwrap();
        assert_eq!(r.requests, 200);
        assert!((r.iops - 200.0).abs() < 1e-9, "{}", r.iops);
        assert!((r.mean_ms - 5.0).abs() < 1e-9);
        assert_eq!(r.stdev_ms, 0.0);
        assert!((r.mb_per_s - 200.0 * 4096.0 / 1e6).abs() < 1e-9);
    }

    #[test]
    fn deeper_queue_on_a_serial_device_raises_latency_not_iops() {
        let spec = JobSpec {
            number: Some(400),
            iodepth: 4,
            ..JobSpec::default()
        };
        let r = run_job(&mut fixed(1e6), &spec).unwrap();
        assert!((r.iops - 1000.0).abs() < 1.0, "{}", r.iops);
        assert!((r.mean_ms - 4.0).abs() < 0.05, "{}", r.mean_ms);
    }

    #[test]
    fn random_offsets_are_aligned_in_span_and_seeded() {
        let spec = JobSpec {
            bs_bytes: 8192,
            span_bytes: 1 << 24,
            offset_bytes: 1 << 20,
            number: Some(500),
            seed: 42,
            ..JobSpec::default()
        };
        let mut a = fixed(1.0);
        run_job(&mut a, &spec).unwrap();
        for &s in &a.seen {
            assert_eq!((s * 512 - spec.offset_bytes) % 8192, 0);
            assert!(
                s * 512 >= spec.offset_bytes
                    && s * 512 + 8192 <= spec.offset_bytes + spec.span_bytes
            );
        }
        let mut b = fixed(1.0);
        run_job(&mut b, &spec).unwrap();
        assert_eq!(a.seen, b.seen);
        let mut c = fixed(1.0);
        run_job(
            &mut c,
            &JobSpec {
                seed: 43,
                ..spec.clone()
            },
        )
        .unwrap();
        assert_ne!(a.seen, c.seen);
    }

    #[test]
    fn sequential_job_wraps_at_the_span() {
        let spec = JobSpec {
            rw: Rw::Read,
            span_bytes: 4 * 4096,
            number: Some(6),
            ..JobSpec::default()
        };
        let mut d = fixed(1.0);
        run_job(&mut d, &spec).unwrap();
        assert_eq!(d.seen, vec![0, 8, 16, 24, 0, 8]);
    }

    #[test]
    fn runtime_limits_the_job() {
        let spec = JobSpec {
            number: None,
            runtime_s: Some(1.0),
            ..JobSpec::default()
        };
        let r = run_job(&mut fixed(10e6), &spec).unwrap();
        assert_eq!(r.requests, 100);
    }

    #[test]
    fn sptf_at_depth_shortens_positioning() {
        let spec = |discipline| JobSpec {
            iodepth: 16,
            number: Some(2000),
            discipline,
            ..JobSpec::default()
        };
        let total_distance =
            |seen: &[u64]| seen.windows(2).map(|w| w[0].abs_diff(w[1])).sum::<u64>();
        let mut f = fixed(1e5);
        run_job(&mut f, &spec(Discipline::Fcfs)).unwrap();
        let mut s = fixed(1e5);
        run_job(&mut s, &spec(Discipline::Sptf)).unwrap();
        assert!(total_distance(&s.seen) * 3 < total_distance(&f.seen));
    }

    #[test]
    fn sizes_parse_like_fio() {
        assert_eq!(parse_size_bytes("4k").unwrap(), 4096);
        assert_eq!(parse_size_bytes("256K").unwrap(), 262144);
        assert_eq!(parse_size_bytes("16g").unwrap(), 16 << 30);
        assert_eq!(parse_size_bytes("1MiB").unwrap(), 1 << 20);
        assert_eq!(parse_size_bytes("512").unwrap(), 512);
        assert_eq!(parse_size_bytes("1.5M").unwrap(), 1_572_864);
        for bad in [
            "",
            "k",
            "4x",
            "-1",
            "-1k",
            "x",
            "4q",
            ".",
            "99999999999t",
            "1e30t",
        ] {
            assert!(parse_size_bytes(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn bad_jobs_are_refused() {
        let d = fixed(1.0);
        let cap = d.capacity_sectors();
        for (what, bad) in [
            (
                "a block size not a multiple of 512",
                JobSpec {
                    bs_bytes: 1000,
                    ..JobSpec::default()
                },
            ),
            (
                "a span past the device",
                JobSpec {
                    span_bytes: 1 << 50,
                    ..JobSpec::default()
                },
            ),
            (
                "no request in flight",
                JobSpec {
                    iodepth: 0,
                    ..JobSpec::default()
                },
            ),
            (
                "no end",
                JobSpec {
                    number: None,
                    runtime_s: None,
                    ..JobSpec::default()
                },
            ),
        ] {
            assert!(bad.validate(cap).is_err(), "{what}");
        }
        assert!("randrw".parse::<Rw>().is_err());
        assert_eq!("randread".parse::<Rw>().unwrap(), Rw::RandRead);
    }
}
