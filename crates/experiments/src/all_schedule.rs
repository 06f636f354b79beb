//! Which of `reproduce all`'s experiments starts next when several may run at once
//! (`--parallel N`): a pure function of the experiments' expected memory needs, the memory the
//! machine has now, what the running ones may still take, and N. The caller owns the processes,
//! the clock and `/proc/meminfo`; this owns only the decision, so it is tested without either.
//!
//! The rule: at most N run at once; one starts only if what the machine has available now,
//! less what the running ones are still expected to take (their need less what they already
//! hold, which `MemAvailable` has already lost) and less a reserve kept for everyone else,
//! covers its own need. The first in the run order that fits starts (a smaller one may pass a
//! larger one that waits: each still runs once, as the set is finite). With nothing running the
//! first in order starts whatever it needs, as the serial run would have started it.
//! Nothing here changes the page: it lists the experiments in the shipped order whatever order
//! they ran in ([`in_shipped_order`]).

/// An experiment not started yet.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Candidate {
    /// Its place in the shipped order (the page's).
    pub index: usize,
    /// Memory it is expected to take at its peak, bytes: its processes' resident sets and what
    /// it puts in memory-backed work directories. None: nothing says; see [`need_bytes`].
    pub need_bytes: Option<u64>,
    /// Wall seconds it is expected to take (a previous run's), if known.
    pub expected_seconds: Option<f64>,
}

/// An experiment running now.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Running {
    /// Its place in the shipped order.
    pub index: usize,
    /// Its expected peak, as counted when it started ([`Next::Start`]'s).
    pub need_bytes: u64,
    /// What it holds now (its processes' resident sets), already missing from `MemAvailable`.
    pub held_bytes: u64,
}

/// The limits a start must keep.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Limits {
    /// Experiments at once, at least 1.
    pub parallel: usize,
    /// `MemAvailable` now, bytes.
    pub available_bytes: u64,
    /// Memory left for everyone else, bytes: never counted as free.
    pub reserve_bytes: u64,
}

/// One experiment that waits for memory, and why.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MemoryWait {
    /// Its place in the shipped order.
    pub index: usize,
    /// What it needs, bytes.
    pub need_bytes: u64,
    /// What is free for it now, bytes ([`free_bytes`]).
    pub free_bytes: u64,
}

/// What to do now.
#[derive(Clone, Debug, PartialEq)]
pub enum Next {
    /// Start this one (its shipped index). `alone`: nothing else runs and it does not fit
    /// even so; it starts anyway, as the serial run would.
    Start {
        /// Its place in the shipped order.
        index: usize,
        /// Started with nothing beside it although its need exceeds what is free.
        alone: bool,
        /// Its need as counted now ([`need_bytes`]): what to count for it while it runs.
        need_bytes: u64,
    },
    /// N run already: wait for one to end.
    Full,
    /// Every pending one needs more than is free: wait for memory (each with its reason).
    Memory(Vec<MemoryWait>),
    /// Nothing is left to start.
    Nothing,
}

/// The order to try them in: longest expected first (a previous run's wall times), those with
/// no expected time after them, ties in the shipped order.
pub fn run_order(candidates: &[Candidate]) -> Vec<Candidate> {
    let mut v = candidates.to_vec();
    // stable: equal times keep the shipped order
    v.sort_by(|a, b| {
        let key = |c: &Candidate| c.expected_seconds.unwrap_or(f64::NEG_INFINITY);
        key(b)
            .partial_cmp(&key(a))
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    v
}

/// What `c` is counted as needing: its expected peak, or, when nothing says, half the memory
/// available now. Half, because that is what the experiments' own guards let one take of the
/// memory they find at their start (the fsck work directory's tmpfs is capped at half of
/// MemAvailable, the aging passes' budget is half of it): so two whose needs are unknown do not
/// start together unless their first half is already held.
pub fn need_bytes(c: &Candidate, limits: &Limits) -> u64 {
    c.need_bytes.unwrap_or(limits.available_bytes / 2)
}

/// Memory free for one more experiment: available now, less what the running ones are still
/// expected to take beyond what they hold, less the reserve.
pub fn free_bytes(running: &[Running], limits: &Limits) -> u64 {
    room_bytes(running, limits).unwrap_or(0)
}

/// [`free_bytes`], or None when the running ones' expected peaks and the reserve already
/// exceed what is available (one that started alone although too large): then not even a need
/// of 0 starts beside them.
fn room_bytes(running: &[Running], limits: &Limits) -> Option<u64> {
    let still: u64 = running
        .iter()
        .map(|r| r.need_bytes.saturating_sub(r.held_bytes))
        .fold(0u64, u64::saturating_add);
    limits
        .available_bytes
        .checked_sub(still)?
        .checked_sub(limits.reserve_bytes)
}

/// The next step for `pending` (in run order, see [`run_order`]) given what runs now.
pub fn next(pending: &[Candidate], running: &[Running], limits: &Limits) -> Next {
    if pending.is_empty() {
        return Next::Nothing;
    }
    if running.len() >= limits.parallel.max(1) {
        return Next::Full;
    }
    let room = room_bytes(running, limits);
    let fits = |need: u64| room.is_some_and(|r| need <= r);
    // With nothing running the first in order starts, fitting or not: the serial run's order
    // (N = 1) is kept, and a need larger than the machine's still runs once.
    if running.is_empty() {
        let need = need_bytes(&pending[0], limits);
        return Next::Start {
            index: pending[0].index,
            alone: !fits(need),
            need_bytes: need,
        };
    }
    if let Some(c) = pending.iter().find(|c| fits(need_bytes(c, limits))) {
        return Next::Start {
            index: c.index,
            alone: false,
            need_bytes: need_bytes(c, limits),
        };
    }
    Next::Memory(
        pending
            .iter()
            .map(|c| MemoryWait {
                index: c.index,
                need_bytes: need_bytes(c, limits),
                free_bytes: room.unwrap_or(0),
            })
            .collect(),
    )
}

/// Results that ended in any order, as the page lists them: by their shipped index.
pub fn in_shipped_order<T>(mut ended: Vec<(usize, T)>) -> Vec<T> {
    ended.sort_by_key(|(i, _)| *i);
    ended.into_iter().map(|(_, t)| t).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const GB: u64 = 1 << 30;

    fn cand(index: usize, need_gb: u64, secs: Option<f64>) -> Candidate {
        Candidate {
            index,
            need_bytes: Some(need_gb * GB),
            expected_seconds: secs,
        }
    }

    fn limits(parallel: usize, available_gb: u64) -> Limits {
        Limits {
            parallel,
            available_bytes: available_gb * GB,
            reserve_bytes: 4 * GB,
        }
    }

    #[test]
    fn longest_expected_first_unknown_last_ties_in_shipped_order() {
        let c = [
            cand(0, 1, None),
            cand(1, 1, Some(10.0)),
            cand(2, 1, Some(300.0)),
            cand(3, 1, Some(10.0)),
            cand(4, 1, None),
        ];
        let order: Vec<usize> = run_order(&c).iter().map(|c| c.index).collect();
        assert_eq!(order, [2, 1, 3, 0, 4]);
    }

    #[test]
    fn a_start_counts_what_the_running_ones_still_take_and_the_reserve() {
        // 20 GB available; one runs needing 12 and holding 2: 10 still to come, 4 kept back,
        // 6 free. A 7 GB one waits; a 6 GB one behind it starts.
        let running = [Running {
            index: 0,
            need_bytes: 12 * GB,
            held_bytes: 2 * GB,
        }];
        let l = limits(2, 20);
        assert_eq!(free_bytes(&running, &l), 6 * GB);
        assert_eq!(
            next(&[cand(1, 7, None)], &running, &l),
            Next::Memory(vec![MemoryWait {
                index: 1,
                need_bytes: 7 * GB,
                free_bytes: 6 * GB
            }])
        );
        assert_eq!(
            next(&[cand(1, 7, None), cand(2, 6, None)], &running, &l),
            Next::Start {
                index: 2,
                alone: false,
                need_bytes: 6 * GB
            }
        );
    }

    #[test]
    fn never_more_than_n_and_a_lone_giant_still_runs() {
        let running = [Running {
            index: 0,
            need_bytes: 0,
            held_bytes: 0,
        }];
        assert_eq!(
            next(&[cand(1, 0, None)], &running, &limits(1, 20)),
            Next::Full
        );
        assert_eq!(
            next(&[cand(1, 30, None)], &[], &limits(2, 20)),
            Next::Start {
                index: 1,
                alone: true,
                need_bytes: 30 * GB
            }
        );
        assert_eq!(next(&[], &[], &limits(2, 20)), Next::Nothing);
    }

    #[test]
    fn unknown_needs_count_half_the_memory_available() {
        let unknown = |index| Candidate {
            index,
            need_bytes: None,
            expected_seconds: None,
        };
        // 20 GB available: the first counts 10 and starts.
        assert_eq!(
            next(&[unknown(0), unknown(1)], &[], &limits(2, 20)),
            Next::Start {
                index: 0,
                alone: false,
                need_bytes: 10 * GB
            }
        );
        // It holds 1 GB (19 available): 9 still to come, 4 kept back, 6 free; the second
        // counts 9.5 and waits, a known 5 GB one starts.
        let running = [Running {
            index: 0,
            need_bytes: 10 * GB,
            held_bytes: GB,
        }];
        assert!(matches!(
            next(&[unknown(1)], &running, &limits(2, 19)),
            Next::Memory(_)
        ));
        assert!(matches!(
            next(&[unknown(1), cand(2, 5, None)], &running, &limits(2, 19)),
            Next::Start { index: 2, .. }
        ));
    }

    /// A run of the whole set through [`next`], ending the running ones in the order `ends`
    /// picks, with `available` memory less what the running ones hold: every decision checked.
    fn simulate(
        needs: &[Option<u64>],
        parallel: usize,
        available: u64,
        ends: &[usize],
    ) -> Vec<usize> {
        let mut pending = run_order(&candidates(needs));
        let mut running: Vec<Running> = Vec::new();
        let mut started = Vec::new();
        let mut step = 0;
        let reserve = 4 * GB;
        loop {
            // the running ones hold half their need so far
            for r in &mut running {
                r.held_bytes = r.need_bytes / 2;
            }
            let held: u64 = running.iter().map(|r| r.held_bytes).sum();
            let l = Limits {
                parallel,
                available_bytes: available.saturating_sub(held),
                reserve_bytes: reserve,
            };
            match next(&pending, &running, &l) {
                Next::Start {
                    index,
                    alone,
                    need_bytes: need,
                } => {
                    if let Some(n) = needs[index] {
                        assert_eq!(need, n, "a known need counted as stated");
                    }
                    assert!(running.len() < parallel, "more than N at once");
                    if alone {
                        assert!(running.is_empty(), "an oversized one started beside others");
                    } else {
                        // all running ones at their peaks, and this one: within the budget
                        let peaks: u64 = running.iter().map(|r| r.need_bytes).sum();
                        assert!(
                            peaks + need + reserve <= available,
                            "over the memory budget: {peaks} + {need} + {reserve} > {available}"
                        );
                    }
                    pending.retain(|c| c.index != index);
                    running.push(Running {
                        index,
                        need_bytes: need,
                        held_bytes: 0,
                    });
                    started.push(index);
                }
                Next::Nothing if running.is_empty() => break,
                Next::Full | Next::Memory(_) | Next::Nothing => {
                    assert!(
                        !running.is_empty(),
                        "waits with nothing running: never ends"
                    );
                    let k = ends[step % ends.len()] % running.len();
                    running.remove(k);
                    step += 1;
                }
            }
        }
        started
    }

    /// Candidates with these needs and expected times that are not in the shipped order.
    fn candidates(needs: &[Option<u64>]) -> Vec<Candidate> {
        needs
            .iter()
            .enumerate()
            .map(|(i, &n)| Candidate {
                index: i,
                need_bytes: n,
                expected_seconds: (i % 3 != 0).then_some((i * 7 % 5) as f64),
            })
            .collect()
    }

    proptest! {
        #[test]
        fn within_n_and_memory_and_each_runs_once(
            needs in prop::collection::vec(prop::option::of(0u64..24 * GB), 1..20),
            parallel in 1usize..5,
            available in 0u64..32 * GB,
            ends in prop::collection::vec(0usize..8, 1..10),
        ) {
            let mut started = simulate(&needs, parallel, available, &ends);
            started.sort_unstable();
            prop_assert_eq!(started, (0..needs.len()).collect::<Vec<_>>());
        }

        #[test]
        fn one_at_a_time_runs_in_the_given_order_whatever_the_memory(
            needs in prop::collection::vec(prop::option::of(0u64..24 * GB), 1..20),
            available in 0u64..32 * GB,
        ) {
            let started = simulate(&needs, 1, available, &[0]);
            let order: Vec<usize> = run_order(&candidates(&needs)).iter().map(|c| c.index).collect();
            prop_assert_eq!(started, order);
        }

        #[test]
        fn the_page_order_does_not_depend_on_the_run_order(
            ends in Just((0..12usize).collect::<Vec<_>>()).prop_shuffle(),
        ) {
            let ended: Vec<(usize, String)> = ends.iter().map(|&i| (i, format!("e{i}"))).collect();
            let page = in_shipped_order(ended);
            prop_assert_eq!(page, (0..12).map(|i| format!("e{i}")).collect::<Vec<_>>());
        }
    }

    /// What `reproduce all --parallel` relies on to run a failed experiment again alone: a
    /// need larger than any machine waits while anything runs, lets nothing start beside it
    /// once it runs, and starts when nothing runs.
    #[test]
    fn a_need_beyond_any_machine_runs_alone() {
        let alone = Candidate {
            index: 7,
            need_bytes: Some(u64::MAX),
            expected_seconds: None,
        };
        let l = limits(2, 20);
        let one = Running {
            index: 1,
            need_bytes: GB,
            held_bytes: GB,
        };
        // Something runs: the small one may start, the one beyond any machine waits.
        assert!(matches!(
            next(&[alone, cand(3, 1, None)], &[one], &l),
            Next::Start { index: 3, .. }
        ));
        assert!(matches!(next(&[alone], &[one], &l), Next::Memory(_)));
        // Nothing runs: it starts, alone.
        assert!(matches!(
            next(&[alone, cand(3, 1, None)], &[], &l),
            Next::Start {
                index: 7,
                alone: true,
                ..
            }
        ));
        // It runs: nothing starts beside it, however small.
        let it = Running {
            index: 7,
            need_bytes: u64::MAX,
            held_bytes: GB,
        };
        assert!(matches!(
            next(&[cand(3, 0, None)], &[it], &l),
            Next::Memory(_)
        ));
    }
}
