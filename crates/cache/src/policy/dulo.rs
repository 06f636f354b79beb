//! DULO, DUal LOcality (Jiang, Ding, Chen, Tan & Zhang, FAST '05): an LRU stack whose
//! bottom part is re-ordered so that blocks which would be re-read *together* (a run
//! contiguous on disk, fetched in one period) leave before random blocks, each of which
//! would cost a seek of its own to read again.
//!
//! **Where the disk addresses come from.** Pages are named by physical block
//! ([`crate::stream`]: mapping and data blocks of one device), so block `b + 1` is `b`'s
//! neighbour on disk and DULO reads its sequences off the page names; the [`Replacement`]
//! trait is unchanged and no other policy looks at the names.
//!
//! **The rules, and their source.** The FAST '05 text itself was not reachable from here; the
//! rules are taken from the authors' own account of DULO (Jiang, Ding et al., the DULO chapter
//! of *Advanced Operating Systems and Kernel Applications*, 2010, as excerpted at
//! what-when-how.com, pp. 131-133) and the paper's abstract:
//! - The stack is split into a *staging section* at the top — a *correlation buffer* (fixed
//!   size) above a *sequencing bank* (0 to `BANK_MAX` blocks) — and an *eviction section*
//!   below. A hit moves the block to the stack's top; the correlation buffer's bottom block
//!   then drops into the bank.
//! - Only misses trigger sequencing: when the bank holds `BANK_MAX` blocks, they are sorted
//!   by disk location and cut into *sequences* (a random block is a sequence of size 1), which
//!   go into the eviction section.
//! - A sequence ends where the next block is not the next on disk, where the two blocks'
//!   fetch histories disagree (a *block table* keeps each block's two most recent fetch times
//!   on a *disk access clock* that ticks once per block fetched: one block fetched once and
//!   the other twice, or their earlier fetch times more than one tick apart), or at 128
//!   blocks.
//! - GreedyDual-Size orders the eviction section: a sequence `s` enters with
//!   `H(s) = L + 1/size(s)`, the smallest `H` leaves first, and `L` (the inflation value)
//!   becomes the `H` of the sequence last evicted from. Long sequences go first; a short one
//!   left alone long enough is passed by newer sequences' inflated `H` and goes too.
//!
//! **Choices where that text leaves it open** (none from a result):
//! - sizes: correlation buffer and `BANK_MAX` each a tenth of the cache (at least one page);
//! - eviction is one block a miss, from the lowest-`H` sequence, in disk order (the stack
//!   evicts blocks; a sequence partly evicted stays contiguous);
//! - equal `H` (as every size-1 sequence of one refill has): the least recently used leaves
//!   first, so with no sequences at all DULO is LRU at the bank's granularity;
//! - the most recent fetch times are not compared: the bank itself is the "limited time
//!   period" the blocks of a sequence were fetched in;
//! - a hit in the eviction section takes the block out of its sequence and leaves the rest
//!   of the sequence's `H` unchanged; nothing in the block table is ever reset (the paper
//!   resets an entry when its disk block is freed, which a read-only stream never does).

use crate::list::PageList;
use crate::Replacement;
use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap, VecDeque};

/// Longest sequence (blocks), as the authors' account sets it.
pub const MAX_SEQUENCE: usize = 128;

/// Where a sequence sits in the eviction section: by `H`, then least recently used first.
#[derive(Clone, Copy, Debug)]
struct SeqKey {
    h: f64,
    /// Most recent access (the policy's access count) of any of its blocks at its forming.
    recency: u64,
    id: u64,
}

impl PartialEq for SeqKey {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for SeqKey {}
impl PartialOrd for SeqKey {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for SeqKey {
    fn cmp(&self, o: &Self) -> Ordering {
        self.h
            .total_cmp(&o.h)
            .then(self.recency.cmp(&o.recency))
            .then(self.id.cmp(&o.id))
    }
}

/// A block table entry: the two most recent fetch times on the disk access clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Fetches {
    recent: u64,
    before: Option<u64>,
}

/// A DULO cache.
pub struct Dulo {
    capacity: usize,
    corr_max: usize,
    bank_max: usize,
    /// Correlation buffer, most recent at the front.
    corr: PageList,
    /// Sequencing bank, most recent at the front.
    bank: PageList,
    /// Eviction section: sequences by key, each its remaining blocks in disk order.
    evict: BTreeMap<SeqKey, VecDeque<u64>>,
    seq_of: HashMap<u64, SeqKey>,
    /// GreedyDual-Size's inflation value `L`.
    inflation: f64,
    /// Disk access clock: ticks once per block fetched.
    clock: u64,
    table: HashMap<u64, Fetches>,
    /// Accesses so far, and each block's last.
    now: u64,
    last_access: HashMap<u64, u64>,
    next_id: u64,
}

impl Dulo {
    /// An empty cache of `capacity` pages, correlation buffer and bank a tenth of it each.
    pub fn new(capacity: usize) -> Dulo {
        let tenth = capacity.div_ceil(10).max(1);
        Dulo::with_sections(capacity, tenth, tenth)
    }

    /// An empty cache of `capacity` pages with a correlation buffer of `corr` pages and a
    /// bank of at most `bank` (for hand-worked traces).
    pub fn with_sections(capacity: usize, corr: usize, bank: usize) -> Dulo {
        Dulo {
            capacity,
            corr_max: corr.max(1),
            bank_max: bank.max(1),
            corr: PageList::new(),
            bank: PageList::new(),
            evict: BTreeMap::new(),
            seq_of: HashMap::new(),
            inflation: 0.0,
            clock: 0,
            table: HashMap::new(),
            now: 0,
            last_access: HashMap::new(),
            next_id: 0,
        }
    }

    /// The eviction section's sequences, first to go first, with their `H` (for tests).
    pub fn sequences(&self) -> Vec<(Vec<u64>, f64)> {
        self.evict
            .iter()
            .map(|(k, s)| (s.iter().copied().collect(), k.h))
            .collect()
    }

    /// The inflation value `L` now (for tests).
    pub fn inflation(&self) -> f64 {
        self.inflation
    }

    /// `b` may follow `a` in one sequence: next on disk, and fetch histories that agree.
    fn continues(&self, a: u64, b: u64) -> bool {
        if b != a + 1 {
            return false;
        }
        match (self.table[&a].before, self.table[&b].before) {
            (None, None) => true,
            (Some(x), Some(y)) => x.abs_diff(y) <= 1,
            _ => false,
        }
    }

    /// The bank's blocks, sorted by disk location and cut into sequences, into the eviction
    /// section at `H = L + 1/size`.
    fn refill(&mut self) {
        let mut blocks: Vec<u64> = self.bank.iter().collect();
        self.bank = PageList::new();
        blocks.sort_unstable();
        let mut seqs: Vec<VecDeque<u64>> = Vec::new();
        for b in blocks {
            match seqs.last_mut() {
                Some(s)
                    if s.len() < MAX_SEQUENCE
                        && self.continues(*s.back().expect("non-empty"), b) =>
                {
                    s.push_back(b)
                }
                _ => seqs.push(VecDeque::from([b])),
            }
        }
        for s in seqs {
            let key = SeqKey {
                h: self.inflation + 1.0 / s.len() as f64,
                recency: s.iter().map(|b| self.last_access[b]).max().unwrap_or(0),
                id: self.next_id,
            };
            self.next_id += 1;
            for &b in &s {
                self.seq_of.insert(b, key);
            }
            self.evict.insert(key, s);
        }
    }

    /// Evict one block: the first of the lowest-`H` sequence.
    fn evict_one(&mut self) {
        if self.evict.is_empty() {
            if self.bank.is_empty() {
                // A cache too small for its sections: the stack's bottom is the buffer's.
                if let Some(b) = self.corr.pop_back() {
                    self.bank.push_front(b);
                }
            }
            self.refill();
        }
        let mut first = self.evict.first_entry().expect("a resident block to evict");
        let key = *first.key();
        let b = first
            .get_mut()
            .pop_front()
            .expect("sequences are non-empty");
        if first.get().is_empty() {
            first.remove();
        }
        self.seq_of.remove(&b);
        self.inflation = key.h;
    }

    /// The block just put at the stack's top pushes the buffer's bottom into the bank.
    fn spill(&mut self) {
        while self.corr.len() > self.corr_max {
            let b = self.corr.pop_back().expect("over its size");
            self.bank.push_front(b);
        }
    }

    /// Takes `page` out of wherever it is resident; false when it is not.
    fn take(&mut self, page: u64) -> bool {
        if self.corr.remove(page) || self.bank.remove(page) {
            return true;
        }
        let Some(key) = self.seq_of.remove(&page) else {
            return false;
        };
        let s = self.evict.get_mut(&key).expect("listed sequence");
        s.retain(|&b| b != page);
        if s.is_empty() {
            self.evict.remove(&key);
        }
        true
    }
}

impl Replacement for Dulo {
    fn name(&self) -> &'static str {
        "dulo"
    }
    fn capacity_pages(&self) -> usize {
        self.capacity
    }
    fn resident_pages(&self) -> usize {
        self.corr.len() + self.bank.len() + self.seq_of.len()
    }
    fn access(&mut self, page: u64) -> bool {
        self.now += 1;
        self.last_access.insert(page, self.now);
        if self.take(page) {
            self.corr.push_front(page);
            self.spill();
            return true;
        }
        self.clock += 1;
        let recent = self.clock;
        self.table
            .entry(page)
            .and_modify(|f| {
                f.before = Some(f.recent);
                f.recent = recent;
            })
            .or_insert(Fetches {
                recent,
                before: None,
            });
        if self.resident_pages() >= self.capacity {
            self.evict_one();
        }
        self.corr.push_front(page);
        self.spill();
        if self.bank.len() >= self.bank_max {
            self.refill();
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::lru::Lru;
    use crate::simulate;

    #[test]
    fn a_sequence_goes_before_older_random_blocks_of_its_refill() {
        // 8 pages, buffer 1, bank 5. 7, then 100 101 102 read in a row, then 50 and 300:
        // at 300 the buffer holds 300 and the bank [50 102 101 100 7] is full, so it is
        // sorted (7 | 50 | 100 101 102, each fetched once) and cut into two random blocks at
        // H = 0 + 1 (7 the less recent) and one sequence at H = 1/3.
        let mut d = Dulo::with_sections(8, 1, 5);
        simulate(&mut d, &[7, 100, 101, 102, 50, 300]);
        assert_eq!(
            d.sequences(),
            [
                (vec![100, 101, 102], 1.0 / 3.0),
                (vec![7], 1.0),
                (vec![50], 1.0)
            ]
        );
        // 400 500 fill the cache (8 pages); 600 700 800 then each evict one block: the
        // sequence's, although 7 is the least recently used page (LRU evicts 7, 100, 101).
        // At 800 the bank [700 600 500 400 300] refills at H = 1/3 + 1, behind 7 and 50.
        let rest = [400, 500, 600, 700, 800];
        simulate(&mut d, &rest);
        assert_eq!(d.inflation(), 1.0 / 3.0);
        assert_eq!(d.sequences()[..2], [(vec![7], 1.0), (vec![50], 1.0)]);
        assert_eq!(d.sequences().len(), 7);
        assert!(d.sequences()[2..]
            .iter()
            .all(|(s, h)| s.len() == 1 && (h - 4.0 / 3.0).abs() < 1e-12));
        let mut lru = Lru::new(8);
        simulate(&mut lru, &[7, 100, 101, 102, 50, 300]);
        simulate(&mut lru, &rest);
        // 7 hits under DULO and misses under LRU; 102, the sequence's last block, the reverse.
        assert!(d.access(7));
        assert!(!d.access(102));
        assert!(lru.access(102));
        assert!(!lru.access(7));
    }

    /// The blocks of `d`'s eviction section, by sequence.
    fn seqs(d: &Dulo) -> Vec<Vec<u64>> {
        d.sequences().into_iter().map(|(s, _)| s).collect()
    }

    #[test]
    fn adjacent_blocks_whose_fetch_histories_disagree_are_two_sequences() {
        // 3 pages, buffer 1, bank 2 (a refill every second block dropping from the buffer).
        // 30 31 are read in a row (clock 1, 2) and become one sequence at 90; 91..93 evict
        // them; 30 31 read in a row again (clock 7, 8) meet in the bank at 94: 30's earlier
        // fetch is 1 and 31's 2, one tick apart, so they are one sequence again.
        let mut d = Dulo::with_sections(3, 1, 2);
        simulate(&mut d, &[30, 31, 90, 91, 92, 93, 30, 31, 94]);
        assert_eq!(d.sequences(), [(vec![30, 31], 2.0)]);
        // 31 read once long before (clock 1), 30 never: when 30 31 meet in the bank, 30 has
        // one fetch time and 31 two, so they are two sequences of one block.
        let mut d = Dulo::with_sections(3, 1, 2);
        simulate(&mut d, &[31, 90, 91, 92, 93, 95, 30, 31, 94]);
        assert_eq!(seqs(&d), [vec![30], vec![31]]);
        // The same stream with 32 for the first 31: both fetched once, one sequence.
        let mut d = Dulo::with_sections(3, 1, 2);
        simulate(&mut d, &[32, 90, 91, 92, 93, 95, 30, 31, 94]);
        assert_eq!(seqs(&d), [vec![30, 31]]);
    }

    #[test]
    fn inflation_lets_an_idle_random_block_go_before_newer_sequences() {
        // 6 pages, buffer 1, bank 2. 7 and 90 enter alone at H = 1; the pair 1000 1001 at
        // 1/2. At 1020 the cache is full: the pair's first block goes (L = 1/2) though 7 and
        // 90 are older, and the pair 1010 1011 enters at L + 1/2 = 1.
        let mut d = Dulo::with_sections(6, 1, 2);
        simulate(&mut d, &[7, 90, 1000, 1001, 1010, 1011, 1020, 1021]);
        assert_eq!(d.inflation(), 0.5);
        assert_eq!(
            d.sequences(),
            [(vec![7], 1.0), (vec![90], 1.0), (vec![1010, 1011], 1.0)]
        );
        // The newer pair now ties with 7 instead of going first: 7, least recent, goes.
        assert!(!d.access(1030));
        assert_eq!(d.inflation(), 1.0);
        assert_eq!(seqs(&d), [vec![90], vec![1010, 1011], vec![1020, 1021]]);
    }

    #[test]
    fn with_no_neighbours_on_disk_dulo_evicts_as_lru_does() {
        // Every block alone: a refill's blocks all enter at H = L + 1, later refills at no
        // less, ties go least recent first — LRU's order, hit for hit.
        use rand::{Rng, SeedableRng};
        for seed in 0..10u64 {
            let mut r = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
            let pages: Vec<u64> = (0..3000)
                .map(|_| 3 * r.gen_range(0..(50 + 20 * seed)))
                .collect();
            for capacity in [3usize, 17, 40] {
                let mut d = Dulo::new(capacity);
                let mut l = Lru::new(capacity);
                assert_eq!(
                    simulate(&mut d, &pages).hit,
                    simulate(&mut l, &pages).hit,
                    "seed {seed}, {capacity} pages"
                );
            }
        }
    }
}
