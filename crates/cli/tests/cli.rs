//! The `layoutlab` command as a user runs it: contracts of --json, errors that list valid
//! names and change nothing, and no device, mount or image left behind.

mod common;

use common::{entries, is_root, layoutlab, loops_under, stderr};

use std::path::{Path, PathBuf};
use std::process::Command;

/// A fresh empty directory for one test: `layoutlab-cli-test-NAME-PID` in the temp directory.
fn scratch(name: &str) -> PathBuf {
    common::scratch("cli-test", name)
}

#[test]
fn unknown_names_are_errors_that_list_the_valid_ones() {
    let o = layoutlab(&["reproduce", "no-such-experiment"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("metacluster-fsck"), "{}", stderr(&o));

    let o = layoutlab(&["reproduce", "metacluster-fsck", "--device", "no-such-disk"]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("unknown device preset") && e.contains("sata-400g-2007"),
        "{e}"
    );

    let o = layoutlab(&["plan", "--policy", "ext5-magic", "--scale", "0.001"]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("ext3-2007") && e.contains("ext3-metacluster"),
        "{e}"
    );

    let o = layoutlab(&["plan", "--workload", "no-such-workload"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("bench5"), "{}", stderr(&o));
}

#[test]
fn bad_experiment_input_changes_nothing() {
    let dir = scratch("bad-input");
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    for args in [
        vec!["--device", "no-such-disk"],
        vec!["--scale", "0"],
        vec!["--scale", "2"],
    ] {
        let mut a = vec![
            "reproduce",
            "metacluster-fsck",
            "--workdir",
            work.to_str().unwrap(),
        ];
        a.extend(args.iter());
        let o = layoutlab(&a);
        assert_eq!(o.status.code(), Some(2), "{a:?}: {}", stderr(&o));
        assert!(entries(&work).is_empty(), "{a:?} left {:?}", entries(&work));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn too_little_disk_space_is_an_error_before_anything_is_written() {
    if !is_root() {
        eprintln!("skipped: mounting a small tmpfs needs root");
        return;
    }
    let dir = scratch("nospace");
    let st = Command::new("mount")
        .args([
            "-t",
            "tmpfs",
            "-o",
            "size=256k",
            "layoutlab-test",
            dir.to_str().unwrap(),
        ])
        .status()
        .unwrap();
    assert!(st.success());
    let o = layoutlab(&[
        "reproduce",
        "metacluster-fsck",
        "--scale",
        "0.01",
        "--workdir",
        dir.to_str().unwrap(),
        "--out",
        dir.to_str().unwrap(),
    ]);
    let left = entries(&dir);
    let loops = loops_under(&dir);
    Command::new("umount").arg(&dir).status().unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("space") || e.contains("free"), "{e}");
    assert!(left.is_empty(), "left behind: {left:?}");
    assert!(loops.is_empty(), "{loops:?}");
}

#[test]
fn metacluster_fsck_end_to_end_json_contract() {
    if !is_root() {
        eprintln!("skipped: the experiment needs root (loop devices, tracefs)");
        return;
    }
    let dir = scratch("e2e");
    let json = dir.join("r.json");
    let o = layoutlab(&[
        "reproduce",
        "metacluster-fsck",
        "--scale",
        "0.005",
        "--workdir",
        dir.to_str().unwrap(),
        "--out",
        dir.join("out").to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("published"), "{stdout}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["experiment"], "metacluster-fsck");
    assert_eq!(v["scale"], 0.005);
    assert_eq!(v["device"], "sata-400g-2007");
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0]["policy"], "ext3-2007");
    assert_eq!(runs[1]["policy"], "ext3-metacluster");
    for r in runs {
        assert_eq!(r["fsck_clean"], true);
        let ind = r["indirect_blocks"].as_u64().unwrap();
        assert!(ind > 0);
        // e2fsck pass 1 must read every indirect block the plan put on disk.
        assert_eq!(r["indirect_blocks_read"].as_u64().unwrap(), ind, "{r}");
        let passes = r["passes"].as_array().unwrap();
        let sum: f64 = passes.iter().map(|p| p["seconds"].as_f64().unwrap()).sum();
        let total = r["total_seconds"].as_f64().unwrap();
        assert!(
            (sum - total).abs() < 1e-6 * total.max(1.0),
            "passes {sum} vs total {total}"
        );
        assert!(passes
            .iter()
            .any(|p| p["pass"] == 1 && p["mb_read"].as_f64().unwrap() > 0.0));
    }
    // At this scale the model predicted 4.7 s → 1.34 s, a 71.7% reduction, on 2026-11-23 (two
    // runs: 0.7166, 0.7176). On 2026-11-26 it predicts 4.5 s → 1.04 s, 0.770-0.773 (8 runs: this
    // code and 6816778's alike, quiet and with both CPUs busy; the ext3-2007 stream is the stored
    // trace's 1,114 requests either way), so the level moved with something outside the code we
    // could not find (docs/testing.md). The band covers both levels, 0.70-0.80, and still breaks
    // on a real regression: the drive's read-ahead off gives ~49% at scale 0.05, no
    // almost-read-hits ~64%, a metacluster that does not cluster ~0%.
    let red = v["reduction"].as_f64().unwrap();
    assert!(
        (0.70..=0.80).contains(&red),
        "reduction {red:.4} outside 0.70-0.80: {v}"
    );
    // What pass 1 read, by class of block (docs/experiments/metacluster-fsck.md): both
    // layouts read the same inode tables at the same drive cost; vanilla's indirect blocks
    // cost more than ten times the metacluster's.
    let class = |policy: &str, class: &str| -> (u64, f64) {
        let total = v["pass1_by_class"][policy]["total"].as_array().unwrap();
        total
            .iter()
            .find(|e| e[0] == class)
            .map(|e| {
                (
                    e[1]["requests"].as_u64().unwrap(),
                    e[1]["device_seconds"].as_f64().unwrap(),
                )
            })
            .unwrap_or((0, 0.0))
    };
    let (it_v, it_v_s) = class("ext3-2007", "inode_table");
    let (it_m, it_m_s) = class("ext3-metacluster", "inode_table");
    assert!(
        it_v > 0 && (it_v as f64 / it_m as f64 - 1.0).abs() < 0.05,
        "inode-table requests {it_v} vs {it_m}"
    );
    assert!(
        (it_v_s / it_m_s - 1.0).abs() < 0.05,
        "inode-table drive seconds {it_v_s} vs {it_m_s}"
    );
    let (_, ind_v_s) = class("ext3-2007", "indirect");
    let (_, ind_m_s) = class("ext3-metacluster", "indirect");
    assert!(
        ind_v_s > 10.0 * ind_m_s && ind_m_s > 0.0,
        "indirect drive seconds {ind_v_s} vs {ind_m_s}"
    );
    // Published numbers are for scale 1: not beside a run at another scale.
    assert!(!stdout.contains("738.1"), "{stdout}");
    assert!(stdout.contains("not shown beside this run"), "{stdout}");
    assert!(v["published"]["total_seconds"]["ext3-2007"]
        .as_f64()
        .is_some());
    // Images are removed without --keep; the report is there.
    let left: Vec<String> = entries(&dir)
        .into_iter()
        .filter(|n| n.ends_with(".img"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    assert!(dir.join("out/metacluster-fsck/fsck-offset.svg").exists());
    assert!(loops_under(&dir).is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--sensitivity`: one row per variant of the experiment file plus "as shipped", whose totals
/// are the run's own; the drive's read-ahead, the value it rests on most, moves the result.
/// A key the preset does not have is an error before any image is made.
#[test]
fn metacluster_fsck_sensitivity_rows_and_refusals() {
    if !is_root() {
        eprintln!("skipped: the experiment needs root (loop devices, tracefs)");
        return;
    }
    let dir = scratch("sensitivity");
    let o = layoutlab(&[
        "reproduce",
        "metacluster-fsck",
        "--scale",
        "0.005",
        "--sensitivity",
        "--workdir",
        dir.to_str().unwrap(),
        "--out",
        dir.join("out").to_str().unwrap(),
        "--json",
        "-",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = v["sensitivity"].as_array().unwrap();
    let toml_text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments/metacluster-fsck.toml"),
    )
    .unwrap();
    let exp: toml::Table = toml_text.parse().unwrap();
    // One row per variant: every table in each `[[sensitivity]]` entry's `set` list.
    let variants: usize = exp["sensitivity"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["set"].as_array().unwrap().len())
        .sum();
    assert!(variants >= 10, "{variants}");
    // ... then one row per alternative drive (docs/fidelity.md, the device factor), then the
    // same traces with no think time and at each period CPU's F (the CPU factor; since
    // 2026-11-29 metacluster-fsck names one, netburst-presler-2007).
    let period_cpus = exp["period_cpus"].as_array().unwrap().len();
    assert_eq!(period_cpus, 1);
    assert_eq!(rows.len(), 1 + variants + 1 + 1 + period_cpus);
    assert_eq!(rows[0]["change"], "as shipped");
    let alt = &rows[1 + variants];
    assert_eq!(alt["change"], "another drive: sata-400g-2007-alt-samsung");
    assert!(alt["why"].as_str().unwrap().contains("SpinPoint"), "{alt}");
    // Another drive is another model: its totals differ from the shipped preset's.
    for policy in ["ext3-2007", "ext3-metacluster"] {
        let (a, s) = (
            alt["total_seconds"][policy].as_f64().unwrap(),
            rows[0]["total_seconds"][policy].as_f64().unwrap(),
        );
        assert!(
            a > 0.0 && (a / s - 1.0).abs() > 1e-4,
            "{policy}: {a} vs {s}"
        );
    }
    let no_think = &rows[2 + variants];
    assert_eq!(no_think["change"], "CPU: no think time (--cpu-scale 0)");
    // Then the period CPU's row, named with its factor.
    let period = &rows[3 + variants];
    assert!(
        period["change"]
            .as_str()
            .unwrap()
            .starts_with("CPU: netburst-presler-2007 (--cpu-scale netburst-presler-2007, F = "),
        "{period}"
    );
    for (i, r) in v["runs"].as_array().unwrap().iter().enumerate() {
        let policy = r["policy"].as_str().unwrap();
        // The same stream without e2fsck's think time is another replay (the sensitivity
        // unit tests hold it exact); here, that the run's think time reached it.
        let without = no_think["total_seconds"][policy].as_f64().unwrap();
        let with = rows[0]["total_seconds"][policy].as_f64().unwrap();
        assert!(
            without > 0.0 && (without - with).abs() > 1e-6,
            "{policy}: {without} {with}"
        );
        let shipped = rows[0]["total_seconds"][policy].as_f64().unwrap();
        let run = r["total_seconds"].as_f64().unwrap();
        assert!(
            (shipped - run).abs() < 1e-9,
            "row 0, {policy}: {shipped} vs {run} ({i})"
        );
    }
    let no_read_ahead = rows
        .iter()
        .find(|r| {
            r["change"]
                .as_str()
                .unwrap()
                .starts_with("cache.read_ahead_max_sectors = 0 ")
        })
        .unwrap();
    let meta = |r: &serde_json::Value| r["total_seconds"]["ext3-metacluster"].as_f64().unwrap();
    assert!(
        meta(no_read_ahead) > 1.5 * meta(&rows[0]),
        "{no_read_ahead}"
    );
    assert!(dir.join("out/metacluster-fsck/sensitivity.md").exists());

    // A bad experiment file is refused before any image or loop device, naming what is wrong.
    let bad = dir.join("bad.toml");
    let work = dir.join("bad-work");
    let refused = |from: &str, to: &str, named: &str| {
        std::fs::write(&bad, toml_text.replace(from, to)).unwrap();
        let o = layoutlab(&[
            "reproduce",
            bad.to_str().unwrap(),
            "--scale",
            "0.005",
            "--sensitivity",
            "--workdir",
            work.to_str().unwrap(),
            "--out",
            dir.join("out").to_str().unwrap(),
        ]);
        assert!(!o.status.success());
        assert!(stderr(&o).contains(named), "{}", stderr(&o));
        assert!(!work.exists() || entries(&work).is_empty());
    };
    // A typo in a [[sensitivity]] key.
    refused(
        "\"seek.full_stroke_ms\" = 14.0",
        "\"seek.full_strok_ms\" = 14.0",
        "seek.full_strok_ms",
    );
    // An alternative preset that does not exist.
    refused(
        "sata-400g-2007-alt-samsung",
        "sata-400g-2007-alt-nosuch",
        "sata-400g-2007-alt-nosuch",
    );
    // fio experiments have no traces to vary.
    let o = layoutlab(&["reproduce", "fio-randread", "--sensitivity"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("fsck experiments"), "{}", stderr(&o));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn sigint_and_sigterm_leave_no_device_or_image() {
    if !is_root() {
        eprintln!("skipped: the experiment needs root");
        return;
    }
    for (sig, name) in [(2, "INT"), (15, "TERM")] {
        let dir = scratch(&format!("signal-{name}"));
        let mut child = Command::new(env!("CARGO_BIN_EXE_layoutlab"))
            .args([
                "reproduce",
                "metacluster-fsck",
                "--scale",
                "0.02",
                "--workdir",
                dir.to_str().unwrap(),
                "--out",
                dir.join("out").to_str().unwrap(),
            ])
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Wait until the traced e2fsck is under way (a loop device exists), then interrupt.
        let t0 = std::time::Instant::now();
        while loops_under(&dir).is_empty() && t0.elapsed().as_secs() < 120 {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert!(
            !loops_under(&dir).is_empty(),
            "the run never attached a loop device"
        );
        Command::new("kill")
            .args([&format!("-{sig}"), &child.id().to_string()])
            .status()
            .unwrap();
        let status = child.wait().unwrap();
        // The signal's cleanup decides the exit, even if the main thread fails first because
        // its loop device was torn down under it (a race that once left an image behind).
        assert_eq!(status.code(), Some(128 + sig), "SIG{name}");
        let imgs: Vec<String> = entries(&dir)
            .into_iter()
            .filter(|n| n.ends_with(".img"))
            .collect();
        assert!(loops_under(&dir).is_empty(), "SIG{name} left a loop device");
        // A tracefs the rig mounted for itself (when none was mounted) is named after its pid.
        let mounts = std::fs::read_to_string("/proc/mounts").unwrap();
        let own = format!("layoutlab-mnt-{}-", child.id());
        assert!(
            !mounts.contains(&own),
            "SIG{name} left a tracefs mount: {mounts}"
        );
        // Nor a tracefs instance (one made just as the signal came once outlived the run).
        let instance = format!("layoutlab-{}-", child.id());
        for root in ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"] {
            let left: Vec<String> = entries(&Path::new(root).join("instances"))
                .into_iter()
                .filter(|n| n.starts_with(&instance))
                .collect();
            assert!(left.is_empty(), "SIG{name} left tracefs instances {left:?}");
        }
        assert!(imgs.is_empty(), "SIG{name} left {imgs:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// The default work directory is a tmpfs the run mounts for itself: a signal must unmount it
/// with the images in it, and detach the loop devices over them.
#[test]
fn sigterm_leaves_no_in_memory_work_directory() {
    if !is_root() {
        eprintln!("skipped: the experiment needs root");
        return;
    }
    let out = scratch("signal-mem");
    let mut child = Command::new(env!("CARGO_BIN_EXE_layoutlab"))
        .args(["reproduce", "metacluster-fsck", "--scale", "0.02"])
        .args(["--out", out.to_str().unwrap()])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let own = std::env::temp_dir().join(format!("layoutlab-mnt-{}-", child.id()));
    let t0 = std::time::Instant::now();
    while loops_under(&own).is_empty() && t0.elapsed().as_secs() < 120 {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(
        !loops_under(&own).is_empty(),
        "no loop device over the tmpfs"
    );
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap();
    assert!(mounts.contains(own.to_str().unwrap()), "no tmpfs: {mounts}");
    Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(143));
    assert!(loops_under(&own).is_empty(), "left a loop device");
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap();
    assert!(
        !mounts.contains(own.to_str().unwrap()),
        "left a mount: {mounts}"
    );
    std::fs::remove_dir_all(&out).unwrap();
}

/// SIGKILL runs no cleanup: what is left must be found (and only that) and removed by
/// `layoutlab clean`, and e2fsck must not outlive its parent holding the loop device.
#[test]
fn sigkill_leftovers_are_found_and_cleaned() {
    if !is_root() {
        eprintln!("skipped: the experiment needs root");
        return;
    }
    let dir = scratch("sigkill");
    // A live process's item of the same form, which clean must leave alone.
    let live = dir.join(format!("layoutlab-trace-{}-0.txt", std::process::id()));
    std::fs::write(&live, b"mine").unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_layoutlab"))
        .args([
            "reproduce",
            "metacluster-fsck",
            "--scale",
            "0.02",
            "--out",
            dir.join("out").to_str().unwrap(),
        ])
        .env("TMPDIR", &dir)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let t0 = std::time::Instant::now();
    while loops_under(&dir).is_empty() && t0.elapsed().as_secs() < 120 {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(
        !loops_under(&dir).is_empty(),
        "the run never attached a loop device"
    );
    // Wait for the traced e2fsck's tracefs instance (in the system's tracefs, or in the one
    // the rig mounts under TMPDIR when none is mounted).
    let instance_up = || {
        let mut roots = vec![
            PathBuf::from("/sys/kernel/tracing"),
            PathBuf::from("/sys/kernel/debug/tracing"),
        ];
        roots.extend(
            entries(&dir)
                .into_iter()
                .filter(|n| n.starts_with(&format!("layoutlab-mnt-{pid}-")))
                .map(|n| dir.join(n)),
        );
        roots.iter().any(|r| {
            entries(&r.join("instances"))
                .iter()
                .any(|n| n.starts_with(&format!("layoutlab-{pid}-")))
        })
    };
    let t0 = std::time::Instant::now();
    while !instance_up() && t0.elapsed().as_secs() < 60 {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(instance_up(), "the run never started its tracefs capture");
    child.kill().unwrap();
    child.wait().unwrap();
    // e2fsck died with its parent, so the loop device (autoclear) goes away by itself.
    let t0 = std::time::Instant::now();
    while !loops_under(&dir).is_empty() && t0.elapsed().as_secs() < 10 {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(
        loops_under(&dir).is_empty(),
        "a loop device outlived the SIGKILL"
    );
    let clean = |dry: bool| {
        let mut args = vec!["clean", "--temp-dir", dir.to_str().unwrap(), "--json", "-"];
        if dry {
            args.push("--dry-run");
        }
        let o = layoutlab(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()
    };
    let dry = clean(true);
    let found = dry["found"].as_array().unwrap();
    let own = format!("-{pid}-");
    // Leftovers of other dead processes may show too (tracefs instances are global), never
    // the live test process's own file.
    assert!(
        found.iter().all(|i| i["pid"] != std::process::id()),
        "a live process's item: {dry}"
    );
    assert!(
        found
            .iter()
            .any(|i| i["kind"] == "temp_path" && i["path"].as_str().unwrap().contains(&own)),
        "its work directory: {dry}"
    );
    assert!(
        found
            .iter()
            .any(|i| i["kind"] == "tracefs_instance" && i["pid"] == pid),
        "its tracefs instance: {dry}"
    );
    assert_eq!(dry["removed"], 0);
    // A dry run changed nothing.
    assert!(entries(&dir).iter().any(|n| n.contains(&own)));
    let done = clean(false);
    assert_eq!(done["failed"], 0, "{done}");
    // Every leftover of the killed run that the dry run listed was removed. (tracefs
    // instances are global: other dead processes' leftovers may appear or go between two
    // scans — a concurrent test's child, another checkout's run — so only this run's items are
    // counted. Counting all of them made this test flaky.)
    let ours = |v: &serde_json::Value| -> Vec<String> {
        let mut p: Vec<String> = v["found"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|i| i["pid"] == pid)
            .map(|i| i["path"].as_str().unwrap().to_string())
            .collect();
        p.sort();
        p
    };
    assert_eq!(ours(&done), ours(&dry), "{done}");
    // Nothing of it is left, here or in tracefs (looked at through a fresh scan).
    let rescan = clean(true);
    assert!(ours(&rescan).is_empty(), "{rescan}");
    assert!(!entries(&dir).iter().any(|n| n.contains(&own)));
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap();
    assert!(!mounts.contains(dir.to_str().unwrap()), "{mounts}");
    assert!(live.exists(), "clean removed a live process's file");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn plan_json_is_a_whole_plan() {
    let dir = scratch("plan");
    let p = dir.join("plan.json");
    let o = layoutlab(&[
        "plan",
        "--policy",
        "ext3-metacluster",
        "--scale",
        "0.002",
        "--json",
        p.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    assert_eq!(v["policy"], "ext3-metacluster");
    // bench5: 350 files in the root directory, plus the root itself.
    let files = v["inodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["kind"] == "File")
        .count();
    assert_eq!(files, 350);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `plan --policy ext4-kernel` lays out on today's mkfs profile unless told otherwise (the
/// whole ubuntu-32g tree, as issue 11's image needs), and refuses a bad parameter or an ext3
/// profile by name.
#[test]
fn plan_ext4_kernel_defaults_to_todays_profile() {
    let o = layoutlab(&[
        "plan",
        "--policy",
        "ext4-kernel",
        "--workload",
        "ubuntu-32g",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("ext4-kernel on ubuntu-32g"), "{out}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("inodes planned") && l.ends_with(" 312204")),
        "{out}"
    );

    let o = layoutlab(&[
        "plan",
        "--policy",
        "ext4-kernel",
        "--param",
        "writeback_mib=lots",
        "--scale",
        "0.002",
    ]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("writeback_mib"), "{}", stderr(&o));

    let o = layoutlab(&[
        "plan",
        "--policy",
        "ext4-kernel",
        "--mkfs-profile",
        "ext3-2007",
        "--scale",
        "0.002",
    ]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("--mkfs-profile"), "{}", stderr(&o));
}

/// The shared measured-drive data, beside the checkout (../shared). Missing, it is a failure
/// that says what to provide, never a silent pass.
fn shared_disksim() -> PathBuf {
    let d = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/disksim");
    assert!(
        d.is_dir(),
        "the shared measured-drive data is missing: expected {} (the `shared` directory beside the checkout)",
        d.display()
    );
    d
}

#[test]
fn device_validate_json_contract_and_cdf_svg() {
    let d = shared_disksim();
    let dir = scratch("validate");
    let svg = dir.join("cdf.svg");
    let o = layoutlab(&[
        "device",
        "validate",
        "--parv",
        d.join("hp_c2247a.parv").to_str().unwrap(),
        "--trace",
        d.join("hp_c2247a.trace").to_str().unwrap(),
        "--svg",
        svg.to_str().unwrap(),
        "--json",
        "-",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    // With --json -, stdout is the JSON alone (the table goes to stderr).
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["requests"], 9999);
    for key in [
        "demerit_ms",
        "demerit_pct",
        "mean_measured_ms",
        "mean_model_ms",
    ] {
        assert!(v[key].as_f64().is_some(), "{key} missing: {v}");
    }
    // The model must be in the measured drive's neighbourhood (DiskSim's own demerit: 0.09 ms).
    assert!(v["demerit_ms"].as_f64().unwrap() < 1.0, "{v}");
    let s = std::fs::read_to_string(&svg).unwrap();
    assert!(s.starts_with("<svg") && s.contains("measured") && s.contains("layoutlab model"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn device_import_writes_a_preset_that_loads_and_validates_the_same() {
    let d = shared_disksim();
    let dir = scratch("import");
    let preset = dir.join("barracuda.toml");
    let o = layoutlab(&[
        "device",
        "import",
        d.join("barracuda.parv").to_str().unwrap(),
        "-o",
        preset.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&preset).unwrap();
    assert!(
        text.contains("kind = \"hdd\"")
            && text.contains("rpm = { value = 7200.0, source = ")
            && !text.contains("_source ="),
        "{text}"
    );
    // The imported preset runs a job like any preset.
    let o = layoutlab(&[
        "device",
        "fio",
        "--device",
        preset.to_str().unwrap(),
        "--rw",
        "randread",
        "--bs",
        "4k",
        "--span",
        "1g",
        "--number",
        "500",
        "--json",
        "-",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    for key in ["iops", "mean_ms", "min_ms", "max_ms", "stdev_ms"] {
        assert!(v[key].as_f64().is_some(), "{key} missing: {v}");
    }
    assert_eq!(v["requests"], 500);
    // A 7200 rpm drive of 1997: between 50 and 150 random 4k reads per second.
    let iops = v["iops"].as_f64().unwrap();
    assert!((50.0..150.0).contains(&iops), "{iops}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn trace_convert_round_trips_through_every_writable_format() {
    let dir = scratch("convert");
    let csv = dir.join("a.csv");
    std::fs::write(
        &csv,
        "issue_ns,complete_ns,op,sector,sectors,flags,tag\n\
         0,8000000,read,2048,8,sync,pass1\n\
         9000000,17000000,read,4096,256,sync,pass1\n\
         20000000,30000000,write,81920,16,,pass2\n",
    )
    .unwrap();
    for (ext, fmt) in [
        ("iolog", "fio-v3"),
        ("blkparse", "blkparse"),
        ("disksim", "disksim"),
    ] {
        let out = dir.join(format!("b.{ext}"));
        let o = layoutlab(&[
            "trace",
            "convert",
            csv.to_str().unwrap(),
            out.to_str().unwrap(),
            "--to",
            fmt,
        ]);
        assert!(o.status.success(), "{fmt}: {}", stderr(&o));
        let back = dir.join(format!("c-{ext}.csv"));
        let o = layoutlab(&[
            "trace",
            "convert",
            out.to_str().unwrap(),
            back.to_str().unwrap(),
            "--from",
            fmt,
            "--to",
            "csv",
        ]);
        assert!(o.status.success(), "{fmt} back: {}", stderr(&o));
        let rows: Vec<Vec<String>> = std::fs::read_to_string(&back)
            .unwrap()
            .lines()
            .skip(1)
            .map(|l| l.split(',').map(str::to_string).collect())
            .collect();
        // Every format keeps op, sector and length, in order.
        let kept: Vec<(String, String, String)> = rows
            .iter()
            .map(|r| (r[2].clone(), r[3].clone(), r[4].clone()))
            .collect();
        assert_eq!(
            kept,
            vec![
                ("read".into(), "2048".into(), "8".into()),
                ("read".into(), "4096".into(), "256".into()),
                ("write".into(), "81920".into(), "16".into())
            ],
            "{fmt}"
        );
    }
    // Malformed input: the error names the file and the line.
    let bad = dir.join("bad.csv");
    std::fs::write(
        &bad,
        "issue_ns,complete_ns,op,sector,sectors,flags,tag\n0,1,read,x,8,,\n",
    )
    .unwrap();
    let o = layoutlab(&["trace", "stats", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("bad.csv") && e.contains('2'), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `device fio --precondition` puts an SSD in the state a measurement needs: a fresh drive
/// takes random writes at link speed, the same drive in steady state at the rate its garbage
/// collection allows; the JSON keys are the issue's. A hard disk has no such state.
#[test]
fn device_fio_ssd_state_and_its_refusal_on_a_hard_disk() {
    let fio = |state: &str| {
        let o = layoutlab(&[
            "device",
            "fio",
            "--device",
            "ssd-sata-2010",
            "--rw",
            "randwrite",
            "--bs",
            "4k",
            "--iodepth",
            "32",
            "--span",
            "8g",
            "--number",
            "20000",
            "--precondition",
            state,
            "--json",
            "-",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        for key in ["iops", "mean_ms", "min_ms", "max_ms", "stdev_ms"] {
            assert!(v[key].as_f64().is_some(), "{key}: {v}");
        }
        v["iops"].as_f64().unwrap()
    };
    let (fresh, steady) = (fio("sequential"), fio("random"));
    assert!(
        fresh > 3.0 * steady,
        "fresh {fresh} IOPS, steady {steady} IOPS"
    );
    let o = layoutlab(&[
        "device",
        "fio",
        "--device",
        "sata-400g-2007",
        "--span",
        "1g",
        "--number",
        "10",
        "--precondition",
        "random",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("applies to SSDs"), "{}", stderr(&o));
    let o = layoutlab(&[
        "device",
        "fio",
        "--device",
        "ssd-sata-2010",
        "--span",
        "1g",
        "--number",
        "10",
        "--precondition",
        "warm",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("valid: sequential"), "{}", stderr(&o));
}

#[test]
fn trace_replay_and_bench_report_json() {
    let dir = scratch("replay");
    let csv = dir.join("a.csv");
    // Two synchronous reads far apart on the disk, 1 ms of CPU between them.
    std::fs::write(
        &csv,
        "issue_ns,complete_ns,op,sector,sectors,flags,tag\n\
         0,100000,read,0,8,sync,pass1\n\
         1100000,1200000,read,700000000,8,sync,pass2\n",
    )
    .unwrap();
    let o = layoutlab(&[
        "trace",
        "replay",
        csv.to_str().unwrap(),
        "--device",
        "sata-400g-2007",
        "--json",
        "-",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let wall = v["wall_seconds"].as_f64().unwrap();
    // The think time (1 ms) survives, and a long seek on a 7200 rpm disk costs milliseconds.
    assert!(wall > 0.001 + 0.004 && wall < 0.1, "{wall}");
    assert!(
        (v["cpu_not_overlapped_seconds"].as_f64().unwrap() - 0.001).abs() < 1e-6,
        "{v}"
    );

    let o = layoutlab(&["bench", "replay", "--requests", "20000", "--json", "-"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["requests"], 20000);
    assert!(v["requests_per_second"].as_f64().unwrap() > 0.0);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `layoutlab trace replay INPUT --device sata-400g-2007 EXTRA...`.
fn replay_on_400g(input: &Path, extra: &[&str]) -> std::process::Output {
    let mut a = vec![
        "trace",
        "replay",
        input.to_str().unwrap(),
        "--device",
        "sata-400g-2007",
    ];
    a.extend(extra);
    layoutlab(&a)
}

/// The `wall_seconds` of a `trace replay --json` file.
fn wall_seconds(json: &Path) -> f64 {
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    v["wall_seconds"].as_f64().unwrap()
}

/// `trace replay --vary`: a what-if of the preset. Three 512 KiB writes, each one 4 KiB block
/// past the last, issued back to back, then a cache flush: with the preset's one write segment
/// each skip costs up to a revolution (8.3 ms at 7,200 rpm), with write cache stacking little.
/// A path that is not in the preset, a value the model refuses and a malformed argument are
/// errors (exit 2) that name what was wrong and write no JSON.
#[test]
fn trace_replay_varies_a_preset_value() {
    let dir = scratch("vary");
    let csv = dir.join("w.csv");
    std::fs::write(
        &csv,
        "issue_ns,complete_ns,op,sector,sectors,flags,tag\n\
         0,1,write,0,1024,,b1\n\
         1,2,write,1032,1024,,b1\n\
         2,3,write,2064,1024,,b1\n\
         3,4,flush,0,0,,b1\n",
    )
    .unwrap();
    let replay = |extra: &[&str], json: &Path| {
        replay_on_400g(&csv, &[&["--json", json.to_str().unwrap()], extra].concat())
    };
    let (plain, stacked) = (dir.join("plain.json"), dir.join("stacked.json"));
    let o = replay(&[], &plain);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = replay(&["--vary", "cache.write_segments=16"], &stacked);
    assert!(o.status.success(), "{}", stderr(&o));
    let saved = wall_seconds(&plain) - wall_seconds(&stacked);
    // Then a flush: the time the media took. Two skips, each up to a revolution (8.33 ms)
    // with one segment: 16.67 ms here.
    assert!(saved > 0.0125 && saved < 0.0168, "saved {saved} s");
    for (arg, says) in [
        (
            "cache.write_segment=16",
            "no parameter 'cache.write_segment'",
        ),
        ("cache.write_segments=17", "at most the 16 segments"),
        ("cache.write_segments", "expected KEY=VALUE"),
        ("cache.write_segments=sixteen", "not a TOML value"),
    ] {
        let out = dir.join("bad.json");
        let o = replay(&["--vary", arg], &out);
        assert_eq!(o.status.code(), Some(2), "{arg}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{arg}: {}", stderr(&o));
        assert!(!out.exists(), "{arg}: a JSON was written");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `trace replay --split-reads`: a 512 KiB read, a 4 KiB one far away and a write. Cut into
/// 4 KiB pages (`--split-reads 8`) the first becomes 128 requests served back to back from the
/// drive's read-ahead, each paying its command overhead (0.22 ms on sata-400g-2007, plus the
/// bus): about 29 ms where the media took 8 ms to read the 512 KiB, far less than 127 more
/// positionings; the small read and the write stay whole. 0 is refused (exit 2) and writes no
/// JSON.
#[test]
fn trace_replay_splits_reads_into_pages() {
    let dir = scratch("split");
    let csv = dir.join("r.csv");
    std::fs::write(
        &csv,
        "issue_ns,complete_ns,op,sector,sectors,flags,tag
         0,1,read,100000,1024,,b4
         2,3,read,100000000,8,,b4
         4,5,write,100002000,64,,b4
",
    )
    .unwrap();
    let replay = |extra: &[&str], json: &Path| {
        replay_on_400g(&csv, &[&["--json", json.to_str().unwrap()], extra].concat())
    };
    let read = |json: &Path| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap()
    };
    let (whole, pages) = (dir.join("whole.json"), dir.join("pages.json"));
    let o = replay(&[], &whole);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = replay(&["--split-reads", "8"], &pages);
    assert!(o.status.success(), "{}", stderr(&o));
    let (w, p) = (read(&whole), read(&pages));
    assert_eq!(w["requests"], 3);
    assert_eq!(p["requests"], 128 + 1 + 1);
    let more = p["wall_seconds"].as_f64().unwrap() - w["wall_seconds"].as_f64().unwrap();
    // 128 commands of 0.23 ms (29 ms) for the media's 8 ms (21 ms more); the far read after it
    // waits for its sector to come round, so the totals differ by whole revolutions (8.3 ms).
    assert!(more > 0.012 && more < 0.035, "{more} s");
    let bad = dir.join("bad.json");
    let o = replay(&["--split-reads", "0"], &bad);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--split-reads"), "{}", stderr(&o));
    assert!(!bad.exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `trace replay --modelled`: the trace as the model served it. A 4 KiB read, the next 4 KiB
/// issued right behind it (served from the drive's read-ahead, well under a revolution), then
/// one 50 GB away (a seek and a rotational wait: milliseconds). The file is a trace like any
/// other: the same requests, issued one captured think time (1 ns) after the previous modelled
/// completion, its last completion the replay's wall time, and replayed again it takes that
/// time again.
#[test]
fn trace_replay_writes_the_modelled_trace() {
    let dir = scratch("modelled");
    let csv = dir.join("r.csv");
    std::fs::write(
        &csv,
        "issue_ns,complete_ns,op,sector,sectors,flags,tag
         0,1,read,100000,8,,p1
         2,3,read,100008,8,,p1
         4,5,read,100000000,8,,p2
",
    )
    .unwrap();
    let (json, modelled) = (dir.join("r.json"), dir.join("modelled.csv"));
    let o = replay_on_400g(
        &csv,
        &[
            "--json",
            json.to_str().unwrap(),
            "--modelled",
            modelled.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let wall = wall_seconds(&json);
    let text = std::fs::read_to_string(&modelled).unwrap();
    let rows: Vec<Vec<&str>> = text
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    assert_eq!(rows.len(), 3, "{text}");
    let ns = |r: &[&str], i: usize| -> f64 { r[i].parse().unwrap() };
    for (r, (sector, tag)) in
        rows.iter()
            .zip([("100000", "p1"), ("100008", "p1"), ("100000000", "p2")])
    {
        assert_eq!(
            (r[2], r[3], r[4], r[6]),
            ("read", sector, "8", tag),
            "{text}"
        );
    }
    assert_eq!(ns(&rows[0], 0), 0.0);
    for w in rows.windows(2) {
        assert_eq!(ns(&w[1], 0) - ns(&w[0], 1), 1.0, "think kept: {text}");
    }
    let service = |r: &[&str]| (ns(r, 1) - ns(r, 0)) / 1e6;
    assert!(
        service(&rows[1]) < 0.5,
        "read-ahead hit {} ms: {text}",
        service(&rows[1])
    );
    assert!(
        service(&rows[2]) > 1.0,
        "far read {} ms: {text}",
        service(&rows[2])
    );
    assert!(
        (ns(&rows[2], 1) - wall * 1e9).abs() < 2.0,
        "{wall} s: {text}"
    );
    let again = dir.join("again.json");
    let o = replay_on_400g(&modelled, &["--json", again.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let wall2 = wall_seconds(&again);
    assert!((wall2 - wall).abs() < 1e-6, "{wall} s, again {wall2} s");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_reader_that_goes_away_ends_the_program_quietly() {
    // `layoutlab plan --json - | head -1`: the pipe closes under a long JSON write.
    let mut child = Command::new(env!("CARGO_BIN_EXE_layoutlab"))
        .args(["plan", "--scale", "0.01", "--json", "-"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(out.status.code(), Some(0), "{err}");
}

/// A trace without CPU accounting replays exactly as before the replay learned CPU stamps: the
/// JSON of `trace replay` is byte-identical to what the previous release (commit 1cc0b32)
/// wrote for the same real e2fsck trace, on a disk and an SSD, FCFS and SPTF; and it says so.
/// The same trace with its CPU stamps takes its think times from them instead.
#[test]
fn traces_without_cpu_accounting_replay_byte_identically() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let wall = data.join("e2fsck-ext3-2007-s0.005.wall.csv");
    let dir = scratch("golden");
    for device in ["sata-400g-2007", "ssd-sata-2010"] {
        for sched in ["fcfs", "sptf"] {
            let out = dir.join(format!("{device}.{sched}.json"));
            let o = layoutlab(&[
                "trace",
                "replay",
                wall.to_str().unwrap(),
                "--device",
                device,
                "--scheduler",
                sched,
                "--json",
                out.to_str().unwrap(),
            ]);
            assert!(o.status.success(), "{}", stderr(&o));
            assert!(stderr(&o).contains("no CPU accounting"), "{}", stderr(&o));
            let golden = data.join(format!(
                "e2fsck-ext3-2007-s0.005.wall.{device}.{sched}.json"
            ));
            assert_eq!(
                std::fs::read(&out).unwrap(),
                std::fs::read(&golden).unwrap(),
                "{device} {sched}: replay of a wall-clock trace moved"
            );
        }
    }
    let cpu = data.join("e2fsck-ext3-2007-s0.005.cpu.csv");
    let out = dir.join("cpu.json");
    let o = layoutlab(&[
        "trace",
        "replay",
        cpu.to_str().unwrap(),
        "--device",
        "sata-400g-2007",
        "--json",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("no CPU accounting"), "{}", stderr(&o));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let g: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            data.join("e2fsck-ext3-2007-s0.005.wall.sata-400g-2007.fcfs.json"),
        )
        .unwrap(),
    )
    .unwrap();
    // e2fsck's CPU time is less than the wall gaps it ran in (they hold wake-ups and waits).
    let (c, w) = (
        v["cpu_not_overlapped_seconds"].as_f64().unwrap(),
        g["cpu_not_overlapped_seconds"].as_f64().unwrap(),
    );
    assert!(c > 0.0 && c < w, "CPU think {c} s vs wall {w} s");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `reproduce fio-randread` is deterministic (seeded model, no kernel): its table, JSON and
/// report are byte for byte those of the binary before the experiments moved into their own
/// crate (golden files made by that binary). A deliberate change of the fio model or report
/// replaces them from a run of `layoutlab reproduce fio-randread --json result.json`.
#[test]
fn fio_randread_output_matches_the_golden_files() {
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/fio-randread");
    let dir = scratch("fio-golden");
    let json = dir.join("result.json");
    let o = layoutlab(&[
        "reproduce",
        "fio-randread",
        "--out",
        dir.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let same = |ours: &[u8], name: &str| {
        let want = std::fs::read(golden.join(name)).unwrap();
        assert!(
            ours == want.as_slice(),
            "{name} differs from the golden file:\n{}",
            String::from_utf8_lossy(ours)
        );
    };
    same(&o.stdout, "human.txt");
    same(&std::fs::read(&json).unwrap(), "result.json");
    same(
        &std::fs::read(dir.join("fio-randread/report.md")).unwrap(),
        "report.md",
    );
    // With --json -, stdout is the JSON alone and the table goes to stderr.
    let o = layoutlab(&[
        "reproduce",
        "fio-randread",
        "--out",
        dir.to_str().unwrap(),
        "--json",
        "-",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    same(&o.stdout, "result.json");
    assert!(stderr(&o).starts_with(
        &String::from_utf8_lossy(&std::fs::read(golden.join("human.txt")).unwrap()).to_string()
    ));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_experiment_file_with_an_unknown_operation_lists_the_valid_ones() {
    let dir = scratch("unknown-op");
    let p = dir.join("x.toml");
    std::fs::write(
        &p,
        "name='x'\ntitle='t'\noperation='fsk'\ndevice='sata-400g-2007'\nseed=1\n[fsk]\n",
    )
    .unwrap();
    let o = layoutlab(&[
        "reproduce",
        p.to_str().unwrap(),
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("unknown operation 'fsk'") && e.contains("fsck") && e.contains("fio"),
        "{e}"
    );
    assert_eq!(entries(&dir), vec!["x.toml".to_string()]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// zram devices whose size is `bytes` (the test's own, by an unusual size).
/// Sends signal `name` (`KILL`, `STOP`, ...) to `pid`.
fn signal(pid: u32, name: &str) {
    let st = Command::new("kill")
        .args([&format!("-{name}"), &pid.to_string()])
        .status()
        .unwrap();
    assert!(st.success(), "kill -{name} {pid}");
}

/// Stops `pid` (SIGSTOP) at a moment its file system is mounted under `dir` on a loop device
/// over the zram device of its record, the device at the recorded size; returns the record's
/// name and the size. Between one file system's teardown and the next one's making, a mount,
/// a record and a device can disagree for a moment: a test that looked while the run went on
/// met a mount with no record, and a record whose device had no size yet (loaded CI runs).
fn stop_on_zram_mount(pid: u32, dir: &Path) -> (String, u64) {
    let stopped = || {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| {
                s.rsplit_once(')')
                    .is_some_and(|(_, r)| r.trim_start().starts_with('T'))
            })
            .unwrap_or(false)
    };
    let mounted = || {
        std::fs::read_to_string("/proc/mounts")
            .unwrap()
            .contains(&format!("{}/layoutlab-mnt-{pid}-", dir.display()))
    };
    let on_zram = |id: &str| {
        std::fs::read_dir("/sys/block").unwrap().flatten().any(|e| {
            std::fs::read_to_string(e.path().join("loop/backing_file"))
                .is_ok_and(|b| b.trim() == format!("/dev/zram{id}"))
        })
    };
    let t0 = std::time::Instant::now();
    while t0.elapsed().as_secs() < 300 {
        if mounted() {
            signal(pid, "STOP");
            while !stopped() {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            let found = entries(dir)
                .into_iter()
                .find(|n| n.starts_with(&format!("layoutlab-zram-{pid}-")))
                .and_then(|name| {
                    let size: u64 = std::fs::read_to_string(dir.join(&name))
                        .ok()?
                        .trim()
                        .parse()
                        .ok()?;
                    let id = name.rsplit('-').next()?.to_string();
                    (mounted()
                        && on_zram(&id)
                        && zram_ids_of_size(size).contains(&format!("zram{id}")))
                    .then_some((name, size))
                });
            if let Some(found) = found {
                return found;
            }
            signal(pid, "CONT");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    panic!("the run never mounted its file system on its zram device");
}

fn zram_ids_of_size(bytes: u64) -> Vec<String> {
    std::fs::read_dir("/sys/block")
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("zram"))
        .filter(|n| {
            std::fs::read_to_string(format!("/sys/block/{n}/disksize"))
                .map(|s| s.trim() == bytes.to_string())
                .unwrap_or(false)
        })
        .collect()
}

#[test]
fn large_delete_end_to_end_json_contract() {
    if !is_root() {
        eprintln!("SKIP large_delete_end_to_end_json_contract: the experiment needs root (zram, loop devices, tracefs)");
        return;
    }
    let dir = scratch("large-delete");
    let json = dir.join("r.json");
    let o = Command::new(env!("CARGO_BIN_EXE_layoutlab"))
        .args([
            "reproduce",
            "large-delete",
            "--scale",
            "0.002",
            "--out",
            dir.join("out").to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
        ])
        .env("TMPDIR", &dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["experiment"], "large-delete");
    assert_eq!(v["scale"], 0.002);
    assert_eq!(v["device"], "sata-400g-2007");
    let runs = v["runs"].as_array().unwrap();
    let names: Vec<String> = runs
        .iter()
        .map(|r| {
            format!(
                "{} {}",
                r["fs"].as_str().unwrap(),
                r["variant"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        names,
        [
            "ext3 contiguous",
            "ext3 fragmented",
            "ext4-2007 contiguous",
            "ext4-2007 fragmented",
            "ext4 contiguous",
            "ext4 fragmented",
            "xfs contiguous",
            "xfs fragmented",
            "btrfs contiguous",
            "btrfs fragmented"
        ]
    );
    for r in runs {
        // Deleting reads the mapping it frees and writes the freed state back.
        assert!(r["sectors_read"].as_u64().unwrap() > 0, "{r}");
        assert!(r["sectors_written"].as_u64().unwrap() > 0, "{r}");
        assert!(r["fragments"].as_u64().unwrap() >= 1, "{r}");
        assert!(r["seconds"].as_f64().unwrap() > 0.0, "{r}");
        // Each run says where its wall time went: a kernel write only where the kernel wrote
        // the file, and every run makes a file system and traces a delete.
        let wall = &r["wall"];
        assert_eq!(
            wall["write_seconds"].is_null(),
            r["written_through"].is_null(),
            "{r}"
        );
        for step in ["lock_wait_seconds", "make_seconds", "layout_seconds"] {
            assert!(wall[step].as_f64().unwrap() >= 0.0, "{r}");
        }
        // The writer's memory bound is named exactly for the kernel-written files proven for
        // it (XFS's and ext4's fragmented pairs; ext4's contiguous file is the engine's).
        let bounded = !r["written_through"].is_null()
            && r["variant"] == "fragmented"
            && (r["fs"] == "xfs" || r["fs"] == "ext4");
        assert_eq!(
            r["write_memory_mib"].as_u64(),
            bounded.then_some(1024),
            "{r}"
        );
        assert!(wall["capture_seconds"].as_f64().unwrap() > 0.0, "{r}");
    }
    // Two lanes (the default) write only the files proven for it beside one another (ext4's
    // fragmented pair, XFS's two files; never btrfs's or a libext2fs image), and "beside" goes
    // both ways.
    let at_once = ["ext4 fragmented", "xfs contiguous", "xfs fragmented"];
    for (r, name) in runs.iter().zip(&names) {
        for other in r["written_beside"].as_array().unwrap() {
            let other = other.as_str().unwrap();
            assert!(
                at_once.contains(&name.as_str()) && at_once.contains(&other),
                "{name} beside {other}"
            );
            let back = &runs[names.iter().position(|n| n == other).unwrap()];
            assert!(
                back["written_beside"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|b| b == name.as_str()),
                "{other} does not name {name}"
            );
        }
    }
    // The interleaving writers fragment the file on ext4, whose allocator gives each
    // fdatasync'd turn its own place.
    let frag = |fs: &str, variant: &str| {
        runs.iter()
            .find(|r| r["fs"] == fs && r["variant"] == variant)
            .unwrap()["fragments"]
            .as_u64()
            .unwrap()
    };
    assert!(frag("ext4", "fragmented") > 2 * frag("ext4", "contiguous"));
    // ... and ext3-2007's answer to the same writers (the policy's plan, read back by the
    // kernel's FIEMAP) breaks the file beyond its indirect blocks.
    assert!(frag("ext3", "fragmented") > frag("ext3", "contiguous") + 10);
    // ext3's indirect blocks, read to free the file, make it read far more than ext4's extents.
    let read = |fs: &str| {
        runs.iter()
            .find(|r| r["fs"] == fs && r["variant"] == "contiguous")
            .unwrap()["sectors_read"]
            .as_u64()
            .unwrap()
    };
    assert!(read("ext3") > 4 * read("ext4"), "{runs:?}");
    // Time, the post's question. ext3 frees its file by reading every indirect block, one
    // synchronous read each, 4 MiB of data apart: on the 7200 rpm sata-400g-2007 each waits on
    // average half a revolution (4.17 ms) besides a seek of 1 ms or more. So the delete takes at
    // least 0.8 of (indirect blocks x half a revolution): ~50 rotational waits, uniform in one
    // revolution, sum to within 8% (one standard deviation) of their mean, and the seeks add
    // about 25% more, so the bound sits over 4 deviations below what the mechanism gives.
    // Measured here: 0.465 and 0.435 s for 49 indirect blocks (bound 0.163 s).
    let secs = |fs: &str, variant: &str| {
        runs.iter()
            .find(|r| r["fs"] == fs && r["variant"] == variant)
            .unwrap()["seconds"]
            .as_f64()
            .unwrap()
    };
    let half_revolution = 60.0 / 7200.0 / 2.0;
    for variant in ["contiguous", "fragmented"] {
        let r = runs
            .iter()
            .find(|r| r["fs"] == "ext3" && r["variant"] == variant)
            .unwrap();
        let indirect = r["by_class"]["indirect"].as_u64().unwrap() / 8;
        assert!(indirect >= 40, "{r}");
        assert!(
            secs("ext3", variant) >= 0.8 * indirect as f64 * half_revolution,
            "ext3 {variant}: {} s for {indirect} synchronous indirect-block reads",
            secs("ext3", variant)
        );
    }
    // ... while the extent-mapped file systems read a few tens of sectors in at most ~20
    // requests: every one of them deletes in under half of ext3's time (measured: at most 0.102
    // s against ext3's 0.435 s, a factor 4.3; the bound leaves a factor 2 for run-to-run moves of
    // a few synchronous requests).
    let ext3_fastest = secs("ext3", "contiguous").min(secs("ext3", "fragmented"));
    for fs in ["ext4-2007", "ext4", "xfs"] {
        for variant in ["contiguous", "fragmented"] {
            assert!(
                secs(fs, variant) < 0.5 * ext3_fastest,
                "{fs} {variant}: {} s, ext3 {ext3_fastest} s",
                secs(fs, variant)
            );
        }
    }
    assert!(dir.join("out/large-delete/delete-offset.svg").exists());
    // ext3's files are 2007's layout (the ext3-2007 policy through libext2fs), ext4's
    // contiguous file the engine's plan of the kernel's write (tests/ext4_engine.rs), ext4-2007's
    // files both the engine's (tests/ext4_2007_engine.rs), the rest the kernel's; every run has
    // its plot coloured by class.
    let layout = |fs: &str, variant: &str| {
        runs.iter()
            .find(|r| r["fs"] == fs && r["variant"] == variant)
            .unwrap()["layout"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(layout("ext3", "contiguous"), "policy ext3-2007");
    assert_eq!(layout("ext3", "fragmented"), "policy ext3-2007");
    assert_eq!(layout("xfs", "contiguous"), "kernel");
    assert_eq!(layout("ext4", "contiguous"), "engine ext4-kernel");
    assert_eq!(layout("ext4", "fragmented"), "kernel");
    assert_eq!(layout("ext4-2007", "contiguous"), "engine ext4-2007");
    assert_eq!(layout("ext4-2007", "fragmented"), "engine ext4-2007");
    let svg =
        std::fs::read_to_string(dir.join("out/large-delete/delete-ext3-contiguous.svg")).unwrap();
    for class in ["indirect", "block_bitmap", "inode_table"] {
        assert!(
            svg.contains(&format!(">{class}</text>")),
            "legend lacks {class}"
        );
    }
    for name in &names {
        let f = format!("out/large-delete/delete-{}.svg", name.replace(' ', "-"));
        assert!(dir.join(&f).exists(), "{f}");
    }
    // Nothing left: no temp path, mount or loop device under TMPDIR.
    let left: Vec<String> = entries(&dir)
        .into_iter()
        .filter(|n| n.starts_with("layoutlab-"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    assert!(loops_under(&dir).is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn large_delete_unknown_fs_lists_the_valid_ones_and_makes_nothing() {
    let dir = scratch("large-delete-bad");
    let o = Command::new(env!("CARGO_BIN_EXE_layoutlab"))
        .args([
            "reproduce",
            "large-delete",
            "--fs",
            "ext4,ntfs",
            "--out",
            dir.join("out").to_str().unwrap(),
        ])
        .env("TMPDIR", &dir)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("ntfs") && e.contains("ext4-2007") && e.contains("btrfs"),
        "{e}"
    );
    assert!(entries(&dir).is_empty(), "{:?}", entries(&dir));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--device A,B` of the kernel experiments whose traces are not kept elsewhere: a name in the
/// list that is no preset is refused naming it, and `--closed-loop` over two presets is refused
/// (a closed-loop capture is of one disk); exit 2 and nothing made, before the root check
/// (this test needs no root).
#[test]
fn kernel_experiments_refuse_a_bad_device_list_and_make_nothing() {
    let dir = scratch("device-list-bad");
    for (exp, first) in [
        ("large-delete", "sata-400g-2007"),
        ("random-read", "sata-2t-5400-2010"),
    ] {
        for (extra, says) in [
            (
                vec!["--device", &*format!("{first},sata-400g-2007-alt")],
                "device 'sata-400g-2007-alt'".to_string(),
            ),
            (
                vec![
                    "--device",
                    &*format!("{first},sata-400g-2007-alt-samsung"),
                    "--closed-loop",
                    "8",
                ],
                "give one --device".to_string(),
            ),
        ] {
            let o = Command::new(env!("CARGO_BIN_EXE_layoutlab"))
                .args(["reproduce", exp, "--out", dir.join("out").to_str().unwrap()])
                .args(&extra)
                .env("TMPDIR", &dir)
                .output()
                .unwrap();
            assert_eq!(o.status.code(), Some(2), "{exp} {extra:?}: {}", stderr(&o));
            assert!(
                stderr(&o).contains(&says),
                "{exp} {extra:?}: {}",
                stderr(&o)
            );
            assert!(
                entries(&dir).is_empty(),
                "{exp} {extra:?}: {:?}",
                entries(&dir)
            );
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `layoutlab trace replay TRACE --device DEVICE --json -`: the replay's JSON (it must succeed).
fn replay_json(trace: &Path, device: &str) -> serde_json::Value {
    let o = layoutlab(&[
        "trace",
        "replay",
        trace.to_str().unwrap(),
        "--device",
        device,
        "--json",
        "-",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// `reproduce random-read` keeps every target's and mode's trace (`traces/reads-TARGET-MODE.csv`),
/// and `layoutlab trace replay` of that file on the run's preset gives the run's own `seconds`
/// exactly: the stored trace is the priced one, so the error budget's preset-values row
/// (docs/regenerate-budgets.sh) replays what the run priced. ext3 at scale 0.001 (a 1.9 GB
/// file from the ext3-2007 policy's sparse image), 300 reads.
#[test]
fn random_read_keeps_the_traces_it_priced() {
    if !is_root() {
        eprintln!("SKIP random_read_keeps_the_traces_it_priced: the experiment needs root (loop devices, tracefs)");
        return;
    }
    let dir = scratch("random-read-traces");
    let v = common::reproduce_under(
        &dir,
        "random-read",
        &["--scale", "0.001", "--fs", "ext3", "--set", "reads=300"],
    );
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2, "{v}");
    for r in runs {
        let trace = dir.join(format!(
            "out/random-read/traces/reads-{}-{}.csv",
            r["target"].as_str().unwrap(),
            r["mode"].as_str().unwrap()
        ));
        let replayed = replay_json(&trace, "sata-2t-5400-2010");
        assert_eq!(
            replayed["wall_seconds"].as_f64().unwrap(),
            r["seconds"].as_f64().unwrap(),
            "{r}"
        );
        assert_eq!(
            replayed["requests"].as_u64(),
            r["phase_requests"].as_u64(),
            "{r}"
        );
    }
    common::assert_nothing_left(&dir);
}

/// `reproduce large-delete --device P,ALT` prices each delete's one trace on both presets: the
/// JSON's `seconds` is `seconds_on[P]`, and each of `seconds_on` is exactly what `layoutlab
/// trace replay` gives for the trace the run keeps (`traces/delete-FS-VARIANT.csv`) on that
/// preset: the replays of one stored trace, deterministic (no second capture to compare).
/// ext3 at scale 0.002 (a 200 MB file, both variants from the ext3-2007 policy's sparse
/// image): its delete reads about 50 indirect blocks one by one, which two drives price
/// differently.
#[test]
fn large_delete_prices_each_trace_on_every_device_given() {
    if !is_root() {
        eprintln!("SKIP large_delete_prices_each_trace_on_every_device_given: the experiment needs root (zram, loop devices, tracefs)");
        return;
    }
    let dir = scratch("large-delete-devices");
    let devices = ["sata-400g-2007", "sata-400g-2007-alt-samsung"];
    let v = common::reproduce_under(
        &dir,
        "large-delete",
        &[
            "--scale",
            "0.002",
            "--fs",
            "ext3",
            "--device",
            &devices.join(","),
        ],
    );
    assert_eq!(v["device"], devices[0]);
    assert_eq!(v["devices"], serde_json::json!(devices));
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for r in runs {
        let on = |d: &str| r["seconds_on"][d].as_f64().unwrap();
        assert_eq!(r["seconds_on"].as_object().unwrap().len(), 2, "{r}");
        assert_eq!(r["seconds"].as_f64().unwrap(), on(devices[0]), "{r}");
        let trace = dir.join(format!(
            "out/large-delete/traces/delete-{}-{}.csv",
            r["fs"].as_str().unwrap(),
            r["variant"].as_str().unwrap()
        ));
        for d in devices {
            let replayed = replay_json(&trace, d);
            assert_eq!(
                replayed["wall_seconds"].as_f64().unwrap(),
                on(d),
                "{d}: {r}"
            );
        }
        assert!(on(devices[0]) != on(devices[1]), "{r}");
    }
    // The report names both presets in its table of seconds per device.
    let report = std::fs::read_to_string(dir.join("out/large-delete/report.md")).unwrap();
    assert!(
        report.contains("priced on every preset") && report.contains(devices[1]),
        "{report}"
    );
    common::assert_nothing_left(&dir);
}

/// `reproduce --set`: a value of `layout` that is not one lists the valid ones, a key that is
/// not the experiment's lists its keys, and several values point at `sweep`; exit 2, nothing
/// made.
#[test]
fn reproduce_set_refuses_bad_layouts_keys_and_lists() {
    let dir = scratch("set-bad");
    for (exp, set, want) in [
        ("random-read", "layout=disk", "valid: engine, kernel"),
        ("large-delete", "layout=disk", "valid: engine, kernel"),
        ("large-delete", "write=fast", "valid: direct-loop, buffered"),
        ("random-read", "nosuch=1", "layout"),
        ("random-read", "layout=engine,kernel", "layoutlab sweep"),
        // an unknown key lists the operation's options with their help
        (
            "random-read",
            "nosuch=1",
            "layout: who lays out the ext4 file",
        ),
        ("large-delete", "nosuch=1", "file_systems: file systems"),
        // a bad value of a list is refused by the operation's check
        ("random-read", "modes=sideways", "unknown mode 'sideways'"),
        ("inode-readahead", "settings=0,8,x", "settings"),
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_layoutlab"))
            .args([
                "reproduce",
                exp,
                "--set",
                set,
                "--out",
                dir.join("out").to_str().unwrap(),
            ])
            .env("TMPDIR", &dir)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{exp} --set {set}");
        let e = stderr(&o);
        assert!(e.contains(want), "{exp} --set {set}: {e}");
        assert!(entries(&dir).is_empty(), "{:?}", entries(&dir));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `bench experiment --set` goes through reproduce's check: the same bad keys and values get
/// the same refusal, exit 2, before any run; and `--set` with `all` is refused (its keys are
/// one operation's).
#[test]
fn bench_experiment_set_is_checked_as_reproduce_checks_it() {
    let dir = scratch("bench-set");
    let run = |cmd: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_layoutlab"))
            .args(cmd)
            .env("TMPDIR", &dir)
            .output()
            .unwrap();
        assert!(entries(&dir).is_empty(), "{cmd:?}: {:?}", entries(&dir));
        (o.status.code(), stderr(&o))
    };
    for (exp, set) in [
        ("random-read", "layout=disk"),
        ("large-delete", "nosuch=1"),
        ("random-read", "modes=sideways"),
    ] {
        let out = dir.join("out");
        let reproduce = run(&[
            "reproduce",
            exp,
            "--set",
            set,
            "--out",
            out.to_str().unwrap(),
        ]);
        let bench = run(&["bench", "experiment", exp, "--set", set]);
        assert_eq!(reproduce.0, Some(2), "{exp} --set {set}: {}", reproduce.1);
        assert_eq!(bench, reproduce, "{exp} --set {set}");
    }
    let (code, e) = run(&["bench", "experiment", "all", "--set", "policies=ext3-2007"]);
    assert_eq!(code, Some(2), "{e}");
    assert!(e.contains("--set goes with one experiment"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The old flags are shorthands of `--set`: each gives what its `--set` entry gives (here the
/// same refusal of the same bad value, before anything is made), and a flag the experiment's
/// operation does not take is refused, naming the operations that take it.
#[test]
fn shorthand_flags_are_their_set_entries() {
    let dir = scratch("shorthand");
    let run = |args: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_layoutlab"))
            .args(["reproduce"])
            .args(args)
            .args(["--out", dir.join("out").to_str().unwrap()])
            .env("TMPDIR", &dir)
            .output()
            .unwrap();
        assert!(entries(&dir).is_empty(), "{args:?}: {:?}", entries(&dir));
        (o.status.code(), stderr(&o))
    };
    for (exp, flag, value, set, says) in [
        (
            "inode-readahead",
            "--tree",
            "nope",
            "tree=nope",
            "unknown population 'nope'",
        ),
        (
            "random-read",
            "--mode",
            "sideways",
            "modes=sideways",
            "unknown mode 'sideways'",
        ),
        ("random-read", "--fs", "ext9", "targets=ext9", "ext9"),
        ("large-delete", "--fs", "ext9", "file_systems=ext9", "ext9"),
        (
            "inode-readahead",
            "--settings",
            "0,x",
            "settings=0,x",
            "settings",
        ),
    ] {
        let short = run(&[exp, flag, value]);
        assert_eq!(short.0, Some(2), "{exp} {flag} {value}: {}", short.1);
        assert!(short.1.contains(says), "{exp} {flag} {value}: {}", short.1);
        assert_eq!(short, run(&[exp, "--set", set]), "{exp} {flag} {value}");
    }
    let (code, e) = run(&["fio-randread", "--fs", "ext3"]);
    assert_eq!(code, Some(2));
    assert!(
        e.contains(
            "--fs applies to large-delete (--set file_systems), random-read (--set targets)"
        ),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Run as an unprivileged user, the kernel experiments say what needs root, exit 2, and make
/// nothing (no loop device over anything of theirs, no file, not even the report directory).
#[test]
fn kernel_experiments_without_root_say_what_needs_root_and_make_nothing() {
    if !is_root() {
        // Already unprivileged: the command itself is the test.
        let o = layoutlab(&["reproduce", "large-delete", "--fs", "ext4"]);
        assert_eq!(o.status.code(), Some(2));
        assert!(stderr(&o).contains("root"));
        return;
    }
    let dir = scratch("no-root");
    std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    for args in [
        &["reproduce", "large-delete", "--fs", "ext3,xfs"][..],
        &["reproduce", "metacluster-fsck"][..],
    ] {
        let mut full: Vec<&str> = args.to_vec();
        let out = dir.join("out");
        full.extend(["--out", out.to_str().unwrap()]);
        let o = Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(env!("CARGO_BIN_EXE_layoutlab"))
            .args(&full)
            .env("TMPDIR", &dir)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(e.contains("root"), "{args:?}: {e}");
        assert!(entries(&dir).is_empty(), "{args:?}: {:?}", entries(&dir));
        assert!(loops_under(&dir).is_empty());
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// SIGKILL of layoutlab in the middle of a kernel file-system run: `layoutlab clean` removes
/// its mount, the loop device on its zram device, and the zram device (found by its record),
/// and nothing else.
#[test]
fn large_delete_sigkill_leftovers_are_cleaned_zram_included() {
    if !is_root() {
        eprintln!("skipped: the experiment needs root");
        return;
    }
    let dir = scratch("large-delete-kill");
    let mut child = Command::new(env!("CARGO_BIN_EXE_layoutlab"))
        .args([
            "reproduce",
            "large-delete",
            "--scale",
            "0.01",
            "--fs",
            "ext4",
            // the kernel writes on zram (the engine's sparse image would use none)
            "--set",
            "layout=kernel",
            "--out",
            dir.join("out").to_str().unwrap(),
        ])
        .env("TMPDIR", &dir)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let (record, size) = stop_on_zram_mount(pid, &dir);
    let id = record.rsplit('-').next().unwrap().to_string();
    // Killed while stopped: what it made is exactly what it had then.
    child.kill().unwrap();
    child.wait().unwrap();
    let zram = format!("zram{id}");
    assert!(
        zram_ids_of_size(size).contains(&zram),
        "SIGKILL runs no cleanup: the zram device should still be there"
    );
    let o = layoutlab(&["clean", "--temp-dir", dir.to_str().unwrap(), "--json", "-"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let done: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(done["failed"], 0, "{done}");
    let kinds: Vec<&str> = done["found"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["pid"] == pid)
        .map(|i| i["kind"].as_str().unwrap())
        .collect();
    for k in ["mount", "loop_device", "zram", "temp_path"] {
        assert!(kinds.contains(&k), "{k} not found: {done}");
    }
    assert!(
        !Path::new(&format!("/sys/block/{zram}")).exists() || {
            // The id may have been reused by someone else since: then it is not ours any more.
            std::fs::read_to_string(format!("/sys/block/{zram}/disksize"))
                .unwrap()
                .trim()
                != size.to_string()
        }
    );
    assert!(!std::fs::read_to_string("/proc/mounts")
        .unwrap()
        .contains(dir.to_str().unwrap()));
    assert!(entries(&dir)
        .iter()
        .all(|n| !n.contains(&format!("-{pid}-"))));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// SIGTERM while the file is being written (the main thread inside a write on the file system):
/// exit 143 and, once the process is gone, no mount, loop or zram device of the run is left
/// (the zram device is freed by a helper once the lazy unmount lets go of it).
#[test]
fn large_delete_sigterm_mid_write_leaves_nothing() {
    if !is_root() {
        eprintln!("skipped: the experiment needs root");
        return;
    }
    let dir = scratch("large-delete-term");
    let mut child = Command::new(env!("CARGO_BIN_EXE_layoutlab"))
        .args([
            "reproduce",
            "large-delete",
            "--scale",
            "0.011",
            "--fs",
            "ext4",
            // the kernel writes on zram (the engine's sparse image would use none)
            "--set",
            "layout=kernel",
            "--out",
            dir.join("out").to_str().unwrap(),
        ])
        .env("TMPDIR", &dir)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let record = || {
        entries(&dir)
            .into_iter()
            .find(|n| n.starts_with(&format!("layoutlab-zram-{pid}-")))
    };
    let mounted = || {
        std::fs::read_to_string("/proc/mounts")
            .unwrap()
            .contains(&format!("{}/layoutlab-mnt-{pid}-", dir.display()))
    };
    let (name, size) = stop_on_zram_mount(pid, &dir);
    signal(pid, "CONT");
    let zram = format!("zram{}", name.rsplit('-').next().unwrap());
    std::thread::sleep(std::time::Duration::from_millis(300));
    signal(pid, "TERM");
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(143));
    let t0 = std::time::Instant::now();
    while (record().is_some() || zram_ids_of_size(size).contains(&zram))
        && t0.elapsed().as_secs() < 70
    {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(record().is_none(), "the zram record stayed");
    assert!(!zram_ids_of_size(size).contains(&zram), "{zram} stayed");
    // No loop device can be left on it: one would have kept the zram device from being reset.
    // (Its number may serve another test's device by now.)
    assert!(!mounted());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// rext3 from the command line: `plan` with a parameter, a bad parameter refused naming the
/// valid ones, and `image make` writing an image the real e2fsck finds clean.
#[test]
fn rext3_plans_and_makes_images() {
    let dir = scratch("rext3");
    let p = dir.join("plan.json");
    let o = layoutlab(&[
        "plan",
        "--policy",
        "rext3",
        "--param",
        "size=1/64",
        "--scale",
        "0.002",
        "--json",
        p.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    assert_eq!(v["policy"], "rext3");
    let o = layoutlab(&["plan", "--policy", "rext3", "--param", "region=1/2"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("valid: size, dirs"), "{}", stderr(&o));
    let img = dir.join("rext3.img");
    let o = layoutlab(&[
        "image",
        "make",
        "--policy",
        "rext3",
        "--scale",
        "0.002",
        img.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("e2fsck -fn: clean"), "{out}");
    std::fs::remove_dir_all(&dir).unwrap();
}
