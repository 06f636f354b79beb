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
//! 4.53-4.56 s and 1.03-1.04 s (docs/emulate.md).

mod common;

use common::{is_root, reproduce_in};

/// One policy's run: (policy, requests, open-loop total of the stream, s, closed-loop
/// measured time, s).
type Run = (String, f64, f64, f64);

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
            )
        })
        .collect()
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// Runs each way: means of five.
const RUNS: usize = 5;

/// The bound on the time measured on the emulated device, per policy, as a fraction of the
/// machine-as-is mean (the open-loop replay of each stream has its own, in the test). Measured (docs/emulate.md, "Load
/// independence"): 16 runs each way at load 10-17, K = 8, the model's clock following
/// e2fsck's CPU. ext3-2007 (1,114 requests, 4.5 s): single runs within 0.64% of each other
/// (sd 0.2%), either way; 1% is the bound, more than twice that range. ext3-metacluster
/// (475 requests, 1.02 s): single runs spread over 2.7% (sd 0.7-0.8%) either way, in steps of
/// one revolution of the modelled disk (8.3 ms, 0.8% of its total: whether the kernel's
/// read-ahead overlapped a request differs between captures), and two sets of eight runs on
/// the quiet side alone differed by 0.7-0.8%; so 1% would fail on the capture's own spread,
/// not the load. Its bound is 2%: in 50,000 resamples of the measured runs no two means of
/// five differed by more (1.5% was exceeded by 0.15%).
fn totals_bound(policy: &str) -> f64 {
    if policy == "ext3-metacluster" {
        0.02
    } else {
        0.01
    }
}

/// Requests within 0.5% (identical in every run measured), the time measured on the emulated
/// device (`closed_loop.measured_seconds`) within [`totals_bound`], and the open-loop replay of
/// the closed-loop stream (`total_seconds`) within 2%; means of [`RUNS`] runs each way. Every request must have been placed on the model's clock by e2fsck's CPU.
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
        assert!(
            (rq - rb).abs() <= 0.005 * rq,
            "{policy}: {rq} requests as is, {rb} with two CPU-bound loops"
        );
        let bound = totals_bound(policy);
        assert!(
            (mq - mb).abs() <= bound * mq,
            "{policy}: measured closed loop {mq} s as is, {mb} s with two CPU-bound loops \
             (bound {bound})"
        );
        // The replay of each run's own stream: a different capture's stream each time, so its
        // spread is the capture's, wider than the paced measured time's. Quiet (2026-11-27,
        // load 2) single ext3-2007 replays gave 4.4845-4.5510 s, and a quiet CI run (18) had
        // means of five 4.4907 s against 4.5394 s with the loops (1.08%) while the measured
        // times agreed within 0.04%. 2% for both policies, about twice that.
        let replay_bound = 0.02;
        assert!(
            (tq - tb).abs() <= replay_bound * tq,
            "{policy}: open-loop total {tq} s as is, {tb} s with two CPU-bound loops \
             (bound {replay_bound})"
        );
    }
}
