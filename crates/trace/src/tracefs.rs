//! Reader of tracefs text (`/sys/kernel/tracing/trace` or `trace_pipe`) holding the block
//! events `block_rq_issue`, `block_rq_complete` and `block_bio_queue`, as kernel 6.18 prints
//! them (print fmt of `events/block/*/format`):
//!
//! ```text
//!  dd-10455 [000] .....  477.293901: block_rq_issue: 7,0 WS 65536 () 0 + 128 be,0,4 [dd]
//!  ksoftirqd/0-14 [000] ..s..  477.293977: block_rq_complete: 7,0 WS () 0 + 128 be,0,4 [0]
//!  dd-10455 [000] .....  477.293777: block_bio_queue: 7,0 WS 0 + 128 [dd]
//!  bash-10401 [001] ...1.  477.285816: tracing_mark_write: layoutlab tag=write
//! ```
//!
//! Requests are the `block_rq_issue` events (or, when there are none, as on a bio-based device
//! such as zram, the `block_bio_queue` events). Completions pair with issues by (device,
//! sector, operation), first in first out. A `tracing_mark_write` line `layoutlab tag=NAME`
//! tags the requests that follow it in time (write it into `trace_marker`); events are taken
//! in the order of their times, since `trace_pipe` prints per-CPU buffers as they fill.
//! Times become ns relative to the first request. Lost-event notices are errors: such a trace is incomplete.

use crate::assemble::{self, BlockEvent, Event, Origin, Stage};
use crate::error::{Location, TraceError};
use crate::read_options::{DevId, ReadOptions};
use crate::text::{parse_decimal_ns, parse_u32, parse_u64};
use crate::{rwbs, Trace};

/// Reads tracefs text. `file` names the input in errors.
pub fn read(text: &str, file: &str, opts: &ReadOptions) -> Result<Trace, TraceError> {
    let mut events = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line_no = i + 1;
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if trimmed.contains("[LOST") && trimmed.contains("EVENTS]") {
            return Err(TraceError::at_line(
                file,
                line_no,
                "the kernel dropped events (ring buffer overrun): capture again with a larger \
                 buffer_size_kb",
            ));
        }
        let parsed = parse_line(trimmed).map_err(|r| TraceError::at_line(file, line_no, r))?;
        if let Some((time_ns, ev)) = parsed {
            events.push((time_ns, Location::Line(line_no), ev));
        }
    }
    // In the order of time, not of the text: `trace_pipe` merges the per-CPU buffers as they
    // fill, so a request issued on one CPU just after a tag marker written on another can be
    // printed before it, and would carry the marker's previous tag. (Stable: events of one
    // instant keep the text's order.)
    events.sort_by_key(|(time_ns, _, _)| *time_ns);
    let events: Vec<(Location, Event)> = events.into_iter().map(|(_, at, ev)| (at, ev)).collect();
    assemble::assemble(file, &events, opts, Origin::FirstRequest)
}

/// The marker a followed process (or the session, for a running one) writes when it starts
/// being followed: [`read_cpu`] counts a root's time on a CPU from the first such marker (or
/// the first event) until its first switch away.
pub const FOLLOW_MARK: &str = "layoutlab follow";

/// Reads the scheduler events of tracefs text — `sched_switch` and `sched_process_fork`, as
/// kernel 6.18 prints them — into the on-CPU time of the program whose first task is one of
/// `roots` and of every task it (or its children) forked:
///
/// ```text
///  e2fsck-7 [001] d..2.  5.000100: sched_switch: prev_comm=e2fsck prev_pid=7 prev_prio=120 prev_state=D ==> next_comm=swapper/1 next_pid=0 next_prio=120
///  e2fsck-7 [000] .....  5.000300: sched_process_fork: comm=e2fsck pid=7 child_comm=e2fsck child_pid=9
/// ```
///
/// A task is on a CPU from a switch to it (`next_pid`) to the next switch away from it
/// (`prev_pid`). A root whose first event is a switch away was running since the first event
/// of the text (it was running when it started being followed); a task still running at the
/// end runs to the last event. Other events are ignored; a lost-events notice is an error.
///
/// Kernel 6.18 here does not record every switch *to* a followed task: a switch from the idle
/// task on a CPU can be missing while the switch away is there (measured on this machine: the
/// switches alone gave 9-97% of `e2fsck`'s rusage CPU time; docs/replay.md, "Known limits").
/// For a switch away with no switch to it, the `sched_stat_runtime` events of that task since
/// its previous switch away give the run: each says the task ran `runtime` ns without a break
/// up to the event (the scheduler's `update_curr`), so the run is `[switch - their sum,
/// switch]`, cut at the instant the task started being followed (a root: the first event, the
/// follow mark; a child: its fork). The recorded switches are kept where they are there: under
/// the emulator's real-time e2fsck the runtime events came to 27% more than the task-clock
/// counter (`perf_event_open`) the emulator paces by, the switches within 3% of it
/// (docs/emulate.md).
pub fn read_cpu(
    text: &str,
    file: &str,
    roots: &[u32],
) -> Result<crate::cpu::CpuTimeline, TraceError> {
    use std::collections::HashMap;
    #[derive(Clone, Copy)]
    enum State {
        /// Followed, not seen on a CPU yet: `since` is when it started being followed.
        Unseen {
            since: u64,
        },
        Running {
            since: u64,
            from: u64,
        },
        /// Not on a CPU; followed since `from`.
        Off {
            from: u64,
        },
    }
    /// What one line says, in the order of time (not of the text: `trace_pipe` merges the
    /// per-CPU buffers as they fill, so a switch on one CPU can be printed before an earlier
    /// switch on another).
    enum Sched {
        Switch {
            prev: u32,
            next: u32,
        },
        Fork {
            parent: u32,
            child: u32,
        },
        /// [`FOLLOW_MARK`]: only its time matters (it can be the first event).
        Followed,
        /// `sched_stat_runtime`: `pid` ran `ns` up to this event.
        Runtime {
            pid: u32,
            ns: u64,
        },
    }
    let mut events: Vec<(u64, usize, Sched)> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let err = |r: String| TraceError::at_line(file, i + 1, r);
        if trimmed.contains("[LOST") && trimmed.contains("EVENTS]") {
            return Err(err(
                "the kernel dropped scheduler events (ring buffer overrun): \
                            capture again with a larger buffer_size_kb"
                    .into(),
            ));
        }
        let Some((time_ns, name, payload)) = split_event(trimmed) else {
            return Err(err(
                "not a tracefs event line (expected 'TASK-PID [CPU] FLAGS SECONDS: EVENT: ...')"
                    .into(),
            ));
        };
        let event = match name {
            "sched_switch" => Sched::Switch {
                prev: number_field(payload, " prev_pid=")
                    .ok_or_else(|| err(format!("sched_switch without prev_pid: '{payload}'")))?,
                next: number_field(payload, " next_pid=")
                    .ok_or_else(|| err(format!("sched_switch without next_pid: '{payload}'")))?,
            },
            "sched_process_fork" => Sched::Fork {
                parent: number_field(payload, " pid=")
                    .ok_or_else(|| err(format!("sched_process_fork without pid: '{payload}'")))?,
                child: number_field(payload, " child_pid=").ok_or_else(|| {
                    err(format!("sched_process_fork without child_pid: '{payload}'"))
                })?,
            },
            "tracing_mark_write" if payload.trim() == FOLLOW_MARK => Sched::Followed,
            "sched_stat_runtime" => Sched::Runtime {
                pid: number_field(payload, " pid=")
                    .ok_or_else(|| err(format!("sched_stat_runtime without pid: '{payload}'")))?,
                ns: number_field(payload, " runtime=").ok_or_else(|| {
                    err(format!("sched_stat_runtime without runtime: '{payload}'"))
                })?,
            },
            _ => continue,
        };
        events.push((time_ns, i, event));
    }
    // Stable: events of one instant keep the text's order (one CPU prints them in order).
    events.sort_by_key(|e| (e.0, e.1));
    let mut tasks: HashMap<u32, State> = HashMap::new();
    let mut intervals = Vec::new();
    let first = events.first().map_or(0, |e| e.0);
    let last = events.last().map_or(0, |e| e.0);
    // Per task: the runtime its `sched_stat_runtime` events reported since its last switch
    // away, and the time of the last such event.
    let mut ran: HashMap<u32, (u64, u64)> = HashMap::new();
    // A run known only from those events: the `runtime` ns up to `at`, not before the task
    // was followed.
    let by_runtime =
        |(runtime, at): (u64, u64), from: u64| (at.saturating_sub(runtime).max(from), at);
    for &root in roots {
        tasks.insert(root, State::Unseen { since: first });
    }
    for (time_ns, _, event) in events {
        match event {
            Sched::Switch { prev, next } => {
                if let Some(state) = tasks.get_mut(&prev) {
                    let (runtime, _) = ran.remove(&prev).unwrap_or((0, 0));
                    let from = match *state {
                        State::Unseen { since } => {
                            intervals.push((since, time_ns));
                            since
                        }
                        State::Running { since, from } => {
                            intervals.push((since, time_ns));
                            from
                        }
                        // The switch to it was not recorded (the kernel's loss above): the
                        // runtime events since its last switch away say how long it ran.
                        State::Off { from } => {
                            intervals.push(by_runtime((runtime, time_ns), from));
                            from
                        }
                    };
                    *state = State::Off { from };
                }
                if let Some(state) = tasks.get_mut(&next) {
                    let from = match *state {
                        State::Unseen { since } => since,
                        State::Running { from, .. } | State::Off { from } => from,
                    };
                    *state = State::Running {
                        since: time_ns,
                        from,
                    };
                }
            }
            Sched::Fork { parent, child } => {
                if tasks.contains_key(&parent) {
                    tasks.entry(child).or_insert(State::Off { from: time_ns });
                }
            }
            Sched::Runtime { pid, ns } => {
                if tasks.contains_key(&pid) {
                    let e = ran.entry(pid).or_insert((0, 0));
                    *e = (e.0 + ns, time_ns);
                }
            }
            Sched::Followed => {}
        }
    }
    for (pid, state) in &tasks {
        match *state {
            State::Running { since, .. } => intervals.push((since, last)),
            // Ran after an unrecorded switch to it and never switched away in the text.
            State::Off { from } => {
                if let Some(&r) = ran.get(pid) {
                    intervals.push(by_runtime(r, from));
                }
            }
            State::Unseen { .. } => {}
        }
    }
    Ok(crate::cpu::CpuTimeline::from_intervals(intervals))
}

/// The number after the last `key` in `payload` (task names may hold anything, so the last
/// occurrence is the field; `key` should start with a space to skip `child_pid=` for `pid=`).
fn number_field<T: std::str::FromStr>(payload: &str, key: &str) -> Option<T> {
    let at = payload.rfind(key)? + key.len();
    let digits: &str = payload[at..].split(|c: char| !c.is_ascii_digit()).next()?;
    digits.parse().ok()
}

/// Whether `line` has the shape of a tracefs event line (for format detection).
pub(crate) fn looks_like(line: &str) -> bool {
    split_event(line).is_some_and(|(_, name, _)| !name.is_empty() && !name.contains(' '))
}

/// Splits `TASK-PID [CPU] FLAGS SECONDS: EVENT: PAYLOAD` into (time ns, event, payload).
/// The task name may hold spaces or colons, so the timestamp is found as the first token that
/// ends in `: ` and reads as seconds with a fraction.
fn split_event(line: &str) -> Option<(u64, &str, &str)> {
    let mut from = 0;
    while let Some(pos) = line[from..].find(": ") {
        let at = from + pos;
        let before = &line[..at];
        let token = before.rsplit(char::is_whitespace).next().unwrap_or("");
        if token.contains('.') {
            if let Ok(ns) = parse_decimal_ns(token, 1_000_000_000) {
                let rest = &line[at + 2..];
                let (name, payload) = match rest.find(':') {
                    Some(p) => (&rest[..p], rest[p + 1..].trim_start()),
                    None => (rest, ""),
                };
                return Some((ns, name.trim(), payload));
            }
        }
        from = at + 2;
    }
    None
}

/// One line's event and its time (ns of the trace clock).
fn parse_line(line: &str) -> Result<Option<(u64, Event)>, String> {
    let (time_ns, name, payload) = split_event(line).ok_or_else(|| {
        "not a tracefs event line (expected 'TASK-PID [CPU] FLAGS SECONDS: EVENT: ...')".to_string()
    })?;
    let stage = match name {
        "block_rq_issue" => Stage::Issue,
        "block_rq_complete" => Stage::Complete,
        "block_bio_queue" => Stage::Queue,
        "tracing_mark_write" | "print" => {
            return Ok(
                assemble::parse_tag_marker(payload).map(|t| (time_ns, Event::Tag(t.to_string())))
            )
        }
        _ => return Ok(None),
    };
    let mut fields = payload.split_whitespace();
    let dev_text = fields.next().ok_or(format!("{name}: no device field"))?;
    let dev = DevId::parse(dev_text)
        .ok_or_else(|| format!("{name}: device '{dev_text}' is not MAJOR,MINOR"))?;
    let rwbs_text = fields.next().ok_or(format!("{name}: no rwbs field"))?;
    let (op, flags) = rwbs::parse(rwbs_text).map_err(|r| format!("{name}: {r}"))?;
    // What follows the rwbs: `BYTES (CMD) SECTOR + N ...` (issue), `(CMD) SECTOR + N ...`
    // (complete), `SECTOR + N [COMM]` (bio_queue). CMD may hold spaces: find the sector as
    // the text after the first ") " that reads as `SECTOR + N`.
    let after_rwbs = {
        let start = payload.find(rwbs_text).unwrap_or(0) + rwbs_text.len();
        &payload[start..]
    };
    let tail = if stage == Stage::Queue {
        after_rwbs.trim_start()
    } else {
        let mut found = None;
        let mut from = 0;
        while let Some(p) = after_rwbs[from..].find(')') {
            let cand = after_rwbs[from + p + 1..].trim_start();
            if sector_and_count(cand).is_ok() {
                found = Some(cand);
                break;
            }
            from += p + 1;
        }
        found.ok_or_else(|| {
            format!(
                "{name}: expected '(CMD) SECTOR + SECTORS' after rwbs, found '{}'",
                after_rwbs.trim()
            )
        })?
    };
    let (sector, sectors) = sector_and_count(tail).map_err(|r| format!("{name}: {r}"))?;
    Ok(Some((
        time_ns,
        Event::Block(BlockEvent {
            dev,
            time_ns,
            stage,
            op,
            flags,
            sector,
            sectors,
        }),
    )))
}

/// Parses `SECTOR + COUNT ...`.
fn sector_and_count(s: &str) -> Result<(u64, u32), String> {
    let mut f = s.split_whitespace();
    let sector = parse_u64(f.next().unwrap_or(""), "sector")?;
    if f.next() != Some("+") {
        return Err(format!("expected 'SECTOR + SECTORS', found '{s}'"));
    }
    let sectors = parse_u32(f.next().unwrap_or(""), "sector count")?;
    Ok((sector, sectors))
}

#[cfg(test)]
mod tests {
    use super::*;

    // As kernel 6.18 printed them for `bash -c 'sleep; dd'` followed through set_event_pid
    // with event-fork (times shifted): the root 70 is running when followed, forks 71 (sleep),
    // then 72; 99 is never followed.
    const SCHED: &str = "\
            bash-70   [000] d..2.   629.800000: sched_switch: prev_comm=bash prev_pid=70 prev_prio=120 prev_state=R+ ==> next_comm=migration/0 next_pid=18 next_prio=0
          <idle>-0    [001] d..2.   629.800100: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=bash next_pid=70 next_prio=120
            bash-70   [001] .....   629.800200: sched_process_fork: comm=bash pid=70 child_comm=bash child_pid=71
            bash-70   [001] d..2.   629.800300: sched_switch: prev_comm=bash prev_pid=70 prev_prio=120 prev_state=S ==> next_comm=bash next_pid=71 next_prio=120
           sleep-71   [001] d..2.   629.800700: sched_switch: prev_comm=sleep prev_pid=71 prev_prio=120 prev_state=S ==> next_comm=other next_pid=99 next_prio=120
           other-99   [001] d..2.   629.801000: sched_switch: prev_comm=other prev_pid=99 prev_prio=120 prev_state=S ==> next_comm=bash next_pid=70 next_prio=120
            bash-70   [001] .....   629.801100: sched_process_fork: comm=bash pid=70 child_comm=bash child_pid=72
          <idle>-0    [000] d..2.   629.801200: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=bash next_pid=72 next_prio=120
            bash-70   [001] d..2.   629.801300: sched_switch: prev_comm=bash prev_pid=70 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
";

    #[test]
    fn sched_events_give_the_followed_tasks_cpu_time() {
        let t = read_cpu(SCHED, "sched.txt", &[70]).unwrap();
        // 70: [first event, 629.800000) = 0 µs, [.800100, .800300) = 200, [.801000, .801300) = 300;
        // 71: [.800300, .800700) = 400; 72 from .801200 to the last event .801300 = 100.
        // 99 never counts though it shares switches with followed tasks.
        assert_eq!(t.total_ns(), 1_000_000);
        assert_eq!(t.used_ns(629_800_300_000), 200_000);
        // Two tasks (70 and 72) on two CPUs at once count twice.
        assert_eq!(
            t.used_ns(629_801_300_000) - t.used_ns(629_801_200_000),
            200_000
        );
    }

    #[test]
    fn sched_events_printed_out_of_time_order_count_the_same() {
        // trace_pipe may print CPU 1's switch to 70 before CPU 0's earlier switch away
        // from it; reversing two such lines must not lose the interval.
        let mut lines: Vec<&str> = SCHED.lines().collect();
        lines.swap(0, 1);
        let swapped = lines.join("\n");
        let a = read_cpu(SCHED, "sched.txt", &[70]).unwrap();
        let b = read_cpu(&swapped, "sched.txt", &[70]).unwrap();
        assert_eq!(a.total_ns(), b.total_ns());
        let mut all: Vec<&str> = SCHED.lines().collect();
        all.reverse();
        assert_eq!(read_cpu(&all.join("\n"), "s", &[70]).unwrap(), a);
    }

    #[test]
    fn a_root_runs_from_the_follow_mark_to_its_first_switch_away() {
        // Followed at 629.799000, first seen switching away at .800000: 1 ms more than
        // without the mark (where its time starts at its own first event).
        let text = format!(
            "            bash-70   [000] .....   629.799000: tracing_mark_write: {FOLLOW_MARK}\n{SCHED}"
        );
        let with = read_cpu(&text, "sched.txt", &[70]).unwrap();
        let without = read_cpu(SCHED, "sched.txt", &[70]).unwrap();
        assert_eq!(with.total_ns() - without.total_ns(), 1_000_000);
    }

    // As kernel 6.18 printed them here for e2fsck blocking on a loop device (times shifted):
    // the root 7 is followed at .000000, runs, blocks (D) to the idle task on CPU 1 at
    // .000100, and runs again until .000500, but the switch from the idle task back to it was
    // not recorded (the loss `read_cpu` documents); its runtime events say when it ran. 9 is
    // its thread, forked at .000050; 99 is not followed.
    const RUNTIME: &str = "\
          e2fsck-7     [001] ...1.     5.000000: tracing_mark_write: layoutlab follow
          e2fsck-7     [001] .....     5.000050: sched_process_fork: comm=e2fsck pid=7 child_comm=e2fsck child_pid=9
          e2fsck-7     [001] d..2.     5.000100: sched_stat_runtime: comm=e2fsck pid=7 runtime=400000 [ns]
          e2fsck-7     [001] d..2.     5.000100: sched_switch: prev_comm=e2fsck prev_pid=7 prev_prio=120 prev_state=D ==> next_comm=swapper/1 next_pid=0 next_prio=120
          e2fsck-9     [000] d..2.     5.000200: sched_stat_runtime: comm=e2fsck pid=9 runtime=100000 [ns]
           other-99    [000] d..2.     5.000300: sched_stat_runtime: comm=other pid=99 runtime=300000 [ns]
          e2fsck-7     [001] d..2.     5.000500: sched_stat_runtime: comm=e2fsck pid=7 runtime=150000 [ns]
          e2fsck-7     [001] d..2.     5.000500: sched_switch: prev_comm=e2fsck prev_pid=7 prev_prio=120 prev_state=D ==> next_comm=swapper/1 next_pid=0 next_prio=120
";

    #[test]
    fn runtime_events_give_the_time_a_missing_switch_would_lose() {
        let t = read_cpu(RUNTIME, "sched.txt", &[7]).unwrap();
        // 7: its first runtime reaches back 400 µs, cut at the follow mark: [.000000, .000100)
        // = 100 µs; then [.000350, .000500) = 150 µs. 9: [.000100, .000200), after its fork.
        // 99 not at all. The switches alone would give 100 µs: the second run has no switch
        // to it.
        assert_eq!(t.total_ns(), 350_000);
        assert_eq!(t.used_ns(5_000_350_000), 200_000);
        assert_eq!(t.used_ns(5_000_450_000), 300_000);
        let switches: String = RUNTIME
            .lines()
            .filter(|l| !l.contains("sched_stat_runtime"))
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(
            read_cpu(&switches, "sched.txt", &[7]).unwrap().total_ns(),
            100_000
        );
        let bad = RUNTIME.replace("runtime=150000", "runtime=x");
        let e = read_cpu(&bad, "s.txt", &[7]).unwrap_err().to_string();
        assert!(e.contains("runtime") && e.contains("s.txt"), "{e}");
    }

    #[test]
    fn sched_events_of_unfollowed_roots_count_nothing() {
        let t = read_cpu(SCHED, "sched.txt", &[12345]).unwrap();
        assert_eq!(t.total_ns(), 0);
    }

    #[test]
    fn sched_bad_lines_are_errors_naming_the_line() {
        let e = read_cpu("garbage\n", "s.txt", &[1])
            .unwrap_err()
            .to_string();
        assert!(e.contains("s.txt") && e.contains('1'), "{e}");
        let text = "  a-1 [000] d..2.  1.000000: sched_switch: prev_comm=a ==> next_comm=b\n";
        let e = read_cpu(text, "s.txt", &[1]).unwrap_err().to_string();
        assert!(e.contains("prev_pid"), "{e}");
        let lost = "CPU:0 [LOST 12 EVENTS]\n";
        assert!(read_cpu(lost, "s.txt", &[1])
            .unwrap_err()
            .to_string()
            .contains("dropped"));
    }
    use crate::{Flags, Op};

    const SAMPLE: &str = "\
# tracer: nop
            bash-1   [001] ...1.   10.000000: tracing_mark_write: layoutlab tag=pass1
              dd-2   [000] .....   10.000100: block_bio_queue: 7,0 RA 40000 + 8 [dd]
              dd-2   [000] .....   10.000200: block_rq_issue: 7,0 RA 4096 () 40000 + 8 be,0,4 [dd]
 my task: x-3   [000] .....   10.000250: block_rq_issue: 8,0 R 4096 () 9 + 8 be,0,4 [my task: x]
     ksoftirqd/0-14 [000] ..s..   10.000300: block_rq_complete: 7,0 RA () 40000 + 8 be,0,4 [0]
";

    #[test]
    fn reads_issue_complete_tag_with_filter() {
        let opts = ReadOptions {
            dev: Some(DevId { major: 7, minor: 0 }),
            devno: None,
        };
        let t = read(SAMPLE, "s", &opts).unwrap();
        assert_eq!(t.requests.len(), 1);
        let r = t.requests[0];
        assert_eq!((r.issue_ns, r.complete_ns), (0, Some(100_000)));
        assert_eq!(
            (r.op, r.sector, r.sectors, r.flags),
            (Op::Read, 40000, 8, Flags::READAHEAD)
        );
        assert_eq!(t.tag_name(r.tag), "pass1");
    }

    /// How `trace_pipe` can print an XFS delete phase's end (events as the kernel printed them
    /// in a quiet run, times shifted, the order changed): the AIL's background metadata write,
    /// issued on CPU 1 just after the phase's end marker on CPU 0, comes out of CPU 1's buffer
    /// first. By time it belongs to the next tag, and its completion still pairs with it.
    #[test]
    fn tags_follow_time_not_the_order_trace_pipe_printed() {
        let text = "\
   xfsaild/loop0-3504 [001] .....   20.000300: block_rq_issue: 7,0 WM 16384 () 128 + 32 be,0,4 [xfsaild/loop0]
       layoutlab-9 [000] ...1.   20.000100: tracing_mark_write: layoutlab tag=delete
       layoutlab-9 [000] .....   20.000150: block_rq_issue: 7,0 RM 512 () 2 + 1 be,0,4 [layoutlab]
     ksoftirqd/0-14 [000] ..s..   20.000160: block_rq_complete: 7,0 RM () 2 + 1 be,0,4 [0]
       layoutlab-9 [000] ...1.   20.000200: tracing_mark_write: layoutlab tag=after
     ksoftirqd/0-14 [000] ..s..   20.000400: block_rq_complete: 7,0 WM () 128 + 32 be,0,4 [0]
";
        let t = read(text, "s", &ReadOptions::default()).unwrap();
        let got: Vec<(Op, u64, &str, u64, Option<u64>)> = t
            .requests
            .iter()
            .map(|r| (r.op, r.sector, t.tag_name(r.tag), r.issue_ns, r.complete_ns))
            .collect();
        assert_eq!(
            got,
            vec![
                (Op::Read, 2, "delete", 0, Some(10_000)),
                (Op::Write, 128, "after", 150_000, Some(250_000)),
            ]
        );
    }

    #[test]
    fn several_devices_without_filter_is_an_error() {
        let e = read(SAMPLE, "s", &ReadOptions::default()).unwrap_err();
        assert_eq!(e.line(), Some(5));
        assert!(e.reason().contains("one device"), "{e}");
    }

    #[test]
    fn lost_events_is_an_error() {
        let e = read("CPU:1 [LOST 23 EVENTS]\n", "s", &ReadOptions::default()).unwrap_err();
        assert_eq!(e.line(), Some(1));
        assert!(e.reason().contains("dropped"));
    }
}
