//! Properties every policy must have, over seeded random streams: none beats OPT; none holds
//! more than its capacity; with room for the whole footprint each misses only cold.

use layoutlab_cache::{by_name, simulate, POLICIES};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::HashSet;

/// A stream mixing a hot set, a loop and single-use pages (the shapes the policies were
/// built to tell apart), from `seed`.
fn stream(seed: u64, len: usize, footprint: u64) -> Vec<u64> {
    let mut r = ChaCha8Rng::seed_from_u64(seed);
    let hot = (footprint / 10).max(1);
    let mut loop_at = 0;
    (0..len)
        .map(|_| match r.gen_range(0..10) {
            0..=3 => r.gen_range(0..hot),
            4..=6 => {
                loop_at = (loop_at + 1) % (footprint / 3).max(1);
                hot + loop_at
            }
            _ => r.gen_range(0..footprint),
        })
        .collect()
}

#[test]
fn no_policy_beats_opt_and_none_overfills() {
    for seed in 0..40u64 {
        let footprint = 20 + seed * 7;
        let pages = stream(seed, 3000, footprint);
        for capacity in [2usize, 5, 17, 60] {
            let opt = simulate(by_name("opt", capacity, &pages).unwrap().as_mut(), &pages).misses();
            for p in POLICIES {
                let mut c = by_name(p.name, capacity, &pages).unwrap();
                let mut misses = 0;
                for &x in &pages {
                    misses += u64::from(!c.access(x));
                    assert!(
                        c.resident_pages() <= capacity,
                        "{} holds {} > {capacity} (seed {seed})",
                        p.name,
                        c.resident_pages()
                    );
                }
                assert!(
                    misses >= opt,
                    "{}: {misses} misses < OPT's {opt} (seed {seed}, {capacity} pages)",
                    p.name
                );
            }
        }
    }
}

#[test]
fn with_room_for_the_footprint_every_policy_misses_only_cold() {
    for seed in 0..20u64 {
        let pages = stream(seed, 2000, 50 + seed * 11);
        let distinct = pages.iter().collect::<HashSet<_>>().len();
        for p in POLICIES {
            // LIRS keeps 1% for HIR: the footprint fits in any capacity ≥ it, so try both
            // exactly the footprint and more.
            for capacity in [distinct, distinct + 7] {
                let mut c = by_name(p.name, capacity, &pages).unwrap();
                let misses = simulate(c.as_mut(), &pages).misses();
                assert_eq!(
                    misses, distinct as u64,
                    "{} with {capacity} pages (seed {seed})",
                    p.name
                );
            }
        }
    }
}

#[test]
fn unknown_names_and_small_caches_are_refused_with_the_valid_names() {
    let e = by_name("fifo", 4, &[]).err().unwrap().to_string();
    assert!(
        e.contains("lru") && e.contains("lirs") && e.contains("opt"),
        "{e}"
    );
    let e = by_name("lirs", 1, &[]).err().unwrap().to_string();
    assert!(e.contains("at least 2"), "{e}");
}
