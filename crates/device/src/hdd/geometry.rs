//! Disk geometry: zones, LBN → physical (cylinder, surface, sector) mapping, spare sectors,
//! slipped defects and the angular position of every physical sector (track and cylinder skew).
//!
//! The semantics follow DiskSim 4.0's `layout_g1` (diskmodel/layout_g1.c): logical blocks
//! fill a zone cylinder by cylinder, surface by surface; a zone's "empty space at the front"
//! is counted in logical units before the mapping; spares sit at the end (or front) of each
//! sparing unit (track, cylinder, range of cylinders, zone) and slipped sectors inside a unit
//! push later blocks into that unit's spares, except in the "slip to end" schemes where slips
//! push every later block of the zone.

use std::cell::Cell;

use serde::{Deserialize, Serialize};

/// Where spare sectors are kept (DiskSim's "Sparing scheme used", numbers in brackets).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Sparing {
    /// No spares (0).
    None,
    /// `spares` whole tracks at the end of each zone; slips name slipped tracks (1).
    TracksAtZoneEnd,
    /// `spares` sectors at the end of each cylinder (2).
    SectorsPerCylinder,
    /// `spares` sectors at the end of each track (3).
    SectorsPerTrack,
    /// Per cylinder, but slips push all later blocks toward the disk end (4).
    SectorsPerCylinderSlipToEnd,
    /// `spares` sectors at the front of each cylinder (5).
    SectorsPerCylinderAtFront,
    /// At the front of each cylinder, slips pushed to the end (6).
    SectorsPerCylinderAtFrontSlipToEnd,
    /// Spares only at the end of the disk; slips push all later blocks (7).
    SectorsAtDiskEnd,
    /// `spares` sectors at the end of each range of `range_cylinders` cylinders (8).
    SectorsPerRange,
    /// `spares` sectors at the end of each zone (9).
    SectorsPerZone,
    /// At the end of each zone, slips pushed to the end (10).
    SectorsPerZoneSlipToEnd,
}

impl Sparing {
    /// From DiskSim's scheme number.
    pub fn from_disksim(n: i64) -> Option<Sparing> {
        Some(match n {
            0 => Sparing::None,
            1 => Sparing::TracksAtZoneEnd,
            2 => Sparing::SectorsPerCylinder,
            3 => Sparing::SectorsPerTrack,
            4 => Sparing::SectorsPerCylinderSlipToEnd,
            5 => Sparing::SectorsPerCylinderAtFront,
            6 => Sparing::SectorsPerCylinderAtFrontSlipToEnd,
            7 => Sparing::SectorsAtDiskEnd,
            8 => Sparing::SectorsPerRange,
            9 => Sparing::SectorsPerZone,
            10 => Sparing::SectorsPerZoneSlipToEnd,
            _ => return None,
        })
    }
    /// The name used in preset files.
    pub fn as_str(self) -> &'static str {
        match self {
            Sparing::None => "none",
            Sparing::TracksAtZoneEnd => "tracks_at_zone_end",
            Sparing::SectorsPerCylinder => "sectors_per_cylinder",
            Sparing::SectorsPerTrack => "sectors_per_track",
            Sparing::SectorsPerCylinderSlipToEnd => "sectors_per_cylinder_slip_to_end",
            Sparing::SectorsPerCylinderAtFront => "sectors_per_cylinder_at_front",
            Sparing::SectorsPerCylinderAtFrontSlipToEnd => {
                "sectors_per_cylinder_at_front_slip_to_end"
            }
            Sparing::SectorsAtDiskEnd => "sectors_at_disk_end",
            Sparing::SectorsPerRange => "sectors_per_range",
            Sparing::SectorsPerZone => "sectors_per_zone",
            Sparing::SectorsPerZoneSlipToEnd => "sectors_per_zone_slip_to_end",
        }
    }
    /// Parse a preset-file name.
    pub fn parse(s: &str) -> Option<Sparing> {
        (0..=10)
            .filter_map(Sparing::from_disksim)
            .find(|k| k.as_str() == s)
    }
    fn slips_to_end(self) -> bool {
        matches!(
            self,
            Sparing::SectorsPerCylinderSlipToEnd
                | Sparing::SectorsPerCylinderAtFrontSlipToEnd
                | Sparing::SectorsAtDiskEnd
                | Sparing::SectorsPerZoneSlipToEnd
        )
    }
    fn spares_at_front(self) -> bool {
        matches!(
            self,
            Sparing::SectorsPerCylinderAtFront | Sparing::SectorsPerCylinderAtFrontSlipToEnd
        )
    }
}

/// One zone (band) as given by a spec: a run of cylinders with the same sectors per track.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ZoneSpec {
    /// First physical cylinder of the zone.
    pub first_cylinder: u32,
    /// Last physical cylinder (inclusive).
    pub last_cylinder: u32,
    /// Physical sectors on every track of the zone.
    pub sectors_per_track: u32,
    /// Angular offset of the zone's first logical block, in sectors.
    pub first_block_offset_sectors: f64,
    /// Management area at the zone front (not mapped), in sectors.
    pub reserved_front_sectors: u64,
    /// Sectors skipped at a track (head) switch.
    pub track_skew_sectors: f64,
    /// Sectors skipped at a cylinder switch.
    pub cylinder_skew_sectors: f64,
    /// Spares per sparing unit (sectors, or tracks for `TracksAtZoneEnd`).
    pub spares: u64,
    /// Slipped defects: zone-relative physical sector numbers (track numbers for
    /// `TracksAtZoneEnd`), as DiskSim lists them.
    pub slips: Vec<u64>,
}

#[cfg(test)]
impl ZoneSpec {
    /// Cylinders `first..=last` at `sectors_per_track`, with no offset, reserve, skew,
    /// spares or slips: the zone tests build on when only the numbering is under test.
    pub(crate) fn plain(first: u32, last: u32, sectors_per_track: u32) -> ZoneSpec {
        ZoneSpec {
            first_cylinder: first,
            last_cylinder: last,
            sectors_per_track,
            first_block_offset_sectors: 0.0,
            reserved_front_sectors: 0,
            track_skew_sectors: 0.0,
            cylinder_skew_sectors: 0.0,
            spares: 0,
            slips: vec![],
        }
    }
}

/// A physical block address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pbn {
    /// Cylinder.
    pub cylinder: u32,
    /// Surface (head).
    pub head: u32,
    /// Physical sector on the track (0-based, before skew).
    pub sector: u32,
    /// Index of the zone.
    pub zone: u32,
}

/// Per-zone numbers derived once so that the per-request path is arithmetic only.
#[derive(Clone, Debug)]
struct Zone {
    spec: ZoneSpec,
    first_lbn: u64,
    /// Logical blocks the zone maps.
    blocks: u64,
    sectors_per_cylinder: u64,
    /// Physical sectors in one sparing unit and how many of them carry logical blocks.
    unit_physical: u64,
    unit_logical: u64,
    /// Fraction of a revolution one sector spans.
    sector_rev: f64,
}

/// The mapped geometry of a disk.
#[derive(Clone, Debug)]
pub struct DiskGeometry {
    surfaces: u32,
    sparing: Sparing,
    serpentine: u8,
    zones: Vec<Zone>,
    capacity_sectors: u64,
    /// The last run mapped: (first LBN, run length, its place). Sequential requests land in
    /// it, so most mappings are one subtraction.
    last_run: Cell<(u64, u64, Pbn)>,
}

/// Why a geometry is not usable.
pub type DiskGeometryError = String;

impl DiskGeometry {
    /// Build a geometry. `mapping` is DiskSim's "LBN-to-PBN mapping scheme" (0 = conventional,
    /// 1/2 = serpentine cylinder switches); `range_cylinders` is used by `SectorsPerRange`.
    pub fn new(
        surfaces: u32,
        sparing: Sparing,
        range_cylinders: u32,
        mapping: u8,
        zone_specs: &[ZoneSpec],
    ) -> Result<DiskGeometry, DiskGeometryError> {
        if surfaces == 0 {
            return Err("surfaces must be at least 1".into());
        }
        if zone_specs.is_empty() {
            return Err("at least one zone is needed".into());
        }
        if mapping > 2 {
            return Err(format!(
                "LBN-to-PBN mapping scheme {mapping} unknown (0, 1 or 2)"
            ));
        }
        let mut zones = Vec::with_capacity(zone_specs.len());
        let mut lbn = 0u64;
        let mut prev_last: Option<u32> = None;
        for (i, z) in zone_specs.iter().enumerate() {
            if z.last_cylinder < z.first_cylinder {
                return Err(format!("zone {i}: last cylinder before first"));
            }
            if let Some(p) = prev_last {
                if z.first_cylinder <= p {
                    return Err(format!("zone {i}: cylinders overlap the previous zone"));
                }
            }
            prev_last = Some(z.last_cylinder);
            if z.sectors_per_track == 0 {
                return Err(format!("zone {i}: sectors per track must be positive"));
            }
            let spt = z.sectors_per_track as u64;
            let cylinders = (z.last_cylinder - z.first_cylinder + 1) as u64;
            let spc = spt * surfaces as u64;
            let total = cylinders * spc;
            let slips = z.slips.len() as u64;
            let (unit_physical, spares_in_zone) = match sparing {
                Sparing::None => (total, 0),
                Sparing::TracksAtZoneEnd => (total, z.spares * spt),
                Sparing::SectorsPerTrack => (spt, z.spares * cylinders * surfaces as u64),
                Sparing::SectorsPerCylinder
                | Sparing::SectorsPerCylinderAtFront
                | Sparing::SectorsPerCylinderSlipToEnd
                | Sparing::SectorsPerCylinderAtFrontSlipToEnd => (spc, z.spares * cylinders),
                Sparing::SectorsAtDiskEnd => (total, 0),
                Sparing::SectorsPerRange => {
                    if range_cylinders == 0 {
                        return Err("sparing range must be at least 1 cylinder".into());
                    }
                    let r = range_cylinders as u64;
                    (spc * r, z.spares * (cylinders / r))
                }
                Sparing::SectorsPerZone | Sparing::SectorsPerZoneSlipToEnd => (total, z.spares),
            };
            let unit_spares = match sparing {
                Sparing::None | Sparing::SectorsAtDiskEnd | Sparing::TracksAtZoneEnd => 0,
                _ => z.spares,
            };
            if unit_spares >= unit_physical {
                return Err(format!("zone {i}: spares fill the whole sparing unit"));
            }
            let slipped_away = if sparing.slips_to_end() { slips } else { 0 };
            let blocks = total
                .checked_sub(z.reserved_front_sectors + spares_in_zone + slipped_away)
                .ok_or_else(|| format!("zone {i}: reserved space and spares exceed the zone"))?;
            let mut spec = z.clone();
            spec.slips.sort_unstable();
            zones.push(Zone {
                spec,
                first_lbn: lbn,
                blocks,
                sectors_per_cylinder: spc,
                unit_physical,
                unit_logical: unit_physical - unit_spares,
                sector_rev: 1.0 / spt as f64,
            });
            lbn += blocks;
        }
        let none = Pbn {
            cylinder: 0,
            head: 0,
            sector: 0,
            zone: 0,
        };
        Ok(DiskGeometry {
            surfaces,
            sparing,
            serpentine: mapping,
            zones,
            capacity_sectors: lbn,
            last_run: Cell::new((u64::MAX, 0, none)),
        })
    }

    /// Logical blocks the layout maps.
    pub fn capacity_sectors(&self) -> u64 {
        self.capacity_sectors
    }
    /// Number of surfaces.
    pub fn surfaces(&self) -> u32 {
        self.surfaces
    }
    /// Number of zones.
    pub fn zone_count(&self) -> usize {
        self.zones.len()
    }
    /// The zone spec at `index`.
    pub fn zone_spec(&self, index: usize) -> &ZoneSpec {
        &self.zones[index].spec
    }
    /// Sectors per track of zone `index`.
    pub fn sectors_per_track(&self, zone: u32) -> u32 {
        self.zones[zone as usize].spec.sectors_per_track
    }
    /// Highest physical cylinder.
    pub fn last_cylinder(&self) -> u32 {
        self.zones.last().map(|z| z.spec.last_cylinder).unwrap_or(0)
    }

    /// Zone holding `lbn` (binary search on first LBNs; `lbn` must be below capacity).
    #[inline]
    pub fn zone_of(&self, lbn: u64) -> usize {
        self.zones
            .partition_point(|z| z.first_lbn <= lbn)
            .saturating_sub(1)
    }

    /// Map a logical block to its physical place. `lbn` beyond the capacity is clamped to the
    /// last block (callers validate ranges before).
    #[inline]
    pub fn lbn_to_pbn(&self, lbn: u64) -> Pbn {
        self.map(lbn).0
    }

    /// Map `lbn` and say how many logical blocks from it on (itself included) follow each
    /// other without a gap on the same track: the run a transfer can take in one sweep.
    #[inline]
    pub fn map(&self, lbn: u64) -> (Pbn, u64) {
        let lbn = lbn.min(self.capacity_sectors.saturating_sub(1));
        let (first, len, p) = self.last_run.get();
        if lbn >= first && lbn - first < len {
            let d = lbn - first;
            return (
                Pbn {
                    sector: p.sector + d as u32,
                    ..p
                },
                len - d,
            );
        }
        let r = self.map_uncached(lbn);
        self.last_run.set((lbn, r.1, r.0));
        r
    }

    fn map_uncached(&self, lbn: u64) -> (Pbn, u64) {
        let zi = self.zone_of(lbn);
        let z = &self.zones[zi];
        let spt = z.spec.sectors_per_track as u64;
        let logical = lbn - z.first_lbn + z.spec.reserved_front_sectors;
        let slips = &z.spec.slips;
        // `gap_after`: physical index of the next sector that does not carry the next LBN
        // (a slip, a spare area, the zone's end).
        let (physical, gap_after) = match self.sparing {
            Sparing::TracksAtZoneEnd => {
                // Slips are whole tracks: each slipped track at or before ours pushes us on.
                let mut track = logical / spt;
                for &s in slips.iter() {
                    if s <= track {
                        track += 1;
                    }
                }
                let ph = track * spt + logical % spt;
                (ph, track * spt + spt)
            }
            s if s.slips_to_end() => {
                let mut v = logical;
                let mut next_slip = u64::MAX;
                for &sl in slips.iter() {
                    if sl <= v {
                        v += 1;
                    } else {
                        next_slip = next_slip.min(sl);
                    }
                }
                let unit = v / z.unit_logical;
                let in_unit = v - unit * z.unit_logical;
                let front = if s.spares_at_front() {
                    z.unit_physical - z.unit_logical
                } else {
                    0
                };
                let ph = unit * z.unit_physical + front + in_unit;
                let unit_end = unit * z.unit_physical + front + z.unit_logical;
                let slip_gap = if next_slip == u64::MAX {
                    u64::MAX
                } else {
                    ph + (next_slip - v)
                };
                (ph, unit_end.min(slip_gap))
            }
            s => {
                let unit = logical / z.unit_logical;
                let front = if s.spares_at_front() {
                    z.unit_physical - z.unit_logical
                } else {
                    0
                };
                let base = unit * z.unit_physical;
                let mut off = front + (logical - unit * z.unit_logical);
                let mut end_of_logical = front + z.unit_logical;
                let mut gap = u64::MAX;
                // Slips inside this unit push later blocks into the unit's spares.
                let lo = slips.partition_point(|&x| x < base);
                for &sl in &slips[lo..] {
                    if sl >= base + z.unit_physical {
                        break;
                    }
                    end_of_logical += 1;
                    if sl - base <= off {
                        off += 1;
                    } else {
                        gap = gap.min(base + (sl - base));
                    }
                }
                (base + off, (base + end_of_logical).min(gap))
            }
        };
        let cyl_rel = physical / z.sectors_per_cylinder;
        let in_cyl = physical - cyl_rel * z.sectors_per_cylinder;
        let head = (in_cyl / spt) as u32;
        let sector = in_cyl - head as u64 * spt;
        let cylinder = z.spec.first_cylinder + cyl_rel as u32;
        let head = self.surface_on_cylinder(z, cylinder, head);
        let track_left = spt - sector;
        let zone_left = z.first_lbn + z.blocks - lbn;
        let run = track_left.min(gap_after - physical).min(zone_left).max(1);
        (
            Pbn {
                cylinder,
                head,
                sector: sector as u32,
                zone: zi as u32,
            },
            run,
        )
    }

    #[inline]
    fn surface_on_cylinder(&self, z: &Zone, cylinder: u32, head: u32) -> u32 {
        let odd = match self.serpentine {
            1 => (cylinder - z.spec.first_cylinder) % 2 == 1,
            2 => cylinder % 2 == 1,
            _ => false,
        };
        if odd {
            self.surfaces - 1 - head
        } else {
            head
        }
    }

    /// Angular position (fraction of a revolution, in [0, 1)) at which physical sector `p`
    /// begins, relative to the index mark: first-block offset, then a track skew for every
    /// track switch and a cylinder skew for every cylinder switch since the zone start
    /// (DiskSim's `g1_map_pbn_skew`).
    #[inline]
    pub fn sector_angle(&self, p: &Pbn) -> f64 {
        let z = &self.zones[p.zone as usize];
        let cyl_rel = (p.cylinder - z.spec.first_cylinder) as f64;
        let surf = self.surface_on_cylinder(z, p.cylinder, p.head) as f64;
        let switches = surf + (self.surfaces as f64 - 1.0) * cyl_rel;
        let mut slip_sectors = 0.0;
        if matches!(
            self.sparing,
            Sparing::SectorsPerCylinder
                | Sparing::SectorsPerCylinderSlipToEnd
                | Sparing::SectorsPerCylinderAtFront
                | Sparing::SectorsPerCylinderAtFrontSlipToEnd
                | Sparing::SectorsPerTrack
        ) && !z.spec.slips.is_empty()
        {
            let mut tracks = cyl_rel as u64 * self.surfaces as u64;
            if self.sparing == Sparing::SectorsPerTrack {
                tracks += p.head as u64;
            }
            let cutoff = tracks * z.spec.sectors_per_track as u64;
            slip_sectors = z.spec.slips.partition_point(|&s| s < cutoff) as f64;
        }
        let sectors = z.spec.first_block_offset_sectors
            + switches * z.spec.track_skew_sectors
            + cyl_rel * z.spec.cylinder_skew_sectors
            + slip_sectors
            + p.sector as f64;
        let a = sectors * z.sector_rev;
        a - a.floor()
    }

    /// Fraction of a revolution one sector of zone `zone` spans.
    #[inline]
    pub fn sector_rev(&self, zone: u32) -> f64 {
        self.zones[zone as usize].sector_rev
    }

    /// Starting at `lbn`, how many of the next `n` logical blocks lie on the same track
    /// without a gap (slip, spare), and how many physical sectors they span.
    #[inline]
    pub fn run_on_track(&self, lbn: u64, n: u64) -> (u64, u64) {
        let k = self.map(lbn).1.min(n).max(1);
        (k, k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conventional_mapping_fills_surfaces_then_cylinders() {
        let g = DiskGeometry::new(
            2,
            Sparing::None,
            1,
            0,
            &[ZoneSpec::plain(0, 9, 100), ZoneSpec::plain(10, 19, 50)],
        )
        .unwrap();
        assert_eq!(g.capacity_sectors(), 10 * 2 * 100 + 10 * 2 * 50);
        assert_eq!(
            g.lbn_to_pbn(0),
            Pbn {
                cylinder: 0,
                head: 0,
                sector: 0,
                zone: 0
            }
        );
        assert_eq!(
            g.lbn_to_pbn(100),
            Pbn {
                cylinder: 0,
                head: 1,
                sector: 0,
                zone: 0
            }
        );
        assert_eq!(
            g.lbn_to_pbn(201),
            Pbn {
                cylinder: 1,
                head: 0,
                sector: 1,
                zone: 0
            }
        );
        assert_eq!(
            g.lbn_to_pbn(2000),
            Pbn {
                cylinder: 10,
                head: 0,
                sector: 0,
                zone: 1
            }
        );
    }

    #[test]
    fn spares_per_range_and_slips_push_blocks() {
        // 1 surface, 10 sectors per track, range of 2 cylinders = 20 physical, 2 spares.
        let mut z = ZoneSpec::plain(0, 3, 10);
        z.spares = 2;
        z.slips = vec![5];
        let g = DiskGeometry::new(1, Sparing::SectorsPerRange, 2, 0, &[z]).unwrap();
        assert_eq!(g.capacity_sectors(), 36);
        assert_eq!(g.lbn_to_pbn(4).sector, 4);
        // LBN 5 slips over physical 5.
        assert_eq!(g.lbn_to_pbn(5).sector, 6);
        // The range holds 18 logical blocks: LBN 18 starts range 2 at cylinder 2.
        assert_eq!(
            g.lbn_to_pbn(18),
            Pbn {
                cylinder: 2,
                head: 0,
                sector: 0,
                zone: 0
            }
        );
        // The slip ends the run on track 0 from LBN 0 after five blocks; LBN 5 continues
        // after the slipped sector.
        assert_eq!(g.run_on_track(0, 10), (5, 5));
        assert_eq!(g.run_on_track(5, 10), (4, 4));
        // Runs stop at the end of the unit's logical blocks (spares follow).
        assert_eq!(g.run_on_track(10, 100), (8, 8));
    }

    #[test]
    fn track_sparing_skips_slipped_tracks() {
        let mut z = ZoneSpec::plain(0, 4, 10);
        z.spares = 2;
        z.slips = vec![1];
        let g = DiskGeometry::new(1, Sparing::TracksAtZoneEnd, 1, 0, &[z]).unwrap();
        assert_eq!(g.capacity_sectors(), 30);
        assert_eq!(g.lbn_to_pbn(10).cylinder, 2);
    }

    #[test]
    fn skew_advances_angle_per_track_and_cylinder() {
        let mut z = ZoneSpec::plain(0, 9, 100);
        z.track_skew_sectors = 10.0;
        z.cylinder_skew_sectors = 20.0;
        let g = DiskGeometry::new(2, Sparing::None, 1, 0, &[z]).unwrap();
        let a0 = g.sector_angle(&g.lbn_to_pbn(0));
        let a1 = g.sector_angle(&g.lbn_to_pbn(100));
        let a2 = g.sector_angle(&g.lbn_to_pbn(200));
        assert!((a0 - 0.0).abs() < 1e-12);
        assert!((a1 - 0.10).abs() < 1e-12);
        // Cylinder 1 head 0: one track switch (surfaces-1) plus one cylinder skew.
        assert!((a2 - 0.30).abs() < 1e-12);
    }

    #[test]
    fn serpentine_reverses_heads_on_odd_cylinders() {
        let g = DiskGeometry::new(2, Sparing::None, 1, 1, &[ZoneSpec::plain(0, 9, 10)]).unwrap();
        assert_eq!(g.lbn_to_pbn(20).head, 1);
        assert_eq!(g.lbn_to_pbn(30).head, 0);
    }

    #[test]
    fn bad_zones_are_errors() {
        assert!(DiskGeometry::new(1, Sparing::None, 1, 0, &[]).is_err());
        assert!(DiskGeometry::new(1, Sparing::None, 1, 0, &[ZoneSpec::plain(5, 4, 10)]).is_err());
        assert!(DiskGeometry::new(
            1,
            Sparing::None,
            1,
            0,
            &[ZoneSpec::plain(0, 4, 10), ZoneSpec::plain(4, 8, 10)]
        )
        .is_err());
    }
}
