//! The kernel check of the page-cache model (issue 30): random-read's ext3 file (ext3-2007's
//! block map, written through libext2fs) read 20,000 times at random by a child process in a
//! memory cgroup limited to 4 and 32 MiB, three cold runs at each limit; the reads of indirect
//! blocks counted from the trace as random-read classes them. The simulator's `linux-6`
//! policy, given the page-cache pages the cgroup held at the end of each run (memory.stat
//! `cache`; the rest of the limit went to the kernel's own memory), must predict each run's
//! count; the median of the three offsets must lie within the tolerance measured for that
//! limit (`spread_of_the_kernels_indirect_block_reads`, below, is that measurement):
//!
//! | limit | 27 kernel runs (2026-11-29; 15 quiet, 12 under two CPU spinners): mean, min-max | largest deviation | tolerance (2x) |
//! |---|---|---|---|
//! | 4 MiB | 15,097; 14,209-16,035 | 6.2% | 12.5% |
//! | 8 MiB | 9,659; 7,933-12,248 (two modes when quiet) | 26.8% | not tested |
//! | 32 MiB | 2,270; 2,269-2,279 | 0.4% | 1.2% (floor) |
//!
//! 8 MiB and 16 MiB are left out: at 16 MiB the indirect blocks just fit (its runs spread
//! 2,269-5,230), and at 8 MiB the quiet kernel's runs fall in two groups (9 of 15 at
//! 7,933-8,348, the rest 9,362-12,248; under load 10,050-11,211), a dynamic `linux-6` does
//! not have (docs/experiments/cache-policies.md shows both). The same check rejects LRU and
//! the period's 2.6.3x lists, which miss the kernel at one limit at least: the check tells
//! policies apart. Root only: loop devices, mounts, tracefs, memory cgroups.

mod common;

use layoutlab_cache::{by_name, simulate_stream, stream, Access};
use layoutlab_experiments::cache_policies::kernel;
use layoutlab_experiments::random_read::RandomReadSpec;

const LIMITS_MIB: [u64; 2] = [4, 32];
const TOLERANCE: [f64; 2] = [0.125, 0.012];
/// The limits [`spread_of_the_kernels_indirect_block_reads`] measures: the tested ones and 8 MiB.
const MEASURED_MIB: [u64; 3] = [4, 8, 32];
const RUNS: usize = 3;
const READS: u64 = 20_000;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn mapping_misses(policy: &str, pages: usize, s: &[Access]) -> f64 {
    let names: Vec<u64> = s.iter().map(|a| a.block).collect();
    let mut c = by_name(policy, pages, &names).unwrap();
    simulate_stream(c.as_mut(), s).mapping_misses(s) as f64
}

/// `runs` cold runs at each of `limits_mib`, on random-read's ext3 file at its default scale,
/// and the reads' page stream for the model.
fn measure(limits_mib: &[u64], runs: usize) -> (kernel::KernelCheck, Vec<Access>) {
    let exp = layoutlab_experiments::experiment::load("random-read").unwrap();
    let spec: RandomReadSpec = exp.params().unwrap();
    let limits: Vec<u64> = (0..runs)
        .flat_map(|_| limits_mib.iter().map(|m| m << 20))
        .collect();
    let k = kernel::run(
        &spec,
        spec.default_scale,
        READS,
        &limits,
        "sata-2t-5400-2010",
        &std::env::temp_dir(),
        exp.seed,
    )
    .unwrap();
    let s = stream(k.file().unwrap(), k.block_bytes, &k.logical_blocks()).unwrap();
    (k, s)
}

#[test]
fn linux_6_model_predicts_the_kernels_indirect_block_reads_under_two_memory_limits() {
    if !common::root_or_skip(
        "linux_6_model_predicts_the_kernels_indirect_block_reads_under_two_memory_limits",
        "loop devices, kernel mounts, tracefs, memory cgroups",
    ) {
        return;
    }
    let (k, s) = measure(&LIMITS_MIB, RUNS);
    // 2,269 indirect blocks at random-read's default scale (its docs).
    assert_eq!(k.file().unwrap().mapping.len(), 2269);
    let mut rejected = std::collections::BTreeSet::new();
    for (i, limit) in LIMITS_MIB.iter().enumerate() {
        let runs: Vec<&kernel::LimitRun> = k
            .runs
            .iter()
            .filter(|r| r.limit_bytes == limit << 20)
            .collect();
        assert_eq!(runs.len(), RUNS);
        for r in &runs {
            // Every read reached the device once for its data (a few repeat a page).
            assert!(
                r.data_reads > READS * 99 / 100 && r.data_reads <= READS,
                "{r:?}"
            );
            assert!(r.max_usage_bytes <= r.limit_bytes, "{r:?}");
        }
        // Each run against the model given that run's pages; the median of the three offsets
        // is tested. One disturbed run moves a mean but not the median: a CI run (2026-11-28)
        // averaged 2,372 at 32 MiB, 4.5% above every other run on record (2,269-2,281), and
        // failed on the mean; its runs were not printed then, and are now.
        let offsets = |policy: &str| -> Vec<f64> {
            runs.iter()
                .map(|r| {
                    let m = mapping_misses(policy, (r.cache_bytes_at_end / 4096) as usize, &s);
                    (m - r.mapping_reads as f64) / r.mapping_reads as f64
                })
                .collect()
        };
        let off = |policy: &str| median(offsets(policy));
        for (r, o) in runs.iter().zip(offsets("linux-6")) {
            eprintln!(
                "  {limit} MiB run: {} mapping reads (linux-6 {:+.1}%), {} data reads, {} KiB cached at the end, max usage {} KiB",
                r.mapping_reads,
                o * 100.0,
                r.data_reads,
                r.cache_bytes_at_end >> 10,
                r.max_usage_bytes >> 10
            );
        }
        let linux6 = off("linux-6");
        let kernel_median = median(runs.iter().map(|r| r.mapping_reads as f64).collect());
        eprintln!(
            "{limit} MiB: kernel median {kernel_median:.0} mapping reads; median offsets linux-6 {:+.1}%, linux-2.6.3x {:+.1}%, lru {:+.1}%",
            linux6 * 100.0,
            off("linux-2.6.3x") * 100.0,
            off("lru") * 100.0
        );
        assert!(
            linux6.abs() <= TOLERANCE[i],
            "{limit} MiB: linux-6 is {:+.1}% off the kernel (median of {RUNS} runs; tolerance {:.0}%)",
            linux6 * 100.0,
            TOLERANCE[i] * 100.0
        );
        for other in ["linux-2.6.3x", "lru"] {
            if off(other).abs() > TOLERANCE[i] {
                rejected.insert(other);
            }
        }
    }
    assert_eq!(
        rejected.len(),
        2,
        "the check must tell linux-6 from LRU and 2.6.3x; rejected only {rejected:?}"
    );
}

/// The measurement behind [`TOLERANCE`]: `LAYOUTLAB_CACHE_RUNS` (default 10) cold runs at each
/// limit, each run's kernel count and linux-6's offset printed, then each limit's spread.
/// Ignored: a measurement to restate the table above, not a check (`cargo test --release -p
/// layoutlab-experiments --test cache_kernel -- --ignored --nocapture`).
#[test]
#[ignore]
fn spread_of_the_kernels_indirect_block_reads() {
    if !common::root_or_skip(
        "spread_of_the_kernels_indirect_block_reads",
        "loop devices, kernel mounts, tracefs, memory cgroups",
    ) {
        return;
    }
    let runs: usize = std::env::var("LAYOUTLAB_CACHE_RUNS")
        .map(|v| v.parse().expect("LAYOUTLAB_CACHE_RUNS: a count"))
        .unwrap_or(10);
    let (k, s) = measure(&MEASURED_MIB, runs);
    for limit in MEASURED_MIB {
        let mut worst: f64 = 0.0;
        let mut counts = Vec::new();
        for r in k.runs.iter().filter(|r| r.limit_bytes == limit << 20) {
            let m = mapping_misses("linux-6", (r.cache_bytes_at_end / 4096) as usize, &s);
            let off = (m - r.mapping_reads as f64) / r.mapping_reads as f64;
            worst = worst.max(off.abs());
            counts.push(r.mapping_reads);
            println!(
                "{limit} MiB: {} mapping reads, {} KiB cached at the end ({} active, {} inactive), {} refaults, kmem max {} KiB, linux-6 {:+.1}%",
                r.mapping_reads,
                r.cache_bytes_at_end >> 10,
                r.active_file_bytes_at_end >> 10,
                r.inactive_file_bytes_at_end >> 10,
                r.refaults,
                r.kmem_max_usage_bytes >> 10,
                off * 100.0
            );
        }
        let mean = counts.iter().sum::<u64>() as f64 / counts.len() as f64;
        let spread = counts
            .iter()
            .map(|&c| (c as f64 - mean).abs() / mean)
            .fold(0.0, f64::max);
        println!(
            "{limit} MiB: {} runs, mean {mean:.0}, min-max {}-{}, largest deviation from the mean {:.1}% (the tolerance is twice it), largest linux-6 offset {:.1}%",
            counts.len(),
            counts.iter().min().unwrap(),
            counts.iter().max().unwrap(),
            spread * 100.0,
            worst * 100.0
        );
    }
}
