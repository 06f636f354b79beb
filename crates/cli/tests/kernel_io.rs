//! `layoutlab reproduce request-merging` and `reproduce random-read` from the command line:
//! the JSON contract of a small request-merging run, and bad input (unknown names list the
//! valid ones; not root; no room) refused before anything is made.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn layoutlab(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_layoutlab"))
        .args(args)
        .env("TMPDIR", dir)
        .output()
        .unwrap()
}

/// The shipped request-merging experiment with a smaller dd (the default run's shape).
fn small_request_merging(dir: &Path, mib: u64) -> PathBuf {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../experiments/request-merging.toml"
    ))
    .unwrap()
    .replace("mib = 256", &format!("mib = {mib}"));
    assert!(text.contains(&format!("mib = {mib}")));
    let p = dir.join("rm.toml");
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn request_merging_json_contract_and_what_merging_does() {
    if !is_root() {
        eprintln!("skipped: the experiment needs root (zram, loop devices, tracefs)");
        return;
    }
    let dir = scratch("kio-test", "rm");
    let toml = small_request_merging(&dir, 16);
    let json = dir.join("r.json");
    let out = dir.join("out");
    let o = layoutlab(
        &dir,
        &[
            "reproduce",
            toml.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["experiment"], "request-merging");
    assert!(v["stack"].as_str().unwrap().contains("dm"));
    let runs = v["runs"].as_array().unwrap();
    // 3 targets x 2 modes x 2 ops x 2 levels x 2 devices.
    assert_eq!(runs.len(), 48);
    let find = |target: &str, mode: &str, op: &str, level: &str, device: &str| {
        runs.iter()
            .find(|r| {
                r["target"] == target
                    && r["mode"] == mode
                    && r["op"] == op
                    && r["level"] == level
                    && r["device"] == device
            })
            .unwrap_or_else(|| panic!("{target} {mode} {op} {level} {device}"))
    };
    for r in runs {
        for k in ["requests", "mean_request_kb", "seconds"] {
            assert!(r[k].as_f64().unwrap() > 0.0, "{r}");
        }
        // The zram-backed loop device presented the first preset's (a disk's) queue, and
        // the run says so (docs/rig.md, "The queue a capture presents").
        let q = &r["capture_queue"];
        assert_eq!(q["rotational"], true, "{r}");
        assert_eq!(q["read_ahead_kb"], v["read_ahead_kb"], "{r}");
        assert_eq!(q["max_sectors_kb"], v["max_sectors_kb"], "{r}");
        assert_eq!(q["scheduler"], "none", "{r}");
    }
    let d = "sata-500g-2008";
    // Buffered writes to the raw device reach it as page-sized bios, O_DIRECT as dd's 1 MiB.
    assert_eq!(
        find("raw", "buffered", "write", "bio", d)["mean_request_kb"],
        4.0
    );
    assert_eq!(
        find("raw", "direct", "write", "bio", d)["mean_request_kb"],
        1024.0
    );
    // The queue merges the 4 KiB bios (up to its limits), and on the disk the unmerged stream
    // costs more than the merged one.
    let bio = find("raw", "buffered", "write", "bio", d);
    let rq = find("raw", "buffered", "write", "request", d);
    assert!(rq["requests"].as_u64().unwrap() * 8 < bio["requests"].as_u64().unwrap());
    assert!(rq["mean_request_kb"].as_f64().unwrap() <= 1280.0);
    assert!(bio["seconds"].as_f64().unwrap() > 2.0 * rq["seconds"].as_f64().unwrap());
    let rep = out.join("request-merging");
    for f in [
        "report.md",
        "index.html",
        "sizes-raw-buffered-write.svg",
        "sizes-ext4-direct-read.svg",
    ] {
        assert!(rep.join(f).exists(), "{f}");
    }
    // Nothing left: no temp file or loop device of the run.
    common::assert_nothing_left(&dir);
}

#[test]
fn unknown_names_list_the_valid_ones_and_make_nothing() {
    let dir = scratch("kio-test", "bad-names");
    let out = dir.join("out");
    for (args, wants) in [
        (
            &[
                "reproduce",
                "request-merging",
                "--device",
                "sata-500g-2008,floppy",
            ][..],
            &["floppy", "sata-2t-5400-2010", "ssd-sata-2010"][..],
        ),
        (
            &["reproduce", "random-read", "--device", "floppy"][..],
            &["floppy", "sata-2t-5400-2010"][..],
        ),
        (
            &["reproduce", "random-read", "--fs", "ext4,zfs"][..],
            &["zfs", "raw", "ext3", "btrfs"][..],
        ),
        (
            &["reproduce", "random-read", "--mode", "mmap"][..],
            // a mode of the table; `--mode both` is the flag's alias of the two
            &["mmap", "valid: buffered, direct (`--mode both`"][..],
        ),
        (
            &["reproduce", "random-read", "--scale", "2"][..],
            &["--scale", "(0, 1]"][..],
        ),
    ] {
        let mut full = args.to_vec();
        full.extend(["--out", out.to_str().unwrap()]);
        let o = layoutlab(&dir, &full);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        let e = stderr(&o);
        for w in wants {
            assert!(e.contains(w), "{args:?}: no '{w}' in {e}");
        }
        assert!(entries(&dir).is_empty(), "{args:?}: {:?}", entries(&dir));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Run as an unprivileged user: they say what needs root, exit 2, and make nothing.
#[test]
fn without_root_they_say_so_and_make_nothing() {
    let dir = scratch("kio-test", "no-root");
    std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let out = dir.join("out");
    for name in ["request-merging", "random-read"] {
        let o = if is_root() {
            Command::new("setpriv")
                .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                .arg(env!("CARGO_BIN_EXE_layoutlab"))
                .args(["reproduce", name, "--out", out.to_str().unwrap()])
                .env("TMPDIR", &dir)
                .output()
                .unwrap()
        } else {
            layoutlab(&dir, &["reproduce", name, "--out", out.to_str().unwrap()])
        };
        assert_eq!(o.status.code(), Some(2), "{name}: {}", stderr(&o));
        assert!(stderr(&o).contains("root"), "{name}: {}", stderr(&o));
        assert!(entries(&dir).is_empty(), "{name}: {:?}", entries(&dir));
        assert!(loops_under(&dir).is_empty());
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// More than memory holds (request-merging's zram) or more than the disk holds (random-read's
/// scale-1 file system on a smaller modelled disk): an error before anything is written.
#[test]
fn no_room_is_an_error_before_anything_is_written() {
    if !is_root() {
        eprintln!("skipped: the room checks come after the root check");
        return;
    }
    let dir = scratch("kio-test", "no-room");
    let toml = small_request_merging(&dir, 1 << 20);
    let out = dir.join("out");
    let o = layoutlab(
        &dir,
        &[
            "reproduce",
            toml.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("memory"), "{}", stderr(&o));
    assert_eq!(entries(&dir), vec!["rm.toml".to_string()]);
    let o = layoutlab(
        &dir,
        &[
            "reproduce",
            "random-read",
            "--scale",
            "1",
            "--device",
            "sata-400g-2007",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("does not fit"), "{}", stderr(&o));
    assert_eq!(entries(&dir), vec!["rm.toml".to_string()]);
    assert!(loops_under(&dir).is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
}
