//! Where a run's wall time goes: one clock per process, split among named stages.
//!
//! An operation marks its stages with [`enter`] (plan, image, capture, price, report: the
//! pipeline of docs/architecture.md; teardown: removing what it made); the guard it returns
//! ends the stage when dropped. Work
//! runs on several threads at once (fsck policies, aging cells), so the clock charges each
//! moment of wall time to the stages running then, shared equally among the threads in one
//! (a thread's innermost stage counts). A moment when no thread is in a stage is charged to
//! [`OTHER`] (loading, cleanup). The stages therefore add up to the wall time since [`begin`]
//! exactly, whatever runs at once: that is what `layoutlab bench experiment` reports per stage.
//!
//! It does not own the experiments' own timings (fsck's per-policy `stage_seconds` in its
//! JSON, summed over policies that overlap); it is one process-wide clock because the stages
//! are entered deep in each operation and on its worker threads, where passing a handle
//! through every call would change every signature for a measurement.
//!
//! ```
//! use layoutlab_experiments::stages;
//! stages::begin();
//! {
//!     let _plan = stages::enter(stages::PLAN);
//!     // ... plan the layout ...
//! }
//! let t = stages::snapshot();
//! let sum: f64 = t.stage_seconds.values().sum();
//! assert!((sum - t.wall_seconds).abs() < 1e-6);
//! ```

use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::thread::ThreadId;
use std::time::Instant;

/// Populations, aging streams and policy plans, in memory.
pub const PLAN: &str = "plan";
/// Making what the operation runs on: mkfs, images written through libext2fs, files written
/// through the kernel, mounts.
pub const IMAGE: &str = "image";
/// The traced operation itself (e2fsck, rm + sync, reads, a stat walk, dd).
pub const CAPTURE: &str = "capture";
/// Pricing traces on device models (replays), and in-memory simulations of devices or caches.
pub const PRICE: &str = "price";
/// Tables, plots, report files and the JSON.
pub const REPORT: &str = "report";
/// Removing what the operation made: unmounts, loop devices, image files. Real work: a host
/// file system mounted with `discard` (this machine's `/`) frees each extent of a removed
/// image with a discard, about 0.15-0.6 ms apiece here, and an ext3 image at random-read's
/// scale 1 has one extent per indirect block (453,440).
pub const TEARDOWN: &str = "teardown";
/// Wall time in no stage: loading, checks, cleanup.
pub const OTHER: &str = "other";
/// Every stage, in pipeline order, [`OTHER`] last.
pub const ALL: [&str; 7] = [PLAN, IMAGE, CAPTURE, PRICE, REPORT, TEARDOWN, OTHER];

struct Clock {
    begun: Instant,
    /// Until when the totals are charged.
    charged_to: Instant,
    /// Each thread's stack of stages it entered (its innermost counts).
    threads: HashMap<ThreadId, Vec<&'static str>>,
    seconds: BTreeMap<&'static str, f64>,
}

impl Clock {
    fn new() -> Clock {
        let now = Instant::now();
        Clock {
            begun: now,
            charged_to: now,
            threads: HashMap::new(),
            seconds: BTreeMap::new(),
        }
    }

    /// Charge the time since the last change to the stages running during it, up to now.
    ///
    /// The clock is read here, under the lock: a moment read before taking it could be older
    /// than `charged_to` (another thread took the lock first), and the clock would step back and
    /// charge that span twice (a CI run with two busy CPUs summed 18 µs over the wall time).
    fn charge(&mut self) -> Instant {
        let now = Instant::now().max(self.charged_to);
        let dt = now.duration_since(self.charged_to).as_secs_f64();
        self.charged_to = now;
        let running: Vec<&'static str> = self
            .threads
            .values()
            .filter_map(|s| s.last().copied())
            .collect();
        if running.is_empty() {
            *self.seconds.entry(OTHER).or_insert(0.0) += dt;
            return now;
        }
        let share = dt / running.len() as f64;
        for stage in running {
            *self.seconds.entry(stage).or_insert(0.0) += share;
        }
        now
    }
}

static CLOCK: Mutex<Option<Clock>> = Mutex::new(None);

fn with_clock<T>(f: impl FnOnce(&mut Clock) -> T) -> T {
    // A panic elsewhere while the lock was held leaves the totals usable: take them anyway.
    let mut guard = CLOCK.lock().unwrap_or_else(|e| e.into_inner());
    f(guard.get_or_insert_with(Clock::new))
}

/// Start (or restart) the clock: wall time is counted from here.
pub fn begin() {
    let mut guard = CLOCK.lock().unwrap_or_else(|e| e.into_inner());
    *guard = Some(Clock::new());
}

/// Enter `stage` on this thread until the guard is dropped (stages nest: the innermost counts).
#[must_use = "the stage ends when the guard is dropped"]
pub fn enter(stage: &'static str) -> StageGuard {
    with_clock(|c| {
        c.charge();
        c.threads
            .entry(std::thread::current().id())
            .or_default()
            .push(stage);
    });
    StageGuard { _private: () }
}

/// Run `f` as `stage` on this thread.
pub fn timed<T>(stage: &'static str, f: impl FnOnce() -> T) -> T {
    let _guard = enter(stage);
    f()
}

/// Ends the stage [`enter`] began, on the thread that began it.
pub struct StageGuard {
    _private: (),
}

impl Drop for StageGuard {
    fn drop(&mut self) {
        with_clock(|c| {
            c.charge();
            let id = std::thread::current().id();
            if let Some(stack) = c.threads.get_mut(&id) {
                stack.pop();
                if stack.is_empty() {
                    c.threads.remove(&id);
                }
            }
        });
    }
}

/// The clock read at one moment.
#[derive(Clone, Debug, Serialize)]
pub struct Snapshot {
    /// Wall seconds since [`begin`].
    pub wall_seconds: f64,
    /// Wall seconds charged to each stage of [`ALL`] (every one present, zero if never
    /// entered); they add up to `wall_seconds`.
    pub stage_seconds: BTreeMap<String, f64>,
}

/// Read the clock: the stages so far, the one running charged up to now.
pub fn snapshot() -> Snapshot {
    with_clock(|c| {
        let now = c.charge();
        let mut stage_seconds: BTreeMap<String, f64> =
            ALL.iter().map(|s| (s.to_string(), 0.0)).collect();
        for (stage, s) in &c.seconds {
            *stage_seconds.entry(stage.to_string()).or_insert(0.0) += s;
        }
        Snapshot {
            wall_seconds: now.duration_since(c.begun).as_secs_f64(),
            stage_seconds,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    // One process-wide clock: the tests that read it run one at a time.
    static SERIAL: Mutex<()> = Mutex::new(());

    fn sum(s: &Snapshot) -> f64 {
        s.stage_seconds.values().sum()
    }

    #[test]
    fn stages_add_up_to_the_wall_time_with_threads_at_once() {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        begin();
        std::thread::sleep(Duration::from_millis(20)); // other
        {
            let _p = enter(PLAN);
            std::thread::sleep(Duration::from_millis(30));
            // nested: price counts while it runs, plan again after
            timed(PRICE, || std::thread::sleep(Duration::from_millis(20)));
        }
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| timed(CAPTURE, || std::thread::sleep(Duration::from_millis(40))));
            }
            timed(IMAGE, || std::thread::sleep(Duration::from_millis(40)));
        });
        let t = snapshot();
        assert!(
            (sum(&t) - t.wall_seconds).abs() < 1e-9,
            "stages {:?} sum to {} against a wall time of {}",
            t.stage_seconds,
            sum(&t),
            t.wall_seconds
        );
        for s in ALL {
            assert!(t.stage_seconds.contains_key(s), "{s} missing: {t:?}");
        }
        let get = |s: &str| t.stage_seconds[s];
        // Sleeps last at least as long as asked; three threads in two stages at once share
        // their 40 ms 2:1, so capture has at least two thirds of it.
        assert!(get(OTHER) >= 0.020, "{t:?}");
        assert!(get(PLAN) >= 0.030, "{t:?}");
        assert!(get(PRICE) >= 0.020, "{t:?}");
        assert!(get(CAPTURE) >= get(IMAGE), "{t:?}");
        assert_eq!(get(REPORT), 0.0, "{t:?}");
    }

    #[test]
    fn threads_racing_for_the_clock_never_charge_a_moment_twice() {
        // Many short stages on four threads contend for the lock: a thread that read the time
        // before another took the lock must not step the clock back.
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        begin();
        std::thread::scope(|s| {
            for stage in [PLAN, IMAGE, CAPTURE, PRICE] {
                s.spawn(move || {
                    for _ in 0..20_000 {
                        drop(enter(stage));
                    }
                });
            }
        });
        let t = snapshot();
        assert!(
            (sum(&t) - t.wall_seconds).abs() < 1e-9,
            "stages {:?} sum to {} against a wall time of {}",
            t.stage_seconds,
            sum(&t),
            t.wall_seconds
        );
    }

    #[test]
    fn a_stage_ends_when_its_guard_is_dropped() {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        begin();
        drop(enter(REPORT));
        std::thread::sleep(Duration::from_millis(30));
        let t = snapshot();
        assert!(t.stage_seconds[REPORT] < 0.030, "{t:?}");
        assert!(t.stage_seconds[OTHER] >= 0.030, "{t:?}");
    }
}
