//! A file-system checker other than e2fsck (`xfs_repair -n`, `btrfs check --readonly`) run
//! under tracing, each request tagged with the checker's phase.
//!
//! These checkers have no progress descriptor like e2fsck's `-C FD`; they announce phases in
//! their ordinary output (`Phase 3 - for each AG...`, `[2/7] checking extents`), on stderr,
//! unbuffered. So both stdout and stderr of the child are the tracing instance's own
//! `trace_marker`: every write becomes a marker event at the instant the checker makes it, in
//! order with the requests it issues next, and the rig reads the phases (and the whole output)
//! back from the trace ([`crate::ProgressStyle`]). A pipe read by a thread of ours would tag
//! requests late (see `fsck.rs`). Peak memory is the child's `ru_maxrss` from `wait4`.

use crate::child::{spawn_traced, TracedChild};
use crate::cleanup;
use crate::error::{Result, RigError};
use crate::system::require_root;
use crate::tracefs::{Capture, TraceOptions, TracefsSession};
use crate::tracefs_text::ProgressStyle;
use std::path::Path;
use std::process::{Command, Stdio};

/// One traced checker run.
#[derive(Debug)]
pub struct CheckerRun {
    /// The checker's exit status.
    pub exit_code: i32,
    /// The requests, tagged `setup` before the first phase, then by phase.
    pub capture: Capture,
    /// Peak resident memory of the checker (its `ru_maxrss`), KiB.
    pub peak_rss_kib: u64,
}

/// Runs `program args... device_path` with its output into the trace marker, capturing the
/// block requests of `dev` (the same device) tagged in `style`. Root only. The exit status is
/// returned, not judged: what it means is the checker's business.
pub fn run_checker_traced(
    program: &str,
    args: &[&str],
    device_path: &Path,
    dev: (u32, u32),
    style: ProgressStyle,
    trace: &TraceOptions,
) -> Result<CheckerRun> {
    require_root("tracing a checker's block requests")?;
    let mut session = TracefsSession::start(dev, trace)?;
    session.set_progress_style(style);
    session.mark("setup")?;
    let mut command = Command::new(program);
    command
        .args(args)
        .arg(device_path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let shown = format!("{program} {} {}", args.join(" "), device_path.display());
    // SAFETY: the set-up makes only raw libc calls (dup2).
    let TracedChild {
        child,
        kill: kill_child,
    } = unsafe {
        spawn_traced(
            &session,
            command,
            session.marker_fd()?,
            program,
            &shown,
            "",
            move |marker| {
                // dup2 clears close-on-exec on the new descriptors.
                if libc::dup2(marker, 1) < 0 || libc::dup2(marker, 2) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            },
        )?
    };
    let pid = child.id() as libc::pid_t;
    // wait4 rather than Child::wait: it also gives the child's peak memory. The Child is
    // dropped afterwards (dropping it neither waits nor kills).
    let mut status: libc::c_int = 0;
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let waited = loop {
        let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if rc >= 0 {
            break Ok(());
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            break Err(e);
        }
    };
    cleanup::forget(&kill_child);
    drop(child);
    waited.map_err(|e| RigError::io(format!("wait for {shown}"), e))?;
    let capture = session.stop()?;
    if !libc::WIFEXITED(status) {
        return Err(RigError::Command {
            program: shown,
            status: format!("ended by signal {}", libc::WTERMSIG(status)),
            stderr: capture.output.trim().to_string(),
        });
    }
    Ok(CheckerRun {
        exit_code: libc::WEXITSTATUS(status),
        capture,
        peak_rss_kib: usage.ru_maxrss.max(0) as u64,
    })
}
