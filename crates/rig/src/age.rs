//! A population's stream on a real kernel file system, start to end: make the file system on
//! zram ([`KernelFs`]), [`apply_ops()`] the operations, read every file's extents
//! ([`file_layouts`]), and for ext2/3/4 unmount and read the kernel's whole layout back with
//! libext2fs (`layoutlab_image::inspect`) as a [`Plan`], the form the layout metrics and the
//! engine's policies share — so that after the same aging stream the kernel's `ext4` and the
//! `ext4-kernel` policy's plan can be compared block for block.
//!
//! The device is modelled as a disk unless told otherwise: the zram-backed loop device would
//! inherit zram's non-rotational queue, for which ext4 sets `mb_max_linear_groups` to 0 and
//! btrfs turns on its `ssd` allocation mode at mount, so [`KernelAgeOptions::disk`] presents a
//! rotational queue (`queue/rotational` 1, set on the loop device before mkfs), and still
//! gives ext4 a disk's 4 (`MB_DEFAULT_LINEAR_LIMIT`, fs/ext4/mballoc.h) through its sysfs knob
//! and mounts btrfs with `nossd`, which a rotational queue makes the kernel's own choices
//! (until November 2026 the queue stayed non-rotational and these two were the whole
//! emulation of a disk: any other path keyed on the flag saw an SSD). XFS's allocator does not
//! look at rotation.

use crate::apply::{apply_ops, ApplyOptions, ApplyProgress, ApplyStats};
use crate::error::{Result, RigError};
use crate::fiemap::{block_size, file_layouts, summarize, FileLayout, LayoutSummary};
use crate::{Backing, FsKind, KernelFs, KernelFsOptions};
use layoutlab_layout::{MkfsProfile, Plan};
use layoutlab_workload::Population;

/// The mkfs profile whose mke2fs options make an ext4 like today's kernel comparison's.
pub const EXT4_PROFILE: &str = "ext4-kernel";

/// How to make the file system and replay on it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelAgeOptions {
    /// The file system.
    pub kind: FsKind,
    /// mkfs arguments after the rig's own (`mke2fs -F -q -t KIND`, `mkfs.xfs -f -q`,
    /// `mkfs.btrfs -f -q`).
    pub mkfs_args: Vec<String>,
    /// Mount options.
    pub mount_options: String,
    /// Size of the device.
    pub bytes: u64,
    /// Writeback interval while the operations are applied.
    pub apply: ApplyOptions,
    /// ext4 only: the file system's `mb_max_linear_groups` (sysfs), set after mount; `None`
    /// leaves the kernel's choice for the device (0 on the non-rotational zram).
    pub ext4_linear_groups: Option<u32>,
    /// The loop device's `queue/rotational`: `true` models a disk, `false` keeps zram's
    /// non-rotational queue.
    pub rotational: bool,
    /// ext2/3/4: after the check, the unmounted file system's metadata is written here as a
    /// sparse raw image by the real `e2image -r` (every metadata block where it lies, file data
    /// left as holes), e.g. for `layoutlab fsck-predict`. Must not exist yet.
    pub metadata_image: Option<std::path::PathBuf>,
}

impl KernelAgeOptions {
    /// A `kind` file system of `bytes` as on a disk: ext4 with the [`EXT4_PROFILE`]
    /// profile's mke2fs options and `mb_max_linear_groups` 4 (ext2/3 with mke2fs's
    /// defaults), XFS with mkfs.xfs's defaults, btrfs with mkfs.btrfs's defaults (one device:
    /// data `single`, metadata `DUP`) mounted `nossd`.
    pub fn disk(kind: FsKind, bytes: u64) -> Result<KernelAgeOptions> {
        let (mkfs_args, mount_options, linear) = match kind {
            FsKind::Ext4 => (ext4_mkfs_args(bytes)?, String::new(), Some(4)),
            FsKind::Ext2 | FsKind::Ext3 => (vec![], String::new(), None),
            FsKind::Xfs => (vec![], String::new(), None),
            FsKind::Btrfs => (vec![], "nossd".to_string(), None),
        };
        Ok(KernelAgeOptions {
            kind,
            mkfs_args,
            mount_options,
            bytes,
            apply: ApplyOptions::default(),
            ext4_linear_groups: linear,
            rotational: true,
            metadata_image: None,
        })
    }
}

/// The [`EXT4_PROFILE`] profile's mke2fs arguments for a device of `bytes`, without the
/// `-t ext4` the rig passes itself.
pub fn ext4_mkfs_args(bytes: u64) -> Result<Vec<String>> {
    let (kind, args) = ext_mkfs_args(EXT4_PROFILE, bytes)?;
    if kind != FsKind::Ext4 {
        return Err(RigError::Unsupported(format!(
            "the {EXT4_PROFILE} profile does not make ext4"
        )));
    }
    Ok(args)
}

/// mkfs profile `name`'s file system and mke2fs arguments for a device of `bytes`, without
/// the `-t KIND` the rig passes itself: e.g. `ext4-2009`, to have today's kernel write on the
/// file system a period experiment's mke2fs made.
pub fn ext_mkfs_args(name: &str, bytes: u64) -> Result<(FsKind, Vec<String>)> {
    let profile = MkfsProfile::by_name(name)
        .map_err(|e| RigError::InvalidArgument(format!("mkfs profile {name}: {e}")))?;
    let args = profile.mke2fs_args(bytes);
    match args.as_slice() {
        [t, kind, rest @ ..] if t == "-t" => Ok((FsKind::parse(kind)?, rest.to_vec())),
        _ => Err(RigError::Unsupported(format!(
            "the {name} profile's mke2fs arguments do not start with -t KIND: {args:?}"
        ))),
    }
}

/// What a stream did to a kernel file system.
#[derive(Clone, Debug, serde::Serialize)]
pub struct KernelAgeRun {
    /// The file system (`mount -t` name).
    pub fs: String,
    /// Size of the device.
    pub fs_bytes: u64,
    /// What applying the operations did.
    pub apply: ApplyStats,
    /// Every regular file's layout (FIEMAP), in path order.
    pub files: Vec<FileLayout>,
    /// Fragments per file and layout score.
    pub summary: LayoutSummary,
    /// ext2/3/4: `e2fsck -fn` found the unmounted file system clean.
    pub fsck_clean: Option<bool>,
    /// The queue the file system's loop device presented.
    pub queue: layoutlab_trace::DeviceQueue,
    /// ext2/3/4: what `e2fsck -fn` printed.
    #[serde(skip)]
    pub fsck_output: Option<String>,
    /// ext2/3/4: the kernel's layout read back with libext2fs (policy name "kernel").
    #[serde(skip)]
    pub plan: Option<Plan>,
}

/// Makes the file system [`KernelAgeOptions`] describes on zram, replays `pop` on it
/// (`progress` after each operation), reads every file's extents, and for ext2/3/4 unmounts,
/// runs `e2fsck -fn` and reads the layout back as a [`Plan`]; everything is torn down after,
/// on error and on panic too. Root only.
pub fn age_kernel(
    pop: &Population,
    opts: &KernelAgeOptions,
    progress: &mut dyn FnMut(&ApplyProgress),
) -> Result<KernelAgeRun> {
    Ok(age_kernel_then(pop, opts, progress, |_| ())?.0)
}

/// [`age_kernel`], handing the mounted file system's root to `mounted` once the stream is
/// replayed and its files' extents read (e.g. to walk the tree the kernel holds).
pub fn age_kernel_then<T>(
    pop: &Population,
    opts: &KernelAgeOptions,
    progress: &mut dyn FnMut(&ApplyProgress),
    mounted: impl FnOnce(&std::path::Path) -> T,
) -> Result<(KernelAgeRun, T)> {
    if let Some(path) = &opts.metadata_image {
        if !matches!(opts.kind, FsKind::Ext2 | FsKind::Ext3 | FsKind::Ext4) {
            return Err(RigError::InvalidArgument(format!(
                "a metadata image is e2image's, for ext2/3/4 only, not {}",
                opts.kind.name()
            )));
        }
        if path.exists() {
            return Err(RigError::InvalidArgument(format!(
                "{} exists: the metadata image is not written over anything",
                path.display()
            )));
        }
    }
    let kopts = KernelFsOptions {
        kind: opts.kind,
        mkfs_args: opts.mkfs_args.clone(),
        mount_options: opts.mount_options.clone(),
        bytes: opts.bytes,
        backing: Backing::Zram,
        // file data is zeros, which zram keeps in no memory: what it holds is metadata
        resident_bytes: (opts.bytes / 32).max(256 << 20),
        queue: crate::QueueSpec {
            rotational: Some(opts.rotational),
            ..crate::QueueSpec::default()
        },
    };
    let fs = KernelFs::create(&kopts)?;
    let queue = fs.device().queue()?;
    if let (FsKind::Ext4, Some(n)) = (opts.kind, opts.ext4_linear_groups) {
        let knob = format!(
            "/sys/fs/ext4/loop{}/mb_max_linear_groups",
            fs.device().number()
        );
        std::fs::write(&knob, n.to_string())
            .map_err(|e| RigError::io(format!("write {n} to {knob}"), e))?;
    }
    let root = fs.mount_point().to_path_buf();
    let stats = apply_ops(&root, pop, &opts.apply, progress)?;
    fs.sync()?;
    let block = block_size(&root)?;
    let files = file_layouts(&root)?;
    let summary = summarize(&files, block);
    let seen = mounted(&root);
    // The image's part file, made beside it and renamed into place once whole: registered
    // for removal, so an error or a signal leaves no half image.
    let image_part = match &opts.metadata_image {
        Some(path) => Some(metadata_image_part(path, &root, &files)?),
        None => None,
    };
    let (fsck_clean, fsck_output, plan) = match opts.kind {
        FsKind::Ext2 | FsKind::Ext3 | FsKind::Ext4 => {
            let (verdict, inspected, imaged) = fs.unmount_then(|dev| {
                (
                    layoutlab_image::fsck_check(dev),
                    layoutlab_image::inspect(dev),
                    image_part.as_ref().map(|part| {
                        crate::system::run_command(
                            "e2image",
                            &["-r", &dev.to_string_lossy(), &part.path().to_string_lossy()],
                        )
                    }),
                )
            })?;
            if let Some(done) = imaged {
                done?;
            }
            if let (Some(part), Some(path)) = (image_part, &opts.metadata_image) {
                std::fs::rename(part.path(), path).map_err(|e| {
                    RigError::io(
                        format!("rename {} to {}", part.path().display(), path.display()),
                        e,
                    )
                })?;
                part.keep();
            }
            let verdict = verdict.map_err(|e| RigError::Unsupported(format!("e2fsck -fn: {e}")))?;
            let inspected = inspected
                .map_err(|e| RigError::Unsupported(format!("reading the layout back: {e}")))?;
            (
                Some(verdict.clean),
                Some(verdict.output),
                Some(inspected.plan("kernel")),
            )
        }
        FsKind::Xfs | FsKind::Btrfs => {
            drop(fs);
            (None, None, None)
        }
    };
    let run = KernelAgeRun {
        fs: opts.kind.name().to_string(),
        fs_bytes: opts.bytes,
        apply: stats,
        files,
        summary,
        fsck_clean,
        queue,
        fsck_output,
        plan,
    };
    Ok((run, seen))
}

/// The part file of metadata image `path`, after a check that its directory has room for the
/// metadata the mounted file system at `root` holds (its used blocks less the files' data).
fn metadata_image_part(
    path: &std::path::Path,
    root: &std::path::Path,
    files: &[FileLayout],
) -> Result<crate::TempFile> {
    let st = crate::system::statvfs(root)?;
    let used = (st.f_blocks - st.f_bfree) as u64 * st.f_frsize as u64;
    let data: u64 = files
        .iter()
        .flat_map(|f| f.extents.iter())
        .map(|e| e.length)
        .sum();
    // What e2image -r copies is every used block but the files' data; the 64 MiB on top is an
    // allowance for the part file's own mapping blocks, not a measured figure.
    let need = used.saturating_sub(data) + (64 << 20);
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    crate::system::check_free_space(&dir, need)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let part = dir.join(format!(".{name}.part"));
    // A part file is only ever ours: one left by a killed run goes.
    let _ = std::fs::remove_file(&part);
    crate::cleanup::creating(|| Ok::<_, RigError>(crate::TempFile::adopt(&part)))
}

/// The kernel's ext4 layout after `pop`'s stream: the file system made with the
/// [`EXT4_PROFILE`] profile's mke2fs options on a device of `pop.fs_bytes`, as on a disk
/// (`mb_max_linear_groups` = `linear_groups`, 4 for a disk; see [`KernelAgeOptions::disk`]),
/// written back every `writeback_bytes`, read back with libext2fs after unmount. The plan to
/// hold beside the `ext4-kernel` policy's plan of the same stream. An error when e2fsck does
/// not find the kernel's file system clean.
pub fn kernel_plan(
    pop: &Population,
    linear_groups: u32,
    writeback_bytes: u64,
    progress: &mut dyn FnMut(&ApplyProgress),
) -> Result<(Plan, KernelAgeRun)> {
    let mut opts = KernelAgeOptions::disk(FsKind::Ext4, pop.fs_bytes)?;
    opts.ext4_linear_groups = Some(linear_groups);
    opts.apply.writeback_bytes = writeback_bytes;
    kernel_plan_with(pop, &opts, progress)
}

/// [`kernel_plan`] with every option given (an ext4 `opts.kind`): e.g. other mount options,
/// to try what a kernel behaviour does to the layout (`data=writeback` frees a deleted
/// file's data blocks at once instead of at the journal's commit).
pub fn kernel_plan_with(
    pop: &Population,
    opts: &KernelAgeOptions,
    progress: &mut dyn FnMut(&ApplyProgress),
) -> Result<(Plan, KernelAgeRun)> {
    if opts.kind != FsKind::Ext4 {
        return Err(RigError::InvalidArgument(format!(
            "kernel_plan reads back ext4, not {:?}",
            opts.kind
        )));
    }
    let mut run = age_kernel(pop, opts, progress)?;
    if run.fsck_clean != Some(true) {
        return Err(RigError::Unsupported(format!(
            "e2fsck -fn does not find the kernel's ext4 clean after the stream:\n{}",
            run.fsck_output.as_deref().unwrap_or("")
        )));
    }
    let plan = run.plan.take().expect("ext4 runs read the plan back");
    Ok((plan, run))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ext4_options_are_the_profiles_without_the_type() {
        let a = ext4_mkfs_args(4 << 30).unwrap();
        assert!(!a.iter().any(|x| x == "-t"), "{a:?}");
        assert!(a.iter().any(|x| x.contains("extent")), "{a:?}");
        let o = KernelAgeOptions::disk(FsKind::Btrfs, 1 << 30).unwrap();
        assert_eq!(o.mount_options, "nossd");
    }
}
