//! A closed-loop capture does not depend on how busy the machine is: e2fsck on the emulated
//! device (`reproduce metacluster-fsck --closed-loop`) issues the same requests, the time
//! measured there is the same, and so is the open-loop replay of the stream it issued, on the
//! machine as it is and with two CPU-bound loops beside it (issue 25).
//!
//! Its own test binary, so that its runs are not loaded by other tests of the same binary
//! (cargo runs test binaries one after another).
//!
//! The measured time holds because the model's clock follows e2fsck's CPU between requests
//! (`layoutlab_rig::CpuPace`), not the wall, which carries e2fsck's, the loop worker's and the
//! route's waits for a CPU multiplied by K: before that, single runs of the same capture
//! measured 4.07-5.03 s (ext3-2007) and 0.78-1.10 s (ext3-metacluster) against a replay of
//! 4.53-4.56 s and 1.03-1.04 s (docs/emulate.md). That CPU is the task-clock counter (time on
//! a CPU): e2fsck's process CPU clock, read before, exceeded it under load, by up to 8 times,
//! and with it 30 single ext3-2007 runs measured 4.54-4.69 s as is (load 9-13).

mod common;

use common::{is_root, reproduce_in};

/// One policy's run: (policy, requests, open-loop total of the stream, s, closed-loop
/// measured time, s, e2fsck's CPU in the trace as the pace counted it, s, and as the scheduler
/// trace counted it, s).
type Run = (String, f64, f64, f64, f64, f64);

/// Per policy, one closed-loop run at scale 0.005, K = 8.
fn closed_loop_run() -> Vec<Run> {
    let (v, _, dir) = reproduce_in(
        "load-closed",
        "fsck",
        "metacluster-fsck",
        &["--scale", "0.005", "--closed-loop", "8"],
    );
    std::fs::remove_dir_all(&dir).unwrap();
    v["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            assert_eq!(
                r["closed_loop"]["requests_served"], r["requests"],
                "every traced request was served by the emulator: {r}"
            );
            assert_eq!(
                r["closed_loop"]["requests_paced"], r["requests"],
                "every served request's arrival followed e2fsck's CPU: {r}"
            );
            (
                r["policy"].as_str().unwrap().to_string(),
                r["requests"].as_f64().unwrap(),
                r["total_seconds"].as_f64().unwrap(),
                r["closed_loop"]["measured_seconds"].as_f64().unwrap(),
                r["closed_loop"]["paced_cpu_seconds"].as_f64().unwrap(),
                r["measured_here"]["scheduler_cpu_in_trace_seconds"]
                    .as_f64()
                    .unwrap(),
            )
        })
        .collect()
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// Runs each way. Each policy's measured time and replay are held to 1% of the machine-as-is
/// mean, means of fifteen (docs/emulate.md, "Where a capture's spread came from"). Measured
/// 2026-11-27, K = 8, the pace on the task-clock, load 15 (five engineers and the lead's
/// scale-1 run), 20 runs as is and 20 with two CPU-bound loops:
/// - ext3-2007 (1,114 requests, 4.53-4.56 s): single runs sd 0.13-0.21% either way; no two
///   means of five differed by 1% in 20,000 resamples.
/// - ext3-metacluster (475 requests, 1.01-1.05 s): single runs sd 0.6-1.2% either way, in
///   steps of one revolution of the modelled disk (8.3 ms, 0.8% of its total). The same five
///   requests pay a revolution or not, decided by e2fsck's CPU between two requests (30-79 µs
///   for the same work over 24 runs, as is and loaded alike) against the platter's angle, and
///   by the stream itself (478 and 482 requests in 2 of 110 runs since the first-arrival fix): the program's variation,
///   which a real disk would show too. Means of five exceeded 1% in 3.7% of resamples, of ten
///   0.6%, of fifteen 0.07% (0.08% with the two sets pooled; 200,000 resamples), so fifteen,
///   under the 0.1% false-failure target. Its replays: means of fifteen exceeded 1% in 0.001%.
///
/// Cost: the whole test took 64-131 s at load 5-12 (2026-11-27), against about 25-40 s for ten runs.
const RUNS: usize = 15;

/// Each policy's bound on the measured time, as a fraction of the machine-as-is mean: the
/// issue's 1% (see [`RUNS`]).
const TOTALS_BOUND: f64 = 0.01;

/// Each policy's bound on the open-loop replay of each run's own stream: the 1%. Its
/// think time is the scheduler trace's count of e2fsck's CPU. Before the emulator kept the CPUs
/// out of idle (`layoutlab_rig`'s `awake`), that count moved with the machine's load: quiet (CI
/// run 23, 2026-11-27) ext3-2007's replays averaged 4.4953 s as is against 4.5377 s with two
/// loops (0.94%), and ext3-metacluster's measured means 1.0263 against 1.0371 s (1.05%), so
/// both were held at 2%. With two `SCHED_IDLE` spinners beside a quiet run (2026-11-27, load
/// about 1): replays 4.5395 / 4.5394 s and 1.0390 / 1.0382 s, measured 1.0374 / 1.0355 s.
const REPLAY_BOUND: f64 = 0.01;

/// How far the pace's count of e2fsck's CPU in the trace, summed over each way's runs, may lie
/// from the scheduler trace's count, as a fraction (a quiet machine's counts disagreed before
/// the emulator kept the CPUs out of idle, see the test). On the task-clock, 48 single runs (24 as
/// is, 24 with two loops, both policies) lay within -3.0% to +2.1% of it (the pace counts from
/// the first request's receipt to the last's, the trace from the first issue to the last
/// completion), and one run whose stream had 484 of ext3-metacluster's usual 475 requests
/// +14%: summed, so that such a stream moves the sum by about 1%. On e2fsck's process CPU
/// clock, which the pace read before, 120 single runs lay -27% to +695% (median +144% for
/// ext3-2007, +55% for ext3-metacluster), more the busier the machine.
const PACE_AGAINST_TRACE: f64 = 0.10;

/// Requests within 0.5% (ext3-2007's identical in all 110 runs measured, ext3-metacluster's in
/// 108), the time measured on the
/// emulated device (`closed_loop.measured_seconds`) within [`TOTALS_BOUND`] and the open-loop
/// replay of the closed-loop stream (`total_seconds`) within [`REPLAY_BOUND`]; means of
/// [`RUNS`] runs each way; the pace's count of e2fsck's CPU within [`PACE_AGAINST_TRACE`] of the
/// scheduler trace's, each way.
#[test]
fn a_closed_loop_capture_does_not_depend_on_how_busy_the_machine_is() {
    if !is_root() {
        eprintln!("skipped: a closed-loop capture needs root (FUSE mount, loop device, tracefs)");
        return;
    }
    let as_is: Vec<_> = (0..RUNS).map(|_| closed_loop_run()).collect();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let burners: Vec<_> = (0..2)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut x = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
                }
            })
        })
        .collect();
    let busy: Vec<_> = (0..RUNS).map(|_| closed_loop_run()).collect();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for b in burners {
        b.join().unwrap();
    }
    for i in 0..as_is[0].len() {
        let policy = &as_is[0][i].0;
        let of = |runs: &[Vec<Run>], f: fn(&Run) -> f64| {
            mean(&runs.iter().map(|r| f(&r[i])).collect::<Vec<_>>())
        };
        let (rq, rb) = (of(&as_is, |r| r.1), of(&busy, |r| r.1));
        let (tq, tb) = (of(&as_is, |r| r.2), of(&busy, |r| r.2));
        let (mq, mb) = (of(&as_is, |r| r.3), of(&busy, |r| r.3));
        eprintln!(
            "{policy}: requests {rq} as is, {rb} with two CPU-bound loops; measured closed loop \
             {mq:.4} s, {mb:.4} s; open-loop total of the closed-loop stream {tq:.4} s, {tb:.4} s"
        );
        // The pace's count of e2fsck's CPU against the scheduler trace's, held: on a quiet
        // machine they disagreed (CI run 23, 2026-11-27: 0.756 against 0.237 s over fifteen
        // ext3-2007 runs; +45% and +51% at load 1 the same day) until the emulator kept the
        // CPUs out of idle; with it, as under load, within PACE_AGAINST_TRACE.
        for (side, runs) in [("as is", &as_is), ("with two loops", &busy)] {
            let paced: f64 = runs.iter().map(|r| r[i].4).sum();
            let traced: f64 = runs.iter().map(|r| r[i].5).sum();
            eprintln!(
                "{policy} {side}: the pace counted {paced:.4} s of e2fsck's CPU over {RUNS} runs, \
                 the scheduler trace {traced:.4} s ({:+.0}%)",
                (paced / traced - 1.0) * 100.0
            );
            assert!(
                (paced - traced).abs() <= PACE_AGAINST_TRACE * traced,
                "{policy} {side}: the pace counted {paced} s of e2fsck's CPU, the scheduler \
                 trace {traced} s (bound {PACE_AGAINST_TRACE})"
            );
        }
        assert!(
            (rq - rb).abs() <= 0.005 * rq,
            "{policy}: {rq} requests as is, {rb} with two CPU-bound loops"
        );
        let bound = TOTALS_BOUND;
        assert!(
            (mq - mb).abs() <= bound * mq,
            "{policy}: measured closed loop {mq} s as is, {mb} s with two CPU-bound loops \
             (bound {bound})"
        );
        // The replay of each run's own stream: a different capture's stream each time (its
        // overlaps and, rarely, its requests differ), so it carries the capture's spread.
        assert!(
            (tq - tb).abs() <= REPLAY_BOUND * tq,
            "{policy}: open-loop total {tq} s as is, {tb} s with two CPU-bound loops \
             (bound {REPLAY_BOUND})"
        );
    }
}
