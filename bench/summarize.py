#!/usr/bin/env python3
"""Markdown tables from convjit_bench's Google Benchmark JSON output.

    summarize.py [--shapes shapes.json] [--peak GFLOPS] RUN.json [RUN2.json ...]

Per file (one thread count each): conv forward GFLOP/s per method (median over repetitions),
the ratios generic/im2col+OpenBLAS, generic/naive, generic/oneDNN, % of FMA peak, geometric
means over all conv shapes and over the seed_chain shapes, the issue targets, the first-call
table and the pooling table. With files of different thread counts, also the thread scaling of
the generic tier; for convjit_seed_bench output, the training-step table. Python 3 standard
library only.
"""
import argparse
import json
import math
import os
import statistics
import sys
from collections import defaultdict

SKIP_PARTS = {"real_time", "manual_time", "process_time"}

TIER_METHODS = [
    # (key, column title): convjit's tiers, shown when the run has them
    (("nchw", "generic"), "generic nchw"),
    (("nhwc", "generic"), "generic nhwc"),
    (("nchw", "xbyak"), "xbyak nchw"),
    (("nhwc", "xbyak"), "xbyak nhwc"),
    (("nchw", "xbyak_avx2"), "xbyak≤avx2 nchw"),
    (("nhwc", "xbyak_avx2"), "xbyak≤avx2 nhwc"),
    (("nchw", "llvm"), "llvm nchw"),
    (("nhwc", "llvm"), "llvm nhwc"),
    (("nchw", "auto"), "auto nchw"),
    (("nhwc", "auto"), "auto nhwc"),
]
BASELINE_METHODS = [
    (("nchw", "naive"), "naive"),
    (("nchw", "im2col_openblas"), "im2col+OpenBLAS"),
    (("nchw", "onednn_plain"), "oneDNN plain nchw"),
    (("any", "onednn_blocked"), "oneDNN blocked"),
    (("nhwc", "onednn_wany"), "oneDNN nhwc (w any)"),
    (("nhwc", "onednn_plain"), "oneDNN plain nhwc"),
]
CONV_METHODS = TIER_METHODS + BASELINE_METHODS
GENERIC_KEYS = [("nchw", "generic"), ("nhwc", "generic")]
CONVJIT_KEYS = [k for k, _ in TIER_METHODS]
ONEDNN_KEYS = [("nchw", "onednn_plain"), ("any", "onednn_blocked"), ("nhwc", "onednn_wany"), ("nhwc", "onednn_plain")]

POOL_METHODS = [
    (("nchw", "generic"), "generic nchw"),
    (("nhwc", "generic"), "generic nhwc"),
    (("nchw", "naive"), "naive nchw"),
    (("nchw", "onednn_plain"), "oneDNN nchw"),
    (("nhwc", "onednn_plain"), "oneDNN nhwc"),
]

TIME_SCALE = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def split_name(run_name):
    return [p for p in run_name.split("/") if p not in SKIP_PARTS and ":" not in p]


def load_run(path):
    with open(path) as f:
        doc = json.load(f)
    ctx = doc.get("context", {})
    threads = int(ctx.get("convjit_bench_threads", "1"))
    peak = float(ctx["fma_peak_gflops_per_core"]) if "fma_peak_gflops_per_core" in ctx else None
    try:
        peak_avx512 = float(ctx.get("fma_peak_gflops_avx512", ""))
    except ValueError:
        peak_avx512 = None  # "no AVX-512"
    # name -> list of per-iteration-run entries, or the median aggregate
    medians, samples, errors, labels = {}, defaultdict(list), {}, {}
    for b in doc.get("benchmarks", []):
        name = tuple(split_name(b.get("run_name", b["name"])))
        if b.get("error_occurred"):
            errors[name] = b.get("error_message", "error")
            continue
        if b.get("label"):
            labels[name] = b["label"]
        if b.get("run_type") == "aggregate":
            if b.get("aggregate_name") == "median":
                medians[name] = b
        else:
            samples[name].append(b)
    data = {}
    for name, entries in samples.items():
        if name not in medians:
            data[name] = aggregate_median(entries)
    data.update(medians)
    return {"path": path, "threads": threads, "peak": peak, "peak_avx512": peak_avx512, "data": data, "errors": errors, "labels": labels,
            "context": ctx}


def aggregate_median(entries):
    out = {}
    for key in entries[0]:
        vals = [e[key] for e in entries if isinstance(e.get(key), (int, float)) and not isinstance(e.get(key), bool)]
        if len(vals) == len(entries):
            out[key] = statistics.median(vals)
        else:
            out[key] = entries[0][key]
    return out


def seconds(entry):
    return entry["real_time"] * TIME_SCALE.get(entry.get("time_unit", "ns"), 1e-9)


def fmt(v, digits=3):
    if v is None:
        return "–"
    if v == 0:
        return "0"
    mag = math.floor(math.log10(abs(v)))
    decimals = max(0, digits - 1 - mag)
    return f"{v:.{decimals}f}"


def fmt_ratio(v):
    return "–" if v is None else f"{v:.2f}×"


def geomean(vals):
    vals = [v for v in vals if v is not None and v > 0]
    if not vals:
        return None
    return math.exp(sum(math.log(v) for v in vals) / len(vals))


def ratio(a, b):
    return a / b if a and b else None


def conv_shapes_in(run):
    seen = []
    for name in run["data"]:
        if len(name) >= 2 and name[0] == "conv_fwd" and name[1] not in seen:
            seen.append(name[1])
    for name in run["errors"]:
        if len(name) >= 2 and name[0] == "conv_fwd" and name[1] not in seen:
            seen.append(name[1])
    return seen


def gflops(run, shape, key):
    e = run["data"].get(("conv_fwd", shape) + key)
    return e.get("GFLOP/s") if e else None


def best(values):
    vals = [v for v in values if v]
    return max(vals) if vals else None


def best_key(g, keys):
    keys = [k for k in keys if g.get(k)]
    return max(keys, key=lambda k: g[k]) if keys else None


def peak_of(run, shape, key):
    """FMA peak (all threads) of the ISA that method ran: a compiled kernel's name ends in its ISA;
    tier 0 and the baselines count as AVX2 unless they are oneDNN on an AVX-512 host."""
    per_core = run["peak"]
    label = run["labels"].get(("conv_fwd", shape) + key, "") if key else ""
    wide = label.endswith("__avx512") or (key in ONEDNN_KEYS and run.get("peak_avx512"))
    if wide and run.get("peak_avx512"):
        per_core = run["peak_avx512"]
    return per_core * run["threads"]


def conv_rows(run):
    rows = []
    for shape in conv_shapes_in(run):
        g = {key: gflops(run, shape, key) for key, _ in CONV_METHODS}
        mflop = None
        for key, _ in CONV_METHODS:
            e = run["data"].get(("conv_fwd", shape) + key)
            if e and "MFLOP" in e:
                mflop = e["MFLOP"]
                break
        gen = g[("nchw", "generic")]
        gen_best = best(g[k] for k in GENERIC_KEYS)
        any_key = best_key(g, CONVJIT_KEYS)
        any_best = g[any_key] if any_key else None
        dnn_best = best(g[k] for k in ONEDNN_KEYS)
        peak = peak_of(run, shape, ("nchw", "generic"))
        any_peak = peak_of(run, shape, any_key)
        rows.append({
            "shape": shape, "mflop": mflop, "g": g,
            "vs_im2col": ratio(gen, g[("nchw", "im2col_openblas")]),
            "vs_naive": ratio(gen, g[("nchw", "naive")]),
            "vs_onednn": ratio(gen_best, dnn_best),
            "peak": (gen_best / peak * 100) if gen_best else None,
            "best_vs_im2col": ratio(any_best, g[("nchw", "im2col_openblas")]),
            "best_vs_onednn": ratio(any_best, dnn_best),
            "best_peak": (any_best / any_peak * 100) if any_best else None,
        })
    return rows


def present(rows, methods):
    return [(k, t) for k, t in methods if any(r["g"].get(k) for r in rows)]


def pct(v):
    return "–" if v is None else f"{v:.1f}%"


def print_table(head, body):
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join(["---"] + ["--:"] * (len(head) - 1)) + "|")
    for cells in body:
        print("| " + " | ".join(cells) + " |")


def geomean_rows(rows):
    out = [("geomean, all conv", rows)]
    seed = [r for r in rows if r["shape"].startswith("seed_chain")]
    if seed:
        out.append(("geomean, seed_chain", seed))
    return out


def print_conv_table(run, rows):
    t = run["threads"]
    ts = f"{t} thread{'s' if t != 1 else ''}"
    tiers = present(rows, TIER_METHODS)
    base = present(rows, BASELINE_METHODS)
    print(f"### Conv forward, {ts}: convjit tiers, GFLOP/s (median of repetitions)\n")
    head = ["shape", "MFLOP"] + [title for _, title in tiers] + ["best tier / im2col", "best tier / oneDNN",
                                                                  "best tier % peak"]
    body = []
    for r in rows:
        body.append([r["shape"], fmt(r["mflop"])] + [fmt(r["g"][k]) for k, _ in tiers] +
                    [fmt_ratio(r["best_vs_im2col"]), fmt_ratio(r["best_vs_onednn"]), pct(r["best_peak"])])
    for title, sel in geomean_rows(rows):
        body.append([f"**{title}**", ""] + [fmt(geomean([r["g"][k] for r in sel])) for k, _ in tiers] +
                    [fmt_ratio(geomean([r[k] for r in sel])) for k in ("best_vs_im2col", "best_vs_onednn")] +
                    [pct(geomean([r["best_peak"] for r in sel]))])
    print_table(head, body)
    print()
    print(f"### Conv forward, {ts}: baselines, GFLOP/s, and the generic tier's ratios\n")
    head = ["shape"] + [title for _, title in base] + ["gen/im2col", "gen/naive", "gen/oneDNN", "gen % peak"]
    body = []
    for r in rows:
        body.append([r["shape"]] + [fmt(r["g"][k]) for k, _ in base] +
                    [fmt_ratio(r["vs_im2col"]), fmt_ratio(r["vs_naive"]), fmt_ratio(r["vs_onednn"]), pct(r["peak"])])
    for title, sel in geomean_rows(rows):
        body.append([f"**{title}**"] + [fmt(geomean([r["g"][k] for r in sel])) for k, _ in base] +
                    [fmt_ratio(geomean([r[k] for r in sel])) for k in ("vs_im2col", "vs_naive", "vs_onednn")] +
                    [pct(geomean([r["peak"] for r in sel]))])
    print_table(head, body)
    print()
    print("gen/im2col and gen/naive: generic NCHW over the NCHW baseline. gen/oneDNN: the better generic layout "
          "over the best oneDNN variant. best tier: the fastest convjit tier and layout (generic, xbyak, llvm, auto). "
          f"% peak: over the measured FMA peak of the ISA the method ran ({run['peak']:g} GFLOP/s AVX2"
          + (f", {run['peak_avx512']:g} AVX-512" if run.get("peak_avx512") else "") + f" per core) × {t} thread(s).\n")
    errs = {k: v for k, v in run["errors"].items() if k and k[0] == "conv_fwd"}
    ref_only = {k: v for k, v in errs.items() if "ref:any" in v}
    other = {k: v for k, v in errs.items() if k not in ref_only}
    if ref_only:
        print(f"oneDNN plain nhwc (nhwc + ohwi weights) runs oneDNN's `ref:any` kernel; not timed above 20 MFLOP "
              f"({len(ref_only)} shapes, \"–\").\n")
    if other:
        print("Skipped / failed:")
        for k, v in other.items():
            print(f"- `{'/'.join(k)}`: {v}")
        print()


def print_targets(run, rows):
    if run["threads"] != 1:
        return
    print("### Issue targets (1 thread)\n")
    g_all = geomean([r["vs_im2col"] for r in rows])
    seed = [r for r in rows if r["shape"].startswith("seed_chain")]
    g_seed = geomean([r["vs_im2col"] for r in seed])
    naive = [(r["vs_naive"], r["shape"]) for r in rows if r["vs_naive"] is not None]
    worst = min(naive) if naive else None

    def verdict(v, goal):
        return "–" if v is None else ("met" if v >= goal else "**missed**")

    print("| target | value | verdict |")
    print("|---|--:|---|")
    print(f"| generic/im2col+OpenBLAS geomean, all conv ≥ 0.8× | {fmt_ratio(g_all)} | {verdict(g_all, 0.8)} |")
    print(f"| generic/im2col+OpenBLAS geomean, seed_chain ≥ 2× | {fmt_ratio(g_seed)} | {verdict(g_seed, 2.0)} |")
    if worst:
        print(f"| generic/naive ≥ 5× on every shape (worst: {worst[1]}) | {fmt_ratio(worst[0])} | "
              f"{verdict(worst[0], 5.0)} |")
    # The JIT issue's targets, per layout, on the runtime in steady state (auto: what a user gets).
    def layout_vs(layout, baselines):
        vals = [ratio(r["g"].get((layout, "auto")), best(r["g"].get(k) for k in baselines)) for r in rows]
        return geomean(vals)

    auto_vs_generic = geomean([ratio(r["g"].get(("nchw", "auto")), r["g"].get(("nchw", "generic"))) for r in rows])
    auto_vs_generic_seed = geomean([ratio(r["g"].get(("nchw", "auto")), r["g"].get(("nchw", "generic")))
                                    for r in seed])
    nhwc = layout_vs("nhwc", [("any", "onednn_blocked")])
    nchw = layout_vs("nchw", [("nchw", "onednn_plain"), ("any", "onednn_blocked")])
    if auto_vs_generic:
        print(f"| auto NHWC / oneDNN blocked, geomean ≥ 1.0× | {fmt_ratio(nhwc)} | {verdict(nhwc, 1.0)} |")
        print(f"| auto NCHW / faster of oneDNN plain and blocked, geomean ≥ 1.0× | {fmt_ratio(nchw)} | "
              f"{verdict(nchw, 1.0)} |")
        print(f"| auto / generic NCHW geomean ≥ 1.5× | {fmt_ratio(auto_vs_generic)} | {verdict(auto_vs_generic, 1.5)} |")
        print(f"| auto / generic NCHW on seed_chain ≥ 3× | {fmt_ratio(auto_vs_generic_seed)} | "
              f"{verdict(auto_vs_generic_seed, 3.0)} |")
    below = [r["shape"] for r in rows if r["vs_im2col"] is not None and r["vs_im2col"] < 0.8]
    if below:
        print(f"\nShapes where generic is below 0.8× im2col+OpenBLAS: {', '.join(below)}.")
    print()


PEAK_TARGET_SHAPES = ["seed_issue", "resnet_conv1", "resnet_3x3_56", "resnet_3x3_28", "resnet_3x3_14",
                      "resnet_1x1_56", "conv_5x5", "batch32_3x3", "dilated_3x3"]
NHWC_ONEDNN = [("nhwc", "onednn_wany"), ("any", "onednn_blocked")]
NCHW_ONEDNN = [("nchw", "onednn_plain"), ("any", "onednn_blocked")]


def onednn_capped_run(run, runs):
    """The oneDNN-only run of the same shapes and threads with ONEDNN_MAX_CPU_ISA set, if given."""
    for other in runs:
        ctx = other["context"]
        if other is not run and "ONEDNN_MAX_CPU_ISA" in ctx and other["threads"] == run["threads"] and \
                ctx.get("shapes_file") == run["context"].get("shapes_file"):
            return other
    return None


def print_isa_targets(run, rows, runs):
    """The ISA issue's targets: auto per layout against oneDNN's best layout-matched variant (format
    any, reorders excluded), % of the measured AVX-512 peak, the short-row and seed shapes; and, with
    a capped oneDNN run beside it, the same ratios against oneDNN at that ISA."""
    if "ONEDNN_MAX_CPU_ISA" in run["context"]:
        return
    t = run["threads"]
    print(f"### ISA issue targets, {t} thread{'s' if t != 1 else ''} (auto: the runtime in steady state)\n")
    capped = onednn_capped_run(run, runs)
    cap_name = capped["context"]["ONEDNN_MAX_CPU_ISA"] if capped else None

    def vs(layout, keys, source, large_only=False):
        vals = [ratio(r["g"].get((layout, "auto")), best(gflops(source, r["shape"], k) for k in keys)) for r in rows
                if not large_only or (r["mflop"] or 0) >= 50]
        return geomean(vals)

    head = ["ratio (geomean over the file's conv shapes)", "vs oneDNN, its best ISA"] + \
           ([f"vs oneDNN ≤ {cap_name}"] if capped else [])
    print("| " + " | ".join(head) + " |")
    print("|---|" + "--:|" * (len(head) - 1))
    for large_only in (False, True):
        for layout, keys in (("nhwc", NHWC_ONEDNN), ("nchw", NCHW_ONEDNN)):
            cells = [f"auto {layout.upper()} / oneDNN best of {', '.join(k[1] for k in keys)}"
                     + (", shapes of ≥ 50 MFLOP" if large_only else ""), fmt_ratio(vs(layout, keys, run, large_only))]
            if capped:
                cells.append(fmt_ratio(vs(layout, keys, capped, large_only)))
            print("| " + " | ".join(cells) + " |")
    print()
    body = []
    for r in rows:
        dnn = best(r["g"].get(k) for k in ONEDNN_KEYS)
        auto = best(r["g"].get((l, "auto")) for l in ("nchw", "nhwc"))
        wide = run.get("peak_avx512")
        jit = best(r["g"].get((l, "xbyak")) for l in ("nchw", "nhwc"))
        cells = [r["shape"], fmt(auto), fmt(dnn), fmt_ratio(ratio(auto, dnn)),
                 pct(jit / (wide * t) * 100) if jit and wide else "–"]
        if r["shape"] in PEAK_TARGET_SHAPES:
            cells.append("≥ 60% of AVX-512 peak")
        elif r["shape"] == "resnet_3x3_7" or r["shape"].startswith("depthwise"):
            cells.append("≥ 0.9× oneDNN")
        elif r["shape"].startswith("seed_chain"):
            cells.append("≥ 3× oneDNN")
        else:
            cells.append("")
        body.append(cells)
    print_table(["shape", "auto, best layout", "oneDNN best", "auto / oneDNN", "xbyak % AVX-512 peak", "target"], body)
    print()


def print_first_call(run):
    rows = [(name[1], e) for name, e in run["data"].items() if name and name[0] == "first_call"]
    if not rows:
        return
    t = run["threads"]
    print(f"### First call of a fresh configuration vs later calls, {t} thread{'s' if t != 1 else ''} "
          "(free function, default runtime; medians)\n")
    print("| shape | first call µs | later calls µs | first/later | generic steady µs | first/generic |")
    print("|---|--:|--:|--:|--:|--:|")
    ratios = []
    for shape, e in rows:
        g = run["data"].get(("conv_fwd", shape, "nchw", "generic"))
        gen_us = seconds(g) * 1e6 if g else None
        r = ratio(e.get("first_us"), gen_us)
        ratios.append(r)
        print(f"| {shape} | {fmt(e.get('first_us'))} | {fmt(e.get('later_us'))} | "
              f"{fmt_ratio(e.get('first_over_later'))} | {fmt(gen_us)} | {fmt_ratio(r)} |")
    print(f"| **geomean** | | | {fmt_ratio(geomean([e.get('first_over_later') for _, e in rows]))} | | "
          f"{fmt_ratio(geomean(ratios))} |")
    print("\nfirst call: one call of a configuration the process has not seen (a post-op/mode variant per "
          "repetition); later calls: median of the calls right after it (they switch to the JIT tier once it is "
          "compiled, so first/later > 1 mostly measures the JIT's gain); generic steady: the generic tier's "
          "steady-state NCHW time, so first/generic is the set-up a first call costs.\n")


def print_seed_training(run):
    """convjit_seed_bench: one training step of the seed network per variant and batch, and its first step."""
    steps = {(name[1], name[2]): e for name, e in run["data"].items() if len(name) == 3 and name[0] == "seed_step"}
    if not steps:
        return
    t = run["threads"]
    print(f"### Seed network training step (forward, every parameter's gradient), {t} thread"
          f"{'s' if t != 1 else ''}, medians\n")
    print("| batch | variant | µs per step | images/s | conv GFLOP/s | vs generic | vs oneDNN |")
    print("|--:|---|--:|--:|--:|--:|--:|")
    for batch in sorted({b for _, b in steps}, key=int):
        base, dnnl = steps.get(("generic", batch)), steps.get(("onednn", batch))
        for variant in ("generic", "auto", "llvm", "onednn"):
            e = steps.get((variant, batch))
            if not e:
                continue
            print(f"| {batch} | {variant} | {fmt(seconds(e) * 1e6)} | {fmt(e.get('items_per_second'))} | "
                  f"{fmt(e.get('GFLOP/s'))} | "
                  f"{fmt_ratio(ratio(seconds(base), seconds(e)) if base else None)} | "
                  f"{fmt_ratio(ratio(seconds(dnnl), seconds(e)) if dnnl else None)} |")
    firsts = {name[1]: e for name, e in run["data"].items() if len(name) == 2 and name[0] == "seed_first_step"}
    if firsts:
        print("\n| variant | first forward ms | first gradient ms |")
        print("|---|--:|--:|")
        for variant, e in firsts.items():
            print(f"| {variant} | {fmt(e.get('first_forward_ms'))} | {fmt(e.get('first_gradient_ms'))} |")
        print("\nfirst step: a fresh runtime (oneDNN: fresh primitives, its primitive cache off) and the "
              "design's batch of 5, timed to the first loss and to the first gradient (forward included).")
    print()


def print_backward(run, op, title):
    """Backward data or filter: GFLOP/s per method, auto over oneDNN's backward primitive per layout."""
    shapes = []
    for name in list(run["data"]) + list(run["errors"]):
        if len(name) >= 2 and name[0] == op and name[1] not in shapes:
            shapes.append(name[1])
    if not shapes:
        return
    methods = [(("nchw", "generic"), "generic nchw"), (("nhwc", "generic"), "generic nhwc"),
               (("nchw", "auto"), "auto nchw"), (("nhwc", "auto"), "auto nhwc"),
               (("nchw", "im2col_openblas"), "im2col+OpenBLAS"),
               (("nchw", "onednn_any"), "oneDNN nchw"), (("nhwc", "onednn_any"), "oneDNN nhwc")]
    t = run["threads"]
    print(f"### {title}, {t} thread{'s' if t != 1 else ''}: GFLOP/s (medians)\n")
    head = ["shape"] + [m for _, m in methods] + ["auto/oneDNN nchw", "auto/oneDNN nhwc"]
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join(["---"] + ["--:"] * (len(head) - 1)) + "|")
    ratios = {"nchw": [], "nhwc": []}
    for shape in shapes:
        g = {}
        for key, _ in methods:
            e = run["data"].get((op, shape) + key)
            g[key] = e.get("GFLOP/s") if e else None
        cells = [shape] + [fmt(g[k]) for k, _ in methods]
        for lay in ("nchw", "nhwc"):
            r = ratio(g[(lay, "auto")], g[(lay, "onednn_any")])
            if r:
                ratios[lay].append(r)
            cells.append(fmt_ratio(r))
        print("| " + " | ".join(cells) + " |")
    print("| **geomean** | " + " | ".join([""] * len(methods)) + " | " +
          f"{fmt_ratio(geomean(ratios['nchw']))} | {fmt_ratio(geomean(ratios['nhwc']))} |")
    low = {lay: min(v) if v else None for lay, v in ratios.items()}
    print(f"\nauto: the default runtime in steady state; oneDNN: its backward primitive, format any, reorders "
          f"excluded. Lowest ratio: nchw {fmt_ratio(low['nchw'])}, nhwc {fmt_ratio(low['nhwc'])}.\n")


def print_pool_bound(run):
    """Pooling forward and backward against oneDNN in the same layout and the copy bound of the same bytes.

    convjit: the runtime in steady state (`auto`) where the run has it, else tier 0 (`generic`)."""
    shapes = []
    for name in run["data"]:
        if len(name) >= 2 and name[0] in ("pool_fwd", "pool_bwd") and name[1] not in shapes:
            shapes.append(name[1])
    if not any(("pool_bwd", s, "any", "copy") in run["data"] for s in shapes):
        return
    t = run["threads"]
    print(f"### Pooling against the bandwidth bound, {t} thread{'s' if t != 1 else ''}: µs per call\n")
    print("| op | shape | copy of the bytes | generic nchw | generic nhwc | auto nchw | auto nhwc | oneDNN nchw | "
          "oneDNN nhwc | copy/convjit nchw | copy/convjit nhwc | convjit/oneDNN nchw | convjit/oneDNN nhwc |")
    print("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    for op in ("pool_fwd", "pool_bwd"):
        for shape in shapes:
            us = {}
            for key in (("any", "copy"), ("nchw", "generic"), ("nhwc", "generic"), ("nchw", "auto"), ("nhwc", "auto"),
                        ("nchw", "onednn_plain"), ("nhwc", "onednn_plain")):
                e = run["data"].get((op, shape) + key)
                us[key] = seconds(e) * 1e6 if e else None
            copy = us[("any", "copy")]
            convjit = {lay: us[(lay, "auto")] or us[(lay, "generic")] for lay in ("nchw", "nhwc")}
            cells = [op, shape] + [fmt(v) if v else "–" for v in us.values()]
            cells += [fmt_ratio(ratio(copy, convjit[lay])) for lay in ("nchw", "nhwc")]
            cells += [fmt_ratio(ratio(us[(lay, "onednn_plain")], convjit[lay])) for lay in ("nchw", "nhwc")]
            print("| " + " | ".join(cells) + " |")
    print("\ncopy: one memcpy moving the bytes the op must read and write (forward x and y; mean backward dy "
          "and dx; max backward also x and y); auto: the default runtime in steady state (compiled rows where "
          "they run, forward and backward); convjit: auto, else generic. copy/convjit ≥ 0.83 is within 1.2× of the "
          "bound; convjit/oneDNN > 1 is convjit faster.\n")


def print_pool(run):
    shapes = []
    for name in run["data"]:
        if len(name) >= 2 and name[0] == "pool_fwd" and name[1] not in shapes:
            shapes.append(name[1])
    if not shapes:
        return
    t = run["threads"]
    print(f"### Pooling forward, {t} thread{'s' if t != 1 else ''} — µs per call (GB/s moved, in + out)\n")
    head = ["shape"] + [title for _, title in POOL_METHODS] + ["gen/naive", "gen/oneDNN"]
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join(["---"] + ["--:"] * (len(head) - 1)) + "|")
    for shape in shapes:
        cells, secs = [shape], {}
        for key, _ in POOL_METHODS:
            e = run["data"].get(("pool_fwd", shape) + key)
            if not e:
                cells.append("–")
                continue
            s = seconds(e)
            secs[key] = s
            gbs = e.get("bytes_per_second")
            cells.append(f"{fmt(s * 1e6)} ({fmt(gbs / 1e9) if gbs else '–'})")
        gen = min([secs[k] for k in (("nchw", "generic"), ("nhwc", "generic")) if k in secs] or [0]) or None
        gen_nchw = secs.get(("nchw", "generic"))
        naive = secs.get(("nchw", "naive"))
        dnn = min([secs[k] for k in (("nchw", "onednn_plain"), ("nhwc", "onednn_plain")) if k in secs] or [0]) or None
        cells.append(fmt_ratio(naive / gen_nchw if naive and gen_nchw else None))
        cells.append(fmt_ratio(dnn / gen if dnn and gen else None))
        print("| " + " | ".join(cells) + " |")
    print("\ngen/naive: speed of generic NCHW over the naive NCHW loop; gen/oneDNN: best generic layout "
          "over the best oneDNN layout (>1 = generic faster).\n")


def print_scaling(runs, shapes_meta):
    by_t = {}
    for r in runs:
        by_t.setdefault(r["threads"], r)
    if len(by_t) < 2:
        return
    ts = sorted(by_t)
    t1, tn = by_t[ts[0]], by_t[ts[-1]]
    print(f"### Thread scaling, {ts[-1]} vs {ts[0]} thread(s) — GFLOP/s and speedup\n")
    print("Target: ≥ 1.7× at 2 threads on shapes with n ≥ 4 or oc ≥ 64 (judged on the better generic layout).\n")
    head = ["shape", "n", "oc", f"generic nchw {ts[0]}T", f"generic nchw {ts[-1]}T", "speedup nchw",
            f"generic nhwc {ts[0]}T", f"generic nhwc {ts[-1]}T", "speedup nhwc", "speedup best",
            "best tier speedup", "im2col speedup", "oneDNN best speedup", "target"]
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join(["---"] + ["--:"] * (len(head) - 2) + ["---"]) + "|")
    for shape in conv_shapes_in(t1):
        meta = shapes_meta.get(shape, {})
        n, oc = meta.get("n"), meta.get("oc")
        a = {k: gflops(t1, shape, k) for k, _ in CONV_METHODS}
        b = {k: gflops(tn, shape, k) for k, _ in CONV_METHODS}
        best_a = max([v for v in (a[("nchw", "generic")], a[("nhwc", "generic")]) if v] or [0]) or None
        best_b = max([v for v in (b[("nchw", "generic")], b[("nhwc", "generic")]) if v] or [0]) or None
        tier_a, tier_b = best(a[k] for k in CONVJIT_KEYS), best(b[k] for k in CONVJIT_KEYS)
        dnn_a = max([a[k] for k in ONEDNN_KEYS if a[k]] or [0]) or None
        dnn_b = max([b[k] for k in ONEDNN_KEYS if b[k]] or [0]) or None
        sp = ratio(best_b, best_a)
        applies = n is not None and (n >= 4 or oc >= 64)
        if not applies:
            verdict = "n/a" if n is not None else "?"
        elif sp is None:
            verdict = "–"
        else:
            verdict = "met" if sp >= 1.7 else "**missed**"
        cells = [shape, str(n) if n is not None else "?", str(oc) if oc is not None else "?",
                 fmt(a[("nchw", "generic")]), fmt(b[("nchw", "generic")]),
                 fmt_ratio(ratio(b[("nchw", "generic")], a[("nchw", "generic")])),
                 fmt(a[("nhwc", "generic")]), fmt(b[("nhwc", "generic")]),
                 fmt_ratio(ratio(b[("nhwc", "generic")], a[("nhwc", "generic")])),
                 fmt_ratio(sp), fmt_ratio(ratio(tier_b, tier_a)),
                 fmt_ratio(ratio(b[("nchw", "im2col_openblas")], a[("nchw", "im2col_openblas")])),
                 fmt_ratio(ratio(dnn_b, dnn_a)), verdict]
        print("| " + " | ".join(cells) + " |")
    print()


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", help="Google Benchmark JSON files (--benchmark_out / --benchmark_format=json)")
    ap.add_argument("--shapes", default=os.path.join(here, "shapes.json"),
                    help="shapes.json, for n and oc in the scaling table")
    ap.add_argument("--peak", type=float, default=None,
                    help="FMA peak GFLOP/s per core (default: the one the run measured; runs older than that need it)")
    args = ap.parse_args()

    shapes_meta = {}
    try:
        with open(args.shapes) as f:
            for s in json.load(f).get("conv", []):
                shapes_meta[s["name"]] = s
    except (OSError, ValueError):
        pass

    runs = []
    for path in args.runs:
        try:
            run = load_run(path)
        except (OSError, ValueError, KeyError) as e:
            print(f"summarize.py: cannot read {path}: {e}", file=sys.stderr)
            return 2
        if args.peak:
            run["peak"] = args.peak
        if not run["peak"]:
            print(f"summarize.py: {path} has no measured FMA peak (an older run): give --peak", file=sys.stderr)
            return 2
        runs.append(run)

    for run in runs:
        print(f"## {os.path.basename(run['path'])}: {run['threads']} thread(s)\n")
        quiet = run["context"].get("quiet_runs")
        if isinstance(quiet, dict) and quiet:
            limit = run["context"].get("quiet_max_other_cores", 0.15)
            noisy = {k: v for k, v in quiet.items() if v.get("other_cores", 0) > limit}
            worst = max(v.get("other_cores", 0) for v in quiet.values())
            print(f"Run shape by shape with run_quiet.py: other processes used at most {worst:.2f} cores "
                  f"during a kept shape run (limit {limit}). "
                  + ("Noisy shapes kept: " + ", ".join(f"{k} ({v['other_cores']:.2f})" for k, v in noisy.items())
                     if noisy else "No shape was kept noisy.") + "\n")
        rows = conv_rows(run)
        if rows:
            print_conv_table(run, rows)
            print_targets(run, rows)
            print_isa_targets(run, rows, runs)
        print_first_call(run)
        print_pool(run)
        print_pool_bound(run)
        print_backward(run, "conv_bwd_data", "Conv backward data")
        print_backward(run, "conv_bwd_filter", "Conv backward filter")
        print_seed_training(run)
    print_scaling(runs, shapes_meta)
    return 0


if __name__ == "__main__":
    sys.exit(main())
