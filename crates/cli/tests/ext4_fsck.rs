//! Ts'o's February 2009 e2fsck comparisons on the ubuntu-32g tree, at their real size (they
//! take seconds here): `reproduce ext4-fsck-allocator` and `reproduce ext3-vs-ext4-fsck`.
//! The figures asserted are the ones docs/experiments/ext4-fsck-allocator.md reports.

mod common;

use common::*;
use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;

/// Runs `reproduce NAME` at its default (full) scale; its JSON and stdout.
fn reproduce(name: &str) -> (Value, String, PathBuf) {
    reproduce_with(name, &[])
}

/// `reproduce NAME EXTRA...`; its JSON and stdout.
fn reproduce_with(name: &str, extra: &[&str]) -> (Value, String, PathBuf) {
    reproduce_in(
        "ext4fsck",
        &format!("{name}{}", extra.join("")),
        name,
        extra,
    )
}

fn pass(run: &Value, n: u64) -> (f64, u64) {
    run["passes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["pass"] == n)
        .map(|p| {
            (
                p["seconds"].as_f64().unwrap(),
                p["requests"].as_u64().unwrap(),
            )
        })
        .unwrap_or_else(|| panic!("no pass {n} in {run}"))
}

#[test]
fn ext4_fsck_allocator_clusters_directory_blocks_for_pass_2() {
    if !is_root() {
        eprintln!("SKIP ext4_fsck_allocator_clusters_directory_blocks_for_pass_2: the experiment needs root (loop devices, tracefs)");
        return;
    }
    let (v, stdout, dir) = reproduce("ext4-fsck-allocator");
    assert_eq!(v["experiment"], "ext4-fsck-allocator");
    assert_eq!(v["population"], "ubuntu-32g");
    assert_eq!(v["scale"], 1.0);
    assert_eq!(v["device"], "sata-160g-2009");
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs[0]["policy"], "ext4-2008");
    assert_eq!(runs[1]["policy"], "ext4-2009");
    for r in runs {
        assert_eq!(r["fsck_clean"], true, "{r}");
        let sum: f64 = r["passes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["seconds"].as_f64().unwrap())
            .sum();
        let total = r["total_seconds"].as_f64().unwrap();
        assert!((sum - total).abs() < 1e-6 * total, "{sum} vs {total}");
    }
    // Pass 1 reads the same inode tables under both allocators (same tree, same mkfs): within
    // a fifth in requests.
    let (_, p1_old) = pass(&runs[0], 1);
    let (_, p1_new) = pass(&runs[1], 1);
    assert!(
        (p1_old as f64 / p1_new as f64 - 1.0).abs() < 0.2,
        "pass 1 requests {p1_old} vs {p1_new}"
    );
    // Pass 2 is where the allocators differ: measured 32.2-56.3 s (13,166-15,348 requests)
    // with the old allocator against 5.8-5.9 s (1,685) with the new one on sata-160g-2009;
    // the spread of the old one is the kernel's read-ahead over scattered directory blocks
    // (docs/experiments/ext4-fsck-allocator.md). At least 3 times faster, and fewer than
    // half the requests, holds every run and fails if directory blocks stop clustering.
    let (p2_old_s, p2_old_n) = pass(&runs[0], 2);
    let (p2_new_s, p2_new_n) = pass(&runs[1], 2);
    assert!(
        p2_old_s > 3.0 * p2_new_s,
        "pass 2: {p2_old_s} s vs {p2_new_s} s"
    );
    assert!(
        p2_old_n > 2 * p2_new_n,
        "pass 2: {p2_old_n} vs {p2_new_n} requests"
    );
    // The reduction: measured 0.63-0.64 in three quiet runs and up to 0.76 in three at load
    // average 9 (the old allocator's pass-2 requests grow under load; the doc's Results). The
    // band is that measured spread, 0.63-0.76, widened by 0.03 each side (three times the
    // quiet runs' 0.01): it fails if the directory clustering is lost (reduction near 0) or if
    // pass 2 alone stopped costing (reduction near 0.9). The post's 0.40 sits beside it in the
    // report, outside: the gap is open (docs/experiments/ext4-fsck-allocator.md, Results).
    let red = v["reduction"].as_f64().unwrap();
    assert!((0.60..=0.79).contains(&red), "reduction {red}");
    // The published table sits beside ours at scale 1, pass by pass, and in the JSON.
    assert!(
        stdout.contains("13.34") && stdout.contains("4.24"),
        "{stdout}"
    );
    assert!(stdout.contains("published: 40%"), "{stdout}");
    assert_eq!(v["published"]["pass_mb_read"]["ext4-2009"]["2"], 133.0);
    // e2fsck -v describes the tree the post described (its counts are the data set's, by
    // construction: docs/workloads.md); the allocator outputs (non-contiguous files and
    // directories, extent depths) are ours, beside the post's 263 / 198 / 292,698 / 40. That
    // they follow from the plan by e2fsck's rules is held by image/tests/aging.rs.
    for r in runs {
        let vit = &r["e2fsck_vitals"];
        assert_eq!(vit["inodes_used"], 312_214, "{vit}");
        assert_eq!(vit["regular_files"], 263_549, "{vit}");
        assert_eq!(vit["directories"], 28_022, "{vit}");
        assert_eq!(
            (vit["symlinks"].as_u64(), vit["fast_symlinks"].as_u64()),
            (Some(20_618), Some(19_450)),
            "{vit}"
        );
        assert_eq!(vit["links"], 615, "{vit}");
        let depths = vit["extent_depth_histogram"].as_array().unwrap();
        let extent_inodes: u64 = depths.iter().map(|d| d.as_u64().unwrap()).sum();
        // files, directories and slow symlinks, and the journal
        assert_eq!(extent_inodes, 263_549 + 28_022 + 1_168 + 1, "{vit}");
    }
    assert!(
        stdout.contains("the file system as e2fsck saw it"),
        "{stdout}"
    );
    assert_eq!(v["published"]["vitals"]["non_contiguous_files"], 263.0);
    assert!(dir.join("out/ext4-fsck-allocator/fsck-offset.svg").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The period's own e2fsck (1.41.4, built by `make deps`) against today's on the same images.
/// e2fsck_pass1_check_symlink() of 1.41.4 accepts an extent-mapped slow symlink from its
/// extent alone; today's also reads the target block (to compare its string length with
/// i_size). ubuntu-32g has 1,168 slow symlinks, so today's pass 1 issues about that many more
/// requests: measured 1,098 (ext4-2008) and 860 (ext4-2009) more, some symlink blocks sharing
/// a read-ahead window with other reads. More than half of them (584) holds, and fails if the
/// period checker did not run or read the same blocks.
#[test]
fn period_e2fsck_skips_the_slow_symlink_blocks_todays_reads() {
    if !is_root() {
        eprintln!("skipped: the experiment needs root (loop devices, tracefs)");
        return;
    }
    let (today, _, d1) = reproduce_with("ext4-fsck-allocator", &["--e2fsck", "today"]);
    let (period, stdout, d2) = reproduce_with("ext4-fsck-allocator", &["--e2fsck", "period"]);
    let (t_runs, p_runs) = (
        today["runs"].as_array().unwrap(),
        period["runs"].as_array().unwrap(),
    );
    for (t, p) in t_runs.iter().zip(p_runs) {
        assert_eq!(t["e2fsck"], "today");
        assert_eq!(p["e2fsck"], "1.41.4", "{p}");
        assert_eq!(p["fsck_clean"], true, "{p}");
        let (_, t1) = pass(t, 1);
        let (_, p1) = pass(p, 1);
        assert!(
            t1 > p1 + 584,
            "{}: pass 1 requests today {t1}, 1.41.4 {p1}",
            t["policy"]
        );
        // (Pass 2's request count depends on the load: read-ahead over directory blocks, see
        // the docs. It is not compared here; its bytes are, below.)
        if t["policy"] == "ext4-2009" {
            // Both checkers' pass 2 asks for the same blocks (strace), but ext4-2009 puts the
            // symlink blocks among the directory blocks, so today's pass 1 has already cached
            // about 8 MB of what pass 2 reads, and the kernel's read-ahead skips cached pages
            // (docs/experiments/ext4-fsck-allocator.md, "The period's own e2fsck"). Measured
            // 8.0-8.6 MB less today over four pairs at load 11-19; half of it holds, and it fails
            // if the two checkers' pass 1 read the same blocks.
            let mb2 = |run: &Value| {
                run["passes"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|q| q["pass"] == 2)
                    .unwrap()["mb_read"]
                    .as_f64()
                    .unwrap()
            };
            let (t2, p2) = (mb2(t), mb2(p));
            assert!(
                t2 + 4.0 < p2,
                "ext4-2009: pass 2 read {t2:.1} MB today, {p2:.1} MB with 1.41.4"
            );
        }
    }
    assert!(stdout.contains("ext4-2009"), "{stdout}");
    std::fs::remove_dir_all(&d1).unwrap();
    std::fs::remove_dir_all(&d2).unwrap();
}

/// On ext3 the period's checker reads what today's reads (docs/rig.md, "Today's e2fsck against
/// the period's"): metacluster-fsck at its default scale, checked by 1.40.2 and by today's
/// e2fsck, issues the same requests per policy (8,254 and 4,371 with both, 2026-11-26). The
/// 1% allowed is the sweep tests' bound for two captures of one e2fsck (measured spread up to
/// 0.18% at load average 10, docs/testing.md); the ext4 gap above is 8-40%, and a period
/// checker that did not run would not be reported as 1.40.2.
///
/// Its memory is not today's: 1.40.2 keeps flat bitmaps of one bit per block or inode where
/// today's pass 1 keeps red-black trees of extents (docs/rig.md, "Peak memory"). Its `-tt`
/// peak was 3,437 KiB against today's 1,040 (3.3 times, the same to the KiB in the runs made:
/// it follows the file system, not timing); more than twice today's holds, and the summary
/// table prints the column.
#[test]
fn period_e2fsck_on_ext3_issues_todays_requests() {
    if !is_root() {
        eprintln!("skipped: the experiment needs root (loop devices, tracefs)");
        return;
    }
    // e2fsck's `-tt` "Peak memory: Memory used: Ak/Bk (...)": A + B, KiB
    let peak_kib = |run: &Value| -> u64 {
        let tt = run["measured_here"]["e2fsck_tt"].as_array().unwrap();
        let peak = tt.iter().find(|s| s["label"] == "Peak memory").unwrap();
        let memory = peak["memory"].as_str().unwrap();
        memory
            .split_whitespace()
            .next()
            .unwrap()
            .split('/')
            .map(|k| k.trim_end_matches('k').parse::<u64>().unwrap())
            .sum()
    };
    let (today, stdout, d1) = reproduce_with("metacluster-fsck", &["--e2fsck", "today"]);
    assert!(stdout.contains("e2fsck peak memory"), "{stdout}");
    let (period, _, d2) = reproduce_with("metacluster-fsck", &["--e2fsck", "period"]);
    let (t_runs, p_runs) = (
        today["runs"].as_array().unwrap(),
        period["runs"].as_array().unwrap(),
    );
    assert_eq!(t_runs.len(), 2);
    for (t, p) in t_runs.iter().zip(p_runs) {
        assert_eq!(t["e2fsck"], "today");
        assert_eq!(p["e2fsck"], "1.40.2", "{p}");
        assert_eq!(p["fsck_clean"], true, "{p}");
        let (tr, pr) = (
            t["requests"].as_u64().unwrap() as f64,
            p["requests"].as_u64().unwrap() as f64,
        );
        assert!(
            (tr - pr).abs() <= 0.01 * tr,
            "{}: today {tr} requests, 1.40.2 {pr}",
            t["policy"]
        );
        let (tm, pm) = (peak_kib(t), peak_kib(p));
        assert!(
            pm > 2 * tm,
            "{}: peak memory today {tm} KiB, 1.40.2 {pm} KiB",
            t["policy"]
        );
    }
    std::fs::remove_dir_all(&d1).unwrap();
    std::fs::remove_dir_all(&d2).unwrap();
}

/// A period e2fsck that was never built is a clear error naming `make deps`, before anything
/// is made.
#[test]
fn a_period_e2fsck_not_built_says_make_deps() {
    let dir = scratch("ext4fsck", "notbuilt");
    let o = Command::new(env!("CARGO_BIN_EXE_layoutlab"))
        .args([
            "reproduce",
            "ext4-fsck-allocator",
            "--e2fsck",
            "1.41.4",
            "--out",
        ])
        .arg(dir.join("out"))
        .env("LAYOUTLAB_E2FSPROGS_CACHE", dir.join("no-cache"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(err.contains("make deps") && err.contains("1.41.4"), "{err}");
    assert!(!dir.join("out/ext4-fsck-allocator").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ext3_vs_ext4_fsck_same_tree_two_formats() {
    if !is_root() {
        eprintln!("skipped: the experiment needs root (loop devices, tracefs)");
        return;
    }
    let (v, stdout, dir) = reproduce("ext3-vs-ext4-fsck");
    assert_eq!(v["population"], "ubuntu-32g");
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs[0]["policy"], "ext3-2007");
    assert_eq!(runs[1]["policy"], "ext4-2008");
    for r in runs {
        assert_eq!(r["fsck_clean"], true, "{r}");
        // e2fsck reads every mapping block the plan made (indirect blocks on ext3; the few
        // extent-tree blocks on ext4)
        assert_eq!(r["indirect_blocks_read"], r["indirect_blocks"], "{r}");
    }
    // ext3 maps the tree with tens of thousands of indirect blocks (32,903 measured), ext4 with
    // a handful of extent-tree blocks (18).
    let ind = runs[0]["indirect_blocks"].as_u64().unwrap();
    assert!((30_000..36_000).contains(&ind), "{ind}");
    assert!(runs[1]["indirect_blocks"].as_u64().unwrap() < 100);
    // Measured 289.7-291.7 s on ext3 against 49.4-73.4 s on ext4 (a 4-6x speed-up; the post
    // said 6-8x "in general"). At least 3x holds every run.
    let ext3 = runs[0]["total_seconds"].as_f64().unwrap();
    let ext4 = runs[1]["total_seconds"].as_f64().unwrap();
    assert!(ext3 > 3.0 * ext4, "ext3 {ext3} s vs ext4 {ext4} s");
    // The ext3 column of the published table is kept aside: nothing published is shown.
    assert!(!stdout.contains("published: "), "{stdout}");
    let published = v["published"]["total_seconds"].as_object();
    assert!(
        published.is_none() || published.unwrap().is_empty(),
        "{published:?}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bench_plan_reports_every_policy_on_the_whole_tree() {
    let o = Command::new(env!("CARGO_BIN_EXE_layoutlab"))
        .args([
            "bench",
            "plan",
            "--policy",
            "ext4-2008,ext4-2009",
            "--json",
            "-",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = v.as_array().unwrap();
    assert_eq!(rows.len(), 2);
    for (row, policy) in rows.iter().zip(["ext4-2008", "ext4-2009"]) {
        assert_eq!(row["policy"], policy);
        assert_eq!(row["workload"], "ubuntu-32g");
        // the 312,214 used inodes of the post less the ones mke2fs makes itself
        assert_eq!(row["inodes"], 312_204);
        assert!(row["plan_seconds"].as_f64().unwrap() > 0.0);
    }
}
