#!/usr/bin/env python3
"""Turns convjit_bench's JSON output into a PNG comparing, per conv shape, the tiers with
im2col+OpenBLAS and oneDNN (GFLOP/s, median of the repetitions, log scale).

    /usr/bin/python3 bench/plot.py threads1.json -o bench/tiers.png   # Debian's python3-matplotlib
"""
import argparse
import json
import re
import sys

# (label, benchmark method paths, colour): a series takes the best of its paths.
SERIES = [
    ("generic (tier 0)", ["nchw/generic"], "#8c8c8c"),
    ("runtime when hot (Xbyak JIT where it wins)", ["nchw/auto"], "#d62728"),
    ("im2col+OpenBLAS", ["nchw/im2col_openblas"], "#1f77b4"),
    ("oneDNN (best of plain and blocked)", ["nchw/onednn_plain", "any/onednn_blocked"], "#2ca02c"),
    ("naive loop", ["nchw/naive"], "#bcbd22"),
]

NAME = re.compile(r"^conv_fwd/(?P<shape>[^/]+)/(?P<method>[^/]+/[^/]+?)(/.*)?_median$")


def load(paths):
    rates, order = {}, []
    for path in paths:
        try:
            with open(path) as f:
                data = json.load(f)
        except (OSError, json.JSONDecodeError) as e:
            sys.exit(f"plot.py: {path}: {e}")
        for b in data.get("benchmarks", []):
            m = NAME.match(b.get("name", ""))
            if not m or "GFLOP/s" not in b:
                continue
            shape = m.group("shape")
            if shape not in order:
                order.append(shape)
            rates[(shape, m.group("method"))] = b["GFLOP/s"]
    return rates, order


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("json", nargs="+", help="convjit_bench --benchmark_out files (format json)")
    parser.add_argument("-o", "--output", default="tiers.png")
    parser.add_argument("--title", default="convjit forward conv, 1 thread, GFLOP/s (higher is better)")
    args = parser.parse_args()
    rates, shapes = load(args.json)
    if not shapes:
        sys.exit("plot.py: no conv_fwd medians with a GFLOP/s counter in the input")

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    width = 0.8 / len(SERIES)
    fig, ax = plt.subplots(figsize=(max(10, 0.75 * len(shapes)), 5.5))
    for i, (label, methods, colour) in enumerate(SERIES):
        values = [max([rates.get((s, m), 0.0) for m in methods]) for s in shapes]
        xs = [j + (i - (len(SERIES) - 1) / 2) * width for j in range(len(shapes))]
        ax.bar(xs, [v if v > 0 else float("nan") for v in values], width, label=label, color=colour)
    ax.set_yscale("log")
    ax.set_xticks(range(len(shapes)))
    ax.set_xticklabels(shapes, rotation=45, ha="right")
    ax.set_ylabel("GFLOP/s")
    ax.set_title(args.title)
    ax.grid(axis="y", which="both", alpha=0.3)
    ax.legend(fontsize=8, ncol=len(SERIES), loc="upper center", bbox_to_anchor=(0.5, -0.3))
    fig.tight_layout()
    fig.savefig(args.output, dpi=110)
    print(f"plot.py: wrote {args.output} ({len(shapes)} shapes)")


if __name__ == "__main__":
    main()
