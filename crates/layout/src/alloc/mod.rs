//! Allocation machinery shared by the policies: it keeps free space and answers searches,
//! and decides nothing (the policies decide where).

pub mod bitmap;
pub mod ext3_alloc;
pub mod ext3_fs;
pub mod ext4_fs;
pub mod ext4_ialloc;
pub mod ialloc;
pub mod mballoc;
pub mod namespace;
pub mod writer;

pub use bitmap::FreeMap;
