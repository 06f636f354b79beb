//! Plan goldens: every policy's plan of a few aged workloads, pinned as a digest of the whole
//! plan (every inode, run, mapping block and link, in order) made by main's code at 1d6ad18,
//! before issue 28's cut of `Mballoc::longest_free`. A change meant only to make planning
//! faster must leave every digest as it is; a deliberate change of a policy updates the
//! table and says why in its commit (the test prints the table it got).

mod common;

use common::random_aging;
use layoutlab_layout::{policy, Geometry, MkfsProfile, Plan, PolicyParams};
use layoutlab_workload::aging::{age_prefixes, AgingSpec};
use layoutlab_workload::{population_shrunk, Population};

/// FNV-1a (64 bits) of the plan's `Debug` text: stable, and every field of the plan is in it.
fn digest(plan: &Result<Plan, layoutlab_layout::LayoutError>) -> u64 {
    let text = match plan {
        Ok(p) => format!("{p:?}"),
        Err(e) => format!("error: {e}"),
    };
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The workloads: the aging generator's age 3 over a small ubuntu-32g and over bench5
/// (trimmed below its fullness), and two random agings of ubuntu-32g that cut free space into
/// holes (unlinks, truncates and hard links the generator does not make).
fn workloads() -> Vec<(String, Population)> {
    let ubuntu = population_shrunk("ubuntu-32g", 0.002).unwrap();
    let bench5 = population_shrunk("bench5", 0.005).unwrap();
    let bench5 = Population {
        ops: bench5.ops[..bench5.ops.len() * 3 / 4].to_vec(),
        ..bench5
    };
    let mut out = Vec::new();
    for tree in [&ubuntu, &bench5] {
        let spec = AgingSpec {
            fullness: Some(0.8),
            ..AgingSpec::new(1.0, 2007)
        };
        let margin = layoutlab_layout::mkfs::metadata_margin_bytes(tree.fs_bytes);
        let (aged, _) = age_prefixes(tree, &spec, margin, &[3.0]).unwrap();
        out.push((format!("{}-age3", tree.name), aged));
    }
    for seed in [1, 2] {
        out.push((
            format!("ubuntu-random{seed}"),
            random_aging(&ubuntu, seed, 4000, 0.7),
        ));
    }
    out
}

/// (workload, policy, digest) as main's code planned them (seed 2007).
const GOLDEN: &[(&str, &str, u64)] = &[
    ("ubuntu-32g@0.002-age3", "ext3-2007", 0x261b5a7f7a7321e0),
    (
        "ubuntu-32g@0.002-age3",
        "ext3-metacluster",
        0x77152d441f4818d2,
    ),
    ("ubuntu-32g@0.002-age3", "ext4-2008", 0xcbcbbabb5cd19123),
    ("ubuntu-32g@0.002-age3", "ext4-2009", 0x06fabe2085add400),
    ("ubuntu-32g@0.002-age3", "rext3", 0x1dbead04263164d5),
    ("ubuntu-32g@0.002-age3", "ext4-kernel", 0x9eb2bef53ec56601),
    ("ubuntu-32g@0.002-age3", "ext4-meta-ssd", 0xa3e7027a3ddbe111),
    ("ubuntu-32g@0.002-age3", "ext3-meta-ssd", 0x6884d4a642a44695),
    ("bench5-age3", "ext3-2007", 0xe37a2bf1b97d113c),
    ("bench5-age3", "ext3-metacluster", 0xbe377a53e73702f2),
    ("bench5-age3", "ext4-2008", 0x5fefb9f07b1ef7c2),
    ("bench5-age3", "ext4-2009", 0xb01fd6b16629a960),
    ("bench5-age3", "rext3", 0xabe4093afdb5fd44),
    ("bench5-age3", "ext4-kernel", 0xf3a6640fb661fd09),
    ("bench5-age3", "ext4-meta-ssd", 0xa42bd2ae9cfa97e3),
    ("bench5-age3", "ext3-meta-ssd", 0x32009c65647efefc),
    ("ubuntu-random1", "ext3-2007", 0x922ed073383f51e1),
    ("ubuntu-random1", "ext3-metacluster", 0x405a0f616d272f4a),
    ("ubuntu-random1", "ext4-2008", 0x2a726c3abc21fe91),
    ("ubuntu-random1", "ext4-2009", 0xb990c0db97345eb2),
    ("ubuntu-random1", "rext3", 0xd642a075b72cf092),
    ("ubuntu-random1", "ext4-kernel", 0xb22e1bf109570c93),
    ("ubuntu-random1", "ext4-meta-ssd", 0x841af928f53918eb),
    ("ubuntu-random1", "ext3-meta-ssd", 0x25a61cc63d8a1af9),
    ("ubuntu-random2", "ext3-2007", 0x880cab6eb5843480),
    ("ubuntu-random2", "ext3-metacluster", 0xa0adf0197ebd114a),
    ("ubuntu-random2", "ext4-2008", 0xebfbd260076079cb),
    ("ubuntu-random2", "ext4-2009", 0xd274a5c77eb456dd),
    ("ubuntu-random2", "rext3", 0x6eb8c7d100920828),
    ("ubuntu-random2", "ext4-kernel", 0xebad1921bae41ff8),
    ("ubuntu-random2", "ext4-meta-ssd", 0x665bf003ee082125),
    ("ubuntu-random2", "ext3-meta-ssd", 0xb83f9c2ef2f8afda),
];

#[test]
fn every_policys_plans_are_what_mains_code_made() {
    let mut got = Vec::new();
    let mut errors = Vec::new();
    for (name, pop) in workloads() {
        for &p in policy::POLICY_NAMES {
            let profile = MkfsProfile::by_name(policy::default_mkfs_profile(p).unwrap()).unwrap();
            let geo = Geometry::new(&profile, pop.fs_bytes).unwrap();
            let plan = policy::by_name(p, &PolicyParams::new())
                .unwrap()
                .plan(&geo, &pop, 2007);
            if let Err(e) = &plan {
                errors.push(format!("{name} {p}: {e}"));
            }
            got.push((name.clone(), p.to_string(), digest(&plan)));
        }
    }
    let table: String = got
        .iter()
        .map(|(w, p, d)| format!("    (\"{w}\", \"{p}\", 0x{d:016x}),\n"))
        .collect();
    let want: Vec<(String, String, u64)> = GOLDEN
        .iter()
        .map(|&(w, p, d)| (w.to_string(), p.to_string(), d))
        .collect();
    assert!(got == want, "plans moved; this run's table:\n{table}");
    // a golden of errors would hold little: every workload fits every policy
    assert!(errors.is_empty(), "{errors:?}");
}
