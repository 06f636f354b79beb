//! One module per command group.

pub mod age_check;
pub mod age_kernel;
pub mod bench;
pub mod clean;
pub mod device;
pub mod emulate;
pub mod fsck_predict;
pub mod image;
pub mod metrics;
pub mod overhead;
pub mod plan;
pub mod reproduce;
pub mod sweep;
pub mod trace;
pub mod workload;

pub use layoutlab_experiments::output::{emit, write_json, Human};
pub use layoutlab_experiments::support::parse_size;

use std::process::{Child, Command};
use std::sync::{Arc, Mutex};

/// Spawns `cmd` and adds its pid to `live` as one step that a SIGINT/SIGTERM cannot split
/// (the rig's `creating`): the signal's cleanup, which stops every pid in `live`, either sees
/// this child or runs before it exists, and then it is never started. Without that, a Ctrl-C
/// arriving between `spawn` and the record left the child running after we exited.
pub(crate) fn spawn_child(
    cmd: &mut Command,
    live: &Arc<Mutex<Vec<u32>>>,
) -> std::io::Result<Child> {
    layoutlab_rig::cleanup::creating(|| {
        let child = cmd.spawn()?;
        live.lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(child.id());
        Ok(child)
    })
}

/// Stops the children in `pids` (SIGTERM: each tears down its own devices) and waits up to a
/// minute for them to be gone (exited, or a zombie: their parent reaps them).
pub(crate) fn stop_children(pids: &[u32]) {
    for pid in pids {
        let _ = Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status();
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    for pid in pids {
        while std::time::Instant::now() < deadline {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let st = stat
                .rsplit_once(')')
                .map(|(_, r)| r.trim_start().to_string());
            if stat.is_empty() || st.is_some_and(|r| r.starts_with('Z') || r.starts_with('X')) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes_are_binary_units() {
        assert_eq!(parse_size("4k"), Ok(4096));
        assert_eq!(parse_size("16g"), Ok(16 << 30));
        assert_eq!(parse_size("512"), Ok(512));
        assert_eq!(parse_size("1.5M"), Ok(1_572_864));
        assert_eq!(parse_size("256KiB"), Ok(256 << 10));
        assert!(parse_size("4q").is_err());
        assert!(parse_size("x").is_err());
        assert!(parse_size("-1k").is_err());
    }
}
