#!/usr/bin/env python3
"""Seed 003's organisation (examples/runai-org) driven through the server with OSMO workflows:
the real `gpupool serve` on the simulated backend and `gpupool --server URL` as researchers.

The example's own files are loaded as written: cluster.yaml (20 V100 nodes in the default node
pool, 5 A100-40GB nodes in a100-40, 5 A100-80GB nodes in a100-80, 4 GPUs each) and queues.yaml
(departments rnd and ml-ops, four projects each). On top, one OSMO pool `runai` without
platforms (seed 001: platforms are optional; its common templates tolerate the GPU taint) and
one role per department granting the pool and its projects.

  1. ML-Ops borrows R&D's idle A100-80s: five LOW workflows of 4 GPUs in project ml-ops-1 with
     --node-pools a100-80 (deserved 0 there) all run, one per node.
  2. NORMAL stays within deserved quota: ml-ops-2 deserves 5 GPUs in a100-40; its first
     4-GPU NORMAL workflow runs, the second waits with the rule in its message.
  3. The owner submits: rnd-1 and rnd-2 (5 deserved each in a100-80) submit one NORMAL 4-GPU
     workflow each; two of ML-Ops' LOW workflows are reclaimed (back to PENDING, no node) and
     R&D's run. A second NORMAL workflow of rnd-1 would exceed its 5 deserved: it waits.
  4. `queue list -o json` shows the projects' allocations per node pool.
Bad input: a project of the other department is refused (deny by default), nothing stored.

Exit 0 on success, 1 on failure. Waits are bounded (the loop runs every 100 ms).
"""
import json
import os
import subprocess
import sys

import together_test as base

ADMIN = "dev:erin:osmo-admin"
RITA = "dev:rita:osmo-rnd"
MO = "dev:mo:osmo-ml-ops"
EXAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples",
                       "runai-org")

OSMO = """\
apiVersion: gpupool.io/v1
kind: PodTemplate
metadata: {name: gpu-tolerant}
spec:
  spec:
    tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
---
apiVersion: gpupool.io/v1
kind: Pool
metadata: {name: runai}
spec:
  backend: default
  common_default_variables: {USER_CPU: 1, USER_GPU: 0, USER_MEMORY: 4Gi, USER_STORAGE: 1Gi}
  common_pod_template: [default_user, gpu-tolerant]
---
apiVersion: gpupool.io/v1
kind: Role
metadata: {name: osmo-rnd}
spec:
  policies:
  - {effect: Allow, actions: ["workflow:*"], resources: [pool/runai]}
  - {effect: Allow, actions: ["workflow:Create"], resources: ["queue/rnd-*"]}
---
apiVersion: gpupool.io/v1
kind: Role
metadata: {name: osmo-ml-ops}
spec:
  policies:
  - {effect: Allow, actions: ["workflow:*"], resources: [pool/runai]}
  - {effect: Allow, actions: ["workflow:Create"], resources: ["queue/ml-ops-*"]}
"""


class Gpupool(base.Gpupool):
    token = ADMIN

    def submit_as(self, token, name, priority, queue, node_pool):
        path = os.path.join(self.workdir, name + ".yaml")
        with open(path, "w") as f:
            f.write(base.workflow(name, priority))
        self.token = token
        try:
            r = self.run("workflow", "submit", path, "--pool", "runai", "--queue", queue,
                         "--node-pools", node_pool, "-o", "json")
        finally:
            self.token = ADMIN
        return r


def load_example(binary, workdir):
    """The example's nodes, node pools and queues, into the store before the server starts (the
    simulated cluster runs on the nodes the store holds)."""
    db = "sqlite:" + os.path.join(workdir, "server.db")
    for name in ("cluster.yaml", "queues.yaml"):
        r = subprocess.run([binary, "--db", db, "apply", "-f", os.path.join(EXAMPLE, name)],
                           cwd=workdir, capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            raise AssertionError(f"apply {name}: exit {r.returncode}\n{r.stdout}{r.stderr}")


def scenario(g):
    check = base.check
    with open(os.path.join(g.workdir, "osmo.yaml"), "w") as f:
        f.write(OSMO)
    g.ok("apply", "-f", os.path.join(g.workdir, "osmo.yaml"))

    def submitted(r):
        check(r.returncode == 0, f"submit: exit {r.returncode}\n{r.stderr}")
        return json.loads(r.stdout)["workflow_id"]

    # Deny by default: R&D's role does not grant ML-Ops' projects.
    refused = g.submit_as(RITA, "sneak", "LOW", "ml-ops-1", "a100-80")
    check(refused.returncode == 1 and 'may not submit to queue "ml-ops-1"' in refused.stderr,
          f"another department's project: {refused.stderr}")
    check(json.loads(g.ok("workflow", "list", "-o", "json")) == [], "a refused workflow stored")

    # 1. Idle A100-80s used over quota by ML-Ops, one 4-GPU workflow per node.
    borrowed = [submitted(g.submit_as(MO, f"mlops-train-{i}", "LOW", "ml-ops-1", "a100-80"))
                for i in range(5)]
    nodes = set()
    for wf_id in borrowed:
        wf = g.wait(wf_id, base.running, "RUNNING over quota")
        nodes.add(base.task(wf)["node"])
    check(nodes == {f"a100-80-{i}" for i in range(5)}, f"over-quota placement: {nodes}")

    # 2. NORMAL within deserved quota (ml-ops-2: 5 GPUs in a100-40): one runs, one waits.
    serve1 = submitted(g.submit_as(MO, "serve-1", "NORMAL", "ml-ops-2", "a100-40"))
    wf = g.wait(serve1, base.running, "RUNNING within quota")
    check(base.task(wf)["node"].startswith("a100-40-"), f"serve-1 placed on {wf}")
    serve2 = submitted(g.submit_as(MO, "serve-2", "NORMAL", "ml-ops-2", "a100-40"))
    rule = ("queue ml-ops-2: NORMAL priority uses only deserved quota: 5 GPUs in node pool "
            "a100-40; LOW may use idle GPUs over quota")
    wf = g.wait(serve2, lambda w: rule in base.task(w)["message"], "the deserved-quota message")
    check(wf["status"] == "PENDING", f"NORMAL over deserved quota: {wf}")

    # 3. The owner submits: R&D's NORMAL workflows reclaim two of ML-Ops' borrowed nodes.
    owners = [submitted(g.submit_as(RITA, "rnd-train-0", "NORMAL", "rnd-1", "a100-80")),
              submitted(g.submit_as(RITA, "rnd-eval-0", "NORMAL", "rnd-2", "a100-80"))]
    for wf_id in owners:
        wf = g.wait(wf_id, base.running, "the owner's workflow RUNNING")
        check(base.task(wf)["node"].startswith("a100-80-"), f"owner placed on {wf}")

    def reclaimed_count():
        states = [base.task(g.query(wf_id)) for wf_id in borrowed]
        return sum(1 for t in states if t["status"] == "PENDING" and t["node"] == "")

    deadline_wf = g.wait(borrowed[0], lambda w: reclaimed_count() == 2, "two reclaimed")
    check(deadline_wf is not None, "reclaim")
    running_borrowed = [wf_id for wf_id in borrowed if g.query(wf_id)["status"] == "RUNNING"]
    check(len(running_borrowed) == 3, f"ML-Ops keeps 3 of 5: {running_borrowed}")
    more = submitted(g.submit_as(RITA, "rnd-train-1", "NORMAL", "rnd-1", "a100-80"))
    rule = ("queue rnd-1: NORMAL priority uses only deserved quota: 5 GPUs in node pool a100-80; "
            "LOW may use idle GPUs over quota")
    wf = g.wait(more, lambda w: rule in base.task(w)["message"], "rnd-1's deserved-quota message")
    check(wf["status"] == "PENDING", f"rnd-1 over its deserved quota at NORMAL: {wf}")

    # 4. The projects table: allocations per node pool (GPUs in thousandths, as the API gives).
    def allocated(rows, queue, node_pool):
        for row in rows:
            if row.get("queue") == queue and row.get("node_pool") == node_pool:
                return row.get("allocated")
        raise AssertionError(f"no row for {queue}/{node_pool}: {json.dumps(rows)[:2000]}")

    rows = json.loads(g.ok("queue", "list", "-o", "json"))["rows"]
    check(allocated(rows, "rnd-1", "a100-80") == 4000, f"rnd-1 in a100-80: {json.dumps(rows)[:3000]}")
    check(allocated(rows, "ml-ops-1", "a100-80") == 12000, "ml-ops-1 in a100-80")
    check(allocated(rows, "ml-ops-2", "a100-40") == 4000, "ml-ops-2 in a100-40")


if __name__ == "__main__":
    # The simulated backend's own cluster file stays empty: the example's nodes are in the store.
    base.cluster = lambda: {"apiVersion": "v1", "kind": "NodeList", "items": []}
    sys.exit(base.run_scenario(Gpupool, scenario, prepare=load_example))
