//! The real `e2fsck -fn -tt -C 3` run under tracing, each request tagged with its pass.
//!
//! e2fsck writes progress lines `PASS CUR MAX DEVICE` to the file descriptor given to `-C` with
//! one write(2) each (e2fsck/unix.c `e2fsck_update_progress`), starting every pass with
//! `CUR = 0`. A thread reads them from a pipe and writes a tracefs marker (`pass1`, `pass2`, …)
//! the moment the pass number changes, so requests that follow carry that pass. Requests before
//! pass 1 (superblock, group descriptors, journal) carry `setup`.

use crate::error::{Result, RigError};
use crate::fsck_times::{parse_fsck_times, FsckTimes};
use crate::system::require_root;
use crate::tracefs::{monotonic_ns, Capture, TraceOptions, TracefsSession};
use std::io::{BufRead, BufReader, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// How to run e2fsck.
#[derive(Clone, Debug)]
pub struct FsckOptions {
    /// The e2fsck program (default `e2fsck` on `PATH`).
    pub e2fsck: PathBuf,
    /// Extra arguments, after `-fn -tt -C 3` and before the device.
    pub extra_args: Vec<String>,
    /// The capture.
    pub trace: TraceOptions,
}

impl Default for FsckOptions {
    fn default() -> Self {
        FsckOptions {
            e2fsck: PathBuf::from("e2fsck"),
            extra_args: Vec::new(),
            trace: TraceOptions::default(),
        }
    }
}

/// The moment e2fsck reported a new pass.
#[derive(Clone, Debug, PartialEq)]
pub struct ProgressChange {
    /// The pass number e2fsck reported.
    pub pass: u32,
    /// When the rig read it, ns since the trace's origin.
    pub at_ns: u64,
}

/// One traced e2fsck run.
#[derive(Debug)]
pub struct FsckRun {
    /// e2fsck's exit status: with `-n`, 0 = clean, 4 = errors left uncorrected (1 = fixed
    /// should not happen with `-n`).
    pub exit_code: i32,
    /// The `-tt` resource tracking, per pass and in total.
    pub times: FsckTimes,
    /// The requests, tagged `setup`, `pass1` … `pass5`.
    pub capture: Capture,
    /// The pass changes in order.
    pub progress: Vec<ProgressChange>,
    /// e2fsck's standard output (the `-tt` text and its summary).
    pub stdout: String,
    /// e2fsck's standard error.
    pub stderr: String,
}

impl FsckRun {
    /// Whether e2fsck found the file system clean (exit 0).
    pub fn clean(&self) -> bool {
        self.exit_code == 0
    }
}

/// Parses one progress line `PASS CUR MAX DEVICE`.
fn parse_progress(line: &str) -> Option<u32> {
    let mut fields = line.split_whitespace();
    let pass = fields.next()?.parse().ok()?;
    fields.next()?.parse::<u64>().ok()?;
    fields.next()?.parse::<u64>().ok()?;
    Some(pass)
}

/// Runs the real `e2fsck -fn -tt -C 3 [extra] DEVICE` on `device_path` while capturing the
/// block requests of `dev` = (major, minor), the same device. Root only. An exit status of 8 or
/// more (operational error, usage, cancelled, library error) is an error with e2fsck's output.
pub fn run_e2fsck_traced(
    device_path: &Path,
    dev: (u32, u32),
    opts: &FsckOptions,
) -> Result<FsckRun> {
    require_root("tracing e2fsck's block requests")?;
    let session = TracefsSession::start(dev, &opts.trace)?;
    let origin_ns = monotonic_ns();
    session.mark("setup")?;

    let mut fds = [-1; 2];
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(RigError::last_os("pipe2 for e2fsck progress"));
    }
    let (read_end, write_end) =
        unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    let child_fd = write_end.as_raw_fd();
    let mut command = Command::new(&opts.e2fsck);
    command
        .args(["-fn", "-tt", "-C", "3"])
        .args(&opts.extra_args)
        .arg(device_path)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    unsafe {
        command.pre_exec(move || {
            // dup2 gives fd 3 without close-on-exec; if the pipe already is fd 3, clear it.
            if child_fd == 3 {
                let flags = libc::fcntl(3, libc::F_GETFD);
                if flags < 0 || libc::fcntl(3, libc::F_SETFD, flags & !libc::FD_CLOEXEC) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            } else if libc::dup2(child_fd, 3) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let shown = format!(
        "{} -fn -tt -C 3 {}",
        opts.e2fsck.display(),
        device_path.display()
    );
    let child = command.spawn().map_err(|e| RigError::Command {
        program: shown.clone(),
        status: "not started".into(),
        stderr: format!("{e} (e2fsck comes with the Debian package e2fsprogs)"),
    })?;
    drop(write_end);

    let marker = session.marker();
    let progress_thread = std::thread::Builder::new()
        .name("rig-e2fsck-progress".into())
        .spawn(move || -> Result<Vec<ProgressChange>> {
            let mut changes: Vec<ProgressChange> = Vec::new();
            let mut reader = BufReader::new(std::fs::File::from(read_end));
            let mut line = String::new();
            loop {
                line.clear();
                if reader
                    .read_line(&mut line)
                    .map_err(|e| RigError::io("read e2fsck progress", e))?
                    == 0
                {
                    break;
                }
                let Some(pass) = parse_progress(&line) else {
                    continue;
                };
                if changes.last().map(|c| c.pass) != Some(pass) {
                    marker.mark(&format!("pass{pass}"))?;
                    changes.push(ProgressChange {
                        pass,
                        at_ns: monotonic_ns().saturating_sub(origin_ns),
                    });
                }
            }
            let mut rest = Vec::new();
            let _ = reader.read_to_end(&mut rest);
            Ok(changes)
        })
        .map_err(|e| RigError::io("start the progress reader thread", e))?;

    let output = child
        .wait_with_output()
        .map_err(|e| RigError::io(format!("wait for {shown}"), e))?;
    let progress = progress_thread
        .join()
        .map_err(|_| RigError::Unsupported("the e2fsck progress reader panicked".into()))??;
    let capture = session.stop()?;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let exit_code = output.status.code().ok_or_else(|| RigError::Command {
        program: shown.clone(),
        status: output.status.to_string(),
        stderr: stderr.trim().to_string(),
    })?;
    if exit_code >= 8 {
        return Err(RigError::Command {
            program: shown,
            status: format!("exit status {exit_code}"),
            stderr: format!("{}\n{}", stdout.trim(), stderr.trim())
                .trim()
                .to_string(),
        });
    }
    let times = parse_fsck_times(&stdout, "e2fsck -tt output")?;
    Ok(FsckRun {
        exit_code,
        times,
        capture,
        progress,
        stdout,
        stderr,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_lines_parse() {
        assert_eq!(parse_progress("1 0 32 /dev/loop0\n"), Some(1));
        assert_eq!(parse_progress("5 65 65 /dev/loop0"), Some(5));
        assert_eq!(parse_progress("garbage"), None);
    }
}
