#!/usr/bin/env python3
"""The mixed stream of scripts/bench-slurm.sh (STREAM=openb): the shapes of the openb trace's pods.

  openb-shapes.py --jobs 2000 --cpus 96 --memory-mib 393216 --gpus 8 stream  > FILE
  openb-shapes.py ... arrays                                                   > FILE

Takes the first JOBS pods of data/alibaba-gpu-v2023-openb/openb_pod_list_default.csv in creation
order that ask for CPUs and memory and fit one node of the benchmark's cluster (CPUS, MEMORY_MIB, GPUS), each as
(GPUs, CPUs, MiB): a fraction of a GPU rounded up to one whole GPU (Slurm binds whole GPUs), the
CPUs rounded up to whole CPUs (Slurm's --cpus-per-task), the same jobs for both halves.

  stream: one line per job in the trace's order, "gpus cpu_milli memory_mib"
          (scripts/bench/submit-stream.py --shapes, gpupool's half)
  arrays: one line per distinct shape in the order of its first job, "count gpus cpus memory_mib"
          (one `sbatch --array` each, Slurm alone's half: the fewest submissions for Slurm)

Prints to stderr how many pods were left out for not fitting a node, and the stream's totals.
"""
import argparse
import csv
import math
import os
import sys

TRACE = os.path.join(os.path.dirname(__file__), "..", "..", "data", "alibaba-gpu-v2023-openb",
                     "openb_pod_list_default.csv")


def shapes(path, jobs, cpus, memory_mib, gpus):
    with open(path, newline="") as f:
        pods = sorted(csv.DictReader(f), key=lambda row: int(row["creation_time"]))
    out, skipped = [], 0
    for pod in pods:
        num_gpu, gpu_milli = int(pod["num_gpu"]), int(pod["gpu_milli"])
        # openb gives a shared GPU as num_gpu 1 with gpu_milli < 1000: one whole GPU here.
        pod_gpus = 1 if num_gpu == 1 and gpu_milli > 0 else num_gpu
        pod_cpus = math.ceil(int(pod["cpu_milli"]) / 1000)
        pod_memory = int(pod["memory_mib"])
        # No memory asked: Slurm reads --mem=0 as the whole node, gpupool's validation refuses it.
        if pod_gpus > gpus or pod_cpus > cpus or pod_memory > memory_mib or min(pod_cpus,
                                                                                pod_memory) == 0:
            skipped += 1
            continue
        out.append((pod_gpus, pod_cpus, pod_memory))
        if len(out) == jobs:
            break
    return out, skipped


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--cpus", type=int, default=96)
    parser.add_argument("--memory-mib", type=int, default=393216)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--trace", default=TRACE)
    parser.add_argument("form", choices=["stream", "arrays"])
    args = parser.parse_args()
    stream, skipped = shapes(args.trace, args.jobs, args.cpus, args.memory_mib, args.gpus)
    if len(stream) < args.jobs:
        sys.exit(f"{args.trace}: only {len(stream)} pods fit a node, {args.jobs} asked")
    if args.form == "stream":
        for g, c, m in stream:
            print(g, c * 1000, m)
    else:
        counts = {}
        for shape in stream:
            counts[shape] = counts.get(shape, 0) + 1  # dicts keep the order of first appearance
        for (g, c, m), n in counts.items():
            print(n, g, c, m)
    print(f"openb stream: {len(stream)} jobs ({skipped} earlier "
          f"{'pod' if skipped == 1 else 'pods'} asking for no memory or fitting no node of {args.cpus} CPUs, {args.memory_mib} MiB, {args.gpus} GPUs left out); "
          f"{sum(s[0] for s in stream)} GPUs, {sum(s[1] for s in stream)} CPUs, "
          f"{sum(s[2] for s in stream) // 1024} GiB asked; "
          f"{sum(1 for s in stream if s[0] == 0)} CPU-only jobs; "
          f"{len(set(stream))} distinct shapes", file=sys.stderr)


if __name__ == "__main__":
    main()
