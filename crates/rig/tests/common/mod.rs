//! Shared helpers of the root-only rig tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// True when root; otherwise prints why the test is skipped.
pub fn root_or_skip(test: &str) -> bool {
    if layoutlab_rig::is_root() {
        return true;
    }
    eprintln!("SKIP {test}: needs root (loop devices, mounts, tracefs)");
    false
}

/// A fresh path for a scratch file of this test process.
pub fn scratch(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("rig-test-{}-{name}", std::process::id()))
}

/// The loop devices `losetup -j` lists for `file` (empty when none is attached).
pub fn loops_backed_by(file: &Path) -> String {
    let out = Command::new("losetup")
        .arg("-j")
        .arg(file)
        .output()
        .expect("losetup runs");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Whether `target` is a mount point now.
pub fn is_mounted(target: &Path) -> bool {
    let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let target = target.to_string_lossy();
    text.lines()
        .any(|l| l.split_whitespace().nth(4) == Some(&*target))
}

/// Mount points of tracefs now.
pub fn tracefs_mounts() -> Vec<String> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    text.lines()
        .filter(|l| l.contains(" - tracefs "))
        .filter_map(|l| l.split_whitespace().nth(4).map(str::to_string))
        // Probes of concurrently running tests (tracefs_state) come and go.
        .filter(|m| !m.contains("rig-test-"))
        .collect()
}

/// The global tracing state the rig must leave as it found it, read through a tracefs mount
/// of the test's own, plus the instances whose name starts with `instance_prefix`.
pub fn tracefs_state(instance_prefix: &str) -> Vec<(String, String)> {
    static PROBE: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = PROBE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = scratch(&format!("tracefs-probe-{n}"));
    std::fs::create_dir_all(&dir).unwrap();
    let ok = Command::new("mount")
        .args(["-t", "tracefs", "nodev"])
        .arg(&dir)
        .status()
        .unwrap();
    assert!(ok.success(), "mount tracefs for the probe");
    let mut state = Vec::new();
    for file in [
        "tracing_on",
        "trace_clock",
        "buffer_size_kb",
        "set_event",
        "current_tracer",
    ] {
        state.push((
            file.to_string(),
            std::fs::read_to_string(dir.join(file)).unwrap(),
        ));
    }
    for event in ["block_rq_issue", "block_rq_complete", "block_bio_queue"] {
        for file in ["enable", "filter"] {
            let path = dir.join("events/block").join(event).join(file);
            state.push((
                format!("{event}/{file}"),
                std::fs::read_to_string(path).unwrap(),
            ));
        }
    }
    let mut ours: Vec<String> = std::fs::read_dir(dir.join("instances"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(instance_prefix))
        .collect();
    ours.sort();
    state.push(("instances".into(), ours.join(",")));
    let ok = Command::new("umount").arg(&dir).status().unwrap();
    assert!(ok.success());
    std::fs::remove_dir(&dir).unwrap();
    state
}

/// Runs a shell command, panicking with its output if it fails.
pub fn sh(script: &str) -> String {
    let out = Command::new("sh").arg("-c").arg(script).output().unwrap();
    assert!(
        out.status.success(),
        "{script}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// An ext3 image of `bytes` with a few hundred files and directories (so e2fsck's pass 2 has
/// work, and files past the 12 direct blocks have indirect blocks); its inode tables, what
/// e2fsck reads most of, grow with `bytes`.
pub fn populated_ext3_of(name: &str, bytes: u64) -> layoutlab_rig::TempFile {
    use layoutlab_rig::{mkfs, FsKind, LoopDevice, Mount, TempFile};
    let image = TempFile::create_sparse(&scratch(name), bytes).unwrap();
    mkfs(FsKind::Ext3, image.path(), &["-b", "4096"]).unwrap();
    let dev = LoopDevice::attach(image.path(), false).unwrap();
    let mount = Mount::new(dev.path(), None, "ext3", false, "").unwrap();
    for d in 0..20 {
        let dir = mount.target().join(format!("d{d}"));
        std::fs::create_dir(&dir).unwrap();
        for f in 0..20 {
            // Up to 80 KiB: past the 12 direct blocks.
            std::fs::write(dir.join(format!("f{f}")), vec![d as u8; 4096 * (f + 1)]).unwrap();
        }
    }
    drop(mount);
    drop(dev);
    image
}
