//! The one way the rig starts a program under tracing: e2fsck (`fsck.rs`) and the other
//! checkers (`checker.rs`) both go through [`spawn_traced`].
//!
//! What every traced child needs, in this order, is owned here: between fork and exec it dies
//! with the parent (`die_with_parent`), runs the caller's own set-up (which descriptor the
//! trace marker becomes, a one-CPU view, a real-time class), and joins the session's CPU
//! accounting last, so the accounting starts as close to exec as it can. Spawning and
//! registering its kill are one step (`cleanup::creating`): a signal in between left the child
//! running, holding the loop device, until the parent-death signal reached it, after our exit.
//! What differs (the arguments, how the output is read, how the child is waited for) stays
//! with the caller, as fio's ioengines own only what differs from the core's loop.

use crate::cleanup::{self, CleanupId};
use crate::error::{Result, RigError};
use crate::system::die_with_parent;
use crate::tracefs::TracefsSession;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};

/// A traced child the rig started: the process and the cleanup that kills it.
pub(crate) struct TracedChild {
    /// The running program.
    pub child: Child,
    /// Kills and waits for the child on a signal or panic; [`cleanup::forget`] it once the
    /// child has been waited for.
    pub kill: CleanupId,
}

/// Starts `command` as the traced program of `session` and registers its kill (labelled
/// `"{what} process PID"`). `marker` is the session's trace marker: the child gets it as the
/// descriptor it is given to `setup`, and our copy is closed once the child runs (so the
/// marker's last writer is the child). A spawn failure is [`RigError::Command`] with the OS
/// error followed by `hint` (where the program comes from), shown as `shown`.
///
/// # Safety
/// `setup` runs in the child between fork and exec: it must make only async-signal-safe calls
/// (raw `libc`, no allocation, no locks), as [`CommandExt::pre_exec`] requires.
pub(crate) unsafe fn spawn_traced(
    session: &TracefsSession,
    mut command: Command,
    marker: OwnedFd,
    what: &str,
    shown: &str,
    hint: &str,
    mut setup: impl FnMut(RawFd) -> std::io::Result<()> + Send + Sync + 'static,
) -> Result<TracedChild> {
    let marker_fd = marker.as_raw_fd();
    let follower = session.cpu_follower();
    let parent_pid = std::process::id() as libc::pid_t;
    command.pre_exec(move || {
        // A checker never lives on holding the rig's device when the rig is SIGKILLed.
        die_with_parent(parent_pid)?;
        setup(marker_fd)?;
        // Last, so the accounting starts as close to exec as it can.
        if let Some(follower) = &follower {
            follower.follow_self()?;
        }
        Ok(())
    });
    let (child, kill) = cleanup::creating(|| {
        let child = command.spawn().map_err(|e| RigError::Command {
            program: shown.to_string(),
            status: "not started".into(),
            stderr: format!("{e}{hint}"),
        })?;
        // Registered after the session, so on a signal it runs first: a SIGTERM sent to us
        // alone must not leave the child holding the loop device and the tracing instance.
        let pid = child.id() as libc::pid_t;
        let kill = cleanup::register(format!("{what} process {pid}"), move || {
            unsafe { libc::kill(pid, libc::SIGKILL) };
            crate::fsck::wait_until_exited(pid);
        });
        Ok::<_, RigError>((child, kill))
    })?;
    drop(marker);
    session.followed(child.id());
    Ok(TracedChild { child, kill })
}
