//! The flash translation layer: page mapping of 4 KiB units, per-die greedy garbage
//! collection, the sequential and steady-state starting layouts, and the unit map. It counts NAND
//! work ([`DieWork`]); the timing of that work belongs to [`super::Ssd`].

use std::collections::HashMap;

/// What the flash translation layer has done since the model was built.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FtlStats {
    /// 4 KiB units the host wrote.
    pub host_units: u64,
    /// Valid units garbage collection copied out of victim blocks.
    pub copied_units: u64,
    /// Blocks garbage collection erased.
    pub erases: u64,
}

impl FtlStats {
    /// Write amplification: NAND unit writes per host unit write (1 when nothing was copied).
    pub fn write_amplification(&self) -> f64 {
        if self.host_units == 0 {
            return 1.0;
        }
        (self.host_units + self.copied_units) as f64 / self.host_units as f64
    }
}

/// Free blocks a die keeps for garbage collection's own copies: collection starts when a die
/// has fewer, so a victim's valid data always has somewhere to go.
pub(super) const GC_FREE_RESERVE: usize = 2;
/// Map value of a unit discarded after it was rewritten (no valid copy anywhere).
pub(super) const TRIMMED: u64 = u64::MAX;
/// Member slot left empty (padding of a flushed program unit).
pub(super) const NO_UNIT: u64 = u64::MAX;
pub(super) const BLOCK_FREE: u8 = 0;
pub(super) const BLOCK_OPEN: u8 = 1;
pub(super) const BLOCK_CLOSED: u8 = 2;

/// Where data the run has not rewritten lives: a pure function of the unit, so a 2 TB drive
/// needs no per-unit table.
#[derive(Clone, Debug)]
pub(super) enum Layout {
    /// A sequential fill: program unit `u / upp` on die `(u / upp) mod dies`, filling each
    /// die's blocks in order.
    Sequential,
    /// Steady state: unit `u` is at position `k = (mul·u + add) mod U` of the concatenated
    /// valid data, block `b` holding positions `prefix[b] .. prefix[b+1]`.
    Scattered {
        mul: u64,
        mul_inv: u64,
        add: u64,
        prefix: Vec<u64>,
    },
}

/// NAND operations a step of the FTL costs on one die.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct DieWork {
    pub(super) senses: u64,
    pub(super) programs: u64,
    pub(super) erases: u64,
}

/// A multiply-rotate hasher (the FxHash recipe): unit numbers are not adversarial, and
/// SipHash made map updates the model's main cost.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct UnitHasher(u64);

impl std::hash::Hasher for UnitHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

type UnitHash = std::hash::BuildHasherDefault<UnitHasher>;

/// Units rewritten during the run → `block << 32 | slot` (or `TRIMMED`): a dense table when
/// the drive is small enough (≤ 2^22 units, 32 MiB), else a hash map of the touched units.
#[derive(Clone, Debug)]
pub(super) enum UnitMap {
    Dense { locs: Vec<u64>, len: usize },
    Sparse(HashMap<u64, u64, UnitHash>),
}

/// Dense-table marker of a unit not in the map.
pub(super) const ABSENT: u64 = u64::MAX - 1;
pub(super) const DENSE_MAX_UNITS: u64 = 1 << 22;

impl UnitMap {
    pub(super) fn new(user_units: u64) -> UnitMap {
        if user_units <= DENSE_MAX_UNITS {
            UnitMap::Dense {
                locs: vec![ABSENT; user_units as usize],
                len: 0,
            }
        } else {
            UnitMap::Sparse(HashMap::default())
        }
    }
    pub(super) fn len(&self) -> usize {
        match self {
            UnitMap::Dense { len, .. } => *len,
            UnitMap::Sparse(m) => m.len(),
        }
    }
    pub(super) fn is_empty(&self) -> bool {
        self.len() == 0
    }
    pub(super) fn get(&self, unit: u64) -> Option<u64> {
        match self {
            UnitMap::Dense { locs, .. } => {
                locs.get(unit as usize).copied().filter(|&l| l != ABSENT)
            }
            UnitMap::Sparse(m) => m.get(&unit).copied(),
        }
    }
    /// Callers only insert units below the user capacity.
    pub(super) fn insert(&mut self, unit: u64, loc: u64) -> Option<u64> {
        match self {
            UnitMap::Dense { locs, len } => {
                let old = std::mem::replace(&mut locs[unit as usize], loc);
                if old == ABSENT {
                    *len += 1;
                    None
                } else {
                    Some(old)
                }
            }
            UnitMap::Sparse(m) => m.insert(unit, loc),
        }
    }
    /// The (unit, location) pairs with unit in `[first, end)`, in no particular order.
    pub(super) fn in_range(&self, first: u64, end: u64) -> Vec<(u64, u64)> {
        match self {
            UnitMap::Dense { locs, .. } => {
                let end = end.min(locs.len() as u64);
                (first.min(end)..end)
                    .filter_map(|u| Some((u, self.get(u)?)))
                    .collect()
            }
            UnitMap::Sparse(m) => {
                if end - first > m.len() as u64 {
                    m.iter()
                        .filter(|(&u, _)| u >= first && u < end)
                        .map(|(&u, &l)| (u, l))
                        .collect()
                } else {
                    (first..end)
                        .filter_map(|u| Some((u, self.get(u)?)))
                        .collect()
                }
            }
        }
    }
    /// Every location, in no particular order.
    #[cfg(test)]
    pub(super) fn values(&self) -> Vec<u64> {
        match self {
            UnitMap::Dense { locs, .. } => locs.iter().copied().filter(|&l| l != ABSENT).collect(),
            UnitMap::Sparse(m) => m.values().copied().collect(),
        }
    }
}

/// Page-mapping FTL with per-die greedy garbage collection. Blocks are multi-plane blocks
/// (`pages_per_block` program units) numbered die-major: block `b` is on die `b / bpd`.
/// Memory is per block plus per unit the run has written: units never rewritten are found
/// through [`Layout`], blocks holding only such units ("pristine") keep no member list.
#[derive(Clone, Debug)]
pub(super) struct Ftl {
    pub(super) dies: usize,
    /// 4 KiB units per program unit, per block; program units per block.
    pub(super) upp: u64,
    pub(super) upb: u64,
    pub(super) ppb: u64,
    /// Blocks per die.
    pub(super) bpd: u64,
    pub(super) user_units: u64,
    pub(super) layout: Layout,
    pub(super) valid: Vec<u32>,
    pub(super) state: Vec<u8>,
    pub(super) pristine: Vec<bool>,
    /// Logical unit written at each slot of a non-pristine block (`NO_UNIT` for padding).
    pub(super) members: Vec<Vec<u64>>,
    /// Units written during the run.
    pub(super) map: UnitMap,
    /// Free blocks (index within the die) per die; the last is taken next.
    pub(super) free: Vec<Vec<u32>>,
    pub(super) host_open: Vec<Option<u64>>,
    pub(super) gc_open: Vec<Option<u64>>,
    pub(super) stats: FtlStats,
}

pub(super) fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// `a⁻¹ mod m` for `gcd(a, m) = 1` (extended Euclid).
pub(super) fn mod_inverse(a: u64, m: u64) -> u64 {
    let (mut r0, mut r1) = (m as i128, a as i128);
    let (mut t0, mut t1) = (0i128, 1i128);
    while r1 != 0 {
        let q = r0 / r1;
        (r0, r1) = (r1, r0 - q * r1);
        (t0, t1) = (t1, t0 - q * t1);
    }
    t0.rem_euclid(m as i128) as u64
}

pub(super) fn mul_mod(a: u64, b: u64, m: u64) -> u64 {
    ((a as u128 * b as u128) % m as u128) as u64
}

impl Ftl {
    /// A drive of `dies × bpd` blocks holding `user_units` units, in the sequential state.
    pub(super) fn sequential(dies: usize, upp: u64, ppb: u64, bpd: u64, user_units: u64) -> Ftl {
        let blocks = dies * bpd as usize;
        let upb = upp * ppb;
        let mut valid = vec![0u32; blocks];
        // Program units on die d: those with index ≡ d (mod dies).
        let total_pu = user_units.div_ceil(upp);
        for die in 0..dies as u64 {
            let pus = if die < total_pu {
                (total_pu - die).div_ceil(dies as u64)
            } else {
                0
            };
            let mut units = pus * upp;
            if pus > 0 && (total_pu - 1) % dies as u64 == die {
                units -= total_pu * upp - user_units;
            }
            let mut i = 0;
            while units > 0 {
                let n = units.min(upb);
                valid[(die * bpd + i) as usize] = n as u32;
                units -= n;
                i += 1;
            }
        }
        Ftl::with_valid(dies, upp, ppb, bpd, user_units, Layout::Sequential, valid)
    }

    pub(super) fn with_valid(
        dies: usize,
        upp: u64,
        ppb: u64,
        bpd: u64,
        user_units: u64,
        layout: Layout,
        valid: Vec<u32>,
    ) -> Ftl {
        let blocks = valid.len();
        let mut free = vec![Vec::new(); dies];
        let mut state = vec![BLOCK_FREE; blocks];
        let mut pristine = vec![false; blocks];
        for (die, die_free) in free.iter_mut().enumerate() {
            // Reverse order: the lowest free block is taken first.
            for i in (0..bpd).rev() {
                let b = die * bpd as usize + i as usize;
                if valid[b] == 0 {
                    die_free.push(i as u32);
                } else {
                    state[b] = BLOCK_CLOSED;
                    pristine[b] = true;
                }
            }
        }
        Ftl {
            dies,
            upp,
            upb: upp * ppb,
            ppb,
            bpd,
            user_units,
            layout,
            valid,
            state,
            pristine,
            members: vec![Vec::new(); blocks],
            map: UnitMap::new(user_units),
            free,
            host_open: vec![None; dies],
            gc_open: vec![None; dies],
            stats: FtlStats::default(),
        }
    }

    /// The random-overwrite steady state of a drive of this shape. The per-block valid
    /// counts come from running this same greedy FTL on a scaled copy: one die of 512 blocks
    /// of `min(upb, 512)` units, with the real drive's ratio of user data to closed blocks,
    /// through a sequential fill and then `4 ×` its user capacity of uniform random writes.
    /// Each die of the real drive gets the quantiles of the copy's closed-block valid
    /// fractions, scaled to its block size, trimmed so the total is the user capacity. Unit
    /// placement within them is a fixed pseudo-random permutation ([`Layout::Scattered`]).
    /// Shrinking blocks to 512 units barely moves greedy's valid fractions (its write
    /// amplification converges as blocks grow; see the tests: 64- and 256-unit blocks differ
    /// by under 10%), and keeps the copy at 2^18 units, built in a fraction of a second.
    pub(super) fn random_steady(
        dies: usize,
        upp: u64,
        ppb: u64,
        bpd: u64,
        user_units: u64,
        seed: u64,
    ) -> Ftl {
        use rand::{Rng, SeedableRng};
        const SAMPLE_BLOCKS: u64 = 512;
        let upb = upp * ppb;
        let sample_upb = upb.min(512);
        // Blocks outside the steady-state population: on the real drive the collector's
        // reserve of free blocks per die (as just after a collection); in the copy also its
        // two open blocks.
        let reserve = GC_FREE_RESERVE as u64;
        let real_closed = dies as u64 * (bpd - reserve);
        let sample_closed = SAMPLE_BLOCKS - 1 - GC_FREE_RESERVE as u64;
        let sample_user = (sample_closed as u128 * sample_upb as u128 * user_units as u128
            / (real_closed as u128 * upb as u128)) as u64;
        let mut sample = Ftl::sequential(1, 1, sample_upb, SAMPLE_BLOCKS, sample_user);
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        for _ in 0..4 * sample_user {
            let Some(block) = sample.open_host(0, &mut DieWork::default()) else {
                break;
            };
            let u = rng.gen_range(0..sample_user);
            let slot = sample.members[block as usize].len() as u64;
            sample.place(u, block, slot);
        }
        let mut closed: Vec<u32> = (0..SAMPLE_BLOCKS as usize)
            .filter(|&b| sample.state[b] == BLOCK_CLOSED)
            .map(|b| (sample.valid[b] as u64 * upb / sample_upb) as u32)
            .collect();
        closed.sort_unstable();
        let mut valid = vec![0u32; dies * bpd as usize];
        for die in 0..dies {
            // The first blocks of each die stay free; the others take the copy's quantiles.
            for i in reserve..bpd {
                let q = ((i - reserve) * closed.len() as u64 / (bpd - reserve)) as usize;
                valid[die * bpd as usize + i as usize] = closed.get(q).copied().unwrap_or(0);
            }
        }
        // Trim the total to the user capacity, one unit per closed block at a time.
        let mut total: u64 = valid.iter().map(|&v| v as u64).sum();
        let mut b = 0usize;
        let mut idle_rounds = 0;
        while total != user_units && idle_rounds <= valid.len() {
            let v = valid[b];
            if total > user_units && v > 1 {
                valid[b] -= 1;
                total -= 1;
                idle_rounds = 0;
            } else if total < user_units && v > 0 && (v as u64) < upb {
                valid[b] += 1;
                total += 1;
                idle_rounds = 0;
            } else {
                idle_rounds += 1;
            }
            b = (b + 1) % valid.len();
        }
        let mut prefix = Vec::with_capacity(valid.len() + 1);
        let mut acc = 0u64;
        prefix.push(0);
        for &v in &valid {
            acc += v as u64;
            prefix.push(acc);
        }
        let u = acc.max(1);
        let mut mul = 0x9E37_79B9_7F4A_7C15 % u;
        while u > 1 && (mul < 2 || gcd(mul, u) != 1) {
            mul = (mul + 1) % u;
        }
        if u == 1 {
            mul = 0;
        }
        let layout = Layout::Scattered {
            mul,
            mul_inv: if u > 1 { mod_inverse(mul, u) } else { 0 },
            add: seed % u,
            prefix,
        };
        Ftl::with_valid(dies, upp, ppb, bpd, acc, layout, valid)
    }

    pub(super) fn die_of(&self, block: u64) -> usize {
        (block / self.bpd) as usize
    }

    /// (block, slot) of a unit that was never rewritten.
    pub(super) fn pristine_place(&self, unit: u64) -> (u64, u64) {
        let unit = unit % self.user_units.max(1);
        match &self.layout {
            Layout::Sequential => {
                let pu = unit / self.upp;
                let die = pu % self.dies as u64;
                let k = pu / self.dies as u64;
                let block = die * self.bpd + k / self.ppb;
                (block, (k % self.ppb) * self.upp + unit % self.upp)
            }
            Layout::Scattered {
                mul, add, prefix, ..
            } => {
                let k = (mul_mod(*mul, unit, self.user_units) + add) % self.user_units;
                let block = prefix.partition_point(|&p| p <= k) - 1;
                (block as u64, k - prefix[block])
            }
        }
    }

    /// The never-rewritten unit at `slot` of pristine block `block`, if that slot holds one.
    pub(super) fn pristine_unit(&self, block: u64, slot: u64) -> Option<u64> {
        match &self.layout {
            Layout::Sequential => {
                let die = block / self.bpd;
                let k = (block % self.bpd) * self.ppb + slot / self.upp;
                let unit = (k * self.dies as u64 + die) * self.upp + slot % self.upp;
                (unit < self.user_units).then_some(unit)
            }
            Layout::Scattered {
                mul_inv,
                add,
                prefix,
                ..
            } => {
                let k = prefix[block as usize] + slot;
                if k >= prefix[block as usize + 1] {
                    return None;
                }
                let shifted = (k + self.user_units - add % self.user_units) % self.user_units;
                Some(mul_mod(*mul_inv, shifted, self.user_units))
            }
        }
    }

    /// (block, slot) where `unit`'s data is read from. Discarded units read from their
    /// pristine place (the NAND is still sensed: no zero-fill shortcut is modelled).
    pub(super) fn locate(&self, unit: u64) -> (u64, u64) {
        if !self.map.is_empty() {
            if let Some(loc) = self.map.get(unit) {
                if loc != TRIMMED {
                    return (loc >> 32, loc & 0xFFFF_FFFF);
                }
            }
        }
        self.pristine_place(unit)
    }

    /// Records `unit` as written at (`block`, `slot`): its old copy becomes invalid.
    pub(super) fn place(&mut self, unit: u64, block: u64, slot: u64) {
        match self.map.insert(unit, block << 32 | slot) {
            Some(TRIMMED) => {}
            Some(old) => {
                let b = (old >> 32) as usize;
                self.valid[b] = self.valid[b].saturating_sub(1);
            }
            None => {
                let (b, _) = self.pristine_place(unit);
                self.valid[b as usize] = self.valid[b as usize].saturating_sub(1);
            }
        }
        self.valid[block as usize] += 1;
        self.members[block as usize].push(unit);
    }

    /// Forgets units `[first, end)` rewritten during the run. Never-rewritten units stay
    /// valid: the model keeps no per-unit record for them (documented limit).
    pub(super) fn discard(&mut self, first: u64, end: u64) {
        let dead = self.map.in_range(first, end.min(self.user_units));
        for (u, loc) in dead {
            if loc == TRIMMED {
                continue;
            }
            let b = (loc >> 32) as usize;
            self.valid[b] = self.valid[b].saturating_sub(1);
            self.map.insert(u, TRIMMED);
        }
    }

    /// Collection time per host program unit on `die` if it collects at the rate its state
    /// implies: greedy's next victim holds `v` of `upb` units, so each `upb − v` host units
    /// written cost `v` copies (a sense and a program per program unit moved) and an erase.
    pub(super) fn steady_collection_ns(
        &self,
        die: usize,
        read_ns: f64,
        program_ns: f64,
        erase_ns: f64,
    ) -> f64 {
        let base = die as u64 * self.bpd;
        let Some(v) = (base..base + self.bpd)
            .filter(|&b| self.state[b as usize] == BLOCK_CLOSED)
            .map(|b| self.valid[b as usize] as u64)
            .min()
        else {
            return 0.0;
        };
        if v >= self.upb {
            return 0.0;
        }
        let freed = (self.upb - v) as f64;
        let per_unit = (v as f64 / self.upp as f64) * (read_ns + program_ns) + erase_ns;
        per_unit / freed * self.upp as f64
    }

    /// Takes a free block on `die`, collecting garbage first if the die is short of them.
    pub(super) fn take_free(&mut self, die: usize, work: &mut DieWork) -> Option<u64> {
        // Each collection gains a block minus the victim's valid data; the cap only guards
        // against a die with no reclaimable space at all (then it gives up).
        let mut rounds = 0;
        while self.free[die].len() < GC_FREE_RESERVE && rounds < 1 << 16 {
            if !self.collect_one(die, work) {
                break;
            }
            rounds += 1;
        }
        let i = self.free[die].pop()? as u64;
        let block = die as u64 * self.bpd + i;
        self.state[block as usize] = BLOCK_OPEN;
        Some(block)
    }

    /// The die's open host block with room for a whole program unit (None: the die is full).
    pub(super) fn open_host(&mut self, die: usize, work: &mut DieWork) -> Option<u64> {
        if let Some(b) = self.host_open[die] {
            if self.members[b as usize].len() as u64 + self.upp <= self.upb {
                return Some(b);
            }
            self.state[b as usize] = BLOCK_CLOSED;
            self.host_open[die] = None;
        }
        let b = self.take_free(die, work)?;
        self.host_open[die] = Some(b);
        Some(b)
    }

    /// Pads the open program unit of `block` (a flush programs it partly filled).
    pub(super) fn pad_program_unit(&mut self, block: u64) {
        let m = &mut self.members[block as usize];
        while !(m.len() as u64).is_multiple_of(self.upp) {
            m.push(NO_UNIT);
        }
    }

    /// Greedy collection on `die`: the closed block with the fewest valid units is the
    /// victim; its valid units are read (one multi-plane sense per program unit holding any)
    /// and programmed into the die's collection block, then it is erased. False if no block
    /// would gain space or its data has nowhere to go.
    pub(super) fn collect_one(&mut self, die: usize, work: &mut DieWork) -> bool {
        let base = die as u64 * self.bpd;
        let mut victim: Option<(u32, u64)> = None;
        for b in base..base + self.bpd {
            if self.state[b as usize] != BLOCK_CLOSED {
                continue;
            }
            let v = self.valid[b as usize];
            if victim.is_none_or(|(best, _)| v < best) {
                victim = Some((v, b));
            }
        }
        let Some((valid, victim)) = victim else {
            return false;
        };
        if valid as u64 >= self.upb {
            return false;
        }
        let room = self.gc_open[die]
            .map_or(0, |g| self.upb - self.members[g as usize].len() as u64)
            + self.free[die].len() as u64 * self.upb;
        if (valid as u64) > room {
            return false;
        }
        let vb = victim as usize;
        let live: Vec<(u64, u64)> = if self.pristine[vb] {
            (0..self.upb)
                .filter_map(|slot| {
                    let u = self.pristine_unit(victim, slot)?;
                    self.map.get(u).is_none().then_some((slot, u))
                })
                .collect()
        } else {
            self.members[vb]
                .iter()
                .enumerate()
                .filter(|&(slot, &u)| {
                    u != NO_UNIT && self.map.get(u) == Some(victim << 32 | slot as u64)
                })
                .map(|(slot, &u)| (slot as u64, u))
                .collect()
        };
        let mut last_page = u64::MAX;
        for &(slot, unit) in &live {
            if slot / self.upp != last_page {
                last_page = slot / self.upp;
                work.senses += 1;
            }
            let g = match self.gc_open[die] {
                Some(g) if (self.members[g as usize].len() as u64) < self.upb => g,
                _ => {
                    if let Some(g) = self.gc_open[die] {
                        self.state[g as usize] = BLOCK_CLOSED;
                    }
                    let Some(i) = self.free[die].pop() else {
                        break;
                    };
                    let g = base + i as u64;
                    self.state[g as usize] = BLOCK_OPEN;
                    self.gc_open[die] = Some(g);
                    g
                }
            };
            let slot = self.members[g as usize].len() as u64;
            self.place(unit, g, slot);
            if (slot + 1).is_multiple_of(self.upp) {
                work.programs += 1;
            }
        }
        self.stats.copied_units += live.len() as u64;
        self.stats.erases += 1;
        work.erases += 1;
        self.members[vb] = Vec::new();
        self.pristine[vb] = false;
        self.valid[vb] = 0;
        self.state[vb] = BLOCK_FREE;
        self.free[die].push((victim - base) as u32);
        true
    }
}
