//! `reproduce inode-readahead` on a small tree (a twentieth of ubuntu-32g's counts): the
//! kernel's inode-table read-ahead is visible in the traces, and a setting the kernel refuses
//! is reported with nothing left mounted.

mod common;

use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// ubuntu-32g's population file with a twentieth of its counts on a 2 GiB file system.
fn small_tree(dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../populations/ubuntu-32g.toml"),
    )
    .unwrap();
    let mut out = String::new();
    for line in text.lines() {
        let replaced = [
            ("name = ", "name = \"ubuntu-small\""),
            ("fs_bytes = ", "fs_bytes = 2147483648"),
            ("file_data_blocks = ", "file_data_blocks = 209082"),
            ("directories = ", "directories = 1401"),
            ("regular_files = ", "regular_files = 13177"),
            ("symlinks = ", "symlinks = 1030"),
            ("fast_symlinks = ", "fast_symlinks = 972"),
            ("hard_links = ", "hard_links = 30"),
        ]
        .iter()
        .find(|(k, _)| line.starts_with(k))
        .map(|(_, v)| v.to_string());
        out.push_str(&replaced.unwrap_or_else(|| line.to_string()));
        out.push('\n');
    }
    let p = dir.join("ubuntu-small.toml");
    std::fs::write(&p, out).unwrap();
    p
}

/// Runs the experiment; its output and its process id.
fn run(dir: &Path, extra: &[&str]) -> (Output, u32) {
    let tree = small_tree(dir);
    let child = Command::new(env!("CARGO_BIN_EXE_layoutlab"))
        .args(["reproduce", "inode-readahead", "--tree"])
        .arg(&tree)
        .args(["--device", "sata-500g-2008,ssd-nvme-2024", "--out"])
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

#[test]
fn read_ahead_is_visible_in_the_traces() {
    if !is_root() {
        eprintln!("skipped: the experiment needs root (loop devices, mounts, tracefs)");
        return;
    }
    let dir = scratch("ira", "visible");
    let json = dir.join("r.json");
    let (o, pid) = run(
        &dir,
        &["--settings", "0,4,32", "--json", json.to_str().unwrap()],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["experiment"], "inode-readahead");
    let runs = v["runs"].as_array().unwrap();
    // 3 settings x 2 orders x 2 devices x 2 policies
    assert_eq!(runs.len(), 24);
    for order in ["readdir", "random"] {
        let on = |k: u64| {
            runs.iter()
                .find(|r| {
                    r["order"] == order
                        && r["readahead_blks"] == k
                        && r["device"] == "sata-500g-2008"
                })
                .unwrap_or_else(|| panic!("no {order} {k}"))
        };
        let (r0, r4, r32) = (on(0), on(4), on(32));
        let requests = |r: &Value| r["requests"].as_u64().unwrap();
        let blocks = |r: &Value| r["inode_table_blocks"].as_u64().unwrap();
        // With read-ahead the kernel fetches the same inode-table blocks in fewer, larger
        // requests: requests fall as the setting grows.
        assert!(
            requests(r0) > requests(r4) && requests(r4) > requests(r32),
            "{order}: requests {} {} {}",
            requests(r0),
            requests(r4),
            requests(r32)
        );
        // Without read-ahead every inode-table block read holds an inode a stat needed.
        assert_eq!(r0["wasted_blocks"], 0, "{order}: {r0}");
        // Every inode-table block the walk needs is read whatever the setting (the tree's
        // inodes fill their blocks), read-ahead adding at most what it wastes.
        assert!(blocks(r32) >= blocks(r0), "{order}");
        assert!(
            blocks(r32) - blocks(r0) <= r32["wasted_blocks"].as_u64().unwrap(),
            "{order}: {r32}"
        );
        assert!(r0["seconds"].as_f64().unwrap() > 0.0);
        // Fewer, larger requests keep the disk busy for less time.
        let io = |r: &Value| r["io_seconds"].as_f64().unwrap();
        assert!(
            io(r32) < io(r0),
            "{order}: disk busy {} vs {}",
            io(r32),
            io(r0)
        );
        assert!(io(r0) <= r0["seconds"].as_f64().unwrap());
        assert!(r0["fio_implied_seconds"].as_f64().unwrap() > 0.0);
    }
    // A sweet spot per device and order.
    let spots = v["sweet_spot"].as_array().unwrap();
    assert_eq!(spots.len(), 8);
    for s in spots {
        assert!(
            s["within_5_percent_blks"].as_u64().unwrap() <= s["readahead_blks"].as_u64().unwrap(),
            "{s}"
        );
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
        eprintln!("skipped: the experiment needs root (loop devices, mounts, tracefs)");
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
