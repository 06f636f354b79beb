//! `reproduce inode-readahead` on its default tree (a twentieth of ubuntu-32g: every count, its
//! data and its file system shrunk alike): the kernel's inode-table read-ahead is visible in
//! the traces, and a setting the kernel refuses is reported with nothing left mounted.

mod common;

use common::*;
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

/// Runs the experiment; its output and its process id.
fn run(dir: &Path, extra: &[&str]) -> (Output, u32) {
    // The experiment's default tree: a twentieth of ubuntu-32g (experiments/inode-readahead.toml).
    let child = Command::new(env!("CARGO_BIN_EXE_layoutlab"))
        .args(["reproduce", "inode-readahead"])
        .args([
            "--device",
            "sata-500g-2008,sata-400g-2007,ssd-sata-2010,ssd-nvme-2024",
            "--out",
        ])
        .arg(dir.join("out"))
        .args(extra)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    (child.wait_with_output().unwrap(), pid)
}

/// Mounts the run `pid` made (its in-memory work directory, its image's file system) that
/// are still there; loop devices over its image.
fn left_by(pid: u32) -> Vec<String> {
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
    let loops = Command::new("losetup").arg("-a").output().unwrap();
    mounts
        .lines()
        .chain(String::from_utf8_lossy(&loops.stdout).lines())
        .filter(|l| {
            l.contains(&format!("layoutlab-mnt-{pid}-"))
                || l.contains(&format!("layoutlab-kfs-{pid}-"))
        })
        .map(str::to_string)
        .collect()
}

const DISKS: [&str; 2] = ["sata-500g-2008", "sata-400g-2007"];
const SSDS: [&str; 2] = ["ssd-sata-2010", "ssd-nvme-2024"];

/// One run at settings 0, 2, 8, 64 and 256 on the four devices, shared by every check of the
/// doc's findings (docs/experiments/inode-readahead.md), each with the spread measured over 3
/// runs of the default tree (2026-11-26).
#[test]
fn read_ahead_is_visible_in_the_traces() {
    if !is_root() {
        eprintln!("SKIP read_ahead_is_visible_in_the_traces: the experiment needs root (loop devices, mounts, tracefs)");
        return;
    }
    let dir = scratch("ira", "visible");
    let json = dir.join("r.json");
    let (o, pid) = run(
        &dir,
        &[
            "--settings",
            "0,2,8,64,256",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["experiment"], "inode-readahead");
    let runs = v["runs"].as_array().unwrap();
    // 5 settings x 2 orders x 4 devices x 2 policies
    assert_eq!(runs.len(), 80);
    let find = |policy: &str, order: &str, device: &str, k: u64| -> &Value {
        runs.iter()
            .find(|r| {
                r["policy"] == policy
                    && r["order"] == order
                    && r["readahead_blks"] == k
                    && r["device"] == device
            })
            .unwrap_or_else(|| panic!("no {policy} {order} {device} {k}"))
    };
    let io = |r: &Value| r["io_seconds"].as_f64().unwrap();
    let requests = |r: &Value| r["requests"].as_u64().unwrap();
    let blocks = |r: &Value| r["inode_table_blocks"].as_u64().unwrap();
    for policy in ["ext4-2009", "ext4-kernel"] {
        for order in ["readdir", "random"] {
            for device in DISKS.iter().chain(&SSDS) {
                let curve: Vec<f64> = [0, 2, 8, 64, 256]
                    .iter()
                    .map(|&k| io(find(policy, order, device, k)))
                    .collect();
                // Two captures of one case are two samples (readdir order follows the hash seed
                // mke2fs draws): over 3 runs of the default tree (2026-11-26) the disk-busy time
                // of one case moved by up to 5.2% on the disks and 2.7% on the SSDs.
                let spread = if DISKS.contains(device) { 0.052 } else { 0.027 };
                // The doc: "disk-busy time falls with the setting from 2 blocks on, on every
                // device, in both orders, for both layouts". At this twentieth the steps from 2
                // to 8 and 8 to 64 are 20-32% on the disks and 5-22% on the SSDs (3 runs), and
                // each must fall by more than the spread (a flat curve's noise can fall by a
                // hair); the step from 64 to 256 (a fall of 0-5%) is within the spread, so there
                // the curve may not rise by more.
                assert!(
                    curve[2] < curve[1] * (1.0 - spread) && curve[3] < curve[2] * (1.0 - spread),
                    "{policy} {order} {device}: disk busy does not fall from 2 to 8 to 64: {curve:?}"
                );
                assert!(
                    curve[4] <= curve[3] * (1.0 + spread),
                    "{policy} {order} {device}: disk busy rises from 64 to 256: {curve:?}"
                );
                // The doc: on the disks "the curve flattens from 64" (within 5% of the best at
                // the full tree) "and 8 blocks costs about 25% more than 64". At this twentieth
                // 64 came within 2.6-5.2% of the best and 8 was 25-36% above 64 (3 runs): 64 must be
                // within the full tree's 5% plus the spread of the best, and 8 at least 15%
                // above 64 (25% less the spread of a ratio of two samples).
                if DISKS.contains(device) {
                    let best = curve.iter().copied().fold(f64::INFINITY, f64::min);
                    assert!(
                        curve[3] <= best * (1.05 + spread),
                        "{policy} {order} {device}: 64 blocks is not within 5% (+{spread}) of the best: {curve:?}"
                    );
                    assert!(
                        curve[2] >= 1.15 * curve[3],
                        "{policy} {order} {device}: 8 blocks costs less than 15% more than 64: {curve:?}"
                    );
                }
            }
            let on = |k: u64| find(policy, order, "sata-500g-2008", k);
            let (r0, r8, r64) = (on(0), on(8), on(64));
            // With read-ahead the kernel fetches the same inode-table blocks in fewer, larger
            // requests: requests fall as the setting grows.
            assert!(
                requests(r0) > requests(r8) && requests(r8) > requests(r64),
                "{policy} {order}: requests {} {} {}",
                requests(r0),
                requests(r8),
                requests(r64)
            );
            // Without read-ahead every inode-table block read holds an inode a stat needed.
            assert_eq!(r0["wasted_blocks"], 0, "{policy} {order}: {r0}");
            // Every inode-table block the walk needs is read whatever the setting (the tree's
            // inodes fill their blocks), read-ahead adding at most what it wastes.
            assert!(blocks(r64) >= blocks(r0), "{policy} {order}");
            assert!(
                blocks(r64) - blocks(r0) <= r64["wasted_blocks"].as_u64().unwrap(),
                "{policy} {order}: {r64}"
            );
            assert!(io(r0) <= r0["seconds"].as_f64().unwrap());
            assert!(r0["fio_implied_seconds"].as_f64().unwrap() > 0.0);
        }
        // The doc: "SSDs care, about as much in proportion": the device is busy 34% (SATA SSD)
        // and 38% (NVMe) less at 256 than at 0 in readdir order. At 1/20 three runs gave
        // 0.342-0.343 and 0.388-0.391 (spread 0.003); the full tree's figures are held within
        // ±0.02 (the tree's size moves the NVMe figure by 0.01).
        for (device, doc) in [("ssd-sata-2010", 0.34), ("ssd-nvme-2024", 0.38)] {
            let gain = 1.0
                - io(find(policy, "readdir", device, 256)) / io(find(policy, "readdir", device, 0));
            eprintln!(
                "{policy} {device}: disk busy -{:.1}% from 0 to 256 blocks",
                100.0 * gain
            );
            assert!(
                (gain - doc).abs() <= 0.02,
                "{policy} {device}: gain {gain:.3}, the doc says {doc}"
            );
        }
    }
    // A sweet spot per layout, device and order, found where the curve has flattened.
    let spots = v["sweet_spot"].as_array().unwrap();
    assert_eq!(spots.len(), 16);
    for s in spots {
        let (best, knee) = (
            s["readahead_blks"].as_u64().unwrap(),
            s["within_5_percent_blks"].as_u64().unwrap(),
        );
        if DISKS.contains(&s["device"].as_str().unwrap()) {
            assert!(best >= 64 && knee >= 64, "{s}");
        }
    }
    for p in ["ext4-2009", "ext4-kernel"] {
        assert!(dir
            .join(format!("out/inode-readahead/readahead-{p}-readdir.svg"))
            .exists());
    }
    assert!(left_by(pid).is_empty(), "{:?}", left_by(pid));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_setting_the_kernel_refuses_is_reported_and_nothing_stays_mounted() {
    if !is_root() {
        eprintln!("SKIP a_setting_the_kernel_refuses_is_reported_and_nothing_stays_mounted: the experiment needs root (loop devices, mounts, tracefs)");
        return;
    }
    let dir = scratch("ira", "refused");
    let (o, pid) = run(&dir, &["--settings", "3"]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("refused inode_readahead_blks = 3") && err.contains("power of two"),
        "{err}"
    );
    assert!(left_by(pid).is_empty(), "{:?}", left_by(pid));
    std::fs::remove_dir_all(&dir).unwrap();
}
