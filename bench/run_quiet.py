#!/usr/bin/env python3
"""Run convjit_bench shape by shape on a shared machine, only while nothing else is busy.

    run_quiet.py --bin BUILD/bench/convjit_bench --threads N --out RUN.json [options] [-- extra flags]

For each shape (one fresh process per shape, so first_call sees fresh configurations):
wait until the other processes of the machine use less than --max-other cores, run that shape's
benchmarks, then measure what the rest of the machine used meanwhile (busy time from /proc/stat
minus the benchmark's own CPU time). A shape run while others used more than --max-other cores
on average is run again (up to --tries times; the quietest attempt is kept). The per-shape JSON
outputs are merged into one Google Benchmark JSON file for summarize.py, with the measured
interference per shape in context["quiet_runs"]. Python 3 standard library only; Linux only.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time


def cpu_busy_seconds():
    with open("/proc/stat") as f:
        fields = f.readline().split()[1:]
    vals = [int(v) for v in fields]
    idle = vals[3] + (vals[4] if len(vals) > 4 else 0)  # idle + iowait
    total = sum(vals[:8])  # guest time is already in user
    tick = os.sysconf("SC_CLK_TCK")
    return (total - idle) / tick


def others_load(window):
    b0, t0 = cpu_busy_seconds(), time.monotonic()
    time.sleep(window)
    return (cpu_busy_seconds() - b0) / (time.monotonic() - t0)


def wait_quiet(max_other, window, give_up, log):
    start = time.monotonic()
    while True:
        load = others_load(window)
        if load <= max_other:
            return load
        if time.monotonic() - start > give_up:
            log(f"  machine still busy ({load:.2f} cores) after {give_up:.0f} s; running anyway")
            return load
        log(f"  waiting: others use {load:.2f} cores")


def list_benchmarks(binary, base_args):
    out = subprocess.run([binary] + base_args + ["--benchmark_list_tests=true"], check=True, capture_output=True,
                         text=True).stdout
    return [line.strip() for line in out.splitlines() if line.strip()]


def group_by_shape(names, skip_naive):
    groups = {}
    for name in names:
        parts = name.split("/")
        if len(parts) < 2 or parts[0] not in ("first_call", "conv_fwd", "pool_fwd"):
            continue
        if skip_naive and "naive" in parts:
            continue
        groups.setdefault(parts[1], []).append(name)
    return groups


def run_chunk(binary, base_args, names, out_path):
    regex = "^(" + "|".join(re.escape(n).replace("\\/", "/").replace("\\:", ":") for n in names) + ")$"
    cmd = [binary] + base_args + [f"--benchmark_filter={regex}", f"--benchmark_out={out_path}",
                                  "--benchmark_out_format=json"]
    busy0, t0 = cpu_busy_seconds(), time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _, err = proc.communicate()
    wall = time.monotonic() - t0
    busy = cpu_busy_seconds() - busy0
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}): {err[-2000:]}")
    return wall, busy


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", required=True)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--min-time", default="0.2")
    ap.add_argument("--max-other", type=float, default=0.15, help="cores others may use (average) [0.15]")
    ap.add_argument("--tries", type=int, default=4)
    ap.add_argument("--processes", type=int, default=1,
                    help="run each shape in K fresh processes and keep, per benchmark, the median of their "
                         "medians (thread placement varies per process: at 2 threads on a shared VM a process "
                         "can be 20-30%% off for its whole life) [1]")
    ap.add_argument("--give-up", type=float, default=900, help="seconds to wait for quiet before running anyway")
    ap.add_argument("--only", default=None, help="regex on shape names")
    ap.add_argument("--name-filter", default=None, help="regex on benchmark names (e.g. onednn)")
    ap.add_argument("--skip-naive", action="store_true", help="default when --threads > 1")
    ap.add_argument("--no-interleave", action="store_true",
                    help="run a benchmark's repetitions back to back (default: randomly interleaved with the "
                         "shape's other benchmarks, so a transient slowdown hits several methods once, not one "
                         "method's every repetition)")
    ap.add_argument("extra", nargs="*")
    args = ap.parse_args()

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    base = [f"--threads={args.threads}", f"--benchmark_repetitions={args.reps}",
            "--benchmark_report_aggregates_only=true", f"--benchmark_min_time={args.min_time}"] + args.extra
    if not args.no_interleave:
        base.append("--benchmark_enable_random_interleaving=true")
    skip_naive = args.skip_naive or args.threads > 1
    groups = group_by_shape(list_benchmarks(args.bin, [f"--threads={args.threads}"] + args.extra), skip_naive)
    if args.only:
        groups = {k: v for k, v in groups.items() if re.search(args.only, k)}
    if args.name_filter:
        groups = {k: [n for n in v if re.search(args.name_filter, n)] for k, v in groups.items()}
        groups = {k: v for k, v in groups.items() if v}

    merged, quiet = None, {}
    tmp = args.out + ".part.json"
    for shape, names in groups.items():
        docs = []
        for proc in range(args.processes):
            doc, quiet_info = quiet_run(args, base, shape, names, tmp, log)
            docs.append(doc)
            quiet.setdefault(shape, {"other_cores": 0.0, "attempt": 0})
            quiet[shape]["other_cores"] = max(quiet[shape]["other_cores"], quiet_info["other_cores"])
            quiet[shape]["attempt"] = max(quiet[shape]["attempt"], quiet_info["attempt"])
        doc = docs[0] if len(docs) == 1 else median_of_processes(docs)
        if merged is None:
            merged = doc
        else:
            merged["benchmarks"].extend(doc["benchmarks"])
    if os.path.exists(tmp):
        os.remove(tmp)
    if merged is None:
        log("no benchmarks matched")
        return 1
    merged["context"]["quiet_runs"] = quiet
    merged["context"]["quiet_max_other_cores"] = args.max_other
    merged["context"]["processes_per_shape"] = args.processes
    with open(args.out, "w") as f:
        json.dump(merged, f, indent=1)
    noisy = [s for s, q in quiet.items() if q["other_cores"] > args.max_other]
    log(f"wrote {args.out}; noisy shapes kept: {', '.join(noisy) if noisy else 'none'}")
    return 0


def median_of_processes(docs):
    """One document whose median entries are, field by field, the median over the processes."""
    import statistics
    by_name = {}
    for d in docs:
        for b in d["benchmarks"]:
            if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
                continue
            by_name.setdefault(b["name"], []).append(b)
    out = dict(docs[0])
    out["benchmarks"] = []
    for name, entries in by_name.items():
        ok = [e for e in entries if not e.get("error_occurred")]
        if not ok:
            out["benchmarks"].append(entries[0])
            continue
        m = dict(ok[0])
        for key, value in ok[0].items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                vals = [e[key] for e in ok if isinstance(e.get(key), (int, float))]
                m[key] = statistics.median(vals)
        m["processes"] = len(ok)
        out["benchmarks"].append(m)
    return out


def quiet_run(args, base, shape, names, tmp, log):
    best = None
    for attempt in range(1, args.tries + 1):
        before = wait_quiet(args.max_other, 3.0, args.give_up, log)
        # The benchmark's own CPU time comes from the kernel's accounting of the child.
        r0 = os.times()
        wall, busy = run_chunk(args.bin, base, names, tmp)
        r1 = os.times()
        own = (r1.children_user - r0.children_user) + (r1.children_system - r0.children_system)
        other = max(0.0, (busy - own) / wall)
        log(f"{shape}: {wall:.1f} s, others used {other:.2f} cores (before: {before:.2f})"
            f"{'' if other <= args.max_other else ' -> noisy'}")
        with open(tmp) as f:
            doc = json.load(f)
        if best is None or other < best[0]:
            best = (other, doc, attempt)
        if other <= args.max_other:
            break
    other, doc, attempt = best
    return doc, {"other_cores": round(other, 3), "attempt": attempt}


if __name__ == "__main__":
    sys.exit(main())
