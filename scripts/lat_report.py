#!/usr/bin/env python3
"""Where a round trip's time goes: merges the latency trace files that
GL_LAT_TRACE=PREFIX left (PREFIX.PID, one a process: src/common/lat.h) and
prints, for each pair of trace points that follow each other in time, how
often they did and the median gap in microseconds.

    scripts/lat_report.py PREFIX [--min-count N]

It then prints the commonest round trip as a timeline: a round trip starts
at a client send that follows a client done (or starts the trace); the
sequence of points found most often is printed with the median time of
each point from the start.
"""
import glob
import statistics
import struct
import sys

NAMES = [None, "client send", "client recv", "client done", "daemon recv", "daemon request",
         "daemon to worker", "daemon worker reply", "daemon send", "worker read", "worker run",
         "worker done", "worker reply", "client sent", "client packets built",
         "daemon packets built"]


def load(prefix):
    ev = []
    for path in glob.glob(prefix + ".*"):
        with open(path, "rb") as f:
            data = f.read()
        used = min(struct.unpack_from("<Q", data, 0)[0], len(data) // 16 - 1)
        for i in range(used):
            ns, point, tid = struct.unpack_from("<QII", data, 16 * (i + 1))
            if ns:
                ev.append((ns, point, tid))
    ev.sort()
    return ev


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    prefix = sys.argv[1]
    min_count = 50
    args = sys.argv[2:]
    if "--min-count" in args:
        min_count = int(args[args.index("--min-count") + 1])
    ev = load(prefix)
    gaps = {}
    for (t0, p0, _), (t1, p1, _) in zip(ev, ev[1:]):
        gaps.setdefault((p0, p1), []).append((t1 - t0) / 1000.0)
    rows = [(len(v), statistics.median(v), k) for k, v in gaps.items() if len(v) >= min_count]
    rows.sort(key=lambda r: -r[0])
    print("%8s %10s  %s" % ("count", "median us", "from -> to"))
    for n, med, (a, b) in rows:
        print("%8d %10.2f  %s -> %s" % (n, med, NAMES[a], NAMES[b]))
    timeline(ev)


def timeline(ev):
    client = {1, 2, 3, 13}
    trips, cur, last_client = [], None, 3
    for ns, p, _ in ev:
        if p == 1 and last_client == 3:
            if cur:
                trips.append(cur)
            cur = [(ns, p)]
        elif cur is not None:
            cur.append((ns, p))
        if p in client:
            last_client = p
    if not trips:
        return
    shapes = {}
    for t in trips:
        # up to the last client done of the trip
        end = max(i for i, (_, p) in enumerate(t) if p == 3) if any(p == 3 for _, p in t) else len(t) - 1
        t = t[:end + 1]
        shapes.setdefault(tuple(p for _, p in t), []).append([ns - t[0][0] for ns, _ in t])
    shape, runs = max(shapes.items(), key=lambda kv: len(kv[1]))
    print("\ncommonest round trip (%d of %d):" % (len(runs), len(trips)))
    prev = 0.0
    for i, p in enumerate(shape):
        at = statistics.median(r[i] for r in runs) / 1000.0
        print("  %8.2f us  (+%6.2f)  %s" % (at, at - prev, NAMES[p]))
        prev = at


main()
