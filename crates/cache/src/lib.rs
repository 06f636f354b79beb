//! A page-cache simulator: which block reads a cache of a given size absorbs, under each
//! page-replacement policy, and the misses as a block trace the device models price.
//!
//! This crate owns the [`Replacement`] trait (one policy per file under `policy/`: LRU,
//! Belady's OPT, Linux 2.6.3x's two lists, today's Linux with refault distances, ARC, LIRS, CLOCK-Pro, DULO),
//! the registry [`POLICIES`], and the step from a file's [`Plan`](layoutlab_layout::Plan)
//! to the pages a read touches ([`stream`]: its mapping blocks outermost first, then its data
//! block, as `ext4_get_branch()`/`ext4_find_extent()` walk them). It does no I/O and does not
//! price anything: [`misses_trace`] hands a [`Trace`] to `layoutlab-device`'s replay.
//!
//! ```
//! use layoutlab_cache::{by_name, simulate};
//! // Pages 1 and 2 are reused, 3 and 4 are touched once.
//! let pages = [1, 2, 3, 1, 2, 4, 1, 2];
//! let mut lru = by_name("lru", 3, &pages).unwrap();
//! let mut opt = by_name("opt", 3, &pages).unwrap();
//! assert!(simulate(opt.as_mut(), &pages).misses() <= simulate(lru.as_mut(), &pages).misses());
//! ```

pub mod list;
pub mod policy;
pub mod stream;

pub use policy::{by_name, PolicyInfo, POLICIES};
pub use stream::{misses_trace, stream, Access};

/// A page-replacement policy: a cache of a fixed number of pages answering one access at a
/// time. Every policy here loads the page it misses (no bypass), so Belady's OPT bounds them.
pub trait Replacement {
    /// Registry name ("lru", "arc", ...).
    fn name(&self) -> &'static str;
    /// Pages it may hold.
    fn capacity_pages(&self) -> usize;
    /// Pages it holds now (never more than the capacity).
    fn resident_pages(&self) -> usize;
    /// Touch `page`: true on a hit; on a miss the page is loaded (evicting as needed).
    ///
    /// A page is named by its physical block ([`stream`] names mapping and data blocks of
    /// one device alike), so `page + 1` is its neighbour on disk: DULO reads its sequences
    /// from that, and the other policies treat the name as opaque.
    fn access(&mut self, page: u64) -> bool;
    /// Touch `page`, a metadata block read through the buffer cache (`sb_getblk()`), where
    /// a policy models the kernel's path for it; the others see a plain [`access`].
    ///
    /// [`access`]: Replacement::access
    fn access_buffer(&mut self, page: u64) -> bool {
        self.access(page)
    }
}

/// Errors of this crate.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// No policy of that name.
    #[error("unknown cache policy '{0}'; valid: {1}")]
    UnknownPolicy(String, String),
    /// A capacity the policy cannot work with.
    #[error("policy {policy}: a cache of {pages} pages is too small (at least {min})")]
    Capacity {
        /// The policy.
        policy: &'static str,
        /// Pages asked.
        pages: usize,
        /// Pages it needs at least.
        min: usize,
    },
    /// A file the stream cannot be built for.
    #[error("{0}")]
    Layout(String),
}

/// Hits and misses of one simulation, per access.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// For each access, whether it hit.
    pub hit: Vec<bool>,
}

impl Outcome {
    /// Number of misses.
    pub fn misses(&self) -> u64 {
        self.hit.iter().filter(|h| !**h).count() as u64
    }

    /// Misses of the mapping blocks of `accesses` (the stream simulated).
    pub fn mapping_misses(&self, accesses: &[Access]) -> u64 {
        accesses
            .iter()
            .zip(&self.hit)
            .filter(|(a, h)| a.mapping && !**h)
            .count() as u64
    }
}

/// Runs a file's read stream through `policy`: mapping blocks as buffer-cache reads.
pub fn simulate_stream(policy: &mut dyn Replacement, accesses: &[Access]) -> Outcome {
    Outcome {
        hit: accesses
            .iter()
            .map(|a| {
                if a.mapping {
                    policy.access_buffer(a.block)
                } else {
                    policy.access(a.block)
                }
            })
            .collect(),
    }
}

/// Runs `pages` through `policy` (fresh or warm, as given).
pub fn simulate(policy: &mut dyn Replacement, pages: &[u64]) -> Outcome {
    Outcome {
        hit: pages.iter().map(|&p| policy.access(p)).collect(),
    }
}
