//! What each block of an ext2/3/4 file system is, read before an operation through the
//! e2fsprogs tools built on libext2fs (`dumpe2fs` for the group layout, `debugfs` for the
//! journal's, the root directory's and one file's blocks), so that the sectors a trace touches
//! can be attributed: superblock, group descriptor, block/inode bitmap, inode table, journal,
//! indirect block, extent node, directory, the file's data, other.
//!
//! (A libext2fs `classify` in crates/image may replace the text parsing; the classes and the
//! attribution stay.)

use anyhow::{bail, Context, Result};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Block ranges of an ext file system by class, and the one file's layout.
#[derive(Clone, Debug, Default)]
pub struct ExtLayout {
    /// Block size, bytes.
    pub block_size_bytes: u64,
    /// Blocks per group.
    pub blocks_per_group: u64,
    /// First data block (1 with 1 KiB blocks, else 0).
    pub first_data_block: u64,
    /// Group descriptor size, bytes.
    pub desc_size_bytes: u64,
    /// (first block, last block inclusive, class), sorted, not overlapping.
    ranges: Vec<(u64, u64, &'static str)>,
    /// The file's mapping blocks (indirect blocks or extent-tree nodes).
    pub mapping_blocks: u64,
    /// The file's data block ranges (inclusive).
    pub data_ranges: Vec<(u64, u64)>,
}

fn first_number(s: &str) -> Option<u64> {
    let digits: String = s
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    digits.parse().ok()
}

/// "A-B" or "A" (possibly followed by text) as an inclusive range.
fn range(s: &str) -> Option<(u64, u64)> {
    let s = s.trim();
    let a = first_number(s)?;
    let rest = s.trim_start_matches(|c: char| c.is_ascii_digit());
    match rest.strip_prefix('-') {
        Some(r) => Some((a, first_number(r)?)),
        None => Some((a, a)),
    }
}

impl ExtLayout {
    /// Read the layout of the file system on `device` and of its file `path_in_fs`
    /// (e.g. "/big").
    pub fn read(device: &Path, path_in_fs: &str) -> Result<ExtLayout> {
        let dumpe2fs = run("dumpe2fs", &[device.to_str().context("device path")?])?;
        let mut l = ExtLayout::default();
        l.parse_dumpe2fs(&dumpe2fs)?;
        let dev = device.to_str().context("device path")?;
        let journal = run("debugfs", &["-R", "blocks <8>", dev])?;
        for b in journal
            .split_whitespace()
            .filter_map(|w| w.parse::<u64>().ok())
        {
            l.add(b, b, "journal");
        }
        let root = run("debugfs", &["-R", "blocks /", dev])?;
        for b in root
            .split_whitespace()
            .filter_map(|w| w.parse::<u64>().ok())
        {
            l.add(b, b, "directory");
        }
        let stat = run("debugfs", &["-R", &format!("stat {path_in_fs}"), dev])?;
        if stat.contains("EXTENTS:") {
            let ex = run("debugfs", &["-R", &format!("ex {path_in_fs}"), dev])?;
            l.parse_extents(&ex)?;
        } else {
            l.parse_stat_blocks(&stat)?;
        }
        l.finish();
        Ok(l)
    }

    fn add(&mut self, first: u64, last: u64, class: &'static str) {
        self.ranges.push((first, last, class));
    }

    fn finish(&mut self) {
        self.ranges.sort();
        // Merge adjacent runs of the same class (the journal's 32768 single blocks).
        let mut merged: Vec<(u64, u64, &'static str)> = Vec::new();
        for r in self.ranges.drain(..) {
            match merged.last_mut() {
                Some(m) if m.2 == r.2 && m.1 + 1 >= r.0 => m.1 = m.1.max(r.1),
                _ => merged.push(r),
            }
        }
        self.ranges = merged;
    }

    /// Parse `dumpe2fs` (header and groups).
    pub fn parse_dumpe2fs(&mut self, text: &str) -> Result<()> {
        self.desc_size_bytes = 32;
        for line in text.lines() {
            let t = line.trim();
            let after = |key: &str| t.strip_prefix(key).map(str::trim);
            if let Some(v) = after("Block size:") {
                self.block_size_bytes = first_number(v).context("Block size")?;
            } else if let Some(v) = after("Blocks per group:") {
                self.blocks_per_group = first_number(v).context("Blocks per group")?;
            } else if let Some(v) = after("First block:") {
                self.first_data_block = first_number(v).context("First block")?;
            } else if let Some(v) = after("Group descriptor size:") {
                self.desc_size_bytes = first_number(v).context("Group descriptor size")?;
            }
            for part in t.split(", ") {
                let p = part.trim();
                let found: Option<(&str, &'static str)> = [
                    ("Primary superblock at ", "superblock"),
                    ("Backup superblock at ", "superblock"),
                    ("Group descriptors at ", "group_descriptor"),
                    ("Reserved GDT blocks at ", "group_descriptor"),
                    ("Block bitmap at ", "block_bitmap"),
                    ("Inode bitmap at ", "inode_bitmap"),
                    ("Inode table at ", "inode_table"),
                ]
                .into_iter()
                .find_map(|(k, c)| p.strip_prefix(k).map(|v| (v, c)));
                if let Some((v, class)) = found {
                    let (a, b) = range(v).with_context(|| format!("dumpe2fs line {line:?}"))?;
                    self.add(a, b, class);
                }
            }
        }
        if self.block_size_bytes == 0 || self.blocks_per_group == 0 {
            bail!("dumpe2fs gave no block size or blocks per group");
        }
        Ok(())
    }

    /// Parse the BLOCKS list of `debugfs stat` of an indirect-mapped file:
    /// `(0-11):4899-4910, (IND):4911, (12-267):4912-5167, (DIND):5168, ...`.
    pub fn parse_stat_blocks(&mut self, text: &str) -> Result<()> {
        let Some(i) = text.find("BLOCKS:") else {
            bail!("debugfs stat printed no BLOCKS");
        };
        let list = &text[i + "BLOCKS:".len()..];
        let list = list.split("TOTAL:").next().unwrap_or("");
        for item in list.split(", ") {
            let item = item.trim();
            if item.is_empty() {
                continue;
            }
            let Some((what, blocks)) = item.split_once("):") else {
                bail!("debugfs BLOCKS item {item:?}");
            };
            let (a, b) = range(blocks).with_context(|| format!("debugfs BLOCKS item {item:?}"))?;
            if what.contains("IND") {
                self.add(a, b, "indirect");
                self.mapping_blocks += b - a + 1;
            } else {
                self.add(a, b, "data");
                self.data_ranges.push((a, b));
            }
        }
        Ok(())
    }

    /// Parse `debugfs ex` of an extent-mapped file: index entries (a single physical block,
    /// the child node) are extent-tree nodes; leaf entries are data ranges.
    pub fn parse_extents(&mut self, text: &str) -> Result<()> {
        let mut nodes = BTreeSet::new();
        for line in text
            .lines()
            .skip_while(|l| !l.trim_start().starts_with("Level"))
            .skip(1)
        {
            // "1/240" when the entry count has three digits: split at '/' too.
            let spaced = line.replace('/', " ");
            let tokens: Vec<&str> = spaced.split_whitespace().collect();
            if tokens.len() < 9 {
                continue;
            }
            // "0/ 1 1/ 1 0 - 4294967295 9271 4294967296" (index) or
            // "1/ 1 1/ 12 0 - 2047 9272 - 11319 2048" (leaf).
            let phys: u64 = tokens[7]
                .parse()
                .with_context(|| format!("debugfs ex line {line:?}"))?;
            if tokens.get(8) == Some(&"-") {
                let end: u64 = tokens[9]
                    .parse()
                    .with_context(|| format!("debugfs ex line {line:?}"))?;
                self.add(phys, end, "data");
                self.data_ranges.push((phys, end));
            } else {
                nodes.insert(phys);
            }
        }
        for n in &nodes {
            self.add(*n, *n, "extent");
        }
        self.mapping_blocks += nodes.len() as u64;
        Ok(())
    }

    /// The class of block `block`.
    pub fn class_of(&self, block: u64) -> &'static str {
        let i = self.ranges.partition_point(|r| r.0 <= block);
        if i > 0 {
            let r = self.ranges[i - 1];
            if block <= r.1 {
                return r.2;
            }
        }
        "other"
    }

    /// Sectors of `trace`'s reads and writes by class.
    pub fn sectors_by_class(&self, trace: &layoutlab_trace::Trace) -> BTreeMap<String, u64> {
        let spb = self.block_size_bytes / 512;
        let mut out: BTreeMap<String, u64> = BTreeMap::new();
        for r in &trace.requests {
            if !matches!(r.op, layoutlab_trace::Op::Read | layoutlab_trace::Op::Write) {
                continue;
            }
            let (first, end) = (r.sector, r.sector + u64::from(r.sectors));
            let mut s = first;
            while s < end {
                let block = s / spb;
                let block_end = (block + 1) * spb;
                let n = block_end.min(end) - s;
                *out.entry(self.class_of(block).to_string()).or_default() += n;
                s += n;
            }
        }
        out
    }

    /// The least a delete of the file must read: its mapping blocks, plus the distinct block
    /// bitmaps and group-descriptor blocks of the groups its data blocks lie in, in sectors.
    pub fn min_sectors_to_free(&self) -> u64 {
        let mut groups = BTreeSet::new();
        for &(a, b) in &self.data_ranges {
            let ga = (a - self.first_data_block.min(a)) / self.blocks_per_group;
            let gb = (b - self.first_data_block.min(b)) / self.blocks_per_group;
            groups.extend(ga..=gb);
        }
        let per_desc_block = (self.block_size_bytes / self.desc_size_bytes.max(1)).max(1);
        let desc_blocks: BTreeSet<u64> = groups.iter().map(|g| g / per_desc_block).collect();
        (self.mapping_blocks + groups.len() as u64 + desc_blocks.len() as u64)
            * (self.block_size_bytes / 512)
    }
}

fn run(program: &str, args: &[&str]) -> Result<String> {
    let out = std::process::Command::new(program)
        .args(args)
        .output()
        .with_context(|| format!("running {program} (Debian package e2fsprogs)"))?;
    if !out.status.success() {
        bail!(
            "{program} {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hand-made ext3 image (1 KiB blocks, so a 300 KB file needs IND and DIND blocks):
    /// the blocks whose class mke2fs and the ext3 format fix are classed so.
    #[test]
    fn classes_of_a_hand_made_ext3_image() {
        let dir = std::env::temp_dir().join(format!("ll-extclass-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let img = dir.join("c.img");
        let data = dir.join("f.bin");
        std::fs::write(&data, vec![7u8; 300_000]).unwrap();
        let f = std::fs::File::create(&img).unwrap();
        f.set_len(64 << 20).unwrap();
        drop(f);
        let i = img.to_str().unwrap();
        run(
            "mke2fs",
            &["-F", "-q", "-t", "ext3", "-b", "1024", "-N", "2048", i],
        )
        .unwrap();
        run(
            "debugfs",
            &["-w", "-R", &format!("write {} big", data.display()), i],
        )
        .unwrap();
        let l = ExtLayout::read(&img, "/big").unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(l.block_size_bytes, 1024);
        assert_eq!(l.first_data_block, 1);
        // With 1 KiB blocks the superblock is block 1 and the descriptors follow it.
        assert_eq!(l.class_of(1), "superblock");
        assert_eq!(l.class_of(2), "group_descriptor");
        assert_eq!(l.class_of(8193), "superblock"); // group 1's backup (sparse_super)
                                                    // 293 data blocks: 12 direct, IND for 256, then DIND -> IND for the last 25.
        assert_eq!(l.mapping_blocks, 3);
        let data_blocks: u64 = l.data_ranges.iter().map(|(a, b)| b - a + 1).sum();
        assert_eq!(data_blocks, 293);
        let classes: BTreeSet<&str> = (0..16384).map(|b| l.class_of(b)).collect();
        for c in [
            "superblock",
            "group_descriptor",
            "block_bitmap",
            "inode_bitmap",
            "inode_table",
            "journal",
            "indirect",
            "directory",
            "data",
            "other",
        ] {
            assert!(classes.contains(c), "no {c} block");
        }
        let indirect = (0..16384).filter(|&b| l.class_of(b) == "indirect").count();
        assert_eq!(indirect, 3);
        // Freeing it must read its 3 mapping blocks, one bitmap and one descriptor block.
        assert_eq!(l.min_sectors_to_free(), (3 + 1 + 1) * 2);
    }

    #[test]
    fn extent_index_entries_are_nodes_and_leaves_are_data() {
        let mut l = ExtLayout {
            block_size_bytes: 4096,
            blocks_per_group: 32768,
            ..ExtLayout::default()
        };
        let text = "Level Entries       Logical      Physical Length Flags
 0/ 1   1/  2     0 - 32767  9271             32768
 1/ 1   1/  2     0 - 16383  10000 - 26383  16384
 1/ 1   2/  2 16384 - 32767  40000 - 56383  16384
 0/ 1   2/  2 32768 - 4294967295  9272        4294934528
 1/ 1   1/240 32768 - 40000  70000 - 77232   7233 Uninit
";
        l.parse_extents(text).unwrap();
        l.finish();
        assert_eq!(l.mapping_blocks, 2);
        assert_eq!(l.class_of(9271), "extent");
        assert_eq!(l.class_of(9272), "extent");
        assert_eq!(l.class_of(10000), "data");
        assert_eq!(l.class_of(30000), "other");
        // Groups 0, 1 and 2 hold data: 2 nodes + 3 bitmaps + 1 descriptor block.
        assert_eq!(l.min_sectors_to_free(), (2 + 3 + 1) * 8);
    }
}
