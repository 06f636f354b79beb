//! Make an image: the real mke2fs with a profile's options, then a plan written through
//! libext2fs; and the mount options such an image needs.
//!
//! Operations that check an image (fsck, aging) make it with [`make_image`], a file the rig
//! removes on error or signal; operations that mount it under a kernel hand [`write_plan`] to
//! `KernelFs::from_image`, which owns that file.

use anyhow::{bail, Result};
use layoutlab_layout::{Geometry, MkfsProfile, Plan};
use layoutlab_rig::TempFile;
use std::path::Path;

/// A fresh file system at `path` made by the real mke2fs with `profile`'s options, removed
/// on error, Ctrl-C or panic through the rig's cleanup (kept only if the caller keeps it).
/// Registering the removal and making the file are one step: a signal between them removed
/// nothing and then mke2fs made the file (another policy's image was left behind now and
/// then); the signal's cleanup waits for this step, and none starts after it.
pub fn make_image(path: &Path, profile: &MkfsProfile, geo: &Geometry) -> Result<TempFile> {
    let fs_bytes = geo.blocks_count * u64::from(geo.block_size_bytes);
    layoutlab_rig::cleanup::creating(|| {
        if layoutlab_rig::cleanup::signal_caught() {
            bail!("interrupted");
        }
        let image = TempFile::adopt(path);
        layoutlab_image::mkfs_profile(image.path(), fs_bytes, profile)?;
        Ok(image)
    })
}

/// Makes the file system at `path` (`fs_bytes`, mke2fs with `profile`) and writes `plan` into
/// it through libext2fs: the image a kernel then mounts. The error is text, as
/// `KernelFs::from_image` takes it.
pub fn write_plan(
    path: &Path,
    fs_bytes: u64,
    profile: &MkfsProfile,
    plan: &Plan,
) -> std::result::Result<(), String> {
    layoutlab_image::mkfs_profile(path, fs_bytes, profile).map_err(|e| e.to_string())?;
    layoutlab_image::materialize(path, plan)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// Bytes a sparse image of `plan` on `geometry` really holds: bitmaps, descriptors (every
/// copy, and a superblock and descriptor copy only where sparse_super keeps one), the journal
/// and the files' mapping blocks. Data blocks stay holes, and so do the inode tables, which
/// mke2fs leaves unwritten in the fresh file (`layoutlab_image::profile_mke2fs_args`; the image
/// crate checks its own need before mke2fs runs). What the rig's free-space check asks of the
/// directory an image is made in.
pub fn sparse_image_bytes(geometry: &Geometry, plan: &Plan) -> u64 {
    let g = geometry;
    let sparse = g.has_feature("sparse_super");
    let copies = (0..g.group_count())
        .filter(|&group| layoutlab_layout::geometry::group_has_super(group, sparse))
        .count() as u64;
    let meta_blocks = g.group_count() * 2
        + copies * (1 + g.gdt_blocks + g.reserved_gdt_blocks)
        + g.journal_total_blocks
        + plan.mapping_blocks();
    meta_blocks * u64::from(g.block_size_bytes)
}

/// Mount options of an image made with mkfs `profile`: `base`, plus `noinit_itable` when the
/// profile leaves the inode tables to the kernel (`inode_tables_zeroed = false` with
/// metadata_csum or uninit_bg: mke2fs 1.47 then marks no group ITABLE_ZEROED). Without it
/// the kernel's ext4lazyinit thread writes every table after the mount (30 GB at random-read's
/// scale 1), which the experiments' kernel-made file systems (`lazy_itable_init=0`) never do;
/// the tables are holes of the sparse image, read as zeros either way.
pub fn mount_options(base: &str, profile: &MkfsProfile) -> String {
    let lazy = !profile.inode_tables_zeroed
        && (profile.has_feature("metadata_csum") || profile.has_feature("uninit_bg"));
    if !lazy {
        return base.to_string();
    }
    join_options(&[base, "noinit_itable"])
}

/// Mount option lists joined with commas, the empty ones left out (`mount -o` refuses an
/// empty option): a kernel profile's options and an experiment's extra ones.
pub fn join_options(lists: &[&str]) -> String {
    lists
        .iter()
        .filter(|o| !o.is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join(",")
}

/// The free space of a work directory shared by the images an operation makes at once: each
/// image holds its estimate ([`image_need`]) from before mke2fs until it is removed, and an
/// image that would not fit beside those being made waits for one of them to go. Without it
/// two jobs each saw the whole free space, and two images that fit alone could start together
/// and fail midway. Free space is read once, before any image (others' writes to a shared disk
/// after that are caught by mke2fs's own check).
pub struct SpaceBudget {
    dir: std::path::PathBuf,
    free_bytes: u64,
    held_bytes: std::sync::Mutex<u64>,
    freed: std::sync::Condvar,
}

/// An image's share of a [`SpaceBudget`], given back when dropped (when the image is removed);
/// [`Held::keep`] keeps it for an image that stays.
pub struct Held<'a> {
    budget: &'a SpaceBudget,
    bytes: u64,
}

impl SpaceBudget {
    /// The free space of `dir` now.
    pub fn new(dir: &Path) -> Result<Self> {
        Ok(SpaceBudget {
            dir: dir.to_path_buf(),
            free_bytes: layoutlab_rig::free_space_bytes(dir)?,
            held_bytes: std::sync::Mutex::new(0),
            freed: std::sync::Condvar::new(),
        })
    }

    /// Free bytes when the budget was made.
    pub fn free_bytes(&self) -> u64 {
        self.free_bytes
    }

    /// Refuses `what` (with its need and how it was reckoned) when it cannot fit even alone.
    pub fn check(&self, what: &str, need_bytes: u64, detail: &str) -> Result<()> {
        if need_bytes > self.free_bytes {
            bail!(
                "not enough free space in {} for {what}: it needs about {need_bytes} bytes \
                 ({detail}), only {} are free; choose another --workdir or a smaller --scale",
                self.dir.display(),
                self.free_bytes
            );
        }
        Ok(())
    }

    /// Holds `need_bytes` for `what`, waiting while the images being made leave too little;
    /// refuses at once what cannot fit alone.
    pub fn hold(&self, what: &str, need_bytes: u64, detail: &str) -> Result<Held<'_>> {
        self.check(what, need_bytes, detail)?;
        let mut held = self.held_bytes.lock().unwrap_or_else(|p| p.into_inner());
        while *held + need_bytes > self.free_bytes {
            held = self.freed.wait(held).unwrap_or_else(|p| p.into_inner());
        }
        *held += need_bytes;
        Ok(Held {
            budget: self,
            bytes: need_bytes,
        })
    }
}

impl Held<'_> {
    /// The image stays (`--keep`): its share is never given back.
    pub fn keep(mut self) {
        self.bytes = 0;
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        if self.bytes == 0 {
            return;
        }
        let mut held = self
            .budget
            .held_bytes
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        *held -= self.bytes;
        self.budget.freed.notify_all();
    }
}

/// Host bytes an image of `plan` made with `profile` on `geometry` in `dir` holds, at most,
/// and how it was reckoned: mke2fs's part (which probes how `dir`'s file system zeroes a
/// range: on tmpfs the inode tables are holes) plus the blocks libext2fs writes for the plan.
/// The image crate's test holds it against `du` of made images.
pub fn image_need(
    dir: &Path,
    profile: &MkfsProfile,
    geometry: &Geometry,
    plan: Option<&Plan>,
) -> Result<(u64, String)> {
    let fs_bytes = geometry.blocks_count * u64::from(geometry.block_size_bytes);
    let (mkfs_bytes, detail) = layoutlab_image::estimate_profile_bytes(dir, fs_bytes, profile)?;
    let plan_bytes = plan.map_or(0, |p| layoutlab_image::plan_written_bytes(p, geometry));
    Ok((
        mkfs_bytes + plan_bytes,
        format!(
            "mke2fs: {detail}; the plan's directory, mapping and inode-table blocks {plan_bytes}"
        ),
    ))
}
