//! Helpers the experiments crate's test files share: the one root check of the tests that
//! need loop devices, mounts, zram, tracefs or memory cgroups.
#![allow(dead_code)]

pub mod ext4_2007;

/// True when the tests run as root, with the rig's signal handlers installed (so an
/// interrupted test leaves no device or mount behind; a failing one unwinds through the
/// rig's guards, which undo what they made); otherwise prints
/// `SKIP TEST: needs root (NEEDS)` and returns false, so the skip is never silent.
pub fn root_or_skip(test: &str, needs: &str) -> bool {
    if layoutlab_rig::is_root() {
        // Not the panic hook: it ends the process with 101 on the first failing assertion, and
        // libtest's capture swallows the message it printed (a CI run kept nothing but
        // "exit status 101").
        layoutlab_rig::cleanup::install_signal_handlers();
        return true;
    }
    eprintln!("SKIP {test}: needs root ({needs})");
    false
}
