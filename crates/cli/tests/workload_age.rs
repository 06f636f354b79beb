//! `layoutlab workload age`: the JSON statistics of a bench5 stream (volume reached, fullness
//! held, the histogram steered), the same for the same seed, and bad parameters refused naming
//! the parameter.

mod common;

use common::layoutlab;

fn stats(args: &[&str]) -> serde_json::Value {
    let out = layoutlab(args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON on stdout")
}

#[test]
fn bench5_age_json_says_what_the_stream_did() {
    let args = [
        "workload",
        "age",
        "bench5",
        "--age",
        "3",
        "--seed",
        "9",
        "--fullness",
        "0.9",
        "--json",
        "-",
    ];
    let v = stats(&args);
    let f = |k: &str| v[k].as_f64().unwrap_or_else(|| panic!("{k} in {v}"));
    assert!(f("bytes_written") >= 3.0 * f("capacity_bytes"));
    assert_eq!(f("target_fullness"), 0.9);
    assert!(f("final_fullness") <= 0.9 && f("highest_fullness_after_settling") <= 0.9);
    assert!(f("size_distance") < 0.02, "{v}");
    let kinds: f64 = [
        "creates",
        "extends",
        "truncates",
        "unlinks",
        "renames",
        "mkdirs",
        "rmdirs",
    ]
    .iter()
    .map(|k| f(k))
    .sum();
    assert_eq!(kinds, f("operations"));
    assert_eq!(v["workload"], "bench5");
    // the same seed, the same stream (the timing aside)
    let mut again = stats(&args);
    let mut v = v;
    v["seconds"] = 0.into();
    again["seconds"] = 0.into();
    assert_eq!(v, again);
}

#[test]
fn bad_aging_parameters_name_the_parameter() {
    for (args, want) in [
        (vec!["--age", "-1"], "age"),
        (vec!["--age", "1", "--fullness", "1.5"], "fullness"),
        (vec!["--age", "1", "--fullness", "0.995"], "above what fits"),
        (vec![], "--age"),
    ] {
        let mut all = vec!["workload", "age", "bench5", "--scale", "0.01"];
        all.extend(args.iter());
        let out = layoutlab(&all);
        assert!(!out.status.success(), "{all:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{all:?}: {err}");
    }
}

#[test]
fn the_example_spec_is_read_and_the_flags_override_it() {
    let spec = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/examples/aging.toml"
    );
    let v = stats(&[
        "workload", "age", "bench5", "--scale", "0.01", "--spec", spec, "--age", "1", "--json", "-",
    ]);
    assert_eq!(v["spec"]["age"], 1.0);
    assert_eq!(v["spec"]["seed"], 7);
    assert_eq!(v["target_fullness"], 0.8);
    assert_eq!(v["spec"]["sizes"].as_array().unwrap().len(), 3);
    assert!(v["bytes_written"].as_f64().unwrap() >= v["capacity_bytes"].as_f64().unwrap());
    // bench5's 5 MB files give way to the example's small ones
    assert!(
        v["size_distance"].as_f64().unwrap() < v["size_distance_initial"].as_f64().unwrap(),
        "{v}"
    );
    let out = layoutlab(&["workload", "age", "bench5", "--spec", "/no/such.toml"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("/no/such.toml"));
}

#[test]
fn write_ops_saves_the_aged_population_age_kernel_reads() {
    let dir = std::env::temp_dir().join(format!("layoutlab-age-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("aged.json");
    let v = stats(&[
        "workload",
        "age",
        "bench5",
        "--scale",
        "0.01",
        "--age",
        "2",
        "--seed",
        "5",
        "--write-ops",
        path.to_str().unwrap(),
        "--json",
        "-",
    ]);
    let text = std::fs::read_to_string(&path).unwrap();
    let saved: layoutlab_workload::Population = serde_json::from_str(&text).unwrap();
    saved.check_tree().unwrap();
    // the same population the library makes
    let pop = layoutlab_workload::population_by_name("bench5")
        .unwrap()
        .scale(0.01)
        .unwrap();
    let aged = layoutlab_workload::aging::age(
        &pop,
        &layoutlab_workload::aging::AgingSpec::new(2.0, 5),
        layoutlab_layout::mkfs::metadata_margin_bytes(pop.fs_bytes),
    )
    .unwrap();
    assert_eq!(saved, aged);
    assert_eq!(
        saved.ops.len() as u64,
        v["initial_operations"].as_u64().unwrap() + v["operations"].as_u64().unwrap()
    );
    // a spec that cannot be met leaves no file behind
    let bad = dir.join("bad.json");
    let out = layoutlab(&[
        "workload",
        "age",
        "bench5",
        "--scale",
        "0.01",
        "--age",
        "1",
        "--fullness",
        "0.01",
        "--write-ops",
        bad.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert!(!bad.exists());
    std::fs::remove_dir_all(&dir).unwrap();
}
