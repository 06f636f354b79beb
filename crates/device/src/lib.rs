//! Device models: what a trace costs on a disk this machine does not have.
//!
//! This crate owns the [`Device`] trait and its models (one per file), the named presets
//! (`presets/*.toml` at the workspace root, each parameter with its source), the import of
//! DiskSim parameter files, the replay of a [`layoutlab_trace::Trace`] on a model, and
//! fio-like synthetic jobs. It knows nothing of file systems.

use layoutlab_trace::{Flags, Op};

pub mod bench;
pub mod cited;
pub mod composite;
pub mod cpu;
pub mod job;
pub mod preset;
pub mod queue;
pub mod replay;
pub mod serve;
pub mod ssd;

/// One request as a device model sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IoRequest {
    /// What it does.
    pub op: Op,
    /// First sector (512 bytes).
    pub sector: u64,
    /// Length in sectors.
    pub sectors: u32,
    /// Flags from the trace (sync, readahead, ...).
    pub flags: Flags,
}

/// A device model.
///
/// The trait is deliberately narrow: a model services one request at a time in the order it is
/// handed them, keeping its own state (head position, rotational phase, cache, busy-until).
/// Queueing disciplines (FCFS, SPTF at a depth) are built on top of it by the replay engine,
/// using [`Device::positioning_ns`] to rank candidates; composites wrap devices.
pub trait Device {
    /// A short human name (the preset's name).
    fn name(&self) -> &str;
    /// Capacity in 512-byte sectors.
    fn capacity_sectors(&self) -> u64;
    /// The request arrives at `arrival_ns` (model time, ns); returns when it completes.
    /// The model starts it at `max(arrival_ns, the time it becomes free)`.
    fn submit(&mut self, arrival_ns: f64, req: &IoRequest) -> f64;
    /// Estimated positioning time (seek + rotation, ns) if `req` started at `at_ns`, without
    /// changing state. Models without a notion of position return 0.
    fn positioning_ns(&self, _at_ns: f64, _req: &IoRequest) -> f64 {
        0.0
    }
    /// How many requests the device accepts at once (1 = none queued inside the device).
    fn queue_depth(&self) -> usize {
        1
    }
    /// Whether the block layer would see the modelled drive as rotational
    /// (`queue/rotational`): a capture device presents this, because the kernel, e2fsck and
    /// file systems issue a different stream to a non-rotational queue (docs/rig.md). A model
    /// without moving parts (the default) is not; the hard-disk model is.
    fn rotational(&self) -> bool {
        false
    }
}

/// Errors of device models, presets and device-spec parsers.
#[derive(Debug, thiserror::Error)]
pub enum DeviceError {
    /// A file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// A spec, preset or trace line is malformed.
    #[error("{path}:{line}: {reason}")]
    Parse {
        /// The file.
        path: String,
        /// 1-based line (0 if not line-oriented).
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// A parameter is out of range or missing.
    #[error("invalid device parameter: {0}")]
    Invalid(String),
    /// No preset of that name.
    #[error("unknown device preset '{name}'; valid presets: {valid}")]
    UnknownPreset {
        /// What was asked for.
        name: String,
        /// The names that exist, comma-separated.
        valid: String,
    },
}

pub mod hdd;
pub mod parv;
pub mod validate;

/// The measured-drive data shared beside the checkout (`../shared/data/disksim` from the
/// workspace root): DiskSim's validation drives and traces. Tests that need it fail with this
/// message when it is missing, rather than pass without running.
#[cfg(test)]
pub(crate) fn shared_disksim(name: &str) -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/disksim");
    assert!(
        dir.is_dir(),
        "the shared measured-drive data is missing: expected {} (the `shared` directory beside \
         the checkout, with data/disksim/ holding DiskSim's .parv/.trace/.seek files)",
        dir.display()
    );
    dir.join(name)
}
