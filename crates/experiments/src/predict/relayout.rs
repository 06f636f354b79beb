//! `--relayout POLICY`: what the check of the same data would have cost had another allocator
//! laid it out. The tree is read back from SOURCE (libext2fs, `layoutlab_image::inspect`),
//! replayed as a workload in inode order onto a fresh image of the same geometry planned by the
//! policy, written through libext2fs, and checked like SOURCE.
//!
//! What "the same geometry" keeps: size, block size, blocks and inodes per group, inode size,
//! root reservation, flex_bg size, journal size and the features the layout model knows.
//! Features it does not know (e.g. `metadata_csum`, `orphan_file`) are left out of the new
//! image and listed in the report: they move no block the policy places, but e2fsck does more
//! work with checksums, so the comparison is of layouts, not of feature sets.

use anyhow::{bail, Context, Result};
use layoutlab_image::Inspected;
use layoutlab_layout::mkfs::{JournalPlacement, JournalSize};
use layoutlab_layout::{Geometry, InodeKind, MkfsProfile, Special};
use layoutlab_workload::{NodeKind, NsOp, Population};
use std::collections::{BTreeMap, HashSet};
use std::path::Path;

/// The tree of an inspected image as a workload: every directory, file (with its size),
/// symlink, device node, fifo and socket, created in inode order (a directory before what it
/// holds), then the hard links in the order the walk found them.
pub fn population_of(ins: &Inspected) -> Result<Population> {
    let by_ino: BTreeMap<u32, &layoutlab_image::InspectedInode> =
        ins.inodes.iter().map(|i| (i.planned.ino, i)).collect();
    let root = 2u32;
    let path_of = |mut ino: u32| -> Result<String> {
        let mut parts = Vec::new();
        let mut guard = 0;
        while ino != root {
            let i = by_ino
                .get(&ino)
                .with_context(|| format!("inode {ino} is not in the tree"))?;
            parts.push(i.planned.name.clone());
            ino = i.planned.parent;
            guard += 1;
            if guard > 4096 {
                bail!("directory loop above inode {ino}");
            }
        }
        parts.reverse();
        Ok(parts.join("/"))
    };
    let mut ops = Vec::new();
    let mut made: HashSet<u32> = HashSet::from([root]);
    // lost+found is mke2fs's; the new image has its own.
    let lost_found = ins
        .inodes
        .iter()
        .find(|i| i.planned.parent == root && i.planned.name == "lost+found")
        .map(|i| i.planned.ino);
    if let Some(lf) = lost_found {
        made.insert(lf);
    }
    fn make(
        ino: u32,
        by_ino: &BTreeMap<u32, &layoutlab_image::InspectedInode>,
        made: &mut HashSet<u32>,
        ops: &mut Vec<NsOp>,
        path_of: &dyn Fn(u32) -> Result<String>,
    ) -> Result<()> {
        if made.contains(&ino) {
            return Ok(());
        }
        let i = by_ino[&ino];
        // Its directory first: inode order is not always creation order.
        if by_ino.contains_key(&i.planned.parent) || i.planned.parent == 2 {
            if i.planned.parent != 2 {
                make(i.planned.parent, by_ino, made, ops, path_of)?;
            }
        } else {
            bail!(
                "inode {ino}'s directory {} is not in the tree",
                i.planned.parent
            );
        }
        let path = path_of(ino)?;
        let p = &i.planned;
        let op = match (p.kind, &p.special) {
            (InodeKind::Dir, _) => NsOp::Mkdir { path },
            (InodeKind::File, _) => NsOp::Create {
                path,
                bytes: p.size_bytes,
            },
            (InodeKind::Symlink, Special::Symlink { target }) => NsOp::Symlink {
                path,
                target: target.clone(),
            },
            (kind, special) => {
                let node = match kind {
                    InodeKind::CharDev => NodeKind::Char,
                    InodeKind::BlockDev => NodeKind::Block,
                    InodeKind::Fifo => NodeKind::Fifo,
                    InodeKind::Socket => NodeKind::Socket,
                    _ => bail!("inode {ino}: a {} without its target", kind.name()),
                };
                let (major, minor) = match special {
                    Special::Device { major, minor } => (*major, *minor),
                    _ => (0, 0),
                };
                NsOp::Mknod {
                    path,
                    node,
                    major,
                    minor,
                }
            }
        };
        ops.push(op);
        made.insert(ino);
        Ok(())
    }
    for &ino in by_ino.keys() {
        if ino == root || Some(ino) == lost_found {
            continue;
        }
        make(ino, &by_ino, &mut made, &mut ops, &path_of)?;
    }
    for l in &ins.links {
        let target = path_of(l.ino)?;
        let dir = path_of(l.parent)?;
        let path = if dir.is_empty() {
            l.name.clone()
        } else {
            format!("{dir}/{}", l.name)
        };
        ops.push(NsOp::Link { path, target });
    }
    let fs_bytes = ins.superblock.blocks_count * u64::from(ins.superblock.block_bytes);
    let pop = Population {
        name: "relayout".into(),
        fs_bytes,
        ops,
    };
    pop.check_tree().context("the tree read back from SOURCE")?;
    Ok(pop)
}

/// The mkfs profile that rebuilds SOURCE's geometry, and the features it leaves out.
pub fn profile_of(ins: &Inspected, log_groups_per_flex: u8) -> Result<(MkfsProfile, Vec<String>)> {
    let sb = &ins.superblock;
    let known = layoutlab_layout::mkfs::KNOWN_FEATURES;
    let (mut features, dropped): (Vec<String>, Vec<String>) = sb
        .features
        .iter()
        .cloned()
        .partition(|f| known.contains(&f.as_str()));
    let mut kernel_features = Vec::new();
    if let Some(i) = features.iter().position(|f| f == "large_file") {
        kernel_features.push(features.remove(i));
    }
    let fs_bytes = sb.blocks_count * u64::from(sb.block_bytes);
    let journal_blocks = ins
        .special
        .iter()
        .find(|s| s.ino == sb.journal_ino && sb.journal_ino != 0)
        .map(|s| s.size_bytes / u64::from(sb.block_bytes))
        .unwrap_or(0);
    let flex = if features.iter().any(|f| f == "flex_bg") {
        1u32 << log_groups_per_flex.min(31)
    } else {
        0
    };
    let profile = MkfsProfile {
        name: "relayout".into(),
        description: "the geometry of SOURCE".into(),
        block_size_bytes: sb.block_bytes,
        blocks_per_group: sb.blocks_per_group,
        inode_size_bytes: sb.inode_bytes,
        bytes_per_inode: fs_bytes / u64::from(sb.inodes_count.max(1)),
        reserved_percent: (sb.reserved_blocks as f64 * 100.0 / sb.blocks_count as f64 * 100.0)
            .round()
            / 100.0,
        features,
        kernel_features,
        journal: if journal_blocks == 0 {
            JournalSize::None
        } else {
            JournalSize::Blocks(journal_blocks)
        },
        journal_goal_block: 0,
        journal_placement: if flex > 0 {
            JournalPlacement::Midpoint
        } else {
            JournalPlacement::Fixed
        },
        flex_bg_size: flex,
        superblock: Default::default(),
        inode_tables_zeroed: false,
        backup_groups_block_init: false,
        // SOURCE's journal length and table places are read, not an era's quirks
        journal_blocks_past_size: 0,
        short_flex_group_packed_as_whole: false,
        reserved_blocks_before_drop: false,
    };
    // Through the profile reader, so SOURCE's geometry passes the checks a profile file does.
    let text = toml::to_string(&profile).context("profile as TOML")?;
    let profile = MkfsProfile::from_toml_str(&text, "SOURCE's geometry")?;
    let geo = Geometry::new(&profile, fs_bytes)?;
    if geo.inodes_per_group != sb.inodes_per_group {
        bail!(
            "SOURCE's geometry cannot be rebuilt: {} inodes per group, mke2fs would make {}",
            sb.inodes_per_group,
            geo.inodes_per_group
        );
    }
    Ok((profile, dropped))
}

/// `s_log_groups_per_flex` of the ext superblock of the image or device at `path`.
pub fn log_groups_per_flex(path: &Path) -> Result<u8> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(path).with_context(|| format!("{}", path.display()))?;
    f.seek(SeekFrom::Start(1024 + 0x174))?;
    let mut b = [0u8; 1];
    f.read_exact(&mut b)?;
    Ok(b[0])
}

#[cfg(test)]
mod tests {
    use super::*;
    use layoutlab_layout::PolicyParams;

    /// A tree with every kind of object, a hard link, names out of order and a large
    /// directory, in the order a user might have made it.
    fn tree() -> Population {
        let mut ops = vec![
            NsOp::Mkdir {
                path: "zeta".into(),
            },
            NsOp::Mkdir {
                path: "alpha".into(),
            },
            NsOp::Mkdir {
                path: "alpha/deep".into(),
            },
            NsOp::Create {
                path: "alpha/deep/big".into(),
                bytes: 9 << 20,
            },
            NsOp::Create {
                path: "zeta/empty".into(),
                bytes: 0,
            },
            NsOp::Symlink {
                path: "alpha/fast".into(),
                target: "deep/big".into(),
            },
            NsOp::Symlink {
                path: "alpha/slow".into(),
                target: "x".repeat(200),
            },
            NsOp::Link {
                path: "zeta/again".into(),
                target: "alpha/deep/big".into(),
            },
            NsOp::Mknod {
                path: "zeta/tty".into(),
                node: NodeKind::Char,
                major: 4,
                minor: 1,
            },
            NsOp::Mknod {
                path: "zeta/sda".into(),
                node: NodeKind::Block,
                major: 8,
                minor: 0,
            },
            NsOp::Mknod {
                path: "zeta/fifo".into(),
                node: NodeKind::Fifo,
                major: 0,
                minor: 0,
            },
            NsOp::Mknod {
                path: "zeta/sock".into(),
                node: NodeKind::Socket,
                major: 0,
                minor: 0,
            },
        ];
        for i in 0..300 {
            ops.push(NsOp::Create {
                path: format!("zeta/f{i:03}"),
                bytes: 5000 + i * 37,
            });
        }
        Population {
            name: "t".into(),
            fs_bytes: 256 << 20,
            ops,
        }
    }

    /// Every name with what it names: which of a hard-linked file's names counts as the
    /// first is the walk's choice, not the tree's.
    fn objects(p: &Population) -> Vec<String> {
        let mut named: BTreeMap<String, String> = BTreeMap::new();
        for o in &p.ops {
            let what = match o {
                NsOp::Link { target, .. } => named[target].clone(),
                NsOp::Mkdir { .. } => "dir".to_string(),
                NsOp::Create { bytes, .. } => format!("file {bytes}"),
                NsOp::Symlink { target, .. } => format!("symlink {target}"),
                NsOp::Mknod {
                    node, major, minor, ..
                } => format!("{node:?} {major}:{minor}"),
                _ => unreachable!("the trees compared here are copies: no appends, no aging"),
            };
            named.insert(o.path().to_string(), what);
        }
        named.into_iter().map(|(k, v)| format!("{k} {v}")).collect()
    }

    #[test]
    fn an_image_read_back_is_the_tree_it_was_made_from() {
        let dir = std::env::temp_dir().join(format!("ll-relayout-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let pop = tree();
        let profile = MkfsProfile::by_name("ext4-2009").unwrap();
        let geo = Geometry::new(&profile, pop.fs_bytes).unwrap();
        let plan = layoutlab_layout::policy_by_name("ext4-2009", &PolicyParams::new())
            .unwrap()
            .plan(&geo, &pop, 1)
            .unwrap();
        let img = dir.join("t.img");
        layoutlab_image::mkfs_profile(&img, pop.fs_bytes, &profile).unwrap();
        layoutlab_image::materialize(&img, &plan).unwrap();
        let ins = layoutlab_image::inspect(&img).unwrap();
        let back = population_of(&ins).unwrap();
        assert_eq!(back.fs_bytes, pop.fs_bytes);
        assert_eq!(back.stats(), pop.stats());
        assert_eq!(objects(&back), objects(&pop));
        // Directories come before what they hold (check_tree in population_of holds it too).
        let pos = |p: &str| back.ops.iter().position(|o| o.path() == p).unwrap();
        assert!(pos("alpha") < pos("alpha/deep") && pos("alpha/deep") < pos("alpha/deep/big"));

        // The geometry rebuilt from the superblock is the geometry the image has.
        let (rebuilt, dropped) = profile_of(&ins, log_groups_per_flex(&img).unwrap()).unwrap();
        assert!(dropped.is_empty(), "{dropped:?}");
        let g2 = Geometry::new(&rebuilt, pop.fs_bytes).unwrap();
        assert_eq!(
            (
                g2.blocks_count,
                g2.inodes_count,
                g2.inodes_per_group,
                g2.groups.len()
            ),
            (
                geo.blocks_count,
                geo.inodes_count,
                geo.inodes_per_group,
                geo.groups.len()
            )
        );
        assert_eq!(rebuilt.flex_bg_size, profile.flex_bg_size);
        assert_eq!(
            rebuilt.journal_blocks(geo.blocks_count),
            profile.journal_blocks(geo.blocks_count)
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
