#!/usr/bin/env python3
"""Render `reproduce all`'s all.json as a Markdown page: each experiment's status, wall time and
where it went (stage_seconds), its process tree's CPU and largest resident set (cpu_seconds,
peak_rss_bytes, where the run recorded them), and its headline tables' titles. Used for
docs/examples/reproduce-all-scale1.md (the HTML page itself is megabytes of inline SVG).

usage: scripts/all-json-to-md.py ALL.JSON "HEADER TEXT" > PAGE.md
"""
import json
import sys

STAGES = ["plan", "image", "capture", "price", "report", "teardown", "other"]


def main():
    path, header = sys.argv[1], sys.argv[2]
    run = json.load(open(path))
    out = [header.rstrip() + "\n"]
    out.append("| experiment | status | wall [s] | CPU [s] | peak RSS [GB] | " + " | ".join(f"{s} [s]" for s in STAGES) + " |")
    out.append("|---" * (5 + len(STAGES)) + "|")
    for e in run["experiments"]:
        st = e.get("stage_seconds") or {}
        cells = [f"{st[s]:.1f}" if s in st else "" for s in STAGES]
        cpu = f"{e['cpu_seconds']:.1f}" if e.get("cpu_seconds") is not None else ""
        rss = f"{e['peak_rss_bytes'] / 1e9:.2f}" if e.get("peak_rss_bytes") is not None else ""
        out.append(f"| {e['name']} | {e['status']} | {e['seconds']:.1f} | {cpu} | {rss} | " + " | ".join(cells) + " |")
    out.append(f"| **all** | | **{run['seconds']:.1f}** | | |" + " |" * len(STAGES))
    out.append("")
    for e in run["experiments"]:
        r = e.get("result") or {}
        out.append(f"### {e['name']}\n")
        out.append(f"`layoutlab reproduce {e['name']} --scale 1`: {e['status']} in {e['seconds']:.1f} s.")
        scale = r.get("scale") if isinstance(r, dict) else None
        if scale is not None:
            out.append(f" Scale {scale}.")
        out.append("\n")
    print("\n".join(out))


if __name__ == "__main__":
    main()
