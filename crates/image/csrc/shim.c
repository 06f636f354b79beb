/*
 * shim.c - thin wrappers around libext2fs with plain C signatures for Rust's FFI.
 *
 * Every on-disk structure (inodes, bitmaps, group counts, directory entries, indirect blocks,
 * the journal) is written by libext2fs itself; this file only decides *which* libext2fs call
 * runs with *which* block numbers, as the layout plan says.  No on-disk format is encoded here.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <ext2fs/ext2fs.h>
#include <et/com_err.h>

typedef uint64_t u64;
typedef uint32_t u32;

/* Stable error text for a libext2fs/com_err code. */
const char *ll_error_message(long code)
{
	return error_message((errcode_t)code);
}

long ll_open(const char *path, int rw, ext2_filsys *out)
{
	ext2_filsys fs = NULL;
	int flags = EXT2_FLAG_64BITS | (rw ? EXT2_FLAG_RW : 0);
	errcode_t err;

	add_error_table(&et_ext2_error_table);
	err = ext2fs_open2(path, NULL, flags, 0, 0, unix_io_manager, &fs);
	if (err)
		return err;
	err = ext2fs_read_bitmaps(fs);
	if (err) {
		ext2fs_free(fs);
		return err;
	}
	/*
	 * libext2fs stamps new inodes' i_crtime and the superblock's s_wtime with fs->now, or
	 * the clock when it is 0: the mkfs time instead makes an image a function of its plan.
	 */
	if (rw && fs->super->s_mkfs_time)
		fs->now = fs->super->s_mkfs_time;
	*out = fs;
	return 0;
}

/* Flush everything (bitmaps, group descriptors, superblock) and free. */
long ll_close(ext2_filsys fs)
{
	return ext2fs_close_free(&fs);
}

/* Free without writing anything back: used when a plan is rejected. */
void ll_discard(ext2_filsys fs)
{
	if (fs)
		fs->flags &= ~(EXT2_FLAG_DIRTY | EXT2_FLAG_IB_DIRTY | EXT2_FLAG_BB_DIRTY);
	ext2fs_free(fs);
}

struct ll_super {
	u64 blocks_count;
	u64 free_blocks;
	u64 first_data_block;
	u64 reserved_blocks;
	u32 block_size;
	u32 blocks_per_group;
	u32 inodes_per_group;
	u32 inodes_count;
	u32 free_inodes;
	u32 group_count;
	u32 first_ino;
	u32 inode_size;
	u32 feature_compat;
	u32 feature_incompat;
	u32 feature_ro_compat;
	u32 journal_inum;
	u32 mkfs_time;
};

void ll_super_info(ext2_filsys fs, struct ll_super *s)
{
	struct ext2_super_block *sb = fs->super;

	s->blocks_count = ext2fs_blocks_count(sb);
	s->free_blocks = ext2fs_free_blocks_count(sb);
	s->first_data_block = sb->s_first_data_block;
	s->reserved_blocks = ext2fs_r_blocks_count(sb);
	s->block_size = fs->blocksize;
	s->blocks_per_group = sb->s_blocks_per_group;
	s->inodes_per_group = sb->s_inodes_per_group;
	s->inodes_count = sb->s_inodes_count;
	s->free_inodes = sb->s_free_inodes_count;
	s->group_count = fs->group_desc_count;
	s->first_ino = EXT2_FIRST_INO(sb);
	s->inode_size = EXT2_INODE_SIZE(sb);
	s->feature_compat = sb->s_feature_compat;
	s->feature_incompat = sb->s_feature_incompat;
	s->feature_ro_compat = sb->s_feature_ro_compat;
	s->journal_inum = sb->s_journal_inum;
	s->mkfs_time = sb->s_mkfs_time;
}

void ll_group_info(ext2_filsys fs, u32 group, u64 *free_blocks, u32 *free_inodes,
		   u32 *used_dirs, u64 *first_block, u64 *inode_table)
{
	*free_blocks = ext2fs_bg_free_blocks_count(fs, group);
	*free_inodes = ext2fs_bg_free_inodes_count(fs, group);
	*used_dirs = ext2fs_bg_used_dirs_count(fs, group);
	*first_block = ext2fs_group_first_block2(fs, group);
	*inode_table = ext2fs_inode_table_loc(fs, group);
}

int ll_block_in_use(ext2_filsys fs, u64 blk)
{
	return ext2fs_test_block_bitmap2(fs->block_map, blk) != 0;
}

int ll_inode_in_use(ext2_filsys fs, u32 ino)
{
	return ext2fs_test_inode_bitmap2(fs->inode_map, ino) != 0;
}

/* Used blocks of [start, start+count) as runs; calls back once per run. */
void ll_used_runs(ext2_filsys fs, u64 start, u64 count,
		  void (*cb)(void *ctx, u64 first, u64 len), void *ctx)
{
	u64 end = start + count, blk = start, run = 0, len = 0;

	for (; blk < end; blk++) {
		if (ext2fs_fast_test_block_bitmap2(fs->block_map, blk)) {
			if (!len)
				run = blk;
			len++;
		} else if (len) {
			cb(ctx, run, len);
			len = 0;
		}
	}
	if (len)
		cb(ctx, run, len);
}

struct ll_inode_info {
	u64 size_bytes;
	u64 blocks_fs;		/* i_blocks in file-system blocks */
	u32 mode;
	u32 links;
	u32 flags;
	u32 block0;		/* i_block[0]: root directory block for a fresh fs */
	u32 block1;		/* i_block[1]: a device's new-style number */
};

long ll_read_inode(ext2_filsys fs, u32 ino, struct ll_inode_info *info)
{
	struct ext2_inode inode;
	errcode_t err = ext2fs_read_inode(fs, ino, &inode);

	if (err)
		return err;
	info->size_bytes = EXT2_I_SIZE(&inode);
	/* stat's 512-byte units, huge_file scaling included */
	info->blocks_fs = ext2fs_get_stat_i_blocks(fs, &inode) / (fs->blocksize / 512);
	info->mode = inode.i_mode;
	info->links = inode.i_links_count;
	info->flags = inode.i_flags;
	info->block0 = inode.i_block[0];
	info->block1 = inode.i_block[1];
	return 0;
}

/* ---------- block walking (inspect) ---------- */

typedef void (*ll_block_cb)(void *ctx, int64_t blockcnt, u64 physical, u64 ref_blk,
			    int ref_offset);

struct walk_ctx {
	ll_block_cb cb;
	void *ctx;
};

static int walk_proc(ext2_filsys fs, blk64_t *blocknr, e2_blkcnt_t blockcnt, blk64_t ref_blk,
		     int ref_offset, void *priv)
{
	struct walk_ctx *w = priv;
	(void)fs;
	w->cb(w->ctx, blockcnt, *blocknr, ref_blk, ref_offset);
	return 0;
}

/*
 * Every slot of a block-mapped inode's map, holes included (physical 0), mapping blocks
 * included (blockcnt -1/-2/-3 for IND/DIND/TIND, before what they map).  Holes are reported
 * (BLOCK_FLAG_APPEND) because without them libext2fs 1.47 gives no reliable position for an
 * indirect block: its ref_offset skips the zero slots of a DIND/TIND block.  The caller
 * counts logical positions from the data slots and the sizes of skipped subtrees.
 */
long ll_walk_blocks(ext2_filsys fs, u32 ino, ll_block_cb cb, void *ctx)
{
	struct walk_ctx w = { cb, ctx };

	return ext2fs_block_iterate3(fs, ino, BLOCK_FLAG_READ_ONLY | BLOCK_FLAG_APPEND, NULL,
				     walk_proc, &w);
}

/* Extent-mapped inode: leaf extents and tree nodes (kind 0 = data extent, 1 = tree block). */
typedef void (*ll_extent_cb)(void *ctx, int kind, u64 logical, u64 physical, u64 len,
			     int level, int max_depth);

long ll_walk_extents(ext2_filsys fs, u32 ino, ll_extent_cb cb, void *ctx)
{
	ext2_extent_handle_t handle;
	struct ext2fs_extent extent;
	struct ext2_extent_info info;
	errcode_t err;
	int op = EXT2_EXTENT_ROOT;

	err = ext2fs_extent_open(fs, ino, &handle);
	if (err)
		return err;
	for (;;) {
		err = ext2fs_extent_get(handle, op, &extent);
		if (err == EXT2_ET_EXTENT_NO_NEXT) {
			err = 0;
			break;
		}
		if (err)
			break;
		op = EXT2_EXTENT_NEXT;
		if (extent.e_flags & EXT2_EXTENT_FLAGS_SECOND_VISIT)
			continue;
		err = ext2fs_extent_get_info(handle, &info);
		if (err)
			break;
		if (extent.e_flags & EXT2_EXTENT_FLAGS_LEAF)
			cb(ctx, 0, extent.e_lblk, extent.e_pblk, extent.e_len, info.curr_level,
			   info.max_depth);
		else
			cb(ctx, 1, extent.e_lblk, extent.e_pblk, 1, info.curr_level,
			   info.max_depth);
	}
	ext2fs_extent_free(handle);
	return err;
}

typedef void (*ll_dirent_cb)(void *ctx, const char *name, int name_len, u32 ino);

struct dir_ctx {
	ll_dirent_cb cb;
	void *ctx;
};

static int dir_proc(struct ext2_dir_entry *dirent, int offset, int blocksize, char *buf,
		    void *priv)
{
	struct dir_ctx *d = priv;
	(void)offset;
	(void)blocksize;
	(void)buf;
	if (dirent->inode)
		d->cb(d->ctx, dirent->name, ext2fs_dirent_name_len(dirent), dirent->inode);
	return 0;
}

long ll_walk_dir(ext2_filsys fs, u32 dir, ll_dirent_cb cb, void *ctx)
{
	struct dir_ctx d = { cb, ctx };

	return ext2fs_dir_iterate(fs, dir, 0, NULL, dir_proc, &d);
}

/* ---------- writing (materialize) ---------- */

/*
 * A new inode of type `mode` (S_IFREG, S_IFDIR, S_IFCHR, S_IFBLK, S_IFIFO, S_IFSOCK with
 * permissions), counted in the group (bitmap, free counts, used dirs).  A device's numbers
 * go in i_block as e2fsprogs' misc/create_inode.c (do_mknod_internal) puts them: the old
 * 16-bit form in i_block[0] when both fit in a byte, else the new form in i_block[1].
 */
long ll_create_inode(ext2_filsys fs, u32 ino, u32 mode, u32 major, u32 minor, u32 timestamp)
{
	struct ext2_inode inode;
	errcode_t err;
	int is_dir = LINUX_S_ISDIR(mode);

	memset(&inode, 0, sizeof(inode));
	inode.i_mode = mode;
	inode.i_links_count = is_dir ? 2 : 1;
	inode.i_atime = inode.i_ctime = inode.i_mtime = timestamp;
	if (LINUX_S_ISCHR(mode) || LINUX_S_ISBLK(mode)) {
		if (major < 256 && minor < 256) {
			inode.i_block[0] = major * 256 + minor;
			inode.i_block[1] = 0;
		} else {
			inode.i_block[0] = 0;
			inode.i_block[1] = (minor & 0xff) | (major << 8) | ((minor & ~0xffU) << 12);
		}
	}
	err = ext2fs_write_new_inode(fs, ino, &inode);
	if (err)
		return err;
	ext2fs_inode_alloc_stats2(fs, ino, +1, is_dir);
	return 0;
}

/* Hands out the plan's blocks, in order, to libext2fs's block allocations. */
struct plan_blocks {
	const u64 *order;
	size_t n, next;
};

static errcode_t plan_blocks_alloc(ext2_filsys fs, blk64_t goal, blk64_t *ret)
{
	struct plan_blocks *p = fs->priv_data;
	(void)goal;

	if (!p || p->next >= p->n)
		return EXT2_ET_BLOCK_ALLOC_FAIL;
	*ret = p->order[p->next++];
	return 0;
}

/*
 * A symlink at inode `ino` (not linked anywhere yet): ext2fs_symlink() writes it, fast (the
 * target in i_block) or slow (the target in one block, which must be `blk`: the allocator
 * callback hands it out).  Its times are then set to `timestamp` for reproducible images.
 */
long ll_symlink(ext2_filsys fs, u32 ino, const char *target, u64 blk, u32 timestamp)
{
	struct plan_blocks p = { (const u64 *)&blk, blk ? 1 : 0, 0 };
	errcode_t err, (*old)(ext2_filsys, blk64_t, blk64_t *) = NULL;
	void *old_priv = fs->priv_data;
	struct ext2_inode inode;

	fs->priv_data = &p;
	ext2fs_set_alloc_block_callback(fs, plan_blocks_alloc, &old);
	err = ext2fs_symlink(fs, EXT2_ROOT_INO, ino, NULL, target);
	ext2fs_set_alloc_block_callback(fs, old, NULL);
	fs->priv_data = old_priv;
	if (err)
		return err;
	if (p.next != p.n)
		return EXT2_ET_BLOCK_ALLOC_FAIL;
	err = ext2fs_read_inode(fs, ino, &inode);
	if (err)
		return err;
	inode.i_atime = inode.i_ctime = inode.i_mtime = timestamp;
	return ext2fs_write_inode(fs, ino, &inode);
}

/* A symlink's target (fast or slow) into buf (NUL-terminated, at most cap-1 bytes). */
long ll_read_symlink(ext2_filsys fs, u32 ino, char *buf, size_t cap)
{
	struct ext2_inode inode;
	errcode_t err = ext2fs_read_inode(fs, ino, &inode);
	u64 len;
	blk64_t blk = 0;
	char *block;

	if (err)
		return err;
	len = EXT2_I_SIZE(&inode);
	if (len >= cap || len >= fs->blocksize)
		return EXT2_ET_INVALID_ARGUMENT;
	if (ext2fs_is_fast_symlink(&inode)) {
		memcpy(buf, (char *)inode.i_block, len);
		buf[len] = 0;
		return 0;
	}
	if (inode.i_flags & EXT4_INLINE_DATA_FL)
		return EXT2_ET_INLINE_DATA_CANT_ITERATE;
	err = ext2fs_bmap2(fs, ino, &inode, NULL, 0, 0, NULL, &blk);
	if (err)
		return err;
	if (!blk)
		return EXT2_ET_BAD_BLOCK_NUM;
	err = ext2fs_get_mem(fs->blocksize, &block);
	if (err)
		return err;
	err = io_channel_read_blk64(fs->io, blk, 1, block);
	if (!err) {
		memcpy(buf, block, len);
		buf[len] = 0;
	}
	ext2fs_free_mem(&block);
	return err;
}

/*
 * An extent-mapped inode's tree: extents (logical, physical, len) in logical order are
 * inserted one after another with ext2fs_extent_insert(), which splits full nodes itself
 * (lib/ext2fs/extent.c extent_node_split()); every tree block it allocates comes from
 * `tree` in order (the plan's blocks, in the order the layout's mapping module predicts).
 * The data blocks' bitmap bits are the caller's (ll_mark_blocks).
 */
long ll_set_extents(ext2_filsys fs, u32 ino, const u64 *extents, size_t nextents,
		    const u64 *tree, size_t ntree, u64 *placed)
{
	struct plan_blocks p = { tree, ntree, 0 };
	errcode_t err, (*old)(ext2_filsys, blk64_t, blk64_t *) = NULL;
	void *old_priv = fs->priv_data;
	struct ext2_inode inode;
	ext2_extent_handle_t handle;
	size_t i;

	*placed = 0;
	err = ext2fs_read_inode(fs, ino, &inode);
	if (err)
		return err;
	memset(inode.i_block, 0, sizeof(inode.i_block));
	inode.i_flags &= ~EXT4_EXTENTS_FL;
	/* an all-zero i_block: the handle sets up an empty root and EXT4_EXTENTS_FL */
	err = ext2fs_extent_open2(fs, ino, &inode, &handle);
	if (err)
		return err;
	fs->priv_data = &p;
	ext2fs_set_alloc_block_callback(fs, plan_blocks_alloc, &old);
	for (i = 0; i < nextents && !err; i++) {
		struct ext2fs_extent e;

		e.e_lblk = extents[3 * i];
		e.e_pblk = extents[3 * i + 1];
		e.e_len = (u32)extents[3 * i + 2];
		e.e_flags = 0;
		err = ext2fs_extent_insert(handle, i ? EXT2_EXTENT_INSERT_AFTER : 0, &e);
	}
	if (!err && nextents)
		err = ext2fs_extent_fix_parents(handle);
	ext2fs_set_alloc_block_callback(fs, old, NULL);
	fs->priv_data = old_priv;
	ext2fs_extent_free(handle);
	*placed = p.next;
	if (err)
		return err;
	if (p.next != p.n)
		return EXT2_ET_BLOCK_ALLOC_FAIL;
	return ext2fs_write_inode(fs, ino, &inode);
}

/* i_size, i_blocks (in fs blocks) and an optional link-count increment. */
long ll_finish_inode(ext2_filsys fs, u32 ino, u64 size_bytes, u64 blocks_fs, int add_links)
{
	struct ext2_inode inode;
	errcode_t err;

	err = ext2fs_read_inode(fs, ino, &inode);
	if (err)
		return err;
	err = ext2fs_inode_size_set(fs, &inode, size_bytes);
	if (err)
		return err;
	err = ext2fs_iblk_set(fs, &inode, blocks_fs);
	if (err)
		return err;
	inode.i_links_count += add_links;
	return ext2fs_write_inode(fs, ino, &inode);
}

long ll_add_links(ext2_filsys fs, u32 ino, int add_links)
{
	struct ext2_inode inode;
	errcode_t err = ext2fs_read_inode(fs, ino, &inode);

	if (err)
		return err;
	inode.i_links_count += add_links;
	return ext2fs_write_inode(fs, ino, &inode);
}

/* Forget an inode's block map (its blocks must have been given back by the caller). */
long ll_clear_block_map(ext2_filsys fs, u32 ino)
{
	struct ext2_inode inode;
	errcode_t err = ext2fs_read_inode(fs, ino, &inode);

	if (err)
		return err;
	memset(inode.i_block, 0, sizeof(inode.i_block));
	inode.i_flags &= ~EXT4_EXTENTS_FL;
	err = ext2fs_iblk_set(fs, &inode, 0);
	if (err)
		return err;
	err = ext2fs_inode_size_set(fs, &inode, 0);
	if (err)
		return err;
	return ext2fs_write_inode(fs, ino, &inode);
}

/* First used block in [first, first+len), or returns ENOENT when all are free. */
long ll_find_used(ext2_filsys fs, u64 first, u64 len, u64 *found)
{
	blk64_t out = 0;
	errcode_t err;

	if (!len)
		return ENOENT;
	err = ext2fs_find_first_set_block_bitmap2(fs->block_map, first, first + len - 1, &out);
	*found = out;
	return err;
}

/* Account data runs in the bitmaps and group counts. */
void ll_mark_blocks(ext2_filsys fs, u64 first, u64 len, int inuse)
{
	while (len) {
		blk_t chunk = len > 0x40000000 ? 0x40000000 : (blk_t)len;
		ext2fs_block_alloc_stats_range(fs, first, chunk, inuse);
		first += chunk;
		len -= chunk;
	}
}

/* Directory block `blk`: with "." and ".." when dir_ino != 0, else one empty entry. */
long ll_write_dir_block(ext2_filsys fs, u64 blk, u32 dir_ino, u32 parent_ino, u32 owner)
{
	char *buf;
	errcode_t err = ext2fs_new_dir_block(fs, dir_ino, parent_ino, &buf);

	if (err)
		return err;
	err = ext2fs_write_dir_block4(fs, blk, buf, 0, owner);
	ext2fs_free_mem(&buf);
	return err;
}

/* The EXT2_FT_* code of an i_mode. */
static int file_type_of(u32 mode)
{
	if (LINUX_S_ISREG(mode))
		return EXT2_FT_REG_FILE;
	if (LINUX_S_ISDIR(mode))
		return EXT2_FT_DIR;
	if (LINUX_S_ISCHR(mode))
		return EXT2_FT_CHRDEV;
	if (LINUX_S_ISBLK(mode))
		return EXT2_FT_BLKDEV;
	if (LINUX_S_ISLNK(mode))
		return EXT2_FT_SYMLINK;
	if (LINUX_S_ISFIFO(mode))
		return EXT2_FT_FIFO;
	if (LINUX_S_ISSOCK(mode))
		return EXT2_FT_SOCK;
	return EXT2_FT_UNKNOWN;
}

/* A directory entry; its file type comes from the inode's mode (when filetype is on). */
long ll_link(ext2_filsys fs, u32 dir, const char *name, u32 ino)
{
	struct ext2_inode inode;
	int ft = 0;
	errcode_t err;

	if (ext2fs_has_feature_filetype(fs->super)) {
		err = ext2fs_read_inode(fs, ino, &inode);
		if (err)
			return err;
		ft = file_type_of(inode.i_mode);
	}
	return ext2fs_link(fs, dir, name, ino, ft);
}

/* One directory block being filled by ll_dir_fill. */
struct fill_block {
	char *buf;
	unsigned int last_off;	/* offset of the block's last entry */
	unsigned int last_used;	/* bytes that entry needs (0: an empty entry) */
	unsigned int limit;	/* where that entry's record ends */
	int dirty;
};

/*
 * Append entries to directory `dir`, whose blocks are `blocks` in logical order, where
 * ext2fs_link() would put them one call at a time: the first block whose last record has
 * room (lib/ext2fs/link.c link_proc: a used entry with room after its own record is split; an
 * empty entry large enough is taken as it is). Entries only ever being added, a block's free
 * room is always in its last record, so each block is read once, its entries set with
 * libext2fs's accessors, and written once by ext2fs_write_dir_block4() (which sets the
 * checksum). ext2fs_link() rescans the directory from its first block for every name, which is
 * quadratic in a directory's size. `names` holds n NUL-terminated names back to back.
 * On EXT2_ET_DIR_NO_SPACE, *placed is the index of the entry that fits nowhere.
 */
long ll_dir_fill(ext2_filsys fs, u32 dir, const u64 *blocks, size_t nblocks,
		 const char *names, const u32 *inos, size_t n, size_t *placed)
{
	unsigned int bs = fs->blocksize;
	unsigned int csum = ext2fs_has_feature_metadata_csum(fs->super) ?
		sizeof(struct ext2_dir_entry_tail) : 0;
	int filetype = ext2fs_has_feature_filetype(fs->super);
	struct fill_block *fb;
	errcode_t err = 0;
	size_t b, i;

	*placed = 0;
	fb = calloc(nblocks ? nblocks : 1, sizeof(*fb));
	if (!fb)
		return EXT2_ET_NO_MEMORY;
	for (b = 0; b < nblocks && !err; b++) {
		unsigned int off = 0, rec_len = 0;
		struct ext2_dir_entry *d;

		err = ext2fs_get_mem(bs, &fb[b].buf);
		if (err)
			break;
		err = ext2fs_read_dir_block4(fs, blocks[b], fb[b].buf, 0, dir);
		if (err)
			break;
		for (;;) {
			d = (struct ext2_dir_entry *)(fb[b].buf + off);
			err = ext2fs_get_rec_len(fs, d, &rec_len);
			if (err)
				break;
			if (rec_len < 8 || off + rec_len >= bs - csum)
				break;
			off += rec_len;
		}
		fb[b].last_off = off;
		fb[b].limit = off + rec_len;
		fb[b].last_used = d->inode ? ext2fs_dir_rec_len(ext2fs_dirent_name_len(d), 0) : 0;
	}
	for (i = 0; i < n && !err; i++) {
		const char *name = names;
		unsigned int len = strlen(name);
		unsigned int need = ext2fs_dir_rec_len(len, 0);
		struct ext2_dir_entry *d;
		struct ext2_inode inode;
		int ft = 0;

		names += len + 1;
		for (b = 0; b < nblocks; b++)
			if (fb[b].limit - fb[b].last_off - fb[b].last_used >= need)
				break;
		if (b == nblocks) {
			*placed = i;
			err = EXT2_ET_DIR_NO_SPACE;
			break;
		}
		if (filetype) {
			err = ext2fs_read_inode(fs, inos[i], &inode);
			if (err)
				break;
			ft = file_type_of(inode.i_mode);
		}
		if (fb[b].last_used) {
			/* split the last record: it keeps what it needs, the rest is the new one */
			d = (struct ext2_dir_entry *)(fb[b].buf + fb[b].last_off);
			err = ext2fs_set_rec_len(fs, fb[b].last_used, d);
			if (err)
				break;
			fb[b].last_off += fb[b].last_used;
			d = (struct ext2_dir_entry *)(fb[b].buf + fb[b].last_off);
			err = ext2fs_set_rec_len(fs, fb[b].limit - fb[b].last_off, d);
			if (err)
				break;
		}
		d = (struct ext2_dir_entry *)(fb[b].buf + fb[b].last_off);
		d->inode = inos[i];
		ext2fs_dirent_set_name_len(d, len);
		memcpy(d->name, name, len);
		ext2fs_dirent_set_file_type(d, filetype ? ft : 0);
		fb[b].last_used = need;
		fb[b].dirty = 1;
	}
	for (b = 0; b < nblocks && !err; b++)
		if (fb[b].dirty)
			err = ext2fs_write_dir_block4(fs, blocks[b], fb[b].buf, 0, dir);
	if (!err)
		*placed = n;
	for (b = 0; b < nblocks; b++)
		if (fb[b].buf)
			ext2fs_free_mem(&fb[b].buf);
	free(fb);
	return err;
}

/*
 * A plan's block map for one inode: data runs (logical, physical, len) in logical order and
 * mapping blocks (level 1..3 = IND..TIND, logical base, physical) sorted by (level, logical).
 */
struct ll_map {
	const u64 *runs;	/* 3 * nruns */
	size_t nruns;
	const u64 *maps;	/* 3 * nmaps */
	size_t nmaps;
	/* iterate path state */
	size_t run_idx;
	u64 cursor;		/* next logical block the iteration will reach */
	u64 end_logical;	/* one past the last planned data block */
	u64 apb;		/* block addresses per mapping block */
	errcode_t err;
	char *zero_block;	/* one block of zeros */
	/* bmap path state: mapping blocks in the order bmap2 asks for them */
	const u64 *alloc_order;
	size_t nalloc, alloc_next;
	u64 mapping_placed;
};

static u64 map_lookup(struct ll_map *m, u64 level, u64 logical)
{
	size_t lo = 0, hi = m->nmaps;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const u64 *e = m->maps + 3 * mid;
		if (e[0] < level || (e[0] == level && e[1] < logical))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < m->nmaps && m->maps[3 * lo] == level && m->maps[3 * lo + 1] == logical)
		return m->maps[3 * lo + 2];
	return 0;
}

static u64 span_of(struct ll_map *m, int level)
{
	u64 s = m->apb;
	while (--level > 0)
		s *= m->apb;
	return s;
}

/* Called by ext2fs_block_iterate3 for every slot, holes included (BLOCK_FLAG_APPEND). */
static int set_proc(ext2_filsys fs, blk64_t *blocknr, e2_blkcnt_t blockcnt, blk64_t ref_blk,
		    int ref_offset, void *priv)
{
	struct ll_map *m = priv;
	(void)ref_blk;
	(void)ref_offset;

	if (blockcnt < 0) {
		int level = (int)-blockcnt;
		u64 blk;

		if (m->cursor >= m->end_logical)
			return BLOCK_ABORT;
		blk = map_lookup(m, level, m->cursor);
		if (!blk) {
			/* the iterator skips this whole subtree */
			m->cursor += span_of(m, level);
			return 0;
		}
		/*
		 * The iterator reads the block next: it must hold zeros (no stale pointers).
		 * A plain block write rather than ext2fs_zero_blocks2, whose zero-out becomes an
		 * fallocate() per block on an image file and leaves the read to miss the cache.
		 */
		m->err = io_channel_write_blk64(fs->io, blk, 1, m->zero_block);
		if (m->err)
			return BLOCK_ABORT | BLOCK_ERROR;
		ext2fs_block_alloc_stats2(fs, blk, +1);
		m->mapping_placed++;
		*blocknr = blk;
		return BLOCK_CHANGED;
	}
	m->cursor = (u64)blockcnt + 1;
	while (m->run_idx < m->nruns &&
	       m->runs[3 * m->run_idx] + m->runs[3 * m->run_idx + 2] <= (u64)blockcnt)
		m->run_idx++;
	if (m->run_idx < m->nruns && m->runs[3 * m->run_idx] <= (u64)blockcnt) {
		const u64 *r = m->runs + 3 * m->run_idx;
		*blocknr = r[1] + ((u64)blockcnt - r[0]);
		if (m->cursor >= m->end_logical)
			return BLOCK_CHANGED | BLOCK_ABORT;
		return BLOCK_CHANGED;
	}
	return m->cursor >= m->end_logical ? BLOCK_ABORT : 0;
}

static void init_map(ext2_filsys fs, struct ll_map *m, const u64 *runs, size_t nruns,
		     const u64 *maps, size_t nmaps)
{
	memset(m, 0, sizeof(*m));
	m->runs = runs;
	m->nruns = nruns;
	m->maps = maps;
	m->nmaps = nmaps;
	m->apb = fs->blocksize / 4;
	if (nruns)
		m->end_logical = runs[3 * (nruns - 1)] + runs[3 * (nruns - 1) + 2];
}

/*
 * Fast path: one ext2fs_block_iterate3 pass with BLOCK_FLAG_APPEND fills the inode's block
 * map; each indirect block is read and written once per 1024 entries by libext2fs.
 * Returns the number of mapping blocks placed in *placed.
 */
long ll_set_block_map_iterate(ext2_filsys fs, u32 ino, const u64 *runs, size_t nruns,
			      const u64 *maps, size_t nmaps, u64 *placed)
{
	struct ll_map m;
	errcode_t err;

	init_map(fs, &m, runs, nruns, maps, nmaps);
	*placed = 0;
	if (!nruns)
		return 0;
	err = ext2fs_get_memzero(fs->blocksize, &m.zero_block);
	if (err)
		return err;
	err = ext2fs_block_iterate3(fs, ino, BLOCK_FLAG_APPEND, NULL, set_proc, &m);
	ext2fs_free_mem(&m.zero_block);
	*placed = m.mapping_placed;
	if (m.err)
		return m.err;
	return err;
}

static errcode_t plan_alloc_block(ext2_filsys fs, blk64_t goal, blk64_t *ret)
{
	struct ll_map *m = fs->priv_data;
	(void)goal;

	if (!m || m->alloc_next >= m->nalloc)
		return EXT2_ET_BLOCK_ALLOC_FAIL;
	*ret = m->alloc_order[m->alloc_next++];
	m->mapping_placed++;
	return 0;
}

/*
 * Reference path: ext2fs_bmap2(BMAP_SET|BMAP_ALLOC) once per data block; bmap2 asks the
 * allocator callback for each mapping block it needs, and gets the plan's blocks in the order
 * it asks (alloc_order: physical block numbers).
 */
long ll_set_block_map_bmap(ext2_filsys fs, u32 ino, const u64 *runs, size_t nruns,
			   const u64 *alloc_order, size_t nalloc, u64 *placed)
{
	struct ll_map m;
	struct ext2_inode inode;
	errcode_t err, (*old)(ext2_filsys, blk64_t, blk64_t *) = NULL;
	void *old_priv = fs->priv_data;
	char *buf = NULL;
	size_t i;

	init_map(fs, &m, runs, nruns, NULL, 0);
	m.alloc_order = alloc_order;
	m.nalloc = nalloc;
	*placed = 0;
	err = ext2fs_read_inode(fs, ino, &inode);
	if (err)
		return err;
	err = ext2fs_get_array(2, fs->blocksize, &buf);
	if (err)
		return err;
	fs->priv_data = &m;
	ext2fs_set_alloc_block_callback(fs, plan_alloc_block, &old);
	for (i = 0; i < nruns && !err; i++) {
		u64 j;
		for (j = 0; j < runs[3 * i + 2] && !err; j++) {
			blk64_t phys = runs[3 * i + 1] + j;
			err = ext2fs_bmap2(fs, ino, &inode, buf, BMAP_SET | BMAP_ALLOC,
					   runs[3 * i] + j, NULL, &phys);
		}
	}
	ext2fs_set_alloc_block_callback(fs, old, NULL);
	fs->priv_data = old_priv;
	ext2fs_free_mem(&buf);
	*placed = m.mapping_placed;
	if (!err && m.alloc_next != nalloc)
		err = EXT2_ET_BLOCK_ALLOC_FAIL;
	return err;
}

/* First free block at or after the previous one handed out (journal of a block-mapped fs). */
static errcode_t next_free_after_goal(ext2_filsys fs, blk64_t goal, blk64_t *ret)
{
	blk64_t *next = fs->priv_data;
	errcode_t err;
	(void)goal;

	err = ext2fs_new_block2(fs, *next, NULL, ret);
	if (!err)
		*next = *ret + 1;
	return err;
}

/*
 * A journal of `blocks` blocks placed from `goal` (lazily initialised: stays sparse).
 * For block-mapped file systems libext2fs 1.47.0 drops the goal (ext2fs_fallocate allocates
 * through ext2fs_bmap2, whose goal is the inode's group), so the allocator callback supplies
 * it: each journal block, data or indirect, is the first free one after the previous.
 */
long ll_add_journal(ext2_filsys fs, u32 blocks, u64 goal)
{
	struct ext2fs_journal_params jp;
	errcode_t err, (*old)(ext2_filsys, blk64_t, blk64_t *) = NULL;
	void *old_priv = fs->priv_data;
	blk64_t next = goal;
	int hook = !ext2fs_has_feature_extents(fs->super);

	jp.num_journal_blocks = blocks;
	jp.num_fc_blocks = 0;
	if (hook) {
		err = ext2fs_read_bitmaps(fs);
		if (err)
			return err;
		fs->priv_data = &next;
		ext2fs_set_alloc_block_callback(fs, next_free_after_goal, &old);
	}
	err = ext2fs_add_journal_inode3(fs, &jp, goal,
					EXT2_MKJOURNAL_LAZYINIT | EXT2_MKJOURNAL_NO_MNT_CHECK);
	if (hook) {
		ext2fs_set_alloc_block_callback(fs, old, NULL);
		fs->priv_data = old_priv;
	}
	return err;
}

/*
 * mke2fs 1.47 with `-E assume_storage_prezeroed=1` marks every group EXT2_BG_INODE_ZEROED
 * (misc/mke2fs.c write_inode_tables(): itable_zeroed), where zeroing the tables itself with
 * lazy_itable_init on (its default on kernels from 2.6.37) marks none. Clears the flag on every
 * group, with the group's checksum, so that the file system is the one mke2fs makes when it
 * zeroes. Returns the number of groups changed in *changed.
 */
long ll_clear_itable_zeroed(ext2_filsys fs, u64 *changed)
{
	dgrp_t g;

	*changed = 0;
	for (g = 0; g < fs->group_desc_count; g++) {
		if (!ext2fs_bg_flags_test(fs, g, EXT2_BG_INODE_ZEROED))
			continue;
		ext2fs_bg_flags_clear(fs, g, EXT2_BG_INODE_ZEROED);
		ext2fs_group_desc_csum_set(fs, g);
		(*changed)++;
	}
	if (*changed) {
		/* mke2fs wrote the flag into every descriptor copy: closing rewrites them all */
		fs->flags &= ~EXT2_FLAG_MASTER_SB_ONLY;
		ext2fs_mark_super_dirty(fs);
	}
	return 0;
}

/*
 * e2fsprogs 1.41's rule for BLOCK_UNINIT (lib/ext2fs/alloc_sb.c ext2fs_reserve_super_and_bgd):
 * a group that holds a backup of the group descriptors loses the flag when the file system has
 * reserved GDT blocks, so its block bitmap is written out rather than computed. Today's mke2fs
 * keeps the flag there. Loads the bitmaps (which computes the uninitialised ones), clears the
 * flag, and marks the bitmaps dirty so that closing writes those groups' bitmap blocks.
 * Returns the number of groups changed in *changed.
 */
long ll_clear_block_uninit_on_gdt_backups(ext2_filsys fs, u64 *changed)
{
	errcode_t err;
	dgrp_t g;
	blk64_t super_blk, old_desc, new_desc;
	blk_t used;

	*changed = 0;
	if (!fs->super->s_reserved_gdt_blocks || !ext2fs_has_group_desc_csum(fs))
		return 0;
	err = ext2fs_read_bitmaps(fs);
	if (err)
		return err;
	for (g = 0; g < fs->group_desc_count; g++) {
		err = ext2fs_super_and_bgd_loc2(fs, g, &super_blk, &old_desc, &new_desc, &used);
		if (err)
			return err;
		if (!old_desc || !ext2fs_bg_flags_test(fs, g, EXT2_BG_BLOCK_UNINIT))
			continue;
		ext2fs_bg_flags_clear(fs, g, EXT2_BG_BLOCK_UNINIT);
		ext2fs_group_desc_csum_set(fs, g);
		(*changed)++;
	}
	if (*changed) {
		ext2fs_mark_super_dirty(fs);
		ext2fs_mark_bb_dirty(fs);
	}
	return 0;
}

/*
 * e2fsprogs 1.40's journal length (lib/ext2fs/mkjournal.c mkjournal_proc() counts a block
 * down only for blockcnt > 0): `extra` more data blocks mapped to block-mapped inode `ino`
 * past its i_size, each the first free block after the last mapped one, as 1.40's
 * ext2fs_new_block(fs, last_blk) chose it; i_size is left alone. The indirect block that
 * maps them must exist already (for every 1.40 journal size it does: N - 12 is never a
 * multiple of the block's address count), else the call fails and changes nothing.
 */
long ll_map_blocks_past_size(ext2_filsys fs, u32 ino, u32 extra)
{
	struct ext2_inode inode;
	errcode_t err;
	blk64_t logical, last = 0, blk;
	u32 i;

	err = ext2fs_read_bitmaps(fs);
	if (err)
		return err;
	err = ext2fs_read_inode(fs, ino, &inode);
	if (err)
		return err;
	if (inode.i_flags & EXT4_EXTENTS_FL)
		return EINVAL;
	logical = EXT2_I_SIZE(&inode) / fs->blocksize;
	if (!logical)
		return EINVAL;
	err = ext2fs_bmap2(fs, ino, &inode, NULL, 0, logical - 1, NULL, &last);
	if (err)
		return err;
	for (i = 0; i < extra; i++, logical++) {
		err = ext2fs_new_block2(fs, last, NULL, &blk);
		if (err)
			return err;
		/* BMAP_SET without BMAP_ALLOC: fails rather than allocate an indirect block */
		err = ext2fs_bmap2(fs, ino, &inode, NULL, BMAP_SET, logical, NULL, &blk);
		if (err)
			return err;
		ext2fs_block_alloc_stats2(fs, blk, +1);
		/* 1.40 wrote a zeroed block there */
		err = ext2fs_zero_blocks2(fs, blk, 1, NULL, NULL);
		if (err)
			return err;
		err = ext2fs_iblk_add_blocks(fs, &inode, 1);
		if (err)
			return err;
		last = blk;
	}
	return ext2fs_write_inode(fs, ino, &inode);
}

/*
 * Moves the bitmaps and inode tables of groups first..first+n-1 to the given blocks (e2fsprogs
 * 1.41's packing of a short last flex group, which today's mke2fs does not make): frees every
 * old place first, then takes the new ones, so one group may move onto another's old place.
 * Inode tables are copied (a small file system's group 0 holds the root and lost+found);
 * the bitmaps are in memory and written at close. Fails before writing anything when a new
 * place is outside the file system or still in use.
 */
long ll_move_group_tables(ext2_filsys fs, u32 first, u32 n, const u64 *bb, const u64 *ib,
			  const u64 *it)
{
	errcode_t err;
	u32 i, itb = fs->inode_blocks_per_group;
	char *tables = NULL;

	if (first + n > fs->group_desc_count || n == 0)
		return EINVAL;
	err = ext2fs_read_bitmaps(fs);
	if (err)
		return err;
	err = ext2fs_get_mem((size_t)n * itb * fs->blocksize, &tables);
	if (err)
		return err;
	for (i = 0; i < n; i++) {
		dgrp_t g = first + i;
		err = io_channel_read_blk64(fs->io, ext2fs_inode_table_loc(fs, g), itb,
					    tables + (size_t)i * itb * fs->blocksize);
		if (err)
			goto out;
	}
	for (i = 0; i < n; i++) {
		dgrp_t g = first + i;
		ext2fs_block_alloc_stats2(fs, ext2fs_block_bitmap_loc(fs, g), -1);
		ext2fs_block_alloc_stats2(fs, ext2fs_inode_bitmap_loc(fs, g), -1);
		ext2fs_block_alloc_stats_range(fs, ext2fs_inode_table_loc(fs, g), itb, -1);
	}
	for (i = 0; i < n; i++) {
		if (bb[i] >= ext2fs_blocks_count(fs->super) ||
		    ib[i] >= ext2fs_blocks_count(fs->super) ||
		    it[i] + itb > ext2fs_blocks_count(fs->super) ||
		    ext2fs_test_block_bitmap2(fs->block_map, bb[i]) ||
		    ext2fs_test_block_bitmap2(fs->block_map, ib[i]) ||
		    !ext2fs_test_block_bitmap_range2(fs->block_map, it[i], itb)) {
			/* nothing written yet: the caller discards the handle */
			err = EXT2_ET_BLOCK_ALLOC_FAIL;
			goto out;
		}
		ext2fs_block_alloc_stats2(fs, bb[i], +1);
		ext2fs_block_alloc_stats2(fs, ib[i], +1);
		ext2fs_block_alloc_stats_range(fs, it[i], itb, +1);
	}
	for (i = 0; i < n; i++) {
		dgrp_t g = first + i;
		ext2fs_block_bitmap_loc_set(fs, g, bb[i]);
		ext2fs_inode_bitmap_loc_set(fs, g, ib[i]);
		ext2fs_inode_table_loc_set(fs, g, it[i]);
		err = io_channel_write_blk64(fs->io, it[i], itb,
					     tables + (size_t)i * itb * fs->blocksize);
		if (err)
			goto out;
		ext2fs_group_desc_csum_set(fs, g);
	}
	ext2fs_mark_super_dirty(fs);
	ext2fs_mark_bb_dirty(fs);
	ext2fs_mark_ib_dirty(fs);
out:
	ext2fs_free_mem(&tables);
	return err;
}
