//! The `layoutlab` command as a user runs it: contracts of --json, errors that list valid
//! names and change nothing, and no device, mount or image left behind.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn layoutlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_layoutlab"))
        .args(args)
        .output()
        .expect("run layoutlab")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn is_root() -> bool {
    unsafe { libc_geteuid() == 0 }
}

extern "C" {
    #[link_name = "geteuid"]
    fn libc_geteuid() -> u32;
}

/// A fresh empty directory for one test.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("layoutlab-cli-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn entries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Loop devices whose backing file lies under `dir`.
fn loops_under(dir: &Path) -> Vec<String> {
    let out = Command::new("losetup").arg("-a").output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains(dir.to_str().unwrap()))
        .map(str::to_string)
        .collect()
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
    let red = v["reduction"].as_f64().unwrap();
    assert!(
        red > 0.0 && red < 1.0,
        "clustering indirect blocks should shorten fsck: {red}"
    );
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
        assert!(!status.success(), "SIG{name}: should not report success");
        let imgs: Vec<String> = entries(&dir)
            .into_iter()
            .filter(|n| n.ends_with(".img"))
            .collect();
        assert!(loops_under(&dir).is_empty(), "SIG{name} left a loop device");
        assert!(imgs.is_empty(), "SIG{name} left {imgs:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
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
