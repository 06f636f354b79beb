#!/usr/bin/env bash
# Regenerates the error-budget tables of docs/fidelity.md (issue 27) that no other run writes:
# each block `budget-NAME` is one experiment's factors, each switched alone, from runs made here.
#
#   docs/regenerate-budgets.sh          every block (an hour or more here: metacluster-io six times at
#                                       scale 1, random-read five times (about 2 min
#                                       each, the closed loop at K = 16 about 12 min, ext4
#                                       written by the kernel about 16 min, measured 15.6) and
#                                       large-delete's ext runs three times at scale 1 (the second
#                                       ext4 only, the third non-rotational), XFS and btrfs twice at
#                                       scale 1 (about 10 min each; the second non-rotational), the two fsck
#                                       experiments twice each)
#   ONLY="fio mkfs" docs/regenerate-budgets.sh   only these blocks: fio (fio-randread), mkfs
#                                       (mkfs-overhead), mio (metacluster-io), ld (large-delete),
#                                       ldcl (large-delete in closed loop: two runs, ext at scale 1),
#                                       rr (random-read), kernel (ld and rr), cpu (ext4-fsck-allocator and
#                                       metacluster-fsck without think time), cpuf (the two netbook
#                                       experiments and metacluster-fsck with their period CPU
#                                       presets, open and closed loop: 6 runs, about 10 min), netbook (ext4-fsck-allocator
#                                       with the period checker, CPU and an SSD switched
#                                       together: 5 runs, under a minute), tree (metacluster-fsck's
#                                       bench5 plans against the post's file list; no root, seconds),
#                                       band (metacluster-fsck at scale 1 twice on a 423 GB variant
#                                       of its drive: the list as shipped, and whole; a few min),
#                                       fsck (the three fsck tables, metacluster-fsck at scale 1, and
#                                       docs/emulate.md's closed-loop block: 17 runs, 15-20 min here
#                                       loaded, the closed loop at scale 1 the longest at about 5 min);
#                                       fio and mkfs take about 2 min; queue (the fsck experiments'
#                                       queue size, 9 plain captures at their default scales and 3
#                                       of metacluster-fsck at scale 1) and
#                                       repeat (ext3-vs-ext4-fsck 3 times plain and 3 times closed
#                                       loop; shares 2 plain runs with queue): 15-25 min together;
#                                       readahead (the fsck experiments' read-ahead window:
#                                       each at scale 1 at 128 KiB twice, 64, 32, 16 and 0: 18
#                                       plain captures, about 6 min here, quiet);
#                                       spread (each fsck experiment captured N_SPREAD = 8 times
#                                       as shipped at scale 1: 24 runs, about 10 min here);
#                                       treeband (ext4-fsck-allocator's tree laid out by our two
#                                       plans and written by today's kernel twice, each checked
#                                       and priced alike); phase (metacluster-fsck at scale 1
#                                       kept, ext3-2007's indirect reads read by read: about
#                                       2 min, /dev/shm for the kept images, under 1 GB)
#
# `make docs-budgets` runs it (all blocks). Model-priced seconds are what the tables use; wall time here is
# never a budget number (the machine is shared). Root is needed (loop devices, tracefs, the
# emulated disk, mounts); the period mke2fs comes from `make period-e2fsprogs`.
# Environment:
#   N_SPREAD=n       captures per experiment of the spread block (default 8)
#   LAYOUTLAB=path   use this binary instead of building target/release/layoutlab
#   OUT=dir          keep the runs' reports and JSON there (default: a temp dir, removed)
#   REUSE=1          with OUT: a run of an experiment (not fio-randread's or mkfs-overhead's,
#                    which take seconds) whose JSON is already in OUT is not run again (to resume after an
#                    interruption; same build only)
#   REUSE_ONLY=1     with OUT: run nothing new; a kernel or fsck block's row whose run is not in OUT
#                    prints "not run" in its cells (to splice what finished when a session ran out
#                    of time); an fsck block whose shipped run is not in OUT is left as it was
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
fidelity="$root/docs/fidelity.md"
for tool in jq perl fio chrt dumpe2fs python3; do
  command -v "$tool" >/dev/null || { echo "regenerate-budgets: needs $tool" >&2; exit 1; }
done
if [ -z "${LAYOUTLAB:-}" ]; then
  (cd "$root" && cargo build --release --locked -p layoutlab-cli)
  bin="${CARGO_TARGET_DIR:-$root/target}/release/layoutlab"
else
  bin="$LAYOUTLAB"
fi
if [ -n "${OUT:-}" ]; then
  out="$OUT"; mkdir -p "$out"; keep=1
else
  out=$(mktemp -d); keep=""
fi
# On success, error or a signal: unmount what this script mounted and remove its images (and the
# temp dir unless OUT was given). It mounts only under "$out".
cleanup() {
  for m in "$out"/mnt-*; do [ -d "$m" ] && { umount "$m" 2>/dev/null || true; rmdir "$m" 2>/dev/null || true; }; done
  rm -f "$out"/*.img
  # The phase block's kept images, outside "$out" (a tmpfs, as a plain run's).
  [ -z "${phase_work:-}" ] || rm -rf "$phase_work"
  [ -n "$keep" ] || rm -rf "$out"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
. "$root/docs/splice.sh"
build=$(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown)
provenance() { # what
  printf 'Generated by `docs/regenerate-budgets.sh` on %s from build `%s` (%s; load average at the end: %s).\n\n' \
    "$(date -u +%Y-%m-%d)" "$build" "$1" "$(cut -d' ' -f1-3 /proc/loadavg)"
}
snip="$out/snippet.md"
want() { [ -z "${ONLY:-}" ] || [[ " $ONLY " == *" $1 "* ]]; }
# `reproduce EXPERIMENT ARGS` with its report in OUT/RUN and its JSON in OUT/RUN.json, the load
# average before and after and its wall seconds in OUT/RUN.load; REUSE or REUSE_ONLY keeps a
# JSON already there, REUSE_ONLY runs nothing new.
reproduce_into() { # run experiment [args...]
  local run=$1 exp=$2; shift 2
  if [ -n "${REUSE:-}${REUSE_ONLY:-}" ] && [ -s "$out/$run.json" ]; then
    echo "regenerate-budgets: $exp $*: reusing $out/$run.json" >&2
    return
  fi
  if [ -n "${REUSE_ONLY:-}" ]; then
    echo "regenerate-budgets: $exp $*: not run (REUSE_ONLY)" >&2
    return
  fi
  echo "regenerate-budgets: $exp $*" >&2
  local load0 t0; load0=$(cut -d' ' -f1 /proc/loadavg); t0=$(date +%s)
  "$bin" reproduce "$exp" --out "$out/$run" --json "$out/$run.json" "$@" >/dev/null
  printf '%s %s %s\n' "$load0" "$(cut -d' ' -f1 /proc/loadavg)" "$(($(date +%s) - t0))" >"$out/$run.load"
}
# `reproduce EXPERIMENT --scale S ARGS` into OUT/EXPERIMENT-NAME (reproduce_into).
reproduce_run() { # experiment name scale [args...]
  local exp=$1 name=$2 scale=$3; shift 3
  reproduce_into "$exp-$name" "$exp" --scale "$scale" "$@"
}
# jq: a number with one decimal, always printed (72.0, not 72); f2 with two (0.40, not 0.4).
f1='def f1: . * 10 | round / 10 | tostring | if test("[.]") then . else . + ".0" end;'
f2='def f2: . * 100 | round / 100 | tostring | if test("[.]") then . + (if test("[.][0-9]$") then "0" else "" end) else . + ".00" end;'
# The borrowed and assumed values of a drive preset that an experiment file lists
# (`[[sensitivity]]`): one line per variant, its `--vary KEY=VALUE` arguments (one value, or a
# group that moves together), for `trace replay`.
preset_variants() { # experiment-file
  perl -ne 'if (/^set = \[(.*)\]\s*$/) { my $l = $1; while ($l =~ /\{([^}]*)\}/g) {
    my $v = $1; my @a; while ($v =~ /"([^"]+)"\s*=\s*([^,\s]+)/g) { push @a, "--vary", "$1=$2"; }
    print join(" ", @a), "\n"; } }' "$1"
}
# One trace replayed on every variant of a preset that an experiment file lists: the cell
# "lowest … highest" seconds ("not run" when the trace is missing).
values_cell() { # trace preset experiment-file
  local all=() line va
  [ -s "$1" ] || { echo "not run"; return; }
  while IFS= read -r line; do
    read -r -a va <<<"$line"
    all+=("$("$bin" trace replay "$1" --device "$2" "${va[@]}" --json - 2>/dev/null | jq .wall_seconds)")
  done < <(preset_variants "$3")
  printf '%s\n' "${all[@]}" | jq -rs "$f1"'"\(min | f1) … \(max | f1)"'
}

if want tree; then
# ---- metacluster-fsck's tree: bench5 *is* the post's file list (200×0.5, 100×1, 40×2.5 and
# 10×10 GB in that order on a fresh 400 GB file system); what each policy's plan keeps of it, in
# the drive makers' GB. Plans are deterministic (no I/O, no root).
echo "regenerate-budgets: bench5 plans" >&2
{
  printf 'Generated by `docs/regenerate-budgets.sh` on %s from build `%s` (`layoutlab plan --workload bench5 --policy POLICY --json`: deterministic).\n\n' "$(date -u +%Y-%m-%d)" "$build"
  echo '| plan (scale 1) | file system [GB] | files | file data [GB] | the 350th file (10 GB asked) keeps [GB] | space the list asks for but does not get [GB] |'
  echo '|---|---:|---:|---:|---:|---:|'
  for p in ext3-2007 ext3-metacluster; do
    "$bin" plan --workload bench5 --policy "$p" >"$out/plan-$p.txt"
    "$bin" plan --workload bench5 --policy "$p" --json "$out/plan-$p.json"
    fs_blocks=$(sed -n 's/^file-system blocks *\([0-9]*\)$/\1/p' "$out/plan-$p.txt")
    jq -r --arg p "$p" --argjson fsb "$fs_blocks" "$f1"'
      [.inodes[] | select(.kind == "File") | .size_bytes] as $s
      | "| \($p) | \($fsb * 4096 / 1e9 | f1) | \($s | length) | \($s | add / 1e9 | f1) | \($s[-1] / 1e9 | . * 100 | round / 100) | \(400 - ($s | add / 1e9) | f1) |"' "$out/plan-$p.json"
    rm -f "$out/plan-$p.json" "$out/plan-$p.txt"
  done
  echo '| *the post* | *400* | *350* | *400* | *10* | |'
} >"$snip"
splice "$fidelity" metacluster-fsck-bench5 "$snip"
fi

if want band; then
# ---- metacluster-fsck's tree band: the post's list whole. On the 400 GB drive the list does not
# fit, and each plan keeps only part of the 350th file (the bench5 block above). Room for all of
# it takes a larger file system (`--set fs_gb=420`), so both trees are checked on one drive a
# little larger than the preset: sata-400g-2007 with 150,000 cylinders instead of 142,000, the
# same zones and mechanics (423 GB), written here from the preset for this measurement only.
# The band is the difference between the two runs on that drive; each run is one capture.
# Why these sizes: the metacluster plan asks for 9.5 GB more than the 400.1 GB file system
# gives (the bench5 block), so the whole list needs about 410 GB; 420 is a round size above
# that (fsck/mod.rs's unit test holds that neither plan cuts a file there). A zone table spread
# over more cylinders holds proportionally more: 142,000 x 420 / 400.4 GB = 148,950 cylinders,
# rounded up to 150,000 (423 GB, so the file system fits one drive and is not priced on two).
long="$out/sata-400g-2007-long.toml"
sed -e 's/^name = "sata-400g-2007"$/name = "sata-400g-2007-long"/' \
    -e 's/^cylinders = { value = 142000, source = "[^"]*" }$/cylinders = { value = 150000, source = "the band of docs\/fidelity.md only: sata-400g-2007 with 8,000 more cylinders of the same zones, 423 GB" }/' \
    "$root/presets/sata-400g-2007.toml" >"$long"
grep -q '^cylinders = { value = 150000' "$long" || { echo "regenerate-budgets: could not write $long" >&2; exit 1; }
reproduce_run metacluster-fsck band-shipped 1 --device "$long"
reproduce_run metacluster-fsck band-whole 1 --device "$long" --set fs_gb=420
if [ -s "$out/metacluster-fsck-band-shipped.json" ] && [ -s "$out/metacluster-fsck-band-whole.json" ]; then
band_row() { # label fs-GB name
  jq -r --arg lab "$1" --arg fs "$2" "$f1"'
    (.runs[0]) as $a | (.runs[-1]) as $b
    | "| \($lab) | \($fs) | \($a.file_data_bytes / 1e9 | f1) / \($b.file_data_bytes / 1e9 | f1) | \([$a.passes[] | select(.pass == 1) | .mb_read][0] | round) / \([$b.passes[] | select(.pass == 1) | .mb_read][0] | round) | \($a.total_seconds | f1) | \($b.total_seconds | f1) | \(.reduction * 100 | f1)% |"' "$out/metacluster-fsck-$3.json"
}
{
  provenance "two runs at scale 1 on the preset with 150,000 cylinders (423 GB), each one capture; seconds are the model's"
  echo '| tree | file system [GB] | file data, ext3-2007 / ext3-metacluster [GB] | pass 1 read, ext3-2007 / ext3-metacluster [MB] | ext3-2007 [s] | ext3-metacluster [s] | reduction |'
  echo '|---|---:|---:|---:|---:|---:|---:|'
  band_row "as shipped: the post's 400 GB drive, the 350th file cut short" 400.1 band-shipped
  band_row "the list whole (\`--set fs_gb=420\`)" 420.0 band-whole
  jq -rs "$f1"'
    (.[0]) as $s | (.[1]) as $w
    | "| **band: whole − shipped** | | | | \($w.runs[0].total_seconds - $s.runs[0].total_seconds | f1) (\(($w.runs[0].total_seconds / $s.runs[0].total_seconds - 1) * 100 | f1)%) | \($w.runs[-1].total_seconds - $s.runs[-1].total_seconds | f1) (\(($w.runs[-1].total_seconds / $s.runs[-1].total_seconds - 1) * 100 | f1)%) | \(($w.reduction - $s.reduction) * 100 | f1) points |"' \
    "$out/metacluster-fsck-band-shipped.json" "$out/metacluster-fsck-band-whole.json"
} >"$snip"
splice "$fidelity" metacluster-fsck-band "$snip"
else
  echo "regenerate-budgets: the band's two runs are not both in $out: its block is left as it was" >&2
fi
fi

if want phase; then
# ---- metacluster-fsck's ext3-2007 check, read by read: one capture at scale 1 kept (`--keep`,
# on a private tmpfs as a plain run's images are, so the stream is a plain run's), and each
# pass-1 read of an indirect block's modelled service time (the run's classes.csv: start to
# completion) summed by tenth of the disk. ext3-2007's indirect blocks lie one every 1,025
# blocks, a fixed stride whose rotational wait the zone table sets (device test
# a_fixed_stride_waits_the_same_phase_read_after_read_and_another_in_each_zone); the block
# sets the model's waits beside what a phase drawn uniformly would cost: the shortest read
# (1st percentile: the hop's seek, the command and the transfer, no wait) plus half a
# revolution of sata-400g-2007 (7,200 rpm: 4.1667 ms).
phase_work=""
if [ -n "${REUSE:-}${REUSE_ONLY:-}" ] && [ -s "$out/phase-ext3-2007.classes.csv" ]; then
  echo "regenerate-budgets: metacluster-fsck --keep: reusing $out/phase-*" >&2
elif [ -z "${REUSE_ONLY:-}" ]; then
  phase_work=$(mktemp -d /dev/shm/layoutlab-phase.XXXXXX)
  rm -f "$out/metacluster-fsck-phase.json"
  reproduce_run metacluster-fsck phase 1 --workdir "$phase_work" --keep
  for p in ext3-2007 ext3-metacluster; do
    mv "$phase_work/metacluster-fsck-$p.trace.csv" "$out/phase-$p.trace.csv"
    mv "$phase_work/metacluster-fsck-$p.classes.csv" "$out/phase-$p.classes.csv"
  done
  stat -c %s "$phase_work/metacluster-fsck-ext3-2007.img" >"$out/phase-image-bytes"
  rm -rf "$phase_work"
fi
if [ -s "$out/phase-ext3-2007.classes.csv" ] && [ -s "$out/metacluster-fsck-phase.json" ]; then
# Other draws of the phase: both kept traces replayed on each variant of the preset's surface
# count that metacluster-fsck's experiment file lists (the same zones over 4 or 8 surfaces), a
# line "VARIANT|ext3-2007 s|ext3-metacluster s" after the shipped one, the replays' wall times.
phase_replay() { "$bin" trace replay "$out/phase-$1.trace.csv" --device sata-400g-2007 "${@:2}" --json - 2>/dev/null | jq .wall_seconds; }
{
  echo "as shipped|$(phase_replay ext3-2007)|$(phase_replay ext3-metacluster)"
  while IFS= read -r line; do
    read -r -a va <<<"$line"
    echo "${line//--vary /}|$(phase_replay ext3-2007 "${va[@]}")|$(phase_replay ext3-metacluster "${va[@]}")"
  done < <(preset_variants "$root/experiments/metacluster-fsck.toml" | grep 'geometry.surfaces')
} >"$out/phase-variants"
{
  provenance "one capture of metacluster-fsck at scale 1 on sata-400g-2007, kept; each cell the model's service times of ext3-2007's pass-1 reads of indirect blocks"
  python3 - "$out/phase-ext3-2007.trace.csv" "$out/phase-ext3-2007.classes.csv" \
    "$(cat "$out/phase-image-bytes")" "$out/metacluster-fsck-phase.json" "$out/phase-variants" <<'EOF'
import csv, json, sys
trace, classes, image_bytes, run = sys.argv[1], sys.argv[2], int(sys.argv[3]), json.load(open(sys.argv[4]))
variants = [l.rstrip("\n").split("|") for l in open(sys.argv[5])]
rows = [l for l in open(trace) if not l.startswith("#")]
req = list(csv.DictReader(rows))
cls = list(csv.DictReader(open(classes)))
assert len(req) == len(cls), (len(req), len(cls))
sectors = image_bytes // 512
tenths = [[] for _ in range(10)]
for r, c in zip(req, cls):
    if c["class"] == "indirect" and r["tag"] == "pass1":
        tenths[min(9, int(r["sector"]) * 10 // sectors)].append((float(c["complete_s"]) - float(c["start_s"])) * 1e3)
print("| tenth of the disk | indirect reads | mean per read [ms] | seconds |")
print("|---|---:|---:|---:|")
for i, t in enumerate(tenths):
    print(f"| {i + 1} | {len(t):,} | {sum(t) / len(t):.2f} | {sum(t) / 1e3:.1f} |" if t else f"| {i + 1} | 0 | — | 0.0 |")
every = sorted(s for t in tenths for s in t)
n, total = len(every), sum(every) / 1e3
print(f"| **all** | **{n:,}** | **{total * 1e3 / n:.2f}** | **{total:.1f}** |")
shortest = every[n // 100]
uniform = shortest + 60000 / 7200 / 2
a, b = (p["total_seconds"] for p in (run["runs"][0], run["runs"][-1]))
at = a - (total - uniform * n / 1e3)
print()
print("| the same capture | value |")
print("|---|---:|")
print(f"| the check as modelled: ext3-2007, ext3-metacluster, reduction | {a:.1f} s, {b:.1f} s, {(1 - b / a) * 100:.1f}% |")
print(f"| the shortest read (1st percentile): the hop's seek, the command, the transfer | {shortest:.2f} ms |")
print(f"| a phase drawn uniformly: the shortest plus half a revolution (4.17 ms) | {uniform:.2f} ms |")
print(f"| the reads at that mean, and less than modelled | {uniform * n / 1e3:.1f} s, {total - uniform * n / 1e3:.1f} s |")
print(f"| the check at that mean: ext3-2007, reduction | {at:.1f} s, {(1 - b / at) * 100:.1f}% |")
# A variant's totals: the run's, moved by what the variant's replay of each trace moves it.
(_, ra, rb), others = variants[0], variants[1:]
for name, va, vb in others:
    va, vb = a + float(va) - float(ra), b + float(vb) - float(rb)
    print(f"| another draw: {name.replace(' ', ', ')} (both traces replayed): ext3-2007, ext3-metacluster, reduction | "
          f"{va:.1f} s ({(va / a - 1) * 100:+.1f}%), {vb:.1f} s ({(vb / b - 1) * 100:+.1f}%), {(1 - vb / va) * 100:.1f}% |")
EOF
} >"$snip"
splice "$fidelity" metacluster-fsck-phase "$snip"
else
  echo "regenerate-budgets: the phase run is not in $out: its block is left as it was" >&2
fi
fi

if want treeband; then
# ---- ext4-fsck-allocator's tree written by today's kernel: who writes the tree (one writer
# placing file after file, as our plans do, or the kernel's delayed allocation and flusher) is
# a parameter the allocator's source leaves to chance. The same ubuntu-32g tree, on the same
# mke2fs (the ext4-2009 profile), laid out by our two period policies, by our engine of today's
# kernel (ext4-kernel), and by today's kernel (written
# back every 64 MiB, as the ext4-kernel policy models, and by the flusher alone); each image
# then checked by the real e2fsck -fnv (its own counts) and by `fsck-predict` with e2fsck 1.41.4
# on the netbook's drive, all four the same way. Each kernel row is one write.
echo "regenerate-budgets: ubuntu-32g laid out by the engine and by today's kernel" >&2
tb_check() { # name
  e2fsck -fnv "$out/tb-$1.img" >"$out/tb-$1.fsck" 2>&1 || { echo "regenerate-budgets: tb-$1 is not clean" >&2; cat "$out/tb-$1.fsck" >&2; exit 1; }
  "$bin" fsck-predict "$out/tb-$1.img" --like ext4-fsck-allocator --e2fsck 1.41.4 --json "$out/tb-$1-predict.json" >"$out/tb-$1-predict.log" 2>&1
  # Where the blocks lie against the 2009 scheme, which keeps each flex group's first group for
  # directories: blocks b with b mod (blocks per group × flex size) < blocks per group.
  local bpg flex
  bpg=$(dumpe2fs -h "$out/tb-$1.img" 2>/dev/null | sed -n 's/^Blocks per group: *//p')
  flex=$(dumpe2fs -h "$out/tb-$1.img" 2>/dev/null | sed -n 's/^Flex block group size: *//p')
  "$bin" image inspect "$out/tb-$1.img" --json "$out/tb-$1-inspect.json" >/dev/null 2>&1
  jq --argjson G "$bpg" --argjson P "$((bpg * flex))" 'def f($x): (($x / $P) | floor) * $G + ([($x % $P), $G] | min);
    [.plan.inodes[] | .kind as $k | .data[] | {k: $k, n: .len, first: (f(.physical + .len) - f(.physical))}]
    | {dir_blocks: (map(select(.k == "Dir") | .n) | add),
       dir_blocks_in_first: (map(select(.k == "Dir") | .first) | add),
       file_blocks_in_first: (map(select(.k == "File") | .first) | add)}' "$out/tb-$1-inspect.json" >"$out/tb-$1-groups.json"
  rm -f "$out/tb-$1.img" "$out/tb-$1-inspect.json"
}
tb_have() { [ -n "${REUSE:-}${REUSE_ONLY:-}" ] && [ -s "$out/tb-$1-predict.json" ] && [ -s "$out/tb-$1.fsck" ] && [ -s "$out/tb-$1-groups.json" ]; }
for p in ext4-2008 ext4-2009 ext4-kernel; do
  tb_have "$p" && continue
  "$bin" image make --workload ubuntu-32g --policy "$p" --mkfs-profile ext4-2009 --seed 2009 "$out/tb-$p.img" >/dev/null 2>"$out/tb-$p-make.log"
  tb_check "$p"
done
# NAME writeback-MiB mount-options: the last switches delayed allocation off (blocks allocated
# as each write comes, not at writeback), to see what delalloc alone does to where data go.
for k in "64 64 -" "0 0 -" "64-nodelalloc 64 nodelalloc"; do
  set -- $k
  tb_have "kernel-$1" && continue
  mo=(); [ "$3" = - ] || mo=(--mount-options "$3")
  "$bin" workload age-kernel ubuntu-32g --mkfs-profile ext4-2009 --writeback-mib "$2" "${mo[@]}" \
    --metadata-image "$out/tb-kernel-$1.img" --json "$out/tb-kernel-$1-age.json" 2>"$out/tb-kernel-$1-age.log"
  tb_check "kernel-$1"
done
tb_row() { # name label
  local fsck="$out/tb-$1.fsck" pj="$out/tb-$1-predict.json"
  local gj="$out/tb-$1-groups.json"
  printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$2" \
    "$(sed -n 's/^ *\([0-9]*\) non-contiguous files.*/\1/p' "$fsck")" \
    "$(sed -n 's/^ *\([0-9]*\) non-contiguous directories.*/\1/p' "$fsck")" \
    "$(sed -n 's/.*Extent depth histogram: *\([0-9/]*\).*/\1/p' "$fsck")" \
    "$(jq -r '"\(.dir_blocks - .dir_blocks_in_first) of \(.dir_blocks)"' "$gj")" \
    "$(jq -r '.file_blocks_in_first' "$gj")" \
    "$(jq -r '.requests' "$pj")" "$(jq -r "$f1"'.mb_read | f1' "$pj")" \
    "$(jq -r '.predictions[] | select(.device == "sata-160g-2009") | .phases[] | select(.phase == "2") | .requests' "$pj")" \
    "$(jq -r "$f1"'.predictions[] | select(.device == "sata-160g-2009") | .phases[] | select(.phase == "2") | .seconds | f1' "$pj")" \
    "$(jq -r "$f1"'.predictions[] | select(.device == "sata-160g-2009") | .total_seconds | f1' "$pj")"
}
{
  provenance "ubuntu-32g at scale 1 on the ext4-2009 profile's mke2fs; e2fsck -fnv's counts; \`fsck-predict --like ext4-fsck-allocator --e2fsck 1.41.4\` for the rest, the same for all four: the experiment's capture (read-ahead 128 KiB, requests up to 512 KiB, e2fsck on one CPU) priced on its sata-160g-2009, each one capture; each kernel row one write on zram"
  echo '| laid out by | non-contiguous files | non-contiguous directories | extent depth histogram | directory blocks outside their flex group'"'"'s first group | file data blocks in flex groups'"'"' first groups | requests | MB read | pass 2 requests | pass 2 [s] | e2fsck 1.41.4 on sata-160g-2009 [s] |'
  echo '|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|'
  tb_row ext4-2008 'ext4-2008 (our plan: one writer, file after file)'
  tb_row ext4-2009 'ext4-2009 (our plan: one writer, file after file)'
  tb_row ext4-kernel "ext4-kernel (our plan of today's kernel: one writer, written back every 64 MiB)"
  tb_row kernel-64 "today's kernel, written back every 64 MiB"
  tb_row kernel-0 "today's kernel, written back by its flusher alone"
  tb_row kernel-64-nodelalloc "today's kernel, nodelalloc (no delayed allocation), written back every 64 MiB"
  echo '| *the post (2.6.28/29, `rsync -axH`)* | *263* | *198* | *292698/40* | | | | | | *13.34 (ext4-2008), 4.24 (ext4-2009)* | *23.06 (ext4-2008), 13.78 (ext4-2009)* |'
} >"$snip"
splice "$fidelity" ext4-fsck-allocator-treeband "$snip"
fi

if want fio; then
# ---- fio-randread: the model's fio-like job, other drives, and real fio on the emulated disk.
echo "regenerate-budgets: fio-randread" >&2
fio_run() { # name [args...]
  local name=$1; shift
  "$bin" reproduce fio-randread --out "$out/fio-$name" --json "$out/fio-$name.json" "$@" >/dev/null
}
fio_run shipped
for d in sata-400g-2007 sata-400g-2007-alt-samsung; do fio_run "$d" --device "$d"; done
# Real fio 20 s per size at K = 1, real-time as a 2008 machine ran it alone (docs/emulate.md:
# under the ordinary scheduler it waits for a CPU between requests on this shared machine).
truncate -s 16G "$out/span.img"
for bs in 4k 64k 256k; do
  "$bin" device emulate sata-500g-2008 "$out/span.img" --log "$out/served-$bs.json" -- \
    chrt -f 1 fio --name=budget --filename={dev} --direct=1 --rw=randread --bs="$bs" --iodepth=1 \
    --time_based --runtime=20 --output-format=json --output="$out/real-fio-$bs.json" >/dev/null
done
rm -f "$out/span.img"
iops() { jq -r --arg bs "$2" "$f1"'.runs[] | select(.bs == $bs) | .iops | f1' "$out/fio-$1.json"; }
first() { jq -r --arg bs "$1" "$f1"'.runs[] | select(.bs == $bs) | .as_registered_iops | f1' "$out/fio-shipped.json"; }
pub() { jq -r --arg bs "$1" '.published.iops[$bs]' "$out/fio-shipped.json"; }
real_iops() { jq -r "$f1"'.jobs[0].read.iops | f1' "$out/real-fio-$1.json"; }
# The model's mean service of real fio's own requests, as IOPS.
served_iops() { jq -r "$f1"'[.requests[] | .complete_ns - .arrival_ns] | 1e9 / (add / length) | f1' "$out/served-$1.json"; }
row() { printf '| %s | %s | %s | %s | %s |\n' "$1" "$2" "$3" "$4" "$5"; }
{
  provenance "the model rows are deterministic; the real-fio rows are one 20 s sample each"
  echo '| factor | switched to | 4k IOPS | 64k IOPS | 256k IOPS |'
  echo '|---|---|---:|---:|---:|'
  row "as shipped" "sata-500g-2008, the model's fio-like job" "$(iops shipped 4k)" "$(iops shipped 64k)" "$(iops shipped 256k)"
  row "request stream: closed loop" "real fio $(fio --version | sed 's/^fio-//') on the emulated disk (K = 1, \`chrt -f 1\`): fio's IOPS" "$(real_iops 4k)" "$(real_iops 64k)" "$(real_iops 256k)"
  row "request stream: closed loop" "the same runs: the model's mean service of fio's requests, as IOPS" "$(served_iops 4k)" "$(served_iops 64k)" "$(served_iops 256k)"
  row "device: another drive" "sata-400g-2007 (Hitachi Deskstar T7K500, 7200 rpm, 2007)" "$(iops sata-400g-2007 4k)" "$(iops sata-400g-2007 64k)" "$(iops sata-400g-2007 256k)"
  row "device: another drive" "sata-400g-2007-alt-samsung (Samsung SpinPoint T133, 7200 rpm, 2006)" "$(iops sata-400g-2007-alt-samsung 4k)" "$(iops sata-400g-2007-alt-samsung 64k)" "$(iops sata-400g-2007-alt-samsung 256k)"
  row "device: preset values" "sata-500g-2008 as first registered (0b6ce26)" "$(first 4k)" "$(first 64k)" "$(first 256k)"
  row "*published*" "" "*$(pub 4k)*" "*$(pub 64k)*" "*$(pub 256k)*"
} >"$snip"
splice "$fidelity" budget-fio-randread "$snip"
fi

if want mkfs; then
period_mke2fs="$HOME/.cache/layoutlab/e2fsprogs/1.41.14/sbin/mke2fs"
[ -x "$period_mke2fs" ] || { echo "regenerate-budgets: needs $period_mke2fs (make period-e2fsprogs)" >&2; exit 1; }
# ---- mkfs-overhead: the model against the real mke2fs (period and today's), and today's
# userland and kernel against the period's.
echo "regenerate-budgets: mkfs-overhead" >&2
"$bin" reproduce mkfs-overhead --out "$out/mkfs" --json "$out/mkfs-141.json" >/dev/null
"$bin" reproduce mkfs-overhead --set mke2fs_conf=e2fsprogs-1.47.0 --out "$out/mkfs" --json "$out/mkfs-147.json" >/dev/null
# Real mke2fs on a sparse file of the post's size, then today's kernel's df of it (read-only).
real_mkfs() { # name mke2fs [env...]
  local name=$1 mke2fs=$2 img="$out/$1.img" mnt="$out/mnt-$1"
  truncate -s 78654240K "$img"
  env "${@:3}" "$mke2fs" -q -F -t ext3 "$img"
  mkdir -p "$mnt"
  mount -o loop,ro -t ext3 "$img" "$mnt"
  local df; df=$(df -k --output=size,used,avail "$mnt" | tail -1)
  umount "$mnt"; rmdir "$mnt"
  local journal; journal=$(dumpe2fs -h "$img" 2>/dev/null | sed -n 's/^Total journal size: *\([0-9]*\)M$/\1/p')
  rm -f "$img"
  echo "$journal $df"
}
read -r j141 s141 u141 a141 < <(real_mkfs real-141 "$period_mke2fs" MKE2FS_CONFIG="$HOME/.cache/layoutlab/e2fsprogs/1.41.14/etc/mke2fs.conf")
read -r j147 s147 u147 a147 < <(real_mkfs real-147 mke2fs)
m() { jq -r "$2" "$out/mkfs-$1.json"; }
journal='.default.overhead.journal_blocks * 4096 / 1048576'
given='((.suggested.df_ext3_2_6_kb[2] - .default.df_ext3_2_6_kb[2]) / 1048576 * 10 | round / 10)'
mrow() { printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$@"; }
{
  provenance "the model rows are deterministic; the real rows are real mke2fs runs and today's kernel's df of a read-only mount"
  echo '| factor | switched to | journal [MiB] | df size [1K] | df used [1K] | df available [1K] | the post'"'"'s options give back [GiB] |'
  echo '|---|---|---:|---:|---:|---:|---:|'
  mrow "as shipped" "the model of mke2fs 1.41.14 (its mke2fs.conf); df as the ext3 driver of 2.6 computed it" \
    "$(m 141 "$journal")" "$(m 141 '.default.df_ext3_2_6_kb[0]')" "$(m 141 '.default.df_ext3_2_6_kb[1]')" "$(m 141 '.default.df_ext3_2_6_kb[2]')" "$(m 141 "$given")"
  mrow "kernel: today's df" "the same file system; df as today's kernel computes it (model)" \
    "$(m 141 "$journal")" "$(m 141 '.default.overhead.df_size_kb')" "$(m 141 '.default.overhead.df_used_kb')" "$(m 141 '.default.overhead.df_avail_kb')" ""
  mrow "layout: the real tool" "real mke2fs 1.41.14 (\`make period-e2fsprogs\`), today's kernel's df" "$j141" "$s141" "$u141" "$a141" ""
  mrow "userland: today's" "the model of mke2fs 1.47.0 (its mke2fs.conf); df of the 2.6 driver" \
    "$(m 147 "$journal")" "$(m 147 '.default.df_ext3_2_6_kb[0]')" "$(m 147 '.default.df_ext3_2_6_kb[1]')" "$(m 147 '.default.df_ext3_2_6_kb[2]')" "$(m 147 "$given")"
  mrow "userland: today's, real" "real mke2fs $(mke2fs -V 2>&1 | head -1 | awk '{print $2}'), today's kernel's df" "$j147" "$s147" "$u147" "$a147" ""
  mrow "*published*" "" "*$(m 141 '.published.journal_mb')*" "*$(m 141 '.published.df_size_kb')*" "*$(m 141 '.published.df_used_kb')*" "*$(m 141 '.published.df_avail_kb')*" "*$(m 141 '.published.given_back_gb')+*"
} >"$snip"
splice "$fidelity" budget-mkfs-overhead "$snip"
fi

if want mio; then
# ---- metacluster-io at scale 1. The shipped run keeps every trace it priced (traces/*.csv);
# the device and CPU rows replay those same traces (`trace replay`, exact against the shipped
# run), while the queue row needs a new capture (the kernel's requests change).
mio_run() { # name [args...]
  local name=$1; shift
  if [ -n "${REUSE:-}" ] && [ -s "$out/mio-$name.json" ]; then
    echo "regenerate-budgets: metacluster-io --scale 1 $*: reusing $out/mio-$name.json" >&2
    return
  fi
  echo "regenerate-budgets: metacluster-io --scale 1 $*" >&2
  "$bin" reproduce metacluster-io --scale 1 --out "$out/mio-$name" --json "$out/mio-$name.json" "$@" >/dev/null
}
mio_run shipped
mio_run maxsec --set os_max_sectors_kb=1280
mio_run rot --set os_rotational=false
mio_run closed --closed-loop
# The patch's read-ahead size: the post says "several" indirect blocks; the shipped 32 is ours.
mio_run ra8 --set ind_readahead_blocks=8
mio_run ra4 --set ind_readahead_blocks=4
# Benchmark 4's reads as 2.6.24 issued them for a program that gave no advice: its read-ahead
# windows two by two and one past each read's end, with the indirect blocks that window needs
# (ra_windows.rs; a new capture of benchmark 4 alone).
mio_run noadvice --set benchmarks=4 --set large_read_advice=none
traces="$out/mio-shipped/metacluster-io/traces"
# A replay of the shipped run's traces as a run's JSON: {runs: [{benchmark, policy, ind_readahead, seconds}]}.
# MIO_TRACES: another directory of the shipped run's traces; MIO_B4_ARGS: more replay
# arguments for benchmark 4's traces only (word-split).
mio_replay() { # name replay-args...
  local name=$1; shift
  for f in "${MIO_TRACES:-$traces}"/b*.csv; do
    local base b4=(); base=$(basename "$f" .csv)
    case $base in b4-*) read -r -a b4 <<<"${MIO_B4_ARGS:-}";; esac
    "$bin" trace replay "$f" "$@" "${b4[@]}" --json - 2>/dev/null |
      jq -c --arg base "$base" '{benchmark: ($base[1:2] | tonumber),
        policy: ($base[3:] | sub("-readahead$"; "")), ind_readahead: ($base | endswith("-readahead")),
        seconds: .wall_seconds}'
  done | jq -s '{runs: .}' >"$out/mio-$name.json"
}
mio_replay alt --device sata-400g-2007-alt-samsung
mio_replay cpu0 --device sata-400g-2007 --cpu-scale 0
mio_replay stack --device sata-400g-2007 --vary cache.write_segments=16
# The captured order: the shipped run's reads before the 2007 kernel's order across indirect
# blocks was restored (traces/capture-order/, the same requests).
MIO_TRACES="$traces/capture-order" mio_replay order --device sata-400g-2007
# Benchmark 4's reads page by page, as 2.6.24 served a reader that advised POSIX_FADV_RANDOM
# (ours does): the shipped traces with benchmark 4's file reads cut into 4 KiB requests.
# And in 128 KiB pieces (2.6.24's read-ahead windows for a reader that gave no advice, without
# the window it read ahead past each read's end: the noadvice run prices the whole stream).
MIO_B4_ARGS="--split-reads 8" mio_replay pages --device sata-400g-2007
MIO_B4_ARGS="--split-reads 256" mio_replay windows --device sata-400g-2007
# The closed-loop run's own stream, as the kernel issued it to the emulated disk (its capture
# order, without the read-ahead option), replayed open loop: what closed loop alone changes.
MIO_TRACES="$out/mio-closed/metacluster-io/traces/capture-order" mio_replay closedorder --device sata-400g-2007
# The preset's own sensitivity: the borrowed and assumed values of sata-400g-2007 that
# metacluster-fsck's experiment file lists (`[[sensitivity]]`, the same drive), each variant
# replaying the shipped traces (`trace replay --vary`, one value or one group at a time).
rm -f "$out"/mio-var*.json
mio_nvar=0
while IFS= read -r v; do
  mio_nvar=$((mio_nvar + 1)); read -r -a va <<<"$v"
  mio_replay "var$mio_nvar" --device sata-400g-2007 "${va[@]}"
done < <(preset_variants "$root/experiments/metacluster-fsck.toml")
[ "$mio_nvar" -gt 0 ] || { echo "regenerate-budgets: no [[sensitivity]] values in metacluster-fsck.toml" >&2; exit 1; }
# One benchmark's range over the variants: lowest … highest of each time and of the change.
mio_range_cell() { # benchmark
  jq -rs --argjson b "$1" "$f1"'
    def s(p): [.runs[] | select(.benchmark == $b and .policy == p and .ind_readahead == ($b > 1))][0].seconds;
    [.[] | {a: s("ext3-2007"), m: s("ext3-metacluster")} | . + {c: ((.m / .a - 1) * 100)}] as $v
    | "\([$v[].a] | min | f1) … \([$v[].a] | max | f1) → \([$v[].m] | min | f1) … \([$v[].m] | max | f1) s (\([$v[].c] | min | f1) … \([$v[].c] | max | f1)%)"
  ' "$out"/mio-var*.json
}
# One benchmark's cell: ext3-2007 -> ext3-metacluster seconds (the change), with or without the
# patch's indirect read-ahead (benchmark 1, a write, has none).
mio_cell() { # name benchmark readahead [text where the run has no such benchmark]
  jq -r --argjson b "$2" --argjson ra "$3" --arg none "${4:-— (a write stream, in order)}" "$f1"'
    def s(p): [.runs[] | select(.benchmark == $b and .policy == p and .ind_readahead == ($ra and $b > 1))][0].seconds;
    if s("ext3-2007") == null then $none else
    "\(s("ext3-2007") | f1) → \(s("ext3-metacluster") | f1) s (\((s("ext3-metacluster") / s("ext3-2007") - 1) * 100 | f1)%)" end
  ' "$out/mio-$1.json"
}
# The same cell from the closed-loop times on the emulated disk (benchmarks 2-4 without the
# read-ahead option: the captured ones; benchmark 1 is a write stream built from the layout).
mio_closed_cell() { # name benchmark
  if [ "$2" = 1 ]; then echo "— (not captured)"; return; fi
  jq -r --argjson b "$2" "$f1"'
    def s(p): [.runs[] | select(.benchmark == $b and .policy == p and .ind_readahead == false)][0].closed_loop.measured_seconds;
    "\(s("ext3-2007") | f1) → \(s("ext3-metacluster") | f1) s (\((s("ext3-metacluster") / s("ext3-2007") - 1) * 100 | f1)%)"
  ' "$out/mio-$1.json"
}
mio_row() { # factor switched-to name readahead [text where the run has no such benchmark]
  printf '| %s | %s | %s | %s | %s | %s |\n' "$1" "$2" "$(mio_cell "$3" 1 "$4" "${5:-}")" "$(mio_cell "$3" 2 "$4" "${5:-}")" "$(mio_cell "$3" 3 "$4" "${5:-}")" "$(mio_cell "$3" 4 "$4" "${5:-}")"
}
{
  provenance "seven runs at scale 1 (one of benchmark 4 alone); the device and CPU rows replay the shipped run's traces; seconds are the model's, the closed-loop row's those the emulated disk charged"
  echo '| factor | switched to | 1. sequential write + sync | 2. sequential read | 3. random 512-byte reads | 4. random 512 KiB reads |'
  echo '|---|---|---|---|---|---|'
  mio_row "as shipped" "sata-400g-2007, with the patch's indirect read-ahead" shipped true
  mio_row "layout: the patch's read-ahead" "without it (the same run)" shipped false
  mio_row "layout: the patch's read-ahead size" "8 indirect blocks (\`--set ind_readahead_blocks=8\`; a new capture): the post says \"several\", the shipped 32 is ours, one 2.6.23 read-ahead window" ra8 true
  mio_row "layout: the patch's read-ahead size" "4 indirect blocks (\`--set ind_readahead_blocks=4\`; a new capture)" ra4 true
  mio_row "request stream: benchmark 4's reads page by page" "each 512 KiB read as 128 requests of 4 KiB, one behind the other: what 2.6.24 did for a reader that advised \`POSIX_FADV_RANDOM\`, as ours does (today's kernel issues one request; the shipped traces, \`--split-reads 8\` on benchmark 4's)" pages true
  mio_row "request stream: benchmark 4's reads in 128 KiB pieces" "each 512 KiB read as 4 requests of 128 KiB, one behind the other: 2.6.24's read-ahead windows for a reader that gave no advice, less the window it read ahead past each read's end, and not merged two by two (the whole stream is the row below; the shipped traces, \`--split-reads 256\` on benchmark 4's)" windows true
  mio_row "request stream: benchmark 4's reads as 2.6.24 issued them without advice" "128 KiB read-ahead windows, two by two as the plugged queue merged them, and one window past each read's end with the indirect blocks it needs: what 2.6.24 did for a reader that gave no advice (\`--set large_read_advice=none\`; a new capture of benchmark 4)" noadvice true "— (benchmark 4 alone)"
  mio_row "request stream: benchmark 4's reads as 2.6.24 issued them without advice" "the same, without the patch's read-ahead (the same run)" noadvice false "— (benchmark 4 alone)"
  mio_row "request stream: order across an indirect block" "today's kernel's, as captured: the indirect block read before the data in front of it, where 2.6.18-2.6.24's ext3 submitted that data first (\`BH_Boundary\`, \`fs/mpage.c\`); the same requests, not reordered" order true
  printf '| %s | %s | %s | %s | %s | %s |\n' "request stream: closed loop" "the reads on the emulated disk (\`--closed-loop\`, K = 1; a new capture), without the read-ahead, in the order the kernel issued them (the disk serves them so): against the row below" "$(mio_closed_cell closed 1)" "$(mio_closed_cell closed 2)" "$(mio_closed_cell closed 3)" "$(mio_closed_cell closed 4)"
  mio_row "request stream: closed loop" "the same capture's stream replayed open loop (its captured order, without the read-ahead)" closedorder false
  mio_row "request stream: queue" "requests of up to 1280 KiB (today's max_sectors_kb) instead of 2.6.23's 512 (a new capture)" maxsec true
  mio_row "request stream: rotational flag" "the capture device non-rotational (\`--set os_rotational=false\`; a new capture)" rot true
  mio_row "device: another drive" "sata-400g-2007-alt-samsung (the same traces)" alt true
  printf '| %s | %s | %s | %s | %s | %s |\n' "device: preset values" "the $mio_nvar variants of sata-400g-2007 that metacluster-fsck's experiment file lists (\`[[sensitivity]]\`), one borrowed or assumed value at a time (the same traces, with the patch's read-ahead); lowest … highest of each time and of the change" "$(mio_range_cell 1)" "$(mio_range_cell 2)" "$(mio_range_cell 3)" "$(mio_range_cell 4)"
  mio_row "device: write cache stacking" "every buffer segment may hold write data (\`--vary cache.write_segments=16\`; the preset's 1 is DiskSim's rule; the same traces)" stack true
  mio_row "CPU" "no think time (\`--cpu-scale 0\`, the same traces): what this machine's CPU adds" cpu0 true
} >"$snip"
splice "$fidelity" budget-metacluster-io "$snip"
fi

if want kernel || want ld || want ldcl || want rr; then
# ---- random-read and large-delete: kernel experiments whose traces are not kept between runs, so
# every row that changes the capture is its own capture; the device row is the shipped run's own
# traces, priced on the alternative by the same run (`--device PRESET,ALTERNATIVE`: the JSON's
# `seconds_on`). Cells are the model's seconds; "—" where the run has no such target.
# The model's seconds of the run whose KEY1 is V1 and KEY2 is V2; with `here`, the seconds the
# reads or the delete took on this machine instead, as a bound on its think time; with
# `on=PRESET`, the same trace's seconds on PRESET (`seconds_on`; "not run" when the run was not
# priced on it, e.g. a REUSEd JSON of an older build); with `closed`, the time a closed-loop
# run measured on the emulated disk (`closed_loop.measured_seconds`).
kcell() { # file key1 v1 key2 v2 [here|on=PRESET|closed]
  local how=${6:-} prefix="" on=""
  case $how in here) prefix="≤ ";; on=*) on=${how#on=};; closed) ;; esac
  [ -s "$1" ] || { echo "not run"; return; }
  jq -r --arg k1 "$2" --arg v1 "$3" --arg k2 "$4" --arg v2 "$5" --arg how "$how" --arg on "$on" --arg prefix "$prefix" "$f1"'
    [.runs[] | select(.[$k1] == $v1 and .[$k2] == $v2)][0]
    | if . == null then "—"
      elif $on != "" then (.seconds_on[$on] // null | if . == null then "not run" else f1 end)
      elif $how == "closed" then (.closed_loop.measured_seconds // null | if . == null then "—" else f1 end)
      else (if $how == "here" then .seconds_here else .seconds end) | "\($prefix)\(f1)" end' "$1"
}
fi

if want kernel || want ld; then
ld_row() { # factor switched-to name fs-list [here]
  local f="$out/large-delete-$3.json" cells=""
  for fs in $4; do for v in contiguous fragmented; do
    cells+=" $(kcell "$f" fs "$fs" variant "$v" "${5:-}") |"
  done; done
  printf '| %s | %s |%s\n' "$1" "$2" "$cells"
}
ext="ext3 ext4-2007 ext4"
# The preset's own sensitivity: each delete's trace (the run's report keeps them, traces/)
# replayed on every variant of sata-400g-2007 that metacluster-fsck's experiment file lists
# (the same drive); a cell is the lowest … highest seconds.
ld_values_row() { # name fs-list
  local dir="$out/large-delete-$1/large-delete/traces" cells="" list="$root/experiments/metacluster-fsck.toml" n
  n=$(preset_variants "$list" | wc -l)
  for fs in $2; do for v in contiguous fragmented; do
    cells+=" $(values_cell "$dir/delete-$fs-$v.csv" sata-400g-2007 "$list") |"
  done; done
  printf '| %s | %s |%s\n' "device: preset values" "the $n variants of sata-400g-2007 that metacluster-fsck's experiment file lists (\`[[sensitivity]]\`), one borrowed or assumed value at a time (the shipped run's traces); lowest … highest" "$cells"
}
# The shipped run also prices every delete's trace on the alternative drive (the device row).
ld_alt=sata-400g-2007-alt-samsung
reproduce_run large-delete shipped 1 --fs ext3,ext4-2007,ext4 --device "sata-400g-2007,$ld_alt"
reproduce_run large-delete kernel 1 --fs ext4 --set layout=kernel
# The devices non-rotational, the flag alone: the kernel-written files are written anew on them.
reproduce_run large-delete rot0 1 --fs ext3,ext4-2007,ext4 --set os_rotational=false
{
  provenance "each row but the device's one run at scale 1 (a 100 GB file); the device row prices the shipped run's traces; seconds are the model's"
  echo '| factor | switched to | ext3 contiguous | ext3 fragmented | ext4-2007 contiguous | ext4-2007 fragmented | ext4 contiguous | ext4 fragmented |'
  echo '|---|---|---:|---:|---:|---:|---:|---:|'
  ld_row "as shipped" "sata-400g-2007" shipped "$ext"
  ld_row "layout: who writes ext4" "today's kernel writes the ext4 files (\`--set layout=kernel\`) instead of the engine" kernel "$ext"
  ld_row "request stream: rotational flag" "the devices non-rotational (\`--set os_rotational=false\`; a new capture)" rot0 "$ext"
  ld_row "device: another drive" "$ld_alt (the shipped run's traces)" shipped "$ext" "on=$ld_alt"
  ld_values_row shipped "$ext"
  ld_row "CPU (bound)" "the delete's wall time here: the most this machine's think time can add" shipped "$ext" here
} >"$snip"
splice "$fidelity" budget-large-delete "$snip"
# XFS and btrfs at scale 1 too (a 100 GB file): their four writes take about 10 min a run here
# (large-delete.md, "Scale 1 cost"); until 2026-11-28 they ran at 0.1.
xfsbtrfs="xfs btrfs"
reproduce_run large-delete xfsbtrfs 1 --fs xfs,btrfs --device "sata-400g-2007,$ld_alt"
reproduce_run large-delete xfsbtrfs-rot0 1 --fs xfs,btrfs --set os_rotational=false
{
  provenance "one run at scale 1 (a 100 GB file); the device row prices its traces on the alternative; seconds are the model's"
  echo '| factor | switched to | xfs contiguous | xfs fragmented | btrfs contiguous | btrfs fragmented |'
  echo '|---|---|---:|---:|---:|---:|'
  ld_row "as shipped" "sata-400g-2007" xfsbtrfs "$xfsbtrfs"
  ld_row "request stream: rotational flag" "the devices non-rotational (\`--set os_rotational=false\`; a new capture)" xfsbtrfs-rot0 "$xfsbtrfs"
  ld_row "device: another drive" "$ld_alt (the shipped run's traces)" xfsbtrfs "$xfsbtrfs" "on=$ld_alt"
  ld_values_row xfsbtrfs "$xfsbtrfs"
  ld_row "CPU (bound)" "the delete's wall time here" xfsbtrfs "$xfsbtrfs" here
} >"$snip"
splice "$fidelity" budget-large-delete-xfs-btrfs "$snip"
fi

if want kernel || want ldcl; then
# ---- large-delete in closed loop: each delete on the emulated disk (K = 1), the ext file
# systems and XFS and btrfs at scale 1, as the blocks above; each run's own stream
# replayed open loop beside it, so the row pair is one capture and needs no other run.
ldcl_cells() { # name fs-list how: " A | B |" for each file system's two variants
  local f="$out/large-delete-$1.json" cells=""
  for fs in $2; do for v in contiguous fragmented; do
    cells+=" $(kcell "$f" fs "$fs" variant "$v" "$3") |"
  done; done
  printf '%s' "$cells"
}
reproduce_run large-delete closed 1 --fs ext3,ext4-2007,ext4 --closed-loop 1
reproduce_run large-delete xfsbtrfs-closed 1 --fs xfs,btrfs --closed-loop 1
{
  provenance "two runs at scale 1, each delete on the emulated disk at K = 1; each column's two rows are one capture"
  echo '| factor | switched to | ext3 contiguous | ext3 fragmented | ext4-2007 contiguous | ext4-2007 fragmented | ext4 contiguous | ext4 fragmented | xfs contiguous | xfs fragmented | btrfs contiguous | btrfs fragmented |'
  echo '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|'
  printf '| %s | %s |%s%s\n' "request stream: closed loop" "each delete on the emulated disk (\`--closed-loop 1\`; a new capture): the time measured there" \
    "$(ldcl_cells closed "ext3 ext4-2007 ext4" closed)" "$(ldcl_cells xfsbtrfs-closed "xfs btrfs" closed)"
  printf '| %s | %s |%s%s\n' "request stream: closed loop" "the same capture's stream replayed open loop" \
    "$(ldcl_cells closed "ext3 ext4-2007 ext4" "")" "$(ldcl_cells xfsbtrfs-closed "xfs btrfs" "")"
} >"$snip"
splice "$fidelity" budget-large-delete-closed "$snip"
fi

if want kernel || want rr; then
rr_row() { # factor switched-to name [here]
  local f="$out/random-read-$3.json" cells=""
  for t in ext3 ext4 raw; do for m in buffered direct; do
    cells+=" $(kcell "$f" target "$t" mode "$m" "${4:-}") |"
  done; done
  printf '| %s | %s |%s\n' "$1" "$2" "$cells"
}
# The alternative to sata-2t-5400-2010 (docs/hdd-model.md, "Alternative presets"), pre-registered
# in 31399af before anything ran on it: the shipped run prices its traces on it too (the device row).
rr_alt=sata-2t-5400-2010-alt-wd
# The preset's own sensitivity: every target's and mode's trace of the shipped run (its report
# keeps them, traces/) replayed on each variant random-read's experiment file lists
# (`[[sensitivity]]`, registered before any was priced); a cell is the lowest … highest seconds.
rr_values_row() {
  local dir="$out/random-read-shipped/random-read/traces" cells="" list="$root/experiments/random-read.toml" n
  n=$(preset_variants "$list" | wc -l)
  for t in ext3 ext4 raw; do for m in buffered direct; do
    cells+=" $(values_cell "$dir/reads-$t-$m.csv" sata-2t-5400-2010 "$list") |"
  done; done
  printf '| %s | %s |%s\n' "device: preset values" "the $n variants of sata-2t-5400-2010 that random-read's experiment file lists (\`[[sensitivity]]\`), one borrowed or assumed value at a time (the shipped run's traces); lowest … highest" "$cells"
}
reproduce_run random-read shipped 1 ${rr_alt:+--device "sata-2t-5400-2010,$rr_alt"}
# Today's default, prefetching every block bitmap after the mount: the option list replaces the
# experiment's `no_prefetch_block_bitmaps` (--set takes no empty value, so it names data=ordered,
# which both ext3 and ext4 mount with anyway).
reproduce_run random-read prefetch 1 --set extra_mount_options=data=ordered
# The capture device non-rotational, the flag alone (as the fsck tables' row).
reproduce_run random-read rot0 1 --set os_rotational=false
# Who writes ext4: today's kernel writes the 1.9 TB file with dd on zram (zero pages cost it no
# memory; its table is 7.7 GB) instead of the engine's plan of that write: about 16 minutes of
# writing here. ext3's file is 2007's policy in both runs, the raw device has no layout.
reproduce_run random-read kernel 1 --fs ext4 --set layout=kernel
# Closed loop: each target's reads on the emulated disk, the model's clock following the reader's
# CPU. At K = 1 the six targets' 600,000 reads would take their modelled time, about 3 hours;
# K = 16 keeps the stream (docs/emulate.md, "What closed loop changes on random-read": at the
# default scale the same requests within 0.2%) and takes about 12 minutes.
reproduce_run random-read closed16 1 --closed-loop 16
{
  provenance "each row one run at scale 1 (a 1.9 TB file) but the closed loop's two (one capture); seconds are the model's, the closed loop's first row those the emulated disk charged"
  echo '| factor | switched to | ext3 buffered | ext3 direct | ext4 buffered | ext4 direct | raw buffered | raw direct |'
  echo '|---|---|---:|---:|---:|---:|---:|---:|'
  rr_row "as shipped" "sata-2t-5400-2010; ext4 mounted \`no_prefetch_block_bitmaps\` as 2010's kernel behaved" shipped
  rr_row "layout: who writes ext4" "today's kernel writes ext4's file (\`--set layout=kernel\`: dd on zram) instead of the engine's plan of that write" kernel
  if [ -n "$rr_alt" ]; then
    rr_row "device: another drive" "$rr_alt (the shipped run's traces)" shipped "on=$rr_alt"
  else
    echo '| device: another drive | no alternative registered for a 2 TB 5400-rpm drive of 2010 | — | — | — | — | — | — |'
  fi
  rr_values_row
  rr_row "request stream: rotational flag" "the capture device non-rotational (\`--set os_rotational=false\`; a new capture)" rot0
  rr_row "request stream: closed loop" "the reads on the emulated disk at K = 16 (\`--closed-loop 16\`; a new capture): the time measured there" closed16 closed
  rr_row "request stream: closed loop" "the same capture's stream replayed open loop" closed16
  rr_row "kernel: today's block-bitmap prefetch" "mounted without \`no_prefetch_block_bitmaps\` (\`--set extra_mount_options=data=ordered\`, each file system's default journalling mode; a new capture)" prefetch
  rr_row "CPU (bound)" "the reads' wall time here, I/O on the loop device included: the most this machine's think time can add" shipped here
} >"$snip"
splice "$fidelity" budget-random-read "$snip"

fi

# ---- The fsck experiments' runs, shared by the cpu and fsck blocks: one run per factor, its
# JSON in OUT as EXPERIMENT-NAME.json and the 1-minute load average at its start and end (and its
# wall seconds here) in EXPERIMENT-NAME.load, since wall-clock figures of a closed-loop capture
# depend on the machine's load. Every run of an experiment takes the same scale.
fsck_scale() { case $1 in metacluster-fsck) echo 1;; *) echo "";; esac; } # "": the default (1)
# Runs made by this invocation: a block that asks again for a run another block made (the
# shipped run of the cpu, cpuf and fsck blocks) reads the same JSON, so every block is written
# from one capture.
declare -A fsck_made=()
fsck_run() { # experiment name [args...]
  local exp=$1 name=$2; shift 2
  if [ -n "${fsck_made[$exp-$name]:-}" ]; then return; fi
  fsck_made[$exp-$name]=1
  local scale; scale=$(fsck_scale "$exp")
  if [ -n "$scale" ]; then set -- --scale "$scale" "$@"; fi
  reproduce_into "$exp-$name" "$exp" "$@"
}
# The time scale of the closed-loop rows: docs/emulate.md ("Time scale") measured K = 1 ... 16
# keeping e2fsck's requests within 0.1%; 4 makes metacluster-fsck's 17 min of modelled time at
# scale 1 about 5 min here while stretching e2fsck's unscaled CPU (a few s) only 4 times.
closed_k=4
fsck_runs() { # experiment
  fsck_run "$1" shipped --sensitivity
  fsck_run "$1" again
  fsck_run "$1" closed --closed-loop "$closed_k"
  fsck_run "$1" period --e2fsck period
  fsck_run "$1" rot0 --set os_rotational=false
}

# The first name of an experiment file's list KEY (`period_cpus`, `other_classes`), so that a
# block runs what the experiment itself names.
first_listed() { # experiment key
  perl -ne "if (/^$2 = \\[\"([^\"]+)\"/) { print \$1; exit }" "$root/experiments/$1.toml"
}
period_cpu() { first_listed "$1" period_cpus; }

# A `--sensitivity` CPU row of a run (the shipped run's traces at another CPU factor,
# sensitivity.rs): its total for POLICY, "–" where the run has no such row or it was not priced.
cpu_row() { # json change-prefix policy
  jq -r --arg c "CPU: $2" --arg p "$3" "$f1"'[(.sensitivity // [])[] | select(.change | startswith($c))][0].total_seconds[$p] | if . == null then "–" else f1 end' "$1"
}

if want cpu; then
# ---- The CPU factor where a period CPU preset would apply (fsck experiments): what this
# machine's think time adds, switched off alone (the shipped run's traces replayed with no
# think time, `--sensitivity`'s CPU row: exact against the capture).
for exp in ext4-fsck-allocator metacluster-fsck; do
  fsck_run "$exp" shipped --sensitivity
done
{
  provenance "one run per experiment; seconds are the model's, the no-think-time column a replay of the same traces"
  echo '| experiment | policy | as shipped [s] | no think time (`--cpu-scale 0`) [s] | CPU not overlapped with I/O, as shipped [s] |'
  echo '|---|---|---:|---:|---:|'
  for exp in ext4-fsck-allocator metacluster-fsck; do
    for policy in $(jq -r '.runs[].policy' "$out/$exp-shipped.json"); do
      t() { jq -r --arg p "$policy" "$f1"'.runs[] | select(.policy == $p) | .'"$2"' | f1' "$out/$exp-$1.json"; }
      printf '| %s | %s | %s | %s | %s |\n' "$exp" "$policy" "$(t shipped total_seconds)" "$(cpu_row "$out/$exp-shipped.json" "no think time" "$policy")" "$(t shipped cpu_seconds)"
    done
  done
} >"$snip"
splice "$fidelity" budget-cpu-fsck "$snip"
fi

if want cpuf; then
# ---- The period CPU (issue 25 "Period CPU", issue 27 "5. CPU"): Ts'o's netbook experiments with
# the pre-registered preset cpus/atom-n270-2008.toml, open loop (think time times F) and closed
# loop at K = closed_k (e2fsck throttled to K/F of a CPU on the emulated disk, its computing
# charged at F); and metacluster-fsck (at scale 1) with cpus/netburst-presler-2007.toml, the
# 2007 post's "dual-core HT" (F < K: no throttle). Each experiment's preset is the first of its
# file's `period_cpus`.
cpuf_exps=(ext4-fsck-allocator ext3-vs-ext4-fsck metacluster-fsck)
for exp in "${cpuf_exps[@]}"; do
  fsck_run "$exp" shipped --sensitivity
  fsck_run "$exp" cpuF-closed --closed-loop "$closed_k" --cpu-scale "$(period_cpu "$exp")"
done
{
  provenance "two runs per experiment: the run as shipped, whose traces are also replayed at F (\`--sensitivity\`'s CPU row, exact against that capture), and a closed-loop capture at F; seconds are the model's, closed loop the time measured on the emulated disk; F from each experiment's period CPU preset, in its row: $(for exp in "${cpuf_exps[@]}"; do printf '%s cpus/%s.toml, ' "$exp" "$(period_cpu "$exp")"; done | sed 's/, $//')"
  echo "| experiment | policy | as shipped [s] | e2fsck CPU here [s] | \`--cpu-scale PERIOD-CPU\`, open loop: the same traces [s] | \`--closed-loop $closed_k --cpu-scale PERIOD-CPU\`, measured [s] | its replay [s] | requests: shipped / closed loop at F | published [s] |"
  echo '|---|---|---:|---:|---:|---:|---:|---:|---:|'
  for exp in "${cpuf_exps[@]}"; do
    cpu_preset=$(period_cpu "$exp")
    for policy in $(jq -r '.runs[].policy' "$out/$exp-shipped.json"); do
      t() { jq -r --arg p "$policy" "$f1"'.runs[] | select(.policy == $p) | .'"$2"' | if . == null then "–" else f1 end' "$out/$exp-$1.json"; }
      pub=$(jq -r --arg p "$policy" "$f1"'(.published.total_seconds // {})[$p] | if . == null then "kept aside" else f1 end' "$out/$exp-shipped.json")
      n() { jq -r --arg p "$policy" '.runs[] | select(.policy == $p) | .requests' "$out/$exp-$1.json"; }
      printf '| %s | %s | %s | %s | %s | %s | %s | %s / %s | %s |\n' "$exp" "$policy" \
        "$(t shipped total_seconds)" "$(t shipped cpu_seconds)" "$(cpu_row "$out/$exp-shipped.json" "$cpu_preset" "$policy")" \
        "$(t cpuF-closed closed_loop.measured_seconds)" "$(t cpuF-closed total_seconds)" \
        "$(n shipped)" "$(n cpuF-closed)" "$pub"
    done
  done
} >"$snip"
splice "$fidelity" budget-cpu-period "$snip"
fi

if want netbook; then
# ---- Ts'o's netbook table (ext4-fsck-allocator) with the factors the budget names for its gap
# switched together: the period checker, the period CPU preset and a device of the other class
# (the post names none). Each row is its own capture; open loop, so the CPU and the device
# reprice a stream they do not change (the requests column shows the checker's stream alike).
exp=ext4-fsck-allocator
cpu_preset=$(period_cpu "$exp")
other_class=$(first_listed "$exp" other_classes)
fsck_run "$exp" shipped --sensitivity
fsck_run "$exp" period --e2fsck period
fsck_run "$exp" periodF --e2fsck period --cpu-scale "$cpu_preset"
fsck_run "$exp" periodFssd --e2fsck period --cpu-scale "$cpu_preset" --device "$other_class"
fsck_run "$exp" Fssd --cpu-scale "$cpu_preset" --device "$other_class"
{
  provenance "$exp at scale 1, one capture per row, each its own sample of its checker's stream (see the requests); seconds are the model's; e2fsck's CPU is its own \`-tt\` user + sys here, and times F where the row names the period CPU (what F makes of it, not what the replay charges: the think time between requests times F)"
  echo '| checker | CPU | device | ext4-2008 [s] | ext4-2009 [s] | reduction | requests | e2fsck CPU here, user + sys [s] | that CPU × F [s] |'
  echo '|---|---|---|---:|---:|---:|---:|---:|---:|'
  for name in shipped period periodF periodFssd Fssd; do
    f="$out/$exp-$name.json"
    if [ ! -s "$f" ]; then echo "| $name | | | not run | not run | | | | |"; continue; fi
    jq -r --arg cpu "$cpu_preset" "$f1$f2"'
      def cpu($r): $r.measured_here.user_seconds + $r.measured_here.sys_seconds;
      def pair(f): "\(.runs[0] | f) / \(.runs[1] | f)";
      "| \(if .runs[0].e2fsck == "today" then "today'"'"'s" else "e2fsck \(.runs[0].e2fsck), the period'"'"'s" end) | \(if .cpu_scale == 1 then "this machine'"'"'s" else "`\($cpu)`, F = \(.cpu_scale * 100 | round / 100)" end) | \(.device) | \(.runs[0].total_seconds | f1) | \(.runs[1].total_seconds | f1) | \(.reduction * 100 | f1)% | \(pair(.requests)) | \(pair(cpu(.) | f2)) | \(if .cpu_scale == 1 then "" else . as $j | pair(cpu(.) * $j.cpu_scale | f1) end) |"' "$f"
  done
  jq -r "$f1$f2"'.published as $p
    | "| *the post'"'"'s* | *the netbook'"'"'s* | *not named* | *\($p.total_seconds["ext4-2008"])* | *\($p.total_seconds["ext4-2009"])* | *\($p.reduction * 100 | f1)%* | | *\($p.user_seconds["ext4-2008"] + $p.sys_seconds["ext4-2008"] | f2) / \($p.user_seconds["ext4-2009"] + $p.sys_seconds["ext4-2009"] | f2)* | |"' "$out/$exp-shipped.json"
} >"$snip"
splice "$fidelity" budget-ext4-fsck-allocator-together "$snip"
fi

if want fsck; then
# ---- The three fsck tables (metacluster-fsck at scale 1, ext4-fsck-allocator and
# ext3-vs-ext4-fsck at their default, the posts' scale 1): each factor switched alone, every cell
# from a run's JSON. Rows marked "the shipped run's traces" replay that run's captures on another
# preset (`--sensitivity`); the others are new captures, each its own sample of e2fsck's requests.
for exp in metacluster-fsck ext4-fsck-allocator ext3-vs-ext4-fsck; do fsck_runs "$exp"; done
fsck_table() { # experiment
  local exp=$1 j="$out/$1-shipped.json"
  local runs=(shipped again rot0 closed period) files=() loads=()
  local n; for n in "${runs[@]}"; do
    files+=("$out/$exp-$n.json")
    if [ -s "$out/$exp-$n.load" ]; then loads+=("$(awk '{printf "%s → %s", $1, $2}' "$out/$exp-$n.load")"); else loads+=(""); fi
  done
  # One jq program over every run's JSON (a missing run is null): the rows of the table.
  local args=() i=0
  for n in "${runs[@]}"; do
    if [ -s "${files[$i]}" ]; then args+=(--slurpfile "$n" "${files[$i]}"); else args+=(--argjson "$n" '[null]'); fi
    args+=(--arg "load_$n" "${loads[$i]}")
    i=$((i + 1))
  done
  jq -nr "${args[@]}" --arg k "$closed_k" --arg exp "$exp" "$f1"'
    def pct: (. * 100 | f1) as $s | if . > 0 then "+\($s)" else $s end;
    def secs: if . == null then "not run" else "\(f1) s" end;
    ($shipped[0]) as $s
    | [$s.runs[].policy] as $p
    | [$s.runs[].total_seconds] as $base
    # A row: factor, what it switched to, the two totals (null: not run), the load.
    | def row($factor; $to; $t; $load):
        if ($t | length) == 2 and $t[0] != null and $t[1] != null then
          "| \($factor) | \($to) | \($t[0] | secs) (\($t[0] / $base[0] - 1 | pct)%) | \($t[1] | secs) (\($t[1] / $base[1] - 1 | pct)%) | \(1 - $t[1] / $t[0] | . * 100 | f1)% | \($load) |"
        else "| \($factor) | \($to) | not run | not run | not run | |" end;
      def totals($r): if $r == null then [null, null] else [$r.runs[] | .total_seconds] end;
      def sens($change): [($s.sensitivity // [])[] | select(.change == $change)][0];
      "| factor | switched to | \($p[0]) | \($p[1]) | reduction (1 − \($p[1]) / \($p[0])) | load (1 min, start → end) |",
      "|---|---|---:|---:|---:|---|",
      "| as shipped | \($s.device), today'"'"'s e2fsck, open loop: a loop device presenting the preset'"'"'s queue | \($base[0] | secs) | \($base[1] | secs) | \(1 - $base[1] / $base[0] | . * 100 | f1)% | \($load_shipped) |",
      row("none (a second capture)"; "the run as shipped captured again: the spread of one capture, against which the other new captures'"'"' rows are read"; totals($again[0]); $load_again),
      row("request stream: rotational flag"; "the capture device non-rotational (`--set os_rotational=false`; a new capture)"; totals($rot0[0]); $load_rot0),
      row("request stream: closed loop"; "e2fsck on the emulated disk (`--closed-loop \($k)`; a new capture): the time measured there"; (if $closed[0] == null then [null, null] else [$closed[0].runs[] | .closed_loop.measured_seconds] end); $load_closed),
      row("request stream: closed loop"; "the same capture'"'"'s stream replayed open loop"; totals($closed[0]); $load_closed),
      row("checker"; "e2fsck \(if $period[0] == null then "of the period" else $period[0].runs[0].e2fsck end) (`--e2fsck period`; a new capture)"; totals($period[0]); $load_period),
      (($s.sensitivity // []) | map(select(.change | startswith("another drive: ")))[] as $alt
        | row("device: another drive"; "\($alt.change | ltrimstr("another drive: ")) (the shipped run'"'"'s traces)"; [$alt.total_seconds[$p[0]], $alt.total_seconds[$p[1]]]; "")),
      (($s.sensitivity // []) | map(select(.change | startswith("another class: ")))[] as $alt
        | row("device: another class"; "\($alt.change | ltrimstr("another class: ")) (the shipped run'"'"'s traces; the post names no storage device)"; [$alt.total_seconds[$p[0]], $alt.total_seconds[$p[1]]]; "")),
      (($s.sensitivity // []) | map(select(.change != "as shipped" and (.change | startswith("another drive: ") | not) and (.change | startswith("another class: ") | not) and (.change | startswith("CPU: ") | not)))) as $v
      | (if ($v | length) == 0 then "| device: preset values | `--sensitivity` | not run | not run | not run | |" else
          def span(f): ([$v[] | f] | min) as $lo | ([$v[] | f] | max) as $hi | "\($lo | pct) … \($hi | pct)";
          "| device: preset values | `--sensitivity`: \($v | length) variants of the preset, one borrowed or assumed value at a time (the shipped run'"'"'s traces); lowest … highest; the widest, for \($p[0]): `\($v | max_by(.total_seconds[$p[0]] / $base[0] - 1 | fabs) | .change)` | \(span(.total_seconds[$p[0]] / $base[0] - 1))% | \(span(.total_seconds[$p[1]] / $base[1] - 1))% | \(([$v[] | .reduction * 100] | min | f1)) … \(([$v[] | .reduction * 100] | max | f1))% | |" end),
      # The CPU factor: the shipped run'"'"'s traces with no think time, and at each period CPU'"'"'s F.
      (($s.sensitivity // []) | map(select(.change | startswith("CPU: ")))[] as $c
        | row("CPU"; "\($c.change | ltrimstr("CPU: ") | if startswith("no think time") then "no think time (`--cpu-scale 0`)" else "the period CPU, `--cpu-scale \(split(" ")[0])`, F = \((split("F = ")[1] // "not formed on this machine") | rtrimstr(")"))" end) (the shipped run'"'"'s traces)"; [$c.total_seconds[$p[0]], $c.total_seconds[$p[1]]]; "")),
      (if $exp == "ext4-fsck-allocator" then
        def mb($r; $pass): [$r.measured_here.e2fsck_tt[] | select(.label == "Pass \($pass)")][0].read_mib;
        "| tree | e2fsck'"'"'s own MB, pass 2 (below) | \(mb($s.runs[0]; 2)) MB | \(mb($s.runs[1]; 2)) MB | (post: \($s.published.pass_mb_read[$p[0]]["2"]) MB) | |"
      else empty end),
      (if $exp != "ext3-vs-ext4-fsck" and ($s.published.total_seconds | length) == 2 then
        "| *published* | | *\($s.published.total_seconds[$p[0]]) s* | *\($s.published.total_seconds[$p[1]]) s* | *\(1 - $s.published.total_seconds[$p[1]] / $s.published.total_seconds[$p[0]] | . * 100 | f1)%* | |"
      else empty end)
  '
}
for exp in metacluster-fsck ext4-fsck-allocator ext3-vs-ext4-fsck; do
  if [ ! -s "$out/$exp-shipped.json" ]; then
    echo "regenerate-budgets: $exp: no shipped run in $out; its block is left as it was" >&2
    continue
  fi
  {
    provenance "$(jq -r '"scale \(.scale), \(.device); each new capture one run, its load beside it; seconds are the model'"'"'s (closed loop: measured on the emulated disk)"' "$out/$exp-shipped.json")"
    fsck_table "$exp"
  } >"$snip"
  splice "$fidelity" "budget-$exp" "$snip"
done
# What the posts' own times leave for their devices: each post's real time less its CPU time
# (user + sys, both printed by its e2fsck), spread over the requests of our stream, beside what our
# stream costs per request on the preset and on the devices of another class (the shipped run's
# traces). Only the experiments whose posts printed their CPU time.
{
  provenance "each experiment's shipped run at scale 1; the published columns are the post's, the rest ours"
  echo '| experiment | policy | published: real [s] | published: user + sys [s] | published: not on a CPU [s] | our requests | published not-on-CPU time per our request [ms] | ours per request on the preset [ms] | ours per request on another class [ms] | the period checker'"'"'s requests (`--e2fsck period`) | published not-on-CPU time per its request [ms] | its stream per request on the preset [ms] |'
  echo '|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|'
  for exp in ext4-fsck-allocator metacluster-fsck; do
    f="$out/$exp-shipped.json"
    if [ ! -s "$f" ]; then echo "| $exp | not run | | | | | | | |"; continue; fi
    pf="$out/$exp-period.json"; pargs=(--argjson period null)
    [ -s "$pf" ] && pargs=(--slurpfile period "$pf")
    jq -r --arg exp "$exp" "${pargs[@]}" '
      def r2: . * 100 | round / 100;
      . as $s | [($s.sensitivity // [])[] | select(.change | startswith("another class: "))] as $c
      | ($period | if type == "array" then .[0] else null end) as $pj
      | $s.runs[] | . as $r | $s.published as $p
      | ($pj | if . == null then null else [.runs[] | select(.policy == $r.policy)][0] end) as $q
      | select($p.user_seconds[$r.policy] != null and $p.sys_seconds[$r.policy] != null)
      | ($p.total_seconds[$r.policy] - $p.user_seconds[$r.policy] - $p.sys_seconds[$r.policy]) as $left
      | "| \($exp) | \($r.policy) | \($p.total_seconds[$r.policy]) | \($p.user_seconds[$r.policy] + $p.sys_seconds[$r.policy] | r2) | \($left | r2) | \($r.requests) | \($left / $r.requests * 1000 | r2) | \($r.total_seconds / $r.requests * 1000 | r2) (\($s.device)) | \(if ($c | length) == 0 then "—" else [$c[] | "\(.total_seconds[$r.policy] / $r.requests * 1000 | r2) (\(.change | ltrimstr("another class: ")))"] | join(", ") end) | \(if $q == null then "not run | | " else "\($q.requests) | \($left / $q.requests * 1000 | r2) | \($q.total_seconds / $q.requests * 1000 | r2)" end) |"' "$f"
  done
} >"$snip"
splice "$fidelity" budget-io-left "$snip"
# docs/emulate.md: closed loop against open loop per experiment and scale (issue 25), from the
# same runs, and metacluster-fsck at its default scale (0.05), its own pair of runs.
fsck_run_default() { # name [args...]: metacluster-fsck at its default scale
  local name=$1; shift
  fsck_scale() { echo ""; }
  fsck_run metacluster-fsck "$name" "$@"
  fsck_scale() { case $1 in metacluster-fsck) echo 1;; *) echo "";; esac; }
}
fsck_run_default default
fsck_run_default closed-default --closed-loop "$closed_k"
# K = 1 beside K = 4 where it is affordable: whether the time scale moves the measured time
# (metacluster-fsck at scale 1 takes about 20 min here at K = 1).
fsck_run ext4-fsck-allocator closed-k1 --closed-loop 1
fsck_run metacluster-fsck closed-k1 --closed-loop 1
{
  printf 'Generated by `docs/regenerate-budgets.sh` (`ONLY=fsck`) on %s from build `%s`; one run per row; the load is the 1-minute load average at the run'"'"'s start and end, and the wall time is the whole run here (images, both policies).\n\n' "$(date -u +%Y-%m-%d)" "$build"
  echo '| experiment | scale | K | policy | requests, plain capture | requests, closed loop (served by the emulator) | plain capture, replayed [s] | closed loop: its stream replayed open loop [s] | closed loop: measured [s] | measured against its replay | closed-loop run: load, wall here |'
  echo '|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---|'
  for pair in metacluster-fsck:default:closed-default metacluster-fsck:shipped:closed metacluster-fsck:shipped:closed-k1 ext4-fsck-allocator:shipped:closed ext4-fsck-allocator:shipped:closed-k1 ext3-vs-ext4-fsck:shipped:closed; do
    IFS=: read -r exp plain closed <<<"$pair"
    pj="$out/$exp-$plain.json" cj="$out/$exp-$closed.json" cl="$out/$exp-$closed.load"
    if [ ! -s "$pj" ] || [ ! -s "$cj" ]; then
      echo "| $exp | | | | not run | not run | not run | not run | not run | not run | |"
      continue
    fi
    load=""; [ -s "$cl" ] && load=$(awk '{printf "%s → %s, %d s", $1, $2, $3}' "$cl")
    jq -nr --slurpfile p "$pj" --slurpfile c "$cj" --arg exp "$exp" --arg load "$load" "$f1"'
      $p[0] as $p | $c[0] as $c
      | range($p.runs | length) as $i | $p.runs[$i] as $a | $c.runs[$i] as $b
      | (($b.closed_loop.measured_seconds / $b.total_seconds - 1) * 100 | f1) as $d
      | "| \($exp) | \($p.scale) | \($b.closed_loop.time_scale) | \($a.policy) | \($a.requests) | \($b.requests) (\($b.closed_loop.requests_served)) | \($a.total_seconds | . * 100 | round / 100) | \($b.total_seconds | . * 100 | round / 100) | \($b.closed_loop.measured_seconds | . * 100 | round / 100) | \(if ($d | startswith("-")) then $d else "+" + $d end)% | \($load) |"'
  done
} >"$snip"
splice "$root/docs/emulate.md" closed-loop-fsck "$snip"
fi

# ---- The fsck experiments' queue size (`os_max_sectors_kb`), and repeated captures of
# ext3-vs-ext4-fsck (plain and closed loop): plain runs at each experiment's default scale
# (metacluster-fsck at 0.05, and at scale 1 after them), each its own capture.
# The alternative queue is 128 KiB: libata's ATA_MAX_SECTORS (256 sectors, include/linux/ata.h
# since 2.6.19), what the period kernel gave a drive without LBA48 (and AMD's SB600 AHCI, limited
# to 255 sectors, gave any drive), against 2.6's BLK_DEF_MAX_SECTORS (1024 sectors = 512 KiB) for
# an LBA48 drive (docs/rig.md, "Queue settings that shape the trace").
queue_alt_kb=128
fsck_run_default_scale() { # experiment name [args...]: the experiment at its default scale
  local exp=$1 name=$2; shift 2
  fsck_scale() { echo ""; }
  fsck_run "$exp" "$name" "$@"
  fsck_scale() { case $1 in metacluster-fsck) echo 1;; *) echo "";; esac; }
}
# One run's row: experiment, scale, KiB, what the run is, then per policy "P: S s (N)" (seconds
# replayed on the preset, requests traced), the reduction, the load.
fsck_plain_row() { # experiment name what
  local j="$out/$1-$2.json" l="$out/$1-$2.load"
  if [ ! -s "$j" ]; then
    echo "| $1 | | | $3 | not run | not run | not run | not run | |"
    return
  fi
  local load=""; [ -s "$l" ] && load=$(awk '{printf "%s → %s", $1, $2}' "$l")
  # The largest request of each policy, "A / B" in the runs' order, or "not kept".
  local largest="not kept" g="$out/$1-$2.largest"
  if [ -s "$g" ]; then
    largest=$(jq -r '[.runs[].policy] | join(" ")' "$j" | while read -r a b; do
      printf '%s / %s' "$(awk -v p="$a" '$1 == p { print $2 }' "$g")" "$(awk -v p="$b" '$1 == p { print $2 }' "$g")"
    done)
  fi
  jq -r --arg what "$3" --arg load "$load" --arg kb "$4" --arg largest "$largest" "$f1"'
    "| \(.experiment) | \(.scale) | \($kb) | \($what) | \(.runs[0].policy): \(.runs[0].total_seconds | f1) s (\(.runs[0].requests)) | \(.runs[1].policy): \(.runs[1].total_seconds | f1) s (\(.runs[1].requests)) | \($largest) | \(1 - .runs[1].total_seconds / .runs[0].total_seconds | . * 100 | f1)% | \($load) |"' "$j"
}

# A plain run whose traces are kept (`--keep`) just long enough to write EXPERIMENT-NAME.largest:
# each policy's largest request in KiB (what a smaller max_sectors_kb would have to split). Its
# images and traces are removed at once. The work directory is a tmpfs of this script's, as the
# default one is (the kernel's read-ahead depends on how fast the loop device answers).
fsck_run_kept() { # experiment name [args...]
  local exp=$1 name=$2; shift 2
  local wk="$out/mnt-wk-$exp-$name"
  if [ -n "${REUSE:-}${REUSE_ONLY:-}" ] && [ -s "$out/$exp-$name.json" ]; then
    fsck_run_default_scale "$exp" "$name"
    return
  fi
  mkdir -p "$wk"
  mount -t tmpfs -o size=4g,mode=700 layoutlab-budgets "$wk"
  fsck_run_default_scale "$exp" "$name" --keep --workdir "$wk" "$@"
  local t
  for t in "$wk"/*.trace.csv; do
    [ -e "$t" ] || continue
    # issue_ns,complete_ns,op,sector,sectors,...: sectors of 512 bytes.
    awk -F, -v p="$(basename "$t" .trace.csv)" -v e="$exp-" '
      /^[0-9]/ && $5 > m { m = $5 } END { sub("^" e, "", p); printf "%s %g\n", p, m / 2 }' "$t"
  done >"$out/$exp-$name.largest"
  umount "$wk"; rmdir "$wk"
}

if want queue || want repeat; then
for exp in metacluster-fsck ext4-fsck-allocator ext3-vs-ext4-fsck; do
  fsck_run_kept "$exp" rep1
  fsck_run_kept "$exp" rep2
  if want queue; then fsck_run_kept "$exp" "q$queue_alt_kb" --set os_max_sectors_kb="$queue_alt_kb"; fi
done
fi
# metacluster-fsck's queue rows at scale 1 as well (the post's scale; about 3 min a capture here).
if want queue; then
  fsck_run_kept metacluster-fsck s1-rep1 --scale 1
  fsck_run_kept metacluster-fsck s1-rep2 --scale 1
  fsck_run_kept metacluster-fsck "s1-q$queue_alt_kb" --scale 1 --set os_max_sectors_kb="$queue_alt_kb"
fi

if want queue; then
{
  provenance "each row one plain capture at the experiment's default scale, and metacluster-fsck's also at scale 1; seconds are the model's, requests the kernel's"
  echo '| experiment | scale | max_sectors_kb [KiB] | capture | first policy: seconds (requests) | second policy: seconds (requests) | largest request, first / second policy [KiB] | reduction | load (1 min, start → end) |'
  echo '|---|---:|---:|---|---|---|---:|---:|---|'
  for exp in metacluster-fsck ext4-fsck-allocator ext3-vs-ext4-fsck; do
    shipped_kb=$(sed -n 's/^os_max_sectors_kb *= *\([0-9]*\).*/\1/p' "$root/experiments/$exp.toml")
    fsck_plain_row "$exp" rep1 "as shipped" "$shipped_kb"
    fsck_plain_row "$exp" rep2 "as shipped, captured again" "$shipped_kb"
    fsck_plain_row "$exp" "q$queue_alt_kb" "\`--set os_max_sectors_kb=$queue_alt_kb\`" "$queue_alt_kb"
    if [ "$exp" = metacluster-fsck ]; then
      fsck_plain_row "$exp" s1-rep1 "as shipped" "$shipped_kb"
      fsck_plain_row "$exp" s1-rep2 "as shipped, captured again" "$shipped_kb"
      fsck_plain_row "$exp" "s1-q$queue_alt_kb" "\`--set os_max_sectors_kb=$queue_alt_kb\`" "$queue_alt_kb"
    fi
  done
} >"$snip"
splice "$fidelity" budget-fsck-queue "$snip"
fi

if want readahead; then
# ---- The fsck experiments' read-ahead window (`os_read_ahead_kb`): each experiment at scale 1
# (the posts' scale), captured at the shipped 128 KiB twice (the spread of one capture) and at
# 64, 32, 16 and 0 KiB. The period kernel's window is 128 KiB at most (VM_MAX_READAHEAD, 2.6.x)
# and it opens at 4 pages for a one-page read (get_init_ra_size, mm/readahead.c, the same function
# in 2.6.22 and today); how it grew from there changed in 2.6.23 (on-demand read-ahead) and
# cannot be run here, so the smaller windows bound it. 0 is no read-ahead at all.
ra_kbs="128 64 32 16 0"
# fsck_run's scales are already 1 for all three (metacluster-fsck's set, the others' default).
for exp in metacluster-fsck ext4-fsck-allocator ext3-vs-ext4-fsck; do
  fsck_run "$exp" ra128 --set os_read_ahead_kb=128
  fsck_run "$exp" ra128b --set os_read_ahead_kb=128
  for kb in $ra_kbs; do [ "$kb" = 128 ] || fsck_run "$exp" "ra$kb" --set os_read_ahead_kb="$kb"; done
done
ra_row() { # experiment name kb what
  local j="$out/$1-$2.json" l="$out/$1-$2.load"
  if [ ! -s "$j" ]; then echo "| $1 | $3 | $4 | not run | not run | not run | |"; return; fi
  local load=""; [ -s "$l" ] && load=$(awk '{printf "%s → %s", $1, $2}' "$l")
  jq -r --arg kb "$3" --arg what "$4" --arg load "$load" "$f1"'
    "| \(.experiment) | \($kb) | \($what) | \(.runs[0].policy): \(.runs[0].total_seconds | f1) s (\(.runs[0].requests)) | \(.runs[1].policy): \(.runs[1].total_seconds | f1) s (\(.runs[1].requests)) | \(1 - .runs[1].total_seconds / .runs[0].total_seconds | . * 100 | f1)% | \($load) |"' "$j"
}
{
  provenance "each row one plain capture at scale 1 on the experiment's preset; seconds are the model's replay of the capture, requests the kernel's"
  echo '| experiment | read_ahead_kb [KiB] | capture | first policy: seconds (requests) | second policy: seconds (requests) | reduction | load (1 min, start → end) |'
  echo '|---|---:|---|---|---|---:|---|'
  for exp in metacluster-fsck ext4-fsck-allocator ext3-vs-ext4-fsck; do
    ra_row "$exp" ra128 128 "as shipped"
    ra_row "$exp" ra128b 128 "as shipped, captured again"
    for kb in $ra_kbs; do
      [ "$kb" = 128 ] || ra_row "$exp" "ra$kb" "$kb" "\`--set os_read_ahead_kb=$kb\`"
    done
  done
} >"$snip"
splice "$fidelity" budget-fsck-readahead "$snip"
fi

if want repeat; then
# ext3-vs-ext4-fsck three times plain and three times closed loop (K = 4): whether closed loop
# moves ext4-2008's requests, or they are the load-dependent pass-2 count of this image.
exp=ext3-vs-ext4-fsck
fsck_run_default_scale "$exp" rep3
for i in 1 2 3; do fsck_run_default_scale "$exp" "cl$i" --closed-loop "$closed_k"; done
{
  provenance "each row one capture at scale 1 on sata-160g-2009; seconds are the model's replay of the capture's stream, and for closed loop also the time measured on the emulated disk"
  echo '| capture | ext3-2007 requests | ext4-2008 requests | of which pass 2 | of which the other passes | ext4-2008 replayed [s] | ext4-2008 measured on the emulated disk [s] | load (1 min, start → end) |'
  echo '|---|---:|---:|---:|---:|---:|---:|---|'
  for name in rep1 rep2 rep3 cl1 cl2 cl3; do
    j="$out/$exp-$name.json" l="$out/$exp-$name.load"
    case $name in rep*) what="plain ${name#rep}";; cl*) what="closed loop (\`--closed-loop $closed_k\`) ${name#cl}";; esac
    if [ ! -s "$j" ]; then echo "| $what | not run | not run | not run | not run | not run | not run | |"; continue; fi
    load=""; [ -s "$l" ] && load=$(awk '{printf "%s → %s", $1, $2}' "$l")
    jq -r --arg what "$what" --arg load "$load" "$f1"'
      (.runs[] | select(.policy == "ext3-2007")) as $a | (.runs[] | select(.policy == "ext4-2008")) as $b
      | ([$b.passes[] | select(.pass == 2) | .requests] | add) as $p2
      | "| \($what) | \($a.requests) | \($b.requests) | \($p2) | \($b.requests - $p2) | \($b.total_seconds | f1) | \(if $b.closed_loop then ($b.closed_loop.measured_seconds | f1) else "—" end) | \($load) |"' "$j"
  done
} >"$snip"
splice "$fidelity" fsck-repeat "$snip"
fi

if want spread; then
# The spread of one capture: each fsck experiment captured N_SPREAD times as shipped, at the
# budget tables' scale (1), one after another. Every figure of a table's new-capture rows is one
# such sample; this block says how far two samples of the same run lie apart, per policy, and
# how many different streams (request counts) the captures took.
n_spread=${N_SPREAD:-8}
for exp in metacluster-fsck ext4-fsck-allocator ext3-vs-ext4-fsck; do
  for i in $(seq 1 "$n_spread"); do fsck_run "$exp" "spread$i"; done
done
{
  provenance "$n_spread plain captures of each experiment at scale 1, one after another; seconds are the model's replay of each capture's stream, requests the kernel's; a stream is a distinct request count"
  echo '| experiment | policy | captures | requests: fewest … most (streams) | seconds: least / median / most | most against least | reduction: least … most | captures whose cache another process dropped | load (1 min) over the captures |'
  echo '|---|---|---:|---|---|---:|---|---:|---|'
  for exp in metacluster-fsck ext4-fsck-allocator ext3-vs-ext4-fsck; do
    files=()
    for i in $(seq 1 "$n_spread"); do [ -s "$out/$exp-spread$i.json" ] && files+=("$out/$exp-spread$i.json"); done
    if [ ${#files[@]} -eq 0 ]; then echo "| $exp | | not run | | | | | | |"; continue; fi
    load=$(cat "$out/$exp"-spread*.load 2>/dev/null | awk 'NR == 1 { lo = $1; hi = $1 } { for (k = 1; k <= 2; k++) { if ($k < lo) lo = $k; if ($k > hi) hi = $k } } END { printf "%s … %s", lo, hi }')
    jq -rs --arg exp "$exp" --arg load "$load" "$f1"'
      def med: sort | if length % 2 == 1 then .[length / 2 | floor] else (.[length / 2 - 1] + .[length / 2]) / 2 end;
      . as $runs | ($runs | length) as $n
      | ([$runs[] | 1 - .runs[1].total_seconds / .runs[0].total_seconds] | sort) as $red
      | range($runs[0].runs | length) as $i
      | [$runs[] | .runs[$i]] as $p
      | ([$p[].requests] | sort) as $rq | ([$p[].total_seconds] | sort) as $s
      | (if [$p[] | .measured_here | has("cache_drops")] | all then [$p[] | select(.measured_here.cache_drops > 0)] | length else "not counted" end) as $dropped
      | "| \(if $i == 0 then $exp else "" end) | \($p[0].policy) | \($n) | \($rq[0]) … \($rq[-1]) (\($rq | unique | length)) | \($s[0] | f1) / \($s | med | f1) / \($s[-1] | f1) s | +\(($s[-1] / $s[0] - 1) * 100 | f1)% | \(if $i == 0 then "\($red[0] * 100 | f1) … \($red[-1] * 100 | f1)%" else "" end) | \($dropped) | \(if $i == 0 then $load else "" end) |"' "${files[@]}"
  done
} >"$snip"
splice "$fidelity" fsck-spread "$snip"
fi

echo "regenerate-budgets: updated $fidelity (build $build)" >&2
