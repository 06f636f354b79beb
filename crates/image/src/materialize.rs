//! Writing a Plan into a fresh image: every inode, data run, indirect block and directory block
//! exactly where the plan says, all through libext2fs.
//!
//! Two phases. *Check*: the whole plan is validated against the image (inode numbers, block
//! ranges, free bits in the image's bitmaps, the indirect blocks the data runs need, directory
//! capacity) before a byte is written; a rejected plan leaves the image untouched. *Write*:
//! libext2fs places everything; a failure part-way removes the image.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::Path;
use std::time::Instant;

use layoutlab_layout::mapping::{extents_of, level_of, required_mapping, BlockMapGeometry};
use layoutlab_layout::plan::check_kind;
use layoutlab_layout::{InodeKind, MapFormat, MapKind, Plan, PlannedInode, Special};

use crate::error::ImageError;
use crate::ffi::{Fs, RawSuper};

/// How block maps are written (both produce the same image; see docs/image.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapWriter {
    /// One `ext2fs_block_iterate3(BLOCK_FLAG_APPEND)` pass per inode: each indirect block is
    /// read and written once. The default.
    Iterate,
    /// `ext2fs_bmap2(BMAP_SET | BMAP_ALLOC)` per data block with an allocator callback handing
    /// out the plan's mapping blocks. Reads and writes an indirect block per data block.
    Bmap,
}

/// How directory entries are written (both produce the same image, byte for byte; a test
/// holds it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DirWriter {
    /// Each directory's entries placed where successive `ext2fs_link()` calls would put them
    /// (first fit), every directory block read and written once. The default.
    Fill,
    /// One `ext2fs_link()` per entry: it rescans the directory from its first block each time,
    /// quadratic in a directory's size (minutes for ubuntu-32g's large directories).
    Link,
}

/// What `materialize` did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MaterializeStats {
    /// Inodes created (the root, when re-planned, is counted too).
    pub inodes: u64,
    /// Data blocks of regular files.
    pub file_data_blocks: u64,
    /// Directory blocks written.
    pub dir_blocks: u64,
    /// Mapping blocks written: IND/DIND/TIND and extent-tree blocks.
    pub mapping_blocks: u64,
    /// Symlinks made (fast and slow).
    pub symlinks: u64,
    /// Device nodes, fifos and sockets made.
    pub special_inodes: u64,
    /// Hard links (names beyond an inode's first).
    pub hard_links: u64,
    /// Seconds spent checking the plan.
    pub check_seconds: f64,
    /// Seconds spent writing block maps (the part that scales with the data).
    pub block_map_seconds: f64,
    /// Seconds in `ext2fs_close` (bitmaps, descriptors and superblock flushed).
    pub close_seconds: f64,
    /// Seconds in total, close (flush) included.
    pub total_seconds: f64,
}

const ROOT_INO: u32 = 2;
const FEATURE_RO_METADATA_CSUM: u32 = 0x400;
const FEATURE_INCOMPAT_64BIT: u32 = 0x80;
const FEATURE_INCOMPAT_EXTENTS: u32 = 0x40;

/// i_mode of a planned inode (type and the permissions mke2fs/ls would show).
fn mode_of(kind: InodeKind) -> u32 {
    match kind {
        InodeKind::File => 0o100644,
        InodeKind::Dir => 0o040755,
        InodeKind::Symlink => 0o120777,
        InodeKind::CharDev => 0o020644,
        InodeKind::BlockDev => 0o060660,
        InodeKind::Fifo => 0o010644,
        InodeKind::Socket => 0o140755,
    }
}

/// Writes `plan` into the fresh image at `image` with the default [`MapWriter::Iterate`].
pub fn materialize(image: &Path, plan: &Plan) -> Result<MaterializeStats, ImageError> {
    materialize_with(image, plan, MapWriter::Iterate)
}

/// One inode of the plan, checked and flattened for the shim.
struct Checked<'a> {
    inode: &'a PlannedInode,
    /// (logical, physical, len) triples in logical order.
    runs: Vec<u64>,
    /// Block maps: (level, logical, physical) triples sorted by (level, logical).
    /// Extent trees: the extents as (logical, physical, len) triples.
    maps: Vec<u64>,
    /// Physical mapping blocks in the order libext2fs asks for them (ext2fs_bmap2 for block
    /// maps, ext2fs_extent_insert for extent trees).
    alloc_order: Vec<u64>,
}

/// Writes `plan` into the image at `image`, choosing how block maps are written.
pub fn materialize_with(
    image: &Path,
    plan: &Plan,
    writer: MapWriter,
) -> Result<MaterializeStats, ImageError> {
    materialize_with_dirs(image, plan, writer, DirWriter::Fill)
}

/// Writes `plan` into the image at `image`, choosing how block maps and directory entries
/// are written.
pub fn materialize_with_dirs(
    image: &Path,
    plan: &Plan,
    writer: MapWriter,
    dirs: DirWriter,
) -> Result<MaterializeStats, ImageError> {
    let start = Instant::now();
    let fs = Fs::open(image, true)?;
    let sb = fs.super_info();
    // a rejected plan: fs is dropped unclosed, nothing is written back
    let checked = check_plan(image, &fs, &sb, plan)?;
    let check_seconds = start.elapsed().as_secs_f64();
    let mut stats = MaterializeStats {
        check_seconds,
        ..Default::default()
    };
    let written =
        write_plan(&fs, &sb, &checked, &plan.links, (writer, dirs), &mut stats).and_then(|()| {
            let t = Instant::now();
            let closed = fs.close();
            stats.close_seconds = t.elapsed().as_secs_f64();
            closed
        });
    match written {
        Ok(()) => {
            stats.total_seconds = start.elapsed().as_secs_f64();
            Ok(stats)
        }
        Err(cause) => {
            let _ = std::fs::remove_file(image);
            Err(ImageError::WriteFailed {
                path: image.to_path_buf(),
                cause: Box::new(cause),
            })
        }
    }
}

fn reject(image: &Path, ino: u32, reason: String) -> ImageError {
    ImageError::BadPlan {
        path: image.to_path_buf(),
        ino,
        reason,
    }
}

fn kind_name(kind: MapKind) -> &'static str {
    match kind {
        MapKind::Ind => "IND",
        MapKind::Dind => "DIND",
        MapKind::Tind => "TIND",
        MapKind::Extent { .. } => "extent-tree",
    }
}

/// Bytes a directory entry with a `name_len`-byte name takes (EXT2_DIR_REC_LEN).
fn dirent_bytes(name_len: usize) -> u64 {
    ((8 + name_len + 3) & !3) as u64
}

/// Files `name`, an entry the plan puts in directory `parent` (inode names and hard links
/// alike), among the entries checked so far: `names` by directory, and `dir_names` their
/// lengths for the overflow check. A name ext2 cannot hold, or one the directory (or, for the
/// root, the image's own root) already has, is refused, calling it `what`.
fn file_entry<'a>(
    names: &mut HashMap<u32, HashSet<&'a str>>,
    dir_names: &mut HashMap<u32, Vec<usize>>,
    root_existing_names: &HashSet<String>,
    parent: u32,
    name: &'a str,
    what: &str,
) -> Result<(), String> {
    if name.is_empty()
        || name.len() > 255
        || name.contains('/')
        || name.contains('\0')
        || name == "."
        || name == ".."
    {
        return Err(format!("invalid {what} {name:?}"));
    }
    let clash = !names.entry(parent).or_default().insert(name)
        || (parent == ROOT_INO && root_existing_names.contains(name));
    if clash {
        return Err(format!(
            "{what} {name:?} is used twice in directory {parent}"
        ));
    }
    dir_names.entry(parent).or_default().push(name.len());
    Ok(())
}

/// First-fit placement of entries into directory blocks, as ext2fs_link does it.
/// Returns the index of the first entry that does not fit.
fn dir_overflow(blocks: u64, block_bytes: u64, tail_bytes: u64, names: &[usize]) -> Option<usize> {
    let usable = block_bytes - tail_bytes;
    let mut free: Vec<u64> = (0..blocks).map(|_| usable).collect();
    if let Some(first) = free.first_mut() {
        *first = first.saturating_sub(dirent_bytes(1) + dirent_bytes(2));
    }
    for (i, &len) in names.iter().enumerate() {
        let need = dirent_bytes(len);
        match free.iter_mut().find(|f| **f >= need) {
            Some(f) => *f -= need,
            None => return Some(i),
        }
    }
    None
}

fn check_plan<'a>(
    image: &Path,
    fs: &Fs,
    sb: &RawSuper,
    plan: &'a Plan,
) -> Result<Vec<Checked<'a>>, ImageError> {
    let geo = BlockMapGeometry::new(sb.block_size as u64);
    let blocks_count = sb.blocks_count;
    // block-mapped files hold 32-bit block numbers
    let addressable = if sb.feature_incompat & FEATURE_INCOMPAT_64BIT != 0 {
        blocks_count.min(1 << 32)
    } else {
        blocks_count
    };
    let mut seen_ino: HashMap<u32, usize> = HashMap::new();
    let mut range_owner: Vec<(u64, u64, u32)> = Vec::new();
    let mut names: HashMap<u32, HashSet<&str>> = HashMap::new();
    let mut dir_names: HashMap<u32, Vec<usize>> = HashMap::new();
    let mut out = Vec::with_capacity(plan.inodes.len());

    // blocks the current root holds are free for a re-planned root
    let replans_root = plan.inodes.iter().any(|i| i.ino == ROOT_INO);
    let mut root_blocks: HashSet<u64> = HashSet::new();
    let mut root_entries: Vec<(String, u32)> = Vec::new();
    for (name, ino) in fs.walk_dir(ROOT_INO)? {
        if name != b"." && name != b".." {
            let name = String::from_utf8_lossy(&name).into_owned();
            root_entries.push((name, ino));
        }
    }
    if replans_root {
        fs.walk_blocks(ROOT_INO, &mut |_, phys, _, _| {
            if phys != 0 {
                root_blocks.insert(phys);
            }
        })?;
    }
    for (name, _) in &root_entries {
        names.entry(ROOT_INO).or_default();
        dir_names.entry(ROOT_INO).or_default().push(name.len());
    }
    let root_existing_names: HashSet<String> = root_entries.iter().map(|e| e.0.clone()).collect();

    for (index, node) in plan.inodes.iter().enumerate() {
        let ino = node.ino;
        let bad = |reason: String| reject(image, ino, reason);
        if let Some(prev) = seen_ino.insert(ino, index) {
            return Err(bad(format!(
                "duplicate inode number (entries {prev} and {index} of the plan)"
            )));
        }
        if ino == 0 || ino > sb.inodes_count {
            return Err(bad(format!(
                "inode number outside 1..={} of this file system",
                sb.inodes_count
            )));
        }
        let has_extents = sb.feature_incompat & FEATURE_INCOMPAT_EXTENTS != 0;
        if node.format == MapFormat::Extents && !has_extents {
            return Err(bad(
                "extent-mapped, but the image has no extent feature (make it with -t ext4 or -O extent)".into(),
            ));
        }
        if node.kind == InodeKind::Symlink {
            let slow = node.data_blocks() > 0;
            let want = if slow && has_extents {
                MapFormat::Extents
            } else {
                MapFormat::Blocks
            };
            if node.format != want {
                return Err(bad(format!(
                    "a {} symlink on this image is mapped by {want:?} (as ext2fs_symlink and the kernel make it), not {:?}",
                    if slow { "slow" } else { "fast" },
                    node.format
                )));
            }
        }
        if !matches!(node.kind, InodeKind::File | InodeKind::Dir) {
            if node.format == MapFormat::Extents && node.kind != InodeKind::Symlink {
                return Err(bad(format!("a {} has no block map", node.kind.name())));
            }
            check_kind(node, node.data_blocks(), sb.block_size as u64).map_err(&bad)?;
        }
        if ino == ROOT_INO {
            if node.kind != InodeKind::Dir || node.parent != ROOT_INO || !node.name.is_empty() {
                return Err(bad(
                    "the root (inode 2) must be a directory with parent 2 and an empty name".into(),
                ));
            }
        } else {
            if ino < sb.first_ino {
                return Err(bad(format!(
                    "inodes below {} are reserved (journal, resize, ...)",
                    sb.first_ino
                )));
            }
            if fs.inode_in_use(ino) {
                return Err(bad(
                    "inode is already in use in the image's inode bitmap".into()
                ));
            }
            let parent = plan_parent_ok(plan, &seen_ino, node);
            if let Err(reason) = parent {
                return Err(bad(reason));
            }
            file_entry(
                &mut names,
                &mut dir_names,
                &root_existing_names,
                node.parent,
                &node.name,
                "name",
            )
            .map_err(&bad)?;
        }

        // data runs: in logical order, not overlapping, addressable, inside the fs
        let mut runs = Vec::with_capacity(node.data.len() * 3);
        let mut next_logical = 0u64;
        for run in &node.data {
            if run.len == 0 {
                return Err(bad(format!("empty data run at logical {}", run.logical)));
            }
            if run.logical < next_logical {
                return Err(bad(format!(
                    "data run at logical {} overlaps or is out of logical order",
                    run.logical
                )));
            }
            if node.kind == InodeKind::Dir && run.logical != next_logical {
                return Err(bad(format!(
                    "directory has a hole before logical block {}",
                    run.logical
                )));
            }
            if node.format == MapFormat::Blocks && run.logical + run.len > geo.max_logical_blocks()
            {
                return Err(bad(format!(
                    "logical block {} is beyond what IND/DIND/TIND can map ({} blocks)",
                    run.logical + run.len - 1,
                    geo.max_logical_blocks()
                )));
            }
            if run.physical < sb.first_data_block || run.physical + run.len > addressable {
                return Err(bad(format!(
                    "data blocks {}..{} are outside the file system's blocks {}..{}",
                    run.physical,
                    run.physical + run.len,
                    sb.first_data_block,
                    addressable
                )));
            }
            next_logical = run.logical + run.len;
            runs.extend_from_slice(&[run.logical, run.physical, run.len]);
            range_owner.push((run.physical, run.len, ino));
        }
        let data_blocks = node.data_blocks();
        let block_bytes = sb.block_size as u64;
        match node.kind {
            InodeKind::Dir => {
                if data_blocks == 0 {
                    return Err(bad("a directory needs at least one block".into()));
                }
                if node.size_bytes != data_blocks * block_bytes {
                    return Err(bad(format!(
                        "directory size {} bytes must be its {} blocks x {} bytes",
                        node.size_bytes, data_blocks, block_bytes
                    )));
                }
            }
            InodeKind::File | InodeKind::Symlink => {
                let size_blocks = node.size_bytes.div_ceil(block_bytes);
                if next_logical > size_blocks {
                    return Err(bad(format!(
                        "data block at logical {} lies past i_size {} bytes",
                        next_logical - 1,
                        node.size_bytes
                    )));
                }
            }
            _ => {}
        }

        // mapping blocks: exactly the ones the data runs need, each inside the fs
        let needed_in_order =
            required_mapping(node.format, &node.data, block_bytes).map_err(&bad)?;
        let needed: BTreeSet<(MapKind, u64)> = needed_in_order.iter().copied().collect();
        let mut planned: BTreeSet<(MapKind, u64)> = BTreeSet::new();
        let mut physical_of: HashMap<(MapKind, u64), u64> = HashMap::new();
        let mut maps = Vec::with_capacity(node.mapping.len() * 3);
        let mut by_key: Vec<(u8, u64, u64)> = Vec::with_capacity(node.mapping.len());
        for m in &node.mapping {
            let level = level_of(m.kind);
            physical_of.insert((m.kind, m.logical), m.physical);
            if !planned.insert((m.kind, m.logical)) {
                return Err(bad(format!(
                    "{} block for logical {} is planned twice",
                    kind_name(m.kind),
                    m.logical
                )));
            }
            if m.physical < sb.first_data_block || m.physical >= addressable {
                return Err(bad(format!(
                    "{} block {} is outside the file system's blocks {}..{}",
                    kind_name(m.kind),
                    m.physical,
                    sb.first_data_block,
                    addressable
                )));
            }
            range_owner.push((m.physical, 1, ino));
            by_key.push((level, m.logical, m.physical));
        }
        if let Some(&(kind, logical)) = needed.difference(&planned).next() {
            return Err(bad(format!(
                "data needs a {} block mapping logical {logical}, the plan has none",
                kind_name(kind)
            )));
        }
        if let Some(&(kind, logical)) = planned.difference(&needed).next() {
            return Err(bad(format!(
                "the plan's {} block at logical {logical} maps no data block",
                kind_name(kind)
            )));
        }
        let alloc_order = match node.format {
            MapFormat::Blocks => {
                by_key.sort_unstable();
                for &(level, logical, physical) in &by_key {
                    maps.extend_from_slice(&[level as u64, logical, physical]);
                }
                // ext2fs_bmap2 asks for mapping blocks top-down as the logical position grows
                let mut order = by_key.clone();
                order.sort_unstable_by_key(|&(level, logical, _)| {
                    (logical, std::cmp::Reverse(level))
                });
                order.iter().map(|e| e.2).collect()
            }
            MapFormat::Extents => {
                for e in extents_of(&node.data) {
                    maps.extend_from_slice(&[e.logical, e.physical, e.len]);
                }
                // ext2fs_extent_insert asks for tree blocks in the order the mapping module
                // predicts
                needed_in_order.iter().map(|key| physical_of[key]).collect()
            }
        };
        out.push(Checked {
            inode: node,
            runs,
            maps,
            alloc_order,
        });
    }

    // every planned block used once and free in the image (the old root's blocks excepted)
    range_owner.sort_unstable();
    let mut prev_end = 0u64;
    let mut prev_ino = 0u32;
    for &(first, len, ino) in &range_owner {
        if first < prev_end {
            return Err(reject(
                image,
                ino,
                format!("block {first} is planned for inode {prev_ino} too"),
            ));
        }
        prev_end = first + len;
        prev_ino = ino;
        let mut from = first;
        while let Some(blk) = fs.find_used(from, first + len - from)? {
            if !root_blocks.contains(&blk) {
                return Err(reject(
                    image,
                    ino,
                    format!("block {blk} is already in use in the image's block bitmap"),
                ));
            }
            from = blk + 1;
            if from >= first + len {
                break;
            }
        }
    }

    // hard links: an existing non-directory, a new name in a planned (or the image's root)
    // directory
    for link in &plan.links {
        let bad = |reason: String| reject(image, link.ino, reason);
        match seen_ino.get(&link.ino) {
            Some(&i) if plan.inodes[i].kind != InodeKind::Dir => {}
            Some(_) => return Err(bad(format!("hard link {:?} names a directory", link.name))),
            None => {
                return Err(bad(format!(
                    "hard link {:?} names an inode the plan does not make",
                    link.name
                )))
            }
        }
        if link.parent != ROOT_INO
            && !matches!(seen_ino.get(&link.parent), Some(&i) if plan.inodes[i].kind == InodeKind::Dir)
        {
            return Err(bad(format!(
                "hard link {:?}: parent {} is not a planned directory",
                link.name, link.parent
            )));
        }
        file_entry(
            &mut names,
            &mut dir_names,
            &root_existing_names,
            link.parent,
            &link.name,
            "hard link name",
        )
        .map_err(&bad)?;
    }

    // every directory can hold its entries (ext2fs_link does not grow directories)
    let tail = if sb.feature_ro_compat & FEATURE_RO_METADATA_CSUM != 0 {
        12
    } else {
        0
    };
    for (&dir, lens) in &dir_names {
        let blocks = match seen_ino.get(&dir) {
            Some(&i) => plan.inodes[i].data_blocks(),
            None => {
                let info = fs.read_inode(dir)?;
                info.size_bytes / sb.block_size as u64
            }
        };
        if let Some(i) = dir_overflow(blocks, sb.block_size as u64, tail, lens) {
            let what = if dir == ROOT_INO && !replans_root {
                "the image's root directory (plan inode 2 to give it more blocks)".to_string()
            } else {
                format!("its {blocks} planned block(s)")
            };
            return Err(reject(
                image,
                dir,
                format!(
                    "directory entry {} of {} does not fit in {what}",
                    i + 1,
                    lens.len()
                ),
            ));
        }
    }
    Ok(out)
}

/// The parent must be the root or a directory planned earlier.
fn plan_parent_ok(
    plan: &Plan,
    seen: &HashMap<u32, usize>,
    node: &PlannedInode,
) -> Result<(), String> {
    if node.parent == ROOT_INO {
        return Ok(());
    }
    match seen.get(&node.parent) {
        Some(&i) if plan.inodes[i].kind == InodeKind::Dir => Ok(()),
        Some(_) => Err(format!("parent {} is not a directory", node.parent)),
        None => Err(format!(
            "parent {} is not a directory planned before this inode",
            node.parent
        )),
    }
}

fn write_plan(
    fs: &Fs,
    sb: &RawSuper,
    checked: &[Checked<'_>],
    links: &[layoutlab_layout::HardLink],
    (writer, dirs): (MapWriter, DirWriter),
    stats: &mut MaterializeStats,
) -> Result<(), ImageError> {
    let timestamp = sb.mkfs_time;
    let mut extra_links: HashMap<u32, i32> = HashMap::new();
    let mut map_time = 0.0;

    // a re-planned root gives back its blocks and keeps its entries
    let mut root_entries: Vec<(String, u32, bool)> = Vec::new();
    if checked.iter().any(|c| c.inode.ino == ROOT_INO) {
        for (name, ino) in fs.walk_dir(ROOT_INO)? {
            if name != b"." && name != b".." {
                let is_dir = fs.read_inode(ino)?.mode & 0xF000 == 0x4000;
                root_entries.push((String::from_utf8_lossy(&name).into_owned(), ino, is_dir));
            }
        }
        let mut old = Vec::new();
        fs.walk_blocks(ROOT_INO, &mut |_, phys, _, _| {
            if phys != 0 {
                old.push(phys);
            }
        })?;
        for blk in old {
            fs.mark_blocks(blk, 1, false);
        }
    }

    for c in checked {
        let node = c.inode;
        let is_dir = node.kind == InodeKind::Dir;
        stats.inodes += 1;
        match (&node.kind, &node.special) {
            (InodeKind::Symlink, Special::Symlink { target }) => {
                // ext2fs_symlink() writes it all and counts its block
                let blk = node.data.first().map(|r| r.physical);
                fs.symlink(node.ino, target, blk, timestamp)?;
                stats.symlinks += 1;
                continue;
            }
            (InodeKind::File | InodeKind::Dir, _) => {}
            (kind, special) => {
                let rdev = match special {
                    Special::Device { major, minor } => (*major, *minor),
                    _ => (0, 0),
                };
                fs.create_inode(node.ino, mode_of(*kind), rdev, timestamp)?;
                stats.special_inodes += 1;
                continue;
            }
        }
        if node.ino == ROOT_INO {
            // a fresh map (its old blocks were given back); mode, links and times stay
            fs.clear_block_map(ROOT_INO)?;
        } else {
            fs.create_inode(node.ino, mode_of(node.kind), (0, 0), timestamp)?;
        }
        for run in &node.data {
            fs.mark_blocks(run.physical, run.len, true);
        }
        if is_dir {
            let mut first = true;
            for run in &node.data {
                for blk in run.physical..run.physical + run.len {
                    let (dot, dotdot) = if first {
                        (node.ino, node.parent)
                    } else {
                        (0, 0)
                    };
                    fs.write_dir_block(blk, dot, dotdot, node.ino)?;
                    first = false;
                }
            }
            stats.dir_blocks += node.data_blocks();
            if node.ino != ROOT_INO {
                *extra_links.entry(node.parent).or_default() += 1;
            }
        } else {
            stats.file_data_blocks += node.data_blocks();
        }
        let t = Instant::now();
        let placed = match (node.format, writer) {
            (MapFormat::Extents, _) => fs.set_extents(node.ino, &c.maps, &c.alloc_order)?,
            (MapFormat::Blocks, MapWriter::Iterate) => {
                fs.set_block_map_iterate(node.ino, &c.runs, &c.maps)?
            }
            (MapFormat::Blocks, MapWriter::Bmap) => {
                fs.set_block_map_bmap(node.ino, &c.runs, &c.alloc_order)?
            }
        };
        map_time += t.elapsed().as_secs_f64();
        if placed != node.mapping.len() as u64 {
            return Err(ImageError::Invalid {
                path: std::path::PathBuf::from(format!("inode {}", node.ino)),
                reason: format!(
                    "libext2fs placed {placed} mapping blocks, the plan has {}",
                    node.mapping.len()
                ),
            });
        }
        stats.mapping_blocks += placed;
        fs.finish_inode(
            node.ino,
            node.size_bytes,
            node.data_blocks() + node.mapping.len() as u64,
            0,
        )?;
    }

    // Every entry in the order ext2fs_link would be called: the root's own entries, then each
    // inode's name in plan order, then the hard links.
    let entries: Vec<(u32, &str, u32)> = root_entries
        .iter()
        .map(|(name, ino, _)| (ROOT_INO, name.as_str(), *ino))
        .chain(
            checked
                .iter()
                .filter(|c| c.inode.ino != ROOT_INO)
                .map(|c| (c.inode.parent, c.inode.name.as_str(), c.inode.ino)),
        )
        .chain(links.iter().map(|l| (l.parent, l.name.as_str(), l.ino)))
        .collect();
    match dirs {
        DirWriter::Link => {
            for (dir, name, ino) in &entries {
                fs.link(*dir, name, *ino)?;
            }
        }
        DirWriter::Fill => {
            // One directory's entries keep their order; directories do not interact.
            let mut by_dir: HashMap<u32, Vec<(&str, u32)>> = HashMap::new();
            let mut order: Vec<u32> = Vec::new();
            for (dir, name, ino) in &entries {
                by_dir
                    .entry(*dir)
                    .or_insert_with(|| {
                        order.push(*dir);
                        Vec::new()
                    })
                    .push((name, *ino));
            }
            let planned: HashMap<u32, &PlannedInode> =
                checked.iter().map(|c| (c.inode.ino, c.inode)).collect();
            for dir in order {
                let blocks: Vec<u64> = match planned.get(&dir) {
                    Some(node) => node
                        .data
                        .iter()
                        .flat_map(|r| r.physical..r.physical + r.len)
                        .collect(),
                    None => {
                        // mke2fs's root, not re-planned: its blocks as they are
                        let mut blocks = Vec::new();
                        fs.walk_blocks(dir, &mut |cnt, phys, _, _| {
                            if cnt >= 0 && phys != 0 {
                                blocks.push(phys);
                            }
                        })?;
                        blocks
                    }
                };
                fs.dir_fill(dir, &blocks, &by_dir[&dir])?;
            }
        }
    }
    let mut hard: HashMap<u32, i32> = HashMap::new();
    for link in links {
        *hard.entry(link.ino).or_default() += 1;
        stats.hard_links += 1;
    }
    let mut counts: Vec<_> = extra_links.into_iter().chain(hard).collect();
    counts.sort_unstable();
    for (ino, add) in counts {
        fs.add_links(ino, add)?;
    }
    stats.block_map_seconds = map_time;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dirent_sizes_follow_ext2_rec_len() {
        assert_eq!(dirent_bytes(1), 12);
        assert_eq!(dirent_bytes(2), 12);
        assert_eq!(dirent_bytes(4), 12);
        assert_eq!(dirent_bytes(5), 16);
        assert_eq!(dirent_bytes(255), 264);
    }

    #[test]
    fn first_fit_matches_link() {
        // 4096-byte block: 24 bytes of "." and "..", then 16-byte entries
        let names = vec![5usize; 254];
        assert_eq!(dir_overflow(1, 4096, 0, &names), None);
        let names = vec![5usize; 255];
        assert_eq!(dir_overflow(1, 4096, 0, &names), Some(254));
        assert_eq!(dir_overflow(2, 4096, 0, &names), None);
    }
}
