//! `layoutlab fsck-predict` on trees nobody here wrote: a real directory tree of this machine
//! copied through the kernel onto fresh ext4, XFS and btrfs, their metadata images taken with
//! the real tools, a deliberately corrupted image, a file that is no file system, a mounted
//! source. SOURCE's checksum is compared before and after every run.

mod common;

use common::{is_root, layoutlab};

use std::path::{Path, PathBuf};
use std::process::Command;

fn sh(program: &str, args: &[&str]) -> String {
    let out = Command::new(program).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn sha256(path: &Path) -> String {
    sh("sha256sum", &[path.to_str().unwrap()])
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

/// A scratch directory removed at the end (mounts inside are undone first by their guards).
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let d =
            std::env::temp_dir().join(format!("layoutlab-fp-test-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Scratch(d)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A loop mount made by the test, undone on drop (also when an assertion fails).
struct Mounted(PathBuf);

impl Mounted {
    fn new(image: &Path, at: &Path, opts: &str) -> Mounted {
        std::fs::create_dir_all(at).unwrap();
        sh(
            "mount",
            &["-o", opts, image.to_str().unwrap(), at.to_str().unwrap()],
        );
        Mounted(at.to_path_buf())
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// A file system of `kind` holding a copy of /usr/include, made through the kernel.
fn populated(dir: &Path, kind: &str) -> PathBuf {
    let img = dir.join(format!("{kind}.img"));
    std::fs::File::create(&img)
        .unwrap()
        .set_len(512 << 20)
        .unwrap();
    let p = img.to_str().unwrap();
    match kind {
        "ext4" => sh("mkfs.ext4", &["-q", "-F", p]),
        "xfs" => sh("mkfs.xfs", &["-q", "-f", p]),
        "btrfs" => sh(
            "mkfs.btrfs",
            &["-q", "-f", "-m", "single", "-d", "single", p],
        ),
        _ => unreachable!(),
    };
    {
        let m = Mounted::new(&img, &dir.join(format!("{kind}-mnt")), "loop");
        sh("cp", &["-a", "/usr/include", m.0.to_str().unwrap()]);
    }
    // `mount -o loop` lets go of its loop device after umount returns (autoclear runs in a
    // work item): wait until nothing is backed by the image any more, so that its last writes
    // are in before the tests take its checksum (under load the checksum once changed between
    // two readings).
    for _ in 0..200 {
        let out = Command::new("losetup")
            .arg("-j")
            .arg(&img)
            .output()
            .unwrap();
        if out.stdout.is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    sh("sync", &[]);
    img
}

fn predict_json(source: &Path, extra: &[&str]) -> serde_json::Value {
    let before = sha256(source);
    let json = source.with_extension("json");
    let workdir = source.parent().unwrap();
    let mut args = vec![
        "fsck-predict",
        source.to_str().unwrap(),
        "--device",
        "sata-400g-2007,ssd-nvme-2024",
        "--json",
        json.to_str().unwrap(),
        "--workdir",
        workdir.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let out = layoutlab(&args);
    assert!(
        out.status.success(),
        "fsck-predict {}: {}",
        source.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        sha256(source),
        before,
        "SOURCE changed: {}",
        source.display()
    );
    serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap()
}

fn phases(v: &serde_json::Value) -> Vec<String> {
    v["predictions"][0]["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["phase"].as_str().unwrap().to_string())
        .collect()
}

fn check_report(v: &serde_json::Value, fs: &str, checker: &str, want_phases: &[&str]) {
    assert_eq!(v["fs"], fs);
    assert_eq!(v["checker"], checker);
    assert_eq!(v["clean"], true, "{v}");
    assert!(v["peak_memory_mb"].as_f64().unwrap() > 0.0);
    assert!(v["requests"].as_u64().unwrap() > 20, "{v}");
    // The loop device presented the first preset's (a disk's) rotational queue.
    assert_eq!(v["capture_queue"]["rotational"], true, "{v}");
    let preds = v["predictions"].as_array().unwrap();
    assert_eq!(preds.len(), 2);
    let (hdd, ssd) = (&preds[0], &preds[1]);
    assert_eq!(hdd["device"], "sata-400g-2007");
    // The same requests cost more on a 2007 disk than on a 2024 NVMe drive.
    assert!(
        hdd["total_seconds"].as_f64().unwrap() > 3.0 * ssd["total_seconds"].as_f64().unwrap(),
        "{v}"
    );
    // Phases add up to the total, and every request is in one.
    let sum: f64 = hdd["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["seconds"].as_f64().unwrap())
        .sum();
    assert!((sum - hdd["total_seconds"].as_f64().unwrap()).abs() < 1e-6);
    let reqs: u64 = hdd["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["requests"].as_u64().unwrap())
        .sum();
    assert_eq!(reqs, v["requests"].as_u64().unwrap());
    let got = phases(v);
    for p in want_phases {
        assert!(got.iter().any(|g| g == p), "phase {p} missing in {got:?}");
    }
}

#[test]
fn real_trees_on_ext4_xfs_btrfs_and_their_metadata_images() {
    if !is_root() {
        eprintln!("SKIP real_trees_on_ext4_xfs_btrfs_and_their_metadata_images: needs root");
        return;
    }
    let s = Scratch::new("trees");
    let d = &s.0;

    let ext4 = populated(d, "ext4");
    let v = predict_json(&ext4, &[]);
    check_report(&v, "ext", "e2fsck", &["1", "2"]);
    assert_eq!(v["format"], "ext");
    let qcow = d.join("ext4.qcow2");
    sh(
        "e2image",
        &["-Q", ext4.to_str().unwrap(), qcow.to_str().unwrap()],
    );
    let vq = predict_json(&qcow, &[]);
    check_report(&vq, "ext", "e2fsck", &["1", "2"]);
    assert_eq!(vq["format"], "ext-qcow2");
    // The metadata image holds what e2fsck reads, so its check reads about what the image's
    // does. Not exactly: e2fsck's prefetch and the kernel's read-ahead cut and extend the
    // reads by how fast each loop device answers (docs/replay.md, "The capture device"); on
    // this machine 43-49 requests and 6.4-8.7 MB either way, the same when it was quiet.
    for key in ["requests", "mb_read"] {
        let (q, i) = (vq[key].as_f64().unwrap(), v[key].as_f64().unwrap());
        assert!(
            q > 0.0 && (0.5..=2.0).contains(&(q / i)),
            "{key}: {q} vs {i}"
        );
    }
    // The same tree laid out again by two policies: each image is e2fsck-clean, predicted on
    // the same presets, and left nowhere.
    let vr = predict_json(&ext4, &["--relayout", "ext4-2009,ext3-2007"]);
    let rl = vr["relayout"].as_array().unwrap();
    assert_eq!(rl.len(), 2);
    for (r, policy) in rl.iter().zip(["ext4-2009", "ext3-2007"]) {
        assert_eq!(r["policy"], policy);
        assert_eq!(r["fsck_clean"], true, "{r}");
        assert!(r["requests"].as_u64().unwrap() > 10);
        assert_eq!(r["predictions"].as_array().unwrap().len(), 2);
        // Today's mke2fs turns on metadata_csum; the layout model places its directory-block
        // tails (since the ext4-kernel policy), so the relaid image keeps it, and every
        // feature it leaves out is named.
        let left_out = r["features_left_out"].as_array().unwrap();
        assert!(
            !left_out
                .iter()
                .any(|f| f == "metadata_csum" || f == "extent"),
            "{left_out:?}"
        );
    }
    // Block maps put indirect blocks among the data: ext3-2007's check reads more requests.
    assert!(
        rl[1]["requests"].as_u64() > rl[0]["requests"].as_u64(),
        "{vr}"
    );
    let out = layoutlab(&["fsck-predict", ext4.to_str().unwrap(), "--relayout", "ext9"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("ext9") && err.contains("ext4-2009"), "{err}");
    let raw = d.join("ext4.e2i");
    sh(
        "e2image",
        &["-r", ext4.to_str().unwrap(), raw.to_str().unwrap()],
    );
    check_report(&predict_json(&raw, &[]), "ext", "e2fsck", &["1", "2"]);

    let xfs = populated(d, "xfs");
    check_report(&predict_json(&xfs, &[]), "xfs", "xfs_repair", &["2", "3"]);
    let md = d.join("xfs.metadump");
    sh(
        "xfs_metadump",
        &[xfs.to_str().unwrap(), md.to_str().unwrap()],
    );
    let out = layoutlab(&[
        "fsck-predict",
        md.to_str().unwrap(),
        "--relayout",
        "ext4-2009",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("ext2/3/4 trees only"));
    let vm = predict_json(&md, &[]);
    check_report(&vm, "xfs", "xfs_repair", &["2", "3"]);
    assert_eq!(vm["format"], "xfs-metadump");

    let btrfs = populated(d, "btrfs");
    check_report(
        &predict_json(&btrfs, &[]),
        "btrfs",
        "btrfs check",
        &["1", "2"],
    );
    let bi = d.join("btrfs.bimg");
    sh(
        "btrfs-image",
        &[btrfs.to_str().unwrap(), bi.to_str().unwrap()],
    );
    let vb = predict_json(&bi, &[]);
    check_report(&vb, "btrfs", "btrfs check", &["1", "2"]);
    assert_eq!(vb["format"], "btrfs-image");

    // Nothing of ours is left: no loop device over anything here, and of the work directory
    // (where dumps were restored) only what the test made.
    let loops = sh("losetup", &["-a"]);
    assert!(!loops.contains(d.to_str().unwrap()), "{loops}");
    let mut left: Vec<String> = std::fs::read_dir(d)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.ends_with(".json"))
        .collect();
    left.sort();
    assert_eq!(
        left,
        [
            "btrfs-mnt",
            "btrfs.bimg",
            "btrfs.img",
            "ext4-mnt",
            "ext4.e2i",
            "ext4.img",
            "ext4.qcow2",
            "xfs-mnt",
            "xfs.img",
            "xfs.metadump"
        ]
    );
}

#[test]
fn a_block_device_a_corrupted_image_and_a_mounted_one() {
    if !is_root() {
        eprintln!("SKIP a_block_device_a_corrupted_image_and_a_mounted_one: needs root");
        return;
    }
    let s = Scratch::new("dev");
    let d = &s.0;
    let img = d.join("fs.img");
    std::fs::File::create(&img)
        .unwrap()
        .set_len(256 << 20)
        .unwrap();
    let p = img.to_str().unwrap();
    sh("mkfs.ext4", &["-q", "-F", p]);
    {
        let m = Mounted::new(&img, &d.join("mnt"), "loop");
        sh("cp", &["-a", "/usr/include/linux", m.0.to_str().unwrap()]);
    }

    // A block device: SOURCE is the test's own read-only loop device.
    let dev = sh("losetup", &["-r", "-f", "--show", p]).trim().to_string();
    struct Detach(String);
    impl Drop for Detach {
        fn drop(&mut self) {
            let _ = Command::new("losetup").args(["-d", &self.0]).status();
        }
    }
    let guard = Detach(dev.clone());
    let v = predict_json(Path::new(&dev), &[]);
    check_report(&v, "ext", "e2fsck", &["1", "2"]);
    assert_eq!(v["mounted"], false);

    // Mounted: refused, nothing attached; with --allow-mounted, predicted and marked.
    {
        let _m = Mounted::new(Path::new(&dev), &d.join("mnt2"), "ro");
        let out = layoutlab(&["fsck-predict", &dev, "--device", "ssd-nvme-2024"]);
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("is mounted") && err.contains("--allow-mounted"),
            "{err}"
        );
        // No loop device of ours over it (other tests attach loop devices at the same time).
        assert_eq!(sh("losetup", &["-j", &dev]), "");
        let v = predict_json(Path::new(&dev), &["--allow-mounted"]);
        assert_eq!(v["mounted"], true);
        // The image file behind the mounted loop device counts as mounted too.
        let out = layoutlab(&["fsck-predict", p, "--device", "ssd-nvme-2024"]);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    drop(guard);

    // Corrupted: a directory's link count set wrong. e2fsck -n finds it; the prediction is
    // still reported, marked.
    sh("debugfs", &["-w", "-R", "sif /linux links_count 7", p]);
    let out = layoutlab(&["fsck-predict", p, "--device", "sata-400g-2007"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("PROBLEMS FOUND (exit 4)"), "{text}");
    assert!(
        text.contains("sata-400g-2007:") && text.contains("predicted"),
        "{text}"
    );
    let v = predict_json(&img, &[]);
    assert_eq!(v["clean"], false);
    assert_eq!(v["exit_code"], 4);
    assert!(v["predictions"][0]["total_seconds"].as_f64().unwrap() > 0.0);
}

/// `--e2fsck VERSION` (docs/fsck-predict.md): a period release checks an ext SOURCE whose
/// features it knows (an ext3 made by today's mke2fs: 1.41.4 checks it clean, and the report
/// names it and its `-tt` peak memory); today's ext4 (64bit, metadata_csum, ...) it refuses,
/// and the error carries its words, with SOURCE unchanged.
#[test]
fn a_period_e2fsck_checks_what_it_knows_and_refuses_what_it_does_not() {
    if !is_root() {
        eprintln!(
            "SKIP a_period_e2fsck_checks_what_it_knows_and_refuses_what_it_does_not: needs root"
        );
        return;
    }
    let s = Scratch::new("period");
    let image = |kind: &str| -> PathBuf {
        let img = s.0.join(format!("{kind}.img"));
        std::fs::File::create(&img)
            .unwrap()
            .set_len(256 << 20)
            .unwrap();
        sh(
            &format!("mkfs.{kind}"),
            &["-q", "-F", img.to_str().unwrap()],
        );
        img
    };
    let ext3 = image("ext3");
    let today = predict_json(&ext3, &[]);
    let v = predict_json(&ext3, &["--e2fsck", "1.41.4"]);
    check_report(&v, "ext", "e2fsck", &["1"]);
    assert_eq!(today["e2fsck"], "today");
    assert_eq!(v["e2fsck"], "1.41.4", "{v}");
    assert_eq!(v["clean"], true, "{v}");
    assert_eq!(v["peak_memory_source"], "e2fsck -tt");
    assert!(v["peak_memory_mb"].as_f64().unwrap() > 0.0, "{v}");

    let ext4 = image("ext4");
    let before = sha256(&ext4);
    let out = layoutlab(&[
        "fsck-predict",
        ext4.to_str().unwrap(),
        "--e2fsck",
        "1.41.4",
        "--workdir",
        s.0.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("unsupported feature") && err.contains("1.41.4"),
        "{err}"
    );
    assert_eq!(sha256(&ext4), before, "SOURCE changed");
}

#[test]
fn what_is_not_a_file_system_is_a_clear_error_that_changes_nothing() {
    let s = Scratch::new("bad");
    let junk = s.0.join("notes.txt");
    std::fs::write(&junk, "not a file system\n".repeat(10_000)).unwrap();
    let out = layoutlab(&["fsck-predict", junk.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("not a file system or metadata image")
            && err.contains("xfs_metadump")
            && err.contains("btrfs-image"),
        "{err}"
    );
    let out = layoutlab(&["fsck-predict", s.0.join("missing.img").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing.img"));
    let out = layoutlab(&["fsck-predict", s.0.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("neither a block device nor a file"));

    // An unknown preset names the valid ones, before anything is attached.
    let img = s.0.join("e.img");
    std::fs::File::create(&img)
        .unwrap()
        .set_len(64 << 20)
        .unwrap();
    sh("mkfs.ext4", &["-q", "-F", img.to_str().unwrap()]);
    let out = layoutlab(&["fsck-predict", img.to_str().unwrap(), "--device", "floppy"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("floppy") && err.contains("sata-400g-2007"),
        "{err}"
    );
    assert_eq!(std::fs::read_dir(&s.0).unwrap().count(), 2);
}

#[test]
fn without_root_it_says_what_needs_root_and_attaches_nothing() {
    if !is_root() {
        // As a user, the command itself is the test.
        let s = Scratch::new("user");
        let img = s.0.join("e.img");
        std::fs::File::create(&img)
            .unwrap()
            .set_len(64 << 20)
            .unwrap();
        sh("mkfs.ext4", &["-q", "-F", img.to_str().unwrap()]);
        let out = layoutlab(&["fsck-predict", img.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&out.stderr).contains("root"));
        return;
    }
    let s = Scratch::new("nobody");
    std::fs::set_permissions(&s.0, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let img = s.0.join("e.img");
    std::fs::File::create(&img)
        .unwrap()
        .set_len(64 << 20)
        .unwrap();
    sh("mkfs.ext4", &["-q", "-F", img.to_str().unwrap()]);
    std::fs::set_permissions(&img, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    let before = sha256(&img);
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_layoutlab"))
        .args(["fsck-predict", img.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("root") && err.contains("loop device"), "{err}");
    assert_eq!(sh("losetup", &["-j", img.to_str().unwrap()]), "");
    assert_eq!(sha256(&img), before);
}

/// `--like EXPERIMENT` captures as that fsck experiment does (its queue: read-ahead 128 KiB and
/// requests up to 512 KiB for ext4-fsck-allocator, where the default capture keeps the
/// preset's), and prices on its drive unless --device says otherwise; an experiment of another
/// operation, or none, is refused before anything is attached.
#[test]
fn like_an_experiment_captures_as_it_does_and_prices_on_its_drive() {
    let s = Scratch::new("like");
    let img = s.0.join("ext3.img");
    std::fs::File::create(&img)
        .unwrap()
        .set_len(256 << 20)
        .unwrap();
    sh("mkfs.ext3", &["-q", "-F", img.to_str().unwrap()]);
    let p = img.to_str().unwrap();
    let out = layoutlab(&["fsck-predict", p, "--like", "large-delete"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("fsck experiment"), "{err}");
    let out = layoutlab(&["fsck-predict", p, "--like", "no-such-experiment"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("ext4-fsck-allocator"), "{err}");
    if !is_root() {
        eprintln!(
            "SKIP like_an_experiment_captures_as_it_does_and_prices_on_its_drive: needs root"
        );
        return;
    }
    let json = s.0.join("like.json");
    let out = layoutlab(&[
        "fsck-predict",
        p,
        "--like",
        "ext4-fsck-allocator",
        "--e2fsck",
        "1.41.4",
        "--json",
        json.to_str().unwrap(),
        "--workdir",
        s.0.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["clean"], true, "{v}");
    let devices: Vec<&str> = v["predictions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["device"].as_str().unwrap())
        .collect();
    assert_eq!(devices, ["sata-160g-2009"]);
    let q = &v["capture_queue"];
    assert_eq!(q["read_ahead_kb"], 128, "{q}");
    assert_eq!(q["max_sectors_kb"], 512, "{q}");
    assert_eq!(q["rotational"], true, "{q}");
    // Without it, the preset's read-ahead: the switch is what moved it.
    let plain = predict_json(&img, &[]);
    assert_ne!(plain["capture_queue"]["read_ahead_kb"], 128, "{plain}");
}
