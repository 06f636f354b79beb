#!/usr/bin/env python3
"""Before/after equivalence of a `layoutlab` binary (issue 24's proof; docs/testing.md).

    scripts/equivalence.py record BIN OUT [--quick] [--src DIR] [--det-only]
    scripts/equivalence.py compare BASE1 BASE2 AFTER

`record` runs BIN and writes what it produced under OUT:
  OUT/det/   deterministic outputs, compared byte for byte: plans of every policy on its
             profiles, images (masked, see below), golden files, `workload show`/`age` streams,
             `overhead`, replays of the stored traces and fio-like jobs on every preset;
  OUT/cap/   every shipped experiment at its default scale (`reproduce NAME --json`): compared
             by value, request counts exactly, results within the spread of BASE1 and BASE2.
`compare` prints a table of what matched and what differed and exits 1 on any difference.

Images are made with E2FSPROGS_FAKE_TIME set, so mke2fs, libext2fs and the tools after them stamp
one fixed time into every time field (superblock and inodes). What still differs from one make to
the next is what mke2fs draws at random: the file system UUID (superblock copies, the journal
superblock, and with metadata_csum every checksum, which the UUID seeds) and the directory hash
seed. Each image is recorded three ways: `image inspect --json`; dumpe2fs with the UUID, hash
seed and checksum lines masked; and the SHA-256 of its data once debugfs has zeroed the hash
seed and tune2fs has set a fixed UUID (rewriting every checksum), the old values zeroed wherever
else they occur, and the journal superblock's own UUID zeroed.
"""
import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
POLICIES = ["ext3-2007", "ext3-metacluster", "rext3", "ext4-2008", "ext4-2009", "ext4-kernel",
            "ext4-meta-ssd", "ext3-meta-ssd"]
# Plan scales: each workload at the scale its experiments use or below; a policy that cannot
# plan a workload (ext4 policies on bench5 run out of space) records its error, which must not
# change either. Plans are kept as their SHA-256 (a full ubuntu-32g plan is 100 MB);
# the metrics are kept whole so that a difference can be read.
PLAN_WORKLOADS = [("bench5", "0.01"), ("bench5-10tb", "0.001"), ("ubuntu-32g", "1")]
IMAGE_WORKLOADS = [("bench5", "0.002"), ("bench5-10tb", "0.0002"), ("ubuntu-32g", "1")]
FAKE_TIME = "1700000000"
# Experiments whose default scale takes over a minute here (docs/reproduce-all.md): left out
# by --quick.
SLOW = {"large-delete", "random-read", "metacluster-aging", "inode-readahead",
        "metadata-on-ssd-aging"}
# Fields that are wall or host-CPU time of this machine's run, not results: never compared.
WALL_KEYS = re.compile(r"^(measured_here|stage_seconds|wall_seconds|real_s|user_s|sys_s|memory|"
                       r"rate_mib_s|seconds_here|elapsed.*|.*_wall_.*|wall_.*|.*_wall)$")
REQUEST_KEY = re.compile(r"request")


def run(cmd, out_base, cwd=None, env=None):
    """Runs cmd; writes out_base.{stdout,stderr-rc}: the exit status is behaviour too."""
    p = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    with open(out_base + ".stdout", "wb") as f:
        f.write(p.stdout)
    with open(out_base + ".rc", "w") as f:
        f.write("%d\n" % p.returncode)
    # stderr carries progress and timings: kept for reading, not compared.
    with open(out_base + ".stderr.log", "wb") as f:
        f.write(p.stderr)
    return p.returncode


def sha_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def hash_away(path, out):
    """Replaces a big output by its SHA-256 and size (the file is deleted)."""
    if os.path.exists(path):
        with open(out, "w") as f:
            f.write("%s %d\n" % (sha_file(path), os.path.getsize(path)))
        os.remove(path)


def shrink(path):
    """An output over 5 MB (ubuntu-32g's inspect JSON is 115 MB) is kept as its SHA-256."""
    if os.path.getsize(path) > 5 << 20:
        hash_away(path, path[:-len(".stdout")] + ".sha256")


def superblock(img):
    with open(img, "rb") as f:
        f.seek(1024)
        return f.read(1024)


JBD2_MAGIC = b"\xc0\x3b\x39\x98"


def mask_journal_uuid(data, start):
    """Zeroes s_uuid (bytes 0x30-0x3f) of every journal superblock in data (read at start).

    The journal superblock carries a UUID of its own, drawn when the journal is made.
    """
    i = data.find(JBD2_MAGIC)
    while i >= 0:
        # A journal superblock starts a block (1 KiB at least) and is of type 3 or 4.
        if (start + i) % 1024 == 0 and data[i + 4:i + 8] in (b"\0\0\0\3", b"\0\0\0\4"):
            data = data[:i + 0x30] + b"\0" * 16 + data[i + 0x40:]
        i = data.find(JBD2_MAGIC, i + 4)
    return data


def masked_image_hash(img, env):
    """SHA-256 of the image's data regions once what mke2fs drew at random is fixed.

    The image is changed in place (it is deleted afterwards): debugfs sets the hash seed to
    zero and tune2fs sets the UUID to a fixed one, rewriting every metadata checksum the UUID
    seeds; the old UUID and seed, wherever else they occur (the journal superblock), are zeroed
    in what is hashed.
    """
    sb = superblock(img)
    uuid, seed = sb[0x68:0x78], sb[0xEC:0xFC]
    for cmd in (["debugfs", "-w", "-R", "ssv hash_seed 00000000-0000-0000-0000-000000000000",
                 img], ["tune2fs", "-U", "00000000-0000-0000-0000-00000000e001", img]):
        p = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if p.returncode != 0:
            return "not hashed: %s failed: %s\n" % (cmd[0], p.stderr.decode(errors="replace"))
    h = hashlib.sha256()
    size = os.path.getsize(img)
    fd = os.open(img, os.O_RDONLY)
    try:
        pos = 0
        while pos < size:
            try:
                start = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError:
                break
            end = os.lseek(fd, start, os.SEEK_HOLE)
            os.lseek(fd, start, os.SEEK_SET)
            data = b""
            while len(data) < end - start:
                more = os.read(fd, min(end - start - len(data), 64 << 20))
                if not more:
                    break
                data += more
            data = data.replace(uuid, b"\0" * 16).replace(seed, b"\0" * 16)
            data = mask_journal_uuid(data, start)
            # Holes and zeros hash alike: the offset of each data run goes in with it.
            h.update(b"%d:" % start)
            h.update(data.rstrip(b"\0"))
            pos = end
    finally:
        os.close(fd)
    return "%s %d\n" % (h.hexdigest(), size)


DUMPE2FS_MASK = [
    (re.compile(r"^(Filesystem UUID:\s+).*$", re.M), r"\1<uuid>"),
    (re.compile(r"^(Directory Hash Seed:\s+).*$", re.M), r"\1<hash seed>"),
    (re.compile(r"^(Checksum:\s+).*$", re.M), r"\1<csum>"),
    (re.compile(r"^(Journal checksum:\s+).*$", re.M), r"\1<csum>"),
    (re.compile(r"(csum|checksum) 0x[0-9a-f]+"), r"\1 <csum>"),
]


def record_image(b, det, workload, scale, policy, env):
    tmp = os.path.join(det, "images", "tmp")
    os.makedirs(tmp, exist_ok=True)
    name = "%s-%s-%s" % (workload, policy, scale)
    base = os.path.join(det, "images", name)
    rc = run([b, "image", "make", "img", "--workload", workload, "--policy", policy,
              "--scale", scale], base + ".make", cwd=tmp, env=env)
    img = os.path.join(tmp, "img")
    if rc == 0 and os.path.exists(img):
        run([b, "image", "inspect", "img", "--json", "-"], base + ".inspect", cwd=tmp, env=env)
        shrink(base + ".inspect.stdout")
        p = subprocess.run(["dumpe2fs", "img"], cwd=tmp, stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True)
        text = p.stdout
        for pat, rep in DUMPE2FS_MASK:
            text = pat.sub(rep, text)
        with open(base + ".dumpe2fs", "w") as f:
            f.write(text)
        with open(base + ".masked-sha256", "w") as f:
            f.write(masked_image_hash(img, env))
    shutil.rmtree(tmp, ignore_errors=True)


def record_det(b, out, src):
    det = os.path.join(out, "det")
    for d in ("plans", "images", "golden", "workload", "overhead", "replay", "fio"):
        os.makedirs(os.path.join(det, d), exist_ok=True)
    env = dict(os.environ, E2FSPROGS_FAKE_TIME=FAKE_TIME)
    for workload, scale in PLAN_WORKLOADS:
        for p in POLICIES:
            base = os.path.join(det, "plans", "%s-%s-%s" % (workload, p, scale))
            run([b, "plan", "--workload", workload, "--policy", p, "--scale", scale,
                 "--json", base + ".plan.json"], base, env=env)
            hash_away(base + ".plan.json", base + ".plan.sha256")
            run([b, "plan", "--workload", workload, "--policy", p, "--scale", scale,
                 "--metrics", "--json", "-"], base + ".metrics", env=env)
    for workload, scale in IMAGE_WORKLOADS:
        for p in POLICIES:
            record_image(b, det, workload, scale, p, env)
    # The golden files the tests hold, as the tree holds them.
    for crate in sorted(os.listdir(os.path.join(src, "crates"))):
        g = os.path.join(src, "crates", crate, "tests", "golden")
        for root, _, files in os.walk(g):
            for fn in sorted(files):
                path = os.path.join(root, fn)
                rel = os.path.relpath(path, src).replace("/", "__")
                shutil.copy(path, os.path.join(det, "golden", rel))
    # fio-randread is priced on models only: its whole report is deterministic.
    fio_out = os.path.join(det, "golden", "fio-randread.out")
    run([b, "reproduce", "fio-randread", "--out", fio_out, "--json", "-"],
        os.path.join(det, "golden", "fio-randread"), env=env)
    for workload in ("bench5", "bench5-10tb", "ubuntu-32g"):
        run([b, "workload", "show", workload, "--json", "-"],
            os.path.join(det, "workload", "show-" + workload), env=env)
    for workload, scale, age in (("bench5", "0.002", "2"), ("ubuntu-32g", "0.01", "1")):
        base = os.path.join(det, "workload", "age-%s-%s-%s" % (workload, scale, age))
        run([b, "workload", "age", workload, "--age", age, "--scale", scale, "--json", "-",
             "--write-ops", base + ".ops.json"], base, env=env)
        hash_away(base + ".ops.json", base + ".ops.sha256")
    for i, args in enumerate([["--size", "80G"], ["--size", "80G", "-t", "ext4"],
                              ["--size", "10T", "-t", "ext4", "-T", "largefile"],
                              ["--size", "32G", "--profile", "e2fsprogs-1.41.14", "-t", "ext4"],
                              ["--size", "500G", "--use", "many-small-files"]]):
        run([b, "overhead", "--json", "-"] + args,
            os.path.join(det, "overhead", "%d-%s" % (i, "_".join(args).replace("-", ""))),
            env=env)
    run([b, "device", "list"], os.path.join(det, "replay", "device-list"), env=env)
    presets = sorted(f[:-5] for f in os.listdir(os.path.join(src, "presets"))
                     if f.endswith(".toml"))
    traces = [os.path.join(src, "crates/cli/tests/data/e2fsck-ext3-2007-s0.005.wall.csv"),
              os.path.join(src, "crates/cli/tests/data/e2fsck-ext3-2007-s0.005.cpu.csv"),
              os.path.join(src, "crates/trace/tests/data/loop0.blkparse.txt"),
              os.path.join(src, "crates/trace/tests/data/barracuda.head40.trace"),
              os.path.join(src, "crates/trace/tests/data/hp_c2247a.head40.trace")]
    for t in traces:
        tn = os.path.basename(t)
        # Run beside the trace with its bare name: `trace stats` prints the path it was given,
        # and two recordings made from two checkouts must not differ by where they were made.
        run([b, "trace", "stats", tn], os.path.join(det, "replay", "stats-" + tn),
            cwd=os.path.dirname(t), env=env)
        for dev in presets:
            for sched in ("fcfs", "sptf"):
                run([b, "trace", "replay", t, "--device", dev, "--scheduler", sched,
                     "--json", "-"],
                    os.path.join(det, "replay", "%s-%s-%s" % (tn, dev, sched)), env=env)
    for dev in presets:
        for rw in ("randread", "randwrite", "read"):
            run([b, "device", "fio", "--device", dev, "--rw", rw, "--bs", "4k", "--span", "8G",
                 "--number", "2000", "--seed", "7", "--json", "-"],
                os.path.join(det, "fio", "%s-%s" % (dev, rw)), env=env)


def record_cap(b, out, quick, src):
    cap = os.path.join(out, "cap")
    os.makedirs(cap, exist_ok=True)
    names = sorted(f[:-5] for f in os.listdir(os.path.join(src, "experiments"))
                   if f.endswith(".toml"))
    with open(os.path.join(out, "timing.txt"), "a") as tf:
        for n in names:
            if quick and n in SLOW:
                continue
            t0 = time.time()
            base = os.path.join(cap, n)
            rc = run([b, "reproduce", n, "--out", base + ".out", "--json", base + ".json"], base)
            shutil.rmtree(base + ".out", ignore_errors=True)
            tf.write("%s %.1f s rc %d load %s\n" % (n, time.time() - t0, rc,
                                                   open("/proc/loadavg").read().split()[0]))
            tf.flush()


def record(a):
    b = os.path.abspath(a.bin)
    out = os.path.abspath(a.out)
    src = os.path.abspath(a.src)
    if os.path.exists(out) and os.listdir(out):
        sys.exit("equivalence: %s is not empty; give a new directory" % out)
    os.makedirs(out, exist_ok=True)
    t0 = time.time()
    with open(os.path.join(out, "meta.txt"), "w") as f:
        f.write("binary %s sha256 %s\n" % (b, sha_file(b)))
        f.write("source %s\nstarted %s\nquick %s\n" % (src, time.strftime("%F %T UTC",
                                                                          time.gmtime()), a.quick))
    record_det(b, out, src)
    t1 = time.time()
    if not a.det_only:
        record_cap(b, out, a.quick, src)
    t2 = time.time()
    with open(os.path.join(out, "meta.txt"), "a") as f:
        f.write("deterministic %.0f s, captures %.0f s\n" % (t1 - t0, t2 - t1))
    print("recorded %s: deterministic %.0f s, captures %.0f s" % (out, t1 - t0, t2 - t1))


# ---- compare ----

def files(root):
    got = {}
    for r, _, fs in os.walk(root):
        for fn in fs:
            if fn.endswith(".stderr.log"):
                continue
            p = os.path.join(r, fn)
            got[os.path.relpath(p, root)] = p
    return got


def leaves(v, path=""):
    if isinstance(v, dict):
        for k, x in v.items():
            if WALL_KEYS.match(k):
                continue
            yield from leaves(x, path + "." + k)
    elif isinstance(v, list):
        yield path + ".len", len(v)
        for i, x in enumerate(v):
            yield from leaves(x, "%s[%d]" % (path, i))
    else:
        yield path, v


def compare_capture(j1, j2, ja):
    """(exact, in band, baseline-varies-text, failures) over the leaves of one result."""
    if j2 is None:
        return compare_one_baseline(j1, ja)
    l1, l2, la = dict(leaves(j1)), dict(leaves(j2)), dict(leaves(ja))
    exact = band = varies = 0
    fails = []
    req_vary = []
    for k in sorted(set(l1) | set(l2) | set(la)):
        if k not in la or k not in l1 or k not in l2:
            if (k in l1) != (k in l2):
                # The baselines differ in shape here (e.g. a list one item longer).
                varies += 1
                continue
            fails.append("%s: present in %s" % (k, "after only" if k in la else "baseline only"))
            continue
        a, b1, b2 = la[k], l1[k], l2[k]
        num = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (a, b1, b2))
        if b1 == b2:
            if a == b1:
                exact += 1
            else:
                fails.append("%s: %r, both baselines %r" % (k, a, b1))
        elif num:
            if REQUEST_KEY.search(k):
                # Not held equal: the baselines themselves disagree (named in the table).
                req_vary.append(k)
            lo, hi = min(b1, b2), max(b1, b2)
            d = hi - lo
            # Two runs underestimate the spread: the band is their range widened by it.
            if lo - d <= a <= hi + d:
                band += 1
            else:
                fails.append("%s: %r outside [%r, %r] (baselines %r, %r)"
                             % (k, a, lo - d, hi + d, b1, b2))
        else:
            varies += 1
    if req_vary:
        fails.insert(0, "note: %d request counts vary between the baselines (compared within "
                        "their spread), e.g. %s" % (len(req_vary), req_vary[0]))
    return exact, band, varies, fails


def compare_one_baseline(j1, ja):
    """With one baseline sample there is no spread: request counts and every leaf that is not
    a number must be equal; other numbers are counted as not judged."""
    l1, la = dict(leaves(j1)), dict(leaves(ja))
    exact = unjudged = 0
    fails = []
    for k in sorted(set(l1) | set(la)):
        if k not in l1 or k not in la:
            fails.append("%s: present in %s" % (k, "after only" if k in la else "baseline only"))
            continue
        a, b = la[k], l1[k]
        num = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (a, b))
        if a == b:
            exact += 1
        elif num and not REQUEST_KEY.search(k):
            unjudged += 1
        else:
            fails.append("%s: %r, baseline %r" % (k, a, b))
    return exact, 0, -unjudged, fails


def det_digest(rel, path):
    """SHA-256 of a deterministic output; `workload age`'s JSON without its "seconds" (the
    generator's wall time)."""
    if rel.startswith("workload/age-") and rel.endswith(".stdout"):
        try:
            v = json.load(open(path))
            v.pop("seconds", None)
            return hashlib.sha256(json.dumps(v, sort_keys=True).encode()).hexdigest()
        except ValueError:
            pass
    return sha_file(path)


def compare(a):
    b1, b2, af = a.base1, a.base2, a.after
    rows, bad = [], 0
    # Deterministic: the two baselines must agree (else the output is not deterministic and
    # says so) and the after must be byte-identical.
    d1, d2, da = (files(os.path.join(x, "det")) for x in (b1, b2, af))
    for k in sorted(set(d1) | set(d2) | set(da)):
        s = [det_digest(k, d[k]) if k in d else None for d in (d1, d2, da)]
        if s[0] != s[1]:
            # Not deterministic across two baseline runs: listed, cannot be held.
            status = "NOT DETERMINISTIC"
        elif s[2] == s[0]:
            status = "same"
        else:
            status = "DIFFERS" if s[2] else "MISSING"
        if status in ("DIFFERS", "MISSING"):
            bad += 1
        rows.append(("det/" + k, status, ""))
    c1, c2, ca = (os.path.join(x, "cap") for x in (b1, b2, af))
    names = sorted(f[:-5] for f in os.listdir(ca) if f.endswith(".json")) \
        if os.path.isdir(ca) else []
    for n in sorted(set(names) | {f[:-3] for f in os.listdir(ca) if f.endswith(".rc")}
                    if os.path.isdir(ca) else []):
        try:
            js = [json.load(open(os.path.join(c1, n + ".json"))), None,
                  json.load(open(os.path.join(ca, n + ".json")))]
            if os.path.exists(os.path.join(c2, n + ".json")):
                js[1] = json.load(open(os.path.join(c2, n + ".json")))
        except (OSError, ValueError) as e:
            bad += 1
            rows.append(("cap/" + n, "NO RESULT", str(e)))
            continue
        exact, band, varies, fails = compare_capture(*js)
        if js[1] is None:
            # BASE2 was recorded with --quick: no spread for this experiment.
            note = "one baseline: %d leaves equal, %d numbers differ and are not judged " \
                   "(no spread measured)" % (exact, -varies)
        else:
            note = "%d exact, %d within the baselines' spread, %d non-numeric leaves vary" % (
                exact, band, varies)
        if [f for f in fails if not f.startswith("note:")]:
            bad += 1
            rows.append(("cap/" + n, "DIFFERS", note + "; " + "; ".join(fails[:5]) +
                         (" (+%d more)" % (len(fails) - 5) if len(fails) > 5 else "")))
        else:
            rows.append(("cap/" + n, "same", "; ".join([note] + fails)))
    width = max(len(r[0]) for r in rows) if rows else 10
    shown = [r for r in rows if r[1] != "same" or r[0].startswith("cap/") or a.verbose]
    for name, status, note in shown:
        print("%-*s  %-16s %s" % (width, name, status, note))
    same = sum(1 for r in rows if r[1] == "same")
    print("\n%d outputs compared: %d same, %d differ%s" % (
        len(rows), same, bad, "" if a.verbose else " (identical det/ files not listed; -v lists)"))
    sys.exit(1 if bad else 0)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record")
    r.add_argument("bin")
    r.add_argument("out")
    r.add_argument("--quick", action="store_true",
                   help="leave out the experiments over a minute (%s)" % ", ".join(sorted(SLOW)))
    r.add_argument("--det-only", action="store_true", help="deterministic outputs only")
    r.add_argument("--src", default=os.path.dirname(HERE),
                   help="the source tree whose presets, traces, golden files and experiments "
                        "are used (default: this script's)")
    c = sub.add_parser("compare")
    c.add_argument("base1")
    c.add_argument("base2")
    c.add_argument("after")
    c.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args()
    if a.cmd == "record":
        if not os.access(a.bin, os.X_OK):
            sys.exit("equivalence: %s is not an executable" % a.bin)
        record(a)
    else:
        for d in (a.base1, a.base2, a.after):
            if not os.path.isfile(os.path.join(d, "meta.txt")):
                sys.exit("equivalence: %s is not a recorded output directory" % d)
        compare(a)


if __name__ == "__main__":
    main()
