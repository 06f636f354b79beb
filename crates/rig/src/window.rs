//! A traced phase's window on a device: its tag marked in the trace, the device's own counters
//! (`/sys/block/DEV/stat`) read settled on both sides of each mark, and the count a phase's
//! traced sectors must match.
//!
//! Each boundary reads the counters settled just before its mark and again just after it. A
//! request the kernel issues between those two reads (a dispatch deferred to kblockd longer
//! than the settle's quiet time, which a loaded machine does now and then: CI once saw one
//! 4 KiB read there) is traced on one side of the mark or the other, and the counters cannot
//! say which. So a window's count is exact when both boundaries were quiet, and otherwise a
//! range as wide as what moved across them. A request issued before the opening read or after
//! the closing one is outside both the count and the phase's tag, as it should be.
//!
//! [`crate::TracedRun`] checks every phase of a kernel file system's run this way; a capture
//! that marks phases on its own session (a raw device, a file read by another program) opens a
//! [`Window`] and compares what it needs to.

use crate::error::{Result, RigError};
use crate::{settled_stat_sectors, Capture, TracefsSession};
use std::ops::RangeInclusive;

/// Sectors read and written on the device, as `/sys/block/DEV/stat` counts them.
pub type Sectors = (u64, u64);

/// The device's counters at one mark: read settled just before it and just after it. Equal
/// when nothing crossed the mark.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Boundary {
    /// Settled, before the mark was written.
    pub before_mark: Sectors,
    /// Settled, after the mark was written.
    pub after_mark: Sectors,
}

/// What the device counted in a phase: its opening and closing boundaries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counted {
    /// At the phase's own mark.
    pub start: Boundary,
    /// At the next phase's mark.
    pub end: Boundary,
}

impl Counted {
    /// Sectors read in the phase: exact when both boundaries were quiet, else the range the
    /// requests that crossed a mark leave open.
    pub fn reads(&self) -> RangeInclusive<u64> {
        self.range(|s| s.0)
    }

    /// Sectors written in the phase, as [`Counted::reads`].
    pub fn writes(&self) -> RangeInclusive<u64> {
        self.range(|s| s.1)
    }

    fn range(&self, f: impl Fn(Sectors) -> u64) -> RangeInclusive<u64> {
        let low = f(self.end.before_mark).saturating_sub(f(self.start.after_mark));
        let high = f(self.end.after_mark).saturating_sub(f(self.start.before_mark));
        low..=high
    }
}

/// A count as a sentence's object: `241328`, or `241320 to 241328` when a request crossed a
/// mark.
pub fn show(range: &RangeInclusive<u64>) -> String {
    if range.start() == range.end() {
        range.start().to_string()
    } else {
        format!(
            "{} to {} (a request crossed a mark)",
            range.start(),
            range.end()
        )
    }
}

/// Marks `tag` on `session` with `dev_name`'s counters read settled on both sides.
pub fn mark(session: &TracefsSession, dev_name: &str, tag: &str) -> Result<Boundary> {
    let before_mark = settled_stat_sectors(dev_name)?;
    session.mark(tag)?;
    let after_mark = settled_stat_sectors(dev_name)?;
    Ok(Boundary {
        before_mark,
        after_mark,
    })
}

/// An open phase: its tag is marked, and the device's counters were read settled around it.
pub struct Window<'a> {
    session: &'a TracefsSession,
    dev_name: &'a str,
    start: Boundary,
}

impl<'a> Window<'a> {
    /// Opens the phase `tag` on `session`'s device `dev_name` (`loop3`, `zram0`).
    pub fn open(session: &'a TracefsSession, dev_name: &'a str, tag: &str) -> Result<Window<'a>> {
        let start = mark(session, dev_name, tag)?;
        Ok(Window {
            session,
            dev_name,
            start,
        })
    }

    /// Closes the phase with the mark `next` (what the requests after it are tagged), and
    /// returns what the device counted in it.
    pub fn close(self, next: &str) -> Result<Counted> {
        let end = mark(self.session, self.dev_name, next)?;
        Ok(Counted {
            start: self.start,
            end,
        })
    }
}

/// Refuses a capture in which the kernel lost trace events: its requests would be a sample,
/// and every count and replay of it would be short.
pub fn check_complete(capture: &Capture) -> Result<()> {
    if capture.lost_events > 0 {
        return Err(RigError::Unsupported(format!(
            "the kernel lost {} trace events; the trace is incomplete (raise the tracefs buffer)",
            capture.lost_events
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quiet(s: Sectors) -> Boundary {
        Boundary {
            before_mark: s,
            after_mark: s,
        }
    }

    #[test]
    fn quiet_boundaries_count_the_phase_exactly() {
        let c = Counted {
            start: quiet((100, 50)),
            end: quiet((300, 90)),
        };
        assert_eq!(c.reads(), 200..=200);
        assert_eq!(c.writes(), 40..=40);
        assert_eq!(show(&c.reads()), "200");
    }

    #[test]
    fn a_read_that_crossed_a_mark_widens_the_count_by_its_sectors_only() {
        // The CI failure's numbers: 8 sectors moved while the closing mark was written.
        let c = Counted {
            start: quiet((1000, 0)),
            end: Boundary {
                before_mark: (1000 + 241_320, 0),
                after_mark: (1000 + 241_328, 0),
            },
        };
        let r = c.reads();
        assert!(r.contains(&241_320) && r.contains(&241_328));
        assert!(!r.contains(&241_312) && !r.contains(&241_336));
        assert_eq!(c.writes(), 0..=0);
        assert!(show(&r).starts_with("241320 to 241328"), "{}", show(&r));
        // At the opening mark likewise.
        let c = Counted {
            start: Boundary {
                before_mark: (1000, 0),
                after_mark: (1008, 0),
            },
            end: quiet((1000 + 500, 0)),
        };
        assert_eq!(c.reads(), 492..=500);
    }
}
