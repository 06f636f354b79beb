//! Run a kernel phase under trace: a phase's window on the device, opened and closed with the
//! device settled on both sides of the mark, and the capture refused when the kernel lost
//! events.
//!
//! The device's own counters (`/sys/block/DEV/stat`) bound each window: settled before the
//! mark, so a request issued late by kblockd for earlier work is not counted in the phase; and
//! settled again before the closing mark and once after it, so that a request traced inside
//! the phase is counted by the closing read. The operation then compares the sectors its
//! phase's trace holds with the counters' difference (which directions it compares is its
//! own business).

use anyhow::{bail, Result};
use layoutlab_rig::{Capture, TracefsSession};

/// Sectors read and written on the device, as `/sys/block/DEV/stat` counts them.
pub type Sectors = (u64, u64);

/// An open phase: its tag is marked, and the device's counters were read settled before it.
pub struct Window<'a> {
    session: &'a TracefsSession,
    dev_name: &'a str,
    /// The device's counters when the phase began.
    pub before: Sectors,
}

/// Opens the phase `tag` on `session`'s device `dev_name` (`loop3`, `zram0`): the counters
/// once the device is settled, then the mark.
pub fn open<'a>(session: &'a TracefsSession, dev_name: &'a str, tag: &str) -> Result<Window<'a>> {
    let before = layoutlab_rig::settled_stat_sectors(dev_name)?;
    session.mark(tag)?;
    Ok(Window {
        session,
        dev_name,
        before,
    })
}

impl Window<'_> {
    /// Closes the phase with the mark `next` (what the requests after it are tagged): settles
    /// the device, marks, and reads the counters settled again. Returns the counters at the
    /// phase's start and end.
    pub fn close(self, next: &str) -> Result<(Sectors, Sectors)> {
        layoutlab_rig::settled_stat_sectors(self.dev_name)?;
        self.session.mark(next)?;
        let after = layoutlab_rig::settled_stat_sectors(self.dev_name)?;
        Ok((self.before, after))
    }
}

/// Refuses a capture in which the kernel lost trace events: its requests would be a sample,
/// and every count and replay of it would be short.
pub fn complete(capture: &Capture) -> Result<()> {
    if capture.lost_events > 0 {
        bail!(
            "the kernel lost {} trace events; the trace is incomplete (raise the tracefs buffer)",
            capture.lost_events
        );
    }
    Ok(())
}
