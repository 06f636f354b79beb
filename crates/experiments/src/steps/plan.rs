//! Plan an image: mkfs profile → [`Geometry`] → policy → [`Plan`] → the plan's own check.
//!
//! Every operation that lays a population out runs this sequence; it is written once here so
//! that an inconsistent plan is refused the same way everywhere (before any image is written)
//! and a full file system is caught where a test needs every byte placed ([`policy_image`]).

use anyhow::{bail, Result};
use layoutlab_layout::{Geometry, MkfsProfile, Plan, Policy};
use layoutlab_workload::{NsOp, Population};

/// `population` planned by `policy` on `geometry` with `seed`, then checked against the
/// geometry: a policy's plan that overlaps metadata or another file is a bug in the policy,
/// and is refused here rather than written into an image. A planning error is returned as the
/// policy gave it.
pub fn checked(
    policy: &dyn Policy,
    geometry: &Geometry,
    population: &Population,
    seed: u64,
) -> Result<Plan> {
    let plan = policy.plan(geometry, population, seed)?;
    plan.check(geometry)
        .map_err(|e| anyhow::anyhow!("policy {} made an inconsistent plan: {e}", policy.name()))?;
    Ok(plan)
}

/// The mkfs profile named `profile` and the file system it makes on `fs_bytes`.
pub fn format(profile: &str, fs_bytes: u64) -> Result<(MkfsProfile, Geometry)> {
    let profile = MkfsProfile::by_name(profile)?;
    let geometry = Geometry::new(&profile, fs_bytes)?;
    Ok((profile, geometry))
}

/// A population planned by a policy on its own mkfs profile: what an image is made of.
#[derive(Debug)]
pub struct PolicyImage {
    /// The mkfs profile (the policy's name).
    pub profile: MkfsProfile,
    /// The file system the profile makes on the population's size.
    pub geometry: Geometry,
    /// The checked plan, every file whole.
    pub plan: Plan,
}

/// `population` planned by the policy `policy` on its mkfs profile (same name). Every file
/// must get all its bytes: a short file (the file system is full) is an error, since the
/// experiments that use this read or delete whole files.
pub fn policy_image(policy: &str, population: &Population, seed: u64) -> Result<PolicyImage> {
    let (profile, geometry) = format(policy, population.fs_bytes)?;
    let plan = checked(
        layoutlab_layout::policy_by_name(policy, &layoutlab_layout::PolicyParams::new())?.as_ref(),
        &geometry,
        population,
        seed,
    )?;
    if let Some(short) = plan.short_files(population).first() {
        bail!(
            "policy {policy}: {} got {} of {} bytes (the file system is full)",
            short.name,
            short.planned_bytes,
            short.requested_bytes
        );
    }
    Ok(PolicyImage {
        profile,
        geometry,
        plan,
    })
}

/// A population named `name` of one file, `path`, of `bytes` bytes, on a file system of
/// `fs_bytes`: the single large file that random-read, cache-policies and metacluster-io lay
/// out.
pub fn one_file(name: &str, fs_bytes: u64, path: &str, bytes: u64) -> Population {
    Population {
        name: name.into(),
        fs_bytes,
        ops: vec![NsOp::Create {
            path: path.into(),
            bytes,
        }],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_larger_than_the_file_system_is_refused() {
        let pop = one_file("t", 64 << 20, "big", 96 << 20);
        let err = policy_image("ext3-2007", &pop, 1).unwrap_err().to_string();
        assert!(err.contains("the file system is full"), "{err}");
    }

    #[test]
    fn a_file_that_fits_gets_every_byte() {
        let pop = one_file("t", 64 << 20, "big", 16 << 20);
        let PolicyImage { profile, plan, .. } = policy_image("ext3-2007", &pop, 1).unwrap();
        assert_eq!(profile.name, "ext3-2007");
        let big = plan.inodes.iter().find(|i| i.name == "big").unwrap();
        assert_eq!(big.size_bytes, 16 << 20);
        assert!(plan.short_files(&pop).is_empty());
    }
}
