//! `reproduce metadata-on-ssd` at its default scale (issue 29): the figures
//! docs/experiments/metadata-on-ssd.md states.
//!
//! What is compared: the plan's footprint (deterministic: the same blocks every run), the
//! routing of each captured request (by address: deterministic for a given trace), and the
//! predicted times of the two layouts and devices. The times are replays of two captures of a
//! real e2fsck, so they are compared as orders with wide margins: across 3 runs here
//! (2026-11-26) the totals spread by at most 16% (ext4-2009 0.81-0.82 s, ext4-meta-ssd on the
//! disk 0.23-0.24 s, on the split device 0.085-0.099 s), far inside the factors asserted
//! (measured ratios 3.4-3.6 and 2.4-2.7 against bounds of 2 and 1.5).

mod common;

use common::*;
use serde_json::Value;
use std::process::Command;

fn reproduce(extra: &[&str]) -> Value {
    reproduce_experiment("metadata-on-ssd", extra)
}

fn reproduce_experiment(name: &str, extra: &[&str]) -> Value {
    let (v, _, dir) = reproduce_in("metassd", &format!("{name}{}", extra.join("")), name, extra);
    std::fs::remove_dir_all(&dir).unwrap();
    v
}

/// The capture's ring buffer was sized from the plan (`steps::check::e2fsck_events`) for at
/// least the marker lines and requests the real check then made: the bound held.
fn ring_bounds_the_capture(run: &Value) {
    let ring = &run["measured_here"]["capture_ring"];
    let markers = ring["markers"].as_u64().unwrap();
    assert!(markers > 0, "{ring}");
    assert!(
        markers <= ring["markers_expected"].as_u64().unwrap(),
        "{}: {ring}",
        run["policy"]
    );
    assert!(
        run["requests"].as_u64().unwrap() <= ring["requests_expected"].as_u64().unwrap(),
        "{}: {} requests, {ring}",
        run["policy"],
        run["requests"]
    );
}

#[test]
fn metadata_on_ssd_at_the_default_scale() {
    assert!(
        is_root(),
        "reproduce metadata-on-ssd needs root (loop devices, tracefs): run the test as root"
    );
    let v = reproduce(&[]);
    assert_eq!(v["scale"], 0.01);
    assert_eq!(v["population"], "bench5-10tb");
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs[0]["policy"], "ext4-2009");
    assert_eq!(runs[1]["policy"], "ext4-meta-ssd");
    for r in runs {
        assert_eq!(r["fsck_clean"], true);
        ring_bounds_the_capture(r);
    }
    assert!(runs[0].get("region").is_none());
    // The SSD the metadata needs, from the plan: the packed tables and journal end at block
    // 422,369 (1.73 GB of the 100 GB file system); directories and extent trees take 30 more
    // blocks; nothing overflows the default region (1,185,458 blocks, 4.86 GB).
    let fp = &runs[1]["region"];
    assert_eq!(fp["static_end_block"], 422_369, "{fp}");
    assert_eq!(fp["used_end_block"], 422_399, "{fp}");
    assert_eq!(fp["region_end_block"], 1_185_458, "{fp}");
    assert_eq!(fp["overflow_blocks"], 0, "{fp}");
    assert_eq!(fp["data_in_region_blocks"], 0, "{fp}");
    // Only file data would reach the disks: every byte e2fsck read came from the SSD.
    let split = &v["metadata_on_fast_device"].as_array().unwrap()[0];
    assert_eq!(split["policy"], "ext4-meta-ssd");
    assert_eq!(split["device"], "1 x ssd-sata-2010 + 1 x sata-2t-5400-2010");
    for c in split["classes"].as_array().unwrap() {
        assert_eq!(c["hdd_bytes"], 0, "{c}");
    }
    let mut ssd_requests = 0;
    for p in split["passes"].as_array().unwrap() {
        assert_eq!(p["hdd"]["requests"], 0, "{p}");
        ssd_requests += p["ssd"]["requests"].as_u64().unwrap();
    }
    assert_eq!(ssd_requests, runs[1]["requests"].as_u64().unwrap());
    // The times: packing the metadata saves most of ext4-2009's check on the disk alone
    // (0.82 s -> 0.24 s), and the SSD more than halves what is left (0.10 s).
    let all_hdd = runs[0]["total_seconds"].as_f64().unwrap();
    let packed_hdd = runs[1]["total_seconds"].as_f64().unwrap();
    let packed_ssd = split["total_seconds"].as_f64().unwrap();
    assert!(packed_hdd < all_hdd / 2.0, "{packed_hdd} vs {all_hdd}");
    assert!(
        packed_ssd < packed_hdd / 1.5,
        "{packed_ssd} vs {packed_hdd}"
    );
}

/// `reproduce metadata-on-ssd-today` at its default scale: the same files, layouts and e2fsck
/// as metadata-on-ssd, priced on today's pair (one 20 TB disk of 2022, `sata-20t-7200-2022`,
/// and the NVMe SSD `ssd-nvme-2024`). The routing is by address (deterministic); the times are
/// replays of captures, compared as orders: 3 runs here (2026-11-26) gave ext4-2009
/// 0.329-0.330 s, ext4-meta-ssd on the disk 0.187-0.206 s and on the split device
/// 0.066-0.077 s (ratios 1.60-1.76 and 2.67-2.85 against bounds of 1.3 and 1.5).
#[test]
fn metadata_on_ssd_today_at_the_default_scale() {
    assert!(
        is_root(),
        "reproduce metadata-on-ssd-today needs root (loop devices, tracefs): run the test as root"
    );
    let v = reproduce_experiment("metadata-on-ssd-today", &[]);
    assert_eq!(v["scale"], 0.01);
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs[0]["policy"], "ext4-2009");
    assert_eq!(runs[1]["policy"], "ext4-meta-ssd");
    for r in runs {
        assert_eq!(r["fsck_clean"], true);
        ring_bounds_the_capture(r);
    }
    // The plan is metadata-on-ssd's: the same region and footprint.
    let fp = &runs[1]["region"];
    assert_eq!(fp["used_end_block"], 422_399, "{fp}");
    assert_eq!(fp["overflow_blocks"], 0, "{fp}");
    // One disk and one SSD hold it; every byte e2fsck read came from the SSD.
    let split = &v["metadata_on_fast_device"].as_array().unwrap()[0];
    assert_eq!(
        split["device"],
        "1 x ssd-nvme-2024 + 1 x sata-20t-7200-2022"
    );
    for c in split["classes"].as_array().unwrap() {
        assert_eq!(c["hdd_bytes"], 0, "{c}");
    }
    for p in split["passes"].as_array().unwrap() {
        assert_eq!(p["hdd"]["requests"], 0, "{p}");
    }
    let all_hdd = runs[0]["total_seconds"].as_f64().unwrap();
    let packed_hdd = runs[1]["total_seconds"].as_f64().unwrap();
    let packed_ssd = split["total_seconds"].as_f64().unwrap();
    assert!(packed_hdd < all_hdd / 1.3, "{packed_hdd} vs {all_hdd}");
    assert!(
        packed_ssd < packed_hdd / 1.5,
        "{packed_ssd} vs {packed_hdd}"
    );
}

/// An image that does not fit the work directory is refused before it is written, with its
/// need and how it was reckoned. The need counts what the image really holds (the image
/// crate's tests/space_estimate.rs holds it against `du`): on tmpfs mke2fs's zeroed inode
/// tables and journal are holes, so metadata-on-ssd-ext3 at its default scale (100 GB of ext3,
/// 1.6 GB of inode tables) needs about 18 MB for mke2fs and passes that check in a 64 MiB
/// tmpfs, and is refused once planned: its 25,000-odd indirect blocks make about 120 MB. (Before,
/// the tables were counted on tmpfs too, and 10 TB of ext3 was refused as needing 158.6 GB
/// where it holds about 9 GB.) No report, and nothing left in the work directory.
#[test]
fn an_image_larger_than_the_work_directory_is_refused_before_it_is_written() {
    assert!(
        is_root(),
        "needs root (a tmpfs work directory, loop devices)"
    );
    let work = layoutlab_rig::Mount::tmpfs(64 << 20).unwrap();
    let dir = scratch("metassd", "small-workdir");
    let o = Command::new(env!("CARGO_BIN_EXE_layoutlab"))
        .args([
            "reproduce",
            "metadata-on-ssd-ext3",
            "--jobs",
            "1",
            "--workdir",
        ])
        .arg(work.target())
        .arg("--out")
        .arg(dir.join("out"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(
        err.contains("not enough free space in") && err.contains("for the ext3-2007 image"),
        "{err}"
    );
    // refused with the plan's blocks counted and the tables not counted: mke2fs leaves them to
    // the fresh image's holes (`assume_storage_prezeroed=1`, docs/image.md)
    assert!(
        err.contains("the plan's directory, mapping and inode-table blocks"),
        "{err}"
    );
    assert!(
        err.contains("inode tables 0 (not zeroed: -E assume_storage_prezeroed=1)"),
        "{err}"
    );
    assert!(!dir.join("out").exists(), "wrote a report");
    let left: Vec<_> = std::fs::read_dir(work.target()).unwrap().collect();
    assert!(left.is_empty(), "left in the work directory: {left:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The disk itself named as the metadata device: refused before any image is made.
#[test]
fn a_disk_as_the_metadata_device_is_refused_before_any_work() {
    let dir = scratch("metassd", "slow");
    let exp = dir.join("slow.toml");
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../experiments/metadata-on-ssd.toml"
    ))
    .unwrap()
    .replace(
        "fast_device = \"ssd-sata-2010\"",
        "fast_device = \"sata-2t-5400-2010\"",
    );
    std::fs::write(&exp, text).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_layoutlab"))
        .args(["reproduce", exp.to_str().unwrap(), "--out"])
        .arg(dir.join("out"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains("'sata-2t-5400-2010' is not faster than 'sata-2t-5400-2010'"),
        "{err}"
    );
    assert!(!dir.join("out").exists(), "wrote a report");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--scale 1`: the 10 TB file system of the question (36 s to 6 min here, by the machine's
/// load: planning two layouts of 10 TB in a debug build dominates). The footprint is the plan's, so exact; the
/// times are from one run (2026-11-26: ext4-2009 83.3 s, ext4-meta-ssd 7.2 s on the disks and
/// 6.2 s with the SSDs), and the bounds sit a factor of two inside the measured ratios.
#[test]
#[ignore = "10 TB: up to 6 minutes; run with --ignored"]
fn metadata_on_ssd_at_10_tb() {
    assert!(is_root(), "needs root (loop devices, tracefs)");
    let v = reproduce(&["--scale", "1", "--jobs", "1"]);
    let runs = v["runs"].as_array().unwrap();
    for r in runs {
        assert_eq!(r["fsck_clean"], true);
        // every file whole: 8 TB of files, each rounded up to whole 4 KiB blocks
        assert_eq!(r["file_data_bytes"], 8_000_016_384_000u64);
    }
    // 157.1 GB of metadata: 156.3 GB of inode tables, bitmaps, descriptors and the journal
    // end at block 38,351,944; 3030 directory and extent-tree blocks follow.
    let fp = &runs[1]["region"];
    assert_eq!(fp["static_end_block"], 38_351_944, "{fp}");
    assert_eq!(fp["used_end_block"], 38_354_973, "{fp}");
    assert_eq!(fp["in_region_blocks"], 3030, "{fp}");
    assert_eq!(fp["overflow_blocks"], 0, "{fp}");
    let split = &v["metadata_on_fast_device"].as_array().unwrap()[0];
    assert_eq!(split["device"], "3 x ssd-sata-2010 + 5 x sata-2t-5400-2010");
    for c in split["classes"].as_array().unwrap() {
        assert_eq!(c["hdd_bytes"], 0, "{c}");
    }
    let all_hdd = runs[0]["total_seconds"].as_f64().unwrap();
    let packed_hdd = runs[1]["total_seconds"].as_f64().unwrap();
    let packed_ssd = split["total_seconds"].as_f64().unwrap();
    assert!(packed_hdd < all_hdd / 5.0, "{packed_hdd} vs {all_hdd}");
    assert!(packed_ssd < packed_hdd, "{packed_ssd} vs {packed_hdd}");
}

/// `reproduce metadata-on-ssd-ext3` at its default scale: ext3-meta-ssd moves every indirect
/// and directory block to the SSD, but the inode tables stay in their groups on the disk, so
/// the SSD saves little beyond what clustering the indirect blocks saves on the disk alone.
/// Spread of the totals over 3 runs here (2026-11-26): ext3-2007 236.1-236.2 s, ext3-meta-ssd
/// 25.25-25.32 s on the disk and 24.20-24.28 s with the SSD (under 0.3%).
#[test]
fn metadata_on_ssd_ext3_still_seeks_for_inode_tables() {
    assert!(is_root(), "needs root (loop devices, tracefs)");
    let dir = scratch("metassd", "ext3");
    let json = dir.join("r.json");
    let o = Command::new(env!("CARGO_BIN_EXE_layoutlab"))
        .args(["reproduce", "metadata-on-ssd-ext3", "--out"])
        .arg(dir.join("out"))
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs[1]["policy"], "ext3-meta-ssd");
    for r in runs {
        assert_eq!(r["fsck_clean"], true, "{}", r["policy"]);
    }
    // the plan: 30,601 indirect blocks and 29 directory blocks in the region, none outside
    let fp = &runs[1]["region"];
    assert_eq!(fp["in_region_blocks"], 30_630, "{fp}");
    assert_eq!(fp["overflow_blocks"], 0, "{fp}");
    assert_eq!(runs[1]["indirect_blocks"], 30_601);
    let split = &v["metadata_on_fast_device"].as_array().unwrap()[0];
    let class = |name: &str| {
        split["classes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["class"] == name)
            .map(|c| {
                (
                    c["ssd_bytes"].as_u64().unwrap(),
                    c["hdd_bytes"].as_u64().unwrap(),
                )
            })
            .unwrap_or_else(|| panic!("no class {name}"))
    };
    // every indirect and directory block from the SSD ...
    assert_eq!(class("indirect").1, 0);
    assert_eq!(class("directory").1, 0);
    // ... but over 90% of the inode tables e2fsck read came from the disk (measured 97%)
    let (it_ssd, it_hdd) = class("inode_table");
    assert!(it_hdd * 10 > (it_ssd + it_hdd) * 9, "{it_ssd} {it_hdd}");
    let all_hdd = runs[0]["total_seconds"].as_f64().unwrap();
    let packed_hdd = runs[1]["total_seconds"].as_f64().unwrap();
    let packed_ssd = split["total_seconds"].as_f64().unwrap();
    // clustering the indirect blocks: 236 s -> 25 s on the disk (ratio 9.3; bound 4)
    assert!(packed_hdd < all_hdd / 4.0, "{packed_hdd} vs {all_hdd}");
    // the SSD then saves under a fifth (measured 4%): the tables are still read from the disk
    assert!(
        packed_ssd > packed_hdd * 0.8,
        "{packed_ssd} vs {packed_hdd}"
    );
}

/// A capture's requests as a multiset: (op, first sector, sectors, pass) and how often.
type Requests = std::collections::HashMap<(layoutlab_trace::Op, u64, u32, String), u64>;

/// One capture's requests ([`Requests`]), from the trace that `--keep` leaves beside the image.
fn requests_of(trace: &std::path::Path) -> Requests {
    let t = layoutlab_trace::read_path(trace).unwrap();
    let mut out = Requests::new();
    for r in &t.requests {
        let key = (r.op, r.sector, r.sectors, t.tag_name(r.tag).to_string());
        *out.entry(key).or_insert(0) += 1;
    }
    out
}

/// Requests in one multiset and not in the other, both ways.
fn requests_not_in_both(a: &Requests, b: &Requests) -> u64 {
    let mut differ = 0;
    for (k, &n) in a {
        differ += n.saturating_sub(b.get(k).copied().unwrap_or(0));
    }
    for (k, &n) in b {
        differ += n.saturating_sub(a.get(k).copied().unwrap_or(0));
    }
    differ
}

/// `e2fsck_real_time` (e2fsck under `SCHED_FIFO` on the plain loop device, which lets the
/// ext3 check of 10 TB finish here under load) changes how long e2fsck waits for a CPU, not
/// what it reads: the same image captured plainly and real-time gives the same requests.
///
/// Two captures are two samples: the kernel's read-ahead can split or join a request
/// differently when the loop device answers late or the page cache lost a page. Measured here
/// (2026-11-27, load average 10-17; docs/rig.md, "A capture that waits less for a CPU"): at
/// this scale two plain captures differed by 3 of 47,151 requests (ext3-2007) and 0 of 17,516
/// (ext3-meta-ssd), two real-time ones by 0 and 4, plain against real-time by 0-3 and 0-4; at
/// scale 0.05 by up to 194 of 85,414 (plain, plain) and 1,331 of 185,453 (0.70%, plain against
/// a real-time capture made under memory pressure). The test allows 1% of the requests: 1.4
/// times the largest difference seen, and the bound the sweep tests use. The read-ahead,
/// queue and e2fsck options must stay the same for it to hold.
#[test]
fn a_real_time_capture_makes_the_requests_a_plain_one_makes() {
    assert!(is_root(), "needs root (loop devices, tracefs)");
    // in memory, as the default work directory: a loop device over a disk answers otherwise
    let work = std::path::PathBuf::from(format!(
        "/dev/shm/layoutlab-metassd-rt-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&work);
    /// Removes the kept images and traces (memory) however the test ends.
    struct Removed(std::path::PathBuf);
    impl Drop for Removed {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
    let _removed = Removed(work.clone());
    let mut captures = Vec::new();
    for real_time in ["false", "true"] {
        let dir = work.join(real_time);
        std::fs::create_dir_all(&dir).unwrap();
        let set = format!("e2fsck_real_time={real_time}");
        let (v, _, out) = reproduce_in(
            "metassd",
            &format!("rt-{real_time}"),
            "metadata-on-ssd-ext3",
            &["--set", &set, "--workdir", dir.to_str().unwrap(), "--keep"],
        );
        std::fs::remove_dir_all(&out).unwrap();
        for r in v["runs"].as_array().unwrap() {
            assert_eq!(r["fsck_clean"], true, "{}", r["policy"]);
            // the JSON says how e2fsck ran (the key is left out when false)
            assert_eq!(
                r["measured_here"]["e2fsck_real_time"]
                    .as_bool()
                    .unwrap_or(false),
                real_time == "true",
                "{}",
                r["policy"]
            );
        }
        captures.push(dir);
    }
    for policy in ["ext3-2007", "ext3-meta-ssd"] {
        let trace = format!("metadata-on-ssd-ext3-{policy}.trace.csv");
        let plain = requests_of(&captures[0].join(&trace));
        let real_time = requests_of(&captures[1].join(&trace));
        let n: u64 = plain.values().sum();
        assert!(n > 10_000, "{policy}: {n} requests");
        let differ = requests_not_in_both(&plain, &real_time);
        eprintln!("{policy}: {differ} of {n} requests differ between plain and real-time");
        assert!(
            differ * 100 <= n,
            "{policy}: {differ} of {n} requests differ between the plain and the real-time capture"
        );
    }
}

/// `reproduce metadata-on-ssd-tree` (the 32 GiB ubuntu-32g tree, its full size): the SSD takes
/// most of ext4-meta-ssd's check off. Compared on replays of one captured trace (the disk and
/// the split device), so the capture's spread does not enter: over 5 runs here (2026-11-26)
/// 11.14-11.60 s on the disk, 1.13-1.21 s with the SSD, ratio 9.2-10.2 against the bound 4.
/// ext4-2009's own capture is another sample and is not compared here: one run in about ten
/// gave it 32.0 s (and ext4-meta-ssd 21.9 s) where the others gave 11.8-12.0 s, cause open.
#[test]
fn metadata_on_ssd_tree_gains_most_from_the_ssd() {
    assert!(is_root(), "needs root (loop devices, tracefs)");
    let dir = scratch("metassd", "tree");
    let json = dir.join("r.json");
    let o = Command::new(env!("CARGO_BIN_EXE_layoutlab"))
        .args(["reproduce", "metadata-on-ssd-tree", "--out"])
        .arg(dir.join("out"))
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let runs = v["runs"].as_array().unwrap();
    for r in runs {
        assert_eq!(r["fsck_clean"], true, "{}", r["policy"]);
        ring_bounds_the_capture(r);
    }
    // the plan: tables and journal end at block 168,458, directories and extent trees at
    // 198,845 (0.81 GB): 30,388 blocks in the region, none outside
    let fp = &runs[1]["region"];
    assert_eq!(fp["static_end_block"], 168_458, "{fp}");
    assert_eq!(fp["used_end_block"], 198_845, "{fp}");
    assert_eq!(fp["in_region_blocks"], 30_388, "{fp}");
    assert_eq!(fp["overflow_blocks"], 0, "{fp}");
    let split = &v["metadata_on_fast_device"].as_array().unwrap()[0];
    for c in split["classes"].as_array().unwrap() {
        assert_eq!(c["hdd_bytes"], 0, "{c}");
    }
    let all_hdd = runs[0]["total_seconds"].as_f64().unwrap();
    let packed_hdd = runs[1]["total_seconds"].as_f64().unwrap();
    let packed_ssd = split["total_seconds"].as_f64().unwrap();
    let passes = |r: &Value| -> Vec<(u64, f64, u64)> {
        r["passes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                (
                    p["pass"].as_u64().unwrap(),
                    p["seconds"].as_f64().unwrap(),
                    p["requests"].as_u64().unwrap(),
                )
            })
            .collect()
    };
    let why = format!(
        "ext4-2009 {:?}, ext4-meta-ssd {:?}, think {} / {}",
        passes(&runs[0]),
        passes(&runs[1]),
        runs[0]["measured_here"]["think_source"],
        runs[1]["measured_here"]["think_source"]
    );
    assert!(all_hdd > 0.0, "{why}");
    assert!(
        packed_ssd < packed_hdd / 4.0,
        "{packed_ssd} vs {packed_hdd}: {why}"
    );
}

/// `reproduce metadata-on-ssd-aging` at its default scale (bench5-10tb at 1/100, fresh and
/// after 1 and 5 capacities of aging): the aging operation prices ext4-meta-ssd's cells on
/// the split device too. What is deterministic is compared exactly: the plan's footprint at
/// each age (no overflow), the routing (every request of each check reached the SSD) and the
/// read costs, which `crates/experiments/tests/metadata_on_ssd_reads.rs` holds for the same
/// plans. The checks' times are replays of one capture each (2026-11-26, one run: ext4-meta-ssd
/// 0.22 / 0.36 / 1.09 s on the disk and 0.09 / 0.11 / 0.12 s on the split device, ratios 2.4
/// to 9), so only their order is asserted, with the bound of metadata_on_ssd_at_the_default_scale
/// (a factor of 1.5, inside the 2.4-2.7 that test's 3 runs measured fresh).
#[test]
fn metadata_on_ssd_aging_at_the_default_scale() {
    assert!(is_root(), "needs root (loop devices, tracefs)");
    let dir = scratch("metassd", "aging");
    let json = dir.join("r.json");
    let o = Command::new(env!("CARGO_BIN_EXE_layoutlab"))
        .args(["reproduce", "metadata-on-ssd-aging", "--out"])
        .arg(dir.join("out"))
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 6);
    // the SSD needed (block past the last metadata block) at ages 0, 1 and 5
    let used_end = [(0.0, 422_399), (1.0, 422_417), (5.0, 422_558)];
    for r in runs {
        assert_eq!(r["fsck_clean"], true, "{}", r["policy"]);
        let age = r["age"].as_f64().unwrap();
        if r["policy"] == "ext4-2009" {
            assert!(r.get("split").is_none());
            continue;
        }
        let s = &r["split"];
        assert_eq!(
            s["fsck"]["device"],
            "1 x ssd-sata-2010 + 1 x sata-2t-5400-2010"
        );
        let want = used_end.iter().find(|(a, _)| *a == age).unwrap().1;
        assert_eq!(s["region"]["used_end_block"], want, "age {age}");
        assert_eq!(s["region"]["overflow_blocks"], 0, "age {age}");
        let mut ssd_requests = 0;
        for p in s["fsck"]["passes"].as_array().unwrap() {
            assert_eq!(p["hdd"]["requests"], 0, "age {age}: {p}");
            ssd_requests += p["ssd"]["requests"].as_u64().unwrap();
        }
        assert_eq!(ssd_requests, r["requests"].as_u64().unwrap(), "age {age}");
        // the reads: the same plan, so the same figures as the reads test (age 5: 96.1 MB/s
        // on the disk, 97.4 on the split device)
        if age == 5.0 {
            let mbps = |x: &Value| format!("{:.1}", x["sequential_mb_per_s"].as_f64().unwrap());
            assert_eq!(
                (mbps(&r["reads"]), mbps(&s["reads"])),
                ("96.1".into(), "97.4".into())
            );
        }
        let disk = r["total_seconds"].as_f64().unwrap();
        let split = s["fsck"]["total_seconds"].as_f64().unwrap();
        assert!(split < disk / 1.5, "age {age}: {split} vs {disk}");
    }
}
