//! A device made of LBA ranges mapped onto member devices (e.g. metadata on an SSD, data on a
//! disk), so a layout that separates metadata can be priced.
//!
//! The ranges tile the composite's sector space from 0 without gaps or overlaps. A request is
//! split where it straddles ranges; the pieces go to their members at the same time and the
//! request completes when the last piece does. A flush goes to every member.

use layoutlab_trace::Op;
use serde::Deserialize;

use crate::cited::{check_kind, parse_toml, Cited};
use crate::{Device, DeviceError, IoRequest};

/// Resolves a member's preset name to a device (see [`Composite::from_toml_str`]).
pub type MemberLoader<'a> = dyn FnMut(&str) -> Result<Box<dyn Device>, DeviceError> + 'a;

/// One LBA range of a [`Composite`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Range {
    /// First sector of the range in the composite.
    pub start_sector: u64,
    /// Length in sectors.
    pub sectors: u64,
    /// Index of the member device.
    pub member: usize,
    /// Sector on the member where the range begins.
    pub member_offset_sectors: u64,
}

/// A device of LBA ranges over member devices (see the module documentation).
pub struct Composite {
    name: String,
    members: Vec<Box<dyn Device>>,
    ranges: Vec<Range>,
    capacity_sectors: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MemberSpec {
    /// Label used by ranges.
    name: String,
    /// Preset name (or a `.toml` path relative to the composite's file).
    preset: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RangeSpec {
    start_sector: Cited<u64>,
    sectors: Cited<u64>,
    member: String,
    member_offset_sectors: Cited<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CompositeFile {
    kind: String,
    name: String,
    #[allow(dead_code)]
    description: Option<String>,
    members: Vec<MemberSpec>,
    ranges: Vec<RangeSpec>,
}

impl Composite {
    /// A composite of `members` and `ranges`, checked: the ranges (in any order) must tile
    /// `[0, capacity)` and each must fit inside its member.
    pub fn new(
        name: &str,
        members: Vec<Box<dyn Device>>,
        mut ranges: Vec<Range>,
    ) -> Result<Composite, DeviceError> {
        if ranges.is_empty() {
            return Err(DeviceError::Invalid(format!(
                "{name}: a composite needs at least one range"
            )));
        }
        ranges.sort_by_key(|r| r.start_sector);
        let mut next = 0u64;
        for r in &ranges {
            if r.sectors == 0 {
                return Err(DeviceError::Invalid(format!(
                    "{name}: range at sector {} is empty",
                    r.start_sector
                )));
            }
            if r.start_sector != next {
                return Err(DeviceError::Invalid(format!(
                    "{name}: ranges must tile the device from sector 0: expected a range at \
                     sector {next}, found one at {}",
                    r.start_sector
                )));
            }
            let member = members.get(r.member).ok_or_else(|| {
                DeviceError::Invalid(format!(
                    "{name}: range at sector {} names member #{} of {}",
                    r.start_sector,
                    r.member,
                    members.len()
                ))
            })?;
            let end_on_member = r.member_offset_sectors.checked_add(r.sectors);
            if end_on_member.is_none_or(|end| end > member.capacity_sectors()) {
                return Err(DeviceError::Invalid(format!(
                    "{name}: range at sector {} ({} sectors at member offset {}) exceeds member \
                     '{}' ({} sectors)",
                    r.start_sector,
                    r.sectors,
                    r.member_offset_sectors,
                    member.name(),
                    member.capacity_sectors()
                )));
            }
            next = r
                .start_sector
                .checked_add(r.sectors)
                .ok_or_else(|| DeviceError::Invalid(format!("{name}: range sizes overflow")))?;
        }
        Ok(Composite {
            name: name.to_string(),
            members,
            ranges,
            capacity_sectors: next,
        })
    }

    /// Parses a preset (`kind = "composite"`), resolving each member's preset with `load`.
    pub fn from_toml_str(
        text: &str,
        path: &str,
        load: &mut MemberLoader<'_>,
    ) -> Result<Composite, DeviceError> {
        let f: CompositeFile = parse_toml(text, path)?;
        check_kind(&f.kind, "composite", path)?;
        let mut members = Vec::with_capacity(f.members.len());
        for m in &f.members {
            members.push(load(&m.preset)?);
        }
        let mut ranges = Vec::with_capacity(f.ranges.len());
        for r in &f.ranges {
            let member = f
                .members
                .iter()
                .position(|m| m.name == r.member)
                .ok_or_else(|| DeviceError::Parse {
                    path: path.to_string(),
                    line: 0,
                    reason: format!(
                        "range names member '{}'; members are: {}",
                        r.member,
                        f.members
                            .iter()
                            .map(|m| m.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                })?;
            ranges.push(Range {
                start_sector: r.start_sector.get("start_sector", path)?,
                sectors: r.sectors.get("sectors", path)?,
                member,
                member_offset_sectors: r
                    .member_offset_sectors
                    .get("member_offset_sectors", path)?,
            });
        }
        Composite::new(&f.name, members, ranges)
    }

    /// A linear concatenation (md's `linear` personality, LVM's linear mapping): member `i`
    /// takes `sectors[i]` sectors from its sector 0, right after member `i - 1`'s.
    pub fn linear(
        name: &str,
        members: Vec<Box<dyn Device>>,
        sectors: &[u64],
    ) -> Result<Composite, DeviceError> {
        if sectors.len() != members.len() {
            return Err(DeviceError::Invalid(format!(
                "{name}: {} members but {} sizes",
                members.len(),
                sectors.len()
            )));
        }
        let mut start_sector = 0;
        let mut ranges = Vec::with_capacity(sectors.len());
        for (member, &n) in sectors.iter().enumerate() {
            ranges.push(Range {
                start_sector,
                sectors: n,
                member,
                member_offset_sectors: 0,
            });
            start_sector += n;
        }
        Composite::new(name, members, ranges)
    }

    /// The ranges, sorted by start sector.
    pub fn ranges(&self) -> &[Range] {
        &self.ranges
    }

    /// The member that serves `sector` (sectors past the end: the last range's).
    pub fn member_at(&self, sector: u64) -> usize {
        self.ranges[self.range_of(sector)].member
    }

    /// The members' names (their presets'), in member order.
    pub fn member_names(&self) -> Vec<&str> {
        self.members.iter().map(|m| m.name()).collect()
    }

    /// Index of the range holding `sector`; sectors past the end belong to the last range.
    fn range_of(&self, sector: u64) -> usize {
        self.ranges
            .partition_point(|r| r.start_sector <= sector)
            .saturating_sub(1)
    }

    /// Calls `f(member, piece)` for each piece of `req` on one member.
    fn for_pieces(&self, req: &IoRequest, mut f: impl FnMut(usize, IoRequest)) {
        let mut sector = req.sector;
        let end = req.sector.saturating_add(req.sectors as u64);
        let mut k = self.range_of(sector);
        loop {
            let r = self.ranges[k];
            let last = k + 1 == self.ranges.len();
            let range_end = if last {
                u64::MAX
            } else {
                r.start_sector + r.sectors
            };
            let piece_end = end.min(range_end);
            f(
                r.member,
                IoRequest {
                    sector: r
                        .member_offset_sectors
                        .saturating_add(sector - r.start_sector),
                    sectors: (piece_end - sector) as u32,
                    ..*req
                },
            );
            if piece_end >= end {
                break;
            }
            sector = piece_end;
            k += 1;
        }
    }
}

impl Device for Composite {
    fn name(&self) -> &str {
        &self.name
    }

    /// Rotational if any member is, as the kernel stacks a device-mapper table's queue
    /// (drivers/md/dm-table.c: non-rotational only when every underlying device is).
    fn rotational(&self) -> bool {
        self.members.iter().any(|m| m.rotational())
    }

    fn capacity_sectors(&self) -> u64 {
        self.capacity_sectors
    }

    fn submit(&mut self, arrival_ns: f64, req: &IoRequest) -> f64 {
        if req.op == Op::Flush {
            let mut done = arrival_ns;
            for m in &mut self.members {
                done = done.max(m.submit(arrival_ns, req));
            }
            return done;
        }
        let mut pieces: [(usize, IoRequest); 4] = [(0, *req); 4];
        let mut n = 0;
        let mut more = Vec::new();
        self.for_pieces(req, |m, p| {
            if n < pieces.len() {
                pieces[n] = (m, p);
                n += 1;
            } else {
                more.push((m, p));
            }
        });
        let mut done = arrival_ns;
        for (m, p) in pieces[..n].iter().chain(more.iter()) {
            done = done.max(self.members[*m].submit(arrival_ns, p));
        }
        done
    }

    fn positioning_ns(&self, at_ns: f64, req: &IoRequest) -> f64 {
        let mut worst: f64 = 0.0;
        self.for_pieces(req, |m, p| {
            worst = worst.max(self.members[m].positioning_ns(at_ns, &p));
        });
        worst
    }

    fn queue_depth(&self) -> usize {
        self.members
            .iter()
            .map(|m| m.queue_depth())
            .max()
            .unwrap_or(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use layoutlab_trace::Flags;
    use std::cell::RefCell;
    use std::rc::Rc;

    /// Records what reaches it; completes after `latency_ns`.
    struct Probe {
        name: String,
        capacity: u64,
        latency_ns: f64,
        seen: Seen,
    }
    impl Device for Probe {
        fn name(&self) -> &str {
            &self.name
        }
        fn capacity_sectors(&self) -> u64 {
            self.capacity
        }
        fn submit(&mut self, arrival_ns: f64, req: &IoRequest) -> f64 {
            self.seen
                .borrow_mut()
                .push((self.name.clone(), req.sector, req.sectors));
            arrival_ns + self.latency_ns
        }
    }

    type Seen = Rc<RefCell<Vec<(String, u64, u32)>>>;

    fn setup() -> (Composite, Seen) {
        let seen = Rc::new(RefCell::new(Vec::new()));
        let probe = |name: &str, latency_ns| -> Box<dyn Device> {
            Box::new(Probe {
                name: name.into(),
                capacity: 10_000,
                latency_ns,
                seen: seen.clone(),
            })
        };
        let members = vec![probe("ssd", 100.0), probe("hdd", 8_000_000.0)];
        let ranges = vec![
            Range {
                start_sector: 1000,
                sectors: 4000,
                member: 1,
                member_offset_sectors: 0,
            },
            Range {
                start_sector: 0,
                sectors: 1000,
                member: 0,
                member_offset_sectors: 500,
            },
        ];
        (Composite::new("c", members, ranges).unwrap(), seen)
    }

    fn rq(sector: u64, sectors: u32) -> IoRequest {
        IoRequest {
            op: Op::Read,
            sector,
            sectors,
            flags: Flags::NONE,
        }
    }

    #[test]
    fn requests_route_to_their_member_with_offsets() {
        let (mut c, seen) = setup();
        assert_eq!(c.capacity_sectors(), 5000);
        assert_eq!(c.submit(0.0, &rq(10, 8)), 100.0);
        assert_eq!(c.submit(0.0, &rq(1000, 8)), 8_000_000.0);
        assert_eq!(
            *seen.borrow(),
            vec![("ssd".to_string(), 510, 8), ("hdd".to_string(), 0, 8)]
        );
    }

    #[test]
    fn straddling_request_is_split_and_waits_for_the_slower_piece() {
        let (mut c, seen) = setup();
        let done = c.submit(5.0, &rq(996, 8));
        assert_eq!(done, 8_000_005.0);
        assert_eq!(
            *seen.borrow(),
            vec![("ssd".to_string(), 1496, 4), ("hdd".to_string(), 0, 4)]
        );
    }

    #[test]
    fn absurd_sector_numbers_do_not_panic() {
        let (mut c, _) = setup();
        assert!(c.submit(0.0, &rq(u64::MAX - 3, 8)).is_finite());
    }

    #[test]
    fn split_pieces_conserve_sectors() {
        let (c, _) = setup();
        for (s, n) in [(0u64, 1u32), (999, 2), (0, 5000), (4999, 1), (500, 4000)] {
            let mut total = 0u64;
            c.for_pieces(&rq(s, n), |_, p| total += p.sectors as u64);
            assert_eq!(total, n as u64, "sector {s} len {n}");
        }
    }

    #[test]
    fn gaps_overlaps_and_oversized_ranges_are_rejected() {
        let mk = |ranges: Vec<Range>| {
            let members: Vec<Box<dyn Device>> = vec![Box::new(Probe {
                name: "m".into(),
                capacity: 100,
                latency_ns: 1.0,
                seen: Rc::new(RefCell::new(Vec::new())),
            })];
            Composite::new("c", members, ranges)
        };
        let r = |s, n, off| Range {
            start_sector: s,
            sectors: n,
            member: 0,
            member_offset_sectors: off,
        };
        assert!(mk(vec![r(0, 50, 0), r(60, 10, 50)]).is_err(), "gap");
        assert!(mk(vec![r(0, 50, 0), r(40, 10, 50)]).is_err(), "overlap");
        assert!(mk(vec![r(0, 50, 60)]).is_err(), "past member end");
        assert!(
            mk(vec![Range {
                member: 3,
                ..r(0, 10, 0)
            }])
            .is_err(),
            "no such member"
        );
        assert!(mk(vec![]).is_err(), "empty");
        assert!(mk(vec![r(0, 50, 0), r(50, 50, 50)]).is_ok());
    }
}
