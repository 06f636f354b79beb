//! `--metrics` as a user runs it: the metrics of a plan (`plan --metrics --json`) are exactly
//! those `image inspect --metrics --json` reads back from the image `image make` writes of
//! the same plan (plan → image → inspect), as are those `image make --metrics --json` reports,
//! and the human table shows the same numbers.

mod common;

use common::layoutlab;

use std::path::{Path, PathBuf};
use std::process::Output;

fn ok(o: &Output) -> String {
    assert!(
        o.status.success(),
        "layoutlab failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout.clone()).unwrap()
}

/// A fresh empty directory for one test: `layoutlab-metrics-test-NAME-PID`.
fn scratch(name: &str) -> PathBuf {
    common::scratch("metrics-test", name)
}

/// populations/ubuntu-32g.toml with every count, the file system and the data divided by
/// `divisor`: thousands of small files, directories, symlinks and hard links in seconds.
fn small_ubuntu(dir: &Path, divisor: i64) -> PathBuf {
    let text = include_str!("../../../populations/ubuntu-32g.toml");
    let mut v: toml::Value = toml::from_str(text).unwrap();
    let t = v.as_table_mut().unwrap();
    for key in ["fs_bytes", "file_data_blocks"] {
        let n = t[key].as_integer().unwrap();
        t.insert(key.into(), toml::Value::Integer(n / divisor));
    }
    let counts = t["counts"].as_table_mut().unwrap();
    for key in [
        "directories",
        "regular_files",
        "symlinks",
        "fast_symlinks",
        "hard_links",
    ] {
        let n = counts[key].as_integer().unwrap();
        counts.insert(key.into(), toml::Value::Integer((n / divisor).max(1)));
    }
    let path = dir.join(format!("ubuntu-small-{divisor}.toml"));
    std::fs::write(&path, toml::to_string(&v).unwrap()).unwrap();
    path
}

fn round_trip(policy: &str, dir: &Path, workload: &Path) {
    let w = workload.to_str().unwrap();
    let plan_json = dir.join(format!("{policy}-plan-metrics.json"));
    ok(&layoutlab(&[
        "plan",
        "--workload",
        w,
        "--policy",
        policy,
        "--metrics",
        "--json",
        plan_json.to_str().unwrap(),
    ]));
    let image = dir.join(format!("{policy}.img"));
    let make_json = dir.join(format!("{policy}-make-metrics.json"));
    ok(&layoutlab(&[
        "image",
        "make",
        "--workload",
        w,
        "--policy",
        policy,
        "--metrics",
        "--json",
        make_json.to_str().unwrap(),
        image.to_str().unwrap(),
    ]));
    let inspected = ok(&layoutlab(&[
        "image",
        "inspect",
        image.to_str().unwrap(),
        "--metrics",
        "--json",
        "-",
    ]));
    let planned: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&plan_json).unwrap()).unwrap();
    let read: serde_json::Value = serde_json::from_str(&inspected).unwrap();
    assert_eq!(read, planned, "{policy}: image metrics vs plan metrics");
    let made: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&make_json).unwrap()).unwrap();
    assert_eq!(
        made, planned,
        "{policy}: image make --metrics vs plan metrics"
    );
    // a population that exercises every metric
    assert!(
        planned["fragments"]["files"].as_u64().unwrap() > 1000,
        "{planned}"
    );
    assert!(planned["free_space"]["free_extents"].as_u64().unwrap() > 10);
    assert!(planned["free_space"]["free_chunks"].as_u64().unwrap() > 0);
    assert!(planned["directories"]["blocks"].as_u64().unwrap() > 100);
    assert!(planned["directories"]["groups"].as_u64().unwrap() >= 1);
    if policy.starts_with("ext3") {
        // block maps: an IND per file of more than 12 blocks
        assert!(planned["mapping"]["blocks"].as_u64().unwrap() > 100);
    }
    let score = planned["layout_score"]["score"].as_f64().unwrap();
    assert!(score > 0.0 && score <= 1.0);

    // the human table shows the same numbers
    let table = ok(&layoutlab(&[
        "image",
        "inspect",
        image.to_str().unwrap(),
        "--metrics",
    ]));
    let row = |name: &str| -> String {
        let line = table
            .lines()
            .find(|l| l.trim_start().starts_with(name))
            .unwrap_or_else(|| panic!("no row {name:?} in\n{table}"));
        line.split_whitespace().last().unwrap().to_string()
    };
    assert_eq!(row("layout score (block-weighted)"), format!("{score:.4}"));
    assert_eq!(
        row("free extents"),
        planned["free_space"]["free_extents"].to_string()
    );
    assert_eq!(
        row("mapping blocks"),
        planned["mapping"]["blocks"].to_string()
    );
}

#[test]
fn inspect_metrics_of_an_image_equal_its_plans() {
    let dir = scratch("round-trip");
    let workload = small_ubuntu(&dir, 64);
    // block maps with indirect blocks next to their data; extents with flex_bg
    round_trip("ext3-2007", &dir, &workload);
    round_trip("ext4-2009", &dir, &workload);
    std::fs::remove_dir_all(&dir).unwrap();
}
