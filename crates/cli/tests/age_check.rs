//! `workload age-check`: one aging stream on the engine's ext4-kernel and on the kernel's
//! ext4 leaves the same files (an oracle between two implementations of the same stream), and
//! after one capacity written the two layouts agree as docs/aging-kernel.md reports (needs
//! root).

mod common;

use common::*;
use serde_json::Value;
use std::process::Command;

#[test]
fn engine_and_kernel_agree_after_one_capacity() {
    if !is_root() {
        eprintln!("skipped: age-check needs root (zram, mount)");
        return;
    }
    let dir = scratch("age-check", "files");
    let files = dir.join("files.json");
    let o = Command::new(env!("CARGO_BIN_EXE_layoutlab"))
        .args([
            "workload",
            "age-check",
            "ubuntu-32g",
            "--scale",
            "0.02",
            "--age",
            "1",
            "--json",
            "-",
            "--files",
        ])
        .arg(&files)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["same_tree"], true);
    assert!(v["aging_operations"].as_u64().unwrap() > 1000, "{v}");
    let (e, k) = (&v["engine"], &v["kernel"]);
    let f = |m: &Value, a: &str, b: &str| m[a][b].as_f64().unwrap();
    // what docs/aging-kernel.md reports for this stream: the same free space to a few
    // blocks, the same directory blocks to a few, a layout score within 0.01; fragmented
    // files within the kernel's own run-to-run spread (the engine's 561; the kernel's 506-667
    // in nineteen runs on 2026-11-27, two of its runs up to 32% of the smaller apart; the 15%
    // band used before failed once in CI at 667) and fragments per file within 0.1 (1.24; the
    // kernel's 1.22-1.34) — the engine split 288 before the kernel's s_mb_max_to_scan was
    // modelled
    let free = (
        f(e, "free_space", "free_blocks"),
        f(k, "free_space", "free_blocks"),
    );
    assert!((free.0 - free.1).abs() <= 0.005 * free.1, "{free:?}");
    let dirs = (f(e, "directories", "blocks"), f(k, "directories", "blocks"));
    assert!((dirs.0 - dirs.1).abs() <= 0.02 * dirs.1, "{dirs:?}");
    let score = (f(e, "layout_score", "score"), f(k, "layout_score", "score"));
    assert!((score.0 - score.1).abs() <= 0.01, "{score:?}");
    let frag = (
        f(e, "fragments", "fragmented_files"),
        f(k, "fragments", "fragmented_files"),
    );
    assert!(
        (frag.0 - frag.1).abs() <= 0.32 * frag.0.min(frag.1),
        "{frag:?}"
    );
    let mean = (f(e, "fragments", "mean"), f(k, "fragments", "mean"));
    assert!((mean.0 - mean.1).abs() <= 0.1, "{mean:?}");
    assert!(v["differences"]["layout score"].is_number());
    // --files: every name of every regular file, made by a create, with all its data
    // blocks on both sides (data is always written, never left sparse)
    let d: Value = serde_json::from_slice(&std::fs::read(&files).unwrap()).unwrap();
    let bs = d["block_bytes"].as_u64().unwrap();
    let list = d["files"].as_array().unwrap();
    assert!(
        list.len() as f64 >= f(e, "fragments", "files"),
        "{}",
        list.len()
    );
    let blocks = |runs: &Value| -> u64 {
        runs.as_array()
            .unwrap()
            .iter()
            .map(|r| r[2].as_u64().unwrap())
            .sum()
    };
    for file in list {
        let want = file["size"].as_u64().unwrap().div_ceil(bs);
        assert_eq!(blocks(&file["engine"]), want, "{file}");
        assert_eq!(blocks(&file["kernel"]), want, "{file}");
        assert_eq!(file["history"][0]["kind"], "create", "{file}");
    }
    assert!(!d["writebacks_after_op"].as_array().unwrap().is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_fullness_the_file_system_cannot_hold_is_refused_naming_it() {
    let o = Command::new(env!("CARGO_BIN_EXE_layoutlab"))
        .args([
            "workload",
            "age-check",
            "ubuntu-32g",
            "--scale",
            "0.02",
            "--fullness",
            "1.5",
        ])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(stderr(&o).contains("fullness"), "{}", stderr(&o));
}
