//! What each sector of an XFS or btrfs file system holds, read before a delete with the file
//! system's own tools, to attribute the delete's reads and writes (the ext counterpart is
//! [`crate::ext_classes`]).
//!
//! - **XFS** (`xfs_db -r`): per allocation group the superblock, AGF, AGI and AGFL sectors of
//!   its first block, the roots of its free-space (by block and by size), inode, free-inode,
//!   reverse-mapping and reference-count btrees (a fresh file system's are one block; blocks
//!   below a root are not walked and count as `other`), the internal log, the 64-inode chunks
//!   of the deleted file's inode and of the root directory's (inodes are read and written by
//!   cluster), the file's data extents and (when its extent list is a btree) the root's
//!   children.
//! - **btrfs** (`btrfs inspect-internal dump-super` and `dump-tree`): the superblock copies,
//!   every tree block by the tree that owns it (`root_tree`, `extent_tree`, `csum_tree`, ...),
//!   mapped from logical to physical through the chunk tree (single profile), and data chunks
//!   as `data`. A block of a metadata chunk that was free before the delete (where copy-on-write
//!   puts the new tree blocks) is `metadata_free_before`.
//!
//! Sectors are 512-byte device sectors.

use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// Classes of sector ranges, sorted and non-overlapping (a later, narrower range wins where it
/// was added over a wider one).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SectorClasses {
    /// (first sector, one past the last, class), sorted by start.
    ranges: Vec<(u64, u64, &'static str)>,
}

impl SectorClasses {
    /// Builds from ranges in priority order: a range added later overrides earlier ones where
    /// they overlap.
    pub fn from_ranges(mut input: Vec<(u64, u64, &'static str)>) -> SectorClasses {
        // Paint in order onto a boundary map: simple and exact for the few thousand ranges
        // here.
        let mut cuts: Vec<u64> = input.iter().flat_map(|r| [r.0, r.1]).collect();
        cuts.sort_unstable();
        cuts.dedup();
        let mut class: Vec<Option<&'static str>> = vec![None; cuts.len()];
        input.retain(|r| r.0 < r.1);
        for (a, b, c) in input {
            let i = cuts.partition_point(|&x| x < a);
            let j = cuts.partition_point(|&x| x < b);
            for slot in &mut class[i..j] {
                *slot = Some(c);
            }
        }
        let mut ranges: Vec<(u64, u64, &'static str)> = Vec::new();
        for i in 0..cuts.len().saturating_sub(1) {
            if let Some(c) = class[i] {
                match ranges.last_mut() {
                    Some(last) if last.1 == cuts[i] && last.2 == c => last.1 = cuts[i + 1],
                    _ => ranges.push((cuts[i], cuts[i + 1], c)),
                }
            }
        }
        SectorClasses { ranges }
    }

    /// The class of sector `s` (`other` outside every range).
    pub fn class_of(&self, s: u64) -> &'static str {
        let i = self.ranges.partition_point(|r| r.0 <= s);
        if i > 0 && s < self.ranges[i - 1].1 {
            self.ranges[i - 1].2
        } else {
            "other"
        }
    }

    /// Sectors of the trace's reads and writes by class.
    pub fn sectors_by_class(&self, trace: &layoutlab_trace::Trace) -> BTreeMap<String, u64> {
        let mut out = BTreeMap::new();
        for r in &trace.requests {
            if !matches!(r.op, layoutlab_trace::Op::Read | layoutlab_trace::Op::Write) {
                continue;
            }
            let (mut s, end) = (r.sector, r.sector + u64::from(r.sectors));
            while s < end {
                let i = self.ranges.partition_point(|x| x.0 <= s);
                let (class, stop) = if i > 0 && s < self.ranges[i - 1].1 {
                    (self.ranges[i - 1].2, self.ranges[i - 1].1)
                } else {
                    ("other", self.ranges.get(i).map_or(end, |x| x.0))
                };
                let n = stop.min(end) - s;
                *out.entry(class.to_string()).or_default() += n;
                s += n;
            }
        }
        out
    }
}

fn run(program: &str, args: &[&str]) -> Result<String> {
    let out = Command::new(program)
        .args(args)
        .output()
        .with_context(|| format!("running {program}"))?;
    if !out.status.success() {
        bail!(
            "{program} {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `name = value` lines of xfs_db's `print` as a map (values as printed).
fn xfs_fields(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| l.split_once(" = "))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

/// XFS geometry from `xfs_db -c "sb 0" -c "p ..."`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct XfsGeometry {
    /// Block size, bytes.
    pub blocksize: u64,
    /// Blocks per AG.
    pub agblocks: u64,
    /// log2 of the AG part of a file-system block number.
    pub agblklog: u32,
    /// Allocation groups.
    pub agcount: u64,
    /// First block of the internal log (AG-encoded), and its length.
    pub logstart: u64,
    /// Log blocks.
    pub logblocks: u64,
    /// Sector size, bytes.
    pub sectsize: u64,
}

impl XfsGeometry {
    /// Parses the `p` output of the superblock fields named in [`XfsGeometry`].
    pub fn parse(text: &str) -> Result<XfsGeometry> {
        let f = xfs_fields(text);
        let n = |k: &str| -> Result<u64> {
            f.get(k)
                .with_context(|| format!("xfs_db sb: no {k}"))?
                .parse()
                .with_context(|| format!("xfs_db sb: {k}"))
        };
        Ok(XfsGeometry {
            blocksize: n("blocksize")?,
            agblocks: n("agblocks")?,
            agblklog: n("agblklog")? as u32,
            agcount: n("agcount")?,
            logstart: n("logstart")?,
            logblocks: n("logblocks")?,
            sectsize: n("sectsize")?,
        })
    }

    /// First sector of AG-encoded file-system block `fsb`.
    pub fn fsb_sector(&self, fsb: u64) -> u64 {
        let agno = fsb >> self.agblklog;
        let agbno = fsb & ((1 << self.agblklog) - 1);
        (agno * self.agblocks + agbno) * (self.blocksize / 512)
    }

    /// First sector of block `agbno` of AG `agno`.
    pub fn ag_sector(&self, agno: u64, agbno: u64) -> u64 {
        (agno * self.agblocks + agbno) * (self.blocksize / 512)
    }
}

/// Data extents `(start fsb, blocks)` from xfs_db `bmap` lines
/// (`data offset 0 startblock 65546 (1/10) count 65065 flag 0`).
pub fn parse_xfs_bmap(text: &str) -> Result<Vec<(u64, u64)>> {
    let mut out = Vec::new();
    for l in text.lines().filter(|l| l.starts_with("data offset")) {
        let w: Vec<&str> = l.split_whitespace().collect();
        let at = |k: &str| -> Result<u64> {
            let i = w
                .iter()
                .position(|x| *x == k)
                .with_context(|| format!("bmap: {l}"))?;
            w.get(i + 1)
                .and_then(|v| v.parse().ok())
                .with_context(|| format!("bmap: {l}"))
        };
        out.push((at("startblock")?, at("count")?));
    }
    Ok(out)
}

/// Reads the classes of an XFS file system on `device` whose deleted file is inode `ino`.
pub fn xfs(device: &Path, ino: u64) -> Result<SectorClasses> {
    let dev = device.to_str().context("device path")?;
    let sb = run(
        "xfs_db",
        &[
            "-r",
            "-c",
            "sb 0",
            "-c",
            "p blocksize agblocks agblklog agcount logstart logblocks sectsize rootino inodesize",
            dev,
        ],
    )?;
    let geo = XfsGeometry::parse(&sb)?;
    let root_ino: u64 = xfs_fields(&sb)
        .get("rootino")
        .and_then(|v| v.parse().ok())
        .context("xfs_db: rootino")?;
    let spb = geo.blocksize / 512;
    let sect = (geo.sectsize / 512).max(1);
    let mut ranges: Vec<(u64, u64, &'static str)> = Vec::new();
    for ag in 0..geo.agcount {
        let s = geo.ag_sector(ag, 0);
        ranges.push((s, s + sect, "superblock"));
        ranges.push((s + sect, s + 2 * sect, "agf"));
        ranges.push((s + 2 * sect, s + 3 * sect, "agi"));
        ranges.push((s + 3 * sect, s + 4 * sect, "agfl"));
        let agf = xfs_fields(&run(
            "xfs_db",
            &[
                "-r",
                "-c",
                &format!("agf {ag}"),
                "-c",
                "p bnoroot cntroot rmaproot refcntroot",
                "-c",
                &format!("agi {ag}"),
                "-c",
                "p root free_root",
                dev,
            ],
        )?);
        for (key, class) in [
            ("bnoroot", "free_space_btree"),
            ("cntroot", "free_space_btree"),
            ("rmaproot", "rmap_btree"),
            ("refcntroot", "refcount_btree"),
            ("root", "inode_btree"),
            ("free_root", "inode_btree"),
        ] {
            if let Some(b) = agf.get(key).and_then(|v| v.parse::<u64>().ok()) {
                let s = geo.ag_sector(ag, b);
                ranges.push((s, s + spb, class));
            }
        }
    }
    let log = geo.fsb_sector(geo.logstart);
    ranges.push((log, log + geo.logblocks * spb, "log"));
    // The deleted file: its data, its extent btree's blocks, its inode; and the root
    // directory's inode, whose entry it was.
    let bmap = run(
        "xfs_db",
        &["-r", "-c", &format!("inode {ino}"), "-c", "bmap", dev],
    )?;
    for (start, count) in parse_xfs_bmap(&bmap)? {
        let s = geo.fsb_sector(start);
        ranges.push((s, s + count * spb, "file_data"));
    }
    let core = xfs_fields(&run(
        "xfs_db",
        &[
            "-r",
            "-c",
            &format!("inode {ino}"),
            "-c",
            "p core.format",
            dev,
        ],
    )?);
    if core.get("core.format").is_some_and(|f| f.contains("btree")) {
        let ptrs = run(
            "xfs_db",
            &[
                "-r",
                "-c",
                &format!("inode {ino}"),
                "-c",
                "p u3.bmbt.ptrs",
                dev,
            ],
        )
        .or_else(|_| {
            run(
                "xfs_db",
                &[
                    "-r",
                    "-c",
                    &format!("inode {ino}"),
                    "-c",
                    "p u.bmbt.ptrs",
                    dev,
                ],
            )
        })?;
        for b in ptrs
            .split(|c: char| !c.is_ascii_digit())
            .filter_map(|t| t.parse::<u64>().ok())
            .skip(1)
            .step_by(2)
        {
            let s = geo.fsb_sector(b);
            ranges.push((s, s + spb, "bmbt"));
        }
    }
    // Inodes are read and written by cluster: mark the whole 64-inode chunk of each.
    let inodesize: u64 = xfs_fields(&sb)
        .get("inodesize")
        .and_then(|v| v.parse().ok())
        .context("xfs_db: inodesize")?;
    for (i, class) in [(root_ino, "inode"), (ino, "inode")] {
        let chunk = i & !63;
        let text = run(
            "xfs_db",
            &["-r", "-c", &format!("convert ino {chunk} daddr"), dev],
        )?;
        let daddr = text
            .split_whitespace()
            .next()
            .and_then(|t| u64::from_str_radix(t.trim_start_matches("0x"), 16).ok())
            .with_context(|| format!("xfs_db convert ino {i}: {text}"))?;
        ranges.push((daddr, daddr + 64 * inodesize / 512, class));
    }
    Ok(SectorClasses::from_ranges(ranges))
}

/// A chunk: logical start, length, physical start (single profile, one stripe), type.
#[derive(Clone, Debug, PartialEq)]
pub struct Chunk {
    /// Logical byte address.
    pub logical: u64,
    /// Bytes.
    pub length: u64,
    /// Physical byte address on the device.
    pub physical: u64,
    /// DATA, METADATA or SYSTEM.
    pub kind: String,
}

/// Chunks from `btrfs inspect-internal dump-tree -t chunk`.
pub fn parse_btrfs_chunks(text: &str) -> Result<Vec<Chunk>> {
    let mut out = Vec::new();
    let mut cur: Option<(u64, Option<u64>, Option<String>)> = None;
    for l in text.lines() {
        let t = l.trim();
        if let Some(rest) = t.split("CHUNK_ITEM ").nth(1) {
            let logical = rest
                .split(')')
                .next()
                .and_then(|v| v.trim().parse().ok())
                .with_context(|| format!("chunk item: {t}"))?;
            cur = Some((logical, None, None));
        } else if let (Some(c), true) = (cur.as_mut(), t.starts_with("length ")) {
            let w: Vec<&str> = t.split_whitespace().collect();
            c.1 = w.get(1).and_then(|v| v.parse().ok());
            let ty = w
                .iter()
                .position(|x| *x == "type")
                .and_then(|i| w.get(i + 1));
            c.2 = ty.map(|v| v.split('|').next().unwrap_or("").to_string());
        } else if t.starts_with("stripe 0 devid") {
            if let Some((logical, Some(length), Some(kind))) = cur.take() {
                let physical = t
                    .split_whitespace()
                    .last()
                    .and_then(|v| v.parse().ok())
                    .with_context(|| format!("chunk stripe: {t}"))?;
                out.push(Chunk {
                    logical,
                    length,
                    physical,
                    kind,
                });
            }
        }
    }
    if out.is_empty() {
        bail!("no chunk items in the chunk tree dump");
    }
    Ok(out)
}

/// Tree blocks `(logical bytenr, owner tree)` from `btrfs inspect-internal dump-tree` (the
/// `node|leaf BYTENR ... owner NAME` header lines).
pub fn parse_btrfs_tree_blocks(text: &str) -> Vec<(u64, String)> {
    text.lines()
        .filter(|l| l.starts_with("node ") || l.starts_with("leaf "))
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            let owner = w.iter().position(|x| *x == "owner")?;
            Some((w.get(1)?.parse().ok()?, w.get(owner + 1)?.to_string()))
        })
        .collect()
}

fn owner_class(owner: &str) -> &'static str {
    match owner {
        "ROOT_TREE" => "root_tree",
        "CHUNK_TREE" => "chunk_tree",
        "EXTENT_TREE" => "extent_tree",
        "DEV_TREE" => "dev_tree",
        "FS_TREE" => "fs_tree",
        "CSUM_TREE" => "csum_tree",
        "FREE_SPACE_TREE" => "free_space_tree",
        "DATA_RELOC_TREE" => "data_reloc_tree",
        "UUID_TREE" => "uuid_tree",
        "BLOCK_GROUP_TREE" => "block_group_tree",
        _ => "other_tree",
    }
}

/// Classes from a btrfs file system's chunk map, tree blocks and node size.
pub fn btrfs_classes(chunks: &[Chunk], blocks: &[(u64, String)], nodesize: u64) -> SectorClasses {
    let to_phys = |logical: u64| -> Option<u64> {
        chunks
            .iter()
            .find(|c| logical >= c.logical && logical < c.logical + c.length)
            .map(|c| c.physical + (logical - c.logical))
    };
    let mut ranges: Vec<(u64, u64, &'static str)> = Vec::new();
    for c in chunks {
        let class = match c.kind.as_str() {
            "DATA" => "data",
            _ => "metadata_free_before",
        };
        ranges.push((c.physical / 512, (c.physical + c.length) / 512, class));
    }
    for (logical, owner) in blocks {
        if let Some(p) = to_phys(*logical) {
            ranges.push((p / 512, (p + nodesize) / 512, owner_class(owner)));
        }
    }
    // Superblock copies at 64 KiB, 64 MiB and 256 GiB, 4 KiB each.
    for at in [64u64 << 10, 64 << 20, 256 << 30] {
        ranges.push((at / 512, (at + 4096) / 512, "superblock"));
    }
    SectorClasses::from_ranges(ranges)
}

/// Reads the classes of the btrfs file system on `device`.
pub fn btrfs(device: &Path) -> Result<SectorClasses> {
    let dev = device.to_str().context("device path")?;
    let sup = run("btrfs", &["inspect-internal", "dump-super", dev])?;
    let nodesize: u64 = sup
        .lines()
        .find_map(|l| l.strip_prefix("nodesize"))
        .and_then(|v| v.trim().parse().ok())
        .context("btrfs dump-super: nodesize")?;
    let chunks = parse_btrfs_chunks(&run(
        "btrfs",
        &["inspect-internal", "dump-tree", "-t", "chunk", dev],
    )?)?;
    let blocks = parse_btrfs_tree_blocks(&run("btrfs", &["inspect-internal", "dump-tree", dev])?);
    Ok(btrfs_classes(&chunks, &blocks, nodesize))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn later_ranges_win_and_unknown_is_other() {
        let c = SectorClasses::from_ranges(vec![
            (0, 100, "metadata_free_before"),
            (10, 20, "extent_tree"),
            (200, 208, "superblock"),
        ]);
        assert_eq!(c.class_of(5), "metadata_free_before");
        assert_eq!(c.class_of(15), "extent_tree");
        assert_eq!(c.class_of(20), "metadata_free_before");
        assert_eq!(c.class_of(150), "other");
        assert_eq!(c.class_of(207), "superblock");
        let csv = "issue_ns,complete_ns,op,sector,sectors,flags,tag\n0,1,read,8,16,,x\n2,3,write,196,8,,x\n";
        let t = layoutlab_trace::csv::read(csv, "t").unwrap();
        let by = c.sectors_by_class(&t);
        assert_eq!(by["metadata_free_before"], 2 + 4);
        assert_eq!(by["extent_tree"], 10);
        assert_eq!(by["other"], 4);
        assert_eq!(by["superblock"], 4);
    }

    #[test]
    fn btrfs_dumps_parse_into_physical_classes() {
        let chunk = "\titem 1 key (FIRST_CHUNK_TREE CHUNK_ITEM 1048576) itemoff 16105 itemsize 80
\t\tlength 4194304 owner 2 stripe_len 65536 type SYSTEM|single
\t\t\tstripe 0 devid 1 offset 1048576
\titem 2 key (FIRST_CHUNK_TREE CHUNK_ITEM 30408704) itemoff 16025 itemsize 80
\t\tlength 8388608 owner 2 stripe_len 65536 type METADATA|single
\t\t\tstripe 0 devid 1 offset 5242880
";
        let chunks = parse_btrfs_chunks(chunk).unwrap();
        assert_eq!(chunks.len(), 2);
        assert_eq!(chunks[1].kind, "METADATA");
        let tree = "leaf 30441472 items 43 free space 13752 generation 7 owner EXTENT_TREE
leaf 30441472 flags 0x1(WRITTEN) backref revision 1
node 1097728 level 1 items 2 free space 1 generation 7 owner CHUNK_TREE
";
        let blocks = parse_btrfs_tree_blocks(tree);
        assert_eq!(
            blocks,
            [
                (30441472, "EXTENT_TREE".into()),
                (1097728, "CHUNK_TREE".into())
            ]
        );
        let c = btrfs_classes(&chunks, &blocks, 16384);
        // logical 30441472 = metadata chunk + 32768 → physical 5242880 + 32768
        let p = (5_242_880 + 32_768) / 512;
        assert_eq!(c.class_of(p), "extent_tree");
        assert_eq!(c.class_of(p + 31), "extent_tree");
        assert_eq!(c.class_of(p + 32), "metadata_free_before");
        assert_eq!(c.class_of(1_097_728 / 512), "chunk_tree");
        assert_eq!(c.class_of(65536 / 512), "superblock");
        assert!(parse_btrfs_chunks("nothing").is_err());
    }

    #[test]
    fn xfs_block_numbers_are_ag_encoded() {
        let g = XfsGeometry::parse(
            "blocksize = 4096\nagblocks = 60000\nagblklog = 16\nagcount = 4\nlogstart = 131078\nlogblocks = 16384\nsectsize = 512\n",
        )
        .unwrap();
        // fsb 131078 = AG 2, block 6 → linear 2 * 60000 + 6
        assert_eq!(g.fsb_sector(131_078), (2 * 60_000 + 6) * 8);
        let ex = parse_xfs_bmap(
            "data offset 0 startblock 65546 (1/10) count 65065 flag 0\ndata offset 65065 startblock 147466 (2/16394) count 11735 flag 0\n",
        )
        .unwrap();
        assert_eq!(ex, [(65546, 65065), (147466, 11735)]);
    }

    fn is_root() -> bool {
        extern "C" {
            fn geteuid() -> u32;
        }
        unsafe { geteuid() == 0 }
    }

    /// A hand-made file system: a file of known place, classes read back with the tools.
    fn made(kind: &str) -> Option<(std::path::PathBuf, std::path::PathBuf)> {
        if !is_root() {
            eprintln!("SKIP fs_classes on a real {kind}: needs root to mount");
            return None;
        }
        let dir = std::env::temp_dir().join(format!("ll-fsclasses-{kind}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let img = dir.join("fs.img");
        std::fs::File::create(&img)
            .unwrap()
            .set_len(1 << 30)
            .unwrap();
        let mkfs = match kind {
            "xfs" => Command::new("mkfs.xfs")
                .args(["-q", "-f"])
                .arg(&img)
                .status(),
            _ => Command::new("mkfs.btrfs")
                .args(["-q", "-f", "-m", "single", "-d", "single"])
                .arg(&img)
                .status(),
        };
        assert!(mkfs.unwrap().success());
        // Through the rig's loop device and mount: their drop retries a busy unmount (a
        // just-closed file can hold it a moment; a bare `umount` failed that way once and left
        // the mount behind), and a panic undoes them too.
        let lo = layoutlab_rig::LoopDevice::attach(&img, false).unwrap();
        let m = layoutlab_rig::Mount::new(lo.path(), None, kind, false, "").unwrap();
        std::fs::write(m.target().join("big"), vec![7u8; 8 << 20]).unwrap();
        drop(m);
        drop(lo);
        Some((dir, img))
    }

    #[test]
    fn xfs_classes_of_a_hand_made_file_system() {
        let Some((dir, img)) = made("xfs") else {
            return;
        };
        use std::os::unix::fs::MetadataExt;
        let ino = {
            let lo = layoutlab_rig::LoopDevice::attach(&img, true).unwrap();
            let m = layoutlab_rig::Mount::new(lo.path(), None, "xfs", true, "").unwrap();
            std::fs::metadata(m.target().join("big")).unwrap().ino()
        };
        let c = xfs(&img, ino).unwrap();
        let dev = img.to_str().unwrap();
        assert_eq!(c.class_of(0), "superblock");
        assert_eq!(c.class_of(1), "agf");
        assert_eq!(c.class_of(2), "agi");
        assert_eq!(c.class_of(3), "agfl");
        let sb = run(
            "xfs_db",
            &[
                "-r",
                "-c",
                "sb 0",
                "-c",
                "p blocksize agblocks agblklog agcount logstart logblocks sectsize",
                dev,
            ],
        )
        .unwrap();
        let g = XfsGeometry::parse(&sb).unwrap();
        assert_eq!(c.class_of(g.fsb_sector(g.logstart)), "log");
        assert_eq!(
            c.class_of(g.fsb_sector(g.logstart) + g.logblocks * 8 - 1),
            "log"
        );
        let bmap = run(
            "xfs_db",
            &["-r", "-c", &format!("inode {ino}"), "-c", "bmap", dev],
        )
        .unwrap();
        let (start, count) = parse_xfs_bmap(&bmap).unwrap()[0];
        assert_eq!(count, 2048);
        assert_eq!(c.class_of(g.fsb_sector(start)), "file_data");
        let daddr = run(
            "xfs_db",
            &["-r", "-c", &format!("convert ino {ino} daddr"), dev],
        )
        .unwrap();
        let daddr = u64::from_str_radix(
            daddr
                .split_whitespace()
                .next()
                .unwrap()
                .trim_start_matches("0x"),
            16,
        )
        .unwrap();
        assert_eq!(c.class_of(daddr), "inode");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn btrfs_classes_of_a_hand_made_file_system() {
        let Some((dir, img)) = made("btrfs") else {
            return;
        };
        let c = btrfs(&img).unwrap();
        assert_eq!(c.class_of(128), "superblock");
        let dev = img.to_str().unwrap();
        let chunks = parse_btrfs_chunks(
            &run(
                "btrfs",
                &["inspect-internal", "dump-tree", "-t", "chunk", dev],
            )
            .unwrap(),
        )
        .unwrap();
        let blocks = parse_btrfs_tree_blocks(
            &run("btrfs", &["inspect-internal", "dump-tree", dev]).unwrap(),
        );
        for owner in ["CHUNK_TREE", "EXTENT_TREE", "FS_TREE", "ROOT_TREE"] {
            let (logical, _) = blocks
                .iter()
                .find(|b| b.1 == owner)
                .unwrap_or_else(|| panic!("{owner}"));
            let ch = chunks
                .iter()
                .find(|ch| *logical >= ch.logical && *logical < ch.logical + ch.length)
                .unwrap();
            let phys = ch.physical + (logical - ch.logical);
            assert_eq!(c.class_of(phys / 512), owner_class(owner), "{owner}");
        }
        // the 8 MiB file's data lies in a data chunk
        let data: u64 = chunks
            .iter()
            .filter(|ch| ch.kind == "DATA")
            .map(|ch| ch.length)
            .sum();
        assert!(data >= 8 << 20);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
