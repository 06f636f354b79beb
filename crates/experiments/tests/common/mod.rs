//! Helpers the experiments crate's test files share: the one root check of the tests that
//! need loop devices, mounts, zram, tracefs or memory cgroups.
#![allow(dead_code)]

pub mod ext4_2007;

/// True when the tests run as root, with the rig's cleanup installed (so a failing or
/// interrupted test leaves no device or mount behind); otherwise prints
/// `SKIP TEST: needs root (NEEDS)` and returns false, so the skip is never silent.
pub fn root_or_skip(test: &str, needs: &str) -> bool {
    if layoutlab_rig::is_root() {
        layoutlab_rig::cleanup::install();
        return true;
    }
    eprintln!("SKIP {test}: needs root ({needs})");
    false
}
