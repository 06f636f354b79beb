//! The kernel check of the page-cache model (issue 30): random-read's ext3 file (ext3-2007's
//! block map, written through libext2fs) read 20,000 times at random by a child process in a
//! memory cgroup limited to 4, 8 and 32 MiB, three cold runs at each limit; the reads of
//! indirect blocks counted from the trace as random-read classes them. The simulator's
//! `linux-6` policy, given the page-cache pages the cgroup held at the end of each run
//! (memory.stat `cache`; the rest of the limit went to the kernel's own memory), must predict
//! each run's count; the median of the three offsets must lie within the tolerance measured
//! for that limit:
//!
//! | limit | 10 kernel runs (2026-11-26): mean, min-max | largest deviation | tolerance (2x) |
//! |---|---|---|---|
//! | 4 MiB | 15,579; 14,844-16,363 | 5.0% | 10% |
//! | 8 MiB | 10,519; 8,545-12,446 | 18.8% | 38% |
//! | 32 MiB | 2,271; 2,269-2,281 | 0.5% | 1.2% (floor) |
//!
//! (16 MiB is the cliff where the indirect blocks just fit: its runs spread 2,269-5,230 and it
//! is left out of the test; docs/experiments/cache-policies.md shows it.) The same check
//! rejects LRU and the period's 2.6.3x lists, which miss the kernel at one limit at least:
//! the check tells policies apart. Root only: loop devices, mounts, tracefs, memory cgroups.

mod common;

use layoutlab_cache::{by_name, simulate_stream, stream, Access};
use layoutlab_experiments::cache_policies::kernel;
use layoutlab_experiments::random_read::RandomReadSpec;

const LIMITS_MIB: [u64; 3] = [4, 8, 32];
const TOLERANCE: [f64; 3] = [0.10, 0.38, 0.012];
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

#[test]
fn linux_6_model_predicts_the_kernels_indirect_block_reads_under_three_memory_limits() {
    if !common::root_or_skip(
        "linux_6_model_predicts_the_kernels_indirect_block_reads_under_three_memory_limits",
        "loop devices, kernel mounts, tracefs, memory cgroups",
    ) {
        return;
    }
    let exp = layoutlab_experiments::experiment::load("random-read").unwrap();
    let spec: RandomReadSpec = exp.params().unwrap();
    let limits: Vec<u64> = (0..RUNS)
        .flat_map(|_| LIMITS_MIB.iter().map(|m| m << 20))
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
