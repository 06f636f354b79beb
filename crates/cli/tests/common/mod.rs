//! Helpers the `layoutlab` command's test files share: who runs them, scratch directories,
//! and what a run left behind.
#![allow(dead_code)]

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs the `layoutlab` binary built for these tests with `args`.
pub fn layoutlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_layoutlab"))
        .args(args)
        .output()
        .expect("run layoutlab")
}

/// What a command printed on stderr.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Whether the tests run as root (loop devices, mounts, tracefs need it).
pub fn is_root() -> bool {
    unsafe { geteuid() == 0 }
}

extern "C" {
    fn geteuid() -> u32;
}

/// A fresh empty directory for one test: `layoutlab-PREFIX-NAME-PID` in the temp directory.
pub fn scratch(prefix: &str, name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("layoutlab-{prefix}-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The names in `dir` (none when it does not exist).
pub fn entries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Nothing a run made under `dir` (its TMPDIR) is left: no `layoutlab-*` temp path and no loop
/// device backed by a file there; then `dir` itself is removed.
pub fn assert_nothing_left(dir: &Path) {
    let left: Vec<String> = entries(dir)
        .into_iter()
        .filter(|n| n.starts_with("layoutlab-"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    assert!(loops_under(dir).is_empty(), "{:?}", loops_under(dir));
    std::fs::remove_dir_all(dir).unwrap();
}

/// Loop devices whose backing file lies under `dir`.
pub fn loops_under(dir: &Path) -> Vec<String> {
    let out = Command::new("losetup").arg("-a").output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains(dir.to_str().unwrap()))
        .map(str::to_string)
        .collect()
}

/// `layoutlab reproduce NAME EXTRA... --out DIR/out --json DIR/r.json`: the result JSON, the
/// run's output and its pid (what it made is named after it). Panics with the run's stderr when
/// it fails.
pub fn reproduce_into(dir: &Path, name: &str, extra: &[&str]) -> (Value, Output, u32) {
    reproduce_spawn(dir, name, extra, false)
}

/// [`reproduce_into`] with `TMPDIR` set to `dir`, so that everything the run makes for itself
/// (temp files, loop devices' backing files) lies under `dir` for [`assert_nothing_left`].
pub fn reproduce_under(dir: &Path, name: &str, extra: &[&str]) -> Value {
    reproduce_spawn(dir, name, extra, true).0
}

fn reproduce_spawn(dir: &Path, name: &str, extra: &[&str], tmpdir: bool) -> (Value, Output, u32) {
    let json = dir.join("r.json");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_layoutlab"));
    if tmpdir {
        cmd.env("TMPDIR", dir);
    }
    let child = cmd
        .args(["reproduce", name])
        .args(extra)
        .arg("--out")
        .arg(dir.join("out"))
        .arg("--json")
        .arg(&json)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    (v, o, pid)
}

/// `layoutlab reproduce metacluster-fsck --scale SCALE --json` into `dir` (report in
/// `dir/out`): the result JSON. Panics with the run's stderr when it fails.
pub fn fsck_json(scale: &str, dir: &Path) -> serde_json::Value {
    reproduce_into(dir, "metacluster-fsck", &["--scale", scale]).0
}

/// [`reproduce_into`] a fresh `scratch(prefix, tag)`: the result JSON, what the run printed,
/// and the directory (the caller removes it).
pub fn reproduce_in(
    prefix: &str,
    tag: &str,
    name: &str,
    extra: &[&str],
) -> (Value, String, PathBuf) {
    let dir = scratch(prefix, tag);
    let (v, o, _) = reproduce_into(&dir, name, extra);
    (v, String::from_utf8_lossy(&o.stdout).into_owned(), dir)
}
