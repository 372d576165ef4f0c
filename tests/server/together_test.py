#!/usr/bin/env python3
"""OSMO workflows in Run:ai node pools and quotas, end to end: the real `gpupool` binary as the
server (`gpupool serve` on the simulated backend) and as the client (`gpupool --server URL`).

The cluster: two nodes of 4 A100-80GB in node pool A100-80 (seed 003's spelling), one CPU node
in no node pool. Two OSMO pools on the A100 platform: `rnd` with a guarantee of 8 GPUs (all of
A100-80: the guarantee follows the pool's nodes into their node pools) and `mlops` with 0.

  1. rnd submits 4 GPUs at NORMAL with --node-pools A100-80: within its guarantee, it runs.
  2. mlops submits 4 GPUs at LOW: idle GPUs over quota, it runs (preemptible).
  3. mlops submits 4 GPUs at NORMAL: it waits, and the message states the rule.
  4. rnd, the owner, submits 4 GPUs at NORMAL without choosing node pools (its platform's nodes
     are all in A100-80): mlops' LOW workflow is reclaimed and rnd's runs.
Bad input: an unknown node pool is refused with the field and a did-you-mean.

Exit 0 on success, 1 on failure. Waits are bounded (the loop runs every 100 ms).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

TOKEN = "dev:erin:osmo-admin"

MANIFESTS = """\
apiVersion: gpupool.io/v1
kind: NodePool
metadata: {name: A100-80}
spec: {label_key: node-pool, label_value: A100-80}
---
apiVersion: gpupool.io/v1
kind: PodTemplate
metadata: {name: a100}
spec:
  spec:
    nodeSelector: {nvidia.com/gpu.product: NVIDIA-A100-80GB}
    tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
---
apiVersion: gpupool.io/v1
kind: Pool
metadata: {name: rnd}
spec:
  backend: default
  default_platform: a100
  common_default_variables: {USER_CPU: 1, USER_GPU: 0, USER_MEMORY: 4Gi, USER_STORAGE: 1Gi}
  common_pod_template: [default_user]
  platforms:
    a100: {override_pod_template: [a100]}
  resources: {gpu: {guarantee: 8}}
---
apiVersion: gpupool.io/v1
kind: Pool
metadata: {name: mlops}
spec:
  backend: default
  default_platform: a100
  common_default_variables: {USER_CPU: 1, USER_GPU: 0, USER_MEMORY: 4Gi, USER_STORAGE: 1Gi}
  common_pod_template: [default_user]
  platforms:
    a100: {override_pod_template: [a100]}
  resources: {gpu: {guarantee: 0}}
"""


def node(name, labels, gpus, taints=()):
    res = {"cpu": "64", "memory": "512Gi", "ephemeral-storage": "1Ti", "pods": "110"}
    if gpus:
        res["nvidia.com/gpu"] = str(gpus)
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": dict(labels, **{"kubernetes.io/hostname": name})},
            "spec": {"taints": list(taints)},
            "status": {"allocatable": res, "capacity": res}}


def cluster():
    taint = {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}
    a100 = {"node-pool": "A100-80", "nvidia.com/gpu.product": "NVIDIA-A100-80GB"}
    items = [node(f"a100-80-{i}", a100, 4, [taint]) for i in range(2)]
    items.append(node("cpu-0", {}, 0))
    return {"apiVersion": "v1", "kind": "NodeList", "items": items}


def workflow(name, priority, gpus=4):
    return (f"workflow:\n  name: {name}\n  priority: {priority}\n  resources:\n"
            f"    default: {{cpu: 1, gpu: {gpus}, memory: 8Gi, storage: 1Gi}}\n"
            f"  tasks:\n  - {{name: train, image: busybox, sim_duration: 1h}}\n")


class Gpupool:
    def __init__(self, binary, workdir):
        self.binary, self.workdir = binary, workdir
        self.log = open(os.path.join(workdir, "serve.log"), "w+b")
        db = "sqlite:" + os.path.join(workdir, "server.db")
        cluster_file = os.path.join(workdir, "cluster.json")
        with open(cluster_file, "w") as f:
            json.dump(cluster(), f)
        self.proc = subprocess.Popen(
            [binary, "serve", "--listen", "127.0.0.1:0", "--db", db, "--auth", "dev",
             "--backend", "sim:" + cluster_file, "--interval", "100ms"],
            stdout=self.log, stderr=subprocess.STDOUT)
        self.url = None
        deadline = time.time() + 60
        while self.url is None and time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("gpupool serve exited: " + self.output())
            text = self.output()
            at = text.find("listening on ")
            if at >= 0:
                self.url = text[at + len("listening on "):].split()[0]
            else:
                time.sleep(0.05)
        if self.url is None:
            raise RuntimeError("gpupool serve did not start: " + self.output())

    def output(self):
        self.log.flush()
        with open(self.log.name, "rb") as f:
            return f.read().decode(errors="replace")

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    token = TOKEN  # the caller, as `gpupool --server` sends it; subclasses switch it

    def run(self, *args):
        env = dict(os.environ, GPUPOOL_TOKEN=self.token)
        return subprocess.run([self.binary, "--server", self.url, *args], cwd=self.workdir,
                              env=env, capture_output=True, text=True, timeout=60)

    def ok(self, *args):
        r = self.run(*args)
        if r.returncode != 0:
            raise AssertionError(f"gpupool {' '.join(args)}: exit {r.returncode}\n{r.stderr}")
        return r.stdout

    def submit(self, pool, name, priority, *flags):
        path = os.path.join(self.workdir, name + ".yaml")
        with open(path, "w") as f:
            f.write(workflow(name, priority))
        out = json.loads(self.ok("workflow", "submit", path, "--pool", pool, *flags, "-o", "json"))
        return out["workflow_id"]

    def query(self, wf_id):
        return json.loads(self.ok("workflow", "query", wf_id, "-o", "json"))

    def wait(self, wf_id, want, what):
        """Waits (bounded) until `want(workflow)` holds; returns the workflow."""
        deadline = time.time() + 60
        while True:
            wf = self.query(wf_id)
            if want(wf):
                return wf
            if time.time() > deadline:
                raise AssertionError(f"{wf_id}: {what} not reached: {json.dumps(wf, indent=1)}")
            time.sleep(0.1)


def task(wf):
    assert len(wf["tasks"]) == 1, wf
    return wf["tasks"][0]


def running(wf):
    return wf["status"] == "RUNNING"


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def scenario(g):
    with open(os.path.join(g.workdir, "manifests.yaml"), "w") as f:
        f.write(MANIFESTS)
    g.ok("apply", "-f", os.path.join(g.workdir, "manifests.yaml"))

    # Bad input: an unknown node pool, with the field and a did-you-mean; nothing stored.
    path = os.path.join(g.workdir, "bad.yaml")
    with open(path, "w") as f:
        f.write(workflow("bad", "NORMAL"))
    bad = g.run("workflow", "submit", path, "--pool", "rnd", "--node-pools", "A100-08")
    check(bad.returncode == 1, f"unknown node pool accepted: {bad.stdout}")
    check('workflow.node_pools[0]: node pool "A100-08" does not exist (did you mean "A100-80"?)'
          in bad.stderr, bad.stderr)
    empty = g.run("workflow", "submit", path, "--pool", "rnd", "--node-pools", "A100-80,,default")
    check(empty.returncode == 1 and "--node-pools" in empty.stderr, empty.stderr)
    check(json.loads(g.ok("workflow", "list", "-o", "json")) == [], "a refused workflow stored")

    # The pods carry the node pools: the chosen ones, else those of the platform's nodes.
    dry = json.loads(g.ok("workflow", "submit", path, "--pool", "rnd", "--dry-run", "-o", "json"))
    labels = dry["pods"][0]["metadata"]["labels"]
    check(labels.get("gpupool.io/node-pool") == "A100-80", f"default node pools: {labels}")

    # 1. NORMAL within the pool's guarantee, in node pool A100-80: runs.
    owner1 = g.submit("rnd", "rnd-train", "NORMAL", "--node-pools", "A100-80")
    g.wait(owner1, running, "RUNNING")

    # 2. LOW over quota (mlops deserves 0): idle GPUs, runs.
    low = g.submit("mlops", "mlops-burst", "LOW", "--node-pools", "A100-80")
    g.wait(low, running, "RUNNING")

    # 3. NORMAL over quota: waits, and says why and what would run.
    normal = g.submit("mlops", "mlops-normal", "NORMAL", "--node-pools", "A100-80")
    rule = ("NORMAL priority uses only deserved quota: 0 GPUs in node pool A100-80; "
            "LOW may use idle GPUs over quota")
    wf = g.wait(normal, lambda w: rule in task(w)["message"], "the quota message")
    check(wf["status"] == "PENDING", f"over quota at NORMAL: {wf}")

    # 4. The owner submits (no --node-pools: its platform's node pools): LOW is reclaimed.
    owner2 = g.submit("rnd", "rnd-eval", "NORMAL")
    g.wait(owner2, running, "RUNNING")
    # Evicted back to PENDING (its message then says why it waits, like any pending task).
    wf = g.wait(low, lambda w: task(w)["status"] == "PENDING", "reclaimed")
    check(task(wf)["node"] == "", f"a reclaimed task keeps its node: {wf}")
    check(g.query(owner1)["status"] == "RUNNING", "the owner's first workflow was evicted")
    check(g.query(normal)["status"] == "PENDING", "NORMAL over quota ran")


def run_scenario(server_class, scenario_fn, prepare=None):
    """The command line of these tests: --gpupool BINARY; `prepare(binary, workdir)` before the
    server starts. Exit status 0 when the scenario holds, 1 with the server's log otherwise."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--gpupool", required=True)
    args = parser.parse_args()
    binary = os.path.abspath(args.gpupool)
    with tempfile.TemporaryDirectory() as workdir:
        if prepare is not None:
            prepare(binary, workdir)
        g = server_class(binary, workdir)
        try:
            scenario_fn(g)
        except AssertionError as e:
            print(f"FAIL: {e}\n--- server log (tail) ---\n{g.output()[-4000:]}", file=sys.stderr)
            return 1
        finally:
            g.stop()
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(run_scenario(Gpupool, scenario))
