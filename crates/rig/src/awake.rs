//! Keeps this machine's CPUs out of idle while an emulated device serves a closed-loop
//! capture: one `SCHED_IDLE` spinning thread per CPU, which any other runnable thread displaces
//! at once, so it takes only time the CPU would have spent idle.
//!
//! Why: the pace charges the traced program's CPU time to the model's clock ([`crate::CpuPace`]),
//! so that time must not depend on how busy the machine is. On this KVM guest it did. Measured
//! 2026-11-27 (`tests/load_independence_closed_loop.rs`, fifteen runs each way, load about 1):
//! on a quiet machine e2fsck's task-clock counted 45% (ext3-2007) and 51% (ext3-metacluster)
//! more CPU than the scheduler trace of the same runs, where with two CPU-bound loops beside it
//! the two agreed within 1%. With two `SCHED_IDLE` spinners running through both halves, the
//! counters agreed within 2% as is too, and ext3-metacluster's closed-loop means came within
//! 0.18% of the loaded ones (0.67% without them). So the excess comes from idle vCPUs (a halted
//! vCPU's wake-up, a host core's idle state), not from the program: busy CPUs remove it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// The spinning threads; dropping it stops and joins them.
#[derive(Debug)]
pub struct CpusAwake {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl CpusAwake {
    /// Starts one `SCHED_IDLE` spinner per CPU this process may run on. A thread that cannot
    /// lower itself to `SCHED_IDLE` does not spin (it would compete with real work).
    pub fn start() -> CpusAwake {
        let stop = Arc::new(AtomicBool::new(false));
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let threads = (0..cpus)
            .filter_map(|i| {
                let stop = stop.clone();
                std::thread::Builder::new()
                    .name(format!("layoutlab-awake-{i}"))
                    .spawn(move || {
                        let param = libc::sched_param { sched_priority: 0 };
                        if unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) } != 0 {
                            return;
                        }
                        while !stop.load(Ordering::Relaxed) {
                            std::hint::spin_loop();
                        }
                    })
                    .ok()
            })
            .collect();
        CpusAwake { stop, threads }
    }
}

impl Drop for CpusAwake {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The spinners run at SCHED_IDLE (so they never displace real work) and stop on drop.
    #[test]
    fn spinners_are_idle_class_and_stop_on_drop() {
        let awake = CpusAwake::start();
        assert!(!awake.threads.is_empty());
        std::thread::sleep(std::time::Duration::from_millis(50));
        let me = std::process::id();
        let mut idle_class = 0;
        for entry in std::fs::read_dir(format!("/proc/{me}/task"))
            .unwrap()
            .flatten()
        {
            let tid = entry.file_name();
            let comm = std::fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
            if comm.trim_start().starts_with("layoutlab-awake") {
                let tid: libc::pid_t = tid.to_string_lossy().parse().unwrap();
                assert_eq!(unsafe { libc::sched_getscheduler(tid) }, libc::SCHED_IDLE);
                idle_class += 1;
            }
        }
        assert_eq!(idle_class, awake.threads.len());
        drop(awake);
        let left = std::fs::read_dir(format!("/proc/{me}/task"))
            .unwrap()
            .flatten()
            .filter(|e| {
                std::fs::read_to_string(e.path().join("comm"))
                    .unwrap_or_default()
                    .starts_with("layoutlab-awake")
            })
            .count();
        assert_eq!(left, 0);
    }
}
