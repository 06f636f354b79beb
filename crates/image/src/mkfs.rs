//! A fresh image: free-space check, sparse file, the real mke2fs, and an optional journal placed
//! at a goal block through libext2fs.

use std::fs::OpenOptions;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::ImageError;
use crate::ffi::Fs;

/// What `mkfs` produced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MkfsReport {
    /// The image's size (apparent bytes).
    pub apparent_bytes: u64,
    /// Bytes actually allocated on the host (`du`), i.e. what mke2fs wrote.
    pub allocated_bytes: u64,
    /// The estimate the free-space check used.
    pub estimated_bytes: u64,
}

/// Value of a short option given either as `-x V` or `-xV`.
fn option_value<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == flag {
            return it.next().map(|s| s.as_str());
        }
        if let Some(v) = a.strip_prefix(flag) {
            if !v.is_empty() {
                return Some(v);
            }
        }
    }
    None
}

/// mke2fs's default journal size in blocks for a file system of `blocks` blocks
/// (ext2fs_default_journal_size() of e2fsprogs 1.47, lib/ext2fs/mkjournal.c): layout's table,
/// which owns mkfs geometry; 0 where mke2fs makes no journal.
pub fn default_journal_blocks(blocks: u64) -> u64 {
    layoutlab_layout::geometry::default_journal_blocks_147(blocks).unwrap_or(0)
}

/// What zeroing a range of an image file does on the host file system that holds it, which
/// decides whether the blocks mke2fs and libext2fs zero (inode tables, the journal) take host
/// space. libext2fs zeroes through io_channel_zeroout (e2fsprogs 1.47, lib/ext2fs/unix_io.c
/// `__unix_zeroout`, called by ext2fs_zero_blocks2 in mkjournal.c): on a regular file it tries
/// `FALLOC_FL_ZERO_RANGE` first, then `FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE`, and writes
/// zeros only when both fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostZeroing {
    /// `ZERO_RANGE` works (ext4, XFS): the zeroed range stays allocated as unwritten extents,
    /// so `du` counts it though nothing was written.
    Allocates,
    /// Only hole punching works (tmpfs, which refuses `ZERO_RANGE`): zeroed ranges become
    /// holes and take nothing.
    Punches,
    /// Neither: libext2fs writes the zeros out.
    Writes,
}

impl HostZeroing {
    /// Probes the file `fd` (at least 8 KiB long, its first 4 KiB a hole) the way libext2fs's
    /// zeroout would go, and leaves that first 4 KiB a hole again.
    fn probe(fd: std::os::unix::io::RawFd) -> Self {
        // SAFETY: valid fd; zeroing then punching the first 4 KiB of a hole leaves a hole.
        let zero_range = unsafe { libc::fallocate(fd, libc::FALLOC_FL_ZERO_RANGE, 0, 4096) } == 0;
        let punch = unsafe {
            libc::fallocate(
                fd,
                libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                0,
                4096,
            )
        } == 0;
        match (zero_range, punch) {
            (true, _) => HostZeroing::Allocates,
            (false, true) => HostZeroing::Punches,
            (false, false) => HostZeroing::Writes,
        }
    }

    /// Probes the file system of the directory `dir` with a throw-away sparse file (nothing is
    /// written to it; it is removed).
    pub fn of_dir(dir: &Path) -> Result<Self, ImageError> {
        // One name per call: the fsck operation plans its policies' images on several threads
        // of one process, and each probes the work directory (a per-process name collided:
        // EEXIST in a CI run).
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = dir.join(format!(
            ".layoutlab-zeroing-probe-{}-{n}",
            std::process::id()
        ));
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| ImageError::io(&path, e))?;
        let probed = file
            .set_len(8192)
            .map(|_| Self::probe(file.as_raw_fd()))
            .map_err(|e| ImageError::io(&path, e));
        drop(file);
        let _ = std::fs::remove_file(&path);
        probed
    }

    /// Whether the host can punch holes (mke2fs's discard of an image file punches it).
    fn can_punch(self) -> bool {
        self != HostZeroing::Writes
    }
}

/// Upper bound of the host bytes a sparse image made with `args` holds after mke2fs (`du`),
/// and how it was reckoned.
///
/// The inode tables and the journal are zeroed through libext2fs's zeroout ([`HostZeroing`]),
/// so they take space only where the host allocates zeroed ranges or cannot punch holes; the
/// tables are not zeroed at all when `-E assume_storage_prezeroed=1` says so, or when mke2fs
/// discards the file first (no `-E nodiscard`, a host that punches: e2fsprogs 1.47
/// misc/mke2fs.c PRS() then sets lazy_itable_init and itable_zeroed). On tmpfs a 10 TB ext3
/// (156 GB of tables) holds about 0.6 GB after mke2fs; on ext4 it holds the 156 GB.
fn estimate_written_bytes(bytes: u64, args: &[String], zeroing: HostZeroing) -> (u64, String) {
    let block_size: u64 = option_value(args, "-b")
        .and_then(|v| v.parse().ok())
        .unwrap_or(4096);
    let inode_size: u64 = option_value(args, "-I")
        .and_then(|v| v.parse().ok())
        .unwrap_or(256);
    let inode_ratio: u64 = option_value(args, "-i")
        .and_then(|v| v.parse().ok())
        .unwrap_or(16_384)
        .max(1024);
    let blocks = bytes / block_size;
    let groups = blocks.div_ceil(8 * block_size).max(1);
    let no_journal = args.iter().any(|a| a.contains("^has_journal"))
        || option_value(args, "-t").is_some_and(|t| t == "ext2") && !args.iter().any(|a| a == "-j");
    let journal_size_bytes = if no_journal {
        0
    } else if let Some(mb) = option_value(args, "-J")
        .and_then(|j| j.split(',').find_map(|kv| kv.strip_prefix("size=")))
        .and_then(|v| v.parse::<u64>().ok())
    {
        mb << 20
    } else {
        default_journal_blocks(blocks) * block_size
    };
    // bitmaps and a group-descriptor/superblock copy per group, generously; and the primary
    // copy's reserved GDT blocks, which mke2fs writes (the backups stay holes): at most one
    // block of addresses (misc/mke2fs.c calc_reserved_gdt_blocks caps them at that)
    let reserved_gdt_bytes = if args.iter().any(|a| a.contains("^resize_inode")) {
        0
    } else {
        block_size / 4 * block_size
    };
    let per_group_bytes = groups * 4 * block_size + reserved_gdt_bytes;
    let nodiscard = args.iter().any(|a| a.contains("nodiscard"));
    let prezeroed = args
        .iter()
        .any(|a| a.contains("assume_storage_prezeroed=1"));
    let (tables_take_space, why) = if prezeroed {
        (false, "not zeroed: -E assume_storage_prezeroed=1")
    } else if !nodiscard && zeroing.can_punch() {
        (false, "not zeroed: mke2fs discards the file first")
    } else {
        match zeroing {
            HostZeroing::Punches => (false, "zeroed as holes: the host punches, no ZERO_RANGE"),
            HostZeroing::Allocates => (true, "zeroed as allocated ranges: the host has ZERO_RANGE"),
            HostZeroing::Writes => (true, "written: the host neither zeroes nor punches"),
        }
    };
    // The journal is zeroed through zeroout too (only its superblock is written where that
    // punches holes). `assume_storage_prezeroed=1` also sets EXT2_MKJOURNAL_LAZYINIT
    // (misc/mke2fs.c PRS(), e2fsprogs 1.47), which spares an extent-mapped journal only:
    // ext2fs_fallocate() zeroes every block it maps into a block-mapped file whatever the
    // flags (lib/ext2fs/fallocate.c, the loop "the slow way"), so ext3's journal is zeroed.
    let extent_journal = option_value(args, "-O")
        .is_some_and(|features| features.split(',').any(|f| f == "extent" || f == "extents"));
    let journal_zeroed = !(prezeroed && extent_journal);
    let journal_bytes = if !journal_zeroed || zeroing == HostZeroing::Punches {
        journal_size_bytes.min(block_size)
    } else {
        journal_size_bytes
    };
    let table_bytes = if tables_take_space {
        bytes / inode_ratio * inode_size
    } else {
        0
    };
    let margin = 1 << 20;
    let total = journal_bytes + per_group_bytes + table_bytes + margin;
    let detail = format!(
        "journal {journal_bytes} + per-group metadata and reserved GDT {per_group_bytes} + inode tables \
         {table_bytes} ({why}) + margin {margin}"
    );
    (total, detail)
}

/// The host bytes (`du`) a fresh sparse image of `bytes` made in `dir` with `mke2fs_args`
/// would hold after mke2fs, at most, and how it was reckoned: what [`mkfs`]'s free-space check
/// asks, for a caller that checks several images before making any. Probes `dir`'s file
/// system ([`HostZeroing::of_dir`]); writes nothing.
pub fn estimate_mkfs_bytes(
    dir: &Path,
    bytes: u64,
    mke2fs_args: &[String],
) -> Result<(u64, String), ImageError> {
    Ok(estimate_written_bytes(
        bytes,
        mke2fs_args,
        HostZeroing::of_dir(dir)?,
    ))
}

/// Host bytes writing `plan` into its fresh image adds, at most: libext2fs writes every
/// directory block, slow symlink block and mapping block (indirect or extent-tree) of the plan,
/// and each inode-table block that holds one of its inodes; regular files' data stay holes
/// (materialize never writes file data). Add [`estimate_mkfs_bytes`] for the whole image.
pub fn plan_written_bytes(
    plan: &layoutlab_layout::Plan,
    geometry: &layoutlab_layout::Geometry,
) -> u64 {
    let bs = u64::from(geometry.block_size_bytes);
    let ipg = u64::from(geometry.inodes_per_group.max(1));
    let inode_bytes = (geometry.inode_table_blocks * bs / ipg).max(1);
    let mut table_blocks: Vec<(u64, u64)> = plan
        .inodes
        .iter()
        .map(|i| {
            let index = u64::from(i.ino.max(1)) - 1;
            (index / ipg, (index % ipg) * inode_bytes / bs)
        })
        .collect();
    table_blocks.sort_unstable();
    table_blocks.dedup();
    let written_data: u64 = plan
        .inodes
        .iter()
        .filter(|i| i.kind != layoutlab_layout::InodeKind::File)
        .map(|i| i.data_blocks())
        .sum();
    (table_blocks.len() as u64 + written_data + plan.mapping_blocks()) * bs
}

/// Bytes available to an unprivileged writer in `dir`.
pub(crate) fn free_bytes(dir: &Path) -> Result<u64, ImageError> {
    let c = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()).map_err(|_| {
        ImageError::Invalid {
            path: dir.to_path_buf(),
            reason: "path contains a NUL byte".into(),
        }
    })?;
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: valid C string and out pointer.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return Err(ImageError::io(dir, std::io::Error::last_os_error()));
    }
    Ok(st.f_bavail as u64 * st.f_frsize as u64)
}

fn parent_dir(image: &Path) -> PathBuf {
    match image.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Host bytes allocated to a file (`du`).
pub fn allocated_bytes(path: &Path) -> Result<u64, ImageError> {
    use std::os::unix::fs::MetadataExt;
    let md = std::fs::metadata(path).map_err(|e| ImageError::io(path, e))?;
    Ok(md.blocks() * 512)
}

/// `args` with `option` added to mke2fs's extended options (`-E`), unless there already
/// (mke2fs keeps only the last `-E` it is given, so a second one would drop the first).
fn add_extended(args: &mut Vec<String>, option: &str) {
    match args.iter().position(|a| a == "-E") {
        Some(i) if i + 1 < args.len() => {
            if !args[i + 1].split(',').any(|o| o == option) {
                args[i + 1] = format!("{},{option}", args[i + 1]);
            }
        }
        _ => args.extend(["-E".to_string(), option.to_string()]),
    }
}

/// The mke2fs options [`mkfs_profile`] runs with for `profile` at `bytes`: the profile's own
/// plus `-E assume_storage_prezeroed=1`. mke2fs always runs on a file [`mkfs`] has just made
/// (every block a hole, read as zeros), so zeroing the inode tables and an extent-mapped
/// journal would change none of its bytes; on a host with `ZERO_RANGE` (the disk's ext4) it
/// would allocate them (31 GB of ext3-2007 tables at random-read's scale 1) and take minutes.
/// What the option changes besides is the groups' ITABLE_ZEROED flag, which [`mkfs_profile`]
/// puts back (tests/prezeroed_same_bytes.rs holds the two images equal byte for byte).
pub fn profile_mke2fs_args(profile: &layoutlab_layout::MkfsProfile, bytes: u64) -> Vec<String> {
    let mut args = profile.mke2fs_args(bytes);
    add_extended(&mut args, "assume_storage_prezeroed=1");
    args
}

/// [`estimate_mkfs_bytes`] of the image [`mkfs_profile`] makes of `profile` at `bytes` in
/// `dir` (with [`profile_mke2fs_args`]).
pub fn estimate_profile_bytes(
    dir: &Path,
    bytes: u64,
    profile: &layoutlab_layout::MkfsProfile,
) -> Result<(u64, String), ImageError> {
    estimate_mkfs_bytes(dir, bytes, &profile_mke2fs_args(profile, bytes))
}

/// Makes a fresh sparse image of `bytes` bytes with the real `mke2fs -F -q <mke2fs_args>`.
///
/// Refuses to overwrite an existing file. Checks free space before writing anything; removes
/// the file if mke2fs fails.
pub fn mkfs(image: &Path, bytes: u64, mke2fs_args: &[String]) -> Result<MkfsReport, ImageError> {
    mkfs_checked(image, bytes, mke2fs_args, mke2fs_args)
}

/// [`mkfs`] whose free-space check reckons with `estimate_args`: the options of the whole file
/// system when a step after mke2fs adds part of it (the journal [`mkfs_profile`] places).
fn mkfs_checked(
    image: &Path,
    bytes: u64,
    mke2fs_args: &[String],
    estimate_args: &[String],
) -> Result<MkfsReport, ImageError> {
    if image.exists() {
        return Err(ImageError::Invalid {
            path: image.to_path_buf(),
            reason: "already exists; remove it first (mkfs never overwrites a file)".into(),
        });
    }
    if bytes < (1 << 20) {
        return Err(ImageError::Invalid {
            path: image.to_path_buf(),
            reason: format!("image size {bytes} bytes is below mke2fs's useful minimum (1 MiB)"),
        });
    }
    let dir = parent_dir(image);
    let free = free_bytes(&dir)?;
    // even the best case (holes punched) must fit before we create anything
    let (best, best_detail) = estimate_written_bytes(bytes, estimate_args, HostZeroing::Punches);
    if free < best {
        return Err(ImageError::NoSpace {
            dir,
            need_bytes: best,
            free_bytes: free,
            detail: best_detail,
        });
    }
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(image)
        .map_err(|e| ImageError::io(image, e))?;
    let cleanup = |e: ImageError| {
        let _ = std::fs::remove_file(image);
        e
    };
    file.set_len(bytes)
        .map_err(|e| cleanup(ImageError::io(image, e)))?;
    // What zeroing does on this host decides whether the inode tables and journal take space.
    let zeroing = HostZeroing::probe(file.as_raw_fd());
    drop(file);
    let (estimated, detail) = estimate_written_bytes(bytes, estimate_args, zeroing);
    if free < estimated {
        return Err(cleanup(ImageError::NoSpace {
            dir,
            need_bytes: estimated,
            free_bytes: free,
            detail,
        }));
    }
    let out = Command::new("mke2fs")
        .arg("-F")
        .arg("-q")
        .args(mke2fs_args)
        .arg(image)
        .output()
        .map_err(|e| {
            cleanup(ImageError::Tool {
                tool: "mke2fs".into(),
                path: image.to_path_buf(),
                status: "not started".into(),
                output: format!("{e} (install e2fsprogs)"),
            })
        })?;
    if !out.status.success() {
        return Err(cleanup(ImageError::Tool {
            tool: format!("mke2fs -F -q {}", mke2fs_args.join(" ")),
            path: image.to_path_buf(),
            status: out.status.to_string(),
            output: format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        }));
    }
    Ok(MkfsReport {
        apparent_bytes: bytes,
        allocated_bytes: allocated_bytes(image)?,
        estimated_bytes: estimated,
    })
}

/// How [`mkfs_profile_with`] makes an image; the default is [`mkfs_profile`]'s.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MkfsHow {
    /// mke2fs zeroes the inode tables and journal itself (the profile's options alone), as
    /// mke2fs does on a disk: the reference [`mkfs_profile`]'s images are proven equal to.
    /// It takes host space where the host has `ZERO_RANGE`. Default: the fresh file's holes
    /// stand for the zeros ([`profile_mke2fs_args`]).
    pub mke2fs_zeroes: bool,
    /// A UUID used as the file system's UUID and directory hash seed (mke2fs `-U`,
    /// `-E hash_seed=`) instead of random ones, so that two images can be compared byte for
    /// byte (with `E2FSPROGS_FAKE_TIME` set for their times).
    pub fixed_uuid: Option<String>,
}

/// [`mkfs`] with `profile`'s mke2fs options, then the superblock fields the profile's era set
/// that no mke2fs option reaches (`MkfsProfile::superblock`), written by the real debugfs's
/// `set_super_value`, and the era's BLOCK_UNINIT rule (`backup_groups_block_init`) through
/// libext2fs. Removes the image if a step fails.
///
/// mke2fs is told the fresh file is zeros ([`profile_mke2fs_args`]) rather than zeroing its
/// inode tables and journal, and the groups' ITABLE_ZEROED flags are then put back as mke2fs
/// leaves them when it zeroes (unless the profile's era set them: `inode_tables_zeroed`), so
/// the image has the same bytes as with the profile's options alone, in less host space and
/// time.
pub fn mkfs_profile(
    image: &Path,
    bytes: u64,
    profile: &layoutlab_layout::MkfsProfile,
) -> Result<MkfsReport, ImageError> {
    mkfs_profile_with(image, bytes, profile, &MkfsHow::default())
}

/// [`mkfs_profile`], made `how` says.
pub fn mkfs_profile_with(
    image: &Path,
    bytes: u64,
    profile: &layoutlab_layout::MkfsProfile,
    how: &MkfsHow,
) -> Result<MkfsReport, ImageError> {
    let mut args = if how.mke2fs_zeroes {
        profile.mke2fs_args(bytes)
    } else {
        profile_mke2fs_args(profile, bytes)
    };
    if let Some(uuid) = &how.fixed_uuid {
        add_extended(&mut args, &format!("hash_seed={uuid}"));
        args.extend(["-U".to_string(), uuid.clone()]);
    }
    let whole_args = args.clone();
    // A block-mapped journal away from block 0: today's mke2fs ignores `-J location=` for it
    // (it starts from the inode's group), so make the file system without one and place it
    // through libext2fs at the profile's goal, as 1.41's write_journal_inode() did.
    let geo = layoutlab_layout::Geometry::new(profile, bytes).map_err(|e| ImageError::Invalid {
        path: image.to_path_buf(),
        reason: e.to_string(),
    })?;
    let place_journal =
        !profile.has_feature("extent") && geo.journal_blocks > 0 && geo.journal_goal > 0;
    if place_journal {
        if let Some(i) = args.iter().position(|a| a == "-J") {
            args.drain(i..i + 2);
        }
    }
    let report = mkfs_checked(image, bytes, &args, &whole_args)?;
    if !how.mke2fs_zeroes && !profile.inode_tables_zeroed {
        let done = Fs::open(image, true).and_then(|fs| {
            fs.clear_itable_zeroed()?;
            fs.close()
        });
        if let Err(e) = done {
            let _ = std::fs::remove_file(image);
            return Err(e);
        }
    }
    if place_journal {
        let blocks = u32::try_from(geo.journal_blocks).expect("a journal under 2^32 blocks");
        if let Err(e) = add_journal(image, blocks, geo.journal_goal) {
            let _ = std::fs::remove_file(image);
            return Err(e);
        }
    }
    if let Err(e) = period_allocations(image, profile, &geo) {
        let _ = std::fs::remove_file(image);
        return Err(e);
    }
    if profile.backup_groups_block_init {
        let done = Fs::open(image, true).and_then(|fs| {
            fs.clear_block_uninit_on_gdt_backups()?;
            fs.close()
        });
        if let Err(e) = done {
            let _ = std::fs::remove_file(image);
            return Err(e);
        }
    }
    // 1.40/1.41 kept the reserved count asked for when the last group was dropped; today's
    // mke2fs recomputed it, so the count is written (the same value when nothing was dropped)
    let reserved = profile.reserved_blocks_before_drop.then(|| {
        (
            "r_blocks_count".to_string(),
            geo.reserved_blocks.to_string(),
        )
    });
    if profile.superblock.is_empty() && reserved.is_none() {
        return Ok(report);
    }
    let script: String = profile
        .superblock
        .iter()
        .map(|(field, value)| (field.clone(), value.clone()))
        .chain(reserved)
        .map(|(field, value)| format!("set_super_value {field} {value}\n"))
        .collect();
    let fail = |status: String, output: String| {
        let _ = std::fs::remove_file(image);
        ImageError::Tool {
            tool: format!("debugfs -w (profile {}'s superblock)", profile.name),
            path: image.to_path_buf(),
            status,
            output,
        }
    };
    let mut child = Command::new("debugfs")
        .args(["-w", "-f", "-"])
        .arg(image)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| fail("not started".into(), format!("{e} (install e2fsprogs)")))?;
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("piped stdin");
        stdin
            .write_all(script.as_bytes())
            .map_err(|e| fail("writing its commands".into(), e.to_string()))?;
    }
    let out = child
        .wait_with_output()
        .map_err(|e| fail("not finished".into(), e.to_string()))?;
    // debugfs exits 0 even when a command fails; a failed command prints to stderr
    // ("set_super_value: invalid field specifier"), the banner "debugfs 1.47.0" aside.
    let stderr = String::from_utf8_lossy(&out.stderr);
    let complaints: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with("debugfs "))
        .collect();
    if !out.status.success() || !complaints.is_empty() {
        return Err(fail(out.status.to_string(), complaints.join("\n")));
    }
    Ok(report)
}

/// What the profile's era of mke2fs placed differently from today's, through libext2fs:
/// e2fsprogs 1.40's journal block past its size, and 1.41's packing of a short last flex
/// group (to the blocks `geo` computes for them).
fn period_allocations(
    image: &Path,
    profile: &layoutlab_layout::MkfsProfile,
    geo: &layoutlab_layout::Geometry,
) -> Result<(), ImageError> {
    let extra = profile.journal_blocks_past_size;
    let flex = geo.flex_bg_size;
    let groups = geo.group_count();
    // the groups of a short last flex group past the first one (see Geometry)
    let moved = if profile.short_flex_group_packed_as_whole
        && groups > flex
        && !groups.is_multiple_of(flex)
    {
        groups / flex * flex..groups
    } else {
        0..0
    };
    if (extra == 0 || geo.journal_blocks == 0) && moved.is_empty() {
        return Ok(());
    }
    let fs = Fs::open(image, true)?;
    if extra > 0 && geo.journal_blocks > 0 {
        let ino = fs.super_info().journal_inum;
        fs.map_blocks_past_size(ino, u32::try_from(extra).expect("a few blocks"))?;
    }
    if !moved.is_empty() {
        let places: Vec<(u64, u64, u64)> = geo.groups[moved.start as usize..]
            .iter()
            .map(|g| (g.block_bitmap, g.inode_bitmap, g.inode_table))
            .collect();
        fs.move_group_tables(moved.start as u32, &places)?;
    }
    fs.close()
}

/// Adds a journal of `blocks` blocks, placed from `goal_block` on, to an image made without
/// one (`-O ^has_journal`), through ext2fs_add_journal_inode3. The journal is initialised
/// lazily, so the image stays sparse.
pub fn add_journal(image: &Path, blocks: u32, goal_block: u64) -> Result<(), ImageError> {
    let fs = Fs::open(image, true)?;
    let sb = fs.super_info();
    if sb.journal_inum != 0 || sb.feature_compat & 0x4 != 0 {
        return Err(ImageError::Invalid {
            path: image.to_path_buf(),
            reason: "already has a journal (make it with -O ^has_journal)".into(),
        });
    }
    if goal_block >= sb.blocks_count {
        return Err(ImageError::Invalid {
            path: image.to_path_buf(),
            reason: format!(
                "journal goal block {goal_block} is beyond the file system ({} blocks)",
                sb.blocks_count
            ),
        });
    }
    fs.add_journal(blocks, goal_block)?;
    fs.close()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn journal_table_matches_mke2fs() {
        assert_eq!(default_journal_blocks(26_214_400), 131_072);
        assert_eq!(default_journal_blocks(104_857_600), 262_144);
        assert_eq!(default_journal_blocks(1000), 0);
    }

    #[test]
    fn estimate_reads_options() {
        use HostZeroing::*;
        let (with, _) = estimate_written_bytes(400 << 30, &args("-t ext3 -b 4096"), Allocates);
        let (without, _) =
            estimate_written_bytes(400 << 30, &args("-t ext3 -O ^has_journal"), Allocates);
        assert_eq!(with - without, 1 << 30);
        let (tables, _) = estimate_written_bytes(400 << 30, &args("-I 128 -i 8192"), Writes);
        assert!(tables > (6 << 30), "{tables}");
        // -E nodiscard: the tables are zeroed, which allocates them where ZERO_RANGE works...
        let (nodiscard, _) =
            estimate_written_bytes(400 << 30, &args("-I 128 -i 8192 -E nodiscard"), Allocates);
        assert_eq!(nodiscard, tables);
        // ...and leaves them holes where the host only punches (tmpfs), the journal too
        let (punched, detail) =
            estimate_written_bytes(400 << 30, &args("-I 128 -i 8192 -E nodiscard"), Punches);
        assert!(punched < (1 << 30), "{punched}");
        assert!(detail.contains("zeroed as holes"), "{detail}");
        let (prezeroed, _) = estimate_written_bytes(
            400 << 30,
            &args("-I 128 -i 8192 -E nodiscard,assume_storage_prezeroed=1"),
            Allocates,
        );
        assert!(prezeroed < (2 << 30), "{prezeroed}");
        assert_eq!(option_value(&args("-b4096"), "-b"), Some("4096"));
    }

    /// What [`mkfs_profile`] asks of a host with `ZERO_RANGE` (the disk's ext4, random-read's
    /// default work directory) at random-read's scale 1 (a 1.9 TB file, 1.03 times it plus
    /// 256 MiB of file system): mke2fs zeroing ext3-2007's tables needed 31 GB there; left as
    /// holes they need nothing, and what stays is counted block for block. Checked to fail:
    /// with `assume_storage_prezeroed` sparing the block-mapped journal too (the estimate
    /// before), ext3's need was 128 MiB short of it.
    #[test]
    fn a_profile_image_needs_neither_its_tables_nor_an_extent_journal_on_disk() {
        use layoutlab_layout::MkfsProfile;
        const MIB: u64 = 1 << 20;
        let file_bytes = 1_900_000_000_000 / MIB * MIB;
        let bytes = ((file_bytes as f64 * 1.03) as u64 / MIB + 256) * MIB;
        let block = 4096;
        let groups = (bytes / block).div_ceil(8 * block);
        // bitmaps and descriptor copies (4 blocks a group), the primary's reserved GDT
        // blocks (one block of addresses), the margin
        let metadata = groups * 4 * block + block / 4 * block + MIB;

        let ext3 = MkfsProfile::by_name("ext3-2007").unwrap();
        let (zeroed, _) =
            estimate_written_bytes(bytes, &ext3.mke2fs_args(bytes), HostZeroing::Allocates);
        let tables = bytes / 8192 * 128;
        assert_eq!(zeroed, 128 * MIB + tables + metadata);
        assert!(tables > 30_000_000_000, "{tables}");
        let (holes, detail) = estimate_written_bytes(
            bytes,
            &profile_mke2fs_args(&ext3, bytes),
            HostZeroing::Allocates,
        );
        // ext2fs_fallocate() zeroes the block-mapped journal whatever the flags: 128 MiB
        assert_eq!(holes, 128 * MIB + metadata, "{detail}");

        // ext4's extent-mapped journal (1 GiB at this size) is left lazy, its tables too
        let ext4 = MkfsProfile::by_name("ext4-kernel").unwrap();
        let (zeroed, _) =
            estimate_written_bytes(bytes, &ext4.mke2fs_args(bytes), HostZeroing::Allocates);
        let (holes, detail) = estimate_written_bytes(
            bytes,
            &profile_mke2fs_args(&ext4, bytes),
            HostZeroing::Allocates,
        );
        assert_eq!(zeroed, 1024 * MIB + bytes / 16384 * 256 + metadata);
        assert_eq!(holes, block + metadata, "{detail}");
    }

    #[test]
    fn extended_options_are_added_to_the_one_e_option() {
        let mut a = args("-t ext3 -E nodiscard -J size=128");
        add_extended(&mut a, "assume_storage_prezeroed=1");
        add_extended(&mut a, "assume_storage_prezeroed=1");
        assert_eq!(
            a,
            args("-t ext3 -E nodiscard,assume_storage_prezeroed=1 -J size=128")
        );
        let mut a = args("-t ext2");
        add_extended(&mut a, "hash_seed=x");
        assert_eq!(a, args("-t ext2 -E hash_seed=x"));
    }
}
