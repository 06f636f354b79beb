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
use crate::alloc::ext3_fs::plan_ext3_in;
use crate::alloc::writer::IndirectPlacer;
use crate::geometry::Geometry;
use crate::plan::Plan;
use crate::policy::{
    Prefixes,
    check_known, parse_fraction, parse_region_fraction, Policy, PolicyEntry, PolicyParams,
};
use crate::LayoutError;
use layoutlab_workload::Population;

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
        let (start, end) = alloc.hole(group);
        if let Some(b) = alloc.map.next_free(start, end) {
            alloc.map.mark_used(b, 1);
            return Some(b);
        }
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
        let mut out = Vec::with_capacity(count);
        for _ in 0..count {
            match self.one(alloc, group) {
                Some(b) => out.push(b),
                None => {
                    for b in out {
                        alloc.map.mark_free(b, 1);
                    }
                    return None;
                }
            }
        }
        Some(out)
    }
}

impl Policy for Ext3Metacluster {
    fn name(&self) -> &str {
        NAME
    }

    crate::policy::one_pass_planner!();
}

impl Ext3Metacluster {
    /// The plan of `pop`, or with `prefixes` the plans of its prefixes in one pass
    /// ([`Policy::plan_prefixes`]).
    fn plan_in(
        &self,
        geo: &Geometry,
        pop: &Population,
        seed: u64,
        prefixes: Option<&mut Prefixes>,
    ) -> Result<Option<Plan>, LayoutError> {
        let mut alloc = Ext3Alloc::new(geo.free_map());
        for (group, g) in geo.groups.iter().enumerate() {
            let (start, end) = self.region(g.first_block, g.blocks);
            alloc.set_hole(group as u64, start, end);
        }
        let mut placer = MetaclusterPlacer {
            overflow: self.overflow,
        };
        plan_ext3_in(
            self.name(),
            geo,
            pop,
            seed,
            alloc,
            &mut placer,
            geo.has_feature("dir_index"),
            prefixes,
        )
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
