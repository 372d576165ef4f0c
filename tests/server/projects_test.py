#!/usr/bin/env python3
"""Projects for OSMO workflows, end to end: the real `gpupool serve` on the simulated backend and
`gpupool --server URL` as researchers.

Seed 003's organisation in small: node pool A100-80 (two nodes of 4 GPUs); department rnd with
projects rnd-train and rnd-build (4 GPUs deserved each in A100-80), department mlops with
project mlops-serve. One OSMO pool, `training`. Role osmo-rnd grants the pool and the queues
rnd-* (workflow:Create on queue/rnd-*); rita holds it.

  1. rita submits 4 GPUs at NORMAL with --queue rnd-train: it runs, and `workflow query` and
     `list` (table and JSON) and the REST API show queue rnd-train; the pods carry it.
  2. A second 4 GPUs in rnd-train at NORMAL waits: rnd-train deserves 4 (the project's quota is
     used, not the pool's, which has none), and the message says so.
  3. The workflow's own `queue: rnd-build` is used (4 more GPUs, its own quota): it runs; the
     flag wins over the file's field.
  4. With BACKEND default's enable_over_quota false, a LOW workflow of mlops-serve (deserved 0)
     waits at its limit of 0 GPUs although GPUs are idle; switched on again, it runs.
Bad input: an unknown queue (did-you-mean), a department, a queue the roles do not grant (deny
by default) are refused with exit 1 and nothing stored.

Exit 0 on success, 1 on failure. Waits are bounded (the loop runs every 100 ms).
"""
import json
import os
import sys
import urllib.request

import together_test as base

ADMIN = "dev:erin:osmo-admin"
RITA = "dev:rita:osmo-rnd"

MANIFESTS = """\
apiVersion: gpupool.io/v1
kind: NodePool
metadata: {name: A100-80}
spec: {label_key: node-pool, label_value: A100-80}
---
apiVersion: gpupool.io/v1
kind: Queue
metadata: {name: rnd}
spec: {resources: {A100-80: {gpu: {deserved: 8}}}}
---
apiVersion: gpupool.io/v1
kind: Queue
metadata: {name: rnd-train}
spec: {parent: rnd, resources: {A100-80: {gpu: {deserved: 4}}}}
---
apiVersion: gpupool.io/v1
kind: Queue
metadata: {name: rnd-build}
spec: {parent: rnd, resources: {A100-80: {gpu: {deserved: 4}}}}
---
apiVersion: gpupool.io/v1
kind: Queue
metadata: {name: mlops}
spec: {}
---
apiVersion: gpupool.io/v1
kind: Queue
metadata: {name: mlops-serve}
spec: {parent: mlops}
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
metadata: {name: training}
spec:
  backend: default
  default_platform: a100
  common_default_variables: {USER_CPU: 1, USER_GPU: 0, USER_MEMORY: 4Gi, USER_STORAGE: 1Gi}
  common_pod_template: [default_user]
  platforms:
    a100: {override_pod_template: [a100]}
---
apiVersion: gpupool.io/v1
kind: Role
metadata: {name: osmo-rnd}
spec:
  policies:
  - {effect: Allow, actions: ["workflow:*"], resources: [pool/training]}
  - {effect: Allow, actions: ["workflow:Create"], resources: ["queue/rnd-*"]}
"""


class Gpupool(base.Gpupool):
    token = ADMIN

    def write(self, name, priority, queue=None):
        text = base.workflow(name, priority)
        if queue:
            text = text.replace("  resources:", f"  queue: {queue}\n  resources:", 1)
        path = os.path.join(self.workdir, name + ".yaml")
        with open(path, "w") as f:
            f.write(text)
        return path

    def submit_as(self, token, name, priority, *flags, queue=None):
        self.token = token
        try:
            out = self.ok("workflow", "submit", self.write(name, priority, queue), "--pool",
                          "training", *flags, "-o", "json")
        finally:
            self.token = ADMIN
        return json.loads(out)

    def refused(self, token, name, *flags, queue=None):
        self.token = token
        try:
            r = self.run("workflow", "submit", self.write(name, "NORMAL", queue), "--pool",
                         "training", *flags)
        finally:
            self.token = ADMIN
        base.check(r.returncode == 1, f"{name}: accepted: {r.stdout}")
        return r.stderr

    def rest(self, path):
        request = urllib.request.Request(self.url + path,
                                         headers={"Authorization": "Bearer " + ADMIN})
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())


def scenario(g):
    check = base.check
    with open(os.path.join(g.workdir, "manifests.yaml"), "w") as f:
        f.write(MANIFESTS)
    g.ok("apply", "-f", os.path.join(g.workdir, "manifests.yaml"))

    # Bad input, nothing stored.
    err = g.refused(RITA, "typo", "--queue", "rnd-trian")
    check('--queue: queue "rnd-trian" does not exist (did you mean "rnd-train"?); queues you '
          'may submit to: rnd-build, rnd-train' in err, err)
    err = g.refused(RITA, "infile", queue="rnd-trian")
    check('infile.yaml:4:3: workflow.queue: queue "rnd-trian" does not exist' in err, err)
    err = g.refused(ADMIN, "dept", "--queue", "rnd")
    check('queue "rnd" is a department; submit to one of its projects (rnd-build, rnd-train)'
          in err, err)
    err = g.refused(RITA, "other", "--queue", "mlops-serve")
    check('access denied: user "rita" with roles osmo-rnd may not submit to queue "mlops-serve"'
          in err, err)
    check(json.loads(g.ok("workflow", "list", "-o", "json")) == [], "a refused workflow stored")

    # The pods carry the queue.
    g.token = RITA
    dry = json.loads(g.ok("workflow", "submit", g.write("dry", "NORMAL"), "--pool", "training",
                          "--queue", "rnd-train", "--dry-run", "-o", "json"))
    g.token = ADMIN
    labels = dry["pods"][0]["metadata"]["labels"]
    check(labels.get("gpupool.io/queue") == "rnd-train", f"pod labels: {labels}")

    # 1. A project rita's role grants: runs, shown everywhere with its queue.
    first = g.submit_as(RITA, "train-1", "NORMAL", "--queue", "rnd-train")
    check(first["queue"] == "rnd-train", f"submit answer: {first}")
    wf = g.wait(first["workflow_id"], base.running, "RUNNING")
    check(wf["queue"] == "rnd-train" and wf["pool"] == "training", f"query -o json: {wf}")
    table = g.ok("workflow", "query", first["workflow_id"])
    check("Queue       : rnd-train" in table, table)
    listed = g.ok("workflow", "list")
    check(listed.splitlines()[0].split()[:4] == ["WORKFLOW", "ID", "POOL", "QUEUE"], listed)
    check("rnd-train" in listed.splitlines()[1], listed)
    check(json.loads(g.ok("workflow", "list", "-o", "json"))[0]["queue"] == "rnd-train", "list")
    check(g.rest("/api/workflow/" + first["workflow_id"])["queue"] == "rnd-train", "REST query")

    # 2. The project's quota, not the pool's: 4 GPUs deserved, the second NORMAL 4 waits.
    second = g.submit_as(RITA, "train-2", "NORMAL", "--queue", "rnd-train")["workflow_id"]
    rule = ("queue rnd-train: NORMAL priority uses only deserved quota: 4 GPUs in node pool "
            "A100-80; LOW may use idle GPUs over quota")
    wf = g.wait(second, lambda w: rule in base.task(w)["message"], "the project's quota")
    check(wf["status"] == "PENDING", f"over the project's quota at NORMAL: {wf}")

    # 3. The file's queue (rnd-build, its own 4 GPUs) runs; the flag wins over the file.
    build = g.submit_as(RITA, "build-1", "NORMAL", queue="rnd-build")["workflow_id"]
    wf = g.wait(build, base.running, "RUNNING")
    check(wf["queue"] == "rnd-build", f"the file's queue: {wf}")
    g.token = RITA
    dry = json.loads(g.ok("workflow", "submit", g.write("both", "NORMAL", "rnd-build"), "--pool",
                          "training", "--queue", "rnd-train", "--dry-run", "-o", "json"))
    g.token = ADMIN
    check(dry["pods"][0]["metadata"]["labels"]["gpupool.io/queue"] == "rnd-train", "flag wins")
    check(g.query(second)["status"] == "PENDING", "NORMAL over the project's quota ran")

    # 4. Seed 003's over-quota switch (BACKEND default): off, LOW no longer borrows idle GPUs.
    for wf_id in (first["workflow_id"], second, build):
        g.ok("workflow", "cancel", wf_id)
    switch = os.path.join(g.workdir, "backend.json")
    with open(switch, "w") as f:
        f.write('{"enable_over_quota": false}\n')
    g.ok("config", "update", "BACKEND", "default", "--file", switch)
    low = g.submit_as(ADMIN, "serve-low", "LOW", "--queue", "mlops-serve")["workflow_id"]
    limit = "queue mlops-serve is at its limit of 0 nvidia.com/gpu in node pool A100-80"
    wf = g.wait(low, lambda w: limit in base.task(w)["message"], "over quota disabled")
    check(wf["status"] == "PENDING", f"LOW over quota with over-quota off: {wf}")
    with open(switch, "w") as f:
        f.write('{"enable_over_quota": true}\n')
    g.ok("config", "update", "BACKEND", "default", "--file", switch)
    g.wait(low, base.running, "RUNNING once over quota is enabled again")


if __name__ == "__main__":
    sys.exit(base.run_scenario(Gpupool, scenario))
