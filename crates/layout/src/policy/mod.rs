//! Layout policies: one allocator per file, behind the [`Policy`] trait.

use crate::alloc::ext3_alloc::Ext3Alloc;
use crate::alloc::ext3_fs::plan_ext3_in;
use crate::alloc::ext4_fs::{plan_ext4_in, Ext4Rules, Ext4SpaceRules};
use crate::alloc::ext4_ialloc::InodeChooser;
use crate::alloc::writer::IndirectPlacer;
use crate::geometry::Geometry;
use crate::plan::Plan;
use crate::LayoutError;
use layoutlab_workload::{Checked, CheckedTree, Population};
use std::collections::BTreeMap;
use std::ops::ControlFlow;

/// Policy parameters as `name -> value` text (from a command line or a TOML table).
pub type PolicyParams = BTreeMap<String, String>;

/// An allocator: decides where every inode, data block, mapping block and directory block
/// of a population goes on a freshly made file system. Pure: no I/O, deterministic in
/// (geometry, population, seed). `Send + Sync`, so experiments can plan several policies at
/// once.
pub trait Policy: Send + Sync {
    /// The policy's name, e.g. "ext3-2007".
    fn name(&self) -> &str;
    /// Lays out `pop` on `geo`; `seed` drives every random choice.
    fn plan(&self, geo: &Geometry, pop: &Population, seed: u64) -> Result<Plan, LayoutError>;

    /// The plans of `pop`'s first `ends[i]` operations, for each `i` in order (`ends`
    /// non-decreasing, each at most `pop.ops.len()`), each given to `sink` with its `i` as
    /// soon as it is made; a sink that answers `Break` stops the planning there. Each plan is
    /// the one [`Policy::plan`] makes of that prefix alone (an aging stream's younger ages are
    /// prefixes of its oldest: metacluster-aging plans every age of a policy in one pass).
    /// By default each prefix is planned from the start; the policies whose planners read
    /// their operations strictly in order (the ext3 and ext4 planners) make them all in one
    /// pass, held equal to the default by `tests/prefixes.rs`.
    fn plan_prefixes(
        &self,
        geo: &Geometry,
        pop: &Population,
        seed: u64,
        ends: &[usize],
        sink: &mut dyn FnMut(usize, Plan) -> ControlFlow<()>,
    ) -> Result<(), LayoutError> {
        check_ends(pop, ends)?;
        for (i, &end) in ends.iter().enumerate() {
            let prefix = Population {
                name: pop.name.clone(),
                fs_bytes: pop.fs_bytes,
                ops: pop.ops[..end].to_vec(),
            };
            if sink(i, self.plan(geo, &prefix, seed)?).is_break() {
                break;
            }
        }
        Ok(())
    }

    /// [`Policy::plan_prefixes`] of a population its caller checked: the one-pass planners
    /// do not check it again, so that several policies planning one long stream check it
    /// once between them (issue 28). The same plans, and the same errors but a bad tree's.
    fn plan_prefixes_checked(
        &self,
        geo: &Geometry,
        pop: CheckedTree<'_>,
        seed: u64,
        ends: &[usize],
        sink: &mut dyn FnMut(usize, Plan) -> ControlFlow<()>,
    ) -> Result<(), LayoutError> {
        self.plan_prefixes(geo, pop.population(), seed, ends, sink)
    }
}

/// A population as the one-pass planners get it: to be checked where they always checked it
/// ([`Population::check_tree`]), or checked once by their caller ([`CheckedTree`]).
#[derive(Clone, Copy, Debug)]
pub enum Tree<'a> {
    /// The planner checks it.
    Unchecked(&'a Population),
    /// Checked already.
    Checked(CheckedTree<'a>),
}

impl<'a> Tree<'a> {
    /// The population, checked or not.
    pub(crate) fn population(self) -> &'a Population {
        match self {
            Tree::Unchecked(pop) => pop,
            Tree::Checked(checked) => checked.population(),
        }
    }

    /// The population, checked here if it was not already, with its path ids.
    pub(crate) fn checked(self) -> Result<CheckedHere<'a>, LayoutError> {
        match self {
            Tree::Unchecked(pop) => Checked::new(pop)
                .map(CheckedHere::Here)
                .map_err(|e| LayoutError::BadPopulation(e.to_string())),
            Tree::Checked(checked) => Ok(CheckedHere::Before(checked)),
        }
    }
}

/// A checked population as a planner holds it: checked by its caller, or by [`Tree::checked`]
/// (which owns the path ids then).
pub(crate) enum CheckedHere<'a> {
    Before(CheckedTree<'a>),
    Here(Checked<'a>),
}

impl CheckedHere<'_> {
    /// The population and its path ids.
    pub(crate) fn tree(&self) -> CheckedTree<'_> {
        match self {
            CheckedHere::Before(tree) => *tree,
            CheckedHere::Here(checked) => checked.tree(),
        }
    }
}

/// What a policy hands the shared planner that lays a population out in one pass, reading its
/// operations strictly in order: the ext3 planner's block allocator and indirect-block placer,
/// or the ext4 planner's inode chooser and rules. A policy's file keeps what makes it itself
/// (its placer or chooser, its rules, its refusals); the walk over the population is the
/// planners' ([`plan_ext3_in`], [`plan_ext4_in`]), so it is written once here rather than
/// in each policy.
pub(crate) enum OnePass {
    /// [`plan_ext3_in`]'s parts.
    Ext3 {
        /// The block allocator, with the holes a policy keeps for its mapping blocks.
        alloc: Ext3Alloc,
        /// Where IND/DIND/TIND (and directory) blocks go.
        placer: Box<dyn IndirectPlacer>,
    },
    /// [`plan_ext4_in`]'s parts.
    Ext4 {
        /// Which group a new inode goes to.
        chooser: Box<dyn InodeChooser>,
        /// The era's goal and mballoc rules.
        rules: Ext4Rules,
        /// How the plan sees the file system's space.
        space: Ext4SpaceRules,
    },
}

impl OnePass {
    /// ext3's parts: a fresh allocator on `geo` whose group `i` holds back the `i`-th of
    /// `holes` (absolute `[start, end)`; groups past the list hold back nothing) for the
    /// policy's mapping blocks, and `placer`.
    pub(crate) fn ext3(
        geo: &Geometry,
        holes: impl IntoIterator<Item = (u64, u64)>,
        placer: impl IndirectPlacer + 'static,
    ) -> OnePass {
        let mut alloc = Ext3Alloc::new(geo.free_map());
        for (group, (start, end)) in holes.into_iter().enumerate() {
            alloc.set_hole(group as u64, start, end);
        }
        OnePass::Ext3 {
            alloc,
            placer: Box::new(placer),
        }
    }

    /// ext4's parts on the geometry's own space: its flex groups, no metadata region.
    pub(crate) fn ext4(
        chooser: impl InodeChooser + 'static,
        rules: Ext4Rules,
        geo: &Geometry,
    ) -> OnePass {
        OnePass::Ext4 {
            chooser: Box::new(chooser),
            rules,
            space: Ext4SpaceRules::of(geo),
        }
    }

    /// The plan of `pop` by `policy` (its name, for errors), or with `prefixes` the plans of
    /// its prefixes in one pass ([`Policy::plan_prefixes`]).
    pub(crate) fn plan_in(
        self,
        policy: &str,
        geo: &Geometry,
        pop: Tree<'_>,
        seed: u64,
        prefixes: Option<&mut Prefixes>,
    ) -> Result<Option<Plan>, LayoutError> {
        match self {
            OnePass::Ext3 { alloc, mut placer } => {
                let dir_index = geo.has_feature("dir_index");
                plan_ext3_in(
                    policy,
                    geo,
                    pop,
                    seed,
                    alloc,
                    placer.as_mut(),
                    dir_index,
                    prefixes,
                )
            }
            OnePass::Ext4 {
                chooser,
                rules,
                space,
            } => plan_ext4_in(
                policy,
                geo,
                pop,
                seed,
                chooser.as_ref(),
                rules,
                space,
                prefixes,
            ),
        }
    }
}

/// The first free block of `group`'s hole, taken; None when the hole is full. Where the
/// region policies (ext3-metacluster, rext3) look first for a mapping block.
pub(crate) fn take_from_hole(alloc: &mut Ext3Alloc, group: u64) -> Option<u64> {
    let (start, end) = alloc.hole(group);
    let b = alloc.map.next_free(start, end)?;
    alloc.map.mark_used(b, 1);
    Some(b)
}

/// `count` mapping blocks, each from `one`; when one cannot be had, those already taken are
/// given back (an ENOSPC unwinding) and None is returned, as [`IndirectPlacer::place`] asks.
pub(crate) fn place_each(
    alloc: &mut Ext3Alloc,
    count: usize,
    mut one: impl FnMut(&mut Ext3Alloc) -> Option<u64>,
) -> Option<Vec<u64>> {
    let mut out = Vec::with_capacity(count);
    for _ in 0..count {
        match one(alloc) {
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

/// [`Policy`] for a policy type with an inherent `one_pass(&self, geo) -> Result<OnePass,
/// LayoutError>` (its planner's parts, or its refusal of `geo`) in a file whose `ENTRY` names
/// it: `plan` and `plan_prefixes` both run [`OnePass::plan_in`].
macro_rules! one_pass_policy {
    ($policy:ty) => {
        impl crate::policy::Policy for $policy {
            fn name(&self) -> &str {
                ENTRY.name
            }

            fn plan(
                &self,
                geo: &crate::geometry::Geometry,
                pop: &layoutlab_workload::Population,
                seed: u64,
            ) -> Result<crate::plan::Plan, crate::LayoutError> {
                let plan = self.one_pass(geo)?.plan_in(
                    ENTRY.name,
                    geo,
                    crate::policy::Tree::Unchecked(pop),
                    seed,
                    None,
                )?;
                Ok(plan.expect("without prefixes the planner runs to the end"))
            }

            fn plan_prefixes(
                &self,
                geo: &crate::geometry::Geometry,
                pop: &layoutlab_workload::Population,
                seed: u64,
                ends: &[usize],
                sink: &mut dyn FnMut(usize, crate::plan::Plan) -> std::ops::ControlFlow<()>,
            ) -> Result<(), crate::LayoutError> {
                crate::policy::one_pass_prefixes(
                    ENTRY.name,
                    geo,
                    crate::policy::Tree::Unchecked(pop),
                    seed,
                    ends,
                    sink,
                    || self.one_pass(geo),
                )
            }

            fn plan_prefixes_checked(
                &self,
                geo: &crate::geometry::Geometry,
                pop: layoutlab_workload::CheckedTree<'_>,
                seed: u64,
                ends: &[usize],
                sink: &mut dyn FnMut(usize, crate::plan::Plan) -> std::ops::ControlFlow<()>,
            ) -> Result<(), crate::LayoutError> {
                crate::policy::one_pass_prefixes(
                    ENTRY.name,
                    geo,
                    crate::policy::Tree::Checked(pop),
                    seed,
                    ends,
                    sink,
                    || self.one_pass(geo),
                )
            }
        }
    };
}
use one_pass_policy;

/// The body of a one-pass policy's [`Policy::plan_prefixes`] and
/// [`Policy::plan_prefixes_checked`]: the plans of `tree`'s prefixes ending at `ends`, in one
/// pass of the planner `one_pass` makes (the policy's parts for the geometry, or its refusal).
pub(crate) fn one_pass_prefixes(
    policy: &str,
    geo: &Geometry,
    tree: Tree<'_>,
    seed: u64,
    ends: &[usize],
    sink: &mut dyn FnMut(usize, Plan) -> ControlFlow<()>,
    one_pass: impl FnOnce() -> Result<OnePass, LayoutError>,
) -> Result<(), LayoutError> {
    // the ends are checked before the policy looks at the geometry, as before
    let mut prefixes = Prefixes::new(tree.population(), ends, sink)?;
    one_pass()?
        .plan_in(policy, geo, tree, seed, Some(&mut prefixes))
        .map(|_| ())
}

/// Refuses prefix ends that are not non-decreasing or pass the population's end.
fn check_ends(pop: &Population, ends: &[usize]) -> Result<(), LayoutError> {
    if let Some(w) = ends.windows(2).find(|w| w[0] > w[1]) {
        return Err(LayoutError::BadPopulation(format!(
            "prefix ends must not decrease ({} before {})",
            w[0], w[1]
        )));
    }
    if let Some(&e) = ends.iter().find(|&&e| e > pop.ops.len()) {
        return Err(LayoutError::BadPopulation(format!(
            "a prefix of {e} operations of a population of {}",
            pop.ops.len()
        )));
    }
    Ok(())
}

/// A planner's stops in one pass over a population ([`Policy::plan_prefixes`]): before
/// operation `ends[next]` it hands the plan of what it has done so far to the sink.
pub struct Prefixes<'s> {
    ends: &'s [usize],
    next: usize,
    sink: &'s mut dyn FnMut(usize, Plan) -> ControlFlow<()>,
    stopped: bool,
}

impl<'s> Prefixes<'s> {
    /// Stops at `ends` (checked against `pop`), giving each plan to `sink`.
    pub fn new(
        pop: &Population,
        ends: &'s [usize],
        sink: &'s mut dyn FnMut(usize, Plan) -> ControlFlow<()>,
    ) -> Result<Prefixes<'s>, LayoutError> {
        check_ends(pop, ends)?;
        Ok(Prefixes {
            ends,
            next: 0,
            sink,
            stopped: false,
        })
    }

    /// Whether the planner, about to run operation `op_index` (or at the end, with the
    /// population's length), owes the sink a plan first.
    pub(crate) fn due(&self, op_index: usize) -> bool {
        !self.stopped && self.ends.get(self.next) == Some(&op_index)
    }

    /// Gives the sink the plan `make` builds, once for each end at this operation.
    pub(crate) fn give(
        &mut self,
        op_index: usize,
        mut make: impl FnMut() -> Result<Plan, LayoutError>,
    ) -> Result<(), LayoutError> {
        while self.due(op_index) {
            let plan = make()?;
            if (self.sink)(self.next, plan).is_break() {
                self.stopped = true;
            }
            self.next += 1;
        }
        Ok(())
    }

    /// No plan is owed any more: the planner may stop.
    pub(crate) fn finished(&self) -> bool {
        self.stopped || self.next == self.ends.len()
    }
}

/// What the registry knows of a built-in policy. Each policy's file defines its own as
/// `ENTRY`, the one place its name is spelled; [`POLICIES`] lists them.
pub struct PolicyEntry {
    /// The name users give, e.g. "ext3-2007".
    pub name: &'static str,
    /// The mkfs profile it lays out on unless told otherwise: the file system of its era.
    pub default_mkfs_profile: &'static str,
    /// Builds it from its parameters; an unknown or bad parameter is an error naming it.
    pub build: fn(&PolicyParams) -> Result<Box<dyn Policy>, LayoutError>,
    /// For a policy that keeps mapping blocks in a region of each group (ext3-metacluster's
    /// metaclusters, rext3's regions): how many of a plan's lie outside their data block's
    /// group's region, with these parameters. None for the other policies.
    pub overflowed_mapping_blocks: Option<OverflowCount>,
    /// For a policy that keeps metadata in a leading region of the device (ext4-meta-ssd,
    /// ext3-meta-ssd): the first block past the region on a geometry, with these parameters.
    /// None for the other policies.
    pub metadata_region_end: Option<RegionEnd>,
}

/// The first block past a policy's metadata region (see [`PolicyEntry::metadata_region_end`]).
pub type RegionEnd = fn(&PolicyParams, &Geometry) -> Result<u64, LayoutError>;

/// Counts a plan's mapping blocks outside their group's region (see
/// [`PolicyEntry::overflowed_mapping_blocks`]).
pub type OverflowCount = fn(&PolicyParams, &Plan, &Geometry) -> Result<u64, LayoutError>;

/// Declares the policy modules and the registry from one list of module names.
macro_rules! policies {
    ($($module:ident),* $(,)?) => {
        $(pub mod $module;)*
        /// Every built-in policy, in the order they are listed to users.
        pub const POLICIES: &[PolicyEntry] = &[$($module::ENTRY),*];
        /// Names of the built-in policies.
        pub const POLICY_NAMES: &[&str] = &[$($module::ENTRY.name),*];
    };
}

// The registry: a new policy is its file (with its `ENTRY`) plus its module's name here.
policies!(
    ext3_2007,
    ext3_metacluster,
    ext4_2008,
    ext4_2009,
    rext3,
    ext4_kernel,
    ext4_meta_ssd,
    ext3_meta_ssd,
);

pub mod ext4_2007;

/// Built-in policies that model only some populations (the writes their docs name) and
/// refuse the others with an error that says so: today `ext4-2007`, which models the files
/// large-delete writes. They are not in [`POLICIES`] or [`POLICY_NAMES`], the lists every
/// general population (trees, aging streams) is planned with, but [`by_name`] finds them.
pub const SCOPED_POLICIES: &[PolicyEntry] = &[ext4_2007::ENTRY];

/// The registry's entry of the built-in policy `name` (general or scoped).
pub fn entry(name: &str) -> Option<&'static PolicyEntry> {
    POLICIES
        .iter()
        .chain(SCOPED_POLICIES)
        .find(|e| e.name == name)
}

/// The mkfs profile a built-in policy lays out on unless told otherwise: the file system
/// of its era (ext3's for ext3 policies, e2fsprogs 1.41's for the 2008/2009 ext4 ones,
/// today's mke2fs for ext4-kernel); None for an unknown name.
pub fn default_mkfs_profile(policy: &str) -> Option<&'static str> {
    entry(policy).map(|e| e.default_mkfs_profile)
}

/// A built-in policy by name with its parameters; unknown names or parameters give an
/// error listing what is valid.
pub fn by_name(name: &str, params: &PolicyParams) -> Result<Box<dyn Policy>, LayoutError> {
    match entry(name) {
        Some(e) => (e.build)(params),
        None => Err(LayoutError::UnknownPolicy {
            name: name.to_string(),
            valid: POLICY_NAMES
                .iter()
                .copied()
                .chain(SCOPED_POLICIES.iter().map(|e| e.name))
                .collect(),
        }),
    }
}

/// For a policy that keeps mapping blocks in a region of each group (ext3-metacluster's
/// metaclusters, rext3's regions), with `params`: how many of `plan`'s lie outside their data
/// block's group's region — what a full region sent elsewhere. None for the other policies.
pub fn overflowed_mapping_blocks(
    name: &str,
    params: &PolicyParams,
    plan: &Plan,
    geo: &Geometry,
) -> Result<Option<u64>, LayoutError> {
    match entry(name).and_then(|e| e.overflowed_mapping_blocks) {
        Some(overflowed) => overflowed(params, plan, geo).map(Some),
        None => Ok(None),
    }
}

/// For a policy that keeps metadata in a leading region of the device (`ext4-meta-ssd`,
/// `ext3-meta-ssd`), with
/// `params`: the first block past the region on `geo`. None for the other policies.
pub fn metadata_region_end(
    name: &str,
    params: &PolicyParams,
    geo: &Geometry,
) -> Result<Option<u64>, LayoutError> {
    match entry(name).and_then(|e| e.metadata_region_end) {
        Some(end) => end(params, geo).map(Some),
        None => Ok(None),
    }
}

/// Mapping blocks of `plan` that lie outside `[start, end)` of their data block's group,
/// `region(group)` giving each group's region: the ones a full region sent elsewhere (the
/// metacluster's and rext3's overflow).
pub(crate) fn mapping_blocks_outside(
    plan: &Plan,
    geo: &Geometry,
    region: impl Fn(u64) -> (u64, u64),
) -> u64 {
    let mut n = 0;
    for inode in &plan.inodes {
        for m in &inode.mapping {
            let Some(run) = inode
                .data
                .iter()
                .find(|r| m.logical >= r.logical && m.logical < r.logical + r.len)
            else {
                continue;
            };
            let data = run.physical + (m.logical - run.logical);
            let (start, end) = region(geo.group_of(data));
            if m.physical < start || m.physical >= end {
                n += 1;
            }
        }
    }
    n
}

/// Rejects parameters a policy does not know.
pub(crate) fn check_known(
    policy: &str,
    params: &PolicyParams,
    known: &[&str],
) -> Result<(), LayoutError> {
    for key in params.keys() {
        if !known.contains(&key.as_str()) {
            return Err(LayoutError::BadParam {
                policy: policy.to_string(),
                param: key.clone(),
                reason: if known.is_empty() {
                    "this policy takes no parameters".to_string()
                } else {
                    format!("unknown; valid: {}", known.join(", "))
                },
            });
        }
    }
    Ok(())
}

/// Parses a fraction written as a decimal ("0.5") or a ratio ("1/128").
pub(crate) fn parse_fraction(policy: &str, param: &str, text: &str) -> Result<f64, LayoutError> {
    let bad = |reason: &str| LayoutError::BadParam {
        policy: policy.to_string(),
        param: param.to_string(),
        reason: format!("'{text}': {reason}"),
    };
    let value = match text.split_once('/') {
        Some((n, d)) => {
            let n: f64 = n.trim().parse().map_err(|_| bad("not a ratio a/b"))?;
            let d: f64 = d.trim().parse().map_err(|_| bad("not a ratio a/b"))?;
            n / d
        }
        None => text.trim().parse().map_err(|_| bad("not a number"))?,
    };
    if !(0.0..1.0).contains(&value) || !value.is_finite() {
        return Err(bad("must be in [0, 1)"));
    }
    Ok(value)
}

/// A region's size as a fraction of what it is carved from, in (0, 1): [`parse_fraction`],
/// and 0 refused too, since a region of no blocks would leave the policy's metadata nowhere
/// to go.
pub(crate) fn parse_region_fraction(
    policy: &str,
    param: &str,
    text: &str,
) -> Result<f64, LayoutError> {
    let value = parse_fraction(policy, param, text)?;
    if value == 0.0 {
        return Err(LayoutError::BadParam {
            policy: policy.to_string(),
            param: param.to_string(),
            reason: "must be above 0".into(),
        });
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_policy_lists_names() {
        let e = by_name("ext5", &PolicyParams::new())
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("ext3-2007") && e.contains("ext3-metacluster") && e.contains("rext3"),
            "{e}"
        );
    }

    #[test]
    fn unknown_param_is_an_error() {
        let mut p = PolicyParams::new();
        p.insert("colour".into(), "1".into());
        assert!(by_name("ext3-2007", &p).is_err());
        let e = by_name("ext3-metacluster", &p).err().unwrap().to_string();
        assert!(e.contains("position"), "{e}");
    }

    /// The registry keeps every name, era and overflow count the hand-kept lists had, and
    /// each policy calls itself by its entry's name.
    #[test]
    fn registry_entries() {
        assert_eq!(
            POLICY_NAMES,
            [
                "ext3-2007",
                "ext3-metacluster",
                "ext4-2008",
                "ext4-2009",
                "rext3",
                "ext4-kernel",
                "ext4-meta-ssd",
                "ext3-meta-ssd"
            ]
        );
        let profiles: Vec<_> = POLICIES.iter().map(|e| e.default_mkfs_profile).collect();
        assert_eq!(
            profiles,
            [
                "ext3-2007",
                "ext3-2007",
                "ext4-2009",
                "ext4-2009",
                "ext3-2007",
                "ext4-kernel",
                "ext4-meta-ssd",
                "ext3-2007"
            ]
        );
        let with_regions: Vec<_> = POLICIES
            .iter()
            .filter(|e| e.overflowed_mapping_blocks.is_some())
            .map(|e| e.name)
            .collect();
        assert_eq!(with_regions, ["ext3-metacluster", "rext3"]);
        let with_metadata_regions: Vec<_> = POLICIES
            .iter()
            .filter(|e| e.metadata_region_end.is_some())
            .map(|e| e.name)
            .collect();
        assert_eq!(with_metadata_regions, ["ext4-meta-ssd", "ext3-meta-ssd"]);
        for e in POLICIES {
            assert_eq!(
                by_name(e.name, &PolicyParams::new()).unwrap().name(),
                e.name
            );
        }
        assert_eq!(default_mkfs_profile("ext5"), None);
    }

    #[test]
    fn fractions() {
        assert_eq!(parse_fraction("p", "x", "1/128").unwrap(), 1.0 / 128.0);
        assert_eq!(parse_fraction("p", "x", "0.5").unwrap(), 0.5);
        assert!(parse_fraction("p", "x", "2").is_err());
        assert!(parse_fraction("p", "x", "a/b").is_err());
    }
}
