//! A small random-read whose mapping reads are known from the layout: O_DIRECT reads of a
//! 64 MiB file on 2007's ext3 (the ext3-2007 policy's block map, written through libext2fs),
//! at offsets chosen in the direct blocks, under the single indirect block and under two
//! indirect blocks of the double-indirect tree. Cold, each mapping block is read from the
//! device once — the first time a read needs it — and never again (the buffer cache keeps
//! it); the same reads on ext4 (the engine's file, and the kernel's own with
//! `layout = "kernel"`) read the extent tree's leaf once, if the extents did not fit in the
//! inode (and none if they did). Root only.

mod common;

use layoutlab_experiments::random_read::{run_target, sizes, RandomReadSpec};
use std::collections::BTreeSet;

/// The mapping blocks (by logical position in the block map) a read of file block `b` walks
/// through, for 4 KiB blocks (1024 pointers a block): ext2's 12 direct pointers, then the
/// single-indirect block, then the double-indirect block and one of its children.
fn mapping_path(b: u64) -> Vec<String> {
    const P: u64 = 1024;
    if b < 12 {
        vec![]
    } else if b < 12 + P {
        vec!["IND".into()]
    } else {
        let k = (b - 12 - P) / P;
        assert!(k < P, "triple-indirect not used by this test");
        vec!["DIND".into(), format!("DIND.{k}")]
    }
}

/// The shipped random-read experiment with its file cut to 64 MiB: the experiment, its spec,
/// and the file's and file system's bytes at scale 1.
fn file_of_64_mib() -> (
    layoutlab_experiments::experiment::Experiment,
    RandomReadSpec,
    u64,
    u64,
) {
    let exp = layoutlab_experiments::experiment::load("random-read").unwrap();
    let mut spec: RandomReadSpec = exp.params().unwrap();
    spec.file_gb = 64.0 * 1048576.0 / 1e9;
    let (file_bytes, fs_bytes) = sizes(&spec, 1.0);
    (exp, spec, file_bytes, fs_bytes)
}

#[test]
fn mapping_reads_are_the_distinct_mapping_blocks_the_reads_walk_through() {
    if !common::root_or_skip(
        "mapping_reads_are_the_distinct_mapping_blocks_the_reads_walk_through",
        "loop devices, kernel mounts, tracefs",
    ) {
        return;
    }
    let (exp, mut spec, file_bytes, fs_bytes) = file_of_64_mib();
    assert_eq!(file_bytes, 64 << 20);
    // File blocks: direct, single indirect (twice), double indirect under child 0 and child 3
    // (twice), and the last block of the file.
    let blocks = [
        5u64,
        100,
        900,
        1036 + 10,
        1036 + 3 * 1024 + 7,
        1036 + 3 * 1024 + 900,
        16383,
    ];
    let offs: Vec<u64> = blocks.iter().map(|b| b * 4096 + 1024).collect();
    let expected: BTreeSet<String> = blocks.iter().flat_map(|&b| mapping_path(b)).collect();
    // IND, DIND, DIND.0, DIND.3, DIND.14
    assert_eq!(expected.len(), 5);
    let work = std::env::temp_dir();
    // ext4 twice: the engine's file (the default) and the kernel's own dd (`layout=kernel`)
    for (target, layout) in [("ext3", "engine"), ("ext4", "engine"), ("ext4", "kernel")] {
        let profile = layoutlab_experiments::kernel_profile::by_name(target).unwrap();
        spec.layout = layout.to_string();
        let runs = run_target(
            &spec,
            target,
            Some(&profile),
            &["direct".to_string()],
            file_bytes,
            fs_bytes,
            &offs,
            &["sata-2t-5400-2010".to_string()],
            &work,
            exp.seed,
            None,
        )
        .unwrap();
        let r = &runs[0];
        assert_eq!(r.reads, blocks.len() as u64);
        // O_DIRECT: one device read per read, 512 bytes, all of the file's data.
        assert_eq!(r.data_reads, blocks.len() as u64, "{target}: {r:?}");
        if target == "ext3" {
            assert_eq!(r.mapping_reads, expected.len() as u64, "{r:?}");
            // 16384 blocks: 1 + 1 + 15 mapping blocks in the layout.
            assert_eq!(r.mapping_blocks, 17, "{r:?}");
            assert_eq!(r.layout, "policy ext3-2007");
        } else {
            // A tree of depth 0 (extents in the inode) or 1 (one leaf, every read needs it).
            assert!(r.mapping_blocks <= 1, "{r:?}");
            assert_eq!(r.mapping_reads, r.mapping_blocks, "{r:?}");
            let by = if layout == "kernel" {
                "kernel"
            } else {
                "engine ext4-kernel"
            };
            assert_eq!(r.layout, by);
        }
        assert!(r.seconds > 0.0);
    }
}

/// `reads` seeded random reads of target `name` ("ext3" or "raw") at the experiment's default
/// scale, buffered then direct, priced on its disk.
fn both_modes(
    spec: &RandomReadSpec,
    name: &str,
    reads: u64,
    seed: u64,
) -> Vec<layoutlab_experiments::random_read::ReadRun> {
    let (file_bytes, fs_bytes) = sizes(spec, spec.default_scale);
    let offs =
        layoutlab_experiments::random_read::offsets(seed, reads, file_bytes, spec.read_bytes);
    let profile =
        (name != "raw").then(|| layoutlab_experiments::kernel_profile::by_name(name).unwrap());
    run_target(
        spec,
        name,
        profile.as_ref(),
        &["buffered".to_string(), "direct".to_string()],
        file_bytes,
        fs_bytes,
        &offs,
        &["sata-2t-5400-2010".to_string()],
        &std::env::temp_dir(),
        seed,
        None,
    )
    .unwrap()
}

/// docs/experiments/random-read.md, "Results": at the default scale (a 9.5 GB file, 2,269
/// mapping blocks) 100,000 random reads read every ext3 mapping block about once, which costs
/// +1.3% (buffered) and +1.4% (direct) over the raw device. Held within ±0.4 points: the
/// predictions of two runs of the same code moved by 0.13% (the doc), so a ratio of two moves
/// by at most about 0.26 points; the mapping reads themselves are held by the layout (at least
/// one per mapping block, at most 5% more).
#[test]
fn ext3_costs_about_one_read_per_mapping_block_over_raw_at_the_default_scale() {
    if !common::root_or_skip(
        "ext3_costs_about_one_read_per_mapping_block_over_raw_at_the_default_scale",
        "loop devices, kernel mounts, tracefs",
    ) {
        return;
    }
    let exp = layoutlab_experiments::experiment::load("random-read").unwrap();
    let spec: RandomReadSpec = exp.params().unwrap();
    let ext3 = both_modes(&spec, "ext3", spec.reads, exp.seed);
    let raw = both_modes(&spec, "raw", spec.reads, exp.seed);
    for ((e, r), doc) in ext3.iter().zip(&raw).zip([1.3, 1.4]) {
        assert_eq!(e.mode, r.mode);
        assert_eq!(e.mapping_blocks, 2269, "{e:?}");
        assert!(
            e.mapping_reads >= e.mapping_blocks
                && e.mapping_reads as f64 <= 1.05 * e.mapping_blocks as f64,
            "{}: {} mapping reads for {} mapping blocks",
            e.mode,
            e.mapping_reads,
            e.mapping_blocks
        );
        assert_eq!(r.mapping_reads, 0);
        let over = 100.0 * (e.seconds / r.seconds - 1.0);
        eprintln!(
            "{}: ext3 {:.1} s, raw {:.1} s: {over:+.2}% (the doc: +{doc}%)",
            e.mode, e.seconds, r.seconds
        );
        assert!(
            (over - doc).abs() <= 0.4,
            "{}: ext3 is {over:+.2}% over raw, the doc says +{doc}% (±0.4)",
            e.mode
        );
    }
}

/// docs/experiments/random-read.md, "Is the post's argument visible?": with M mapping blocks,
/// each equally likely, n random reads touch M (1 − e^(−n/M)) of them. At scale 0.1 that is
/// 0.40 mapping reads per read (n/M = 2.205); the run there measured 0.41 and 0.43, the rest
/// being blocks read again after the kernel dropped them. Here the same ratio n/M at the
/// default scale's file (2,269 mapping blocks, 5,003 reads), where nothing is dropped: the
/// mapping reads per read must be the law's within 3% (the binomial spread of the count of
/// distinct blocks is 0.6% here; the rest is the double-indirect block, which every read past
/// the first 4 MiB needs, and reads in the direct blocks, which need none).
#[test]
fn mapping_reads_per_read_follow_the_occupancy_law() {
    if !common::root_or_skip(
        "mapping_reads_per_read_follow_the_occupancy_law",
        "loop devices, kernel mounts, tracefs",
    ) {
        return;
    }
    let exp = layoutlab_experiments::experiment::load("random-read").unwrap();
    let spec: RandomReadSpec = exp.params().unwrap();
    let m = 2269.0_f64;
    let n = (2.205 * m).round() as u64;
    let runs = both_modes(&spec, "ext3", n, exp.seed);
    let law = m * (1.0 - (-(n as f64) / m).exp()) / n as f64;
    assert!((law - 0.4035).abs() < 0.001, "{law}");
    for r in &runs {
        assert_eq!(r.mapping_blocks as f64, m, "{r:?}");
        let per_read = r.mapping_reads as f64 / r.reads as f64;
        eprintln!(
            "{}: {per_read:.4} mapping reads per read; the law: {law:.4}",
            r.mode
        );
        assert!(
            (per_read / law - 1.0).abs() <= 0.03,
            "{}: {per_read:.4} mapping reads per read, the law says {law:.4}",
            r.mode
        );
    }
}

/// `--device P,ALT`: each mode's one trace is priced on every preset given, in order, and each
/// figure is that preset's own replay of the same trace (`steps::price::on_preset`): the first
/// preset's is the run's `seconds`, as a run on it alone would price this trace; the other's is
/// the drive's price of this capture, with no second capture's spread in it. The 64 MiB ext3
/// file (its block map read cold) and the raw device, 200 seeded reads each mode.
#[test]
fn every_trace_is_priced_on_each_preset_given() {
    if !common::root_or_skip(
        "every_trace_is_priced_on_each_preset_given",
        "loop devices, kernel mounts, tracefs",
    ) {
        return;
    }
    let (exp, spec, file_bytes, fs_bytes) = file_of_64_mib();
    let offs =
        layoutlab_experiments::random_read::offsets(exp.seed, 200, file_bytes, spec.read_bytes);
    let devices = ["sata-2t-5400-2010", "sata-400g-2007-alt-samsung"].map(String::from);
    for target in ["ext3", "raw"] {
        let profile = (target != "raw")
            .then(|| layoutlab_experiments::kernel_profile::by_name(target).unwrap());
        let runs = run_target(
            &spec,
            target,
            profile.as_ref(),
            &["buffered".to_string(), "direct".to_string()],
            file_bytes,
            fs_bytes,
            &offs,
            &devices,
            &std::env::temp_dir(),
            exp.seed,
            None,
        )
        .unwrap();
        assert_eq!(runs.len(), 2);
        for r in &runs {
            // Buffered reads of neighbouring blocks may merge: a request or more, not one a read.
            assert!(r.device_requests > 0, "{target} {}", r.mode);
            assert_eq!(r.seconds_on.len(), 2);
            for d in &devices {
                let alone = layoutlab_experiments::steps::price::on_preset(d, &r.trace, 1.0)
                    .unwrap()
                    .wall_ns
                    / 1e9;
                assert_eq!(r.seconds_on[d], alone, "{target} {} on {d}", r.mode);
            }
            assert_eq!(r.seconds, r.seconds_on[&devices[0]]);
            assert!(r.seconds_on[&devices[0]] != r.seconds_on[&devices[1]]);
        }
    }
}
