//! The hard-disk model: zoned geometry with skews and spares, a seek table or curve, rotational
//! position tracked through absolute time, command overheads, bus transfer and a segmented
//! cache with read-ahead and optional write-back. See `docs/hdd-model.md`.
//!
//! The model follows DiskSim 4.0's disk module in what it charges and when (overheads before
//! mechanical work, bus transfer overlapped with media transfer, read-ahead that continues
//! after a read completes until the mechanism is wanted elsewhere), in a few hundred lines of
//! plain arithmetic per request and with no allocation after construction.

pub mod cache;
pub mod geometry;
pub mod seek;
pub mod spec_toml;

use std::collections::{BTreeMap, VecDeque};

use layoutlab_trace::Op;
use serde::{Deserialize, Serialize};

use crate::{Device, DeviceError, IoRequest};
use cache::{SegmentCache, Stream};
use geometry::{DiskGeometry, Pbn, Sparing, ZoneSpec};
use seek::{CurveFit, SeekModel};

/// How far the drive reads ahead after a read (DiskSim "Buffer continuous read").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Prefetch {
    /// No read-ahead (0).
    None,
    /// To the end of the track holding the request's last sector (1).
    Track,
    /// To the end of that cylinder (2).
    Cylinder,
    /// Until the segment is full (3).
    Segment,
    /// To the end of the next track, if the previous read touched the previous track (4).
    NextTrack,
}

impl Prefetch {
    /// From DiskSim's number.
    pub fn from_disksim(n: i64) -> Option<Prefetch> {
        Some(match n {
            0 => Prefetch::None,
            1 => Prefetch::Track,
            2 => Prefetch::Cylinder,
            3 => Prefetch::Segment,
            4 => Prefetch::NextTrack,
            _ => return None,
        })
    }
    /// Name in preset files.
    pub fn as_str(self) -> &'static str {
        match self {
            Prefetch::None => "none",
            Prefetch::Track => "track",
            Prefetch::Cylinder => "cylinder",
            Prefetch::Segment => "segment",
            Prefetch::NextTrack => "next_track",
        }
    }
    /// Parse a preset-file name.
    pub fn parse(s: &str) -> Option<Prefetch> {
        (0..=4)
            .filter_map(Prefetch::from_disksim)
            .find(|p| p.as_str() == s)
    }
}

/// The drive's buffer cache.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CacheSpec {
    /// Number of segments (0 disables the cache).
    pub segments: usize,
    /// Sectors per segment.
    pub segment_sectors: u64,
    /// Read-ahead policy.
    pub prefetch: Prefetch,
    /// Sectors that must be read ahead before another request may use the mechanism.
    pub read_ahead_min_sectors: u64,
    /// Most sectors read ahead after a request.
    pub read_ahead_max_sectors: u64,
    /// Read-ahead may overwrite the sectors just returned to the host (so it can run a full
    /// segment beyond the request).
    pub read_ahead_over_requested: bool,
    /// Start a read-ahead after a read served entirely from the cache ("continue on hit").
    pub read_ahead_on_hit: bool,
    /// A read whose first sector is being read ahead (not yet in the buffer) counts as a hit.
    pub almost_read_hits: bool,
    /// Write-back: 0 off (complete after the media write), 1 on for sequential write
    /// streams, 2 on for every write (DiskSim "Fast write level"; we treat 1 and 2 alike
    /// when the write does not have to wait for earlier dirty data).
    pub write_back_level: u8,
    /// Data written by the host can serve later reads.
    pub read_hits_on_write_data: bool,
    /// Segments that may hold write-back data not yet on the media at once (DiskSim's
    /// "Maximum number of write segments"). 1, DiskSim's rule and every validation drive's
    /// value: a write that does not append to the dirty data waits for the media. More: such
    /// a write is taken into a free segment at once and reported, and the media writes the
    /// segments in the order they came (ATA drives' "write cache stacking": docs/hdd-model.md,
    /// "Writes"). Absent from a preset file: 1.
    #[serde(default = "one_write_segment")]
    pub write_segments: usize,
}

fn one_write_segment() -> usize {
    1
}

/// Controller overheads, ms (DiskSim names in brackets).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Overheads {
    /// Added to every request on arrival ("Per-request overhead time").
    pub per_request_ms: f64,
    /// Read served from the cache, previous request a read.
    pub read_hit_after_read_ms: f64,
    /// Read served from the cache, previous request a write.
    pub read_hit_after_write_ms: f64,
    /// Read from the media, previous a read.
    pub read_miss_after_read_ms: f64,
    /// Read from the media, previous a write.
    pub read_miss_after_write_ms: f64,
    /// Write reported from the cache, previous a read.
    pub write_hit_after_read_ms: f64,
    /// Write reported from the cache, previous a write.
    pub write_hit_after_write_ms: f64,
    /// Write reported after the media, previous a read.
    pub write_miss_after_read_ms: f64,
    /// Write reported after the media, previous a write.
    pub write_miss_after_write_ms: f64,
    /// Before the completion message of a read.
    pub read_completion_ms: f64,
    /// Before the completion message of a write.
    pub write_completion_ms: f64,
    /// Before a data transfer on the bus.
    pub data_prep_ms: f64,
    /// First reconnection to the host during a request.
    pub first_reselect_ms: f64,
    /// Later reconnections.
    pub other_reselect_ms: f64,
    /// Disconnecting a read, previous a read.
    pub read_disconnect_after_read_ms: f64,
    /// Disconnecting a read, previous a write.
    pub read_disconnect_after_write_ms: f64,
    /// Disconnecting a write after its data arrived.
    pub write_disconnect_ms: f64,
    /// Writes disconnect before any data moves (one SCSI drive did): these replace the write
    /// command overheads when present.
    pub extra_write_disconnect: Option<ExtraWriteDisconnect>,
    /// A non-sequential write waits at least this long after its command overhead before it
    /// touches the media.
    pub min_seek_delay_ms: f64,
}

/// DiskSim's "Extradisc" overheads, ms.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ExtraWriteDisconnect {
    /// Command processing before the early disconnect (mechanical work waits for it).
    pub command_ms: f64,
    /// Disconnect processing (overlaps the seek).
    pub disconnect_ms: f64,
    /// From the disconnect to the reconnection attempt.
    pub inter_disconnect_ms: f64,
    /// Disconnect after the data has moved.
    pub second_disconnect_ms: f64,
    /// Extra delay before the seek starts.
    pub seek_delta_ms: f64,
}

/// The host interface.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BusSpec {
    /// Time to move one 512-byte sector to the host, ms.
    pub read_sector_ms: f64,
    /// Time to move one sector from the host, ms.
    pub write_sector_ms: f64,
    /// For reads from the media, the drive reconnects once this fraction of the request
    /// (or of a segment) is buffered ("High (read) water mark").
    pub read_water_mark: f64,
}

/// Everything that defines a drive. Plain data; [`Hdd::new`] derives the tables.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HddSpec {
    /// Preset name.
    pub name: String,
    /// One-line description.
    pub description: String,
    /// Spindle speed.
    pub rpm: f64,
    /// Data surfaces (heads).
    pub surfaces: u32,
    /// Where spares are kept.
    pub sparing: Sparing,
    /// Cylinders per sparing range (for `SectorsPerRange`).
    pub sparing_range_cylinders: u32,
    /// DiskSim's LBN-to-PBN mapping scheme: 0 conventional, 1 or 2 serpentine.
    pub lbn_mapping: u8,
    /// Zones, outermost first.
    pub zones: Vec<ZoneSpec>,
    /// Seek time model.
    pub seek: SeekModel,
    /// Head switch time, ms.
    pub head_switch_ms: f64,
    /// Extra settling before writing, ms: charged where a write's head reaches its first
    /// track, not on the switches inside a sequential write (docs/hdd-model.md, "Writes").
    pub write_settle_ms: f64,
    /// Buffer cache.
    pub cache: CacheSpec,
    /// Controller overheads.
    pub overheads: Overheads,
    /// Host interface.
    pub bus: BusSpec,
    /// Tagged command queue depth (1 = none).
    pub queue_depth: usize,
    /// Where each value comes from: key `section.key` (e.g. `rotation.rpm`), value the source.
    pub sources: BTreeMap<String, String>,
}

/// A hard disk: the spec, its derived tables and its state (head, rotation, cache).
#[derive(Clone, Debug)]
pub struct Hdd {
    spec: HddSpec,
    geometry: DiskGeometry,
    rotation_ns: f64,
    /// Sequential-read time per sector in each zone, switches included.
    zone_stream_sector_ns: Vec<f64>,
    /// The data-sheet seek curve, fitted once (fitting takes a few powers).
    curve: Option<CurveFit>,
    cache: SegmentCache,
    // State.
    free_ns: f64,
    cylinder: u32,
    head: u32,
    last_was_read: bool,
    last_read_end: Option<u64>,
    /// When the controller can take the next command (the mechanism may still be busy).
    accept_ns: f64,
    /// End of the dirty data being written behind, for appending writes.
    dirty_end: Option<u64>,
    /// End of the previous request when it was a write (`None` after a read).
    prev_write_end: Option<u64>,
    /// The media runs of the dirty write stream still within a segment of its end, oldest
    /// first: when each sector of it is on the platter, for the write buffer's bound.
    dirty_runs: VecDeque<WrittenRun>,
    /// When the media finishes each write segment still holding dirty data, oldest first
    /// (appends extend the newest); with [`CacheSpec::write_segments`] above 1, how many
    /// segments a write that does not append finds taken.
    write_segment_ends: VecDeque<f64>,
}

/// Sectors `[start, end)` of a write, written one every `sector_ns` with the last one done at
/// `end_ns`.
#[derive(Clone, Copy, Debug)]
struct WrittenRun {
    start: u64,
    end: u64,
    end_ns: f64,
    sector_ns: f64,
}

impl WrittenRun {
    /// When sector `lbn` (in the run) was on the platter. Counted back from the run's end,
    /// so a revolution lost inside the run (data late) makes earlier sectors look later than
    /// they were: the bound it gives the host is never too early.
    #[inline]
    fn written_ns(&self, lbn: u64) -> f64 {
        self.end_ns - (self.end - 1 - lbn) as f64 * self.sector_ns
    }
}

const MS: f64 = 1e6;

/// Where the media part of an access begins and ends.
#[derive(Clone, Copy, Debug)]
struct MediaAccess {
    /// Last sector done, ns.
    end_ns: f64,
    /// Time per sector on the first track, ns.
    sector_ns: f64,
    /// When the `mark`-th sector (1-based) of the access was done, ns.
    mark_ready_ns: f64,
    /// The first physical sector of the last run transferred (its track is where the head is).
    last: Pbn,
    /// Where the head is at `end_ns`.
    cylinder: u32,
    head: u32,
}

/// When the data of a write reaches the buffer: sector `j` of the request (0-based) may be
/// written once `start_ns + max(j + 1, threshold) · bus_sector_ns` has passed.
#[derive(Clone, Copy, Debug)]
struct WriteData {
    start_ns: f64,
    bus_sector_ns: f64,
    /// Sectors that must be buffered before the first one is written.
    threshold_sectors: u64,
    /// The access continues the media's sequential write (an append to the dirty data being
    /// written behind): its first track switch is one inside a transfer.
    continues: bool,
}

impl WriteData {
    #[inline]
    fn ready_ns(&self, j: u64) -> f64 {
        self.start_ns + (j + 1).max(self.threshold_sectors) as f64 * self.bus_sector_ns
    }

    /// Whether a sweep writing sectors `first..first+run` from `t_ns` on, one every
    /// `sector_ns`, reaches a sector before its data. Readiness minus head time is
    /// piecewise linear in the sector, so its ends and the threshold's kink suffice.
    #[inline]
    fn outruns(&self, first: u64, run: u64, t_ns: f64, sector_ns: f64) -> bool {
        let late = |j: u64| self.ready_ns(j) > t_ns + sector_ns * (j - first) as f64;
        let kink = self.threshold_sectors.saturating_sub(1);
        late(first) || late(first + run - 1) || (kink > first && kink < first + run && late(kink))
    }
}

/// A write's part of a media access: when its data arrives, and where to record the runs it
/// writes.
struct WriteAccess<'a> {
    data: WriteData,
    /// Each run written is appended here if it ends after the given sector (earlier runs are
    /// not needed for the write buffer's bound, and skipping them keeps the list short).
    written: Option<(&'a mut VecDeque<WrittenRun>, u64)>,
}

/// Rotational wait, as a fraction of a revolution, from angle `now` to angle `target`
/// (both in revolutions, [0, 1)).
///
/// A head that arrives exactly as the sector arrives (a skew laid out to equal the switch time
/// it hides) reads it: floating-point rounding of the angle must not turn that tie into a lost
/// revolution. Arrivals up to `ARRIVAL_TIE_REV` late count as on time — about 8 ps at 7200 rpm,
/// far below a sector's ~5 µs.
#[inline]
pub fn rotational_wait_rev(now: f64, target: f64) -> f64 {
    let mut wait = target - now;
    if wait < 0.0 {
        wait += 1.0;
    }
    // A wait of nearly a whole revolution is a target just behind `now` (on either side of
    // angle 0): a tie lost to rounding.
    if wait >= 1.0 - ARRIVAL_TIE_REV {
        0.0
    } else {
        wait
    }
}

/// See [`rotational_wait_rev`].
const ARRIVAL_TIE_REV: f64 = 1e-9;

/// One revolution in ns at `rpm`.
#[inline]
pub fn rotation_ns(rpm: f64) -> f64 {
    60e9 / rpm
}

/// Media transfer time of `sectors` sectors on a track of `sectors_per_track`, ns.
#[inline]
pub fn media_transfer_ns(rotation_ns: f64, sectors_per_track: u32, sectors: u64) -> f64 {
    rotation_ns * sectors as f64 / sectors_per_track as f64
}

impl Hdd {
    /// Build a drive from its spec, checking every value.
    pub fn new(spec: HddSpec) -> Result<Hdd, DeviceError> {
        let bad = |m: String| DeviceError::Invalid(format!("{}: {m}", spec.name));
        if !(spec.rpm.is_finite() && spec.rpm > 0.0) {
            return Err(bad("rpm must be positive".into()));
        }
        spec.seek.validate().map_err(bad)?;
        for (k, v) in [
            ("head_switch_ms", spec.head_switch_ms),
            ("bus.read_sector_ms", spec.bus.read_sector_ms),
            ("bus.write_sector_ms", spec.bus.write_sector_ms),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(bad(format!("{k} must be finite and ≥ 0")));
            }
        }
        if spec.cache.segments > 65_536 {
            return Err(bad(format!(
                "{} cache segments is not a drive",
                spec.cache.segments
            )));
        }
        if spec.cache.segments > 0 && spec.cache.segment_sectors == 0 {
            return Err(bad("cache segments need a positive size".into()));
        }
        if spec.cache.write_segments == 0
            || (spec.cache.segments > 0 && spec.cache.write_segments > spec.cache.segments)
        {
            return Err(bad(format!(
                "write_segments must be at least 1 and at most the {} segments",
                spec.cache.segments
            )));
        }
        if spec.cache.write_back_level > 2 {
            return Err(bad("write_back_level must be 0, 1 or 2".into()));
        }
        if spec.queue_depth == 0 {
            return Err(bad("queue depth must be at least 1".into()));
        }
        let geometry = DiskGeometry::new(
            spec.surfaces,
            spec.sparing,
            spec.sparing_range_cylinders,
            spec.lbn_mapping,
            &spec.zones,
        )
        .map_err(bad)?;
        if geometry.capacity_sectors() == 0 {
            return Err(bad("the zones map no sectors".into()));
        }
        let rot = rotation_ns(spec.rpm);
        let zone_stream_sector_ns = spec
            .zones
            .iter()
            .map(|z| {
                let spt = z.sectors_per_track as f64;
                let s = spec.surfaces as f64;
                // Per cylinder: s tracks of spt sectors, (s−1) track skews and one cylinder skew.
                let per_cyl = s * spt + (s - 1.0) * z.track_skew_sectors + z.cylinder_skew_sectors;
                rot / spt * per_cyl / (s * spt)
            })
            .collect();
        let cache = SegmentCache::new(spec.cache.segments, spec.cache.segment_sectors.max(1));
        Ok(Hdd {
            geometry,
            rotation_ns: rot,
            zone_stream_sector_ns,
            curve: match spec.seek {
                SeekModel::Curve {
                    single_ms,
                    average_ms,
                    full_ms,
                    cylinders,
                } => Some(CurveFit::new(single_ms, average_ms, full_ms, cylinders)),
                _ => None,
            },
            cache,
            free_ns: 0.0,
            cylinder: 0,
            head: 0,
            last_was_read: true,
            last_read_end: None,
            accept_ns: 0.0,
            dirty_end: None,
            prev_write_end: None,
            dirty_runs: VecDeque::with_capacity(64),
            write_segment_ends: VecDeque::new(),
            spec,
        })
    }

    /// The spec this drive was built from.
    pub fn spec(&self) -> &HddSpec {
        &self.spec
    }
    /// The mapped geometry.
    pub fn geometry(&self) -> &DiskGeometry {
        &self.geometry
    }
    /// One revolution, ns.
    pub fn rotation_ns(&self) -> f64 {
        self.rotation_ns
    }

    /// Forget all state (head at cylinder 0, empty cache, idle at time 0).
    pub fn reset(&mut self) {
        self.cache = SegmentCache::new(
            self.spec.cache.segments,
            self.spec.cache.segment_sectors.max(1),
        );
        self.free_ns = 0.0;
        self.cylinder = 0;
        self.head = 0;
        self.last_was_read = true;
        self.last_read_end = None;
        self.accept_ns = 0.0;
        self.dirty_end = None;
        self.prev_write_end = None;
        self.dirty_runs.clear();
        self.write_segment_ends.clear();
    }

    /// Seek (or head switch) time between two tracks, ns; write settle added for writes that
    /// move. DiskSim takes the larger of the seek and the head switch.
    #[inline]
    pub fn reposition_ns(&self, from: (u32, u32), to: (u32, u32), write: bool) -> f64 {
        let dist = from.0.abs_diff(to.0);
        let seek = match (&self.curve, dist) {
            (_, 0) => 0.0,
            (Some(c), _) => c.ms(dist),
            (None, _) => self.spec.seek.seek_ms(dist),
        };
        let hs = if from.1 != to.1 {
            self.spec.head_switch_ms
        } else {
            0.0
        };
        let t = seek.max(hs);
        if t > 0.0 && write {
            // DiskSim allows a negative settle (writes settle faster than the read seek
            // curve says); the total never goes below zero.
            (t + self.spec.write_settle_ms).max(0.0) * MS
        } else {
            t * MS
        }
    }

    #[inline]
    fn angle_at(&self, t_ns: f64) -> f64 {
        let r = t_ns / self.rotation_ns;
        r - r.floor()
    }

    /// Media access of `[lbn, lbn+n)` with the mechanism free from `t_ns` at (cyl, head);
    /// `earliest_media_ns` is when the first sector may be touched (data in the buffer for
    /// writes, minimum seek delay). A write appends each run it writes to its `written` list
    /// (see [`WriteAccess`]).
    ///
    /// Write settle: DiskSim adds it to every write repositioning, the track switches inside
    /// one transfer included (`mech_g1.c`, `dm_seek_time_g1`, called for each next track
    /// by `disk_initiate_seek`). Here it is added where the head arrives at a write's first
    /// track (a seek or a switch that starts an access), not on the switches inside a
    /// sequential write: a drive lays its skews out to hide its write switch (the one
    /// validation drive here with a write settle, HP C2247, has skews longer than switch + settle
    /// in every zone, and there both rules give the same times); a data sheet's one
    /// sustained rate holds for writes. See docs/hdd-model.md, "Writes".
    fn media_access(
        &self,
        t_ns: f64,
        from: (u32, u32),
        (lbn, n): (u64, u64),
        earliest_media_ns: f64,
        mark: u64,
        write: Option<WriteAccess<'_>>,
    ) -> MediaAccess {
        let (data, mut written) = match write {
            Some(w) => (Some(w.data), w.written),
            None => (None, None),
        };
        let write = data.is_some();
        let continues = data.is_some_and(|d| d.continues);
        let mut mark_ready = 0.0;
        let mut last_pbn = Pbn {
            cylinder: from.0,
            head: from.1,
            sector: 0,
            zone: 0,
        };
        let mut done_sectors = 0u64;
        let mut t = t_ns;
        let mut pos = from;
        let mut cur = lbn;
        let mut left = n;
        let mut first_ready = 0.0;
        let mut first_sector_ns = 0.0;
        let mut first = true;
        while left > 0 {
            let (p, run) = self.geometry.map(cur);
            let run = run.min(left);
            let span = run;
            last_pbn = Pbn {
                sector: p.sector + (run - 1) as u32,
                ..p
            };
            t += self.reposition_ns(pos, (p.cylinder, p.head), write && first && !continues);
            if first && t < earliest_media_ns {
                t = earliest_media_ns;
            }
            pos = (p.cylinder, p.head);
            let target = self.geometry.sector_angle(&p);
            t += rotational_wait_rev(self.angle_at(t), target) * self.rotation_ns;
            let spt = self.geometry.sectors_per_track(p.zone);
            let sector_ns = self.rotation_ns / spt as f64;
            if first {
                first_ready = t + sector_ns;
                first_sector_ns = sector_ns;
                first = false;
            }
            if mark > done_sectors && mark <= done_sectors + run {
                // Slips inside the run are rare; count the mark in logical sectors.
                mark_ready = t + sector_ns * (mark - done_sectors) as f64;
            }
            match data {
                Some(d) if d.outruns(done_sectors, run, t, sector_ns) => {
                    // Data still arriving. A sector is written only if it is in the buffer
                    // when it comes under the head; otherwise it passes unwritten and the
                    // write, which goes in order, resumes at that sector a revolution later
                    // (DiskSim's sector-by-sector media transfer).
                    for j in done_sectors..done_sectors + run {
                        let ready = d.ready_ns(j);
                        if ready > t {
                            t += ((ready - t) / self.rotation_ns).ceil() * self.rotation_ns;
                        }
                        t += sector_ns;
                    }
                }
                _ => t += sector_ns * span as f64,
            }
            if let Some((w, _)) = written.as_mut().filter(|(_, after)| cur + run > *after) {
                w.push_back(WrittenRun {
                    start: cur,
                    end: cur + run,
                    end_ns: t,
                    sector_ns,
                });
            }
            done_sectors += run;
            cur += run;
            left -= run;
        }
        MediaAccess {
            end_ns: t,
            sector_ns: first_sector_ns,
            mark_ready_ns: if mark_ready > 0.0 {
                mark_ready
            } else {
                first_ready
            },
            last: last_pbn,
            cylinder: pos.0,
            head: pos.1,
        }
    }

    fn clamp(&self, req: &IoRequest) -> (u64, u64) {
        let cap = self.geometry.capacity_sectors();
        let lbn = req.sector.min(cap.saturating_sub(1));
        let n = (req.sectors.max(1) as u64).min(cap - lbn);
        (lbn, n)
    }

    /// Where the head is at `t_ns`, given a possibly running read-ahead.
    #[inline]
    fn head_at(&self, t_ns: f64) -> (u32, u32) {
        if let Some(s) = self.cache.stream {
            let f = s.frontier_at(t_ns);
            // A finished read-ahead leaves the head on the track of the last sector it read.
            let f = if f >= s.limit { s.limit - 1 } else { f };
            let p = self
                .geometry
                .lbn_to_pbn(f.min(self.geometry.capacity_sectors() - 1));
            return (p.cylinder, p.head);
        }
        (self.cylinder, self.head)
    }

    /// Bring the read-ahead up to `t_ns`; when it has run to its limit, the mechanism is
    /// where the read-ahead left it (DiskSim moves the head with every prefetched sector),
    /// not where the last request's transfer ended.
    fn advance_read_ahead(&mut self, t_ns: f64) {
        if let Some(s) = self.cache.stream {
            if s.frontier_at(t_ns) >= s.limit {
                // Map only when the read-ahead ends (mapping costs a zone search).
                let (cylinder, head) = self.head_at(t_ns);
                self.cylinder = cylinder;
                self.head = head;
            }
            self.cache.advance(t_ns);
        }
    }

    /// Start a read-ahead after a read of `[lbn, end)` whose media access ended at `t_ns`
    /// with the head on `end_pbn`'s track.
    /// Start a read-ahead into `segment` from `end` (the end of the data just read or
    /// buffered) after a request for `[lbn, request_end)`. The count limits (maximum
    /// read-ahead, segment room) run from `request_end`, as in DiskSim
    /// (`request end + maximum read-ahead`); track and cylinder limits are where the data
    /// next to `end` lies. Track and cylinder ends count logical sectors (spare sectors and
    /// slips are not data).
    fn start_read_ahead(
        &mut self,
        segment: usize,
        (lbn, request_end): (u64, u64),
        end: u64,
        t_ns: f64,
        last: Pbn,
    ) {
        let c = &self.spec.cache;
        let cap = self.geometry.capacity_sectors();
        if c.prefetch == Prefetch::None || c.read_ahead_max_sectors == 0 || end >= cap {
            self.cache.stop_stream();
            return;
        }
        // Logical sectors after `end - 1` on its track.
        let to_track_end = self.geometry.map(end - 1).1 - 1;
        let next_track_sectors = |g: &DiskGeometry| {
            let first = end + to_track_end;
            if first < cap {
                g.map(first).1
            } else {
                0
            }
        };
        let spt = self.geometry.sectors_per_track(last.zone) as u64;
        let scheme_ahead = match c.prefetch {
            Prefetch::None => 0,
            Prefetch::Track => to_track_end,
            Prefetch::Cylinder => {
                let cylinder = self.geometry.lbn_to_pbn(end - 1).cylinder;
                let mut ahead = to_track_end;
                let mut next = end + to_track_end;
                while next < cap {
                    let (p, run) = self.geometry.map(next);
                    if p.cylinder != cylinder {
                        break;
                    }
                    ahead += run;
                    next += run;
                }
                ahead
            }
            Prefetch::Segment => u64::MAX,
            Prefetch::NextTrack => {
                let first = self.geometry.lbn_to_pbn(lbn);
                // DiskSim's DEC scheme: to the end of the track after the request, and one
                // track more when the request continues a read of the previous track.
                let sequential = self.last_read_end.is_some_and(|e| {
                    e <= lbn && lbn - e < 2 * spt && {
                        let prev = self.geometry.lbn_to_pbn(e - 1);
                        (prev.cylinder == first.cylinder && prev.head + 1 == first.head)
                            || (prev.cylinder + 1 == first.cylinder && first.head == 0)
                            || (prev.cylinder == first.cylinder && prev.head == first.head)
                    }
                });
                if sequential {
                    to_track_end + next_track_sectors(&self.geometry)
                } else if c.read_ahead_max_sectors >= spt {
                    to_track_end
                } else {
                    // The scheme works in whole tracks; a drive whose read-ahead cannot
                    // hold a track reads ahead only for a detected stream. (Inferred: the
                    // Atlas III, 64-sector read-ahead, misses on the second read of every
                    // pair; the Atlas 10K and Cheetah 9LP, read-ahead ≥ a track, hit.)
                    0
                }
            }
        };
        let mut count_limit = request_end + c.read_ahead_max_sectors;
        if !c.read_ahead_over_requested {
            count_limit = count_limit.min(lbn + c.segment_sectors);
        }
        let limit = count_limit.min(end.saturating_add(scheme_ahead)).min(cap);
        if limit <= end {
            self.cache.stop_stream();
            return;
        }
        let ahead = limit - end;
        let sector_ns = self.zone_stream_sector_ns[last.zone as usize];
        self.cache.stream = Some(Stream {
            segment,
            next: end,
            t0_ns: t_ns,
            sector_ns,
            limit: end + ahead,
        });
    }

    fn read(&mut self, arrival_ns: f64, lbn: u64, n: u64) -> f64 {
        let o = &self.spec.overheads;
        let bus = self.spec.bus.read_sector_ms * MS;
        let start = arrival_ns.max(self.free_ns);
        let caching = self.spec.cache.segments > 0;
        let end = lbn + n;
        let per_req = o.per_request_ms * MS;
        let (hit_ovh, miss_ovh, disc_ovh) = if self.last_was_read {
            (
                o.read_hit_after_read_ms,
                o.read_miss_after_read_ms,
                o.read_disconnect_after_read_ms,
            )
        } else {
            (
                o.read_hit_after_write_ms,
                o.read_miss_after_write_ms,
                o.read_disconnect_after_write_ms,
            )
        };
        let (hit_ovh, miss_ovh, disc_ovh) = (hit_ovh * MS, miss_ovh * MS, disc_ovh * MS);
        let completion_ovh = o.read_completion_ms * MS;
        let prep = o.data_prep_ms * MS;
        let reselect = o.first_reselect_ms * MS;
        self.last_was_read = true;
        self.prev_write_end = None;
        if caching {
            if let Some(done) = self.read_from_cache(start, lbn, n, per_req + hit_ovh + prep, bus) {
                self.note_read(lbn, end);
                self.free_ns = done + completion_ovh;
                return done + completion_ovh;
            }
        }
        // Miss (or partial hit): the mechanism is needed; any read-ahead stops now.
        let from = self.head_at(start);
        self.cache.stop_stream();
        let (prefix, ovh) = match if caching {
            self.cache.lookup(lbn, n)
        } else {
            None
        } {
            Some((_, have)) if have > 0 => (have, hit_ovh),
            _ => (0, miss_ovh),
        };
        let t_cmd = start + per_req + ovh;
        // The drive reconnects once the water mark is buffered, then moves data no faster
        // than the media delivers it. The mark is a whole number of sectors of the request
        // (at most a segment), rounded down, at least one (DiskSim's "Set watermark by
        // reqsize"), counted from the request's first sector.
        let mark_sectors = n.min(self.spec.cache.segment_sectors.max(1)) as f64;
        let wm_total = ((self.spec.bus.read_water_mark * mark_sectors).floor() as u64).max(1);
        let wm = wm_total.saturating_sub(prefix).max(1);
        let m = self.media_access(t_cmd, from, (lbn + prefix, n - prefix), t_cmd, wm, None);
        let reconnect = m.mark_ready_ns.max(t_cmd + disc_ovh);
        let bus_start = if prefix > 0 {
            t_cmd + prep
        } else {
            reconnect + reselect + prep
        };
        let done = (bus_start + n as f64 * bus).max(m.end_ns + bus) + completion_ovh;
        self.cylinder = m.cylinder;
        self.head = m.head;
        self.free_ns = done;
        if caching {
            let seg = self.cache.insert(lbn, end, false);
            self.start_read_ahead(seg, (lbn, end), end, m.end_ns, m.last);
            let min_ra = self.spec.cache.read_ahead_min_sectors;
            if let (Some(s), true) = (self.cache.stream, min_ra > 0) {
                let until = s.next + min_ra.min(s.limit - s.next);
                self.free_ns = self
                    .free_ns
                    .max(s.t0_ns + (until - s.next) as f64 * s.sector_ns);
            }
        }
        self.note_read(lbn, end);
        done
    }

    /// Serve a read from the buffer if it can be: entirely cached, or streaming in from a
    /// running read-ahead. Returns when the data has reached the host (before the
    /// completion overhead).
    fn read_from_cache(&mut self, start: f64, lbn: u64, n: u64, ovh: f64, bus: f64) -> Option<f64> {
        let end = lbn + n;
        self.advance_read_ahead(start);
        // A read-ahead running into this request: the data streams in as it is read.
        if let Some(s) = self.cache.stream {
            let seg = *self.cache.segment(s.segment);
            let first_in = seg.start <= lbn && lbn < seg.end;
            let first_coming =
                lbn >= seg.end && lbn == s.frontier_at(start) && self.spec.cache.almost_read_hits;
            if (first_in || first_coming) && end > seg.end && end <= s.limit {
                let ready_last = s.ready_ns(end - 1);
                let done = (start + ovh + n as f64 * bus).max(ready_last + bus);
                self.cache.touch(s.segment);
                if self.spec.cache.read_ahead_over_requested {
                    self.cache.drop_before(s.segment, end);
                }
                self.extend_stream(lbn, end);
                return Some(done);
            }
        }
        let (seg, have) = self.cache.lookup(lbn, n)?;
        if have < n {
            return None;
        }
        // Full hit: the mechanism is not needed.
        self.cache.touch(seg);
        if self.spec.cache.read_ahead_over_requested {
            // Data returned to the host is free space for read-ahead: the drive no longer
            // counts on it (measured drives with this setting miss on re-reads).
            self.cache.drop_before(seg, end);
        }
        let done = start + ovh + n as f64 * bus;
        if self.cache.stream.is_some_and(|s| s.segment == seg) {
            self.extend_stream(lbn, end);
        } else if self.spec.cache.read_ahead_on_hit && self.cache.stream.is_none() {
            // Idle after a hit, the drive goes back to the media to read ahead from the
            // segment's end, one positioning later.
            let seg_end = self.cache.segment(seg).end;
            let cap = self.geometry.capacity_sectors();
            if seg_end < cap {
                let m = self.media_access(
                    done,
                    (self.cylinder, self.head),
                    (seg_end, 1),
                    done,
                    1,
                    None,
                );
                self.cylinder = m.cylinder;
                self.head = m.head;
                let seg_start = self.cache.segment(seg).start;
                let before = self.geometry.lbn_to_pbn(seg_end - 1);
                self.start_read_ahead(
                    seg,
                    (seg_start.max(lbn), end),
                    seg_end,
                    m.end_ns - m.sector_ns,
                    before,
                );
            }
        }
        Some(done)
    }

    fn note_read(&mut self, lbn: u64, end: u64) {
        let _ = lbn;
        self.dirty_end = None;
        self.last_read_end = Some(end);
    }

    /// A read served from a running read-ahead: the read-ahead limit is recomputed from
    /// this request as if it had been read from the media (DiskSim recomputes the
    /// segment's maximum read-ahead for every request it serves).
    fn extend_stream(&mut self, lbn: u64, end: u64) {
        let Some(s) = self.cache.stream else { return };
        let c = &self.spec.cache;
        let cap = self.geometry.capacity_sectors();
        let mut want = (end + c.read_ahead_max_sectors).min(cap);
        if !c.read_ahead_over_requested {
            want = want.min(lbn + c.segment_sectors);
        }
        if c.prefetch == Prefetch::Track
            || c.prefetch == Prefetch::NextTrack
            || c.prefetch == Prefetch::Cylinder
        {
            let last = self.geometry.lbn_to_pbn(end - 1);
            let spt = self.geometry.sectors_per_track(last.zone) as u64;
            let to_track_end = spt - 1 - last.sector as u64;
            let extra = match c.prefetch {
                Prefetch::NextTrack => spt,
                Prefetch::Cylinder => (self.spec.surfaces - 1 - last.head) as u64 * spt,
                _ => 0,
            };
            want = want.min(end + to_track_end + extra);
        }
        if want > s.limit {
            self.cache.stream = Some(Stream { limit: want, ..s });
        }
    }

    fn write(&mut self, arrival_ns: f64, lbn: u64, n: u64) -> f64 {
        let o = self.spec.overheads.clone();
        let bus = self.spec.bus.write_sector_ms * MS;
        let end = lbn + n;
        let caching = self.spec.cache.segments > 0;
        let write_back = caching && self.spec.cache.write_back_level > 0;
        // A write that appends to the dirty data still being written is taken into the
        // buffer at once (DiskSim's BUFFER_APPEND); any other request waits for the media.
        let appends = write_back && self.dirty_end == Some(lbn) && arrival_ns < self.free_ns;
        // With more than one write segment, a write that does not append is taken into a
        // free one as soon as the controller can take it (the media may still be writing
        // earlier segments), or when the oldest taken segment is on the platter.
        let stacks = write_back
            && !appends
            && self.spec.cache.write_segments > 1
            && self.dirty_end.is_some();
        let start = if appends {
            arrival_ns.max(self.accept_ns)
        } else if stacks {
            let t = arrival_ns.max(self.accept_ns);
            let ends = &self.write_segment_ends;
            let k = self.spec.cache.write_segments;
            if ends.len() >= k {
                // Segments finish in the order they were taken: at most k − 1 may still be
                // taken when this write comes in.
                t.max(ends[ends.len() - k])
            } else {
                t
            }
        } else {
            arrival_ns.max(self.free_ns)
        };
        let after_read = self.last_was_read;
        self.last_was_read = false;
        self.advance_read_ahead(start);
        let from = self.head_at(start);
        // A write stops the read-ahead ("Write hit stop prefetch" in every spec we know).
        self.cache.stop_stream();
        let per_req = o.per_request_ms * MS;
        // DiskSim marks a write for the extra disconnect sequence when the segment it lands
        // in was last used by a write that this one does not continue: on a drive with a
        // write segment, a write right after a non-sequential write. (On the HP C2247
        // trace this rule picks exactly the writes the drive reported as "Trip"le
        // disconnects, 1660 of 4884; the others were "Doub"le.)
        let extra = match (&o.extra_write_disconnect, self.prev_write_end) {
            (Some(x), Some(e)) if e != lbn => Some(x),
            _ => None,
        };
        self.prev_write_end = Some(end);
        let (cmd_ms, mech_delay_ms, data_delay_ms) = match (extra, write_back) {
            (Some(x), false) => (
                x.command_ms,
                x.seek_delta_ms,
                x.disconnect_ms + x.inter_disconnect_ms + o.first_reselect_ms,
            ),
            _ => {
                let c = match (write_back, after_read) {
                    (true, true) => o.write_hit_after_read_ms,
                    (true, false) => o.write_hit_after_write_ms,
                    (false, true) => o.write_miss_after_read_ms,
                    (false, false) => o.write_miss_after_write_ms,
                };
                (c, 0.0, 0.0)
            }
        };
        let t_cmd = start + per_req + cmd_ms * MS;
        let data_start = t_cmd + (data_delay_ms + o.data_prep_ms) * MS;
        let data_end = data_start + n as f64 * bus;
        let mech_start = t_cmd + mech_delay_ms * MS;
        // The seek starts after the command overhead, at the earliest `min_seek_delay` before
        // the head may settle (DiskSim pads shorter seeks); the media then writes each sector
        // only if its data has arrived (DiskSim's `disk_buffer_block_available`). Drives with
        // the HP extra-disconnect behaviour first buffer min(n, 10) sectors, or 15 for writes
        // of 45 sectors or more (DiskSim hard-codes these counts for such drives).
        let mech_from = mech_start.max(self.free_ns);
        let earliest = mech_from + o.min_seek_delay_ms.max(0.0) * MS;
        let threshold_sectors = if o.extra_write_disconnect.is_some() {
            if n < 45 {
                n.min(10)
            } else {
                15
            }
        } else {
            1
        };
        let data = WriteData {
            start_ns: data_start,
            bus_sector_ns: bus,
            threshold_sectors,
            continues: appends,
        };
        let mut written = std::mem::take(&mut self.dirty_runs);
        if !appends {
            // A new write stream: the media has written everything before it.
            written.clear();
        }
        let m = self.media_access(
            mech_from,
            from,
            (lbn, n),
            earliest,
            1,
            Some(WriteAccess {
                data,
                // The bound below needs sector `end − 1 − segment` and, for a later append,
                // those after it.
                written: write_back.then_some((
                    &mut written,
                    end.saturating_sub(self.spec.cache.segment_sectors + 1),
                )),
            }),
        );
        self.cylinder = m.cylinder;
        self.head = m.head;
        // The write buffer is bounded (DiskSim's `disk_buffer_transfer_size`): a write moves
        // from the host at most a segment's worth of sectors beyond those the media has
        // written (`seg->size − (outblkno − seg_owner->inblkno)`), then disconnects until the
        // media frees space. So the last sector can come in only after the sector a segment
        // before it is on the platter. (Its media is not delayed by this: the data a sector
        // needs arrives a segment ahead of it, and every drive's segment holds more than the
        // sectors the media writes in one bus sector time.)
        let mut data_end = data_end;
        if write_back {
            let segment = self.spec.cache.segment_sectors;
            if end > segment {
                let must_be_written = end - 1 - segment;
                if let Some(r) = written
                    .iter()
                    .find(|r| r.start <= must_be_written && must_be_written < r.end)
                {
                    data_end = data_end.max(r.written_ns(must_be_written) + bus);
                }
            }
            // A later write of this stream ends past `end`: it needs no sector before
            // `end − segment`.
            while written.front().is_some_and(|r| r.end + segment <= end) {
                written.pop_front();
            }
        } else {
            written.clear();
        }
        self.dirty_runs = written;
        if caching && (self.spec.cache.read_hits_on_write_data || write_back) {
            self.cache.insert(lbn, end, true);
        }
        self.dirty_end = if write_back { Some(end) } else { None };
        // Only a drive that stacks writes needs to know when each segment frees.
        if write_back && self.spec.cache.write_segments > 1 {
            while self.write_segment_ends.front().is_some_and(|&e| e <= start) {
                self.write_segment_ends.pop_front();
            }
            match self.write_segment_ends.back_mut() {
                Some(last) if appends => *last = m.end_ns,
                _ => self.write_segment_ends.push_back(m.end_ns),
            }
        } else {
            self.write_segment_ends.clear();
        }
        if write_back {
            // Reported once the data is in the buffer; the media write goes on behind it.
            self.free_ns = m.end_ns;
            let done = data_end + o.write_completion_ms * MS;
            self.accept_ns = done;
            done
        } else {
            let reselect = if extra.is_some() {
                o.other_reselect_ms
            } else {
                o.first_reselect_ms
            };
            let done = m.end_ns.max(data_end) + (reselect + o.write_completion_ms) * MS;
            self.free_ns = m.end_ns;
            done
        }
    }
}

impl Device for Hdd {
    fn name(&self) -> &str {
        &self.spec.name
    }
    fn rotational(&self) -> bool {
        true
    }
    fn capacity_sectors(&self) -> u64 {
        self.geometry.capacity_sectors()
    }
    fn submit(&mut self, arrival_ns: f64, req: &IoRequest) -> f64 {
        match req.op {
            Op::Read => {
                let (lbn, n) = self.clamp(req);
                self.read(arrival_ns, lbn, n)
            }
            Op::Write => {
                let (lbn, n) = self.clamp(req);
                self.write(arrival_ns, lbn, n)
            }
            // A flush waits for the media; a discard costs a command.
            Op::Flush | Op::Discard => {
                let start = arrival_ns.max(self.free_ns);
                let done = start
                    + self.spec.overheads.per_request_ms * MS
                    + self.spec.overheads.write_completion_ms * MS;
                self.free_ns = done;
                done
            }
        }
    }
    fn positioning_ns(&self, at_ns: f64, req: &IoRequest) -> f64 {
        let (lbn, _) = self.clamp(req);
        let t = at_ns.max(self.free_ns);
        let from = self.head_at(t);
        let p = self.geometry.lbn_to_pbn(lbn);
        let write = req.op == Op::Write;
        let arrive = t + self.reposition_ns(from, (p.cylinder, p.head), write);
        arrive - at_ns
            + rotational_wait_rev(self.angle_at(arrive), self.geometry.sector_angle(&p))
                * self.rotation_ns
    }
    fn queue_depth(&self) -> usize {
        self.spec.queue_depth
    }
}

#[cfg(test)]
mod tests;
