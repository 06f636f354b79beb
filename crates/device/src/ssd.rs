//! A flash SSD: channels × dies, a page-mapping FTL with one write frontier, a write buffer.
//!
//! Resources, each busy until a time: the controller (per-command overhead, serial), the host
//! link (transfer at the interface rate), each channel (NAND bus transfer), each die (sense
//! `read_us`, program `program_us`, erase `erase_us`). A read senses every distinct
//! multi-plane page (one page in each plane, written together) it touches, once, on that
//! page's die, then moves its bytes over the die's channel and the host link. A write is acknowledged once its data is in the write buffer; the buffer drains into
//! multi-plane program units striped round-robin over the dies (the write frontier), and a die
//! erases a block before its frontier opens it. Never-written data sits where a sequential
//! fill would have put it. Left out (see docs/ssd-model.md): garbage collection and write
//! amplification, SLC caching, read/program suspend, cache-read pipelining, wear levelling,
//! read-retry, thermal throttling.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use layoutlab_trace::Op;
use serde::Deserialize;

use crate::preset::{parse_toml, Cited};
use crate::{Device, DeviceError, IoRequest};

/// Bytes per logical mapping unit of the FTL (one 4 KiB host block).
pub const MAP_UNIT_BYTES: u64 = 4096;
const SECTOR_BYTES: u64 = 512;
/// Marks a program-unit id as "where a sequential fill put it" (never written here).
const PRISTINE: u64 = 1 << 63;

/// The parameters of an [`Ssd`] (plain numbers; a preset gives each a source).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SsdParams {
    /// User-visible capacity, bytes.
    pub capacity_bytes: u64,
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
}

/// The same parameters as they appear in a preset: each with its source.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CitedSsdParams {
    capacity_bytes: Cited<u64>,
    channels: Cited<u32>,
    dies_per_channel: Cited<u32>,
    planes_per_die: Cited<u32>,
    page_bytes: Cited<u64>,
    pages_per_block: Cited<u32>,
    read_us: Cited<f64>,
    program_us: Cited<f64>,
    erase_us: Cited<f64>,
    channel_mb_per_s: Cited<f64>,
    host_mb_per_s: Cited<f64>,
    host_overhead_us: Cited<f64>,
    queue_depth: Cited<u32>,
    write_buffer_bytes: Cited<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SsdPresetFile {
    kind: String,
    name: String,
    #[allow(dead_code)]
    description: Option<String>,
    #[allow(dead_code)]
    model: Option<String>,
    params: CitedSsdParams,
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
    host_free_ns: f64,
    chan_free_ns: Vec<f64>,
    die_free_ns: Vec<f64>,
    /// Logical unit → (die, program-unit id) for units written during the run.
    map: HashMap<u64, (u32, u64)>,
    /// Die the write frontier fills next, and how many units it holds so far.
    frontier_die: usize,
    frontier_units: u64,
    /// Program-unit ids handed out by the frontier.
    next_program_id: u64,
    /// Program units programmed in each die's open block (an erase opens a new one).
    block_fill: Vec<u32>,
    /// Program completions of buffered data: (completion bits, bytes).
    buffered: BinaryHeap<Reverse<(u64, u64)>>,
    buffered_bytes: u64,
}

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
            host_free_ns: 0.0,
            chan_free_ns: vec![0.0; channels],
            die_free_ns: vec![0.0; dies],
            map: HashMap::new(),
            frontier_die: 0,
            frontier_units: 0,
            next_program_id: 0,
            block_fill: vec![0; dies],
            buffered: BinaryHeap::new(),
            buffered_bytes: 0,
            p,
        })
    }

    /// Parses a preset (`kind = "ssd"`, every parameter `{ value = ..., source = "..." }`).
    /// `path` names the file in errors.
    pub fn from_toml_str(text: &str, path: &str) -> Result<Ssd, DeviceError> {
        let f: SsdPresetFile = parse_toml(text, path)?;
        if f.kind != "ssd" {
            return Err(DeviceError::Parse {
                path: path.to_string(),
                line: 1,
                reason: format!("kind is '{}', expected 'ssd'", f.kind),
            });
        }
        let c = f.params;
        let params = SsdParams {
            capacity_bytes: c.capacity_bytes.get("capacity_bytes", path)?,
            channels: c.channels.get("channels", path)?,
            dies_per_channel: c.dies_per_channel.get("dies_per_channel", path)?,
            planes_per_die: c.planes_per_die.get("planes_per_die", path)?,
            page_bytes: c.page_bytes.get("page_bytes", path)?,
            pages_per_block: c.pages_per_block.get("pages_per_block", path)?,
            read_us: c.read_us.get("read_us", path)?,
            program_us: c.program_us.get("program_us", path)?,
            erase_us: c.erase_us.get("erase_us", path)?,
            channel_mb_per_s: c.channel_mb_per_s.get("channel_mb_per_s", path)?,
            host_mb_per_s: c.host_mb_per_s.get("host_mb_per_s", path)?,
            host_overhead_us: c.host_overhead_us.get("host_overhead_us", path)?,
            queue_depth: c.queue_depth.get("queue_depth", path)?,
            write_buffer_bytes: c.write_buffer_bytes.get("write_buffer_bytes", path)?,
        };
        Ssd::new(&f.name, params)
    }

    /// The parameters.
    pub fn params(&self) -> &SsdParams {
        &self.p
    }

    /// Channel of die `die`: dies are numbered channel-first, so consecutive dies of a
    /// stripe sit on different channels.
    fn channel_of(&self, die: usize) -> usize {
        die % self.p.channels as usize
    }

    /// Where logical unit `unit` lives: (die, program-unit id). Units of one program unit
    /// share a multi-plane page: one sense reads them all.
    fn locate(&self, unit: u64) -> (usize, u64) {
        if !self.map.is_empty() {
            if let Some(&(die, program)) = self.map.get(&unit) {
                return (die as usize, program);
            }
        }
        // A sequential fill strides program units over the dies.
        let program_unit = unit / self.units_per_program;
        let die = (program_unit % self.dies as u64) as usize;
        (die, PRISTINE | program_unit)
    }

    /// The controller takes a command: returns when its processing ends.
    fn command(&mut self, arrival_ns: f64) -> f64 {
        let t = arrival_ns.max(self.ctrl_free_ns) + self.overhead_ns;
        self.ctrl_free_ns = t;
        t
    }

    fn read(&mut self, at_ns: f64, first_unit: u64, units: u64, bytes: u64) -> f64 {
        let mut first_ready = f64::INFINITY;
        let mut last_ready = at_ns;
        let mut last_bytes = 0;
        let mut u = first_unit;
        let end = first_unit + units;
        while u < end {
            let (die, program) = self.locate(u);
            let mut n = 1;
            while u + n < end && self.locate(u + n) == (die, program) {
                n += 1;
            }
            let group_bytes = (n * MAP_UNIT_BYTES).min(bytes.max(SECTOR_BYTES));
            let ch = self.channel_of(die);
            let sensed = at_ns.max(self.die_free_ns[die]) + self.read_ns;
            let xfer_end =
                sensed.max(self.chan_free_ns[ch]) + group_bytes as f64 * self.chan_ns_per_byte;
            self.chan_free_ns[ch] = xfer_end;
            // The page register holds the data until it is out.
            self.die_free_ns[die] = xfer_end;
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
        let streamed = first_ready.max(self.host_free_ns) + bytes as f64 * self.host_ns_per_byte;
        let done = streamed.max(last_ready + last_bytes as f64 * self.host_ns_per_byte);
        self.host_free_ns = done;
        done
    }

    /// Programs the frontier's open unit on its die; returns the program's end.
    fn program_frontier(&mut self, data_ready_ns: f64) -> f64 {
        let die = self.frontier_die;
        let ch = self.channel_of(die);
        let bytes = self.units_per_program * MAP_UNIT_BYTES;
        let xfer_end =
            data_ready_ns.max(self.chan_free_ns[ch]) + bytes as f64 * self.chan_ns_per_byte;
        self.chan_free_ns[ch] = xfer_end;
        let mut start = xfer_end.max(self.die_free_ns[die]);
        if self.block_fill[die] == 0 {
            start += self.erase_ns;
        }
        let end = start + self.program_ns;
        self.die_free_ns[die] = end;
        self.block_fill[die] = (self.block_fill[die] + 1) % self.p.pages_per_block;
        self.buffered.push(Reverse((end.to_bits(), bytes)));
        self.buffered_bytes += bytes;
        self.frontier_die = (die + 1) % self.dies;
        self.frontier_units = 0;
        self.next_program_id += 1;
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
        let host_end = at_ns.max(self.host_free_ns) + bytes as f64 * self.host_ns_per_byte;
        self.host_free_ns = host_end;
        self.drain_buffer(at_ns);
        for u in first_unit..first_unit + units {
            self.map
                .insert(u, (self.frontier_die as u32, self.next_program_id));
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
                for u in first_unit..end_unit {
                    self.map.remove(&u);
                }
                t
            }
            Op::Read | Op::Write => t,
        }
    }

    fn queue_depth(&self) -> usize {
        self.p.queue_depth as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use layoutlab_trace::Flags;

    fn params() -> SsdParams {
        SsdParams {
            capacity_bytes: 1 << 30,
            channels: 4,
            dies_per_channel: 2,
            planes_per_die: 2,
            page_bytes: 8192,
            pages_per_block: 4,
            read_us: 50.0,
            program_us: 1000.0,
            erase_us: 3000.0,
            channel_mb_per_s: 100.0,
            host_mb_per_s: 250.0,
            host_overhead_us: 10.0,
            queue_depth: 32,
            write_buffer_bytes: 64 * 1024,
        }
    }
    fn rq(op: Op, sector: u64, sectors: u32) -> IoRequest {
        IoRequest {
            op,
            sector,
            sectors,
            flags: Flags::NONE,
        }
    }

    #[test]
    fn one_4k_read_costs_overhead_sense_channel_and_host() {
        let mut s = Ssd::new("t", params()).unwrap();
        let done = s.submit(0.0, &rq(Op::Read, 0, 8));
        // 10 µs + 50 µs + 4096 B at 100 MB/s (40.96 µs) + 4096 B at 250 MB/s (16.384 µs).
        let want = 10_000.0 + 50_000.0 + 40_960.0 + 16_384.0;
        assert!((done - want).abs() < 1e-6, "{done} vs {want}");
    }

    #[test]
    fn reads_on_different_dies_overlap_and_on_one_die_serialise() {
        let mut a = Ssd::new("t", params()).unwrap();
        // Program units are 16 KiB (2 planes × 8 KiB): sectors 0 and 32 are on dies 0 and 1.
        let d0 = a.submit(0.0, &rq(Op::Read, 0, 8));
        let d1 = a.submit(0.0, &rq(Op::Read, 32, 8));
        let mut b = Ssd::new("t", params()).unwrap();
        let e0 = b.submit(0.0, &rq(Op::Read, 0, 8));
        // Same die (die 0 again after 8 dies × 32 sectors).
        let e1 = b.submit(0.0, &rq(Op::Read, 8 * 32, 8));
        assert!(d1 - d0 < 30_000.0, "different dies overlap: {d0} {d1}");
        assert!(
            e1 - e0 > 50_000.0,
            "same die waits for the sense: {e0} {e1}"
        );
    }

    #[test]
    fn small_writes_are_acknowledged_from_the_buffer_until_it_fills() {
        let mut s = Ssd::new("t", params()).unwrap();
        let first = s.submit(0.0, &rq(Op::Write, 0, 8));
        assert!(first < 100_000.0, "buffered write is quick: {first}");
        // 1 MiB of writes overflows a 64 KiB buffer: the ack waits for programs.
        let mut t = first;
        for i in 1..256u64 {
            t = s.submit(t, &rq(Op::Write, i * 8, 8));
        }
        assert!(
            t > 3_000_000.0,
            "buffer-bound writes wait for erase+program: {t}"
        );
    }

    #[test]
    fn written_data_is_read_from_where_the_frontier_put_it() {
        let mut s = Ssd::new("t", params()).unwrap();
        s.submit(0.0, &rq(Op::Write, 800, 8));
        let (die, page) = s.locate(100);
        assert_eq!(die, 0);
        assert_eq!(page & PRISTINE, 0);
        s.submit(0.0, &rq(Op::Discard, 800, 8));
        assert_ne!(s.locate(100).1 & PRISTINE, 0);
    }

    #[test]
    fn flush_waits_for_every_program() {
        let mut s = Ssd::new("t", params()).unwrap();
        let w = s.submit(0.0, &rq(Op::Write, 0, 8));
        let f = s.submit(w, &rq(Op::Flush, 0, 0));
        // The open unit is programmed on flush: erase + program at least.
        assert!(f > 4_000_000.0, "{f}");
    }

    fn shipped(name: &str) -> Ssd {
        let path = format!("{}/../../presets/{name}.toml", env!("CARGO_MANIFEST_DIR"));
        Ssd::from_toml_str(&std::fs::read_to_string(&path).unwrap(), &path).unwrap()
    }

    #[test]
    fn preset_qd1_read_is_the_sum_of_its_parts() {
        for name in ["ssd-sata-2010", "ssd-nvme-2024"] {
            let mut s = shipped(name);
            let p = s.params().clone();
            let done = s.submit(0.0, &rq(Op::Read, 1 << 20, 8));
            let want_us = p.host_overhead_us
                + p.read_us
                + 4096.0 / p.channel_mb_per_s
                + 4096.0 / p.host_mb_per_s;
            assert!(
                (done / 1e3 - want_us).abs() < 1e-6,
                "{name}: {done} ns vs {want_us} us"
            );
        }
    }

    #[test]
    fn preset_parallelism_is_bounded_by_dies_and_the_host_link() {
        use crate::job::{run_job, JobSpec, Rw};
        for name in ["ssd-sata-2010", "ssd-nvme-2024"] {
            let job = |rw, bs_bytes, iodepth| JobSpec {
                rw,
                bs_bytes,
                span_bytes: 8 << 30,
                number: Some(20_000),
                iodepth,
                ..JobSpec::default()
            };
            let p = shipped(name).params().clone();
            let qd1 = run_job(&mut shipped(name), &job(Rw::RandRead, 4096, 1)).unwrap();
            let qd32 = run_job(&mut shipped(name), &job(Rw::RandRead, 4096, 32)).unwrap();
            let dies = (p.channels * p.dies_per_channel) as f64;
            let die_bound = dies / (p.read_us * 1e-6);
            let link_bound = p.host_mb_per_s * 1e6 / 4096.0;
            assert!(
                qd32.iops > 3.0 * qd1.iops,
                "{name}: {} vs {}",
                qd32.iops,
                qd1.iops
            );
            assert!(
                qd32.iops <= die_bound.min(link_bound) * 1.0001,
                "{name}: {}",
                qd32.iops
            );
            let seq = run_job(&mut shipped(name), &job(Rw::Read, 1 << 20, 8)).unwrap();
            assert!(
                seq.mb_per_s <= p.host_mb_per_s * 1.0001,
                "{name}: {}",
                seq.mb_per_s
            );
        }
    }

    #[test]
    fn absurd_sector_numbers_do_not_panic() {
        let mut s = Ssd::new("t", params()).unwrap();
        for op in [Op::Read, Op::Write, Op::Discard] {
            let done = s.submit(0.0, &rq(op, u64::MAX - 3, 8));
            assert!(done.is_finite());
        }
    }

    #[test]
    fn bad_params_are_rejected() {
        let mut p = params();
        p.page_bytes = 1000;
        assert!(Ssd::new("t", p).is_err());
        let mut p = params();
        p.channels = 0;
        assert!(Ssd::new("t", p).is_err());
        let mut p = params();
        p.read_us = f64::NAN;
        assert!(Ssd::new("t", p).is_err());
    }
}
