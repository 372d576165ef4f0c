#!/usr/bin/env python3
"""Submits a stream of jobs to a gpupool server as workflows, for scripts/bench-slurm.sh.

  submit-stream.py --port PORT --jobs 2000 [--batch 100] [--threads 4] [--shapes FILE]

Each workflow carries BATCH top-level tasks (each its own group: independent tasks, like the
elements of a Slurm job array); the workflows are POSTed to /api/pool/default/workflow by THREADS
connections at once, so that the client is not what limits the stream. Every task runs
`sleep 1000` with 1 CPU, 1000 MiB (Slurm's DefMemPerCPU in the benchmark's cluster) and 1 GPU, or
with the shapes of FILE (lines "gpus cpu_milli memory_mib", taken in turn).

Prints one line of JSON: the Unix times of the first request and the last answer, the
workflows and tasks submitted.
"""
import argparse
import http.client
import json
import sys
import threading
import time

AUTH = "Bearer dev:bench:osmo-admin"


def workflow_yaml(name, shapes):
    kinds = sorted(set(shapes))
    lines = [f"workflow:\n  name: {name}\n  resources:"]
    for gpus, cpu_milli, memory_mib in kinds:
        lines.append(f"    r{gpus}-{cpu_milli}-{memory_mib}: {{cpu: {cpu_milli}m, "
                     f"memory: {memory_mib}Mi, storage: 1Gi, gpu: {gpus}}}")
    lines.append("  tasks:")
    for i, (gpus, cpu_milli, memory_mib) in enumerate(shapes):
        lines.append(f"  - {{name: t{i}, image: none, resource: r{gpus}-{cpu_milli}-{memory_mib}, "
                     "command: [sleep, '1000']}")
    return "\n".join(lines) + "\n"


def read_shapes(path):
    shapes = []
    with open(path) as f:
        for line in f:
            if line.strip():
                gpus, cpu_milli, memory_mib = (int(x) for x in line.split())
                shapes.append((gpus, cpu_milli, memory_mib))
    if not shapes:
        sys.exit(f"{path}: no shapes")
    return shapes


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--shapes")
    args = parser.parse_args()
    shapes = read_shapes(args.shapes) if args.shapes else [(1, 1000, 1000)]
    stream = [shapes[i % len(shapes)] for i in range(args.jobs)]
    bodies = [workflow_yaml(f"bench-{n}", stream[i:i + args.batch])
              for n, i in enumerate(range(0, args.jobs, args.batch))]

    lock = threading.Lock()
    errors = []
    next_body = [0]

    def worker():
        conn = http.client.HTTPConnection("127.0.0.1", args.port, timeout=120)
        while True:
            with lock:
                if next_body[0] >= len(bodies) or errors:
                    return
                body = bodies[next_body[0]]
                next_body[0] += 1
            conn.request("POST", "/api/pool/default/workflow", body.encode(),
                         {"Authorization": AUTH, "Content-Type": "application/yaml"})
            res = conn.getresponse()
            text = res.read().decode()
            if res.status != 200:
                with lock:
                    errors.append(f"{res.status} {text[:500]}")

    threads = [threading.Thread(target=worker) for _ in range(args.threads)]
    first = time.time()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    last = time.time()
    if errors:
        sys.exit(f"submission refused: {errors[0]}")
    print(json.dumps({"first_request": first, "last_answer": last, "workflows": len(bodies),
                      "tasks": args.jobs}))


if __name__ == "__main__":
    main()
