//! A device model behind its FCFS host queue, served one arrival at a time: the driver the
//! emulator (`layoutlab device emulate`, crates/rig/src/emulate.rs) uses to answer real requests.
//!
//! It is the replay's own queue ([`Scheduler`], FCFS at the device's depth) and the model's own
//! [`Device::submit`], driven by arrivals in time order instead of by a trace: a request is
//! handed to the device when it arrives, or when a slot of the queue frees if `depth` are in
//! flight. An open-loop [`crate::replay::replay`] of the stream an emulator served, with its
//! arrival and completion times, therefore prices every request as the emulator did (one model,
//! two drivers; held by `crates/rig/tests/emulate.rs`). SPTF is not offered: it reorders
//! requests that have already arrived, which needs the whole queue at each dispatch, and the
//! emulator answers each request as it comes.

use crate::replay::{Discipline, Dispatched, Scheduler};
use crate::{Device, IoRequest};

/// A device and its FCFS host queue, taking arrivals in time order.
pub struct ArrivalServer {
    device: Box<dyn Device>,
    queue: Scheduler,
    next_id: usize,
}

impl ArrivalServer {
    /// Serves `device` behind an FCFS queue of the device's own depth
    /// ([`Device::queue_depth`]), as [`crate::replay::ReplayOptions::default`] replays it.
    pub fn new(device: Box<dyn Device>) -> ArrivalServer {
        let depth = device.queue_depth();
        ArrivalServer {
            device,
            queue: Scheduler::new(Discipline::Fcfs, depth),
            next_id: 0,
        }
    }

    /// The model.
    pub fn device(&self) -> &dyn Device {
        self.device.as_ref()
    }

    /// Request `req` arrives at `arrival_ns` (model ns, not before an earlier arrival):
    /// returns when the queue hands it to the device and when the device completes it.
    pub fn serve(&mut self, arrival_ns: f64, req: &IoRequest) -> Dispatched {
        let id = self.next_id;
        self.next_id += 1;
        self.queue.push(id, arrival_ns, *req);
        let at_ns = self
            .queue
            .next_dispatch_ns(arrival_ns)
            .expect("a request was just pushed");
        self.queue
            .dispatch(self.device.as_mut(), at_ns)
            .expect("a request was just pushed")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::preset::load_preset;
    use crate::replay::{replay, ReplayOptions};
    use layoutlab_trace::{Flags, Op, Request, Trace};

    /// The emulator raises a request's arrival to the model's last completion when it was
    /// received while no reply was pending (crates/rig/src/emulate.rs, `ModelClock`): on a
    /// disk model that changes no completion, since the drive starts a request at the later
    /// of its arrival and the end of its work. Sequential runs (the drive's cache and
    /// read-ahead) and random reads and writes, each arriving before the previous completion.
    #[test]
    fn on_a_disk_an_arrival_raised_to_the_last_completion_completes_at_the_same_time() {
        for preset in ["sata-400g-2007", "sata-160g-2009", "sata-500g-2008"] {
            let mut early = ArrivalServer::new(load_preset(preset).unwrap());
            let mut raised = ArrivalServer::new(load_preset(preset).unwrap());
            let (mut last_complete, mut arrival) = (0.0f64, 0.0f64);
            let mut x = 12_345u64;
            for i in 0..400u64 {
                // A small LCG: random sectors in the first 100 GB, or the next run of a stream.
                x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                let sector = if i % 3 == 0 {
                    (x >> 20) % 200_000_000
                } else {
                    8 * i
                };
                let req = IoRequest {
                    op: if i % 7 == 0 { Op::Write } else { Op::Read },
                    sector,
                    sectors: 8 << (i % 4),
                    flags: Flags::default(),
                };
                // Up to 1 ms before the previous completion, as the route's jitter at K = 16.
                arrival = arrival.max(last_complete - ((x >> 40) % 1_000_000) as f64);
                let a = early.serve(arrival, &req);
                let b = raised.serve(last_complete.ceil().max(arrival), &req);
                assert!(
                    (a.complete_ns - b.complete_ns).abs() <= 1.0,
                    "{preset} request {i}: arriving early {a:?}, raised {b:?}"
                );
                last_complete = last_complete.max(a.complete_ns);
            }
        }
    }

    /// A stream with overlapping requests (read-ahead) and idle gaps, served one arrival at a
    /// time, then replayed open loop from its arrival and completion times: every request is
    /// issued and completes at the same model time (the trace keeps whole ns, hence 1 ns). When
    /// the queue hands a request to a device with a queue of its own (depth > 1) may differ: the
    /// device starts it when it is free either way.
    #[test]
    fn serving_arrivals_and_replaying_their_stream_agree() {
        let arrivals: Vec<(f64, u64, u32)> = vec![
            (0.0, 0, 8),
            (100_000.0, 2048, 256),
            (150_000.0, 4096, 256),
            (30_000_000.0, 1_000_000, 8),
            (30_000_500.0, 1_000_008, 1024),
            (90_000_000.0, 50_000_000, 64),
        ];
        for preset in ["sata-400g-2007", "sata-160g-2009", "ssd-sata-2010"] {
            let mut server = ArrivalServer::new(load_preset(preset).unwrap());
            let mut trace = Trace::default();
            let tag = trace.tag("t");
            let mut served = Vec::new();
            for &(arrival_ns, sector, sectors) in &arrivals {
                let req = IoRequest {
                    op: Op::Read,
                    sector,
                    sectors,
                    flags: Flags::default(),
                };
                let d = server.serve(arrival_ns, &req);
                served.push(d);
                trace.requests.push(Request {
                    issue_ns: arrival_ns.round() as u64,
                    complete_ns: Some(d.complete_ns.round() as u64),
                    op: Op::Read,
                    sector,
                    sectors,
                    flags: Flags::default(),
                    tag,
                    cpu: None,
                });
            }
            let mut model = load_preset(preset).unwrap();
            let r = replay(model.as_mut(), &trace, &ReplayOptions::default());
            for (i, (s, r)) in served.iter().zip(&r.requests).enumerate() {
                assert!(
                    (s.arrival_ns - r.issue_ns).abs() <= 1.0
                        && (s.complete_ns - r.complete_ns).abs() <= 1.0,
                    "{preset} request {i}: served {s:?}, replayed {r:?}"
                );
            }
        }
    }
}
