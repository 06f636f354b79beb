//! Layout policies: one allocator per file, behind the [`Policy`] trait.

pub mod ext3_2007;
pub mod ext3_meta_ssd;
pub mod ext3_metacluster;
pub mod ext4_2008;
pub mod ext4_2009;
pub mod ext4_kernel;
pub mod ext4_meta_ssd;
pub mod rext3;

use crate::geometry::Geometry;
use crate::plan::Plan;
use crate::LayoutError;
use layoutlab_workload::Population;
use std::collections::BTreeMap;

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
}

/// Names of the built-in policies.
pub const POLICY_NAMES: &[&str] = &[
    "ext3-2007",
    "ext3-metacluster",
    "ext4-2008",
    "ext4-2009",
    "rext3",
    "ext4-kernel",
    "ext4-meta-ssd",
    "ext3-meta-ssd",
];

/// The mkfs profile a built-in policy lays out on unless told otherwise: the file system
/// of its era (ext3's for ext3 policies, e2fsprogs 1.41's for the 2008/2009 ext4 ones,
/// today's mke2fs for ext4-kernel); None for an unknown name.
pub fn default_mkfs_profile(policy: &str) -> Option<&'static str> {
    match policy {
        "ext4-2008" | "ext4-2009" => Some("ext4-2009"),
        "ext4-kernel" => Some("ext4-kernel"),
        "ext4-meta-ssd" => Some("ext4-meta-ssd"),
        p if POLICY_NAMES.contains(&p) => Some("ext3-2007"),
        _ => None,
    }
}

/// A built-in policy by name with its parameters; unknown names or parameters give an
/// error listing what is valid.
pub fn by_name(name: &str, params: &PolicyParams) -> Result<Box<dyn Policy>, LayoutError> {
    match name {
        "ext3-2007" => Ok(Box::new(ext3_2007::Ext3_2007::from_params(params)?)),
        "ext3-metacluster" => Ok(Box::new(ext3_metacluster::Ext3Metacluster::from_params(
            params,
        )?)),
        "ext4-2008" => Ok(Box::new(ext4_2008::Ext4_2008::from_params(params)?)),
        "ext4-2009" => Ok(Box::new(ext4_2009::Ext4_2009::from_params(params)?)),
        "rext3" => Ok(Box::new(rext3::Rext3::from_params(params)?)),
        "ext4-kernel" => Ok(Box::new(ext4_kernel::Ext4Kernel::from_params(params)?)),
        "ext4-meta-ssd" => Ok(Box::new(ext4_meta_ssd::Ext4MetaSsd::from_params(params)?)),
        "ext3-meta-ssd" => Ok(Box::new(ext3_meta_ssd::Ext3MetaSsd::from_params(params)?)),
        _ => Err(LayoutError::UnknownPolicy {
            name: name.to_string(),
            valid: POLICY_NAMES.to_vec(),
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
    Ok(match name {
        "ext3-metacluster" => Some(
            ext3_metacluster::Ext3Metacluster::from_params(params)?
                .overflowed_mapping_blocks(plan, geo),
        ),
        "rext3" => Some(rext3::Rext3::from_params(params)?.overflowed_mapping_blocks(plan, geo)),
        _ => None,
    })
}

/// For a policy that keeps metadata in a leading region of the device (`ext4-meta-ssd`,
/// `ext3-meta-ssd`), with
/// `params`: the first block past the region on `geo`. None for the other policies.
pub fn metadata_region_end(
    name: &str,
    params: &PolicyParams,
    geo: &Geometry,
) -> Result<Option<u64>, LayoutError> {
    Ok(match name {
        "ext4-meta-ssd" => {
            Some(ext4_meta_ssd::Ext4MetaSsd::from_params(params)?.region_end_block(geo))
        }
        "ext3-meta-ssd" => {
            Some(ext3_meta_ssd::Ext3MetaSsd::from_params(params)?.region_end_block(geo))
        }
        _ => None,
    })
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

    #[test]
    fn fractions() {
        assert_eq!(parse_fraction("p", "x", "1/128").unwrap(), 1.0 / 128.0);
        assert_eq!(parse_fraction("p", "x", "0.5").unwrap(), 0.5);
        assert!(parse_fraction("p", "x", "2").is_err());
        assert!(parse_fraction("p", "x", "a/b").is_err());
    }
}
