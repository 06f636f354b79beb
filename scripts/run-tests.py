#!/usr/bin/env python3
"""`make test`: the workspace's tests, with what a reader of the run needs at the end.

Builds every test target (`cargo test --no-run`), then runs each test binary as `cargo test`
would (one binary at a time, from its package's directory, tests inside a binary in parallel),
asking libtest for its JSON event stream, which carries each test's own time and captured
output. The closing summary then lists:
  * the ten slowest tests;
  * every test that skipped part or all of itself (a line starting with "skip" in its output;
    as an ordinary user that is every test needing root), with its reason;
  * the `#[ignore]`d tests (the full-scale runs) and the command that runs each;
  * failures, again, in full;
  * what the suite left behind: whatever `layoutlab clean --dry-run` finds after the run that
    it did not find before (rig-made items named after a process that has exited). Each is a
    failure: the rig and its tests clean up after themselves.

libtest's JSON format is behind `-Z unstable-options`; RUSTC_BOOTSTRAP=1 is set for the test
binaries' run only (never for compiling), which is what lets a stable libtest print it.

Usage: scripts/run-tests.py [FILTER...]   (FILTER is passed to every test binary, as with
`cargo test -- FILTER`). Writes target/test-report.json. Exits 1 if any test failed.
"""
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CARGO = os.environ.get("CARGO", "cargo")


def build():
    """Every test executable, with its package, kind, name and manifest directory; and the
    layoutlab binary built for the integration tests."""
    cmd = [CARGO, "test", "--workspace", "--locked", "--no-run",
           "--message-format=json-render-diagnostics"]
    p = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.exit(f"run-tests: `{' '.join(cmd)}` failed (exit {p.returncode})")
    out = []
    layoutlab = None
    for line in p.stdout.splitlines():
        try:
            m = json.loads(line)
        except ValueError:
            continue
        if m.get("reason") != "compiler-artifact" or not m.get("executable"):
            continue
        if not m.get("profile", {}).get("test"):
            if m["target"]["kind"] == ["bin"] and m["target"]["name"] == "layoutlab":
                layoutlab = m["executable"]  # the CLI the integration tests run
            continue
        t = m["target"]
        pkg = m["package_id"]
        name = pkg.split("#")[-1].split("@")[0] if "#" in pkg else pkg.split()[0]
        if "/" in name:
            name = name.rsplit("/", 1)[-1]
        out.append({
            "exe": m["executable"],
            "package": m["manifest_path"] and os.path.basename(os.path.dirname(m["manifest_path"])),
            "package_name": name,
            "kind": t["kind"][0],
            "target": t["name"],
            "dir": os.path.dirname(m["manifest_path"]),
        })
    return out, layoutlab


def how_to_run(b, test):
    sel = "--lib" if b["kind"] == "lib" else f"--{b['kind']} {b['target']}"
    if b["kind"] in ("bin",):
        sel = f"--bin {b['target']}"
    return f"cargo test -p {b['package_name']} {sel} -- --ignored --exact {test}"


def run_binary(b, filters, report):
    env = dict(os.environ)
    env["RUSTC_BOOTSTRAP"] = "1"
    env["CARGO_MANIFEST_DIR"] = b["dir"]
    env["CARGO_PKG_NAME"] = b["package_name"]
    label = f"{b['package_name']} {b['kind']} {b['target']}"
    print(f"     Running {label} ({os.path.relpath(b['exe'], ROOT)})", flush=True)
    t0 = time.monotonic()
    p = subprocess.Popen(
        [b["exe"], "-Z", "unstable-options", "--format", "json", "--report-time",
         "--show-output", *filters],
        cwd=b["dir"], env=env, stdout=subprocess.PIPE, text=True)
    counts = {"passed": 0, "failed": 0, "ignored": 0}
    ended = False
    for line in p.stdout:
        line = line.strip()
        if not line.startswith("{"):
            print(line, flush=True)
            continue
        try:
            ev = json.loads(line)
        except ValueError:
            print(line, flush=True)
            continue
        if ev.get("type") == "suite" and ev.get("event") in ("ok", "failed"):
            ended = True
            continue
        if ev.get("type") != "test" or ev.get("event") == "started":
            continue
        if ev.get("event") == "timeout":
            # libtest's "has been running for over 60 seconds": a note, not a result.
            print(f"    still running after 60 s: {ev['name']}", flush=True)
            continue
        name = ev["name"]
        out = ev.get("stdout", "") or ""
        secs = float(ev.get("exec_time", 0.0) or 0.0)
        rec = {"binary": label, "test": name, "seconds": secs, "event": ev["event"]}
        if ev["event"] == "ok":
            counts["passed"] += 1
            report["tests"].append(rec)
            for l in out.splitlines():
                if l.lstrip().lower().startswith("skip"):
                    report["skips"].append({"binary": label, "test": name, "line": l.strip()})
        elif ev["event"] == "ignored":
            counts["ignored"] += 1
            report["ignored"].append({"binary": label, "test": name, "run": how_to_run(b, name)})
        else:
            counts["failed"] += 1
            report["tests"].append(rec)
            report["failures"].append({"binary": label, "test": name, "output": out})
            print(f"---- {name} FAILED ({secs:.1f} s) ----\n{out}", flush=True)
    rc = p.wait()
    secs = time.monotonic() - t0
    if not ended or (rc != 0 and counts["failed"] == 0):
        counts["failed"] += 1
        report["failures"].append({"binary": label, "test": "(the binary itself)",
                                   "output": f"exit status {rc} without a test failing"})
    status = "ok" if counts["failed"] == 0 else "FAILED"
    print(f"test result: {status}. {counts['passed']} passed; {counts['failed']} failed; "
          f"{counts['ignored']} ignored; 0 measured; 0 filtered out; finished in {secs:.2f}s",
          flush=True)
    for k in counts:
        report["counts"][k] += counts[k]
    report["binaries"].append({"binary": label, "seconds": secs, **counts})


def doc_tests(filters, report):
    print("   Doc-tests (cargo test --doc)", flush=True)
    p = subprocess.run([CARGO, "test", "--workspace", "--locked", "--doc", "--", *filters],
                       cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    passed = failed = ignored = 0
    for line in p.stdout.splitlines():
        if line.startswith("test result:"):
            print(line)
            f = line.replace(";", "").replace(".", " ").split()
            for i, w in enumerate(f):
                if w == "passed":
                    passed += int(f[i - 1])
                if w == "failed":
                    failed += int(f[i - 1])
                if w == "ignored":
                    ignored += int(f[i - 1])
    if p.returncode != 0:
        print(p.stdout)
        failed = max(failed, 1)
        report["failures"].append({"binary": "doc-tests", "test": "(doc tests)",
                                   "output": p.stdout[-4000:]})
    report["counts"]["passed"] += passed
    report["counts"]["failed"] += failed
    report["counts"]["ignored"] += ignored


def leftovers(layoutlab):
    """What `layoutlab clean --dry-run` finds: tracefs instances, mounts, loop devices, zram
    devices, cgroups and temp paths named after a layoutlab process that has exited."""
    if not layoutlab:
        sys.exit("run-tests: the build made no layoutlab binary to look for leftovers with")
    p = subprocess.run([layoutlab, "clean", "--dry-run", "--json", "-"],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    if p.returncode != 0:
        sys.exit(f"run-tests: `{layoutlab} clean --dry-run` failed (exit {p.returncode})")
    return {f"{i['kind']} {i['path']}" for i in json.loads(p.stdout)["found"]}


def main():
    filters = sys.argv[1:]
    t0 = time.monotonic()
    binaries, layoutlab = build()
    built = time.monotonic() - t0
    before = leftovers(layoutlab)
    report = {"counts": {"passed": 0, "failed": 0, "ignored": 0}, "tests": [], "skips": [],
              "ignored": [], "failures": [], "binaries": []}
    for b in sorted(binaries, key=lambda b: (b["package_name"], b["kind"], b["target"])):
        run_binary(b, filters, report)
    doc_tests(filters, report)
    left = sorted(leftovers(layoutlab) - before)
    if left:
        report["counts"]["failed"] += 1
        report["failures"].append({"binary": "the suite", "test": "(left behind)",
                                   "output": "\n".join(left)})
        print("---- the suite left behind what its tests made: ----\n" + "\n".join(left))
    ran = time.monotonic() - t0 - built
    report["seconds"] = {"build": built, "tests": ran}
    os.makedirs(os.path.join(ROOT, "target"), exist_ok=True)
    with open(os.path.join(ROOT, "target", "test-report.json"), "w") as f:
        json.dump(report, f, indent=1)

    root = os.geteuid() == 0
    print(f"\n=== the ten slowest tests (of {len(report['tests'])}) ===")
    for r in sorted(report["tests"], key=lambda r: -r["seconds"])[:10]:
        print(f"  {r['seconds']:7.1f} s  {r['binary']}: {r['test']}")
    need_root = [s for s in report["skips"] if "root" in s["line"]]
    other = [s for s in report["skips"] if "root" not in s["line"]]
    print(f"\n=== skipped for want of root: {len(need_root)} test(s)"
          f"{'' if root else ' (this run is not root; run as root to run them)'} ===")
    for s in need_root:
        print(f"  {s['binary']}: {s['test']}: {s['line']}")
    if other:
        print(f"\n=== skipped (in part) for another reason: {len(other)} ===")
        for s in other:
            print(f"  {s['binary']}: {s['test']}: {s['line']}")
    print(f"\n=== ignored (full-scale runs, run on demand): {len(report['ignored'])} ===")
    for s in report["ignored"]:
        print(f"  {s['run']}")
    if report["failures"]:
        print(f"\n=== FAILED: {len(report['failures'])} ===")
        for s in report["failures"]:
            print(f"  {s['binary']}: {s['test']}")
    c = report["counts"]
    print(f"\nbuild {built:.0f} s, tests {ran:.0f} s")
    print(f"summary: {c['passed']} passed, {c['failed']} failed, {c['ignored']} skipped")
    sys.exit(1 if c["failed"] else 0)


if __name__ == "__main__":
    main()
