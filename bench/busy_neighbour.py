#!/usr/bin/env python3
"""A busy neighbour core: the main job and large forward shapes at the default thread count and on
one thread, with every core free and with one core taken by a spinning process pinned to it.

    python3 bench/busy_neighbour.py [--build DIR] [--rounds N] [--images N]

Conditions alternate within each round (the machine is shared and noisy; medians over rounds).
Prints a table: the median time per condition and the ratios the reliability issue asks for
(default threads with a busy core / one thread, default / one thread with the cores free)."""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys

SHAPES = "conv_fwd/(resnet_3x3_56|resnet_3x3_28|resnet_1x1_56|conv_5x5|batch32_3x3|dilated_3x3)/(nchw|nhwc)/auto"


def spinner(cpu):
    return subprocess.Popen(["taskset", "-c", str(cpu), "sh", "-c", "while :; do :; done"])


def main_job(build, images, threads):
    cmd = [f"{build}/tools/seednet", "--limit", str(images), "--log-every", "1000000"]
    if threads:
        cmd += ["--threads", str(threads)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return float(re.search(r"test accuracy [0-9.]+, ([0-9.]+) s", out).group(1))


def shapes(build, threads):
    cmd = [f"{build}/bench/convjit_bench", f"--threads={threads}", f"--benchmark_filter={SHAPES}",
           "--benchmark_min_time=0.3", "--benchmark_format=json"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return {b["name"].split("/real_time")[0]: b["real_time"] for b in json.loads(out)["benchmarks"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--images", type=int, default=20000)
    a = ap.parse_args()
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        sys.exit("busy_neighbour: needs at least two CPUs")
    default_threads = len(cpus)
    job = {}    # (busy, threads) -> [seconds]
    bench = {}  # (busy, threads) -> {name: [us]}
    for r in range(a.rounds):
        for busy in (False, True):
            spin = spinner(cpus[-1]) if busy else None
            try:
                for threads in (0, 1):
                    job.setdefault((busy, threads), []).append(main_job(a.build, a.images, threads))
                    for name, t in shapes(a.build, threads or default_threads).items():
                        bench.setdefault((busy, threads), {}).setdefault(name, []).append(t)
            finally:
                if spin:
                    spin.kill()
                    spin.wait()
        print(f"round {r + 1}/{a.rounds} done", file=sys.stderr)

    med = statistics.median
    print(f"Busy neighbour: a spinning process pinned to CPU {cpus[-1]}; default threads = {default_threads}; "
          f"medians of {a.rounds} rounds.\n")
    print("| what | free: default | free: 1 thread | default / 1 (free) | busy: default | busy: 1 thread | busy default / 1 thread |")
    print("|---|---|---|---|---|---|---|")
    f0, f1, b0, b1 = (med(job[k]) for k in ((False, 0), (False, 1), (True, 0), (True, 1)))
    print(f"| main job, {a.images} images (s) | {f0:.3f} | {f1:.3f} | {f0 / f1:.2f} | {b0:.3f} | {b1:.3f} | {b0 / b1:.2f} |")
    for name in sorted(bench[(False, 0)]):
        f0, f1, b0, b1 = (med(bench[k][name]) for k in ((False, 0), (False, 1), (True, 0), (True, 1)))
        print(f"| {name} (us) | {f0:.0f} | {f1:.0f} | {f0 / f1:.2f} | {b0:.0f} | {b1:.0f} | {b0 / b1:.2f} |")


if __name__ == "__main__":
    main()
