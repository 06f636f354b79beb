//! `layoutlab reproduce metacluster-io` as a user runs it: the JSON contract, errors that list
//! the valid names and make nothing, and what happens without root.

mod common;

use common::*;
use std::path::Path;
use std::process::Command;

fn run(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_layoutlab"))
        .args(args)
        .args(["--out", dir.join("out").to_str().unwrap()])
        .env("TMPDIR", dir)
        .output()
        .unwrap()
}

#[test]
fn unknown_preset_lists_the_valid_ones_and_makes_nothing() {
    let dir = scratch("mio-test", "preset");
    let o = run(
        &dir,
        &["reproduce", "metacluster-io", "--device", "no-such-disk"],
    );
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("no-such-disk") && e.contains("sata-400g-2007"),
        "{e}"
    );
    assert!(entries(&dir).is_empty(), "{:?}", entries(&dir));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn unknown_policy_lists_the_valid_ones_and_makes_nothing() {
    let dir = scratch("mio-test", "policy");
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments/metacluster-io.toml"),
    )
    .unwrap()
    .replace(
        r#"policies = ["ext3-2007", "ext3-metacluster"]"#,
        r#"policies = ["ext3-2007", "ext3-nosuch"]"#,
    );
    let toml = dir.join("bad.toml");
    std::fs::write(&toml, text).unwrap();
    let o = run(&dir, &["reproduce", toml.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("ext3-nosuch") && e.contains("ext3-metacluster") && e.contains("ext4-2009"),
        "{e}"
    );
    assert_eq!(entries(&dir), ["bad.toml"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn without_root_it_says_so_exits_2_and_makes_nothing() {
    let dir = scratch("mio-test", "noroot");
    std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let out = dir.join("out");
    let mut cmd = if is_root() {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(env!("CARGO_BIN_EXE_layoutlab"));
        c
    } else {
        Command::new(env!("CARGO_BIN_EXE_layoutlab"))
    };
    let o = cmd
        .args([
            "reproduce",
            "metacluster-io",
            "--out",
            out.to_str().unwrap(),
        ])
        .env("TMPDIR", &dir)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("root"), "{e}");
    assert!(entries(&dir).is_empty(), "{:?}", entries(&dir));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn json_contract_and_the_findings_the_docs_state_at_a_small_scale() {
    if !is_root() {
        eprintln!("skipped: the experiment needs root (loop devices, mount, tracefs)");
        return;
    }
    let dir = scratch("mio-test", "json");
    let json = dir.join("r.json");
    let o = run(
        &dir,
        &[
            "reproduce",
            "metacluster-io",
            "--scale",
            "0.02",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["experiment"], "metacluster-io");
    assert_eq!(v["scale"], 0.02);
    let runs = v["runs"].as_array().unwrap();
    // Benchmark 1 per policy; 2-4 per policy with and without the read-ahead.
    assert_eq!(runs.len(), 2 + 3 * 2 * 2);
    for r in runs {
        let b = r["benchmark"].as_u64().unwrap();
        assert!((1..=4).contains(&b));
        assert!(["ext3-2007", "ext3-metacluster"].contains(&r["policy"].as_str().unwrap()));
        assert!(r["ind_readahead"].is_boolean());
        assert!(r["seconds"].as_f64().unwrap() > 0.0, "{r}");
        assert!(r["requests"].as_u64().unwrap() > 0, "{r}");
        let (read, written) = (
            r["mb_read"].as_f64().unwrap(),
            r["mb_written"].as_f64().unwrap(),
        );
        if b == 1 {
            // The write stream: the whole file and then some (journal, indirect blocks).
            assert_eq!(read, 0.0);
            assert!(written * 1048576.0 > v["file_bytes"]["sequential"].as_f64().unwrap());
        } else {
            assert!(read > 0.0, "{r}");
        }
        if b == 2 {
            // A sequential read reads the file once.
            let file_mb = v["file_bytes"]["sequential"].as_f64().unwrap() / 1048576.0;
            assert!(read >= file_mb && read < file_mb * 1.05, "{r}");
        }
    }
    // The same offsets for both layouts: benchmark 3 reads as many requests' data on both.
    let mb = |b: u64, p: &str| {
        runs.iter()
            .find(|r| r["benchmark"] == b && r["policy"] == p && r["ind_readahead"] == false)
            .unwrap()["mb_read"]
            .as_f64()
            .unwrap()
    };
    assert_eq!(mb(3, "ext3-2007"), mb(3, "ext3-metacluster"));
    // What docs/experiments/metacluster-io.md says the model finds (there at scale 0.1 and 1).
    let get = |b: u64, p: &str, ra: bool| {
        runs.iter()
            .find(|r| r["benchmark"] == b && r["policy"] == p && r["ind_readahead"] == ra)
            .unwrap()
    };
    let secs = |b: u64, p: &str, ra: bool| get(b, p, ra)["seconds"].as_f64().unwrap();
    // Without the read-ahead, random 512-byte reads cost more on the metacluster layout: each
    // indirect-block miss is followed by a seek back to the data, far longer than on 2007's.
    assert!(secs(3, "ext3-metacluster", false) > secs(3, "ext3-2007", false));
    let back = |p: &str| get(3, p, false)["ind_to_data_mb"].as_f64().unwrap();
    assert!(
        back("ext3-metacluster") > 5.0 * back("ext3-2007"),
        "{} vs {}",
        back("ext3-metacluster"),
        back("ext3-2007")
    );
    // With it, every read benchmark is faster on the metacluster layout than without it, and
    // the option changes the 2007 layout's times by less than 1%.
    for b in [2, 3, 4] {
        assert!(secs(b, "ext3-metacluster", true) < secs(b, "ext3-metacluster", false));
        let (with, without) = (secs(b, "ext3-2007", true), secs(b, "ext3-2007", false));
        assert!(
            (with - without).abs() < 0.01 * without,
            "b{b}: {with} vs {without}"
        );
    }
    // The 2007 layout breaks the write stream at every indirect block.
    assert!(secs(1, "ext3-metacluster", false) < secs(1, "ext3-2007", false));
    assert!(
        get(1, "ext3-metacluster", false)["requests"].as_u64()
            < get(1, "ext3-2007", false)["requests"].as_u64()
    );
    // The 2007 kernel's order across indirect blocks (docs/experiments/metacluster-io.md): on
    // the 2007 layout the sequential read has the data in front of nearly every indirect block
    // put back before it; the metacluster's reads, whose data runs on across the boundary, are
    // left as captured; the write stream is built in that order.
    let moved = |b: u64, p: &str| get(b, p, false)["period_order_moved"].as_u64().unwrap();
    let ind = get(2, "ext3-2007", false)["indirect_reads"]
        .as_u64()
        .unwrap();
    assert!(
        moved(2, "ext3-2007") + 2 >= ind && moved(2, "ext3-2007") <= ind,
        "{} of {ind}",
        moved(2, "ext3-2007")
    );
    assert_eq!(moved(2, "ext3-metacluster"), 0);
    assert!(get(1, "ext3-2007", false)["period_order_moved"].is_null());
    // The captured order is kept beside, and on the preset it costs the 2007 layout's
    // sequential read a revolution or more per indirect block.
    let replay = |rel: &str| {
        let o = Command::new(env!("CARGO_BIN_EXE_layoutlab"))
            .args(["trace", "replay"])
            .arg(dir.join("out/metacluster-io/traces").join(rel))
            .args(["--device", "sata-400g-2007", "--json", "-"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        v["wall_seconds"].as_f64().unwrap()
    };
    let (restored, captured) = (
        replay("b2-ext3-2007.csv"),
        replay("capture-order/b2-ext3-2007.csv"),
    );
    assert!((restored - secs(2, "ext3-2007", false)).abs() < 1e-6);
    let in_json = get(2, "ext3-2007", false)["capture_order_seconds"]
        .as_f64()
        .unwrap();
    assert!((captured - in_json).abs() < 1e-6, "{captured} vs {in_json}");
    let revolution = 60.0 / 7200.0;
    assert!(
        captured - restored > revolution * ind as f64,
        "captured order {captured} s, restored {restored} s, {ind} indirect blocks"
    );
    let svg = std::fs::read_to_string(dir.join("out/metacluster-io/b3-offset.svg")).unwrap();
    for p in ["ext3-2007", "ext3-metacluster"] {
        assert!(svg.contains(&format!(">{p}</text>")), "legend lacks {p}");
    }
    assert!(dir
        .join("out/metacluster-io/traces/b3-ext3-metacluster.csv")
        .exists());
    let mut left = entries(&dir);
    left.sort();
    assert_eq!(left, ["out", "r.json"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Benchmark 4's reads as 2.6.24 issued them (`--set large_read_advice`), from a capture of
/// exactly the pages asked for: without advice, the captured blocks plus one window past each
/// read's end (and the indirect blocks those windows needed), less what a window had already
/// read, to the byte; with `POSIX_FADV_RANDOM`, one 4 KiB request per page. (Each run is its
/// own capture, so each is checked against itself.)
#[test]
fn benchmark_4_as_the_2007_kernel_read_it_with_and_without_advice() {
    if !is_root() {
        eprintln!("skipped: the experiment needs root (loop devices, mount, tracefs)");
        return;
    }
    let dir = scratch("mio-test", "advice");
    let b4 = |advice: &str| -> serde_json::Value {
        let json = dir.join(format!("{advice}.json"));
        let o = run(
            &dir,
            &[
                "reproduce",
                "metacluster-io",
                "--scale",
                "0.02",
                "--set",
                "benchmarks=4",
                "--set",
                &format!("large_read_advice={advice}"),
                "--json",
                json.to_str().unwrap(),
            ],
        );
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap()
    };
    let (today, none, random) = (b4("today"), b4("none"), b4("random"));
    let run_of = |v: &serde_json::Value, p: &str| -> serde_json::Value {
        v["runs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["benchmark"] == 4 && r["policy"] == p && r["ind_readahead"] == false)
            .unwrap()
            .clone()
    };
    let bytes = |r: &serde_json::Value| (r["mb_read"].as_f64().unwrap() * 1048576.0).round() as u64;
    for p in ["ext3-2007", "ext3-metacluster"] {
        let (t, n, r) = (run_of(&today, p), run_of(&none, p), run_of(&random, p));
        assert_eq!(t["large_read_advice"], "today");
        assert!(t["windows"].is_null());
        assert_eq!(n["large_read_advice"], "none");
        let w = &n["windows"];
        let g = |k: &str| w[k].as_u64().unwrap();
        // The experiment's 128 KiB (os_read_ahead_kb) as the window, which the report names.
        assert_eq!(g("window_bytes"), 128 << 10, "{w}");
        // A window past nearly every read (one wholly in memory, or past the file's end, is
        // none), 32 blocks at most.
        assert!(g("past_end_windows") > 0, "{w}");
        assert!(g("past_end_blocks") <= 32 * g("past_end_windows"), "{w}");
        assert_eq!(g("unassigned"), 0, "{w}");
        assert_eq!(
            bytes(&n),
            (g("captured_blocks") + g("past_end_blocks") + g("past_end_mapping_reads")
                - g("blocks_already_read"))
                * 4096,
            "{p}: {w}"
        );
        // Page by page: every data request one 4 KiB block (the trace the last run, the
        // random one, stored; metadata reads stay whole).
        assert_eq!(r["large_read_advice"], "random");
        let csv = dir
            .join("out/metacluster-io/traces")
            .join(format!("b4-{p}.csv"));
        let text = std::fs::read_to_string(&csv).unwrap();
        let mut pages = 0u64;
        for line in text.lines().filter(|l| l.contains(",read,")) {
            let f: Vec<&str> = line.split(',').collect();
            if !f[5].contains("meta") {
                assert_eq!(f[4], "8", "{p}: {line}");
                pages += 1;
            }
        }
        assert!(pages * 4096 > bytes(&r) * 9 / 10, "{p}: {pages} pages");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
