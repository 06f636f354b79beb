//! Files written in appends (`NsOp::Append`) by writers that keep them open, as 2.6.2x ext3
//! lays them out: each file keeps its reservation window between its writes, other files'
//! windows go around it, and its goal is its last block + 1. Two writers taking turns
//! interleave on disk one reservation window at a time, and the windows double (8, 16, ...
//! up to 1027 blocks) while each was more than half used.

use layoutlab_layout::alloc::ext3_alloc::{Ext3Alloc, MAX_RESERVE_BLOCKS};
use layoutlab_layout::alloc::writer::{FileWriter, IndirectPlacer};
use layoutlab_layout::alloc::FreeMap;
use layoutlab_layout::policy::ext3_metacluster::Ext3Metacluster;
use layoutlab_layout::{policy, Geometry, InodeKind, MkfsProfile, Plan, PolicyParams};
use layoutlab_workload::{NsOp, Population};
use proptest::prelude::*;

/// ext3-2007's placement: indirect blocks in the same call as, and just before, their data.
struct Inline;

impl IndirectPlacer for Inline {
    fn inline(&self) -> bool {
        true
    }

    fn place(&mut self, _: &mut Ext3Alloc, _: u64, _: usize) -> Option<Vec<u64>> {
        unreachable!("inline")
    }
}

/// A file's blocks: data runs (first block, length) and mapping blocks.
type FileBlocks = (Vec<(u64, u64)>, Vec<u64>);

/// Physically contiguous pieces of the given files' blocks (data and mapping), in disk
/// order: (first block, length, which file). Panics if a block belongs to two files or
/// twice to one.
fn pieces(files: &[FileBlocks]) -> Vec<(u64, u64, usize)> {
    let mut own: Vec<(u64, u64, usize)> = Vec::new();
    for (i, (runs, maps)) in files.iter().enumerate() {
        own.extend(runs.iter().map(|&(p, l)| (p, l, i)));
        own.extend(maps.iter().map(|&p| (p, 1, i)));
    }
    own.sort();
    let mut out: Vec<(u64, u64, usize)> = Vec::new();
    for (p, l, i) in own {
        if let Some(last) = out.last() {
            assert!(last.0 + last.1 <= p, "block {p} used twice");
        }
        match out.last_mut() {
            Some(last) if last.2 == i && last.0 + last.1 == p => last.1 += l,
            _ => out.push((p, l, i)),
        }
    }
    out
}

fn writer_blocks(w: &FileWriter) -> FileBlocks {
    (
        w.out.data.iter().map(|r| (r.physical, r.len)).collect(),
        w.out.mapping.iter().map(|m| m.physical).collect(),
    )
}

fn plan_blocks(plan: &Plan, name: &str) -> FileBlocks {
    let i = plan.inodes.iter().find(|i| i.name == name).unwrap();
    (
        i.data.iter().map(|r| (r.physical, r.len)).collect(),
        i.mapping.iter().map(|m| m.physical).collect(),
    )
}

/// Two writers, same first goal (one process writing both, as `dd`-like writers started
/// together), taking turns of 64 blocks on an empty group:
/// - A's first 65 blocks (64 data + the IND at logical 12) fill windows of 8, 16 and 32 and
///   9 blocks of a 64-block window; B's first window cannot start before A's, so it goes
///   right after it, and B does the same there;
/// - A's next turn finishes its 64-block window (A's first piece: 8+16+32+64 = 120 blocks)
///   and, more than half of it used, asks for 128 blocks: after B's window, and so on.
///
/// From then on every piece on disk is one whole window of one file, the files alternate,
/// and the windows double to 1027 (EXT3_MAX_RESERVE_BLOCKS).
#[test]
fn two_appenders_alternate_in_windows_that_double() {
    for per_block in [false, true] {
        let mut alloc = Ext3Alloc::new(FreeMap::new(1 << 17, 0, 1 << 15));
        alloc.map.mark_used(0, 100);
        let mut w = [FileWriter::new(1000, 1024), FileWriter::new(1000, 1024)];
        for _ in 0..80 {
            for f in w.iter_mut() {
                alloc.unpark_window(&f.rsv);
                let n = if per_block {
                    f.write_per_block(&mut alloc, &mut Inline, 64)
                } else {
                    f.write(&mut alloc, &mut Inline, 64)
                };
                assert_eq!(n, 64);
                alloc.park_window(&f.rsv);
            }
        }
        // both windows are in the tree, apart
        let parked: Vec<(u64, u64)> = alloc.parked_windows().collect();
        assert_eq!(parked.len(), 2);
        assert!(parked[0].1 < parked[1].0, "{parked:?}");
        let p = pieces(&[writer_blocks(&w[0]), writer_blocks(&w[1])]);
        let lens: Vec<u64> = p.iter().map(|x| x.1).collect();
        assert_eq!(p[0].0, 1000, "A starts at the goal");
        for (k, piece) in p.iter().enumerate() {
            assert_eq!(piece.2, k % 2, "pieces alternate: {p:?}");
        }
        // per file: 120, 128, 256, 512, 1024, then 1027 until the last (partly used) window
        for file in 0..2 {
            let mine: Vec<u64> = lens.iter().skip(file).step_by(2).copied().collect();
            assert_eq!(mine[..5], [120, 128, 256, 512, 1024], "{file}: {mine:?}");
            let (last, full) = mine[5..].split_last().unwrap();
            assert!(full.iter().all(|&l| l == MAX_RESERVE_BLOCKS), "{mine:?}");
            assert!(*last <= MAX_RESERVE_BLOCKS, "{mine:?}");
            // 80 * 64 data blocks and their 6 indirect blocks (IND at logical 12, DIND + IND
            // at 1036, INDs at 2060, 3084 and 4108)
            assert_eq!(mine.iter().sum::<u64>(), 80 * 64 + 6);
        }
        // nothing else taken
        assert_eq!(alloc.map.total_free(), (1 << 17) - 100 - 2 * (80 * 64 + 6));
    }
}

/// A writer that closes its file drops its window: the next file's window may then start
/// where the old one was, as when files are written one after another.
#[test]
fn a_closed_file_leaves_no_window() {
    let mut alloc = Ext3Alloc::new(FreeMap::new(1 << 16, 0, 1 << 15));
    let mut a = FileWriter::new(500, 1024);
    a.write(&mut alloc, &mut Inline, 10);
    // A filled its 8-block window and has 2 blocks of its 16-block one: [508, 523]
    assert_eq!((a.rsv.start, a.rsv.end), (508, 523));
    // parked (A still open): B, same goal, finds 500..509 taken and its window goes after A's
    alloc.park_window(&a.rsv);
    let mut b = FileWriter::new(500, 1024);
    b.write(&mut alloc, &mut Inline, 1);
    assert_eq!(b.out.data[0].physical, 524);
    // A and B closed: C takes the first free block after the goal, inside A's old window
    alloc.unpark_window(&a.rsv);
    let mut c = FileWriter::new(500, 1024);
    c.write(&mut alloc, &mut Inline, 1);
    assert_eq!(c.out.data[0].physical, 510);
}

/// The ops of `files` taking `turns` turns of `turn_bytes` each, created empty first
/// (large-delete's fragmented variant).
fn interleaved(files: &[&str], turns: usize, turn_bytes: u64, fs_bytes: u64) -> Population {
    let mut ops: Vec<NsOp> = files
        .iter()
        .map(|f| NsOp::Create {
            path: f.to_string(),
            bytes: 0,
        })
        .collect();
    for _ in 0..turns {
        for f in files {
            ops.push(NsOp::Append {
                path: f.to_string(),
                bytes: turn_bytes,
            });
        }
    }
    Population {
        name: "interleaved".into(),
        fs_bytes,
        ops,
    }
}

fn plan(name: &str, geo: &Geometry, pop: &Population, seed: u64) -> Plan {
    let plan = policy::by_name(name, &PolicyParams::new())
        .unwrap()
        .plan(geo, pop, seed)
        .unwrap();
    if let Err(e) = plan.check(geo) {
        panic!("{name} seed {seed}: {e}");
    }
    assert!(plan.short_files(pop).is_empty(), "{name}");
    plan
}

/// ext3-metacluster: every mapping block in the metacluster of its data block's group,
/// unless that metacluster has no free block left (in group 0 the journal covers it).
fn assert_metacluster(plan: &Plan, geo: &Geometry) {
    let mc = Ext3Metacluster::default();
    let mut used = geo.free_map();
    for inode in &plan.inodes {
        // (the root's first block is mke2fs's, already used)
        for r in inode
            .data
            .iter()
            .filter(|r| !(inode.ino == 2 && r.physical == geo.root_dir_block()))
        {
            used.mark_used(r.physical, r.len);
        }
        for m in &inode.mapping {
            used.mark_used(m.physical, 1);
        }
    }
    for inode in &plan.inodes {
        for m in &inode.mapping {
            let r = inode
                .data
                .iter()
                .find(|r| m.logical >= r.logical && m.logical < r.logical + r.len)
                .unwrap();
            let g = &geo.groups[geo.group_of(r.physical + m.logical - r.logical) as usize];
            let (start, end) = mc.region(g.first_block, g.blocks);
            assert!(
                (start..end).contains(&m.physical) || used.next_free(start, end).is_none(),
                "inode {} {m:?} outside the non-full metacluster [{start}, {end})",
                inode.ino
            );
        }
    }
}

/// Two writers taking turns of 8 MiB (2048 blocks, two windows' worth) through ext3-2007 and
/// ext3-metacluster: each file is one inode of the whole size; once the files meet they
/// alternate on disk, every turn or more often; then no piece is longer than what one turn
/// can add to the end of a piece (the rest of a window + the turn).
#[test]
fn two_files_in_turns_of_8_mib_interleave() {
    let profile = MkfsProfile::by_name("ext3-2007").unwrap();
    let turns = 60;
    let pop = interleaved(&["big", "other"], turns, 8 << 20, 2 << 30);
    let geo = Geometry::new(&profile, pop.fs_bytes).unwrap();
    for name in ["ext3-2007", "ext3-metacluster"] {
        for seed in [1, 2007] {
            let plan = plan(name, &geo, &pop, seed);
            let files: Vec<_> = plan
                .inodes
                .iter()
                .filter(|i| i.kind == InodeKind::File)
                .collect();
            assert_eq!(files.len(), 2);
            for f in &files {
                assert_eq!(f.size_bytes, turns as u64 * (8 << 20), "{name}");
                assert_eq!(f.data_blocks(), turns as u64 * 2048);
                assert!(
                    f.fragments() >= turns as u64 / 2,
                    "{name} seed {seed}: {} fragments",
                    f.fragments()
                );
            }
            let p = pieces(&[plan_blocks(&plan, "big"), plan_blocks(&plan, "other")]);
            let switches = p.windows(2).filter(|w| w[0].2 != w[1].2).count();
            assert!(switches >= turns, "{name} seed {seed}: {switches} switches");
            // Each file is written from its own first goal (its creator's pid colour) and
            // grows alone until it runs into the other's blocks; from then on no piece is
            // longer than one turn and the rest of a window.
            for piece in &p[p.len() / 2..] {
                assert!(
                    piece.1 <= 2048 + MAX_RESERVE_BLOCKS + 4,
                    "{name} seed {seed}: {piece:?}"
                );
            }
            if name == "ext3-metacluster" {
                assert_metacluster(&plan, &geo);
            }
        }
    }
}

/// One process writing a file at once and the same file written in appends that nothing
/// interrupts: the same layout (the window and the goal carry over between appends).
#[test]
fn uninterrupted_appends_equal_one_write() {
    let profile = MkfsProfile::by_name("ext3-2007").unwrap();
    let whole = Population {
        name: "w".into(),
        fs_bytes: 1 << 30,
        ops: vec![NsOp::Create {
            path: "f".into(),
            bytes: 50_000_001,
        }],
    };
    let mut ops = vec![NsOp::Create {
        path: "f".into(),
        bytes: 1_000_001,
    }];
    for _ in 0..49 {
        ops.push(NsOp::Append {
            path: "f".into(),
            bytes: 1_000_000,
        });
    }
    let parts = Population {
        ops,
        ..whole.clone()
    };
    let geo = Geometry::new(&profile, whole.fs_bytes).unwrap();
    for name in ["ext3-2007", "ext3-metacluster"] {
        assert_eq!(
            plan(name, &geo, &whole, 3).inodes,
            plan(name, &geo, &parts, 3).inodes,
            "{name}"
        );
    }
}

/// Appends past the free space: the files stop at their last whole block (ENOSPC), later
/// appends add nothing, the plan still checks, and `short_files` names both files with the
/// bytes their create and appends asked for.
#[test]
fn enospc_in_appends_leaves_short_files() {
    let profile = MkfsProfile::by_name("ext3-2007").unwrap();
    let pop = interleaved(&["a", "b"], 12, 4 << 20, 64 << 20);
    let geo = Geometry::new(&profile, pop.fs_bytes).unwrap();
    for name in ["ext3-2007", "ext3-metacluster"] {
        let plan = policy::by_name(name, &PolicyParams::new())
            .unwrap()
            .plan(&geo, &pop, 5)
            .unwrap();
        plan.check(&geo).unwrap();
        let short = plan.short_files(&pop);
        assert_eq!(short.len(), 2, "{name}: {short:?}");
        for s in &short {
            assert_eq!(s.requested_bytes, 12 * (4 << 20));
            assert!(s.planned_bytes < s.requested_bytes && s.planned_bytes % 4096 == 0);
        }
        let free = {
            let mut map = geo.free_map();
            for i in plan.inodes.iter().filter(|i| i.ino != 2) {
                for r in &i.data {
                    map.mark_used(r.physical, r.len);
                }
                for m in &i.mapping {
                    map.mark_used(m.physical, 1);
                }
            }
            map.total_free()
        };
        // out of space (the metacluster's reserve stays free: data may not use it)
        assert!(
            free < 3 * geo.group_count() * 256,
            "{name}: {free} blocks left"
        );
    }
}

/// The ext4 policies do not model appends yet and say so, naming the operation.
#[test]
fn ext4_policies_refuse_appends_by_name() {
    let profile = MkfsProfile::by_name("ext4-2009").unwrap();
    let pop = interleaved(&["a", "b"], 2, 4096, 1 << 30);
    let geo = Geometry::new(&profile, pop.fs_bytes).unwrap();
    for name in ["ext4-2008", "ext4-2009"] {
        let e = policy::by_name(name, &PolicyParams::new())
            .unwrap()
            .plan(&geo, &pop, 1)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(name) && e.contains("ops[2]: append 'a'") && e.contains("ext3-2007"),
            "{e}"
        );
    }
}

/// Up to three files, created with some bytes, appended in random turns of random sizes
/// (some through a hard link), with other files created between the turns.
fn random_appends() -> impl Strategy<Value = Population> {
    let turn = (0usize..3, 0u64..3_000_000, any::<bool>());
    (
        prop::collection::vec(0u64..200_000, 3),
        prop::collection::vec(turn, 1..40),
    )
        .prop_map(|(first, turns)| {
            let names = ["a", "d/b", "c"];
            let mut ops = vec![NsOp::Mkdir { path: "d".into() }];
            for (n, bytes) in names.iter().zip(&first) {
                ops.push(NsOp::Create {
                    path: n.to_string(),
                    bytes: *bytes,
                });
            }
            ops.push(NsOp::Link {
                path: "b-link".into(),
                target: "d/b".into(),
            });
            for (k, (file, bytes, extra)) in turns.into_iter().enumerate() {
                let path = if file == 1 && k % 2 == 0 {
                    "b-link"
                } else {
                    names[file]
                };
                ops.push(NsOp::Append {
                    path: path.into(),
                    bytes,
                });
                if extra {
                    ops.push(NsOp::Create {
                        path: format!("d/x{k}"),
                        bytes: bytes / 3,
                    });
                }
            }
            Population {
                name: "random-appends".into(),
                fs_bytes: 1 << 30,
                ops,
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Any mix of creates and appends: a checkable plan (no block used twice, every file
    /// mapped once with exactly the mapping blocks its tree needs), every file of the size
    /// the population asked, metacluster mapping blocks in the metaclusters.
    #[test]
    fn random_appends_plan_soundly(pop in random_appends(), seed in any::<u64>()) {
        let profile = MkfsProfile::by_name("ext3-2007").unwrap();
        let geo = Geometry::new(&profile, pop.fs_bytes).unwrap();
        let sizes = pop.file_sizes();
        for name in ["ext3-2007", "ext3-metacluster"] {
            let plan = plan(name, &geo, &pop, seed);
            let files: Vec<_> = plan.inodes.iter().filter(|i| i.kind == InodeKind::File).collect();
            prop_assert_eq!(files.len(), sizes.len());
            for (f, (path, bytes)) in files.iter().zip(&sizes) {
                prop_assert_eq!(&f.name, path.rsplit('/').next().unwrap());
                prop_assert_eq!(f.size_bytes, *bytes);
            }
            if name == "ext3-metacluster" {
                assert_metacluster(&plan, &geo);
            }
        }
    }
}
