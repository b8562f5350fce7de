# Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
"""PyTorch side of the pinned-copy comparison: the same sizes, iterations and event timing as CudaReport.

    python3 gpu/tools/torch_bandwidth.py [--bytes 268435456] [--iters 20] [out.json]

H2D/D2H use a pinned (page-locked) host tensor; GB/s = 1e9 bytes/s; D2D counts bytes copied.
"""
import json
import sys

import torch


def main():
    args = sys.argv[1:]
    nbytes, iters, out = 256 << 20, 20, None
    i = 0
    while i < len(args):
        if args[i] == "--bytes":
            nbytes = int(args[i + 1]); i += 2
        elif args[i] == "--iters":
            iters = int(args[i + 1]); i += 2
        else:
            out = args[i]; i += 1
    host = torch.ones(nbytes, dtype=torch.uint8).pin_memory()
    d1 = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    d2 = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    s = torch.cuda.Stream()
    ops = {
        "H2D": lambda: d1.copy_(host, non_blocking=True),
        "D2H": lambda: host.copy_(d1, non_blocking=True),
        "D2D": lambda: d2.copy_(d1, non_blocking=True),
    }
    res = {"tool": "torch_bandwidth.py", "torch": torch.__version__, "device": torch.cuda.get_device_name(0),
           "bytes": nbytes, "iterations": iters}
    with torch.cuda.stream(s):
        for kind, op in ops.items():
            reps = []
            for _ in range(3):
                for _ in range(2):
                    op()
                e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                e0.record(s)
                for _ in range(iters):
                    op()
                e1.record(s)
                e1.synchronize()
                reps.append(nbytes * iters / (e0.elapsed_time(e1) / 1e3) / 1e9)
            reps.sort()
            res[kind + "_GBps_median"] = reps[1]
            res[kind + "_GBps_all"] = reps
            print(f"torch pinned {kind}: {reps[1]:.1f} GB/s (median of 3; {iters} x {nbytes >> 20} MiB)")
    if out:
        with open(out, "w") as f:
            json.dump(res, f, indent=2)


if __name__ == "__main__":
    main()
