//! `layoutlab bench experiment`: its JSON contract (each run's wall time split into stages that
//! add up to it, the budget of its scale), `all --scale 1` passing scale 1 to every experiment
//! (request-merging, which has no other scale, included), and bad input refused before any run.
//! It times nothing against a target: speed is the benchmark's to report, not a test's.

mod common;

use common::*;
use serde_json::Value;

const STAGES: [&str; 7] = [
    "plan", "image", "capture", "price", "report", "teardown", "other",
];

/// Checks one run's object and returns its stages.
fn check_run(r: &Value, experiment: &str) -> serde_json::Map<String, Value> {
    assert_eq!(r["experiment"], experiment, "{r}");
    assert_eq!(r["status"], "done", "{r}");
    let wall = r["wall_seconds"].as_f64().unwrap();
    let stages = r["stage_seconds"].as_object().unwrap().clone();
    let keys: Vec<&str> = stages.keys().map(String::as_str).collect();
    let mut want = STAGES.to_vec();
    want.sort();
    assert_eq!(keys, want, "{r}");
    for (k, v) in &stages {
        assert!(v.as_f64().unwrap() >= 0.0, "{k}: {r}");
    }
    // The stages share out the wall time: they add up to it, not to more.
    let sum: f64 = stages.values().map(|v| v.as_f64().unwrap()).sum();
    assert!(
        (sum - wall).abs() <= 1e-6 * wall.max(1.0),
        "stages sum to {sum} s, the run took {wall} s: {r}"
    );
    stages
}

#[test]
fn bench_experiment_all_at_scale_1_splits_each_wall_time_into_stages_within_the_budget() {
    if !is_root() {
        eprintln!("skipped: bench experiment runs experiments on loop devices (root)");
        return;
    }
    let o = layoutlab(&[
        "bench",
        "experiment",
        "all",
        "--scale",
        "1",
        "--only",
        "mkfs-overhead,fio-randread,request-merging",
        "--json",
        "-",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let runs = v.as_array().unwrap();
    assert_eq!(runs.len(), 3, "{v}");
    for (r, name) in runs
        .iter()
        .zip(["mkfs-overhead", "fio-randread", "request-merging"])
    {
        let stages = check_run(r, name);
        // scale 1's budget (issue 28): ten minutes each
        assert_eq!(r["budget_seconds"].as_f64(), Some(600.0), "{r}");
        assert_eq!(
            r["within_budget"].as_bool(),
            Some(r["wall_seconds"].as_f64().unwrap() <= 600.0),
            "{r}"
        );
        let s = |k: &str| stages[k].as_f64().unwrap();
        match name {
            // the model of mke2fs, in memory: no device, no capture
            "mkfs-overhead" => {
                assert!(s("plan") > 0.0, "{r}");
                assert_eq!(s("capture") + s("image") + s("price"), 0.0, "{r}");
            }
            // jobs priced on a device model
            "fio-randread" => {
                assert!(s("price") > 0.0, "{r}");
                assert_eq!(s("capture") + s("image"), 0.0, "{r}");
            }
            // kernel file systems made, dd traced, the traces priced
            _ => {
                for k in ["image", "capture", "price", "report"] {
                    assert!(s(k) > 0.0, "{k}: {r}");
                }
            }
        }
    }
}

#[test]
fn bench_experiment_times_every_stage_of_an_fsck_run() {
    if !is_root() {
        eprintln!("skipped: bench experiment runs e2fsck on loop devices (root)");
        return;
    }
    let o = layoutlab(&[
        "bench",
        "experiment",
        "metacluster-fsck",
        "--scale",
        "0.005",
        "--json",
        "-",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let runs = v.as_array().unwrap();
    assert_eq!(runs.len(), 1, "{v}");
    let r = &runs[0];
    let stages = check_run(r, "metacluster-fsck");
    assert_eq!(r["scale"].as_f64(), Some(0.005), "{r}");
    for k in ["plan", "image", "capture", "price", "report"] {
        assert!(stages[k].as_f64().unwrap() > 0.0, "{k}: {r}");
    }
    // no budget at a scale other than the default and 1
    assert!(r["budget_seconds"].is_null(), "{r}");
    assert!(r["within_budget"].is_null(), "{r}");
    // the policies' own stages, summed over both policies
    assert!(
        r["policy_stage_seconds"]["traced_check"].as_f64().unwrap() > 0.0,
        "{r}"
    );
}

#[test]
fn bench_experiment_refuses_bad_input_before_any_run() {
    if !is_root() {
        eprintln!("skipped: the checks come after the root check");
        return;
    }
    for (args, says) in [
        (
            &["bench", "experiment", "all", "--scale", "0.5,1"][..],
            "one scale",
        ),
        (
            &["bench", "experiment", "all", "--only", "no-such"][..],
            "valid: cache-policies, ext3-vs-ext4-fsck",
        ),
        (
            &[
                "bench",
                "experiment",
                "metacluster-fsck",
                "--only",
                "fio-randread",
            ][..],
            "--only goes with",
        ),
        (
            &["bench", "experiment", "no-such"][..],
            "unknown experiment",
        ),
        (
            &["bench", "experiment", "metacluster-fsck", "--scale", "2"][..],
            "(0, 1]",
        ),
    ] {
        let o = layoutlab(args);
        assert!(!o.status.success(), "{args:?} succeeded");
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
        // refused before any run: nothing was started
        assert!(
            !stderr(&o).contains("bench: layoutlab reproduce"),
            "{args:?}: {}",
            stderr(&o)
        );
    }
}
