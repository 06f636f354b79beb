#!/bin/sh
# Runs every fuzz target for SECONDS (default 90) seeded from the crate's real samples;
# prints each target's last libFuzzer status line and any crash artifacts.
set -u
SECONDS_PER_TARGET=${1:-90}
cd "$(dirname "$0")"
D=../crates/trace/tests/data
mkdir -p corpus/tracefs corpus/blktrace corpus/blkparse corpus/disksim_ascii corpus/disksim_validate corpus/fio corpus/csv corpus/detect corpus/device_preset corpus/disksim_parv corpus/workload_tree corpus/aging_spec
cp $D/loop0.tracefs.txt corpus/tracefs/
head -c 2000 $D/loop0.tracefs.txt > corpus/tracefs/head
printf '\000' | cat - $D/loop0.blktrace.0 > corpus/blktrace/cpu0
printf '\003' | cat - $D/loop0.blktrace.1 | head -c 1500 > corpus/blktrace/cpu1
cp $D/loop0.blkparse.txt corpus/blkparse/
printf '0.5 0 100 8 1\n1.25 0 4000 16 80\n' > corpus/disksim_ascii/a
cp $D/hp_c2247a.head40.trace $D/barracuda.head40.trace corpus/disksim_validate/
cp $D/randrw.fio3.iolog corpus/fio/
printf 'fio version 2 iolog\n/dev/sda add\n/dev/sda open\n/dev/sda wait 3000 0\n/dev/sda read 0 4096\n/dev/sda sync 0 0\n' > corpus/fio/v2
printf 'issue_ns,complete_ns,op,sector,sectors,flags,tag\n0,8000,read,2048,8,sync|meta,pass1\n9,,flush,0,0,,"a,b"\n' > corpus/csv/a
cp corpus/tracefs/head corpus/fio/v2 corpus/csv/a corpus/disksim_validate/hp_c2247a.head40.trace $D/loop0.blkparse.txt corpus/detect/
cp $D/loop0.blktrace.0 corpus/detect/bt
cp ../presets/*.toml corpus/device_preset/
cp ../populations/*.toml corpus/workload_tree/
printf '[aging]\nage = 1\nseed = 3\nfullness = 0.5\nextend_share = 0.3\n[[aging.sizes]]\nbelow_bytes = 8192\nweight = 2\n[[aging.depths]]\ndepth = 3\nweight = 1\n' > corpus/aging_spec/a
# One self-contained DiskSim spec (the HP C2247 with its model inlined is too long for
# -max_len; a spec that sources nothing still reaches every key of the disk block).
S=../../shared/data/disksim
if [ -d "$S" ]; then cp "$S/hp_c2247a.diskspecs" "$S/barracuda.diskspecs" corpus/disksim_parv/; fi
for t in tracefs blktrace blkparse disksim_ascii disksim_validate fio csv detect device_preset disksim_parv workload_tree aging_spec; do
  cargo +nightly fuzz run -O "$t" -- -max_total_time="$SECONDS_PER_TARGET" -max_len=8192 > "artifacts-$t.log" 2>&1
  echo "== $t rc=$?"
  grep -E '^#[0-9]+.*(DONE|pulse|NEW)' "artifacts-$t.log" | tail -1
  grep -E 'Done [0-9]+ runs|panicked|SUMMARY|Test unit written' "artifacts-$t.log" | head -5
done
