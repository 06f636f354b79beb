//! Allocation machinery the policies are built from, of two kinds:
//! - mechanism, which decides nothing: free space as per-group bitmaps (`bitmap`), a
//!   directory's block usage (`dir_growth`), the namespace bookkeeping of an aging stream
//!   (`namespace`), and the kernel's block-mapping path of one file, which asks the policy
//!   where mapping blocks go (`writer`'s `IndirectPlacer`);
//! - the kernel allocators of each era, which do decide, each as the kernel functions its
//!   header names decide: inode placement (`ialloc` for 2.6.23 ext3, `ext4_ialloc`), block
//!   allocation (`ext3_alloc`'s reservation windows, `mballoc`), and the planners that run a
//!   population through them (`ext3_fs`, `ext4_fs`).
//!
//! A policy (`crate::policy`) picks an era's allocators and decides what differs from them
//! (where an indirect block goes, which inode chooser and goal rules an ext4 era uses).

pub mod bitmap;
pub mod dir_growth;
pub mod ext3_alloc;
pub mod ext3_fs;
pub mod ext4_fs;
pub mod ext4_ialloc;
pub mod ialloc;
pub mod mballoc;
pub mod namespace;
pub mod writer;

pub use bitmap::FreeMap;
