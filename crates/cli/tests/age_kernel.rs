//! `layoutlab workload age-kernel` as a user runs it: an aging stream from a JSON file on
//! the kernel's ext4 and XFS, its --json contract (every file's size as the population says,
//! fragments and layout score), and bad input refused with a clear error before anything is
//! made.

mod common;

use common::{is_root, layoutlab, stderr};

use layoutlab_workload::{NsOp, Population};

/// The root tests compare the machine's zram devices before and after: one at a time.
static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn turn() -> std::sync::MutexGuard<'static, ()> {
    TURN.lock().unwrap_or_else(|p| p.into_inner())
}

fn zram_devices() -> Vec<String> {
    std::fs::read_dir("/sys/block")
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("zram"))
        .collect()
}

/// 40 files in 4 directories, two writers appending in turns, then unlinks, truncates,
/// extends, renames, an rmdir and new files: 512 MiB.
fn aging_stream() -> Population {
    let mut ops = Vec::new();
    for d in 0..4 {
        ops.push(NsOp::Mkdir {
            path: format!("d{d}"),
        });
    }
    for i in 0..40u64 {
        ops.push(NsOp::Create {
            path: format!("d{}/f{i:02}", i % 4),
            bytes: (i + 1) * 300_000,
        });
    }
    for k in 0..6 {
        ops.push(NsOp::Append {
            path: format!("d{}/f{:02}", 39 % 4, 39 - (k % 2) * 4),
            bytes: 1 << 20,
        });
    }
    for i in (0..40u64).filter(|i| i % 4 == 1) {
        ops.push(NsOp::Unlink {
            path: format!("d1/f{i:02}"),
        });
    }
    ops.push(NsOp::Rmdir { path: "d1".into() });
    for i in (0..40u64).filter(|i| i % 4 == 2) {
        ops.push(NsOp::Truncate {
            path: format!("d2/f{i:02}"),
            bytes: 5000,
        });
        ops.push(NsOp::Extend {
            path: format!("d0/f{:02}", i - 2),
            bytes: 2 << 20,
        });
        ops.push(NsOp::Rename {
            path: format!("d3/f{:02}", i + 1),
            to: format!("d2/r{i:02}"),
        });
    }
    for i in 0..10 {
        ops.push(NsOp::Create {
            path: format!("d0/new{i}"),
            bytes: 3 << 20,
        });
    }
    let pop = Population {
        name: "aging-test".into(),
        fs_bytes: 512 << 20,
        ops,
    };
    pop.check_tree().unwrap();
    pop
}

#[test]
fn bad_input_is_refused_before_anything_is_made() {
    let dir = std::env::temp_dir().join(format!("layoutlab-age-kernel-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let o = layoutlab(&["workload", "age-kernel", "bench5", "--fs", "ntfs"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("ntfs") && stderr(&o).contains("xfs") && stderr(&o).contains("btrfs"),
        "{}",
        stderr(&o)
    );
    let o = layoutlab(&["workload", "age-kernel", "bench6"]);
    assert!(stderr(&o).contains("bench5"), "{}", stderr(&o));
    let missing = dir.join("missing.json");
    let o = layoutlab(&["workload", "age-kernel", "--ops", missing.to_str().unwrap()]);
    assert!(stderr(&o).contains("missing.json"), "{}", stderr(&o));
    // a stream that cannot be done names its operation
    let mut pop = aging_stream();
    pop.ops.push(NsOp::Rmdir { path: "d0".into() });
    let bad = dir.join("bad.json");
    std::fs::write(&bad, serde_json::to_string(&pop).unwrap()).unwrap();
    let o = layoutlab(&["workload", "age-kernel", "--ops", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let want = format!("ops[{}] (rmdir 'd0')", pop.ops.len() - 1);
    assert!(stderr(&o).contains(&want), "{}", stderr(&o));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_aging_stream_on_ext4_and_xfs_reports_every_file() {
    if !is_root() {
        eprintln!("SKIP an_aging_stream_on_ext4_and_xfs_reports_every_file: needs root");
        return;
    }
    let _turn = turn();
    let dir = std::env::temp_dir().join(format!("layoutlab-age-kernel-ok-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pop = aging_stream();
    let ops = dir.join("stream.json");
    std::fs::write(&ops, serde_json::to_string(&pop).unwrap()).unwrap();
    let zram_before = zram_devices();
    let mut want: Vec<(String, u64)> = pop
        .file_sizes()
        .into_iter()
        .map(|(p, s)| (p.to_string(), s))
        .collect();
    want.sort();
    for fs in ["ext4", "xfs"] {
        let o = layoutlab(&[
            "workload",
            "age-kernel",
            "--ops",
            ops.to_str().unwrap(),
            "--fs",
            fs,
            "--writeback-mib",
            "16",
            "--json",
            "-",
            "--per-file",
        ]);
        assert!(o.status.success(), "{fs}: {}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["fs"], fs);
        assert_eq!(v["population"], "aging-test");
        // Modelled as a disk: the zram-backed loop device presented a rotational queue.
        assert_eq!(v["queue"]["rotational"], true, "{fs}: {}", v["queue"]);
        assert_eq!(v["replay"]["operations"], pop.ops.len());
        assert_eq!(v["replay"]["bytes_written"], pop.file_bytes());
        let mut got: Vec<(String, u64)> = v["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                (
                    f["path"].as_str().unwrap().to_string(),
                    f["size"].as_u64().unwrap(),
                )
            })
            .collect();
        got.sort();
        assert_eq!(got, want, "{fs}");
        let s = &v["summary"];
        assert_eq!(s["files"], want.len());
        let score = s["layout_score"].as_f64().unwrap();
        assert!(score > 0.0 && score <= 1.0, "{fs}: {s}");
        assert!(s["fragments"]["max"].as_u64().unwrap() >= 1, "{fs}: {s}");
        match fs {
            "ext4" => assert_eq!(v["fsck_clean"], true),
            _ => assert!(v["fsck_clean"].is_null()),
        }
        // the table went to stderr, the JSON kept stdout
        assert!(stderr(&o).contains("layout score"), "{}", stderr(&o));
    }
    assert_eq!(zram_devices(), zram_before, "a zram device was left");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The kernel's file system on a period mkfs profile, kept as a metadata image
/// (`--mkfs-profile ext4-2009 --metadata-image`): the image has the profile's features, holds
/// metadata only (file data are holes), and `fsck-predict` checks and prices it with the
/// period's e2fsck, which finds it clean. A path that exists is refused before anything is
/// made, and so is a profile of another file system.
#[test]
fn the_kernels_file_system_kept_as_a_metadata_image_is_priced_by_fsck_predict() {
    let dir = std::env::temp_dir().join(format!("layoutlab-age-kernel-img-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let pop = aging_stream();
    let ops = dir.join("stream.json");
    std::fs::write(&ops, serde_json::to_string(&pop).unwrap()).unwrap();
    let taken = dir.join("taken.img");
    std::fs::write(&taken, b"someone's file").unwrap();
    let args = |image: &std::path::Path, profile: &str| {
        vec![
            "workload".to_string(),
            "age-kernel".into(),
            "--ops".into(),
            ops.display().to_string(),
            "--mkfs-profile".into(),
            profile.into(),
            "--metadata-image".into(),
            image.display().to_string(),
            "--json".into(),
            "-".into(),
        ]
    };
    let run = |a: Vec<String>| layoutlab(&a.iter().map(String::as_str).collect::<Vec<_>>());
    let _turn = turn();
    let zram_before = zram_devices();
    let o = run(args(&taken, "ext4-2009"));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("taken.img exists"), "{}", stderr(&o));
    assert_eq!(std::fs::read(&taken).unwrap(), b"someone's file");
    let image = dir.join("kernel.img");
    let o = run(args(&image, "ext3-2009"));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("give --fs ext3"), "{}", stderr(&o));
    assert!(!image.exists());
    if !is_root() {
        eprintln!("SKIP the kernel's metadata image: needs root");
        std::fs::remove_dir_all(&dir).unwrap();
        return;
    }
    // A mount option the kernel refuses: a clear error, and nothing made is left.
    let mut bad = args(&image, "ext4-2009");
    bad.extend(["--mount-options".to_string(), "no_such_option".into()]);
    let o = run(bad);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("mount"), "{}", stderr(&o));
    assert!(!image.exists());
    assert_eq!(zram_devices(), zram_before, "a zram device was left");
    let o = run(args(&image, "ext4-2009"));
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["mkfs_profile"], "ext4-2009");
    assert_eq!(v["fsck_clean"], true);
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["kernel.img", "stream.json", "taken.img"],
        "a part file left?"
    );
    // The profile's file system: 2009's uninit_bg, none of today's metadata_csum or 64bit.
    let dump = std::process::Command::new("dumpe2fs")
        .arg("-h")
        .arg(&image)
        .output()
        .unwrap();
    let dump = String::from_utf8_lossy(&dump.stdout);
    let features = dump
        .lines()
        .find(|l| l.starts_with("Filesystem features:"))
        .unwrap_or_else(|| panic!("{dump}"));
    for f in ["flex_bg", "uninit_bg", "extent"] {
        assert!(features.contains(f), "{features}");
    }
    for f in ["metadata_csum", "64bit"] {
        assert!(!features.contains(f), "{features}");
    }
    // Metadata only: far less allocated than the files' data the stream left.
    use std::os::unix::fs::MetadataExt;
    let allocated = std::fs::metadata(&image).unwrap().blocks() * 512;
    let data: u64 = pop.file_sizes().into_iter().map(|(_, s)| s).sum();
    assert!(
        allocated * 4 < data,
        "{allocated} bytes allocated for {data} of data"
    );
    let o = layoutlab(&[
        "fsck-predict",
        image.to_str().unwrap(),
        "--device",
        "sata-160g-2009",
        "--e2fsck",
        "1.41.4",
        "--json",
        "-",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let p: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(p["clean"], true, "{p}");
    assert_eq!(zram_devices(), zram_before, "a zram device was left");
    std::fs::remove_dir_all(&dir).unwrap();
}
