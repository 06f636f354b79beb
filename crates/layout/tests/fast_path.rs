//! The run-at-a-time writer must do exactly what one `ext3_new_blocks()` call per block
//! does: same blocks, same indirect blocks, same final free map, on fragmented free space,
//! with and without metacluster-like holes.

use layoutlab_layout::alloc::ext3_alloc::Ext3Alloc;
use layoutlab_layout::alloc::writer::{write_file, write_file_per_block, IndirectPlacer};
use layoutlab_layout::alloc::FreeMap;
use proptest::prelude::*;

struct Inline;
impl IndirectPlacer for Inline {
    fn inline(&self) -> bool {
        true
    }
    fn place(&mut self, _: &mut Ext3Alloc, _: u64, _: usize) -> Option<Vec<u64>> {
        None
    }
}

/// Indirect blocks at the first free block of the data block's group hole, else anywhere.
struct InHole;
impl IndirectPlacer for InHole {
    fn inline(&self) -> bool {
        false
    }
    fn place(&mut self, alloc: &mut Ext3Alloc, data: u64, count: usize) -> Option<Vec<u64>> {
        let group = alloc.map.group_of(data);
        let (s, e) = alloc.hole(group);
        let mut out = Vec::new();
        for _ in 0..count {
            let b = match alloc.map.next_free(s, e) {
                Some(b) => {
                    alloc.map.mark_used(b, 1);
                    b
                }
                None => alloc.new_blocks(alloc.map.group_first(group), 1, None)?.0,
            };
            out.push(b);
        }
        Some(out)
    }
}

fn fragmented(blocks: u64, bpg: u64, used: &[(u64, u64)], holes: bool) -> Ext3Alloc {
    let mut map = FreeMap::new(blocks, 0, bpg);
    for &(start, len) in used {
        let start = start % blocks;
        let len = len.min(blocks - start);
        let mut at = start;
        while let Some(b) = map.next_free(at, start + len) {
            let e = map.next_used(b, start + len);
            map.mark_used(b, e - b);
            at = e;
        }
    }
    let mut a = Ext3Alloc::new(map);
    if holes {
        for g in 0..a.map.group_count() {
            let first = a.map.group_first(g);
            let len = a.map.group_end(g) - first;
            a.set_hole(g, first + len / 2, first + len / 2 + (len / 128).max(1));
        }
    }
    a
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn runs_equal_per_block_calls(
        bpg_shift in 8u32..12,
        groups in 1u64..6,
        tail in 0u64..200,
        used in prop::collection::vec((0u64..1 << 14, 1u64..600), 0..40),
        files in prop::collection::vec((0u64..1 << 14, 0u64..5000), 1..6),
        holes in any::<bool>(),
    ) {
        let bpg = 1u64 << bpg_shift;
        let blocks = bpg * groups + tail.min(bpg - 1) + 1;
        let mut fast = fragmented(blocks, bpg, &used, holes);
        let mut slow = fast.clone();
        for (goal, len) in files {
            let goal = goal % blocks;
            let (a, b) = if holes {
                (write_file(&mut fast, &mut InHole, goal, len, 256), write_file_per_block(&mut slow, &mut InHole, goal, len, 256))
            } else {
                (write_file(&mut fast, &mut Inline, goal, len, 256), write_file_per_block(&mut slow, &mut Inline, goal, len, 256))
            };
            prop_assert_eq!(&a, &b);
        }
        for g in 0..fast.map.group_count() {
            prop_assert_eq!(fast.map.group_free(g), slow.map.group_free(g));
        }
        let mut at = 0;
        while let Some(x) = fast.map.next_free(at, blocks) {
            prop_assert_eq!(slow.map.next_free(at, blocks), Some(x));
            at = fast.map.next_used(x, blocks);
            prop_assert_eq!(slow.map.next_used(x, blocks), at);
        }
        prop_assert_eq!(slow.map.next_free(at, blocks), None);
    }
}
