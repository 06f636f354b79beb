//! Pricing a trace, the step every operation that prices composes: a fresh device from a
//! preset replays the trace ([`on_preset`], [`on`]); a file system larger than one drive is
//! priced on as many of the preset concatenated as hold it ([`linear_device`]); and an e2fsck
//! check is priced on a device made of two (issue 29, metadata on a faster device,
//! [`split_device`], [`split`]).
//!
//! The split: the layout's leading metadata region on an SSD preset, the rest on a disk preset,
//! joined as a linear concatenation (md `linear`, LVM linear) joins them, so block `b` of the
//! file system is sector `8b` of the concatenation. Each request is routed by its address; what
//! reached each device is counted per e2fsck pass and per class of block. A region larger than
//! one SSD is on as many SSDs: no preset value changes, only how many drives there are.
//!
//! It owns the devices' construction, the check that the fast device is faster and the replays;
//! it does not capture anything ([`crate::steps::check`] and the kernel operations do), and the
//! replay itself is `layoutlab_device::replay`'s.

use crate::steps::check::{pass_number, PolicyRun, MIB};
use anyhow::{bail, Result};
use layoutlab_device::composite::Composite;
use layoutlab_device::replay::{replay, ReplayOptions, Replayed};
use layoutlab_device::{Device, IoRequest};
use layoutlab_layout::BlockClass;
use layoutlab_trace::{Flags, Op, Trace};
use serde::Serialize;

/// `device` replays `trace`, the think time between requests multiplied by `cpu_scale`
/// (first come, first served, at the device's own queue depth).
pub fn on(device: &mut dyn Device, trace: &Trace, cpu_scale: f64) -> Replayed {
    replay(
        device,
        trace,
        &ReplayOptions {
            cpu_scale,
            ..ReplayOptions::default()
        },
    )
}

/// A fresh device of `preset` (name or file: idle, empty cache) replays `trace`, think time
/// times `cpu_scale`.
pub fn on_preset(preset: &str, trace: &Trace, cpu_scale: f64) -> Result<Replayed> {
    let mut dev = crate::support::load_device(preset)?;
    Ok(on(dev.as_mut(), trace, cpu_scale))
}

/// Fresh devices of each of `presets` replay `trace`, think time times `cpu_scale`: one
/// capture priced on several drives (`--device A,B`), in `presets`' order. The replays are
/// independent, so they run at once, each on its own thread in the [`crate::stages::PRICE`]
/// stage; each is [`on_preset`]'s, number for number.
pub fn on_presets(presets: &[String], trace: &Trace, cpu_scale: f64) -> Result<Vec<Replayed>> {
    std::thread::scope(|scope| {
        let handles: Vec<_> = presets
            .iter()
            .map(|p| {
                scope.spawn(move || {
                    let _pricing = crate::stages::enter(crate::stages::PRICE);
                    on_preset(p, trace, cpu_scale)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a replay thread panicked"))
            .collect()
    })
}

/// Predicted seconds of one capture on each preset it was priced on (`--device A,B`), by
/// preset name: the `seconds_on` of a run's JSON.
pub type SecondsOn = std::collections::BTreeMap<String, f64>;

/// [`SecondsOn`] of `replays`, the replays of one trace on `presets` ([`on_presets`]).
pub fn seconds_on(presets: &[String], replays: &[Replayed]) -> SecondsOn {
    presets
        .iter()
        .zip(replays)
        .map(|(p, r)| (p.clone(), r.wall_ns / 1e9))
        .collect()
}

/// The seconds on every preset after the first, as a run's progress line ends: ", 0.512 s on
/// B, ..." (empty for one preset).
pub fn also_on(presets: &[String], seconds: &SecondsOn) -> String {
    presets
        .iter()
        .skip(1)
        .filter_map(|p| seconds.get(p).map(|s| format!(", {s:.3} s on {p}")))
        .collect()
}

/// The device a run is priced on: `fast_members` SSDs holding the region, then disks.
pub struct SplitDevice {
    /// The concatenation.
    pub device: Composite,
    /// How many of its members (the first ones) are the fast device's.
    pub fast_members: usize,
    /// Sectors of the region (0: everything on disks).
    pub region_sectors: u64,
}

impl SplitDevice {
    /// Whether `sector` is served by a fast member.
    pub fn on_fast(&self, sector: u64) -> bool {
        self.device.member_at(sector) < self.fast_members
    }

    /// How many disks it has.
    pub fn slow_members(&self) -> usize {
        self.device.member_names().len() - self.fast_members
    }
}

/// Devices and the sectors of each a concatenation uses.
type Members = (Vec<Box<dyn Device>>, Vec<u64>);

/// Instances of `preset` whose concatenation holds `sectors`, and how much of each is used.
fn instances(preset: &str, sectors: u64) -> Result<Members> {
    let mut devices = Vec::new();
    let mut sizes = Vec::new();
    let mut left = sectors;
    while left > 0 {
        let d = crate::support::load_device(preset)?;
        let n = d.capacity_sectors().min(left);
        if n == 0 {
            bail!("device preset '{preset}' has no capacity");
        }
        devices.push(d);
        sizes.push(n);
        left -= n;
    }
    Ok((devices, sizes))
}

/// `preset` alone when it holds `sectors`, else a linear concatenation of as many of it as
/// do (named `N x preset`).
pub fn linear_device(preset: &str, sectors: u64) -> Result<Box<dyn Device>> {
    let one = crate::support::load_device(preset)?;
    if one.capacity_sectors() >= sectors {
        return Ok(one);
    }
    let (devices, sizes) = instances(preset, sectors)?;
    let name = format!("{} x {preset}", devices.len());
    Ok(Box::new(Composite::linear(&name, devices, &sizes)?))
}

/// Mean modelled service time of 256 random 4 KiB reads spread over a fresh `preset`'s
/// capacity (one at a time, fixed addresses): what "faster" means for a metadata device.
pub fn random_read_ms(preset: &str) -> Result<f64> {
    let mut d = crate::support::load_device(preset)?;
    let span = d.capacity_sectors().saturating_sub(8).max(1);
    let mut x: u64 = 0x2010_0029;
    let mut now = 0.0;
    let mut total = 0.0;
    for _ in 0..256 {
        // a fixed LCG (Knuth's MMIX constants): the same addresses on every run
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let sector = (x >> 11) % span / 8 * 8;
        let req = IoRequest {
            op: Op::Read,
            sector,
            sectors: 8,
            flags: Flags::default(),
        };
        let done = d.submit(now, &req);
        total += done - now;
        now = done;
    }
    Ok(total / 256.0 / 1e6)
}

/// Refuses a metadata device `fast` that is not faster than `slow` at random 4 KiB reads.
pub fn check_faster(fast: &str, slow: &str) -> Result<()> {
    let (fast_ms, slow_ms) = (random_read_ms(fast)?, random_read_ms(slow)?);
    if fast_ms >= slow_ms {
        bail!(
            "the metadata device '{fast}' is not faster than '{slow}': a random 4 KiB read \
             takes {fast_ms:.3} ms on it against {slow_ms:.3} ms; name an SSD preset as \
             fast_device"
        );
    }
    Ok(())
}

/// `fast` for the first `region_sectors` of a `total_sectors` file system and `slow` for the
/// rest, concatenated; refused when `fast` is not faster than `slow` at random 4 KiB reads.
pub fn split_device(
    fast: &str,
    slow: &str,
    region_sectors: u64,
    total_sectors: u64,
) -> Result<SplitDevice> {
    check_faster(fast, slow)?;
    if region_sectors == 0 || region_sectors >= total_sectors {
        bail!(
            "a metadata region of {region_sectors} sectors on a {total_sectors}-sector file \
             system leaves nothing to split"
        );
    }
    let (mut devices, mut sizes) = instances(fast, region_sectors)?;
    let fast_members = devices.len();
    let (d, s) = instances(slow, total_sectors - region_sectors)?;
    devices.extend(d);
    sizes.extend(s);
    let name = format!(
        "{fast_members} x {fast} + {} x {slow}",
        devices.len() - fast_members
    );
    Ok(SplitDevice {
        device: Composite::linear(&name, devices, &sizes)?,
        fast_members,
        region_sectors,
    })
}

/// What one device of the split served.
#[derive(Clone, Debug, Default, Serialize)]
pub struct DeviceShare {
    /// Requests routed to it (by their first sector).
    pub requests: u64,
    /// MiB they moved.
    pub mib: f64,
    /// Modelled service seconds on it: each request from when it started to its completion.
    pub busy_seconds: f64,
}

/// One e2fsck pass on the split device.
#[derive(Clone, Debug, Serialize)]
pub struct SplitPass {
    /// 1..5 (0 = before pass 1).
    pub pass: u32,
    /// Predicted wall seconds.
    pub seconds: f64,
    /// What the SSD served.
    pub ssd: DeviceShare,
    /// What the disks served.
    pub hdd: DeviceShare,
}

/// A run of the fsck operation priced on the split device.
#[derive(Clone, Debug, Serialize)]
pub struct SplitRun {
    /// The policy.
    pub policy: String,
    /// The device (e.g. "1 x ssd-sata-2010 + 1 x sata-2t-5400-2010").
    pub device: String,
    /// First block past the region.
    pub region_end_block: u64,
    /// Predicted wall seconds of the whole e2fsck run (CPU before the first and after the
    /// last request included, as the fsck operation counts it).
    pub total_seconds: f64,
    /// Per pass.
    pub passes: Vec<SplitPass>,
    /// Per class of block: bytes read from the SSD and from the disks.
    pub classes: Vec<ClassSplit>,
}

/// Bytes of one class of block on each device.
#[derive(Clone, Debug, Serialize)]
pub struct ClassSplit {
    /// The class ("inode table", "data", ...).
    pub class: String,
    /// Bytes served by the SSD.
    pub ssd_bytes: u64,
    /// Bytes served by the disks.
    pub hdd_bytes: u64,
}

/// Prices `run`'s captured e2fsck trace on `split`, CPU time scaled by `cpu_scale`.
pub fn split(run: &PolicyRun, split: &mut SplitDevice, cpu_scale: f64) -> SplitRun {
    let trace = &run.trace;
    let replayed = on(&mut split.device, trace, cpu_scale);
    let mut passes: Vec<SplitPass> = replayed
        .tags
        .iter()
        .map(|t| SplitPass {
            pass: pass_number(&t.tag),
            seconds: t.seconds,
            ssd: DeviceShare::default(),
            hdd: DeviceShare::default(),
        })
        .collect();
    let mut classes: Vec<ClassSplit> = BlockClass::ALL
        .iter()
        .map(|c| ClassSplit {
            class: c.as_str().to_string(),
            ssd_bytes: 0,
            hdd_bytes: 0,
        })
        .collect();
    for (r, t) in trace.requests.iter().zip(&replayed.requests) {
        if !matches!(r.op, Op::Read | Op::Write) {
            continue;
        }
        let fast = split.on_fast(r.sector);
        let pass = pass_number(trace.tag_name(r.tag));
        if let Some(p) = passes.iter_mut().find(|p| p.pass == pass) {
            let share = if fast { &mut p.ssd } else { &mut p.hdd };
            share.requests += 1;
            share.mib += f64::from(r.sectors) * 512.0 / MIB;
            share.busy_seconds += (t.complete_ns - t.start_ns) / 1e9;
        }
        for (class, bytes) in run
            .classes
            .split_bytes(r.sector * 512, u64::from(r.sectors) * 512)
        {
            if let Some(c) = classes.iter_mut().find(|c| c.class == class.as_str()) {
                if fast {
                    c.ssd_bytes += bytes;
                } else {
                    c.hdd_bytes += bytes;
                }
            }
        }
    }
    classes.retain(|c| c.ssd_bytes + c.hdd_bytes > 0);
    SplitRun {
        policy: run.policy.clone(),
        device: split.device.name().to_string(),
        region_end_block: split.region_sectors / 8,
        total_seconds: replayed.wall_ns / 1e9 + run.cpu_outside_trace_seconds,
        passes,
        classes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(sector: u64) -> IoRequest {
        IoRequest {
            op: Op::Read,
            sector,
            sectors: 8,
            flags: Flags::default(),
        }
    }

    /// A delete-like stream: synchronous 4 KiB reads and writes at seeded addresses over a
    /// 400 GB disk, 50 µs apart.
    fn stream() -> Trace {
        let mut x: u64 = 27;
        let requests = (0..300u64)
            .map(|i| {
                x = x
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                layoutlab_trace::Request {
                    issue_ns: i * 50_000,
                    complete_ns: None,
                    op: if i % 3 == 0 { Op::Write } else { Op::Read },
                    sector: (x >> 11) % (700 << 20) / 8 * 8,
                    sectors: 8,
                    flags: Flags::SYNC,
                    tag: 0,
                    cpu: None,
                }
            })
            .collect();
        Trace {
            requests,
            ..Trace::default()
        }
    }

    /// One capture priced on several presets at once (`--device A,B`) is, preset by preset
    /// and in the order given, the replay each preset alone gives; the presets price it
    /// differently, so a swap would show.
    #[test]
    fn a_trace_priced_on_several_presets_is_each_presets_own_replay() {
        let trace = stream();
        let presets: Vec<String> = [
            "sata-400g-2007",
            "sata-400g-2007-alt-samsung",
            "ssd-sata-2010",
        ]
        .map(String::from)
        .to_vec();
        let all = on_presets(&presets, &trace, 1.0).unwrap();
        assert_eq!(all.len(), presets.len());
        for (p, got) in presets.iter().zip(&all) {
            assert_eq!(got, &on_preset(p, &trace, 1.0).unwrap(), "{p}");
        }
        let seconds = seconds_on(&presets, &all);
        assert_eq!(seconds.len(), 3);
        for (p, r) in presets.iter().zip(&all) {
            assert_eq!(seconds[p], r.wall_ns / 1e9);
        }
        let s = |p: &str| seconds[p];
        assert!(
            s("sata-400g-2007") != s("sata-400g-2007-alt-samsung"),
            "{seconds:?}"
        );
        assert!(s("ssd-sata-2010") < s("sata-400g-2007"), "{seconds:?}");
        assert_eq!(
            also_on(&presets, &seconds),
            format!(
                ", {:.3} s on sata-400g-2007-alt-samsung, {:.3} s on ssd-sata-2010",
                s("sata-400g-2007-alt-samsung"),
                s("ssd-sata-2010")
            )
        );
    }

    /// The routing the issue asks for: a request in the region is served as the SSD model
    /// alone serves it, one past the region as the disk model serves the same request at
    /// its offset on the disk (a linear concatenation: the disk's sector 0 follows the region).
    #[test]
    fn requests_in_the_region_go_to_the_ssd_the_rest_to_the_disk() {
        let region = 8 << 20; // 4 GiB
        let mut split =
            split_device("ssd-sata-2010", "sata-2t-5400-2010", region, 100 << 21).unwrap();
        assert_eq!((split.fast_members, split.slow_members()), (1, 1));
        for (sector, fast) in [(0, true), (region - 8, true), (region, false)] {
            assert_eq!(split.on_fast(sector), fast, "sector {sector}");
        }
        let mut ssd = crate::support::load_device("ssd-sata-2010").unwrap();
        let mut hdd = crate::support::load_device("sata-2t-5400-2010").unwrap();
        let in_region = 123_456 * 8;
        let past = region + 5_000_000 * 8;
        let want_ssd = ssd.submit(0.0, &read(in_region));
        let want_hdd = hdd.submit(0.0, &read(past - region));
        let got_ssd = split.device.submit(0.0, &read(in_region));
        let got_hdd = split.device.submit(0.0, &read(past));
        assert_eq!(got_ssd, want_ssd);
        assert_eq!(got_hdd, want_hdd);
        // and the two differ: an SSD read is not a disk read
        assert!(want_ssd * 10.0 < want_hdd, "{want_ssd} vs {want_hdd}");
    }

    #[test]
    fn a_slow_metadata_device_is_refused_with_both_times() {
        let e = split_device("sata-2t-5400-2010", "ssd-sata-2010", 8 << 20, 100 << 21)
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("not faster") && e.contains("ms on it against"),
            "{e}"
        );
    }

    /// 10 TB on 2 TB disks: five of them, and a 200 GB region on two 160 GB SSDs.
    #[test]
    fn a_file_system_larger_than_one_drive_is_a_concatenation() {
        let total = layoutlab_workload::populations::bench5::DRIVE_10TB_SECTORS;
        let one = linear_device("sata-2t-5400-2010", total).unwrap();
        assert_eq!(one.name(), "5 x sata-2t-5400-2010");
        assert!(one.capacity_sectors() == total);
        let split = split_device(
            "ssd-sata-2010",
            "sata-2t-5400-2010",
            200_000_000_000 / 512,
            total,
        )
        .unwrap();
        assert_eq!((split.fast_members, split.slow_members()), (2, 5));
        assert_eq!(split.device.capacity_sectors(), total);
    }
}
