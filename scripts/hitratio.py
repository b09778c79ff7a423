#!/usr/bin/env python3
"""The reference half of `make bench-hitratio`: reads the traces and ours.tsv that
`LocalStorageBenchmarks --hitratio DIR` wrote, replays every trace through libCacheSim's LRU, ARC,
S3-FIFO, SIEVE and W-TinyLFU (pip package `libcachesim`, objects of size 1, a cache of N objects),
and prints the miss-ratio table in Markdown. Runs from the virtual environment the make target
creates in .build/hitratio-venv; the library and its tests never need Python."""
import csv
import os
import sys

import libcachesim as lcs

REFERENCES = [
    ("LRU", lambda size: lcs.LRU(size)),
    ("ARC", lambda size: lcs.ARC(size)),
    ("S3-FIFO", lambda size: lcs.S3FIFO(size)),
    ("SIEVE", lambda size: lcs.Sieve(size)),
    ("W-TinyLFU", lambda size: lcs.WTinyLFU(size)),
]
OURS = ["store adaptive", "store leastRecentlyUsed", "model adaptive", "Belady"]


def miss_ratio(make, size, keys):
    cache = make(size)
    request = lcs.Request()
    request.obj_size = 1
    misses = 0
    for key in keys:
        request.obj_id = key
        if not cache.get(request):
            misses += 1
    return misses / len(keys)


def load_references(directory):
    """References computed by an earlier run on the same traces (references.tsv), keyed by case."""
    cached = {}
    path = os.path.join(directory, "references.tsv")
    if os.path.exists(path):
        with open(path) as handle:
            for row in csv.DictReader(handle, delimiter="\t"):
                cached[(row["trace"], int(row["cache"]), int(row["requests"]), row["policy"])] = float(row["miss_ratio"])
    return cached


def main(directory):
    cached = load_references(directory)
    computed = []
    ours = {}
    order = []
    with open(os.path.join(directory, "ours.tsv")) as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            case = (row["trace"], int(row["cache"]))
            if case not in ours:
                ours[case] = {}
                order.append(case)
            ours[case][row["policy"]] = float(row["miss_ratio"])
    columns = [name for name, _ in REFERENCES] + OURS
    print("| trace | cache | " + " | ".join(columns) + " | adaptive ≤ best reference |")
    print("|---|---:|" + "---:|" * len(columns) + "---|")
    totals = {name: 0.0 for name in columns}
    wins = 0
    for trace, size in order:
        with open(os.path.join(directory, f"{trace}-{size}.trace")) as handle:
            keys = [int(line) for line in handle if line.strip()]
        ratios = dict(ours[(trace, size)])
        for name, make in REFERENCES:
            key = (trace, size, len(keys), name)
            ratios[name] = cached[key] if key in cached else miss_ratio(make, size, keys)
            computed.append(key + (ratios[name],))
            print(f"{trace} {size} {name}: {ratios[name]:.4f}", file=sys.stderr)
        best = min(ratios[name] for name, _ in REFERENCES)
        ok = ratios["store adaptive"] <= best + 1e-12
        wins += ok
        for name in columns:
            totals[name] += ratios[name]
        cells = " | ".join(f"{100 * ratios[name]:.2f}%" for name in columns)
        verdict = "yes" if ok else f"no (+{100 * (ratios['store adaptive'] - best):.2f} points)"
        print(f"| {trace} | {size:,} | {cells} | {verdict} |")
    with open(os.path.join(directory, "references.tsv"), "w") as handle:
        handle.write("trace\tcache\trequests\tpolicy\tmiss_ratio\n")
        for row in computed:
            handle.write("\t".join(str(value) for value in row) + "\n")
    cells = " | ".join(f"{100 * totals[name] / len(order):.2f}%" for name in columns)
    print(f"| **mean** | | {cells} | {wins} of {len(order)} |")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".build/hitratio")
