#!/usr/bin/env python3
"""Seed 004's Jobs through the server: `gpupool apply -f` of batch/v1 Jobs to the real
`gpupool serve` (simulated backend), run as workflows in the caller's default pool, on nodes
that seed 004's machine pools bring up.

The cluster starts with one CPU node and no GPU: the machine pools are seed 004's `additional`
pool (team isolation, taint workload-type=batch:NoSchedule) and those of
examples/machine-pools/pools.yaml, among them two GPU spot pools that scale from zero with the
GPU spot taints and label node-type=gpu (V100 `ml-training`, T4 `gpu-spot`).

  1. examples/machine-pools/seed-objects.yaml is applied as written (the seed's two Jobs and its
     PodDisruptionBudget):
     `batch-job` lands on a node of `additional` (its nodeSelector and toleration), `ml-training`
     on a spot node of the cheapest GPU pool that fits, scaled up from zero for it.
  2. Applied again: "unchanged", the same workflows.
  3. A Job of 3 completions at parallelism 1: never more than one pod at once, all complete.
  4. A Job whose pods fail, backoffLimit 1: one retry, then FAILED with the limit in the message.
Bad input: a Job with volumes is refused with file:line and the field, nothing stored.

Exit 0 on success, 1 on failure. Waits are bounded (the loop runs every 100 ms).
"""
import json
import os
import subprocess
import time

import together_test as base

EXAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples",
                       "machine-pools")

MACHINE_POOLS = """\
apiVersion: gpupool.io/v1
kind: MachinePool
metadata: {name: additional}
spec:
  instance_type: m5.xlarge
  min_replicas: 0
  max_replicas: 2
  taints:
  - {key: workload-type, value: batch, effect: NoSchedule}
"""


def cpu_node():
    res = {"cpu": "8", "memory": "32Gi", "ephemeral-storage": "100Gi", "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "cpu-0", "labels": {"kubernetes.io/hostname": "cpu-0"}},
            "status": {"allocatable": res, "capacity": res}}


def seed_objects():
    """examples/machine-pools/seed-objects.yaml: the seed's two Jobs and its PDB, as written."""
    with open(os.path.join(EXAMPLE, "seed-objects.yaml")) as f:
        return f.read()


def job(name, completions, parallelism, backoff_limit, seconds, exit_code):
    return f"""\
apiVersion: batch/v1
kind: Job
metadata: {{name: {name}}}
spec:
  completions: {completions}
  parallelism: {parallelism}
  backoffLimit: {backoff_limit}
  template:
    metadata:
      annotations:
        gpupool.io/sim-duration-seconds: "{seconds}"
        gpupool.io/sim-exit-code: "{exit_code}"
    spec:
      containers:
      - name: work
        image: busybox
        resources: {{requests: {{cpu: 1, memory: 1Gi}}}}
"""


class Gpupool(base.Gpupool):
    """The server on one CPU node, with machine pools provisioning in one second."""

    def __init__(self, binary, workdir):
        self.binary, self.workdir = binary, workdir
        self.log = open(os.path.join(workdir, "serve.log"), "w+b")
        cluster_file = os.path.join(workdir, "cluster.json")
        with open(cluster_file, "w") as f:
            json.dump({"apiVersion": "v1", "kind": "NodeList", "items": [cpu_node()]}, f)
        self.proc = subprocess.Popen(
            [binary, "serve", "--listen", "127.0.0.1:0",
             "--db", "sqlite:" + os.path.join(workdir, "server.db"), "--auth", "dev",
             "--backend", "sim:" + cluster_file, "--interval", "100ms",
             "--provision-delay", "1s"],
            stdout=self.log, stderr=subprocess.STDOUT)
        self.url = None
        deadline = time.time() + 60
        while self.url is None and time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("gpupool serve exited: " + self.output())
            at = self.output().find("listening on ")
            if at >= 0:
                self.url = self.output()[at + len("listening on "):].split()[0]
            else:
                time.sleep(0.05)
        if self.url is None:
            raise RuntimeError("gpupool serve did not start: " + self.output())

    def apply(self, name, text):
        path = os.path.join(self.workdir, name)
        with open(path, "w") as f:
            f.write(text)
        return self.run("apply", "-f", path)

    def applied_jobs(self, name, text):
        r = self.apply(name, text)
        base.check(r.returncode == 0, f"apply {name}: exit {r.returncode}\n{r.stderr}")
        out = json.loads(self.ok("apply", "-f", os.path.join(self.workdir, name), "-o", "json"))
        return {j["name"]: j for j in out["jobs"]}, r.stdout


def active(wf):
    return sum(t["status"] in ("PENDING", "SCHEDULED", "RUNNING") for t in wf["tasks"])


def scenario(g):
    check = base.check
    g.ok("apply", "-f", os.path.join(EXAMPLE, "pools.yaml"))
    r = g.apply("additional.yaml", MACHINE_POOLS)
    check(r.returncode == 0, r.stderr)

    # Bad input first: refused with the file, line and field; nothing stored.
    bad = g.apply("bad.yaml", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: bad}\nspec:\n"
                              "  template:\n    spec:\n      volumes: [{name: v}]\n"
                              "      containers: [{name: c, image: x}]\n")
    check(bad.returncode == 1, f"a Job with volumes accepted: {bad.stdout}")
    check("bad.yaml:7:7: Job bad: spec.template.spec.volumes: not carried" in bad.stderr,
          bad.stderr)
    check(json.loads(g.ok("workflow", "list", "-o", "json")) == [], "a refused Job stored")

    # 1. Seed 004's Jobs as written (the second apply, for -o json, must say unchanged).
    jobs, text = g.applied_jobs("seed-objects.yaml", seed_objects())
    check("job.batch/batch-job created: workflow batch-job-" in text, text)
    check("job.batch/ml-training created: workflow ml-training-" in text, text)
    check("applied POD_DISRUPTION_BUDGET ml-training-pdb" in text, text)
    check(jobs["batch-job"]["unchanged"] and jobs["ml-training"]["unchanged"],
          f"applied twice, not unchanged: {jobs}")
    check(jobs["ml-training"]["pool"] == "default", f"default pool: {jobs}")
    batch = g.wait(jobs["batch-job"]["workflow_id"], base.running, "batch-job RUNNING")
    check(base.task(batch)["node"].startswith("additional-"), f"batch-job placed: {batch}")
    # Both GPU spot pools of pools.yaml fit it (node-type=gpu, the spot taints): the cheaper
    # one, gpu-spot (T4, 0.21 USD/h against the V100's 0.92), scales up from zero for it.
    train = g.wait(jobs["ml-training"]["workflow_id"], base.running, "ml-training RUNNING")
    check(base.task(train)["node"].startswith("gpu-spot-"), f"ml-training placed: {train}")
    view = json.loads(g.ok("machinepool", "list", "-o", "json"))
    pools = {p["name"]: p for p in view["pools"]}
    check(pools["gpu-spot"]["current"] >= 1, f"gpu-spot did not scale up: {pools}")

    # 2. Applied again by the table output: unchanged.
    again = g.apply("seed-objects.yaml", seed_objects())
    check("job.batch/ml-training unchanged" in again.stdout, again.stdout)

    # 3. Parallelism 1: one pod at a time, in order.
    jobs, _ = g.applied_jobs("serial.yaml", job("serial", 3, 1, 6, 1, 0))
    wf_id = jobs["serial"]["workflow_id"]
    deadline = time.time() + 60
    most = 0
    while True:
        wf = g.query(wf_id)
        most = max(most, active(wf))
        if wf["status"] == "COMPLETED" or time.time() > deadline:
            break
        time.sleep(0.1)
    check(wf["status"] == "COMPLETED", f"serial Job: {json.dumps(wf, indent=1)}")
    check(most == 1, f"parallelism 1 ran {most} pods at once")

    # 4. backoffLimit 1: the failed pod is retried once, then the workflow fails.
    jobs, _ = g.applied_jobs("failing.yaml", job("failing", 1, 1, 1, 1, 2))
    wf = g.wait(jobs["failing"]["workflow_id"], lambda w: w["status"].startswith("FAILED"),
                "FAILED")
    statuses = [t["status"] for t in wf["tasks"]]
    check(statuses == ["RESCHEDULED", "FAILED"], f"attempts: {statuses}")
    check("backoff limit 1 reached (2 failures)" in wf["tasks"][-1]["message"], wf["tasks"])


if __name__ == "__main__":
    import sys
    sys.exit(base.run_scenario(Gpupool, scenario))
