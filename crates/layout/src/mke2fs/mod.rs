//! What mke2fs would make, without an image: its options and the mke2fs.conf in force
//! resolved as misc/mke2fs.c `PRS()` resolves them (e2fsprogs 1.47.0), laid out by
//! [`Geometry::from_params`], and counted as `dumpe2fs` and `df` would report them right
//! after mkfs ([`Overhead`]).
//!
//! Modelled: `-t -T -b -i -I -N -m -g -G -j -J size=,location= -O -E` with the features and
//! extended options that place blocks at mkfs time or none; a feature or option whose blocks
//! the model does not place (bigalloc, quota, project, journal_dev, packed_meta_blocks,
//! stride without flex_bg, ...) is an error saying so, never a guess.

pub mod advice;
pub mod conf;

use crate::geometry::{Geometry, GeometryParams, JournalGoal, JournalRule, MetaKind};
use conf::Mke2fsConf;
use serde::Serialize;
use std::collections::BTreeSet;

/// mke2fs options, as on its command line.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Mke2fsArgs {
    /// `-t fs-type`.
    pub fs_type: Option<String>,
    /// `-T usage-types` (comma-separated).
    pub usage_types: Option<String>,
    /// `-b block-size` (negative: a minimum).
    pub block_size: Option<String>,
    /// `-i bytes-per-inode`.
    pub inode_ratio: Option<String>,
    /// `-I inode-size`.
    pub inode_size: Option<String>,
    /// `-N number-of-inodes`.
    pub num_inodes: Option<String>,
    /// `-m reserved-blocks-percentage`.
    pub reserved_percent: Option<String>,
    /// `-g blocks-per-group`.
    pub blocks_per_group: Option<String>,
    /// `-G flex-group-size`.
    pub flex_bg_size: Option<String>,
    /// `-j` (a journal of the default size).
    pub journal: bool,
    /// `-J journal-options`.
    pub journal_opts: Option<String>,
    /// `-O feature[,...]`, every occurrence, in order.
    pub features: Vec<String>,
    /// `-E extended-options` (the last one, as mke2fs keeps).
    pub extended: Option<String>,
}

impl Mke2fsArgs {
    /// From mke2fs-style words (`["-t", "ext3", "-O", "^resize_inode", "-j"]`).
    pub fn parse(words: &[String]) -> Result<Mke2fsArgs, Mke2fsError> {
        let mut a = Mke2fsArgs::default();
        let mut it = words.iter();
        while let Some(w) = it.next() {
            if w == "-j" {
                a.journal = true;
                continue;
            }
            let val = it
                .next()
                .cloned()
                .ok_or_else(|| Mke2fsError(format!("option {w} needs a value")))?;
            match w.as_str() {
                "-t" => a.fs_type = Some(val),
                "-T" => a.usage_types = Some(val),
                "-b" => a.block_size = Some(val),
                "-i" => a.inode_ratio = Some(val),
                "-I" => a.inode_size = Some(val),
                "-N" => a.num_inodes = Some(val),
                "-m" => a.reserved_percent = Some(val),
                "-g" => a.blocks_per_group = Some(val),
                "-G" => a.flex_bg_size = Some(val),
                "-J" => a.journal_opts = Some(val),
                "-O" => a.features.push(val),
                "-E" => a.extended = Some(val),
                other => {
                    return Err(Mke2fsError(format!(
                        "option {other} is not one layoutlab models (-t -T -b -i -I -N -m -g -G \
                         -j -J -O -E)"
                    )))
                }
            }
        }
        Ok(a)
    }
}

/// mke2fs's refusal, in its own words where it has them.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
#[error("{0}")]
pub struct Mke2fsError(pub String);

/// The largest 32-bit block or inode count.
const MAX_32: u64 = u32::MAX as u64;

fn err<T>(msg: impl Into<String>) -> Result<T, Mke2fsError> {
    Err(Mke2fsError(msg.into()))
}

/// Features mke2fs accepts in `-O` and mke2fs.conf (misc/mke2fs.c `ok_features`), by their
/// lib/e2p/feature.c names (aliases mapped in [`canonical_feature`]).
const OK_FEATURES: &[&str] = &[
    "has_journal",
    "resize_inode",
    "dir_index",
    "ext_attr",
    "sparse_super2",
    "fast_commit",
    "stable_inodes",
    "orphan_file",
    "filetype",
    "extent",
    "journal_dev",
    "meta_bg",
    "flex_bg",
    "ea_inode",
    "mmp",
    "64bit",
    "inline_data",
    "encrypt",
    "casefold",
    "metadata_csum_seed",
    "large_dir",
    "large_file",
    "huge_file",
    "dir_nlink",
    "extra_isize",
    "sparse_super",
    "uninit_bg",
    "bigalloc",
    "quota",
    "metadata_csum",
    "project",
    "verity",
];

/// Features lib/e2p knows but mke2fs refuses to set.
const OTHER_E2P_FEATURES: &[&str] = &[
    "dir_prealloc",
    "imagic_inodes",
    "lazy_bg",
    "snapshot_bitmap",
    "replica",
    "read-only",
    "shared_blocks",
    "orphan_present",
    "compression",
    "needs_recovery",
    "dirdata",
];

/// Features whose blocks this model does not place.
const NOT_MODELLED: &[(&str, &str)] = &[
    ("bigalloc", "clusters"),
    ("quota", "the quota inodes' blocks"),
    ("project", "the project quota inode's blocks"),
    ("journal_dev", "an external journal device"),
];

/// The lib/e2p name of a feature word (case-insensitive, aliases folded).
pub fn canonical_feature(word: &str) -> Option<&'static str> {
    let w = word.to_ascii_lowercase();
    let w = match w.as_str() {
        "extents" => "extent",
        "uninit_groups" | "gdt_csum" => "uninit_bg",
        "fname_encoding" => "casefold",
        other => other,
    };
    OK_FEATURES
        .iter()
        .chain(OTHER_E2P_FEATURES)
        .find(|f| **f == w)
        .copied()
}

/// Features 1.41.14's mke2fs accepts (its misc/mke2fs.c `ok_features`).
const OK_FEATURES_1_41_14: &[&str] = &[
    "has_journal",
    "resize_inode",
    "dir_index",
    "ext_attr",
    "filetype",
    "extent",
    "journal_dev",
    "meta_bg",
    "flex_bg",
    "large_file",
    "huge_file",
    "dir_nlink",
    "extra_isize",
    "sparse_super",
    "uninit_bg",
];

/// The lib/e2p name of a feature word as 1.41.14's lib/e2p/feature.c knows it: its aliases
/// are `extents` and `uninit_groups` only; a name it has no entry for (orphan_file,
/// metadata_csum, ...) is no feature at all.
fn canonical_feature_1_41_14(word: &str) -> Option<&'static str> {
    let w = word.to_ascii_lowercase();
    let w = match w.as_str() {
        "extents" => "extent",
        "uninit_groups" => "uninit_bg",
        other => other,
    };
    const OTHERS: &[&str] = &[
        "dir_prealloc",
        "imagic_inodes",
        "lazy_bg",
        "compression",
        "needs_recovery",
        "64bit",
    ];
    OK_FEATURES_1_41_14
        .iter()
        .chain(OTHERS)
        .find(|f| **f == w)
        .copied()
}

/// A release's lib/e2p lookup of a feature word (its name, aliases folded).
type FeatureNames = fn(&str) -> Option<&'static str>;

/// lib/e2p `e2p_edit_feature2()` with mke2fs's ok set of `release`: words split at commas
/// and blanks; `none`/`clear` clears all, `^name`/`-name` clears, `+name`/`name` sets; a
/// word the release does not know or mke2fs does not take refuses the whole string.
fn edit_features(
    set: &mut BTreeSet<&'static str>,
    s: &str,
    release: conf::Release,
) -> Result<(), Mke2fsError> {
    let (canonical, ok): (FeatureNames, &[&str]) = match release {
        conf::Release::V1_41_14 => (canonical_feature_1_41_14, OK_FEATURES_1_41_14),
        conf::Release::V1_47_0 => (canonical_feature, OK_FEATURES),
    };
    for word in s.split([',', ' ', '\t']) {
        if word.is_empty() {
            continue;
        }
        if word.eq_ignore_ascii_case("none") || word.eq_ignore_ascii_case("clear") {
            set.clear();
            continue;
        }
        let (neg, name) = match word.as_bytes()[0] {
            b'-' | b'^' => (true, &word[1..]),
            b'+' => (false, &word[1..]),
            _ => (false, word),
        };
        let invalid = || Mke2fsError(format!("Invalid filesystem option set: {s}"));
        let f = canonical(name).ok_or_else(invalid)?;
        if !ok.contains(&f) {
            return Err(invalid());
        }
        if neg {
            set.remove(f);
        } else {
            set.insert(f);
        }
    }
    Ok(())
}

/// misc/util.c `parse_num_blocks2()`: a number (C `strtoull` base 0) with an optional one
/// letter suffix K, M, G, T (binary) or s (512-byte sectors); with `log_block_size` < 0 the
/// result is bytes, else blocks of 1024 << log_block_size. 0 for anything else.
pub fn parse_num_blocks2(arg: &str, log_block_size: i32) -> u64 {
    let digits_end = {
        let b = arg.as_bytes();
        let mut i = 0;
        if arg.starts_with("0x") || arg.starts_with("0X") {
            i = 2;
            while i < b.len() && b[i].is_ascii_hexdigit() {
                i += 1;
            }
        } else {
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
        }
        i
    };
    let (num, suffix) = arg.split_at(digits_end);
    let Some(mut n) = conf::parse_int(num).and_then(|v| u64::try_from(v).ok()) else {
        return 0;
    };
    if suffix.len() > 1 {
        return 0;
    }
    let lbs = log_block_size;
    match suffix.chars().next() {
        None => {}
        Some(c) => {
            let shift = match c.to_ascii_lowercase() {
                't' => 30,
                'g' => 20,
                'm' => 10,
                'k' => 0,
                's' => {
                    return if lbs < 0 { n << 9 } else { n >> (1 + lbs) };
                }
                _ => return 0,
            };
            n <<= shift;
            n = if lbs < 0 { n << 10 } else { n >> lbs };
        }
    }
    n
}

fn parse_u64_strict(what: &str, v: &str) -> Result<u64, Mke2fsError> {
    conf::parse_int(v)
        .and_then(|n| u64::try_from(n).ok())
        .ok_or_else(|| Mke2fsError(format!("invalid {what} - {v}")))
}

/// What mke2fs's option and mke2fs.conf processing arrived at.
#[derive(Clone, Debug, PartialEq)]
pub struct Resolved {
    /// The fs_types list mke2fs.conf was read with (`-t` type, then usage types).
    pub fs_types: Vec<String>,
    /// What `ext2fs_initialize()` is given.
    pub params: GeometryParams,
    /// Messages mke2fs would print that change nothing (e.g. no journal on a tiny fs).
    pub notes: Vec<String>,
}

/// Resolves `args` for a device of `device_bytes` bytes against `conf`, as the mke2fs of
/// `conf`'s release does in `PRS()` (misc/mke2fs.c, 1.47.0 or 1.41.14: each place the rules
/// differ says so); errors are mke2fs's refusals.
pub fn resolve(
    args: &Mke2fsArgs,
    device_bytes: u64,
    conf: &Mke2fsConf,
) -> Result<Resolved, Mke2fsError> {
    let mut notes = Vec::new();
    // e2fsprogs 1.41.14's rules (its misc/mke2fs.c, misc/util.c, lib/e2p/feature.c)
    let v141 = conf.release == conf::Release::V1_41_14;
    // -b: any size in 1024..=65536 is taken, rounded down to a power of two
    // (`int_log2(blocksize >> 10)`); the raw value still floors the inode ratio below.
    let mut blocksize: i64 = 0;
    let mut raw_blocksize: i64 = 0;
    if let Some(b) = &args.block_size {
        let (neg, body) = match b.strip_prefix('-') {
            Some(r) => (true, r),
            None => (false, b.as_str()),
        };
        // 1.41.14 reads -b with strtol(): no K/M suffix
        let v = if v141 {
            conf::parse_int(body).unwrap_or(0)
        } else {
            parse_num_blocks2(body, -1) as i64
        };
        if !(1024..=65536).contains(&v) {
            return err(format!("invalid block size - {b}"));
        }
        raw_blocksize = if neg { -v } else { v };
        let pow = 1024i64 << (63 - ((v as u64) >> 10).leading_zeros());
        blocksize = if neg { -v } else { pow };
    }
    let mut bpg_param: u64 = 0;
    if let Some(g) = &args.blocks_per_group {
        bpg_param = conf::parse_int(g)
            .and_then(|n| u64::try_from(n).ok())
            .ok_or_else(|| Mke2fsError("Illegal number for blocks per group".into()))?;
        if bpg_param % 8 != 0 {
            return err("blocks per group must be multiple of 8");
        }
    }
    let mut flex_bg_size: u64 = 0;
    if let Some(g) = &args.flex_bg_size {
        flex_bg_size = conf::parse_int(g)
            .and_then(|n| u64::try_from(n).ok())
            .ok_or_else(|| Mke2fsError("Illegal number for flex_bg size".into()))?;
        if flex_bg_size < 1 || !flex_bg_size.is_power_of_two() {
            return err("flex_bg size must be a power of 2");
        }
        if flex_bg_size > u64::from(u32::MAX) {
            return err(format!(
                "flex_bg size ({flex_bg_size}) must be less than or equal to 2^31"
            ));
        }
    }
    let mut inode_ratio: u64 = 0;
    if let Some(i) = &args.inode_ratio {
        // 1.41.14 reads -i with strtoul(): no K/M suffix ("-i 1m" is refused)
        inode_ratio = if v141 {
            conf::parse_int(i)
                .and_then(|n| u64::try_from(n).ok())
                .unwrap_or(0)
        } else {
            parse_num_blocks2(i, -1)
        };
        if !(1024..=65536 * 1024).contains(&inode_ratio) {
            return err(format!(
                "invalid inode ratio {i} (min 1024/max {})",
                65536 * 1024
            ));
        }
    }
    let mut inode_size: u64 = 0;
    if let Some(i) = &args.inode_size {
        inode_size = parse_u64_strict("inode size", i)?;
    }
    let mut reserved_ratio: f64 = -1.0;
    if let Some(m) = &args.reserved_percent {
        reserved_ratio = m
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|r| (0.0..=50.0).contains(r))
            .ok_or_else(|| Mke2fsError(format!("invalid reserved blocks percent - {m}")))?;
    }
    let mut num_inodes: u64 = 0;
    if let (Some(n), true) = (&args.num_inodes, v141) {
        // 1.41.14: strtoul(), and -N 0 means no count asked
        num_inodes = conf::parse_int(n)
            .and_then(|v| u64::try_from(v).ok())
            .ok_or_else(|| Mke2fsError(format!("bad num inodes - {n}")))?;
    } else if let Some(n) = &args.num_inodes {
        num_inodes = conf::parse_int(n)
            .and_then(|v| u64::try_from(v).ok())
            .filter(|v| *v > 0)
            .ok_or_else(|| Mke2fsError(format!("invalid inodes count - {n}")))?;
    }
    // -j / -J: journal_size 0 = none asked, -1 = default, > 0 = MiB
    let mut journal_size: i64 = if args.journal { -1 } else { 0 };
    let mut journal_location: Option<u64> = None;
    let mut journal_location_str: Option<String> = None;
    if let Some(j) = &args.journal_opts {
        for opt in j.split(',').filter(|o| !o.is_empty()) {
            let (k, v) = opt.split_once('=').unwrap_or((opt, ""));
            if v141 {
                // 1.41.14 misc/util.c parse_journal_opts(): size= (strtoul; 0 asks for none),
                // device=, v1_superblock; no location=
                match k {
                    "size" => {
                        journal_size = conf::parse_int(v)
                            .filter(|n| *n >= 0)
                            .ok_or_else(|| Mke2fsError("Bad journal options specified.".into()))?;
                    }
                    "device" => return err("-J device= is not modelled (an external journal)"),
                    "v1_superblock" => {}
                    _ => return err("Bad journal options specified."),
                }
                continue;
            }
            match k {
                "size" => {
                    journal_size = conf::parse_int(v)
                        .filter(|n| *n > 0)
                        .ok_or_else(|| Mke2fsError(format!("Invalid journal size: {v}")))?;
                }
                "location" => journal_location_str = Some(v.to_string()),
                "device" | "fast_commit_size" => {
                    return err(format!(
                        "-J {k}= is not modelled (an external journal or a fast-commit size)"
                    ));
                }
                _ => return err(format!("Bad journal options specified: {opt}")),
            }
        }
    }

    // Device size in blocks of the current block size (1 KiB until -b), rounded down to
    // whole pages, as mke2fs does for a device or file without an explicit size.
    let mut param_bs: u64 = if blocksize > 0 {
        blocksize as u64
    } else {
        1024
    };
    let page: u64 = 4096;
    let mut fs_blocks_count = device_bytes / param_bs;
    if v141 && fs_blocks_count > MAX_32 {
        // 1.41.14: ext2fs_get_device_size() says EFBIG past 2^32 - 1 blocks; with no -b,
        // mke2fs retries with 4096-byte blocks, which then stay; still too big (or a -b
        // given) takes 4096 (or the larger -b) and only a device of exactly 2^32 blocks
        // is made (2^32 - 1 of them)
        if blocksize == 0 {
            blocksize = 4096;
            param_bs = 4096;
            fs_blocks_count = device_bytes / param_bs;
        }
        if fs_blocks_count > MAX_32 {
            if blocksize < 4096 {
                blocksize = 4096;
            }
            param_bs = blocksize as u64;
            if device_bytes / param_bs != 1 << 32 {
                return err(format!(
                    "Size of device too big to be expressed in 32 bits\n\tusing a blocksize \
                     of {param_bs}."
                ));
            }
            fs_blocks_count = MAX_32;
        }
    }
    if page > param_bs {
        fs_blocks_count &= !(page / param_bs - 1);
    }
    if fs_blocks_count == 0 {
        return err("Device size reported to be zero.");
    }

    // parse_fs_type()
    let ext_type = args.fs_type.clone().unwrap_or_else(|| {
        let t = conf
            .get("defaults", "fs_type", None)
            .unwrap_or("ext2")
            .to_string();
        if t == "ext2" && journal_size != 0 {
            "ext3".to_string()
        } else {
            t
        }
    });
    if !conf.has_fs_type(&ext_type) && ext_type != "ext2" {
        return err(format!(
            "Your mke2fs.conf file ({}) does not define the {ext_type} filesystem type.",
            conf.source
        ));
    }
    let meg = (1024 * 1024) / param_bs;
    let size_type = if fs_blocks_count < 3 * meg {
        "floppy"
    } else if fs_blocks_count < 512 * meg {
        "small"
    } else if v141 || fs_blocks_count < 4 * 1024 * 1024 * meg {
        // 1.41.14's parse_fs_type() has no "big" or "huge"
        "default"
    } else if fs_blocks_count < 16 * 1024 * 1024 * meg {
        "big"
    } else {
        "huge"
    };
    let usage = args
        .usage_types
        .clone()
        .unwrap_or_else(|| size_type.to_string());
    let mut fs_types = vec![ext_type.clone()];
    for t in usage.split(',') {
        if t.is_empty() {
            continue;
        }
        if conf.has_fs_type(t) {
            fs_types.push(t.to_string());
        } else if t != "default" {
            notes.push(format!(
                "Warning: the fs_type {t} is not defined in mke2fs.conf"
            ));
        }
    }
    let c = |e: String| Mke2fsError(e);

    // Features
    let mut features: BTreeSet<&'static str> = BTreeSet::new();
    let release = conf.release;
    let base = conf
        .string(
            &fs_types,
            "base_features",
            Some(if v141 {
                "sparse_super,filetype,resize_inode,dir_index"
            } else {
                "sparse_super,large_file,filetype,resize_inode,dir_index"
            }),
        )
        .unwrap_or_default();
    edit_features(&mut features, &base, release)?;
    for t in &fs_types {
        if let Some(f) = conf.get("fs_types", t, Some("features")) {
            if !f.is_empty() {
                edit_features(&mut features, f, release)?;
            }
        }
    }
    let default_features = conf.string(&fs_types, "default_features", Some(""));
    if args.features.is_empty() {
        if let Some(d) = &default_features {
            edit_features(&mut features, d, release)?;
        }
    }
    let default_orphan_file = features.contains("orphan_file");
    let default_csum_seed = features.contains("metadata_csum_seed");
    if !args.features.is_empty() {
        // 1.41.14 keeps the last -O (fs_features = optarg); 1.47 joins them all
        let asked = if v141 {
            args.features.last().cloned().unwrap_or_default()
        } else {
            args.features.join(",")
        };
        edit_features(&mut features, &asked, release)?;
    }
    if default_orphan_file && !features.contains("has_journal") {
        features.remove("orphan_file");
    }
    if default_csum_seed && !features.contains("metadata_csum") {
        features.remove("metadata_csum_seed");
    }

    // Block size
    if blocksize <= 0 {
        let mut use_bsize = conf.int(&fs_types, "blocksize", 4096).map_err(c)?;
        if use_bsize == -1 {
            use_bsize = page as i64;
        }
        if blocksize < 0 && use_bsize < -blocksize {
            use_bsize = -blocksize;
        }
        if ![1024, 2048, 4096, 8192, 16384, 32768, 65536].contains(&use_bsize) {
            return err(format!("invalid block size - {use_bsize}"));
        }
        blocksize = use_bsize;
        fs_blocks_count /= blocksize as u64 / 1024;
    }
    let bs = blocksize as u64;
    let log_block_size = (bs / 1024).trailing_zeros();
    if bs > page {
        return err(format!("{bs}-byte blocks too big for system (max {page})"));
    }
    if fs_blocks_count > MAX_32 && features.contains("64bit") {
        features.remove("resize_inode");
    }
    if fs_blocks_count > MAX_32
        && !features.contains("64bit")
        && !v141
        && conf
            .boolean(&fs_types, "auto_64-bit_support", false)
            .map_err(c)?
    {
        features.insert("64bit");
        features.remove("resize_inode");
    }
    if fs_blocks_count > MAX_32 && !features.contains("64bit") {
        return err(format!(
            "Size of device (0x{fs_blocks_count:x} blocks) too big to be expressed in 32 bits \
             using a blocksize of {bs}."
        ));
    }
    if fs_blocks_count > (1u64 << (log_block_size + 10 + 3 + 32)) - 1 {
        return err(format!(
            "Size of device (0x{fs_blocks_count:x} blocks) too big to create a filesystem \
             using a blocksize of {bs}."
        ));
    }
    if journal_size != 0 {
        features.insert("has_journal");
    }
    if reserved_ratio < 0.0 && v141 {
        // 1.41.14 reads no reserved_ratio from mke2fs.conf: 5% unless -m
        reserved_ratio = 5.0;
    }
    if reserved_ratio < 0.0 {
        reserved_ratio = conf.double(&fs_types, "reserved_ratio", 5.0).map_err(c)?;
        if !(0.0..=50.0).contains(&reserved_ratio) {
            return err(format!(
                "invalid reserved blocks percent - {reserved_ratio}"
            ));
        }
    }
    if features.contains("64bit") && !features.contains("extent") {
        return err(
            "Extents MUST be enabled for a 64-bit filesystem.  Pass -O extents to rectify.",
        );
    }
    for (f, what) in NOT_MODELLED {
        if features.contains(f) {
            return err(format!(
                "feature {f} is not modelled: layoutlab does not place {what}"
            ));
        }
    }
    if inode_ratio == 0 {
        let r = conf.int(&fs_types, "inode_ratio", 8192).map_err(c)?;
        // mke2fs floors it at the block size as typed (-b 3000 makes 2048-byte blocks)
        let floor = if raw_blocksize > 0 {
            raw_blocksize as u64
        } else {
            bs
        };
        inode_ratio = u64::try_from(r)
            .map_err(|_| Mke2fsError(format!("invalid inode ratio {r}")))?
            .max(floor);
    }
    // settings 1.41.14's mke2fs.conf did not have (sparse_super2, journal placement,
    // packed_meta_blocks came in 1.42/1.43)
    let num_backups = if v141 {
        2
    } else {
        conf.int(&fs_types, "num_backup_sb", 2).map_err(c)?
    };
    if let Some(l) = journal_location_str.or_else(|| {
        conf.string(&fs_types, "journal_location", Some(""))
            .filter(|s| !s.is_empty() && !v141)
    }) {
        journal_location = Some(parse_num_blocks2(&l, log_block_size as i32));
    }
    if !v141
        && conf
            .boolean(&fs_types, "packed_meta_blocks", false)
            .map_err(c)?
    {
        return err("packed_meta_blocks is not modelled");
    }

    // Extended options: each type's "options" from mke2fs.conf, then -E.
    let mut ext = Extended {
        num_backups,
        ..Extended::default()
    };
    let mut ext_opts: Vec<String> = Vec::new();
    for t in &fs_types {
        if let Some(o) = conf.get("fs_types", t, Some("options")) {
            if !o.is_empty() {
                ext_opts.push(o.to_string());
            }
        }
    }
    if let Some(e) = &args.extended {
        ext_opts.push(e.clone());
    }
    for o in &ext_opts {
        if v141 {
            parse_extended_1_41_14(o, &mut ext, &mut features, fs_blocks_count, bs, bpg_param)?;
        } else {
            parse_extended(o, &mut ext, &mut features, fs_blocks_count, bs, bpg_param)?;
        }
    }
    if features.contains("metadata_csum") && features.contains("uninit_bg") {
        features.remove("uninit_bg");
    }
    if features.contains("meta_bg") && features.contains("resize_inode") {
        return err(
            "The resize_inode and meta_bg features are not compatible.\nThey can not be both \
             enabled simultaneously.",
        );
    }
    if features.contains("resize_inode") && !features.contains("sparse_super") {
        return err("reserved online resize blocks not supported on non-sparse filesystem");
    }
    if bpg_param != 0 && (bpg_param < 256 || bpg_param > 8 * bs) {
        return err("blocks per group count out of range");
    }
    if ext.stride.is_some() && !features.contains("flex_bg") {
        return err("-E stride without flex_bg is not modelled (it moves the bitmaps)");
    }
    if inode_size == 0 {
        inode_size = u64::try_from(conf.int(&fs_types, "inode_size", 0).map_err(c)?).unwrap_or(0);
    }
    if flex_bg_size == 0 && features.contains("flex_bg") {
        flex_bg_size =
            u64::try_from(conf.int(&fs_types, "flex_bg_size", 16).map_err(c)?).unwrap_or(16);
    }
    if flex_bg_size != 0 && !features.contains("flex_bg") {
        return err("Flex_bg feature not enabled, so flex_bg size may not be specified");
    }
    if inode_size != 0 && (inode_size < 128 || inode_size > bs || !inode_size.is_power_of_two()) {
        return err(format!(
            "invalid inode size {inode_size} (min 128/max {bs})"
        ));
    }
    if features.contains("inline_data") && inode_size == 128 {
        return err("128 byte inodes are too small for inline data; specify larger size");
    }
    if num_inodes == 0 {
        let n = fs_blocks_count * bs / inode_ratio;
        if n > MAX_32 {
            if features.contains("64bit") {
                num_inodes = MAX_32;
            } else {
                return err(format!("too many inodes ({n}), raise inode ratio?"));
            }
        }
    } else if num_inodes > MAX_32 {
        return err(format!(
            "too many inodes ({num_inodes}), specify < 2^32 inodes"
        ));
    }
    let inodes = if num_inodes != 0 {
        num_inodes
    } else {
        fs_blocks_count * bs / inode_ratio
    };
    let isz = if inode_size != 0 { inode_size } else { 128 };
    if u128::from(inodes) * u128::from(isz) >= u128::from(fs_blocks_count) * u128::from(bs) && v141
    {
        // the same test; 1.41.14 breaks its message in other places
        return err(format!(
            "inode_size ({isz}) * inodes_count ({inodes}) too big for a\n\tfilesystem with \
             {fs_blocks_count} blocks, specify higher inode_ratio (-i)\n\tor lower inode count \
             (-N)."
        ));
    }
    if u128::from(inodes) * u128::from(isz) >= u128::from(fs_blocks_count) * u128::from(bs) {
        return err(format!(
            "inode_size ({isz}) * inodes_count ({inodes}) too big for a filesystem with \
             {fs_blocks_count} blocks, specify higher inode_ratio (-i) or lower inode count \
             (-N)."
        ));
    }
    let r_blocks = (reserved_ratio * fs_blocks_count as f64 / 100.0) as u64;
    let mut backup_bgs = [0u64; 2];
    if features.contains("sparse_super2") {
        if ext.num_backups >= 1 {
            backup_bgs[0] = 1;
        }
        if ext.num_backups >= 2 {
            backup_bgs[1] = u64::from(u32::MAX);
        }
    }
    if features.contains("orphan_file") && !features.contains("has_journal") {
        return err("cannot set orphan_file feature without a journal.");
    }

    let journal = if features.contains("has_journal") {
        // -J size= in MiB, as blocks (journal_size -1 is "the default size")
        let requested = journal_size.max(0) as u64 * 1024 / (bs / 1024);
        match (journal_size > 0, release) {
            (true, conf::Release::V1_41_14) => JournalRule::Requested141(requested),
            (true, conf::Release::V1_47_0) => JournalRule::Requested(requested),
            // 1.41.14's lib/ext2fs/mkjournal.c keeps 1.40's table
            (false, conf::Release::V1_41_14) => JournalRule::Default140,
            (false, conf::Release::V1_47_0) => JournalRule::Default147 {
                fast_commit: features.contains("fast_commit"),
            },
        }
    } else {
        JournalRule::None
    };
    let params = GeometryParams {
        name: format!("mke2fs {}", fs_types.join(",")),
        features: features.iter().map(|f| f.to_string()).collect(),
        block_size_bytes: bs as u32,
        blocks: fs_blocks_count,
        blocks_per_group: bpg_param,
        inode_size_bytes: isz as u32,
        inodes,
        r_blocks,
        flex_bg_size: if features.contains("flex_bg") {
            flex_bg_size
        } else {
            0
        },
        reserved_gdt_blocks: ext.reserved_gdt_blocks,
        backup_bgs,
        journal,
        journal_goal: match journal_location {
            Some(l) => JournalGoal::Fixed(l),
            None => JournalGoal::Midpoint,
        },
        orphan_file_blocks: 0,
        // 1.40.2's extra journal block is not 1.41.14's (its mkjournal_proc() counts from
        // block 0); 1.41's packing of a short last flex group moves tables, and the
        // calculator counts them
        journal_blocks_past_size: 0,
        short_flex_group_packed_as_whole: false,
        // 1.41.14's ext2fs_initialize() keeps param's reserved count when it drops a last
        // group too small to keep; 1.47 recomputes it from the ratio
        reserved_blocks_before_drop: v141,
        // 1.41.14's ext2fs_initialize() has no meta_bg rule: it refuses instead
        meta_bg_when_descriptors_fill: !v141,
    };
    Ok(Resolved {
        fs_types,
        params: GeometryParams {
            orphan_file_blocks: ext.orphan_file_blocks,
            ..params
        },
        notes,
    })
}

/// What `-E` (and mke2fs.conf's `options`) set.
#[derive(Clone, Debug, Default)]
struct Extended {
    num_backups: i64,
    reserved_gdt_blocks: u64,
    stride: Option<u64>,
    orphan_file_blocks: u64,
}

/// misc/mke2fs.c `parse_extended_opts()` for the options that shape the layout; the rest
/// are accepted (they place nothing) or refused as not modelled.
fn parse_extended(
    opts: &str,
    ext: &mut Extended,
    features: &mut BTreeSet<&'static str>,
    blocks: u64,
    bs: u64,
    bpg_param: u64,
) -> Result<(), Mke2fsError> {
    let log_bs = (bs / 1024).trailing_zeros() as i32;
    let mut bad: Vec<String> = Vec::new();
    for token in opts.split(',').filter(|t| !t.is_empty()) {
        let (k, arg) = match token.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (token, None),
        };
        let need = |bad: &mut Vec<String>| -> Option<&str> {
            if arg.is_none() {
                bad.push(k.to_string());
            }
            arg
        };
        match k {
            "resize" => {
                let Some(a) = need(&mut bad) else { continue };
                let resize = parse_num_blocks2(a, log_bs);
                if resize == 0 {
                    return err(format!("Invalid resize parameter: {a}"));
                }
                if resize <= blocks {
                    return err("The resize maximum must be greater than the filesystem size.");
                }
                let bpg = if bpg_param != 0 { bpg_param } else { bs * 8 };
                let gdpb = bs / if features.contains("64bit") { 64 } else { 32 };
                let groups = blocks.div_ceil(bpg);
                let desc_blocks = groups.div_ceil(gdpb);
                let rsv_groups = resize.div_ceil(bpg);
                let rsv =
                    (rsv_groups.div_ceil(gdpb) as i64 - desc_blocks as i64).min((bs / 4) as i64);
                if rsv > 0 {
                    features.insert("resize_inode");
                    ext.reserved_gdt_blocks = rsv as u64;
                }
            }
            "num_backup_sb" => {
                let Some(a) = need(&mut bad) else { continue };
                match conf::parse_int(a) {
                    Some(n @ 0..=2) => ext.num_backups = n,
                    _ => return err(format!("Invalid # of backup superblocks: {a}")),
                }
            }
            "orphan_file_size" => {
                let Some(a) = need(&mut bad) else { continue };
                let n = parse_num_blocks2(a, log_bs);
                if n == 0 {
                    return err(format!("Invalid size of orphan file {a}"));
                }
                ext.orphan_file_blocks = n;
            }
            "stride" => {
                let Some(a) = need(&mut bad) else { continue };
                match conf::parse_int(a) {
                    Some(n) if n > 0 => ext.stride = Some(n as u64),
                    _ => return err(format!("Invalid RAID stride: {a}")),
                }
            }
            "stripe-width" | "stripe_width" => {
                let Some(a) = need(&mut bad) else { continue };
                if !matches!(conf::parse_int(a), Some(n) if n > 0) {
                    return err(format!("Invalid RAID stripe-width: {a}"));
                }
            }
            "lazy_itable_init" | "lazy_journal_init" | "assume_storage_prezeroed" => {
                if let Some(a) = arg {
                    if conf::parse_int(a).is_none() {
                        bad.push(k.to_string());
                    }
                }
            }
            "discard" | "nodiscard" | "test_fs" | "no_copy_xattrs" => {}
            "root_owner" | "hash_seed" | "mmp_update_interval" | "encoding" | "encoding_flags" => {}
            "packed_meta_blocks" | "offset" | "quotatype" | "desc_size" | "desc-size"
            | "android_sparse" => {
                return err(format!("-E {k} is not modelled"));
            }
            _ => bad.push(k.to_string()),
        }
    }
    if !bad.is_empty() {
        return err(format!(
            "Bad option(s) specified: {}\n\nExtended options are separated by commas, and may \
             take an argument which is set off by an equals ('=') sign.",
            bad.join(",")
        ));
    }
    Ok(())
}

/// e2fsprogs 1.41.14's misc/mke2fs.c `parse_extended_opts()`: stride, stripe-width (or
/// stripe_width), resize, lazy_itable_init, test_fs, discard and nodiscard; anything else is
/// a bad option, and a bad value is refused in its words.
fn parse_extended_1_41_14(
    opts: &str,
    ext: &mut Extended,
    features: &mut BTreeSet<&'static str>,
    blocks: u64,
    bs: u64,
    bpg_param: u64,
) -> Result<(), Mke2fsError> {
    let log_bs = (bs / 1024).trailing_zeros() as i32;
    let mut bad: Vec<String> = Vec::new();
    for token in opts.split(',').filter(|t| !t.is_empty()) {
        let (k, arg) = match token.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (token, None),
        };
        let positive = |a: &str| conf::parse_int(a).filter(|n| *n > 0);
        match (k, arg) {
            ("stride" | "stripe-width" | "stripe_width" | "resize", None) => {
                bad.push(k.to_string())
            }
            ("stride", Some(a)) => match positive(a) {
                Some(n) => ext.stride = Some(n as u64),
                None => return err(format!("Invalid stride parameter: {a}")),
            },
            ("stripe-width" | "stripe_width", Some(a)) => {
                if positive(a).is_none() {
                    return err(format!("Invalid stripe-width parameter: {a}"));
                }
            }
            ("resize", Some(a)) => {
                let resize = parse_num_blocks2(a, log_bs);
                if resize == 0 {
                    return err(format!("Invalid resize parameter: {a}"));
                }
                if resize <= blocks {
                    return err("The resize maximum must be greater than the filesystem size.");
                }
                // descriptors of 32 bytes: 1.41 has no 64bit
                let bpg = if bpg_param != 0 { bpg_param } else { bs * 8 };
                let gdpb = bs / 32;
                let desc_blocks = blocks.div_ceil(bpg).div_ceil(gdpb);
                let rsv = (resize.div_ceil(bpg).div_ceil(gdpb) as i64 - desc_blocks as i64)
                    .min((bs / 4) as i64);
                if rsv > 0 {
                    features.insert("resize_inode");
                    ext.reserved_gdt_blocks = rsv as u64;
                }
            }
            // they place nothing (lazy_itable_init's value is read with strtoul, unchecked)
            ("test_fs" | "lazy_itable_init" | "discard" | "nodiscard", _) => {}
            _ => bad.push(k.to_string()),
        }
    }
    // 1.41.14 names the last bad option only
    if let Some(last) = bad.last() {
        return err(format!(
            "Bad option(s) specified: {last}\n\nExtended options are separated by commas, and \
             may take an argument which\n\tis set off by an equals ('=') sign."
        ));
    }
    Ok(())
}

/// What the structures of a fresh file system take, as `dumpe2fs` and `df` report them
/// right after mkfs. Counts are blocks over all copies unless named per copy.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Overhead {
    /// Block size in bytes.
    pub block_size: u64,
    /// Blocks in the file system.
    pub blocks_total: u64,
    /// Block groups.
    pub groups: u64,
    /// Inodes.
    pub inodes_total: u64,
    /// Inodes per group.
    pub inodes_per_group: u64,
    /// Inode size in bytes.
    pub inode_size: u64,
    /// Superblocks: the primary and every backup.
    pub superblock_blocks: u64,
    /// Group-descriptor blocks, every copy.
    pub gdt_blocks: u64,
    /// Group-descriptor blocks in one copy.
    pub gdt_blocks_per_copy: u64,
    /// Reserved GDT blocks (online resize), every copy.
    pub reserved_gdt_blocks: u64,
    /// Reserved GDT blocks in one copy (dumpe2fs "Reserved GDT blocks").
    pub reserved_gdt_blocks_per_copy: u64,
    /// Block and inode bitmaps.
    pub bitmap_blocks: u64,
    /// Inode tables.
    pub inode_table_blocks: u64,
    /// Journal length in blocks (dumpe2fs "Journal length"; fast-commit area included).
    pub journal_blocks: u64,
    /// The journal's own mapping blocks (indirect blocks, or extent-tree blocks).
    pub journal_mapping_blocks: u64,
    /// Root directory, lost+found, resize inode, MMP block and orphan file.
    pub other_blocks: u64,
    /// Blocks reserved for root (`-m`).
    pub reserved_blocks: u64,
    /// Block count minus free blocks, as dumpe2fs reports right after mkfs.
    pub overhead_blocks: u64,
    /// Free blocks right after mkfs.
    pub free_blocks: u64,
    /// `df` size, KiB (the kernel leaves out the file system's own structures).
    pub df_size_kb: u64,
    /// `df` used, KiB.
    pub df_used_kb: u64,
    /// `df` available, KiB (free less root's reserve and, with extents, the kernel's
    /// reserve of min(2%, 4096 blocks)).
    pub df_avail_kb: u64,
    /// Features of the new file system.
    pub features: Vec<String>,
    /// The mke2fs.conf types it was resolved with.
    pub fs_types: Vec<String>,
}

impl Overhead {
    /// Counts the layout `geo` mke2fs makes.
    pub fn of(geo: &Geometry, fs_types: &[String]) -> Overhead {
        let sum = |kinds: &[MetaKind]| -> u64 {
            geo.meta
                .iter()
                .filter(|m| kinds.contains(&m.kind))
                .map(|m| m.blocks)
                .sum()
        };
        let bs = u64::from(geo.block_size_bytes);
        let superblocks = sum(&[MetaKind::Superblock]);
        let gdt = sum(&[MetaKind::Gdt]);
        let rsv = sum(&[MetaKind::ReservedGdt]);
        let bitmaps = sum(&[MetaKind::BlockBitmap, MetaKind::InodeBitmap]);
        let itables = sum(&[MetaKind::InodeTable]);
        let journal_all = sum(&[MetaKind::Journal, MetaKind::JournalTree]);
        let other = sum(&[
            MetaKind::RootDir,
            MetaKind::LostFound,
            MetaKind::ResizeDind,
            MetaKind::Mmp,
            MetaKind::OrphanFile,
        ]);
        let used = geo.first_data_block
            + superblocks
            + gdt
            + rsv
            + bitmaps
            + itables
            + journal_all
            + other;
        let free = geo.blocks_count - used;
        // ext4_calculate_overhead(): the blocks before the first group, each group's
        // superblock, descriptors, reserved descriptors, bitmaps and inode table, and the
        // internal journal's length
        let kernel_overhead =
            geo.first_data_block + superblocks + gdt + rsv + bitmaps + itables + geo.journal_blocks;
        let f_blocks = geo.blocks_count - kernel_overhead;
        // ext4_calculate_resv_clusters(): with extents, 2% or 4096 blocks, the smaller
        let resv = if geo.has_feature("extent") {
            (geo.blocks_count / 50).min(4096)
        } else {
            0
        };
        let avail = free.saturating_sub(geo.reserved_blocks + resv);
        let kb = |blocks: u64| blocks * bs / 1024;
        let copies = geo.groups.iter().filter(|g| g.has_super).count() as u64;
        Overhead {
            block_size: bs,
            blocks_total: geo.blocks_count,
            groups: geo.group_count(),
            inodes_total: geo.inodes_count,
            inodes_per_group: u64::from(geo.inodes_per_group),
            inode_size: 0,
            superblock_blocks: superblocks,
            gdt_blocks: gdt,
            gdt_blocks_per_copy: if geo.has_feature("meta_bg") {
                1
            } else {
                geo.gdt_blocks
            },
            reserved_gdt_blocks: rsv,
            reserved_gdt_blocks_per_copy: rsv.checked_div(copies).unwrap_or(0),
            bitmap_blocks: bitmaps,
            inode_table_blocks: itables,
            journal_blocks: geo.journal_blocks,
            journal_mapping_blocks: journal_all - geo.journal_blocks,
            other_blocks: other,
            reserved_blocks: geo.reserved_blocks,
            overhead_blocks: used,
            free_blocks: free,
            df_size_kb: kb(f_blocks),
            df_used_kb: kb(f_blocks - free),
            df_avail_kb: kb(avail),
            features: geo.features.clone(),
            fs_types: fs_types.to_vec(),
        }
    }
}

impl Overhead {
    /// `df` (size, used, available KiB) as the ext3 driver of Linux 2.6.18 to 2.6.39 reported
    /// it (fs/ext3/super.c `ext3_statfs()`): its overhead was the blocks before the first group,
    /// each group's superblock and descriptor copies and its bitmaps and inode table — not the
    /// reserved GDT blocks or the journal, which counted as used; available was free less
    /// root's reserve.
    pub fn df_ext3_driver_2_6(&self) -> (u64, u64, u64) {
        let first = self.overhead_blocks
            - self.superblock_blocks
            - self.gdt_blocks
            - self.reserved_gdt_blocks
            - self.bitmap_blocks
            - self.inode_table_blocks
            - self.journal_blocks
            - self.journal_mapping_blocks
            - self.other_blocks;
        let size = self.blocks_total
            - first
            - self.superblock_blocks
            - self.gdt_blocks
            - self.bitmap_blocks
            - self.inode_table_blocks;
        let kb = |b: u64| b * self.block_size / 1024;
        (
            kb(size),
            kb(size - self.free_blocks),
            kb(self.free_blocks.saturating_sub(self.reserved_blocks)),
        )
    }
}

/// mke2fs's options on a device of `device_bytes` bytes under `conf`: what it would make.
pub fn overhead(
    args: &Mke2fsArgs,
    device_bytes: u64,
    conf: &Mke2fsConf,
) -> Result<(Overhead, Resolved), Mke2fsError> {
    let r = resolve(args, device_bytes, conf)?;
    let geo = Geometry::from_params(&r.params).map_err(|e| match e {
        crate::LayoutError::BadSize { reason, .. } => Mke2fsError(reason),
        other => Mke2fsError(other.to_string()),
    })?;
    let mut o = Overhead::of(&geo, &r.fs_types);
    o.inode_size = u64::from(r.params.inode_size_bytes);
    Ok((o, r))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn num_blocks_parse_as_mke2fs() {
        assert_eq!(parse_num_blocks2("16k", -1), 16384);
        assert_eq!(parse_num_blocks2("4096", -1), 4096);
        assert_eq!(parse_num_blocks2("1T", 2), (1u64 << 40) / 4096);
        assert_eq!(parse_num_blocks2("1g", 0), 1 << 20);
        assert_eq!(parse_num_blocks2("8s", -1), 4096);
        assert_eq!(parse_num_blocks2("12kb", -1), 0);
        assert_eq!(parse_num_blocks2("x", -1), 0);
    }

    #[test]
    fn features_edit_as_e2p_does() {
        let mut f = BTreeSet::new();
        let today = conf::Release::V1_47_0;
        edit_features(&mut f, "has_journal,extents ^resize_inode,+flex_bg", today).unwrap();
        assert_eq!(
            f.iter().copied().collect::<Vec<_>>(),
            ["extent", "flex_bg", "has_journal"]
        );
        edit_features(&mut f, "none,dir_index", today).unwrap();
        assert_eq!(f.iter().copied().collect::<Vec<_>>(), ["dir_index"]);
        let e = edit_features(&mut f, "frobnicate", today).unwrap_err();
        assert_eq!(e.0, "Invalid filesystem option set: frobnicate");
        assert!(edit_features(&mut f, "needs_recovery", today).is_err());
        // 1.41.14 knows no 64bit to clear, nor metadata_csum, nor the gdt_csum alias
        let old = conf::Release::V1_41_14;
        for words in [
            "^64bit",
            "^metadata_csum,uninit_bg",
            "gdt_csum",
            "orphan_file",
        ] {
            let e = edit_features(&mut f, words, old).unwrap_err();
            assert_eq!(e.0, format!("Invalid filesystem option set: {words}"));
            assert!(edit_features(&mut f, words, today).is_ok(), "{words}");
        }
        edit_features(&mut f, "none,uninit_groups,extents", old).unwrap();
        assert_eq!(
            f.iter().copied().collect::<Vec<_>>(),
            ["extent", "uninit_bg"]
        );
    }
}
