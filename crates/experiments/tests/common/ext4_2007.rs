//! What the two `ext4-2007` root tests share (tests/ext4_2007_kernel.rs: the kernel against
//! the window rule; tests/ext4_2007_engine.rs: the kernel against the engine's plan):
//! large-delete's files written by today's kernel on the `ext4-2007` profile exactly as the
//! experiment writes them, and the unit both compare.

use layoutlab_experiments::{kernel_profile, large_delete};
use layoutlab_rig::{Backing, KernelFs, KernelFsOptions};
use std::path::Path;

pub const MIB: u64 = 1 << 20;

/// The unit compared: 8 MiB of 4 KiB blocks, mballoc's largest normalised request.
pub const WINDOW_BLOCKS: u64 = 2048;

/// Windows per file the kernel may place otherwise. Measured 2026-11-27 at load 10-14 (other
/// engineers' builds and root runs): in 2 of 5 runs of the contiguous file one window of 238
/// was split (its preallocation ended early, the rest of the window went into the free blocks
/// before the next group's first 2048-block buddy; the next window was in place again), in
/// the other 3 and in 4 fragmented runs none. Twice the largest.
pub const WINDOWS_THE_KERNEL_MOVES: usize = 2;

/// The files of `variant`: `big` alone, or `big` and the second writer's `other`.
pub fn names(variant: &str) -> &'static [&'static str] {
    if variant == "contiguous" {
        &["big"]
    } else {
        &["big", "other"]
    }
}

/// The experiment's file system for `bytes`: the kernel profile's mkfs and mount options, on
/// zram, presenting the experiment's queue (rotational as its priced disk, 128 KiB read-ahead).
fn options(bytes: u64) -> KernelFsOptions {
    let p = kernel_profile::by_name("ext4-2007").unwrap();
    let exp = layoutlab_experiments::experiment::load("large-delete").unwrap();
    KernelFsOptions {
        kind: p.fs_kind().unwrap(),
        mkfs_args: p.mkfs_args.clone(),
        mount_options: p.mount_options.clone(),
        bytes,
        backing: Backing::Zram,
        resident_bytes: bytes / 50 + 64 * MIB,
        queue: layoutlab_experiments::support::capture_queue(&exp.device, Some(128), None).unwrap(),
    }
}

/// Writes `variant` at `scale` through the kernel on a fresh ext4-2007 as large-delete does
/// (`large_delete::write_zeros`: 1 MiB writes; the fragmented pair in 8 MiB turns, `big`
/// first, each ended by fdatasync), unmounts, and gives the image to `read`. Returns what
/// `read` returns and the file size in bytes.
pub fn kernel_write<T>(variant: &str, scale: f64, read: impl FnOnce(&Path) -> T) -> (T, u64) {
    let exp = layoutlab_experiments::experiment::load("large-delete").unwrap();
    let spec: large_delete::LargeDeleteSpec = exp.params().unwrap();
    let (file_bytes, fs_bytes) = large_delete::sizes(&spec, scale);
    let k = KernelFs::create(&options(fs_bytes)).unwrap();
    let root = k.mount_point().to_path_buf();
    let paths: Vec<_> = names(variant).iter().map(|n| root.join(n)).collect();
    let refs: Vec<&Path> = paths.iter().map(|p| p.as_path()).collect();
    let turn = (variant != "contiguous").then_some(spec.fragment_chunk_mib * MIB);
    large_delete::write_zeros(&refs, file_bytes, spec.write_chunk_mib * MIB, turn).unwrap();
    (k.unmount_then(read).unwrap(), file_bytes)
}
