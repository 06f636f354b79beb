//! The drive's segmented buffer cache: a fixed set of segments, each holding one run of
//! consecutive sectors, replaced least-recently-used, plus at most one read-ahead stream that
//! keeps filling a segment from the media after a read, until a limit or until the mechanism
//! is needed elsewhere. No allocation after construction.

/// One cache segment: sectors `[start, end)` are valid.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Segment {
    /// First cached sector.
    pub start: u64,
    /// One past the last cached sector (`end == start` means empty).
    pub end: u64,
    /// Logical clock of the last use (LRU).
    pub last_use: u64,
    /// Holds data written by the host.
    pub written: bool,
}

/// A read-ahead in progress: the media keeps streaming sectors into `segment`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stream {
    /// Segment being filled.
    pub segment: usize,
    /// Sector that started reading at `t0_ns`.
    pub next: u64,
    /// Time at which reading of `next` began, ns.
    pub t0_ns: f64,
    /// Effective time per sector of sequential reading (track/cylinder switches spread in), ns.
    pub sector_ns: f64,
    /// Reading stops at this sector (exclusive).
    pub limit: u64,
}

impl Stream {
    /// Sectors read from the media by time `t_ns` (whole sectors only).
    #[inline]
    pub fn frontier_at(&self, t_ns: f64) -> u64 {
        if t_ns <= self.t0_ns {
            return self.next;
        }
        let n = ((t_ns - self.t0_ns) / self.sector_ns) as u64;
        (self.next + n).min(self.limit)
    }
    /// Time at which sector `lbn` (≥ next) has been read completely, ns.
    #[inline]
    pub fn ready_ns(&self, lbn: u64) -> f64 {
        self.t0_ns + (lbn + 1 - self.next) as f64 * self.sector_ns
    }
    /// Time at which the stream reaches its limit, ns.
    #[inline]
    pub fn done_ns(&self) -> f64 {
        self.t0_ns + (self.limit - self.next) as f64 * self.sector_ns
    }
}

/// The segmented cache.
#[derive(Clone, Debug)]
pub struct SegmentCache {
    segments: Vec<Segment>,
    /// Capacity of one segment, sectors.
    pub segment_sectors: u64,
    clock: u64,
    /// The active read-ahead, if any.
    pub stream: Option<Stream>,
}

impl SegmentCache {
    /// `count` segments of `segment_sectors` each.
    pub fn new(count: usize, segment_sectors: u64) -> SegmentCache {
        SegmentCache {
            segments: vec![Segment::default(); count],
            segment_sectors,
            clock: 0,
            stream: None,
        }
    }

    /// Number of segments.
    pub fn len(&self) -> usize {
        self.segments.len()
    }
    /// Whether the cache has no segments.
    pub fn is_empty(&self) -> bool {
        self.segments.is_empty()
    }
    /// The segment at `i`.
    pub fn segment(&self, i: usize) -> &Segment {
        &self.segments[i]
    }

    /// Bring the streaming segment's contents up to time `t_ns`.
    #[inline]
    pub fn advance(&mut self, t_ns: f64) {
        if let Some(s) = self.stream {
            let f = s.frontier_at(t_ns);
            let seg = &mut self.segments[s.segment];
            if f > seg.end {
                seg.end = f;
                // A segment is a circular buffer: the oldest sectors drop out as it fills.
                if seg.end - seg.start > self.segment_sectors {
                    seg.start = seg.end - self.segment_sectors;
                }
            }
            if f >= s.limit {
                self.stream = None;
            }
        }
    }

    /// Stop the read-ahead (at the state reached by the last `advance`).
    #[inline]
    pub fn stop_stream(&mut self) {
        self.stream = None;
    }

    /// The segment holding sector `lbn`, and how many sectors of `[lbn, lbn+n)` it holds from
    /// `lbn` on.
    #[inline]
    pub fn lookup(&self, lbn: u64, n: u64) -> Option<(usize, u64)> {
        let mut best: Option<(usize, u64)> = None;
        for (i, s) in self.segments.iter().enumerate() {
            if s.start <= lbn && lbn < s.end {
                let have = (s.end - lbn).min(n);
                if !matches!(best, Some((_, h)) if h >= have) {
                    best = Some((i, have));
                }
            }
        }
        best
    }

    /// Forget the sectors of segment `i` before `lbn` (they were handed to the host and may
    /// be overwritten by read-ahead).
    #[inline]
    pub fn drop_before(&mut self, i: usize, lbn: u64) {
        let s = &mut self.segments[i];
        if s.start < lbn {
            s.start = lbn.min(s.end);
        }
    }

    /// Mark segment `i` used now.
    #[inline]
    pub fn touch(&mut self, i: usize) {
        self.clock += 1;
        self.segments[i].last_use = self.clock;
    }

    /// Choose a segment for new data and fill it with `[start, end)`; returns its index.
    ///
    /// The choice is DiskSim's (`disk_buffer_select_read_segment`): an empty segment first,
    /// else the first idle segment in list order, and the one being read ahead only when
    /// nothing else is free. It is not LRU: the segment just used is taken again, so older
    /// segments keep their contents for a long time and recent data is replaced first.
    #[inline]
    pub fn replace(&mut self, start: u64, end: u64, written: bool) -> usize {
        let streaming = self.stream.map(|s| s.segment);
        let victim = self
            .segments
            .iter()
            .position(|s| s.last_use == 0)
            .or_else(|| (0..self.segments.len()).find(|&i| Some(i) != streaming))
            .unwrap_or(0);
        if Some(victim) == streaming {
            self.stream = None;
        }
        let keep_from = end.saturating_sub(self.segment_sectors).max(start);
        self.segments[victim] = Segment {
            start: keep_from,
            end,
            last_use: 0,
            written,
        };
        self.touch(victim);
        victim
    }

    /// Put `[start, end)` in the cache: extend a segment that ends exactly at `start`, else
    /// replace one. Returns the segment used.
    #[inline]
    pub fn insert(&mut self, start: u64, end: u64, written: bool) -> usize {
        if written {
            // A write lands in the segment that held (part of) those sectors, and that
            // segment now holds only the written run (DiskSim hands the whole segment to
            // the write).
            if let Some(i) = self
                .segments
                .iter()
                .position(|s| s.start < end && start < s.end)
            {
                if self.stream.is_some_and(|st| st.segment == i) {
                    self.stream = None;
                }
                for (j, s) in self.segments.iter_mut().enumerate() {
                    if j != i && s.start < end && start < s.end {
                        s.end = s.start;
                    }
                }
                let keep_from = end.saturating_sub(self.segment_sectors).max(start);
                self.segments[i] = Segment {
                    start: keep_from,
                    end,
                    last_use: 0,
                    written,
                };
                self.touch(i);
                return i;
            }
        }
        // Drop stale copies of these sectors elsewhere so a lookup never finds old data.
        for s in self.segments.iter_mut() {
            if s.start < end && start < s.end {
                if s.start >= start {
                    s.start = s.end.min(end.max(s.start));
                    if s.start >= s.end {
                        s.end = s.start;
                    }
                } else {
                    s.end = start;
                }
            }
        }
        for i in 0..self.segments.len() {
            let s = self.segments[i];
            if s.end == start && s.end > s.start {
                let seg = &mut self.segments[i];
                seg.end = end;
                if seg.end - seg.start > self.segment_sectors {
                    seg.start = seg.end - self.segment_sectors;
                }
                seg.written |= written;
                self.touch(i);
                return i;
            }
        }
        self.replace(start, end, written)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_fills_segment_over_time_and_stops_at_limit() {
        let mut c = SegmentCache::new(2, 100);
        let i = c.insert(10, 18, false);
        c.stream = Some(Stream {
            segment: i,
            next: 18,
            t0_ns: 1000.0,
            sector_ns: 10.0,
            limit: 50,
        });
        c.advance(1055.0);
        assert_eq!(c.segment(i).end, 23);
        assert_eq!(c.lookup(20, 8), Some((i, 3)));
        c.advance(1_000_000.0);
        assert_eq!(c.segment(i).end, 50);
        assert!(c.stream.is_none());
    }

    #[test]
    fn empty_segments_first_then_list_order_and_circular_segments() {
        let mut c = SegmentCache::new(2, 16);
        let a = c.insert(0, 8, false);
        let b = c.insert(100, 108, false);
        assert_ne!(a, b);
        // No segment empty: the first idle one in list order is reused (DiskSim), even
        // though it was used more recently than the other.
        c.touch(a);
        let d = c.insert(200, 240, false);
        assert_eq!(d, 0);
        // Only the last 16 sectors fit.
        assert_eq!(c.lookup(224, 16), Some((d, 16)));
        assert_eq!(c.lookup(200, 8), None);
        // A read-ahead in segment 0 protects it: the next miss goes to segment 1.
        c.stream = Some(Stream {
            segment: 0,
            next: 240,
            t0_ns: 0.0,
            sector_ns: 1.0,
            limit: 250,
        });
        assert_eq!(c.insert(500, 504, false), 1);
        // Appending extends the segment that ends where the new data starts.
        let e = c.insert(504, 508, true);
        assert_eq!(e, 1);
        assert_eq!(c.lookup(500, 8), Some((1, 8)));
    }

    #[test]
    fn overwritten_sectors_are_not_found_in_old_segments() {
        let mut c = SegmentCache::new(3, 64);
        let a = c.insert(0, 32, false);
        let b = c.insert(40, 48, true);
        c.insert(16, 24, true);
        // The write takes over the segment that held those sectors; its old run is gone.
        assert_eq!(c.lookup(16, 8), Some((a, 8)));
        assert_eq!(c.lookup(0, 16), None);
        assert_eq!(c.lookup(24, 8), None);
        assert_eq!(c.lookup(40, 8), Some((b, 8)));
    }
}
