//! Inode placement of ext4 with flex_bg, before and after Ted Ts'o's February 2009 allocator
//! (kernel commit a4912123, "ext4: New inode/block allocation algorithms for flex_bg
//! filesystems", merged for 2.6.30). Read from fs/ext4/ialloc.c of 2.6.30 (which keeps the
//! 2008 allocator behind `-o oldalloc`):
//!
//! - 2008 (2.6.27-2.6.29 with flex_bg): every inode, directory or not, through
//!   `find_group_flex()` — the parent's flex group while it has a free inode and more than
//!   10% free blocks (`free_block_ratio`), else the flex group before it, else the first flex
//!   group with both (or the one with most free blocks); then the first group of that flex
//!   group with a free inode ([`find_group_flex`]).
//! - 2009: directories through `find_group_orlov()` working on flex groups (top-level
//!   directories spread to the flex group with fewest directories among those with at least
//!   average free inodes and blocks, from a random start; others stay near the parent), then
//!   the first group of the chosen flex group with a free inode; everything else through
//!   `find_group_other()`: the first group of the parent's flex group with a free inode
//!   ([`find_group_orlov_flex`], [`find_group_other_flex`]).
//!
//! Counts come from the shared [`InodeMap`] and [`FreeMap`]; nothing here decides blocks.

use crate::alloc::ialloc::InodeMap;
use crate::alloc::FreeMap;

/// Where a new inode goes: the group, given the parent's group, the parent's last
/// allocation, whether it is a directory made in the root, and a random start.
pub trait InodeChooser {
    /// The group for a new inode; None when no group has a free inode.
    #[allow(clippy::too_many_arguments)]
    fn choose(
        &self,
        inodes: &InodeMap,
        blocks: &FreeMap,
        parent_group: u64,
        last_alloc_group: Option<u64>,
        is_dir: bool,
        top_level: bool,
        random_start: u64,
        totals: &SbTotals,
    ) -> Option<u64>;
}

/// The file-system-wide counts Orlov averages over (`s_freeinodes_counter`,
/// `s_freeclusters_counter`, `s_dirs_counter`), as the allocator reads them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SbTotals {
    /// Free inodes.
    pub free_inodes: u64,
    /// Free blocks.
    pub free_blocks: u64,
    /// Directories.
    pub dirs: u64,
    /// Blocks the [`FreeMap`] shows used that the counters still count free, as (group,
    /// blocks): today's group preallocations' unused blocks (`ext4_mb_use_group_pa()` marks
    /// only the blocks it hands out in the on-disk bitmap and in `s_freeclusters_counter`
    /// and the flex group's `free_clusters`; the rest is held in the buddy alone).
    pub held: Vec<(u64, u64)>,
}

impl SbTotals {
    /// The exact counts.
    pub fn exact(inodes: &InodeMap, blocks: &FreeMap) -> SbTotals {
        let groups = blocks.group_count();
        SbTotals {
            free_inodes: (0..groups).map(|g| u64::from(inodes.free(g))).sum(),
            free_blocks: blocks.total_free(),
            dirs: (0..groups).map(|g| u64::from(inodes.dirs(g))).sum(),
            held: Vec::new(),
        }
    }
}

/// `percpu_counter_batch` on a machine of up to 16 CPUs: max(32, 2 x CPUs).
pub const PERCPU_BATCH: i64 = 32;

/// A kernel percpu counter as one CPU updates it (lib/percpu_counter.c
/// `percpu_counter_add_batch()`): changes gather in the CPU's delta and reach the global
/// count only when the delta reaches the batch; `percpu_counter_read_positive()`, which
/// find_group_orlov() uses, reads the global count alone. So the averages Orlov compares
/// flex groups against lag the truth by up to 31.
#[derive(Clone, Copy, Debug)]
pub struct PercpuCounter {
    global: i64,
    delta: i64,
}

impl PercpuCounter {
    /// A counter at `value` (as mount sets it from the descriptors).
    pub fn new(value: u64) -> PercpuCounter {
        PercpuCounter {
            global: value as i64,
            delta: 0,
        }
    }

    /// `percpu_counter_add_batch(amount, PERCPU_BATCH)`.
    pub fn add(&mut self, amount: i64) {
        self.delta += amount;
        if self.delta.abs() >= PERCPU_BATCH {
            self.global += self.delta;
            self.delta = 0;
        }
    }

    /// `percpu_counter_read_positive()`.
    pub fn read_positive(&self) -> u64 {
        self.global.max(0) as u64
    }
}

/// The three counters of [`SbTotals`] as percpu counters, kept by a planner.
#[derive(Clone, Debug)]
pub struct SbCounters {
    free_inodes: PercpuCounter,
    free_blocks: PercpuCounter,
    dirs: PercpuCounter,
    seen_free_blocks: u64,
}

impl SbCounters {
    /// Counters at the file system's state at mount.
    pub fn new(inodes: &InodeMap, blocks: &FreeMap) -> SbCounters {
        let t = SbTotals::exact(inodes, blocks);
        SbCounters {
            free_inodes: PercpuCounter::new(t.free_inodes),
            free_blocks: PercpuCounter::new(t.free_blocks),
            dirs: PercpuCounter::new(t.dirs),
            seen_free_blocks: t.free_blocks,
        }
    }

    /// An inode was taken (`ext4_new_inode()`: `percpu_counter_dec(&s_freeinodes_counter)`,
    /// and `percpu_counter_inc(&s_dirs_counter)` for a directory).
    pub fn took_inode(&mut self, is_dir: bool) {
        self.free_inodes.add(-1);
        if is_dir {
            self.dirs.add(1);
        }
    }

    /// An inode was freed (`ext4_free_inode()`: the counters move back).
    pub fn freed_inode(&mut self, is_dir: bool) {
        self.free_inodes.add(1);
        if is_dir {
            self.dirs.add(-1);
        }
    }

    /// The free blocks (as the counter counts them) are now `free`: one change of the counter by the difference (as one
    /// allocation or release would make it).
    pub fn blocks_now(&mut self, free: u64) {
        self.free_blocks
            .add(free as i64 - self.seen_free_blocks as i64);
        self.seen_free_blocks = free;
    }

    /// What `percpu_counter_read_positive()` gives for each; `held` as
    /// [`SbTotals::held`].
    pub fn read(&self, held: Vec<(u64, u64)>) -> SbTotals {
        SbTotals {
            free_inodes: self.free_inodes.read_positive(),
            free_blocks: self.free_blocks.read_positive(),
            dirs: self.dirs.read_positive(),
            held,
        }
    }
}

/// `free_block_ratio` of fs/ext4/ialloc.c: a flex group with at most 10% free blocks is
/// passed over.
pub const FREE_BLOCK_RATIO_PERCENT: u64 = 10;

/// Free inodes, free blocks and directories of flex group `flex` (`s_flex_groups[]`).
/// (`held`: blocks the map shows used that count as free, see [`SbTotals::held`].)
fn flex_stats(
    inodes: &InodeMap,
    blocks: &FreeMap,
    flex_size: u64,
    flex: u64,
    held: &[(u64, u64)],
) -> (u64, u64, u64) {
    let groups = blocks.group_count();
    let (mut fi, mut fb, mut dirs) = (0, 0, 0);
    for g in flex * flex_size..((flex + 1) * flex_size).min(groups) {
        fi += u64::from(inodes.free(g));
        fb += blocks.group_free(g);
        dirs += u64::from(inodes.dirs(g));
    }
    fb += held
        .iter()
        .filter(|(g, _)| g / flex_size == flex)
        .map(|(_, n)| n)
        .sum::<u64>();
    (fi, fb, dirs)
}

/// The first group of flex group `flex` with a free inode.
fn first_group_with_inode(
    inodes: &InodeMap,
    groups: u64,
    flex_size: u64,
    flex: u64,
) -> Option<u64> {
    (flex * flex_size..((flex + 1) * flex_size).min(groups)).find(|&g| inodes.free(g) > 0)
}

/// 2.6.28 `find_group_flex()` for an inode whose parent directory is in `parent_group`.
pub fn find_group_flex(
    inodes: &InodeMap,
    blocks: &FreeMap,
    flex_size: u64,
    parent_group: u64,
) -> Option<u64> {
    let groups = blocks.group_count();
    let n_flex = groups.div_ceil(flex_size);
    let blocks_per_flex = blocks.blocks_per_group() * flex_size;
    let parent_flex = parent_group / flex_size;
    let ratio = |fb: u64| fb * 100 / blocks_per_flex;
    let mut best = parent_flex;
    loop {
        let (fi, fb, _) = flex_stats(inodes, blocks, flex_size, best, &[]);
        if fi > 0 && ratio(fb) > FREE_BLOCK_RATIO_PERCENT {
            return first_group_with_inode(inodes, groups, flex_size, best);
        }
        if best > 0 && best == parent_flex {
            best -= 1;
            continue;
        }
        break;
    }
    for i in 0..n_flex {
        if i == parent_flex || i + 1 == parent_flex {
            continue;
        }
        let (fi, fb, _) = flex_stats(inodes, blocks, flex_size, i, &[]);
        if ratio(fb) > FREE_BLOCK_RATIO_PERCENT && fi > 0 {
            return first_group_with_inode(inodes, groups, flex_size, i);
        }
        let (bfi, bfb, _) = flex_stats(inodes, blocks, flex_size, best, &[]);
        if bfi == 0 || (fb > bfb && fi > 0) {
            best = i;
        }
    }
    let (bfi, bfb, _) = flex_stats(inodes, blocks, flex_size, best, &[]);
    if bfi == 0 || bfb == 0 {
        return None;
    }
    first_group_with_inode(inodes, groups, flex_size, best)
}

/// 2.6.30 `find_group_orlov()` with flex groups, for a directory whose parent is in
/// `parent_group` (`last_alloc_group`: where the parent's last child inode went, if any).
/// `random_start` stands for `get_random_bytes()`; `totals` are the file-system-wide counts
/// as the allocator reads them. `whole_flex_max_dirs`: today's `max_dirs = ndirs / ngroups +
/// inodes_per_group * flex_size / 16` (a 2022 fix of fs/ext4/ialloc.c); 2.6.30 allowed
/// `inodes_per_group / 16` more directories than average per flex group.
#[allow(clippy::too_many_arguments)]
pub fn find_group_orlov_flex(
    inodes: &InodeMap,
    blocks: &FreeMap,
    flex_size: u64,
    whole_flex_max_dirs: bool,
    parent_group: u64,
    last_alloc_group: Option<u64>,
    top_level: bool,
    random_start: u64,
    totals: &SbTotals,
) -> Option<u64> {
    let groups = blocks.group_count();
    let n = groups.div_ceil(flex_size);
    let ipg = u64::from(inodes.per_group());
    let (freei, freeb, ndirs) = (totals.free_inodes, totals.free_blocks, totals.dirs);
    let avefreei = freei / n;
    let avefreeb = freeb / n;
    let found = |flex: u64| first_group_with_inode(inodes, groups, flex_size, flex);
    if top_level {
        let start = random_start % n;
        let mut best: Option<u64> = None;
        let mut best_ndir = ipg;
        for i in 0..n {
            let g = (start + i) % n;
            let (fi, fb, dirs) = flex_stats(inodes, blocks, flex_size, g, &totals.held);
            if fi == 0 || dirs >= best_ndir || fi < avefreei || fb < avefreeb {
                continue;
            }
            best = Some(g);
            best_ndir = dirs;
        }
        if let Some(g) = best.and_then(found) {
            return Some(g);
        }
    } else {
        let slack = if whole_flex_max_dirs {
            ipg * flex_size / 16
        } else {
            ipg / 16
        };
        let max_dirs = ndirs / n + slack;
        let min_inodes = avefreei.saturating_sub(ipg * flex_size / 4).max(1);
        let min_blocks = avefreeb.saturating_sub(blocks.blocks_per_group() * flex_size / 4);
        let start = last_alloc_group.unwrap_or(parent_group) / flex_size;
        for i in 0..n {
            let g = (start + i) % n;
            let (fi, fb, dirs) = flex_stats(inodes, blocks, flex_size, g, &totals.held);
            if dirs >= max_dirs || fi < min_inodes || fb < min_blocks {
                continue;
            }
            if let Some(group) = found(g) {
                return Some(group);
            }
            break;
        }
    }
    // fallback: groups (not flex groups) from the parent's, at least average free inodes
    let mut avefreei = freei / groups;
    loop {
        for i in 0..groups {
            let g = (parent_group + i) % groups;
            let fi = u64::from(inodes.free(g));
            if fi > 0 && fi >= avefreei {
                return Some(g);
            }
        }
        if avefreei == 0 {
            return None;
        }
        avefreei = 0;
    }
}

/// 2.6.30 `find_group_other()` with flex groups: the first group of the parent's flex group
/// with a free inode, then of the flex group of the parent's last allocation, else a new
/// flex group by Orlov's search without the top-level rule.
pub fn find_group_other_flex(
    inodes: &InodeMap,
    blocks: &FreeMap,
    flex_size: u64,
    whole_flex_max_dirs: bool,
    parent_group: u64,
    last_alloc_group: Option<u64>,
    totals: &SbTotals,
) -> Option<u64> {
    let groups = blocks.group_count();
    let mut flex = parent_group / flex_size;
    if let Some(g) = first_group_with_inode(inodes, groups, flex_size, flex) {
        return Some(g);
    }
    if let Some(last) = last_alloc_group {
        flex = last / flex_size;
        if let Some(g) = first_group_with_inode(inodes, groups, flex_size, flex) {
            return Some(g);
        }
    }
    find_group_orlov_flex(
        inodes,
        blocks,
        flex_size,
        whole_flex_max_dirs,
        parent_group,
        last_alloc_group,
        false,
        0,
        totals,
    )
}

/// `find_group_orlov()` on flex groups for directories, `find_group_other()` for every other
/// inode: the inode allocator of 2.6.30 and of today's kernel alike (ext4-2009, ext4-kernel).
pub struct OrlovFlex {
    /// Groups per flex group.
    pub flex_size: u64,
    /// Today's `max_dirs` (see [`find_group_orlov_flex`]).
    pub whole_flex_max_dirs: bool,
}

impl InodeChooser for OrlovFlex {
    fn choose(
        &self,
        inodes: &InodeMap,
        blocks: &FreeMap,
        parent_group: u64,
        last_alloc_group: Option<u64>,
        is_dir: bool,
        top_level: bool,
        random_start: u64,
        totals: &SbTotals,
    ) -> Option<u64> {
        if is_dir {
            find_group_orlov_flex(
                inodes,
                blocks,
                self.flex_size,
                self.whole_flex_max_dirs,
                parent_group,
                last_alloc_group,
                top_level,
                random_start,
                totals,
            )
        } else {
            find_group_other_flex(
                inodes,
                blocks,
                self.flex_size,
                self.whole_flex_max_dirs,
                parent_group,
                last_alloc_group,
                totals,
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::Geometry;
    use crate::mkfs::MkfsProfile;

    fn fresh() -> (Geometry, FreeMap, InodeMap) {
        let p = MkfsProfile::by_name("ext4-2009").unwrap();
        // 64 groups: 4 flex groups of 16
        let geo = Geometry::new(&p, 64 * 32768 * 4096).unwrap();
        let map = geo.free_map();
        let inodes = InodeMap::new(&geo);
        (geo, map, inodes)
    }

    #[test]
    fn percpu_counters_lag_by_less_than_a_batch() {
        let mut c = PercpuCounter::new(1000);
        for _ in 0..31 {
            c.add(-1);
        }
        assert_eq!(c.read_positive(), 1000);
        c.add(-1);
        assert_eq!(c.read_positive(), 968);
        // a change of a batch or more reaches the global count at once
        c.add(-100);
        assert_eq!(c.read_positive(), 868);
    }

    #[test]
    fn flex_2008_packs_everything_in_the_parents_flex_group() {
        let (geo, map, mut inodes) = fresh();
        for _ in 0..3 {
            let g = find_group_flex(&inodes, &map, 16, 0).unwrap();
            assert_eq!(g, 0);
            inodes.take_dir(g);
        }
        // a child of a directory in flex group 2 stays there: its first group with an inode
        assert_eq!(find_group_flex(&inodes, &map, 16, 37), Some(32));
        // group 0 out of inodes: the next group of the same flex group
        while inodes.free(0) > 0 {
            inodes.take(0);
        }
        assert_eq!(find_group_flex(&inodes, &map, 16, 0), Some(1));
        assert_eq!(geo.flex_bg_size, 16);
    }

    #[test]
    fn flex_2008_passes_over_a_full_flex_group() {
        let (_, mut map, inodes) = fresh();
        // flex group 1 (groups 16..32) at most 10% free: the one before it is taken
        for g in 16..32 {
            let (a, b) = (map.group_first(g), map.group_end(g));
            while let Some(x) = map.next_free(a, b) {
                let e = map.next_used(x, b);
                map.mark_used(x, e - x);
            }
        }
        assert_eq!(find_group_flex(&inodes, &map, 16, 20), Some(0));
    }

    #[test]
    fn orlov_2009_spreads_top_level_directories_over_flex_groups() {
        let (_, map, mut inodes) = fresh();
        let mut got = Vec::new();
        for _ in 0..4 {
            let g = find_group_orlov_flex(
                &inodes,
                &map,
                16,
                false,
                0,
                None,
                true,
                1,
                &SbTotals::exact(&inodes, &map),
            )
            .unwrap();
            inodes.take_dir(g);
            got.push(g);
        }
        // flex group 0 has fewer free inodes than average (the reserved ones) and flex
        // group 2 fewer free blocks (the journal, in group 33): from start 1 each pick is the
        // first of the others with fewest directories, and its first group
        assert_eq!(got, vec![16, 48, 16, 48]);
        // files follow their parent's flex group
        assert_eq!(
            find_group_other_flex(
                &inodes,
                &map,
                16,
                false,
                33,
                None,
                &SbTotals::exact(&inodes, &map)
            ),
            Some(32)
        );
        // a subdirectory stays in its parent's flex group while it qualifies
        assert_eq!(
            find_group_orlov_flex(
                &inodes,
                &map,
                16,
                false,
                48,
                None,
                false,
                0,
                &SbTotals::exact(&inodes, &map)
            ),
            Some(48)
        );
    }
}
