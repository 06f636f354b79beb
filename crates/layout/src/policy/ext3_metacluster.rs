//! `ext3-metacluster`: ext3 with indirect-block clustering as proposed by Abhishek Rai
//! (LKML, November 2007) and reviewed there: every group reserves a *metacluster* — by
//! default 1/128 of the group starting half-way into it — that data allocation skips;
//! indirect blocks go to the first free block of the metacluster of the group holding the
//! data block they lead to, in allocation order; when that metacluster is full they fall
//! back to the old allocation from the start of the group (or, with
//! `overflow = "wrap"`, the reviewer's suggestion: from the end of the metacluster,
//! wrapping to the group's start). Everything else is [`super::ext3_2007`]'s allocator.
//!
//! Parameters: `position` (fraction of the group where the metacluster starts, default
//! 1/2), `size` (fraction of the group, default 1/128), `overflow` (`group-start` or
//! `wrap`).

use crate::alloc::ext3_alloc::Ext3Alloc;
use crate::alloc::writer::IndirectPlacer;
use crate::geometry::Geometry;
use crate::plan::Plan;
use crate::policy::{place_each, take_from_hole, check_known, parse_fraction, parse_region_fraction, PolicyEntry, PolicyParams, OnePass};
use crate::LayoutError;

/// This policy's entry in the registry ([`super::POLICIES`]).
pub const ENTRY: PolicyEntry = PolicyEntry {
    name: "ext3-metacluster",
    default_mkfs_profile: "ext3-2007",
    build: |params| Ok(Box::new(Ext3Metacluster::from_params(params)?)),
    overflowed_mapping_blocks: Some(|params, plan, geo| {
        Ok(Ext3Metacluster::from_params(params)?.overflowed_mapping_blocks(plan, geo))
    }),
    metadata_region_end: None,
};

/// Where indirect blocks go when a group's metacluster is full.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Overflow {
    /// The old ext3 allocation with the group's first block as goal.
    GroupStart,
    /// First free block after the metacluster, wrapping to the group's start.
    Wrap,
}

/// The metacluster policy.
#[derive(Clone, Debug)]
pub struct Ext3Metacluster {
    /// Start of the metacluster as a fraction of the group.
    pub position: f64,
    /// Size of the metacluster as a fraction of the group.
    pub size: f64,
    /// Overflow behaviour.
    pub overflow: Overflow,
}

impl Default for Ext3Metacluster {
    fn default() -> Self {
        Ext3Metacluster {
            position: 0.5,
            size: 1.0 / 128.0,
            overflow: Overflow::GroupStart,
        }
    }
}

const NAME: &str = ENTRY.name;

impl Ext3Metacluster {
    /// Reads `position`, `size`, `overflow`.
    pub fn from_params(params: &PolicyParams) -> Result<Ext3Metacluster, LayoutError> {
        check_known(NAME, params, &["position", "size", "overflow"])?;
        let mut p = Ext3Metacluster::default();
        if let Some(v) = params.get("position") {
            p.position = parse_fraction(NAME, "position", v)?;
        }
        if let Some(v) = params.get("size") {
            p.size = parse_region_fraction(NAME, "size", v)?;
        }
        if let Some(v) = params.get("overflow") {
            p.overflow = match v.as_str() {
                "group-start" => Overflow::GroupStart,
                "wrap" => Overflow::Wrap,
                other => {
                    return Err(LayoutError::BadParam {
                        policy: NAME.into(),
                        param: "overflow".into(),
                        reason: format!("'{other}'; valid: group-start, wrap"),
                    })
                }
            };
        }
        if p.position + p.size > 1.0 {
            return Err(LayoutError::BadParam {
                policy: NAME.into(),
                param: "position".into(),
                reason: "position + size must not pass the group's end".into(),
            });
        }
        Ok(p)
    }

    /// The metacluster of a group of `group_blocks` blocks starting at `first`:
    /// absolute `[start, end)`, at least one block.
    pub fn region(&self, first: u64, group_blocks: u64) -> (u64, u64) {
        let start = first + (group_blocks as f64 * self.position) as u64;
        let len = ((group_blocks as f64 * self.size) as u64).max(1);
        let end = (start + len).min(first + group_blocks);
        (start, end)
    }
}

impl Ext3Metacluster {
    /// Mapping blocks of `plan` that lie outside the metacluster of their data block's
    /// group (the overflow the fallback handled).
    pub fn overflowed_mapping_blocks(&self, plan: &Plan, geo: &Geometry) -> u64 {
        super::mapping_blocks_outside(plan, geo, |g| {
            let g = &geo.groups[g as usize];
            self.region(g.first_block, g.blocks)
        })
    }
}

struct MetaclusterPlacer {
    overflow: Overflow,
}

impl MetaclusterPlacer {
    fn one(&self, alloc: &mut Ext3Alloc, group: u64) -> Option<u64> {
        if let Some(b) = take_from_hole(alloc, group) {
            return Some(b);
        }
        let (start, end) = alloc.hole(group);
        let first = alloc.map.group_first(group);
        if self.overflow == Overflow::Wrap {
            let group_end = alloc.map.group_end(group);
            if let Some(b) = alloc
                .map
                .next_free(end, group_end)
                .or_else(|| alloc.map.next_free(first, start))
            {
                alloc.map.mark_used(b, 1);
                return Some(b);
            }
        }
        // The old allocation: ext3_new_blocks() without a window, goal = group start
        // (it moves on to the next groups if this one is full).
        alloc.new_blocks(first, 1, None).map(|(b, _)| b)
    }
}

impl IndirectPlacer for MetaclusterPlacer {
    fn inline(&self) -> bool {
        false
    }

    fn place(&mut self, alloc: &mut Ext3Alloc, data_block: u64, count: usize) -> Option<Vec<u64>> {
        let group = alloc.map.group_of(data_block);
        place_each(alloc, count, |alloc| self.one(alloc, group))
    }
}

crate::policy::one_pass_policy!(Ext3Metacluster);

impl Ext3Metacluster {
    /// The ext3 planner with each group's metacluster held back for mapping blocks.
    fn one_pass(&self, geo: &Geometry) -> Result<OnePass, LayoutError> {
        let holes = geo
            .groups
            .iter()
            .map(|g| self.region(g.first_block, g.blocks));
        let placer = MetaclusterPlacer {
            overflow: self.overflow,
        };
        Ok(OnePass::ext3(geo, holes, placer))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_region_is_half_way_and_1_128() {
        let p = Ext3Metacluster::default();
        assert_eq!(p.region(32768, 32768), (32768 + 16384, 32768 + 16384 + 256));
        assert_eq!(p.region(0, 100), (50, 51));
    }

    #[test]
    fn params() {
        let mut params = PolicyParams::new();
        params.insert("position".into(), "0.99".into());
        params.insert("size".into(), "1/64".into());
        assert!(Ext3Metacluster::from_params(&params).is_err());
        params.insert("position".into(), "3/4".into());
        params.insert("overflow".into(), "wrap".into());
        let p = Ext3Metacluster::from_params(&params).unwrap();
        assert_eq!(p.overflow, Overflow::Wrap);
        params.insert("overflow".into(), "later".into());
        assert!(Ext3Metacluster::from_params(&params).is_err());
    }
}
