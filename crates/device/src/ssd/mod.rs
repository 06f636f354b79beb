//! A flash SSD: channels × dies, a page-mapping FTL with greedy garbage collection, a write
//! buffer.
//!
//! Resources, each busy until a time: the controller (per-command overhead, serial), the host
//! link (transfer at the interface rate), each channel (NAND bus transfer), each die (sense
//! `read_us`, program `program_us`, erase `erase_us`). A read senses every distinct
//! multi-plane page (one page in each plane, written together) it touches, once, on that
//! page's die, then moves its bytes over the die's channel and the host link. A write is
//! acknowledged once its data is in the write buffer; the buffer drains into multi-plane
//! program units striped round-robin over the dies (the write frontier). When a die runs short
//! of free blocks it collects garbage: the block with the fewest valid units is the victim, its
//! valid units are sensed and programmed elsewhere on the die, and it is erased; the spare room
//! is `physical_bytes − capacity_bytes`. The drive starts full, either written once in order
//! or in the steady state of uniform random overwrites ([`Precondition`]). Memory grows with
//! the blocks and the units the run writes, not with the drive. Left out (see
//! docs/ssd-model.md): SLC caching, independent-plane and cache reads, background collection,
//! read/program suspend, wear levelling, read-retry, thermal throttling.

mod ftl;
mod spec_toml;
#[cfg(test)]
mod tests;
mod timeline;

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use layoutlab_trace::Op;
use serde::Deserialize;

use crate::{Device, DeviceError, IoRequest};
pub use ftl::FtlStats;
use ftl::{DieWork, Ftl, GC_FREE_RESERVE};
use timeline::Timeline;

/// Bytes per logical mapping unit of the FTL (one 4 KiB host block).
pub const MAP_UNIT_BYTES: u64 = 4096;
const SECTOR_BYTES: u64 = 512;

/// The state a drive starts in (the SNIA Solid State Storage Performance Test Specification
/// calls the first "workload-independent preconditioning" and the second "steady state").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Precondition {
    /// Every user unit written once, in order: full, no invalid data, and the spare area
    /// (over-provisioning) free. Garbage collection starts once the spare area is used up.
    Sequential,
    /// Written once in order, then overwritten uniformly at random until the greedy collector
    /// reaches steady state: every block holds some invalid data.
    Random,
}

/// The parameters of an [`Ssd`] (plain numbers; a preset gives each a source).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SsdParams {
    /// User-visible capacity, bytes.
    pub capacity_bytes: u64,
    /// Raw NAND capacity, bytes; what exceeds `capacity_bytes` is over-provisioning, the
    /// spare room garbage collection works in.
    pub physical_bytes: u64,
    /// Independent NAND channels (buses).
    pub channels: u32,
    /// Dies on each channel.
    pub dies_per_channel: u32,
    /// Planes per die (a program writes one page in each plane at once).
    pub planes_per_die: u32,
    /// NAND page, bytes.
    pub page_bytes: u64,
    /// Pages per erase block (per plane).
    pub pages_per_block: u32,
    /// Page sense time tR, µs.
    pub read_us: f64,
    /// Page program time tPROG, µs.
    pub program_us: f64,
    /// Block erase time tBERS, µs.
    pub erase_us: f64,
    /// NAND bus transfer rate per channel, MB/s (10^6 bytes).
    pub channel_mb_per_s: f64,
    /// Host interface payload rate, MB/s (10^6 bytes).
    pub host_mb_per_s: f64,
    /// Controller and protocol time per command, µs (serial: caps the command rate).
    pub host_overhead_us: f64,
    /// Commands the device accepts at once (NCQ 32, NVMe queue entries).
    pub queue_depth: u32,
    /// Write buffer that acknowledges writes before they are programmed, bytes.
    pub write_buffer_bytes: u64,
    /// The state the drive starts in.
    pub precondition: Precondition,
    /// Whether each plane of a die senses on its own (asynchronous independent plane read):
    /// a read busies only the planes it touches. Otherwise a sense busies the whole die, as
    /// classic multi-plane reads must address the same page in every plane.
    pub independent_plane_reads: bool,
}

/// A flash SSD model (see the module documentation).
#[derive(Clone, Debug)]
pub struct Ssd {
    name: String,
    p: SsdParams,
    dies: usize,
    units_per_program: u64,
    read_ns: f64,
    program_ns: f64,
    erase_ns: f64,
    overhead_ns: f64,
    chan_ns_per_byte: f64,
    host_ns_per_byte: f64,
    ctrl_free_ns: f64,
    host: Timeline,
    chans: Vec<Timeline>,
    die_free_ns: Vec<f64>,
    /// Per plane (`die × planes + plane`): busy until, for independent plane reads.
    plane_free_ns: Vec<f64>,
    planes: usize,
    units_per_page: u64,
    ftl: Ftl,
    /// Die the write frontier fills next, its open block there, and how many units of the
    /// open program unit it holds so far.
    frontier_die: usize,
    frontier_block: Option<u64>,
    frontier_units: u64,
    /// Program completions of buffered data: (completion bits, bytes).
    buffered: BinaryHeap<Reverse<(u64, u64)>>,
    buffered_bytes: u64,
    /// Per die: collection time owed (negative: paid ahead) and the share each host program
    /// unit pays.
    gc_debt_ns: Vec<f64>,
    gc_pay_ns: Vec<f64>,
}

/// Seed of the steady-state sample and of its unit permutation.
const STEADY_SEED: u64 = 0x5eed_55d0;

impl Ssd {
    /// A model with `params`, checked for range.
    pub fn new(name: &str, params: SsdParams) -> Result<Ssd, DeviceError> {
        let p = params;
        let positive = [
            ("read_us", p.read_us),
            ("program_us", p.program_us),
            ("erase_us", p.erase_us),
            ("channel_mb_per_s", p.channel_mb_per_s),
            ("host_mb_per_s", p.host_mb_per_s),
        ];
        for (k, v) in positive {
            if !(v.is_finite() && v > 0.0) {
                return Err(DeviceError::Invalid(format!(
                    "{name}: {k} must be > 0, got {v}"
                )));
            }
        }
        if !(p.host_overhead_us.is_finite() && p.host_overhead_us >= 0.0) {
            return Err(DeviceError::Invalid(format!(
                "{name}: host_overhead_us must be >= 0, got {}",
                p.host_overhead_us
            )));
        }
        for (k, v) in [
            ("channels", p.channels),
            ("dies_per_channel", p.dies_per_channel),
            ("planes_per_die", p.planes_per_die),
            ("pages_per_block", p.pages_per_block),
            ("queue_depth", p.queue_depth),
        ] {
            if v == 0 {
                return Err(DeviceError::Invalid(format!("{name}: {k} must be >= 1")));
            }
        }
        if p.planes_per_die > 64 {
            return Err(DeviceError::Invalid(format!(
                "{name}: planes_per_die must be <= 64, got {}",
                p.planes_per_die
            )));
        }
        if p.page_bytes < MAP_UNIT_BYTES || !p.page_bytes.is_multiple_of(MAP_UNIT_BYTES) {
            return Err(DeviceError::Invalid(format!(
                "{name}: page_bytes must be a multiple of {MAP_UNIT_BYTES}, got {}",
                p.page_bytes
            )));
        }
        if p.capacity_bytes < MAP_UNIT_BYTES {
            return Err(DeviceError::Invalid(format!(
                "{name}: capacity_bytes too small"
            )));
        }
        let units_per_page = p.page_bytes / MAP_UNIT_BYTES;
        let units_per_program = units_per_page * p.planes_per_die as u64;
        if p.write_buffer_bytes < units_per_program * MAP_UNIT_BYTES {
            return Err(DeviceError::Invalid(format!(
                "{name}: write_buffer_bytes ({}) must hold one program unit ({} bytes)",
                p.write_buffer_bytes,
                units_per_program * MAP_UNIT_BYTES
            )));
        }
        let channels = p.channels as usize;
        let dies = channels * p.dies_per_channel as usize;
        let ppb = p.pages_per_block as u64;
        let block_bytes = units_per_program * ppb * MAP_UNIT_BYTES;
        let bpd = p.physical_bytes / block_bytes / dies as u64;
        let user_units = p.capacity_bytes / MAP_UNIT_BYTES;
        // Each die needs its user share, an open host block, an open collection block and the
        // collection reserve, plus one block of slack for the sequential fill's ragged end.
        let spare_blocks = GC_FREE_RESERVE as u64 + 3;
        let needed = user_units.div_ceil(units_per_program * ppb * dies as u64) + spare_blocks;
        if bpd < needed || bpd > u32::MAX as u64 {
            return Err(DeviceError::Invalid(format!(
                "{name}: physical_bytes ({}) must exceed capacity_bytes ({}) by at least {} \
                 blocks of {block_bytes} bytes per die",
                p.physical_bytes, p.capacity_bytes, spare_blocks
            )));
        }
        let ftl = match p.precondition {
            Precondition::Sequential => {
                Ftl::sequential(dies, units_per_program, ppb, bpd, user_units)
            }
            Precondition::Random => {
                Ftl::random_steady(dies, units_per_program, ppb, bpd, user_units, STEADY_SEED)
            }
        };
        // A drive in steady state has been collecting all along: it pays from its first write
        // at the rate its current state implies.
        let gc_pay_ns: Vec<f64> = (0..dies)
            .map(|die| match p.precondition {
                Precondition::Sequential => 0.0,
                Precondition::Random => ftl.steady_collection_ns(
                    die,
                    p.read_us * 1e3,
                    p.program_us * 1e3,
                    p.erase_us * 1e3,
                ),
            })
            .collect();
        Ok(Ssd {
            name: name.to_string(),
            dies,
            units_per_program,
            read_ns: p.read_us * 1e3,
            program_ns: p.program_us * 1e3,
            erase_ns: p.erase_us * 1e3,
            overhead_ns: p.host_overhead_us * 1e3,
            chan_ns_per_byte: 1e3 / p.channel_mb_per_s,
            host_ns_per_byte: 1e3 / p.host_mb_per_s,
            ctrl_free_ns: 0.0,
            host: Timeline::default(),
            chans: vec![Timeline::default(); channels],
            die_free_ns: vec![0.0; dies],
            plane_free_ns: vec![0.0; dies * p.planes_per_die as usize],
            planes: p.planes_per_die as usize,
            units_per_page,
            ftl,
            frontier_die: 0,
            frontier_block: None,
            frontier_units: 0,
            buffered: BinaryHeap::new(),
            buffered_bytes: 0,
            gc_debt_ns: vec![0.0; dies],
            gc_pay_ns,
            p,
        })
    }

    /// The parameters.
    pub fn params(&self) -> &SsdParams {
        &self.p
    }

    /// What the FTL has done so far (host writes, collection copies, erases).
    pub fn ftl_stats(&self) -> FtlStats {
        self.ftl.stats
    }

    /// Channel of die `die`: dies are numbered channel-first, so consecutive dies of a
    /// stripe sit on different channels.
    fn channel_of(&self, die: usize) -> usize {
        die % self.p.channels as usize
    }

    /// Where logical unit `unit` lives: (die, global program-unit index, plane). Units of one
    /// program unit share a multi-plane page: one sense reads them all.
    fn locate_plane(&self, unit: u64) -> (usize, u64, usize) {
        let (block, slot) = self.ftl.locate(unit);
        (
            self.ftl.die_of(block),
            block * self.ftl.ppb + slot / self.units_per_program,
            ((slot % self.units_per_program) / self.units_per_page) as usize,
        )
    }

    /// When `die` can start a program or erase: every plane idle.
    fn die_ready_ns(&self, die: usize) -> f64 {
        let planes = &self.plane_free_ns[die * self.planes..(die + 1) * self.planes];
        planes.iter().fold(self.die_free_ns[die], |a, &b| a.max(b))
    }

    /// Books a collection's NAND work on `die` and sets the share each host program on the
    /// die pays (`pay_debt`). The FTL collects whole victims when a die runs short of free
    /// blocks (so victim choice, and write amplification, are greedy's); a controller does
    /// that work beside the host writes it makes room for, not as one stall of the die that
    /// would hold every buffered write behind a whole round of copies. Each host program pays
    /// at the rate collection runs: the share is set so that, by the die's next collection
    /// (expected once the host has filled the room this round freed), what is owed now and a
    /// round like this one are both paid. After the first round the work is paid as it
    /// accrues, so a run's throughput is bound by the same NAND work, and a short run is not
    /// flattered by work left owing at its end. A drive that starts in steady state pays from
    /// its first write (`Ftl::steady_collection_ns`), as if it had been running.
    fn defer(&mut self, die: usize, work: DieWork) {
        if work.senses + work.programs + work.erases == 0 {
            return;
        }
        let round_ns = work.senses as f64 * self.read_ns
            + work.programs as f64 * self.program_ns
            + work.erases as f64 * self.erase_ns;
        self.gc_debt_ns[die] += round_ns;
        // The round's victims free room for this many host program units before the die
        // must collect again: each erased block less the program units its copies took.
        let room = (work.erases * self.ftl.upb / self.ftl.upp).saturating_sub(work.programs);
        self.gc_pay_ns[die] = (self.gc_debt_ns[die] + round_ns).max(0.0) / room.max(1) as f64;
    }

    /// Spends the die's share of collection work before a host program at `at_ns` (ahead of
    /// the next round once the current one is paid: the debt may go negative).
    fn pay_debt(&mut self, die: usize, at_ns: f64) {
        let pay = self.gc_pay_ns[die];
        if pay > 0.0 {
            self.gc_debt_ns[die] -= pay;
            self.die_free_ns[die] = self.die_ready_ns(die).max(at_ns) + pay;
        }
    }

    /// The controller takes a command: returns when its processing ends.
    fn command(&mut self, arrival_ns: f64) -> f64 {
        let t = arrival_ns.max(self.ctrl_free_ns) + self.overhead_ns;
        self.ctrl_free_ns = t;
        // Every later transfer is ready at or after `t`.
        self.host.prune(t);
        for c in &mut self.chans {
            c.prune(t);
        }
        t
    }

    fn read(&mut self, at_ns: f64, first_unit: u64, units: u64, bytes: u64) -> f64 {
        let mut first_ready = f64::INFINITY;
        let mut last_ready = at_ns;
        let mut last_bytes = 0;
        let mut u = first_unit;
        let end = first_unit + units;
        while u < end {
            let (die, program, plane) = self.locate_plane(u);
            let mut planes_touched = 1u64 << plane;
            let mut n = 1;
            while u + n < end {
                let (d, p, pl) = self.locate_plane(u + n);
                if (d, p) != (die, program) {
                    break;
                }
                planes_touched |= 1 << pl;
                n += 1;
            }
            let group_bytes = (n * MAP_UNIT_BYTES).min(bytes.max(SECTOR_BYTES));
            let ch = self.channel_of(die);
            let base = die * self.planes;
            let sensed;
            if self.p.independent_plane_reads {
                // Only the touched planes sense; the others stay free for other reads.
                let mut start = at_ns.max(self.die_free_ns[die]);
                for pl in 0..self.planes {
                    if planes_touched & (1 << pl) != 0 {
                        start = start.max(self.plane_free_ns[base + pl]);
                    }
                }
                sensed = start + self.read_ns;
            } else {
                sensed = at_ns.max(self.die_free_ns[die]) + self.read_ns;
            }
            let xfer_end =
                self.chans[ch].reserve(sensed, group_bytes as f64 * self.chan_ns_per_byte);
            // The page register holds the data until it is out.
            if self.p.independent_plane_reads {
                for pl in 0..self.planes {
                    if planes_touched & (1 << pl) != 0 {
                        self.plane_free_ns[base + pl] = xfer_end;
                    }
                }
            } else {
                self.die_free_ns[die] = xfer_end;
            }
            first_ready = first_ready.min(xfer_end);
            if xfer_end >= last_ready {
                last_ready = xfer_end;
                last_bytes = group_bytes;
            }
            u += n;
        }
        if first_ready.is_infinite() {
            first_ready = at_ns;
        }
        // The host link streams as data becomes ready; it cannot finish before the last
        // piece is ready and sent.
        let dur = bytes as f64 * self.host_ns_per_byte;
        let earliest =
            first_ready.max(last_ready + last_bytes as f64 * self.host_ns_per_byte - dur);
        self.host.reserve(earliest, dur)
    }

    /// Gives the frontier a block with room for a program unit, from its die on (collecting
    /// garbage there if the die is short of free blocks; its time is deferred, see `defer`).
    /// None only if no die has room.
    fn open_frontier(&mut self) {
        for _ in 0..self.dies {
            let die = self.frontier_die;
            let mut work = DieWork::default();
            let block = self.ftl.open_host(die, &mut work);
            self.defer(die, work);
            if block.is_some() {
                self.frontier_block = block;
                return;
            }
            self.frontier_die = (die + 1) % self.dies;
        }
        self.frontier_block = None;
    }

    /// Programs the frontier's open unit on its die; returns the program's end.
    fn program_frontier(&mut self, data_ready_ns: f64) -> f64 {
        let die = self.frontier_die;
        let ch = self.channel_of(die);
        let bytes = self.units_per_program * MAP_UNIT_BYTES;
        if let Some(block) = self.frontier_block {
            self.ftl.pad_program_unit(block);
        }
        self.pay_debt(die, data_ready_ns);
        let xfer_end = self.chans[ch].reserve(data_ready_ns, bytes as f64 * self.chan_ns_per_byte);
        let end = xfer_end.max(self.die_ready_ns(die)) + self.program_ns;
        self.die_free_ns[die] = end;
        self.buffered.push(Reverse((end.to_bits(), bytes)));
        self.buffered_bytes += bytes;
        self.frontier_die = (die + 1) % self.dies;
        self.frontier_units = 0;
        end
    }

    /// Frees buffer space whose programs ended by `t_ns`.
    fn drain_buffer(&mut self, t_ns: f64) {
        while let Some(&Reverse((bits, bytes))) = self.buffered.peek() {
            if f64::from_bits(bits) > t_ns {
                break;
            }
            self.buffered.pop();
            self.buffered_bytes -= bytes;
        }
    }

    fn write(&mut self, at_ns: f64, first_unit: u64, units: u64, bytes: u64) -> f64 {
        let host_end = self
            .host
            .reserve(at_ns, bytes as f64 * self.host_ns_per_byte);
        self.drain_buffer(at_ns);
        // Units past the user capacity are not stored (a trace may name any sector).
        let end = (first_unit + units).min(self.ftl.user_units);
        for u in first_unit..end {
            if self.frontier_units == 0 {
                self.open_frontier();
            }
            let Some(block) = self.frontier_block else {
                break;
            };
            let slot = self.ftl.members[block as usize].len() as u64;
            self.ftl.place(u, block, slot);
            self.ftl.stats.host_units += 1;
            self.frontier_units += 1;
            if self.frontier_units == self.units_per_program {
                self.program_frontier(host_end);
            }
        }
        // Acknowledged when the buffer has room for everything not yet programmed.
        let open_bytes = self.frontier_units * MAP_UNIT_BYTES;
        let mut ack = host_end;
        while self.buffered_bytes + open_bytes > self.p.write_buffer_bytes {
            match self.buffered.pop() {
                Some(Reverse((bits, b))) => {
                    self.buffered_bytes -= b;
                    ack = ack.max(f64::from_bits(bits));
                }
                None => break,
            }
        }
        ack
    }

    fn flush(&mut self, at_ns: f64) -> f64 {
        if self.frontier_units > 0 {
            // A flush programs the open unit padded.
            self.program_frontier(at_ns);
        }
        let mut done = at_ns;
        while let Some(Reverse((bits, b))) = self.buffered.pop() {
            self.buffered_bytes -= b;
            done = done.max(f64::from_bits(bits));
        }
        done
    }
}

impl Device for Ssd {
    fn name(&self) -> &str {
        &self.name
    }

    fn capacity_sectors(&self) -> u64 {
        self.p.capacity_bytes / SECTOR_BYTES
    }

    fn submit(&mut self, arrival_ns: f64, req: &IoRequest) -> f64 {
        let t = self.command(arrival_ns);
        let bytes = req.sectors as u64 * SECTOR_BYTES;
        // In sectors, so no sector number from a trace can overflow.
        let per_unit = MAP_UNIT_BYTES / SECTOR_BYTES;
        let first_unit = req.sector / per_unit;
        let end_unit = req
            .sector
            .saturating_add(req.sectors as u64)
            .div_ceil(per_unit);
        let units = end_unit.saturating_sub(first_unit);
        match req.op {
            Op::Read if units > 0 => self.read(t, first_unit, units, bytes),
            Op::Write if units > 0 => self.write(t, first_unit, units, bytes),
            Op::Flush => self.flush(t),
            Op::Discard => {
                self.ftl.discard(first_unit, end_unit.max(first_unit));
                t
            }
            Op::Read | Op::Write => t,
        }
    }

    fn queue_depth(&self) -> usize {
        self.p.queue_depth as usize
    }
}
