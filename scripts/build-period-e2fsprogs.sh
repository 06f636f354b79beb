#!/usr/bin/env bash
# Builds the period e2fsprogs (e2fsck, mke2fs, debugfs, dumpe2fs) from the unmodified upstream
# tarballs in ../shared/vendor into a cache outside the source tree, one version after another
# (two shared cores: parallel builds would only fight each other).
#
#   scripts/build-period-e2fsprogs.sh [VENDOR_DIR] [VERSION...]
#
# Cache: ${LAYOUTLAB_E2FSPROGS_CACHE:-$HOME/.cache/layoutlab/e2fsprogs}/VERSION/{sbin,etc,key}.
# `key` is the sha256 of (tarball sha256, CFLAGS, configure flags, this script's build recipe);
# a second run with the same key reuses the build. The Rust side (layoutlab_rig::period) reads
# the same layout.
#
# C of its time: flags rather than patches. -fgnu89-inline because the 2007-2010 sources define
# `extern inline` functions in headers with GNU89 semantics (gcc >= 5 defaults to C99 inline and
# then the linker sees duplicates); -fcommon because they define globals in headers (gcc >= 10
# defaults to -fno-common); -D_GNU_SOURCE and sys/sysmacros.h because glibc >= 2.28 no longer
# pulls makedev()/major() in through sys/types.h.
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
vendor="${1:-$here/../shared/vendor}"
shift || true
versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=(1.40.2 1.41.4 1.41.14)
cache="${LAYOUTLAB_E2FSPROGS_CACHE:-$HOME/.cache/layoutlab/e2fsprogs}"
cflags="-O2 -fgnu89-inline -fcommon -D_GNU_SOURCE -include sys/sysmacros.h"
confflags="--disable-nls"
recipe_version=1 # bump when the build steps below change what gets built

for v in "${versions[@]}"; do
  tarball="$vendor/e2fsprogs-$v.tar.gz"
  if [ ! -f "$tarball" ]; then
    echo "build-period-e2fsprogs: $tarball is missing; the period e2fsprogs are built from" \
      "the upstream tarballs in ../shared/vendor beside the clone (see its README.md)" >&2
    exit 1
  fi
  sum="$(sha256sum "$tarball" | cut -d' ' -f1)"
  key="$(printf '%s\n' "$sum" "$cflags" "$confflags" "$recipe_version" | sha256sum | cut -d' ' -f1)"
  dest="$cache/$v"
  if [ -f "$dest/key" ] && [ "$(cat "$dest/key")" = "$key" ] &&
    [ -x "$dest/sbin/e2fsck" ] && [ -x "$dest/sbin/mke2fs" ] &&
    [ -x "$dest/sbin/debugfs" ] && [ -x "$dest/sbin/dumpe2fs" ]; then
    echo "e2fsprogs $v: cached in $dest"
    continue
  fi
  echo "e2fsprogs $v: building into $dest (about 2 minutes a version on one core)"
  start=$(date +%s)
  work="$(mktemp -d "${TMPDIR:-/tmp}/layoutlab-e2fsprogs-$v.XXXXXX")"
  trap 'rm -rf "$work"' EXIT
  tar -xzf "$tarball" -C "$work"
  src="$work/e2fsprogs-$v"
  (
    cd "$src"
    CFLAGS="$cflags" ./configure $confflags >"$work/configure.log" 2>&1 ||
      { tail -30 "$work/configure.log" >&2; exit 1; }
    # util/subst first, alone: with -j2 lib/et's two generated files each run `make subst` in
    # ../../util at once (1.41.x), and one then execs the binary the other is still writing.
    {
      make -C util subst &&
        make -j2 libs &&
        make -j2 -C e2fsck e2fsck &&
        make -j2 -C misc mke2fs dumpe2fs &&
        make -j2 -C debugfs debugfs
    } >"$work/make.log" 2>&1 || { tail -40 "$work/make.log" >&2; exit 1; }
  )
  rm -rf "$dest.new"
  mkdir -p "$dest.new/sbin" "$dest.new/etc"
  cp "$src/e2fsck/e2fsck" "$src/misc/mke2fs" "$src/misc/dumpe2fs" "$src/debugfs/debugfs" \
    "$dest.new/sbin/"
  # The release's own shipped defaults: its mke2fs must read these (MKE2FS_CONFIG), not today's
  # /etc/mke2fs.conf, which 1.40.2 refuses.
  cp "$src/misc/mke2fs.conf" "$dest.new/etc/mke2fs.conf"
  echo "$key" >"$dest.new/key"
  echo "$(($(date +%s) - start))" >"$dest.new/build-seconds"
  rm -rf "$dest"
  mv "$dest.new" "$dest"
  rm -rf "$work"
  trap - EXIT
  echo "e2fsprogs $v: built in $(cat "$dest/build-seconds") s"
done
