//! The rig: real kernel block devices and file systems on devices it created, tracefs capture
//! of their requests, and guaranteed teardown.
//!
//! It owns: a kernel file system's whole run ([`KernelFs`]: backing, mkfs, mount, traced
//! phases, teardown), loop devices over files ([`LoopDevice`]), zram devices ([`Zram`]), memory cgroups that
//! limit a child's page cache ([`MemCgroup`]), cpu cgroups that hold a traced program to a period
//! CPU's speed ([`CpuThrottle`]), mkfs for
//! ext2/3/4, XFS and btrfs ([`mkfs`]), mounts ([`Mount`]), temp files ([`TempFile`]), tracefs
//! capture of one device's block requests ([`TracefsSession`]), the traced run of the real
//! `e2fsck -fnv -tt` ([`run_e2fsck_traced`]) and the process-wide [`cleanup`] registry that undoes
//! all of them on drop, error, panic, SIGINT and SIGTERM; and a population's operation stream
//! replayed on a kernel file system with real system calls ([`apply_ops()`], [`age_kernel`]),
//! each file's extents read back with FIEMAP ([`fiemap`]: fragments, layout score). It touches only devices and mounts it
//! created. It does not own trace file formats (the trace crate), images (the image crate) or
//! the command line.
//!
//! Everything here needs root; [`require_root`] turns its absence into a clear error.
//!
//! ```no_run
//! use layoutlab_rig::{LoopDevice, run_e2fsck_traced, FsckOptions};
//! # fn main() -> Result<(), layoutlab_rig::RigError> {
//! layoutlab_rig::cleanup::install(); // Ctrl-C and panics undo what the rig created
//! let dev = LoopDevice::attach(std::path::Path::new("/tmp/fs.img"), true)?;
//! dev.set_read_ahead_kb(128)?;
//! let run = run_e2fsck_traced(dev.path(), dev.dev(), &FsckOptions::default())?;
//! println!("{} requests, pass 1 took {:?} s", run.capture.trace.requests.len(),
//!          run.times.pass(1).map(|p| p.real_s));
//! # Ok(()) }
//! ```

mod age;
mod apply;
mod awake;
mod cgroup;
mod checker;
mod child;
pub mod cleanup;
mod cpucg;
mod emulate;
mod error;
pub mod fiemap;
mod fsck;
mod fsck_times;
mod kernelfs;
mod loopdev;
mod memcg;
mod mkfs;
mod mount;
mod period;
pub mod stale;
mod system;
mod tracefs;
mod tracefs_text;
pub mod window;
mod zram;

pub use age::{
    age_kernel, age_kernel_then, ext4_mkfs_args, ext_mkfs_args, kernel_plan, kernel_plan_with,
    KernelAgeOptions, KernelAgeRun, EXT4_PROFILE,
};
pub use apply::{
    apply_ops, peak_live_bytes, peak_live_inodes, ApplyOptions, ApplyProgress, ApplyStats,
};
pub use checker::{run_checker_traced, CheckerRun};
pub use cpucg::{CpuJoiner, CpuThrottle, ThrottleStat};
pub use emulate::{
    fuse_max_request_kb, CpuPace, EmuRequest, EmulateOptions, EmulatedRequest, Emulator,
    ServiceModel, DISK_FILE,
};
pub use error::{Result, RigError};
pub use fsck::{run_e2fsck_traced, FsckOptions, FsckRun, ProgressChange};
pub use fsck_times::{parse_fsck_times, FsckTimes, Section};
pub use kernelfs::{
    check_fits, check_fits_together, device_stat_sectors, mem_available_bytes,
    settled_stat_sectors, Backing, KernelFs, KernelFsOptions, KernelTrace, PhaseBytes, RigLock,
    TracedRun,
};
pub use layoutlab_image::{parse_fsck_vitals, FsckVitals};
pub use loopdev::{queue_of, LoopDevice, QueueSpec};
pub use memcg::MemCgroup;
pub use mkfs::{mkfs, FsKind};
pub use mount::Mount;
pub use period::{E2fsprogs, E2FSPROGS_NAMES};
pub use system::{
    check_free_space, drop_caches, free_space_bytes, is_memory_fs, is_root, page_bytes,
    page_cache_drops, require_root, run_command, wait_with_usage, ChildUsage, TempDir, TempFile,
};
pub use tracefs::{
    read_bios, BioEvents, Capture, CpuAccounting, CpuFollower, ExpectedEvents, Marker,
    TraceOptions, TracefsSession, DEFAULT_BUFFER_SIZE_KB, MARKER_EVENT_BYTES, REQUEST_EVENT_BYTES,
    RING_BUFFER_CAP_BYTES,
};
pub use tracefs_text::ProgressStyle;
pub use zram::Zram;
