//! The libext2fs shim (csrc/shim.c) seen from Rust: raw declarations and a small safe handle.

use std::ffi::{c_char, c_int, c_long, c_void, CStr, CString};
use std::path::{Path, PathBuf};

use crate::error::ImageError;

#[repr(C)]
struct RawFs {
    _private: [u8; 0],
}

/// Superblock fields the shim copies out (mirrors `struct ll_super`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct RawSuper {
    pub blocks_count: u64,
    pub free_blocks: u64,
    pub first_data_block: u64,
    pub reserved_blocks: u64,
    pub block_size: u32,
    pub blocks_per_group: u32,
    pub inodes_per_group: u32,
    pub inodes_count: u32,
    pub free_inodes: u32,
    pub group_count: u32,
    pub first_ino: u32,
    pub inode_size: u32,
    pub feature_compat: u32,
    pub feature_incompat: u32,
    pub feature_ro_compat: u32,
    pub journal_inum: u32,
    pub mkfs_time: u32,
}

/// Inode fields the shim copies out (mirrors `struct ll_inode_info`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct RawInode {
    pub size_bytes: u64,
    pub blocks_fs: u64,
    pub mode: u32,
    pub links: u32,
    pub flags: u32,
    pub block0: u32,
    pub block1: u32,
}

type BlockCb = extern "C" fn(*mut c_void, i64, u64, u64, c_int);
type ExtentCb = extern "C" fn(*mut c_void, c_int, u64, u64, u64, c_int, c_int);
type DirentCb = extern "C" fn(*mut c_void, *const c_char, c_int, u32);
type RunCb = extern "C" fn(*mut c_void, u64, u64);

extern "C" {
    fn ll_error_message(code: c_long) -> *const c_char;
    fn ll_open(path: *const c_char, rw: c_int, out: *mut *mut RawFs) -> c_long;
    fn ll_close(fs: *mut RawFs) -> c_long;
    fn ll_discard(fs: *mut RawFs);
    fn ll_super_info(fs: *mut RawFs, s: *mut RawSuper);
    fn ll_group_info(
        fs: *mut RawFs,
        group: u32,
        free_blocks: *mut u64,
        free_inodes: *mut u32,
        used_dirs: *mut u32,
        first_block: *mut u64,
        inode_table: *mut u64,
    );
    fn ll_inode_in_use(fs: *mut RawFs, ino: u32) -> c_int;
    fn ll_used_runs(fs: *mut RawFs, start: u64, count: u64, cb: RunCb, ctx: *mut c_void);
    fn ll_read_inode(fs: *mut RawFs, ino: u32, info: *mut RawInode) -> c_long;
    fn ll_walk_blocks(fs: *mut RawFs, ino: u32, cb: BlockCb, ctx: *mut c_void) -> c_long;
    fn ll_walk_extents(fs: *mut RawFs, ino: u32, cb: ExtentCb, ctx: *mut c_void) -> c_long;
    fn ll_walk_dir(fs: *mut RawFs, dir: u32, cb: DirentCb, ctx: *mut c_void) -> c_long;
    fn ll_create_inode(
        fs: *mut RawFs,
        ino: u32,
        mode: u32,
        major: u32,
        minor: u32,
        timestamp: u32,
    ) -> c_long;
    fn ll_symlink(
        fs: *mut RawFs,
        ino: u32,
        target: *const c_char,
        blk: u64,
        timestamp: u32,
    ) -> c_long;
    fn ll_read_symlink(fs: *mut RawFs, ino: u32, buf: *mut c_char, cap: usize) -> c_long;
    fn ll_set_extents(
        fs: *mut RawFs,
        ino: u32,
        extents: *const u64,
        nextents: usize,
        tree: *const u64,
        ntree: usize,
        placed: *mut u64,
    ) -> c_long;
    fn ll_finish_inode(
        fs: *mut RawFs,
        ino: u32,
        size_bytes: u64,
        blocks_fs: u64,
        add_links: c_int,
    ) -> c_long;
    fn ll_add_links(fs: *mut RawFs, ino: u32, add_links: c_int) -> c_long;
    fn ll_mark_blocks(fs: *mut RawFs, first: u64, len: u64, inuse: c_int);
    fn ll_write_dir_block(
        fs: *mut RawFs,
        blk: u64,
        dir_ino: u32,
        parent: u32,
        owner: u32,
    ) -> c_long;
    fn ll_link(fs: *mut RawFs, dir: u32, name: *const c_char, ino: u32) -> c_long;
    fn ll_dir_fill(
        fs: *mut RawFs,
        dir: u32,
        blocks: *const u64,
        nblocks: usize,
        names: *const c_char,
        inos: *const u32,
        n: usize,
        placed: *mut usize,
    ) -> c_long;
    fn ll_set_block_map_iterate(
        fs: *mut RawFs,
        ino: u32,
        runs: *const u64,
        nruns: usize,
        maps: *const u64,
        nmaps: usize,
        placed: *mut u64,
    ) -> c_long;
    fn ll_set_block_map_bmap(
        fs: *mut RawFs,
        ino: u32,
        runs: *const u64,
        nruns: usize,
        alloc_order: *const u64,
        nalloc: usize,
        placed: *mut u64,
    ) -> c_long;
    fn ll_clear_block_map(fs: *mut RawFs, ino: u32) -> c_long;
    fn ll_find_used(fs: *mut RawFs, first: u64, len: u64, found: *mut u64) -> c_long;
    fn ll_add_journal(fs: *mut RawFs, blocks: u32, goal: u64) -> c_long;
    fn ll_clear_block_uninit_on_gdt_backups(fs: *mut RawFs, changed: *mut u64) -> c_long;
    fn ll_clear_itable_zeroed(fs: *mut RawFs, changed: *mut u64) -> c_long;
    fn ll_map_blocks_past_size(fs: *mut RawFs, ino: u32, extra: u32) -> c_long;
    fn ll_move_group_tables(
        fs: *mut RawFs,
        first: u32,
        n: u32,
        bb: *const u64,
        ib: *const u64,
        it: *const u64,
    ) -> c_long;
}

/// The text libext2fs (com_err) gives for an error code.
fn error_text(code: c_long) -> String {
    // SAFETY: error_message returns a static or thread-local NUL-terminated string.
    unsafe { CStr::from_ptr(ll_error_message(code)) }
        .to_string_lossy()
        .into_owned()
}

/// The error of a libext2fs call `op` on `path` that returned `code`, with com_err's text.
/// Built here, not in `error.rs`, so that the error type does not depend on the FFI.
// c_long is i64 here but not on every target
#[allow(clippy::useless_conversion)]
fn ext2fs_error(path: &Path, op: &str, code: c_long) -> ImageError {
    ImageError::Ext2fs {
        path: path.to_path_buf(),
        op: op.to_string(),
        code: i64::from(code),
        message: error_text(code),
    }
}

/// An open file system; dropped without being closed, it is discarded (nothing written back).
pub(crate) struct Fs {
    raw: *mut RawFs,
    path: PathBuf,
}

fn cstring(path: &Path, s: &str) -> Result<CString, ImageError> {
    CString::new(s).map_err(|_| ImageError::Invalid {
        path: path.to_path_buf(),
        reason: format!("string contains a NUL byte: {s:?}"),
    })
}

impl Fs {
    /// Opens `path` (read-write when `rw`) and reads its bitmaps.
    pub fn open(path: &Path, rw: bool) -> Result<Fs, ImageError> {
        let c = cstring(path, &path.to_string_lossy())?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: c is a valid C string; raw receives an owned handle on success.
        let code = unsafe { ll_open(c.as_ptr(), rw as c_int, &mut raw) };
        if code != 0 {
            return Err(ext2fs_error(path, "ext2fs_open2/read_bitmaps", code));
        }
        Ok(Fs {
            raw,
            path: path.to_path_buf(),
        })
    }

    fn check(&self, op: &str, code: c_long) -> Result<(), ImageError> {
        if code == 0 {
            Ok(())
        } else {
            Err(ext2fs_error(&self.path, op, code))
        }
    }

    /// Writes everything back and closes.
    pub fn close(mut self) -> Result<(), ImageError> {
        let raw = std::mem::replace(&mut self.raw, std::ptr::null_mut());
        // SAFETY: raw is the live handle; ll_close frees it.
        let code = unsafe { ll_close(raw) };
        self.check("ext2fs_close", code)
    }

    pub fn super_info(&self) -> RawSuper {
        let mut s = RawSuper::default();
        // SAFETY: live handle, valid out pointer.
        unsafe { ll_super_info(self.raw, &mut s) };
        s
    }

    /// (free blocks, free inodes, used dirs, first block, inode table block) of a group.
    pub fn group_info(&self, group: u32) -> (u64, u32, u32, u64, u64) {
        let (mut fb, mut fi, mut ud, mut first, mut it) = (0u64, 0u32, 0u32, 0u64, 0u64);
        // SAFETY: live handle, valid out pointers, group < group_count by caller.
        unsafe {
            ll_group_info(
                self.raw, group, &mut fb, &mut fi, &mut ud, &mut first, &mut it,
            )
        };
        (fb, fi, ud, first, it)
    }

    pub fn inode_in_use(&self, ino: u32) -> bool {
        // SAFETY: live handle; caller keeps ino in 1..=inodes_count.
        unsafe { ll_inode_in_use(self.raw, ino) != 0 }
    }

    /// Used blocks of `[start, start+count)` as (first, len) runs.
    pub fn used_runs(&self, start: u64, count: u64) -> Vec<(u64, u64)> {
        extern "C" fn cb(ctx: *mut c_void, first: u64, len: u64) {
            // SAFETY: ctx is the &mut Vec passed below, alive for the call.
            let v = unsafe { &mut *(ctx as *mut Vec<(u64, u64)>) };
            v.push((first, len));
        }
        let mut v: Vec<(u64, u64)> = Vec::new();
        // SAFETY: live handle; the callback only touches v.
        unsafe { ll_used_runs(self.raw, start, count, cb, &mut v as *mut _ as *mut c_void) };
        v
    }

    pub fn read_inode(&self, ino: u32) -> Result<RawInode, ImageError> {
        let mut info = RawInode::default();
        // SAFETY: live handle, valid out pointer.
        let code = unsafe { ll_read_inode(self.raw, ino, &mut info) };
        self.check(&format!("ext2fs_read_inode({ino})"), code)?;
        Ok(info)
    }

    /// Every slot of a block-mapped inode's map, holes (physical 0) included:
    /// (blockcnt, physical, ref_blk, ref_offset); blockcnt -1/-2/-3 for IND/DIND/TIND.
    pub fn walk_blocks(
        &self,
        ino: u32,
        f: &mut dyn FnMut(i64, u64, u64, i32),
    ) -> Result<(), ImageError> {
        extern "C" fn cb(ctx: *mut c_void, cnt: i64, phys: u64, rblk: u64, roff: c_int) {
            // SAFETY: ctx is the &mut &mut dyn FnMut passed below.
            let f = unsafe { &mut *(ctx as *mut &mut dyn FnMut(i64, u64, u64, i32)) };
            f(cnt, phys, rblk, roff);
        }
        let mut f = f;
        // SAFETY: live handle; the callback runs only during this call.
        let code = unsafe { ll_walk_blocks(self.raw, ino, cb, &mut f as *mut _ as *mut c_void) };
        self.check(&format!("ext2fs_block_iterate3({ino})"), code)
    }

    /// Extents of an extent-mapped inode: (is_tree_block, logical, physical, len, level,
    /// max_depth); `level` is where the entry is (0 = in the inode).
    pub fn walk_extents(
        &self,
        ino: u32,
        f: &mut dyn FnMut(bool, u64, u64, u64, i32, i32),
    ) -> Result<(), ImageError> {
        type F<'a> = &'a mut dyn FnMut(bool, u64, u64, u64, i32, i32);
        extern "C" fn cb(
            ctx: *mut c_void,
            kind: c_int,
            l: u64,
            p: u64,
            n: u64,
            lvl: c_int,
            depth: c_int,
        ) {
            // SAFETY: ctx is the &mut &mut dyn FnMut passed below.
            let f = unsafe { &mut *(ctx as *mut F<'_>) };
            f(kind == 1, l, p, n, lvl, depth);
        }
        let mut f = f;
        // SAFETY: live handle; the callback runs only during this call.
        let code = unsafe { ll_walk_extents(self.raw, ino, cb, &mut f as *mut _ as *mut c_void) };
        self.check(&format!("ext2fs_extent_get({ino})"), code)
    }

    /// Entries of a directory (name bytes, inode), "." and ".." included.
    pub fn walk_dir(&self, dir: u32) -> Result<Vec<(Vec<u8>, u32)>, ImageError> {
        extern "C" fn cb(ctx: *mut c_void, name: *const c_char, len: c_int, ino: u32) {
            // SAFETY: ctx is the &mut Vec below; name points at len bytes inside a dir block.
            let v = unsafe { &mut *(ctx as *mut Vec<(Vec<u8>, u32)>) };
            let bytes = unsafe { std::slice::from_raw_parts(name as *const u8, len as usize) };
            v.push((bytes.to_vec(), ino));
        }
        let mut v: Vec<(Vec<u8>, u32)> = Vec::new();
        // SAFETY: live handle; the callback only touches v.
        let code = unsafe { ll_walk_dir(self.raw, dir, cb, &mut v as *mut _ as *mut c_void) };
        self.check(&format!("ext2fs_dir_iterate({dir})"), code)?;
        Ok(v)
    }

    /// A new inode of `mode` (type and permissions); `rdev` for device nodes.
    pub fn create_inode(
        &self,
        ino: u32,
        mode: u32,
        rdev: (u32, u32),
        timestamp: u32,
    ) -> Result<(), ImageError> {
        // SAFETY: live handle.
        let code = unsafe { ll_create_inode(self.raw, ino, mode, rdev.0, rdev.1, timestamp) };
        self.check(&format!("ext2fs_write_new_inode({ino})"), code)
    }

    /// A symlink written by ext2fs_symlink(), its one block (slow symlinks) at `blk`.
    pub fn symlink(
        &self,
        ino: u32,
        target: &str,
        blk: Option<u64>,
        timestamp: u32,
    ) -> Result<(), ImageError> {
        let c = cstring(&self.path, target)?;
        // SAFETY: live handle, valid C string.
        let code = unsafe { ll_symlink(self.raw, ino, c.as_ptr(), blk.unwrap_or(0), timestamp) };
        self.check(&format!("ext2fs_symlink({ino})"), code)
    }

    /// A symlink's target.
    pub fn read_symlink(&self, ino: u32) -> Result<String, ImageError> {
        let mut buf = vec![0u8; 65536];
        // SAFETY: live handle; buf holds cap bytes.
        let code =
            unsafe { ll_read_symlink(self.raw, ino, buf.as_mut_ptr() as *mut c_char, buf.len()) };
        self.check(&format!("symlink target of {ino}"), code)?;
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        Ok(String::from_utf8_lossy(&buf[..end]).into_owned())
    }

    /// An extent tree through ext2fs_extent_insert(): `extents` flattened (logical,
    /// physical, len) triples; `tree` the tree blocks in allocation order. Returns the tree
    /// blocks placed.
    pub fn set_extents(&self, ino: u32, extents: &[u64], tree: &[u64]) -> Result<u64, ImageError> {
        let mut placed = 0u64;
        // SAFETY: live handle; slices outlive the call.
        let code = unsafe {
            ll_set_extents(
                self.raw,
                ino,
                extents.as_ptr(),
                extents.len() / 3,
                tree.as_ptr(),
                tree.len(),
                &mut placed,
            )
        };
        self.check(&format!("ext2fs_extent_insert({ino})"), code)?;
        Ok(placed)
    }

    pub fn finish_inode(
        &self,
        ino: u32,
        size_bytes: u64,
        blocks_fs: u64,
        add_links: i32,
    ) -> Result<(), ImageError> {
        // SAFETY: live handle.
        let code = unsafe { ll_finish_inode(self.raw, ino, size_bytes, blocks_fs, add_links) };
        self.check(&format!("ext2fs_write_inode({ino})"), code)
    }

    pub fn add_links(&self, ino: u32, add: i32) -> Result<(), ImageError> {
        // SAFETY: live handle.
        let code = unsafe { ll_add_links(self.raw, ino, add) };
        self.check(&format!("ext2fs_write_inode({ino})"), code)
    }

    pub fn mark_blocks(&self, first: u64, len: u64, in_use: bool) {
        // SAFETY: live handle; caller validated the range lies inside the file system.
        unsafe { ll_mark_blocks(self.raw, first, len, if in_use { 1 } else { -1 }) };
    }

    pub fn write_dir_block(
        &self,
        blk: u64,
        dir_ino: u32,
        parent: u32,
        owner: u32,
    ) -> Result<(), ImageError> {
        // SAFETY: live handle.
        let code = unsafe { ll_write_dir_block(self.raw, blk, dir_ino, parent, owner) };
        self.check(&format!("ext2fs_write_dir_block4({blk})"), code)
    }

    /// An entry `name` -> `ino` in directory `dir` (file type from the inode's mode).
    pub fn link(&self, dir: u32, name: &str, ino: u32) -> Result<(), ImageError> {
        let c = cstring(&self.path, name)?;
        // SAFETY: live handle, valid C string.
        let code = unsafe { ll_link(self.raw, dir, c.as_ptr(), ino) };
        self.check(&format!("ext2fs_link({dir}, {name:?}, {ino})"), code)
    }

    /// Entries `(name, ino)` appended, in order, to directory `dir` whose blocks are `blocks`
    /// (logical order), where one `ext2fs_link()` call per entry would put them (first fit),
    /// each block read and written once (file types from the inodes' modes).
    pub fn dir_fill(
        &self,
        dir: u32,
        blocks: &[u64],
        entries: &[(&str, u32)],
    ) -> Result<(), ImageError> {
        let mut names: Vec<u8> = Vec::new();
        for (name, _) in entries {
            // a NUL inside a name would end it early; cstring refuses it with the path
            names.extend_from_slice(cstring(&self.path, name)?.as_bytes_with_nul());
        }
        let inos: Vec<u32> = entries.iter().map(|e| e.1).collect();
        let mut placed = 0usize;
        // SAFETY: live handle; buffers outlive the call and hold what the lengths say.
        let code = unsafe {
            ll_dir_fill(
                self.raw,
                dir,
                blocks.as_ptr(),
                blocks.len(),
                names.as_ptr().cast(),
                inos.as_ptr(),
                inos.len(),
                &mut placed,
            )
        };
        let what = match entries.get(placed) {
            Some((name, ino)) => format!("directory {dir}: entry {name:?} -> {ino}"),
            None => format!("directory {dir}"),
        };
        self.check(&format!("filling {what}"), code)
    }

    /// Fast path: block map through one ext2fs_block_iterate3 pass. `runs` and `maps` are
    /// flattened triples; returns the mapping blocks placed.
    pub fn set_block_map_iterate(
        &self,
        ino: u32,
        runs: &[u64],
        maps: &[u64],
    ) -> Result<u64, ImageError> {
        let mut placed = 0u64;
        // SAFETY: live handle; slices outlive the call; lengths are in triples.
        let code = unsafe {
            ll_set_block_map_iterate(
                self.raw,
                ino,
                runs.as_ptr(),
                runs.len() / 3,
                maps.as_ptr(),
                maps.len() / 3,
                &mut placed,
            )
        };
        self.check(&format!("ext2fs_block_iterate3(APPEND, {ino})"), code)?;
        Ok(placed)
    }

    /// Reference path: ext2fs_bmap2(BMAP_SET|BMAP_ALLOC) per block with an allocator callback.
    pub fn set_block_map_bmap(
        &self,
        ino: u32,
        runs: &[u64],
        alloc_order: &[u64],
    ) -> Result<u64, ImageError> {
        let mut placed = 0u64;
        // SAFETY: live handle; slices outlive the call.
        let code = unsafe {
            ll_set_block_map_bmap(
                self.raw,
                ino,
                runs.as_ptr(),
                runs.len() / 3,
                alloc_order.as_ptr(),
                alloc_order.len(),
                &mut placed,
            )
        };
        self.check(&format!("ext2fs_bmap2(SET|ALLOC, {ino})"), code)?;
        Ok(placed)
    }

    /// Forgets an inode's block map (size and i_blocks go to 0).
    pub fn clear_block_map(&self, ino: u32) -> Result<(), ImageError> {
        // SAFETY: live handle.
        let code = unsafe { ll_clear_block_map(self.raw, ino) };
        self.check(&format!("ext2fs_write_inode({ino})"), code)
    }

    /// The first block of `[first, first+len)` marked in use, if any.
    pub fn find_used(&self, first: u64, len: u64) -> Result<Option<u64>, ImageError> {
        let mut found = 0u64;
        // SAFETY: live handle; caller keeps the range inside the file system.
        let code = unsafe { ll_find_used(self.raw, first, len, &mut found) };
        match code {
            0 => Ok(Some(found)),
            c if c == libc::ENOENT as c_long => Ok(None),
            c => Err(ext2fs_error(
                &self.path,
                "ext2fs_find_first_set_block_bitmap2",
                c,
            )),
        }
    }

    pub fn add_journal(&self, blocks: u32, goal: u64) -> Result<(), ImageError> {
        // SAFETY: live handle.
        let code = unsafe { ll_add_journal(self.raw, blocks, goal) };
        self.check("ext2fs_add_journal_inode3", code)
    }

    /// e2fsprogs 1.41's BLOCK_UNINIT rule: clears the flag on groups holding a descriptor
    /// backup (with reserved GDT blocks); returns how many groups changed.
    pub fn clear_block_uninit_on_gdt_backups(&self) -> Result<u64, ImageError> {
        let mut changed = 0u64;
        // SAFETY: live handle, opened read-write by the caller.
        let code = unsafe { ll_clear_block_uninit_on_gdt_backups(self.raw, &mut changed) };
        self.check("ext2fs_reserve_super_and_bgd (1.41 rule)", code)?;
        Ok(changed)
    }

    /// Clears EXT2_BG_INODE_ZEROED on every group (with its checksum): what mke2fs marks
    /// when told the storage is prezeroed and not when it zeroes the tables itself with
    /// lazy_itable_init on. Returns how many groups changed.
    pub fn clear_itable_zeroed(&self) -> Result<u64, ImageError> {
        let mut changed = 0u64;
        // SAFETY: live handle, opened read-write by the caller.
        let code = unsafe { ll_clear_itable_zeroed(self.raw, &mut changed) };
        self.check("ext2fs_bg_flags_clear (ITABLE_ZEROED)", code)?;
        Ok(changed)
    }

    /// e2fsprogs 1.40's journal length: maps `extra` more data blocks to block-mapped inode
    /// `ino` past its i_size, each the first free block after the last mapped one.
    pub fn map_blocks_past_size(&self, ino: u32, extra: u32) -> Result<(), ImageError> {
        // SAFETY: live handle, opened read-write by the caller.
        let code = unsafe { ll_map_blocks_past_size(self.raw, ino, extra) };
        self.check("ext2fs_bmap2 (1.40 journal block past its size)", code)
    }

    /// Moves the block bitmap, inode bitmap and inode table of groups `first..` to the
    /// places given, one `(block bitmap, inode bitmap, inode table)` per group.
    pub fn move_group_tables(
        &self,
        first: u32,
        places: &[(u64, u64, u64)],
    ) -> Result<(), ImageError> {
        let bb: Vec<u64> = places.iter().map(|p| p.0).collect();
        let ib: Vec<u64> = places.iter().map(|p| p.1).collect();
        let it: Vec<u64> = places.iter().map(|p| p.2).collect();
        let n = u32::try_from(places.len()).expect("groups fit in u32");
        // SAFETY: live handle opened read-write; the three arrays hold `n` values each.
        let code = unsafe {
            ll_move_group_tables(self.raw, first, n, bb.as_ptr(), ib.as_ptr(), it.as_ptr())
        };
        self.check("moving group tables (1.41 flex packing)", code)
    }
}

impl Drop for Fs {
    fn drop(&mut self) {
        if !self.raw.is_null() {
            // SAFETY: the handle is live and dropped exactly once.
            unsafe { ll_discard(self.raw) };
        }
    }
}
