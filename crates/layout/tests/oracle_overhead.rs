//! `layoutlab_layout::mke2fs` against the real thing: a grid of sizes (64 MB to 16 TB, sparse
//! files) × mke2fs options (ext2/3/4, -b -i -I -N -m -g -G -J -O -E -T) under this machine's
//! mke2fs.conf. For every combination either both refuse, or every field equals what the real
//! `mke2fs` + `dumpe2fs` report; on a sample, `df` of the mounted file system too.

use layoutlab_layout::mke2fs::{conf::Mke2fsConf, overhead, Mke2fsArgs, Overhead};
use std::path::{Path, PathBuf};
use std::process::Command;

fn args_of(opts: &[&str]) -> Mke2fsArgs {
    let mut a = Mke2fsArgs::default();
    let mut it = opts.iter();
    while let Some(o) = it.next() {
        let mut val = || it.next().map(|s| s.to_string());
        match *o {
            "-t" => a.fs_type = val(),
            "-T" => a.usage_types = val(),
            "-b" => a.block_size = val(),
            "-i" => a.inode_ratio = val(),
            "-I" => a.inode_size = val(),
            "-N" => a.num_inodes = val(),
            "-m" => a.reserved_percent = val(),
            "-g" => a.blocks_per_group = val(),
            "-G" => a.flex_bg_size = val(),
            "-J" => a.journal_opts = val(),
            "-O" => a.features.push(val().unwrap()),
            "-E" => a.extended = val(),
            "-j" => a.journal = true,
            other => panic!("test grid uses {other}"),
        }
    }
    a
}

/// What dumpe2fs says of a fresh image, in the fields `Overhead` reports.
#[derive(Debug, Default, PartialEq)]
struct Dumped {
    block_size: u64,
    blocks_total: u64,
    groups: u64,
    inodes_total: u64,
    superblock_blocks: u64,
    gdt_blocks: u64,
    reserved_gdt_blocks: u64,
    bitmap_blocks: u64,
    inode_table_blocks: u64,
    journal_blocks: u64,
    reserved_blocks: u64,
    overhead_blocks: u64,
}

fn range_len(s: &str) -> u64 {
    let s = s.trim().trim_end_matches(',');
    match s.split_once('-') {
        Some((a, b)) => b.trim().parse::<u64>().unwrap() - a.trim().parse::<u64>().unwrap() + 1,
        None => {
            s.parse::<u64>().unwrap();
            1
        }
    }
}

/// From `dumpe2fs -h` (header) and `dumpe2fs -g` (one line per group:
/// `group:block:super:gdt:bbitmap:ibitmap:itable`, -1 where a group has none).
fn dumped(header: &str, groups: &str) -> Dumped {
    let mut d = Dumped::default();
    let field = |name: &str| -> Option<u64> {
        header
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
    };
    d.block_size = field("Block size:").unwrap();
    d.blocks_total = field("Block count:").unwrap();
    d.inodes_total = field("Inode count:").unwrap();
    d.reserved_blocks = field("Reserved block count:").unwrap();
    d.journal_blocks = field("Total journal blocks:").unwrap_or(0);
    d.overhead_blocks = d.blocks_total - field("Free blocks:").unwrap();
    let itb = field("Inode blocks per group:").unwrap();
    let rsv_per_copy = field("Reserved GDT blocks:").unwrap_or(0);
    for l in groups
        .lines()
        .filter(|l| l.starts_with(|c: char| c.is_ascii_digit()))
    {
        let f: Vec<&str> = l.split(':').collect();
        assert_eq!(f.len(), 7, "dumpe2fs -g line {l:?}");
        d.groups += 1;
        if f[2] != "-1" {
            d.superblock_blocks += 1;
            d.reserved_gdt_blocks += rsv_per_copy;
        }
        if f[3] != "-1" {
            d.gdt_blocks += range_len(f[3]);
        }
        d.bitmap_blocks += u64::from(f[4] != "-1") + u64::from(f[5] != "-1");
        if f[6] != "-1" {
            d.inode_table_blocks += itb;
        }
    }
    d
}

fn ours(o: &Overhead) -> Dumped {
    Dumped {
        block_size: o.block_size,
        blocks_total: o.blocks_total,
        groups: o.groups,
        inodes_total: o.inodes_total,
        superblock_blocks: o.superblock_blocks,
        gdt_blocks: o.gdt_blocks,
        reserved_gdt_blocks: o.reserved_gdt_blocks,
        bitmap_blocks: o.bitmap_blocks,
        inode_table_blocks: o.inode_table_blocks,
        journal_blocks: o.journal_blocks,
        reserved_blocks: o.reserved_blocks,
        overhead_blocks: o.overhead_blocks,
    }
}

const OPTION_SETS: &[&[&str]] = &[
    &[],
    &["-j"],
    &["-t", "ext3"],
    &["-t", "ext4"],
    &["-t", "ext2", "-b", "1024"],
    &["-t", "ext3", "-b", "2048"],
    &["-t", "ext4", "-b", "1024"],
    &["-t", "ext4", "-b", "2048"],
    &["-t", "ext4", "-i", "4096"],
    &["-t", "ext4", "-i", "65536"],
    &["-t", "ext3", "-i", "1m"],
    &["-t", "ext4", "-I", "128"],
    &["-t", "ext4", "-I", "512"],
    &["-t", "ext4", "-I", "1024", "-b", "1024"],
    &["-t", "ext4", "-N", "100000"],
    &["-t", "ext3", "-N", "5000"],
    &["-t", "ext4", "-m", "0"],
    &["-t", "ext3", "-m", "1.5"],
    &["-t", "ext4", "-m", "50"],
    &["-t", "ext4", "-g", "16384"],
    &["-t", "ext3", "-g", "8192", "-b", "1024"],
    &["-t", "ext4", "-G", "4"],
    &["-t", "ext4", "-G", "256"],
    &["-t", "ext4", "-J", "size=16"],
    &["-t", "ext3", "-J", "size=100"],
    &["-t", "ext4", "-J", "size=1024"],
    &["-t", "ext4", "-O", "^resize_inode"],
    &["-t", "ext4", "-O", "^has_journal"],
    &["-t", "ext4", "-O", "^flex_bg"],
    &["-t", "ext4", "-O", "^metadata_csum,uninit_bg"],
    &["-t", "ext4", "-O", "^64bit"],
    &["-t", "ext4", "-O", "sparse_super2"],
    &["-t", "ext4", "-O", "sparse_super2", "-E", "num_backup_sb=1"],
    &["-t", "ext4", "-O", "sparse_super2", "-E", "num_backup_sb=0"],
    &["-t", "ext4", "-O", "orphan_file"],
    &[
        "-t",
        "ext4",
        "-O",
        "orphan_file",
        "-E",
        "orphan_file_size=2M",
    ],
    &["-t", "ext4", "-O", "meta_bg,^resize_inode"],
    &["-t", "ext4", "-O", "^64bit", "-E", "resize=4T"],
    &["-t", "ext3", "-E", "resize=100000000"],
    &["-t", "ext4", "-T", "news"],
    &["-t", "ext4", "-T", "largefile"],
    &["-t", "ext4", "-T", "largefile4"],
    &["-t", "ext4", "-T", "small"],
    &["-t", "ext2", "-T", "floppy"],
    &["-t", "ext4", "-T", "huge"],
    &["-t", "ext4", "-O", "mmp"],
    &["-t", "ext4", "-O", "inline_data"],
    &["-t", "ext4", "-O", "fast_commit"],
    &["-t", "ext3", "-O", "^sparse_super,^resize_inode"],
    &["-t", "ext4", "-E", "stride=16,stripe_width=64"],
    &["-t", "ext4", "-O", "^extent"],
    &["-t", "ext4", "-O", "^extent,^64bit"],
    &["-t", "ext2", "-O", "none"],
    &["-t", "ext4", "-O", "^flex_bg", "-b", "1024", "-m", "2"],
    &["-t", "ext4", "-b", "3000", "-i", "2048"],
    &["-t", "ext3", "-g", "1000"],
    &["-t", "ext4", "-b", "512"],
    &["-t", "ext4", "-E", "frob=1"],
];

const MB: u64 = 1 << 20;
const SIZES: &[u64] = &[
    64 * MB,
    100 * MB + 12345,
    300 * MB,
    513 * MB,
    1024 * MB,
    3 * 1024 * MB + 4096,
    10 * 1024 * MB,
    100 * 1024 * MB + 7,
    1 << 40,
    5 << 40,
    // 16 TB (decimal), and the largest file this machine's ext4 /tmp holds (16 TiB - 4 KiB)
    16_000_000_000_000,
    (16 << 40) - 4096,
];

/// Every option set on five sizes up to 100 GB chosen by a seeded walk (always including
/// one of the three smallest), and the multi-terabyte sizes on the option sets mke2fs formats
/// quickly there (lazy inode tables: ext4 with checksums): 58 × 5 + 16 = 306 combinations.
fn grid() -> Vec<(u64, &'static [&'static str])> {
    let mut out = Vec::new();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let small = &SIZES[..8];
    for (i, opts) in OPTION_SETS.iter().enumerate() {
        let mut picked = vec![small[i % 3]];
        while picked.len() < 5 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let s = small[(x % small.len() as u64) as usize];
            if !picked.contains(&s) {
                picked.push(s);
            }
        }
        for s in picked {
            out.push((s, *opts));
        }
    }
    const HUGE: &[&[&str]] = &[
        &["-t", "ext4"],
        &["-t", "ext4", "-O", "^resize_inode"],
        &["-t", "ext4", "-O", "^64bit"],
        &["-t", "ext4", "-G", "256"],
        &["-t", "ext4", "-T", "huge"],
        &["-t", "ext4", "-O", "sparse_super2"],
        &["-t", "ext4", "-O", "orphan_file"],
        &["-t", "ext4", "-J", "size=1024"],
    ];
    for (i, opts) in HUGE.iter().enumerate() {
        out.push((SIZES[8 + i % 4], *opts));
        out.push((SIZES[8 + (i + 2) % 4], *opts));
    }
    out
}

struct Scratch(PathBuf);
impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn real(img: &Path, size: u64, opts: &[&str]) -> Result<Dumped, String> {
    real_with(&Mke2fs::today(), img, size, opts)
}

/// Which mke2fs runs: a program, and the mke2fs.conf it is pointed at (`MKE2FS_CONFIG`).
struct Mke2fs {
    program: PathBuf,
    conf: Option<PathBuf>,
}

impl Mke2fs {
    fn today() -> Mke2fs {
        Mke2fs {
            program: "mke2fs".into(),
            conf: None,
        }
    }

    /// e2fsprogs `version` as `make deps` built it. The cache rule is layoutlab_rig's
    /// `E2fsprogs::cache_dir` (this crate cannot depend on the rig): `$LAYOUTLAB_E2FSPROGS_CACHE`
    /// or `$HOME/.cache/layoutlab/e2fsprogs`. A missing build fails and says how to make it.
    fn period(version: &str) -> Mke2fs {
        let cache = std::env::var_os("LAYOUTLAB_E2FSPROGS_CACHE")
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/root".into()))
                    .join(".cache/layoutlab/e2fsprogs")
            })
            .join(version);
        let program = cache.join("sbin/mke2fs");
        assert!(
            program.is_file(),
            "e2fsprogs {version}'s mke2fs is not built ({} is missing): run `make deps`",
            program.display()
        );
        Mke2fs {
            program,
            conf: Some(cache.join("etc/mke2fs.conf")),
        }
    }
}

fn real_with(mke2fs: &Mke2fs, img: &Path, size: u64, opts: &[&str]) -> Result<Dumped, String> {
    let _ = std::fs::remove_file(img);
    std::fs::File::create(img).unwrap().set_len(size).unwrap();
    let mut cmd = Command::new(&mke2fs.program);
    if let Some(c) = &mke2fs.conf {
        cmd.env("MKE2FS_CONFIG", c);
    }
    let out = cmd
        .args(["-F", "-q"])
        .args(opts)
        .arg(img)
        .output()
        .expect("mke2fs runs");
    if !out.status.success() {
        return Err(format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let dump = |arg: &str| {
        let d = Command::new("dumpe2fs").arg(arg).arg(img).output().unwrap();
        assert!(d.status.success(), "dumpe2fs {arg}");
        String::from_utf8_lossy(&d.stdout).into_owned()
    };
    Ok(dumped(&dump("-h"), &dump("-g")))
}

/// Every combination of the grid through `mke2fs` and through `overhead` with `conf`: the
/// mismatches (empty when every field agrees or both refuse in mke2fs's words).
fn grid_mismatches(mke2fs: &Mke2fs, conf: &Mke2fsConf, tag: &str) -> Vec<String> {
    let dir = std::env::temp_dir().join(format!("ll-oracle-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let _s = Scratch(dir.clone());
    let img = dir.join("fs.img");
    let grid = grid();
    assert!(grid.len() >= 200, "{} combinations", grid.len());
    let (mut matched, mut refused, mut mismatches) = (0, 0, Vec::new());
    for (i, (size, opts)) in grid.iter().enumerate() {
        if i % 25 == 0 {
            eprintln!("  {i}/{} ...", grid.len());
        }
        let want = real_with(mke2fs, &img, *size, opts);
        let got = overhead(&args_of(opts), *size, conf);
        match (want, got) {
            (Ok(w), Ok((o, _))) => {
                let g = ours(&o);
                if w == g {
                    matched += 1;
                } else {
                    mismatches.push(format!("{size} {opts:?}:\n  mke2fs {w:?}\n  ours   {g:?}"));
                }
            }
            (Err(theirs), Err(mine)) => {
                refused += 1;
                // in mke2fs's own words
                if !theirs.contains(mine.0.lines().next().unwrap_or("")) {
                    mismatches.push(format!(
                        "{size} {opts:?}: mke2fs says {:?}, we say {:?}",
                        theirs.trim(),
                        mine.0
                    ));
                }
            }
            (Ok(_), Err(e)) => {
                mismatches.push(format!("{size} {opts:?}: mke2fs made it, we refuse: {e}"))
            }
            (Err(e), Ok(_)) => mismatches.push(format!(
                "{size} {opts:?}: mke2fs refuses ({}), we do not",
                e.trim()
            )),
        }
    }
    let _ = std::fs::remove_file(&img);
    eprintln!(
        "overhead oracle ({tag}): {} combinations, {matched} equal in every field, {refused} refused by both, {} differ",
        grid.len(),
        mismatches.len()
    );
    mismatches
}

#[test]
fn overhead_equals_mke2fs_and_dumpe2fs_on_the_grid() {
    let conf = Mke2fsConf::in_force().unwrap();
    let mismatches = grid_mismatches(&Mke2fs::today(), &conf, "today");
    assert!(
        mismatches.is_empty(),
        "{} mismatches:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}

/// `overhead --conf profiles/mke2fs/e2fsprogs-1.41.14.conf` against the real 1.41.14 mke2fs
/// (built by `make deps`, reading its own shipped mke2fs.conf) on the same grid: the conf
/// names 1.41.14, so the calculator applies that release's rules (docs/overhead.md lists
/// them; read with 1.47's, 124 of the 306 cells differed).
#[test]
fn overhead_with_the_1_41_14_conf_equals_mke2fs_1_41_14_on_the_grid() {
    let conf = Mke2fsConf::from_file(Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../profiles/mke2fs/e2fsprogs-1.41.14.conf"
    )))
    .unwrap();
    let mismatches = grid_mismatches(&Mke2fs::period("1.41.14"), &conf, "1.41.14");
    assert!(
        mismatches.is_empty(),
        "{} mismatches:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}

fn is_root() -> bool {
    extern "C" {
        fn geteuid() -> u32;
    }
    unsafe { geteuid() == 0 }
}

/// `df` of a fresh file system mounted read-only by the kernel, against ours.
#[test]
fn df_equals_the_kernels_on_a_sample() {
    if !is_root() {
        eprintln!("SKIP df_equals_the_kernels_on_a_sample: mounting needs root");
        return;
    }
    let dir = std::env::temp_dir().join(format!("ll-oracle-df-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("mnt")).unwrap();
    let _s = Scratch(dir.clone());
    let img = dir.join("fs.img");
    let mnt = dir.join("mnt");
    let conf = Mke2fsConf::in_force().unwrap();
    let sample: &[(u64, &[&str])] = &[
        (64 * MB, &[]),
        (1024 * MB, &["-t", "ext3"]),
        (1024 * MB, &["-t", "ext4"]),
        (10 * 1024 * MB, &["-t", "ext4", "-m", "0"]),
        (3 * 1024 * MB, &["-t", "ext4", "-O", "^has_journal"]),
        (300 * MB, &["-t", "ext3", "-b", "1024"]),
        (2 * 1024 * MB, &["-t", "ext4", "-O", "sparse_super2"]),
        (2 * 1024 * MB, &["-t", "ext4", "-O", "^flex_bg"]),
        (
            2 * 1024 * MB,
            &["-t", "ext4", "-O", "meta_bg,^resize_inode"],
        ),
        (100 * 1024 * MB, &["-t", "ext4", "-O", "orphan_file"]),
        (513 * MB, &["-t", "ext2", "-O", "none"]),
    ];
    struct Umount<'a>(&'a Path);
    impl Drop for Umount<'_> {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(self.0).status();
        }
    }
    let mut bad = Vec::new();
    for (size, opts) in sample {
        real(&img, *size, opts).unwrap();
        let (o, _) = overhead(&args_of(opts), *size, &conf).unwrap();
        let st = Command::new("mount")
            .args(["-o", "loop,ro"])
            .arg(&img)
            .arg(&mnt)
            .status()
            .unwrap();
        assert!(st.success(), "mount {opts:?}");
        let guard = Umount(&mnt);
        let out = Command::new("df")
            .args(["-k", "--output=size,used,avail"])
            .arg(&mnt)
            .output()
            .unwrap();
        drop(guard);
        let text = String::from_utf8_lossy(&out.stdout);
        let nums: Vec<u64> = text
            .lines()
            .nth(1)
            .unwrap()
            .split_whitespace()
            .map(|n| n.parse().unwrap())
            .collect();
        let ours = vec![o.df_size_kb, o.df_used_kb, o.df_avail_kb];
        if nums != ours {
            bad.push(format!("{size} {opts:?}: df {nums:?}, ours {ours:?}"));
        }
    }
    let _ = std::fs::remove_file(&img);
    eprintln!("df oracle: {} mounted, {} differ", sample.len(), bad.len());
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}
