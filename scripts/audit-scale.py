#!/usr/bin/env python3
"""How `olm-guard audit` grows with the snapshot (docs/performance.md, "Audit").

    scripts/audit-scale.py target/release/olm-guard 10000 30000 100000

For each size: writes the snapshot of `scripts/audit-snapshot.py` to
target/audit-<N>.json, audits it with every module of dist/ (`-o json` to
target/audit-<N>-report.json), and prints one line per size with the
audit's own time (its last stderr line), peak memory, and the growth
against the previous size scaled to 10x the objects (linear is at most
10x). A first, unmeasured audit fills the compile cache, so no measured
audit includes compiling the modules. Exit 1 if an audit fails."""

import math
import os
import re
import resource
import subprocess
import sys
import time

SUMMARY = re.compile(r"olm-guard audit: (\d+) objects, (\d+) results \((.*)\) in ([\d.]+)(ms|s|µs)")


def seconds(value: str, unit: str) -> float:
    return float(value) * {"s": 1.0, "ms": 1e-3, "µs": 1e-6}[unit]


def main() -> int:
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    host, sizes = sys.argv[1], [int(n) for n in sys.argv[2:]]
    os.makedirs("target", exist_ok=True)
    print(f"audit scale ({os.cpu_count()} cores): {len(sizes)} snapshots", flush=True)
    rows, previous = [], None
    for step, size in enumerate(sizes, 1):
        snapshot, report = f"target/audit-{size}.json", f"target/audit-{size}-report.json"
        print(f"[{step}/{len(sizes)}] generating {size} objects ...", file=sys.stderr, flush=True)
        with open(snapshot, "w") as out:
            subprocess.run([sys.executable, "scripts/audit-snapshot.py", str(size)], stdout=out, check=True)
        if step == 1:
            # Once, unmeasured: fills the compile cache, so that no measured
            # audit includes compiling the modules with Cranelift.
            print("[1/%d] compiling the modules (a first audit, not measured) ..." % len(sizes),
                  file=sys.stderr, flush=True)
            subprocess.run([host, "audit", "--cluster", snapshot, "-o", "json"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        print(f"[{step}/{len(sizes)}] auditing {snapshot} ...", file=sys.stderr, flush=True)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.monotonic()
        with open(report, "w") as out:
            done = subprocess.run([host, "audit", "--cluster", snapshot, "-o", "json"],
                                  stdout=out, stderr=subprocess.PIPE, text=True)
        wall = time.monotonic() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode != 0:
            print(f"audit of {snapshot} failed (exit {done.returncode}):\n{done.stderr}", file=sys.stderr)
            return 1
        match = SUMMARY.search(done.stderr)
        if not match:
            print(f"no summary line from the audit of {snapshot}:\n{done.stderr}", file=sys.stderr)
            return 1
        objects, results, counts = int(match[1]), int(match[2]), match[3]
        audit = seconds(match[4], match[5])
        growth = "-"
        if previous:
            # Scaled to 10x the objects: (t2/t1) ** (log 10 / log (n2/n1)).
            ratio, factor = audit / previous[1], objects / previous[0]
            growth = f"{ratio ** (math.log(10) / math.log(factor)):.1f}x"
        previous = (objects, audit)
        rows.append((objects, results, audit, wall, after.ru_utime - before.ru_utime,
                     after.ru_maxrss / 1024, growth, counts))
    print(f"{'objects':>8} {'results':>8} {'audit':>9} {'process':>9} {'CPU':>8} {'peak RSS':>9} "
          f"{'per 10x':>8}  results")
    for objects, results, audit, wall, cpu, rss, growth, counts in rows:
        print(f"{objects:>8} {results:>8} {audit:>8.2f}s {wall:>8.2f}s {cpu:>7.1f}s {rss:>6.0f} MiB "
              f"{growth:>8}  {counts}")
    print("(audit: the audit's own time, loading included; per 10x: its growth scaled to 10x the "
          "objects, at most 10x is linear; peak RSS: the largest audit process so far)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
