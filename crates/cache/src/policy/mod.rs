//! The policies, one per file, and their one registry.

pub mod arc;
pub mod clock_pro;
pub mod dulo;
pub mod linux_26;
pub mod linux_refault;
pub mod lirs;
pub mod lru;
pub mod opt;
pub mod two_lists;

use crate::{CacheError, Replacement};

/// A registered policy: its name, what it is, and how to make one.
pub struct PolicyInfo {
    /// Registry name.
    pub name: &'static str,
    /// One line: what it is and where it comes from.
    pub about: &'static str,
    /// Fewest pages it works with.
    pub min_pages: usize,
    /// A cache of `capacity` pages; OPT reads the whole future from `pages` (the others
    /// ignore it).
    pub make: fn(capacity: usize, pages: &[u64]) -> Box<dyn Replacement>,
}

/// Every policy, in the order reports list them.
pub const POLICIES: &[PolicyInfo] = &[
    PolicyInfo {
        name: "opt",
        about: "Belady's MIN (1966): evict the page used farthest in the future; the bound",
        min_pages: 1,
        make: |c, p| Box::new(opt::Opt::new(c, p)),
    },
    PolicyInfo {
        name: "lru",
        about: "least recently used",
        min_pages: 1,
        make: |c, _| Box::new(lru::Lru::new(c)),
    },
    PolicyInfo {
        name: "linux-2.6.3x",
        about: "Linux 2.6.28-2.6.33 file LRU: inactive/active lists, second touch activates",
        min_pages: 2,
        make: |c, _| Box::new(linux_26::Linux26::new(c)),
    },
    PolicyInfo {
        name: "linux-6",
        about: "Linux 6.x file LRU (no MGLRU): two lists plus refault-distance activation",
        min_pages: 2,
        make: |c, _| Box::new(linux_refault::LinuxRefault::new(c)),
    },
    PolicyInfo {
        name: "arc",
        about: "ARC (Megiddo & Modha, FAST '03): adaptive split between recency and frequency",
        min_pages: 1,
        make: |c, _| Box::new(arc::Arc::new(c)),
    },
    PolicyInfo {
        name: "lirs",
        about: "LIRS (Jiang & Zhang, SIGMETRICS '02): inter-reference recency, 1% HIR",
        min_pages: 2,
        make: |c, _| Box::new(lirs::Lirs::new(c)),
    },
    PolicyInfo {
        name: "clock-pro",
        about: "CLOCK-Pro (Jiang, Chen & Zhang, ATC '05): LIRS's reuse distance on a clock",
        min_pages: 2,
        make: |c, _| Box::new(clock_pro::ClockPro::new(c)),
    },
    PolicyInfo {
        name: "dulo",
        about:
            "DULO (Jiang et al., FAST '05): LRU whose bottom evicts disk-contiguous sequences first",
        min_pages: 1,
        make: |c, _| Box::new(dulo::Dulo::new(c)),
    },
];

/// The policy `name` with `capacity` pages (`pages`: the whole stream, which OPT needs).
pub fn by_name(
    name: &str,
    capacity: usize,
    pages: &[u64],
) -> Result<Box<dyn Replacement>, CacheError> {
    let info = POLICIES.iter().find(|p| p.name == name).ok_or_else(|| {
        CacheError::UnknownPolicy(
            name.to_string(),
            POLICIES
                .iter()
                .map(|p| p.name)
                .collect::<Vec<_>>()
                .join(", "),
        )
    })?;
    if capacity < info.min_pages {
        return Err(CacheError::Capacity {
            policy: info.name,
            pages: capacity,
            min: info.min_pages,
        });
    }
    Ok((info.make)(capacity, pages))
}
