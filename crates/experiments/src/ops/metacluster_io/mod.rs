//! The "metacluster-io" operation: does clustering indirect blocks (Rai, LKML, Nov 2007) cost
//! normal I/O? Benchmarks 1–4 of the post, on images laid out by the `ext3-2007` and
//! `ext3-metacluster` policies.
//!
//! - Reads (benchmarks 2–4) go through the real kernel ([`run`]): each layout's image is
//!   written through libext2fs (file data sparse), mounted by today's ext4 driver in ext3
//!   mode on a loop device with the 2007 read-ahead and request size, caches dropped, and read
//!   by a small buffered `pread` reader in this process under block tracing; the trace is
//!   replayed on the device preset.
//! - The write (benchmark 1) cannot be captured (today's kernel does not allocate as ext3 did
//!   in 2007): the write stream the layout implies is built from the plan and priced
//!   ([`write_stream`]).
//! - The patch's asynchronous read-ahead of indirect blocks from the metacluster, which no
//!   kernel has, is a replay option that inserts those reads into the captured trace
//!   ([`ind_readahead`]).
//!
//! [`run`] runs it all ([`run::run_metacluster_io`]); [`report`] prints the table, writes the SVG
//! of benchmark 3 and the JSON.

pub mod bio_order;
mod file_map;
pub mod ind_readahead;
pub mod ra_windows;
pub mod report;
pub mod run;
pub mod write_stream;

use crate::{Experiment, Operation, RunArgs};
use anyhow::{bail, Result};
use serde::Deserialize;

/// The file-system blocks (of `spb` sectors) a request touches, partial ones included: how
/// every part of this operation (the order fix, the read-ahead option, the summaries) maps a
/// traced request back to the plan's blocks.
pub(crate) fn request_blocks(r: &layoutlab_trace::Request, spb: u64) -> std::ops::Range<u64> {
    r.sector / spb..(r.sector + u64::from(r.sectors)).div_ceil(spb)
}

/// The "metacluster-io" operation (registered in [`crate::OPERATIONS`]).
pub struct MetaclusterIo;

/// Parameters of the "metacluster-io" operation: an experiment's `[metacluster-io]` table.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetaclusterIoSpec {
    /// Scale used when `--scale` is not given.
    pub default_scale: f64,
    /// File-system size at scale 1, GB (10^9 bytes).
    pub fs_gb: f64,
    /// The file of benchmarks 1 and 2 at scale 1, GB.
    pub seq_file_gb: f64,
    /// The file of benchmarks 3 and 4 at scale 1, GB.
    pub random_file_gb: f64,
    /// mkfs profile of both images.
    pub mkfs_profile: String,
    /// Layout policies compared, in order; the first is the baseline.
    pub policies: Vec<String>,
    /// Benchmarks run (1..=4), in order.
    pub benchmarks: Vec<u32>,
    /// Block-device read-ahead the OS used with the modelled disk (KiB).
    pub os_read_ahead_kb: u32,
    /// Largest request the OS sent the modelled disk (KiB).
    pub os_max_sectors_kb: u32,
    /// Benchmark 2: bytes per read(2), KiB.
    pub seq_read_chunk_kib: u64,
    /// Benchmark 3: bytes per read.
    pub small_read_bytes: u64,
    /// Benchmark 3: bytes read in total at scale 1, MiB; scaled with the file.
    pub small_total_mib: f64,
    /// Benchmark 4: bytes per read, KiB.
    pub large_read_kib: u64,
    /// Benchmark 4: fraction of the file read.
    pub large_fraction: f64,
    /// Indirect blocks the patch's read-ahead fetches with the one a read misses (the missed
    /// block included).
    pub ind_readahead_blocks: u64,
    /// Benchmark 1: ext3's journal commit interval (s).
    pub commit_interval_s: f64,
    /// Benchmark 1: age (s) at which writeback writes a committed metadata block home.
    pub dirty_expire_s: f64,
    /// Benchmark 1: how often writeback wakes up (s).
    pub writeback_interval_s: f64,
    /// Scale factor applied to measured CPU time between requests.
    pub cpu_scale: f64,
    /// The capture device's `queue/rotational`; `None`: the preset's (1 for every hard disk).
    /// A run sets it (`--set os_rotational=false`) to measure the flag alone
    /// (docs/fidelity.md, the request stream's factor).
    #[serde(default)]
    pub os_rotational: Option<bool>,
    /// What benchmark 4's reads become: the capture's own requests (`today`), or the 2007
    /// kernel's stream for a program that gave no advice (`none`: [`ra_windows`]) or advised
    /// `POSIX_FADV_RANDOM` (`random`: page by page). The post does not say which. An
    /// experiment file without it gets `today`, what every run did before the key existed.
    #[serde(default)]
    pub large_read_advice: LargeReadAdvice,
}

/// How benchmark 4's program advised the kernel, and so what its reads become in the replay
/// (the capture itself always advises `POSIX_FADV_RANDOM`: run.rs says why).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LargeReadAdvice {
    /// Today's kernel as captured: each 512 KiB read one request (neither of 2007's).
    #[default]
    Today,
    /// No advice: 2.6.24's read-ahead windows, in pairs, and one window past each read's end
    /// ([`ra_windows`]).
    None,
    /// `POSIX_FADV_RANDOM`: 2.6.24 read each page by `readpage`, one 4 KiB request after
    /// another.
    Random,
}

impl LargeReadAdvice {
    /// The name `--set large_read_advice=` takes.
    pub fn name(self) -> &'static str {
        match self {
            LargeReadAdvice::Today => "today",
            LargeReadAdvice::None => "none",
            LargeReadAdvice::Random => "random",
        }
    }
}

impl MetaclusterIoSpec {
    /// The queue the loop device presents: the priced disk's rotational flag (unless the run
    /// sets its own), the period's read-ahead and largest request.
    pub fn capture_queue(&self, device: &str) -> Result<layoutlab_rig::QueueSpec> {
        crate::support::capture_queue_flagged(
            device,
            Some(self.os_read_ahead_kb),
            Some(self.os_max_sectors_kb),
            self.os_rotational,
        )
    }
}

/// Benchmark names, by number.
pub fn benchmark_name(b: u32) -> &'static str {
    match b {
        1 => "sequential write + sync",
        2 => "sequential read",
        3 => "random 512-byte reads",
        4 => "random 512 KiB reads",
        _ => "?",
    }
}

impl MetaclusterIoSpec {
    /// Checks the values (names are resolved by [`MetaclusterIo::check`]).
    pub fn validate(&self) -> Result<()> {
        if !(self.seq_file_gb > 0.0
            && self.random_file_gb > 0.0
            && self.fs_gb > self.seq_file_gb.max(self.random_file_gb) * 1.05)
        {
            bail!("the files must be > 0 GB and fit in fs_gb with 5% to spare");
        }
        if self.policies.is_empty() {
            bail!("[metacluster-io] policies is empty");
        }
        if self.benchmarks.is_empty() || self.benchmarks.iter().any(|b| !(1..=4).contains(b)) {
            bail!(
                "benchmarks must be some of 1, 2, 3, 4; got {:?}",
                self.benchmarks
            );
        }
        if self.small_read_bytes == 0 || !self.small_read_bytes.is_multiple_of(512) {
            bail!("small_read_bytes must be a positive multiple of 512");
        }
        if self.seq_read_chunk_kib == 0 || self.large_read_kib == 0 {
            bail!("seq_read_chunk_kib and large_read_kib must be at least 1");
        }
        if !(self.large_fraction > 0.0 && self.large_fraction <= 1.0) {
            bail!("large_fraction must be in (0, 1]");
        }
        if self.ind_readahead_blocks < 2 {
            bail!("ind_readahead_blocks must be at least 2 (the missed block and one more)");
        }
        if !(self.commit_interval_s > 0.0
            && self.dirty_expire_s >= 0.0
            && self.writeback_interval_s > 0.0)
        {
            bail!("commit_interval_s and writeback_interval_s must be > 0, dirty_expire_s >= 0");
        }
        if self.os_read_ahead_kb == 0 || self.os_max_sectors_kb < 4 {
            bail!("os_read_ahead_kb must be > 0 and os_max_sectors_kb at least 4");
        }
        Ok(())
    }
}

impl Operation for MetaclusterIo {
    fn name(&self) -> &'static str {
        "metacluster-io"
    }

    /// It mounts images on loop devices and traces the kernel's reads.
    fn supports_cpu_scale(&self) -> bool {
        true
    }

    fn needs_root(&self, _exp: &Experiment) -> bool {
        true
    }

    fn options(&self) -> &'static [crate::OpOption] {
        &[
            crate::OpOption {
                key: "os_rotational",
                help: "the capture device's queue/rotational, true or false (default: the preset's, true for every hard disk); false switches the flag alone",
                flag: None,
                flag_aliases: &[],
            },
            crate::OpOption {
                key: "large_read_advice",
                help: "what benchmark 4's 512 KiB reads become in the replay: today (as today's kernel issued them, one request each; shipped), none (2.6.24's read-ahead windows for a program that gave no advice, one window past each read's end), random (2.6.24 with POSIX_FADV_RANDOM: page by page)",
                flag: None,
                flag_aliases: &[],
            },
        ]
    }

    /// `--closed-loop` reads each benchmark's file on the emulated device (a fresh emulated
    /// disk per benchmark, paced by the reader's own CPU): benchmarks 2-4, the captured ones
    /// ([`run::traced_reads_emulated`]).
    fn supports_closed_loop(&self) -> bool {
        true
    }

    fn check(&self, exp: &Experiment) -> Result<()> {
        let s: MetaclusterIoSpec = exp.params()?;
        s.validate()?;
        layoutlab_layout::MkfsProfile::by_name(&s.mkfs_profile)?;
        for p in &s.policies {
            layoutlab_layout::policy_by_name(p, &layoutlab_layout::PolicyParams::new())?;
        }
        Ok(())
    }

    fn run(&self, exp: &Experiment, args: &RunArgs) -> Result<()> {
        run::run_metacluster_io(exp, args)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The loop device presents the preset's rotational flag unless the run sets its own
    /// (`--set os_rotational=false`: the flag alone, docs/fidelity.md), and the period's
    /// read-ahead and request size either way.
    #[test]
    fn the_rotational_flag_is_the_presets_unless_set() {
        let exp = crate::experiment::load("metacluster-io").unwrap();
        let mut spec: MetaclusterIoSpec = exp.params().unwrap();
        let shipped = spec.capture_queue(&exp.device).unwrap();
        assert_eq!(shipped.rotational, Some(true), "{shipped:?}");
        assert_eq!(shipped.read_ahead_kb, Some(spec.os_read_ahead_kb));
        assert_eq!(shipped.max_sectors_kb, Some(spec.os_max_sectors_kb));
        spec.os_rotational = Some(false);
        let flat = spec.capture_queue(&exp.device).unwrap();
        assert_eq!(flat.rotational, Some(false));
        assert_eq!(
            (flat.read_ahead_kb, flat.max_sectors_kb),
            (shipped.read_ahead_kb, shipped.max_sectors_kb)
        );
    }

    /// Benchmark 4's reads stay the capture's unless a run asks for a period reading, and an
    /// experiment file written before the key existed still loads, as it ran then.
    #[test]
    fn benchmark_4_reads_as_captured_unless_asked() {
        let exp = crate::experiment::load("metacluster-io").unwrap();
        let spec: MetaclusterIoSpec = exp.params().unwrap();
        assert_eq!(spec.large_read_advice, LargeReadAdvice::Today);
        let text = include_str!("../../../../../experiments/metacluster-io.toml");
        let mut table: toml::Table = toml::from_str(text).unwrap();
        let section = table["metacluster-io"].as_table_mut().unwrap();
        section.remove("large_read_advice").unwrap();
        let older: MetaclusterIoSpec = section.clone().try_into().unwrap();
        assert_eq!(older.large_read_advice, LargeReadAdvice::Today);
        for (name, want) in [
            ("none", LargeReadAdvice::None),
            ("random", LargeReadAdvice::Random),
        ] {
            section.insert("large_read_advice".into(), name.into());
            let s: MetaclusterIoSpec = section.clone().try_into().unwrap();
            assert_eq!(
                (s.large_read_advice, s.large_read_advice.name()),
                (want, name)
            );
        }
        section.insert("large_read_advice".into(), "sometimes".into());
        let e = section.clone().try_into::<MetaclusterIoSpec>().unwrap_err();
        assert!(e.to_string().contains("today"), "{e}");
    }
}
