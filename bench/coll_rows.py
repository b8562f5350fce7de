"""The JSON-lines loader and number formats that bench/coll-ab-table.py and bench/coll-direct-table.py share.

A bench/coll-peers.sh directory holds one JSONL file per variant (openmpi.jsonl, gdrkit-<variant>.jsonl), one
object per size and run; lines that are not JSON (comments, nccl-tests' text) are skipped."""
import collections
import json
import os


def load(d, files):
    """(bytes, run) -> label -> row, from the files (label, file name) that exist under d."""
    rows = collections.defaultdict(dict)
    for label, f in files:
        p = os.path.join(d, f)
        if not os.path.exists(p):
            continue
        for line in open(p):
            try:
                o = json.loads(line)
            except ValueError:
                continue
            rows[(o["bytes"], o["run"])][label] = o
    return rows


def fmt(x):
    return "%.3g" % x if x < 100 else "%.0f" % x


def mmm(v):
    """min / median / max (the upper median of an even count), or "-" for none."""
    v = sorted(v)
    return "%s / %s / %s" % tuple(fmt(x) for x in (v[0], v[len(v) // 2], v[-1])) if v else "-"
