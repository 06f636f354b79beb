//! `ext4-kernel` against the kernel itself: the same tree copied onto a kernel-mounted ext4
//! (made by today's mke2fs with the `ext4-kernel` profile's options, on zram through the
//! rig's KernelFs: the rig's `apply_ops` does mkdir, create + write zeros + close, symlink,
//! link, mknod with real syscalls in the population's order, then unmount: `kernel_plan`) and planned by the policy on the same
//! geometry. The kernel's layout is read back with `inspect`, and the two are compared by
//! the distributions docs/policies.md ("ext4-kernel vs the kernel") reports: extents per
//! file, the group of each inode, where directory blocks go. Needs root (zram, loop, mount);
//! skipped with a message otherwise. Also: the policy's plans as images (mke2fs + libext2fs)
//! that the real `e2fsck -fn` finds clean and `inspect` reads back as planned.

mod common;

use layoutlab_image::{fsck_check, inspect, materialize, mkfs_profile};
use layoutlab_layout::{
    mapping::EXTENT_MAX_LEN, policy_by_name, Geometry, InodeKind, MkfsProfile, Plan, PolicyParams,
};
use layoutlab_workload::populations::tree::TreePopulation;
use layoutlab_workload::{NsOp, Population};
use std::collections::{BTreeMap, HashMap, HashSet};

/// ubuntu-32g shrunk `1/divisor` in every count, its file system and its data: the same
/// generator, shapes and creation order (rsync -axH) at a size the kernel copies in seconds.
fn ubuntu_small(divisor: u64) -> Population {
    let text = include_str!("../../../populations/ubuntu-32g.toml");
    let mut t = TreePopulation::from_toml_str(text, "ubuntu-32g").unwrap();
    let c = &mut t.counts;
    for n in [
        &mut c.directories,
        &mut c.regular_files,
        &mut c.symlinks,
        &mut c.fast_symlinks,
        &mut c.hard_links,
    ] {
        *n = (*n / divisor).max(1);
    }
    t.fs_bytes /= divisor;
    t.file_data_blocks /= divisor;
    t.name = format!("ubuntu-32g/{divisor}");
    t.generate()
}

/// A random tree of directories, files of log-uniform sizes up to 8 MiB, fast and slow
/// symlinks and hard links on 4 GiB (two flex groups).
fn random_tree(seed: u64) -> Population {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut dirs = vec![String::new()];
    let mut files: Vec<String> = Vec::new();
    let mut ops = Vec::new();
    let join = |d: &str, n: String| if d.is_empty() { n } else { format!("{d}/{n}") };
    for i in 0..3000 {
        let parent = dirs[rng.gen_range(0..dirs.len())].clone();
        let path = join(&parent, format!("n{i:05}"));
        let op = match rng.gen_range(0..20) {
            0..=2 => {
                dirs.push(path.clone());
                NsOp::Mkdir { path }
            }
            3 => NsOp::Symlink {
                path,
                target: "s".repeat(if rng.gen_bool(0.5) { 20 } else { 200 }),
            },
            4 if !files.is_empty() => NsOp::Link {
                path,
                target: files[rng.gen_range(0..files.len())].clone(),
            },
            _ => {
                files.push(path.clone());
                NsOp::Create {
                    path,
                    bytes: 2f64.powf(rng.gen_range(0.0..23.0)) as u64,
                }
            }
        };
        ops.push(op);
    }
    Population {
        name: format!("random-{seed}"),
        fs_bytes: 4 << 30,
        ops,
    }
}

/// The policy's default `writeback_mib`, in bytes.
const WRITEBACK_BYTES: u64 = layoutlab_layout::policy::ext4_kernel::DEFAULT_WRITEBACK_MIB << 20;

/// Makes `pop` on a kernel ext4 (the profile's mke2fs options, default mount options) with
/// the rig's replay, writing back every WRITEBACK_BYTES of files as the policy's
/// writeback_mib models it (the flusher on its own would start at dirty_background_ratio of
/// this machine's memory), then reads the kernel's layout back.
fn kernel_layout(profile: &MkfsProfile, pop: &Population, linear_groups: u32) -> Plan {
    assert_eq!(profile.name, layoutlab_rig::EXT4_PROFILE);
    // The zram-backed loop device is non-rotational, for which ext4 sets
    // mb_max_linear_groups to 0 at mount; on a rotational disk it is 4 (MB_DEFAULT_LINEAR_LIMIT:
    // the goal's group and the next three are tried before the free-extent-size lists). The
    // policy models a disk: the rig gives this file system a disk's value (its own sysfs knob).
    let (plan, run) = layoutlab_rig::kernel_plan(pop, linear_groups, WRITEBACK_BYTES, &mut |_| {})
        .unwrap_or_else(|e| panic!("{}: {e}", pop.name));
    assert_eq!(run.apply.operations, pop.ops.len());
    plan
}

/// Path of every inode's first name (ino -> path): [`Plan::name_paths`] lists the inodes'
/// names before the hard links.
fn paths(plan: &Plan) -> HashMap<u32, String> {
    let mut out = HashMap::new();
    for (ino, path) in plan.name_paths() {
        out.entry(ino).or_insert(path);
    }
    out
}

/// Total-variation distance between two histograms (0: the same shape, 1: disjoint).
fn tv(a: &BTreeMap<u64, u64>, b: &BTreeMap<u64, u64>) -> f64 {
    let (ta, tb) = (
        a.values().sum::<u64>() as f64,
        b.values().sum::<u64>() as f64,
    );
    let keys: HashSet<_> = a.keys().chain(b.keys()).collect();
    keys.into_iter()
        .map(|k| {
            let pa = *a.get(k).unwrap_or(&0) as f64 / ta.max(1.0);
            let pb = *b.get(k).unwrap_or(&0) as f64 / tb.max(1.0);
            (pa - pb).abs()
        })
        .sum::<f64>()
        / 2.0
}

/// Extents of a file: its runs, split at the longest extent.
fn extents(i: &layoutlab_layout::PlannedInode) -> u64 {
    i.data.iter().map(|r| r.len.div_ceil(EXTENT_MAX_LEN)).sum()
}

/// The distributions compared.
#[derive(Debug)]
struct Shape {
    /// Extents per regular file with data, capped at 4 (4 = 4 or more).
    extents: BTreeMap<u64, u64>,
    /// Mean extents per regular file with data.
    mean_extents: f64,
    /// Inodes the tree made (ino >= 12), per group.
    inode_groups: BTreeMap<u64, u64>,
    /// Directories per flex group.
    dir_flex: BTreeMap<u64, u64>,
    /// Directory blocks per group.
    dir_block_groups: BTreeMap<u64, u64>,
    /// Share of directory blocks in the first group of a flex group.
    dir_blocks_first: f64,
    /// Regular-file data blocks per flex group.
    data_flex: BTreeMap<u64, u64>,
    /// Regular-file data blocks per group.
    data_groups: BTreeMap<u64, u64>,
}

fn shape(plan: &Plan, geo: &Geometry) -> Shape {
    let ipg = u64::from(geo.inodes_per_group);
    let flex = geo.flex_bg_size;
    let mut s = Shape {
        extents: BTreeMap::new(),
        mean_extents: 0.0,
        inode_groups: BTreeMap::new(),
        dir_flex: BTreeMap::new(),
        dir_block_groups: BTreeMap::new(),
        dir_blocks_first: 0.0,
        data_flex: BTreeMap::new(),
        data_groups: BTreeMap::new(),
    };
    let (mut files, mut total_extents) = (0u64, 0u64);
    for i in plan.inodes.iter().filter(|i| i.ino == 2 || i.ino >= 12) {
        let group = u64::from(i.ino - 1) / ipg;
        if i.ino >= 12 {
            *s.inode_groups.entry(group).or_default() += 1;
        }
        match i.kind {
            InodeKind::File if i.data_blocks() > 0 => {
                let e = extents(i);
                *s.extents.entry(e.min(4)).or_default() += 1;
                files += 1;
                total_extents += e;
                for r in &i.data {
                    *s.data_flex
                        .entry(geo.group_of(r.physical) / flex)
                        .or_default() += r.len;
                    *s.data_groups.entry(geo.group_of(r.physical)).or_default() += r.len;
                }
            }
            InodeKind::Dir => {
                if i.ino >= 12 {
                    *s.dir_flex.entry(group / flex).or_default() += 1;
                }
                for r in &i.data {
                    for b in r.physical..r.physical + r.len {
                        *s.dir_block_groups.entry(geo.group_of(b)).or_default() += 1;
                    }
                }
            }
            _ => {}
        }
    }
    s.mean_extents = total_extents as f64 / files.max(1) as f64;
    let dir_total: u64 = s.dir_block_groups.values().sum();
    let dir_first: u64 = s
        .dir_block_groups
        .iter()
        .filter(|(g, _)| *g % flex == 0)
        .map(|(_, n)| n)
        .sum();
    s.dir_blocks_first = dir_first as f64 / dir_total.max(1) as f64;
    s
}

/// What differs between the kernel's layout and the policy's.
#[derive(Debug)]
struct Differences {
    /// Paths (first names; hard-linked inodes aside) whose inode number is the same in both.
    same_ino: f64,
    /// Paths whose inode is in the same group.
    same_group: f64,
    /// TV distance of extents per file.
    extents_tv: f64,
    /// Mean extents per file: kernel, policy.
    mean_extents: (f64, f64),
    /// TV distance of inodes per group.
    inode_groups_tv: f64,
    /// TV distance of directories per flex group.
    dir_flex_tv: f64,
    /// TV distance of directory blocks per group.
    dir_blocks_tv: f64,
    /// Share of directory blocks in first groups of flex groups: kernel, policy.
    dir_blocks_first: (f64, f64),
    /// TV distance of file data per flex group.
    data_flex_tv: f64,
    /// TV distance of file data per group.
    data_group_tv: f64,
    /// Regular files with data (hard-linked aside) whose blocks are exactly the kernel's:
    /// reported, not bounded (the kernel itself varies here from run to run: 10-19% on the
    /// random tree).
    #[allow(dead_code)]
    same_data: f64,
}

fn compare(pop: &Population, linear_groups: u32) -> Differences {
    let profile = MkfsProfile::by_name("ext4-kernel").unwrap();
    let geo = Geometry::new(&profile, pop.fs_bytes).unwrap();
    let ours = policy_by_name("ext4-kernel", &PolicyParams::new())
        .unwrap()
        .plan(&geo, pop, 1)
        .unwrap();
    ours.check(&geo).unwrap();
    let t = std::time::Instant::now();
    let kernel = kernel_layout(&profile, pop, linear_groups);
    println!(
        "{}: the kernel copied {} operations in {:.1} s",
        pop.name,
        pop.ops.len(),
        t.elapsed().as_secs_f64()
    );
    let (k, o) = (shape(&kernel, &geo), shape(&ours, &geo));
    println!(
        "{}: kernel {k:?}\n{}: ext4-kernel {o:?}",
        pop.name, pop.name
    );
    let linked: HashSet<u32> = kernel
        .links
        .iter()
        .chain(&ours.links)
        .map(|l| l.ino)
        .collect();
    let kp: HashMap<String, u32> = paths(&kernel)
        .into_iter()
        .filter(|(i, _)| *i >= 12)
        .map(|(i, p)| (p, i))
        .collect();
    let ipg = geo.inodes_per_group;
    let data_of: HashMap<u32, &Vec<layoutlab_layout::Run>> = kernel
        .inodes
        .iter()
        .filter(|i| i.kind == InodeKind::File && i.data_blocks() > 0)
        .map(|i| (i.ino, &i.data))
        .collect();
    let (mut files, mut same_data) = (0u64, 0u64);
    let (mut n, mut ino, mut group) = (0u64, 0u64, 0u64);
    for (i, p) in paths(&ours) {
        if i < 12 || linked.contains(&i) {
            continue;
        }
        let Some(&ki) = kp.get(&p) else {
            continue;
        };
        if linked.contains(&ki) {
            continue;
        }
        n += 1;
        ino += u64::from(ki == i);
        if let Some(kd) = data_of.get(&ki) {
            let od = &ours.inodes.iter().find(|x| x.ino == i).unwrap().data;
            files += 1;
            same_data += u64::from(*kd == od);
        }
        group += u64::from((ki - 1) / ipg == (i - 1) / ipg);
    }
    assert!(n * 10 > pop.ops.len() as u64 * 8, "{n} paths matched");
    Differences {
        same_ino: ino as f64 / n as f64,
        same_group: group as f64 / n as f64,
        extents_tv: tv(&k.extents, &o.extents),
        mean_extents: (k.mean_extents, o.mean_extents),
        inode_groups_tv: tv(&k.inode_groups, &o.inode_groups),
        dir_flex_tv: tv(&k.dir_flex, &o.dir_flex),
        dir_blocks_tv: tv(&k.dir_block_groups, &o.dir_block_groups),
        dir_blocks_first: (k.dir_blocks_first, o.dir_blocks_first),
        data_flex_tv: tv(&k.data_flex, &o.data_flex),
        data_group_tv: tv(&k.data_groups, &o.data_groups),
        same_data: same_data as f64 / files.max(1) as f64,
    }
}

fn root_or_skip(test: &str) -> bool {
    if layoutlab_rig::is_root() {
        return true;
    }
    eprintln!("SKIP {test}: needs root (zram, loop devices, mount)");
    false
}

/// ubuntu-32g at 1/8 (4 GiB, two flex groups; 39,112 operations, 2.1 GB of zeros).
/// Measured (docs/policies.md): every path gets the kernel's inode number, every directory
/// block the kernel's group but for 45 blocks of 3,678 (directory-index leaf splits),
/// extents per file the same but for a handful; file data per flex group within 9% (where
/// a big file's stream allocations start).
#[test]
fn ext4_kernel_vs_the_kernel_on_ubuntu_small() {
    if !root_or_skip("ext4_kernel_vs_the_kernel_on_ubuntu_small") {
        return;
    }
    let d = compare(&ubuntu_small(8), 4);
    println!("ubuntu-32g/8: {d:#?}");
    assert!(d.same_ino > 0.99, "{d:?}");
    assert!(d.same_group > 0.99, "{d:?}");
    assert!(d.inode_groups_tv < 0.01, "{d:?}");
    assert!(d.dir_flex_tv < 0.01, "{d:?}");
    assert!(d.dir_blocks_tv < 0.02, "{d:?}");
    assert!(
        (d.dir_blocks_first.0 - d.dir_blocks_first.1).abs() < 0.01,
        "{d:?}"
    );
    assert!(d.extents_tv < 0.001, "{d:?}");
    assert!((d.mean_extents.0 - d.mean_extents.1).abs() < 0.001, "{d:?}");
    assert!(d.data_flex_tv < 0.15, "{d:?}");
    assert!(d.data_group_tv < 0.2, "{d:?}");
}

/// A random tree on 4 GiB (3,000 operations, 1.1 GB): measured identical inode numbers for
/// every path, identical directory-block groups and extents per file. File data per flex
/// group and per group: the kernel does not repeat itself there (which CPU's locality group
/// and flusher serve a small file), and a busy machine makes it vary more: TV 0.00003–0.009
/// per flex group quiet, up to 0.048 (0.049 per group) in 1 run of 5 with a CPU busy
/// elsewhere — a 0.02 bound failed that way. Bounded at 0.08 and 0.1: a misplaced stream or
/// goal moves them far more (ubuntu-32g/8's big files: 0.09).
#[test]
fn ext4_kernel_vs_the_kernel_on_a_random_tree() {
    if !root_or_skip("ext4_kernel_vs_the_kernel_on_a_random_tree") {
        return;
    }
    let d = compare(&random_tree(9), 4);
    println!("random-9: {d:#?}");
    assert!(d.same_ino > 0.99, "{d:?}");
    assert!(d.inode_groups_tv < 0.01, "{d:?}");
    assert!(d.dir_blocks_tv < 0.01, "{d:?}");
    assert_eq!(d.dir_blocks_first.0, d.dir_blocks_first.1, "{d:?}");
    assert!(d.extents_tv < 0.001, "{d:?}");
    assert!(d.data_flex_tv < 0.08, "{d:?}");
    assert!(d.data_group_tv < 0.1, "{d:?}");
}

/// The same random tree on a non-rotational device as the kernel mounts it (zram:
/// `mb_max_linear_groups` 0): the kernel's layout then differs from the policy's, which
/// models a disk — directory blocks leave the first groups of the flex groups for the
/// groups the free-extent lists offer. Held so docs/policies.md's statement stays true.
#[test]
fn ext4_kernel_models_a_disk_not_a_nonrotational_device() {
    if !root_or_skip("ext4_kernel_models_a_disk_not_a_nonrotational_device") {
        return;
    }
    let d = compare(&random_tree(9), 0);
    println!("random-9, non-rotational: {d:#?}");
    // inodes still go to the same groups (Orlov and find_group_other do not depend on it)
    assert!(d.same_group > 0.95, "{d:?}");
    assert!(
        d.dir_blocks_first.0 < 0.5 && d.dir_blocks_first.1 == 1.0,
        "{d:?}"
    );
}

/// Plan -> image (mke2fs with the ext4-kernel profile + libext2fs) -> real e2fsck -fn clean
/// -> inspect gives the plan back, for ubuntu-32g at 1/8 and random trees.
#[test]
fn ext4_kernel_images_round_trip() {
    let profile = MkfsProfile::by_name("ext4-kernel").unwrap();
    let mut checked = 0;
    for pop in [ubuntu_small(8), random_tree(1), random_tree(2)] {
        let geo = Geometry::new(&profile, pop.fs_bytes).unwrap();
        let plan = policy_by_name("ext4-kernel", &PolicyParams::new())
            .unwrap()
            .plan(&geo, &pop, 5)
            .unwrap();
        plan.check(&geo).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let image = dir.path().join("k.img");
        mkfs_profile(&image, pop.fs_bytes, &profile).unwrap();
        materialize(&image, &plan).unwrap_or_else(|e| panic!("{}: {e}", pop.name));
        let v = fsck_check(&image).unwrap();
        assert!(v.clean, "{}: e2fsck:\n{}", pop.name, v.output);
        common::assert_round_trip(&image, &plan);
        let back = inspect(&image).unwrap();
        assert!(back
            .superblock
            .features
            .iter()
            .any(|f| f == "metadata_csum"));
        checked += 1;
    }
    assert_eq!(checked, 3);
}
