//! Keeps this machine's idle CPUs polling instead of halting while a capture runs, through the
//! kernel's PM QoS interface: a process that holds `/dev/cpu_dma_latency` open after writing
//! 0 to it asks every CPU's idle governor for no exit latency, and the kernel withdraws the
//! request when the file is closed, which it also does when the process is killed. Nothing is
//! left behind, and no setting of the machine is written.
//!
//! Why: a traced program on a loop device hands every request to the loop driver's worker
//! thread and sleeps until it completes. On this KVM guest each hand-off that wakes a halted
//! vCPU costs a VM exit; with the idle CPU polling, the waker only sets a flag the poller sees.
//! Measured 2026-11-28 (docs/rig.md, "Idle CPUs that poll"): 4 KiB random reads through a
//! buffered loop device over tmpfs, one synchronous reader, 21-26 k IOPS as is and 42-71 k with
//! the request held; the untraced `e2fsck -fn` of metadata-on-ssd-ext3's ext3-2007 image at
//! scale 0.05 in 29.6-34.0 s as is and 18.1-18.4 s held. The requests stay the same (a test
//! compares them); what moves is only how soon each completes here.
//!
//! [`crate::awake::CpusAwake`] is the heavier tool for the closed loop, whose model clock
//! follows the program's task-clock: its `SCHED_IDLE` spinners keep the vCPUs busy, not only
//! out of halt.

use std::fs::File;
use std::io::{Read, Write};
use std::path::Path;

/// The kernel's PM QoS file for the CPUs' idle exit latency (microseconds, a native `i32`).
const QOS_PATH: &str = "/dev/cpu_dma_latency";

/// A held request for idle CPUs that poll; dropping it withdraws the request.
#[derive(Debug)]
pub struct IdlePoll {
    file: Option<File>,
}

impl IdlePoll {
    /// Asks for no idle exit latency for as long as the value lives. Best effort: where the
    /// file cannot be opened (not root, no such device) nothing is held and
    /// [`IdlePoll::held`] says so; a capture is then only slower, never different.
    pub fn hold() -> IdlePoll {
        IdlePoll::hold_at(Path::new(QOS_PATH))
    }

    fn hold_at(path: &Path) -> IdlePoll {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .and_then(|mut f| f.write_all(&0i32.to_ne_bytes()).map(|()| f))
            .ok();
        IdlePoll { file }
    }

    /// No request held: what a capture that asks for none carries.
    pub fn none() -> IdlePoll {
        IdlePoll { file: None }
    }

    /// Whether the request is held.
    pub fn held(&self) -> bool {
        self.file.is_some()
    }
}

/// The machine's effective idle exit latency target now, in microseconds (the lowest of all
/// requests held), or `None` where it cannot be read.
pub fn idle_latency_target_us() -> Option<i32> {
    let mut file = File::open(QOS_PATH).ok()?;
    let mut buf = [0u8; 4];
    file.read_exact(&mut buf).ok()?;
    Some(i32::from_ne_bytes(buf))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_qos_file_holds_nothing() {
        let held = IdlePoll::hold_at(Path::new("/nonexistent/cpu_dma_latency"));
        assert!(!held.held());
        assert!(!IdlePoll::none().held());
    }

    #[test]
    fn the_request_lasts_as_long_as_the_value() {
        if !crate::is_root() {
            eprintln!("skipped the_request_lasts_as_long_as_the_value: needs root");
            return;
        }
        // Another holder (a second layoutlab) could keep the target at 0 too; then only the
        // held side can be checked.
        let before = idle_latency_target_us().expect("read /dev/cpu_dma_latency as root");
        {
            let held = IdlePoll::hold();
            assert!(held.held(), "root could not hold {QOS_PATH}");
            assert_eq!(idle_latency_target_us(), Some(0));
        }
        if before != 0 {
            assert_eq!(
                idle_latency_target_us(),
                Some(before),
                "the request outlived its value"
            );
        }
    }
}
