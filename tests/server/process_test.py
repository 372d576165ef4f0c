#!/usr/bin/env python3
"""Process-level tests of gpupool-serve (real binary, real sockets, kill -9).

  crash   --db URL: 1,000 submissions in flight, kill -9 the server, restart it; every
          acknowledged submission exists exactly once (retrying the rest with their
          idempotency keys gives exactly 1,000), and no node is double-booked.
  leader  --db postgresql://...: two servers on one database; exactly one runs the scheduling
          loop; kill -9 the leader, the other takes over within the lease time; no pod is
          scheduled twice.

Exit 0 on success, 1 on failure, 77 when the database is not available (PostgreSQL URL unset).
"""
import argparse
import concurrent.futures
import http.client
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

ADMIN = "Bearer dev:crash-test:osmo-admin"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def request(port, method, path, body=None, headers=None, timeout=30):
    data = body.encode() if isinstance(body, str) else body
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method=method)
    req.add_header("Authorization", ADMIN)
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as res:
            return res.status, res.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


class Server:
    def __init__(self, binary, db, cluster, workdir, name, lease_ttl="3s"):
        self.port = free_port()
        self.log = open(os.path.join(workdir, f"{name}.log"), "ab")
        self.proc = subprocess.Popen(
            [binary, "serve", "--listen", f"127.0.0.1:{self.port}", "--db", db,
             "--backend", f"sim:{cluster}", "--auth", "dev", "--interval", "100ms",
             "--lease-ttl", lease_ttl, "--threads", "48"],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 60
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{name} exited with {self.proc.returncode}")
            try:
                if request(self.port, "GET", "/readyz", timeout=2)[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"{name} did not become ready")

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill9()

    def metric(self, name):
        status, text = request(self.port, "GET", "/metrics")
        for line in text.splitlines():
            if line.startswith(name + " ") or line.startswith(name + "{"):
                return float(line.rsplit(" ", 1)[1])
        return 0.0


def write_cluster(workdir, prefix, nodes, cpus):
    items = []
    for i in range(nodes):
        res = {"cpu": str(cpus), "memory": "256Gi", "ephemeral-storage": "1Ti", "pods": "500"}
        items.append({"apiVersion": "v1", "kind": "Node",
                      "metadata": {"name": f"{prefix}-{i}",
                                   "labels": {"kubernetes.io/hostname": f"{prefix}-{i}"}},
                      "status": {"allocatable": res, "capacity": res}})
    path = os.path.join(workdir, "cluster.json")
    with open(path, "w") as f:
        json.dump({"apiVersion": "v1", "kind": "NodeList", "items": items}, f)
    return path


def workflow(name, duration="1h"):
    return (f"workflow:\n  name: {name}\n  resources:\n    default: {{cpu: 1, memory: 1Gi, "
            f"storage: 1Gi}}\n  tasks:\n  - {{name: t, image: busybox, sim_duration: {duration}}}\n")


def list_workflows(port, name):
    status, body = request(port, "GET", "/api/workflow?limit=100000")
    assert status == 200, body
    return [w for w in json.loads(body)["workflows"] if w["name"] == name]


# Each task uses 2 cpus: 1 for the user container and 1 for the built-in default_ctrl sidecar.
CPUS_PER_TASK = 2


def check_no_double_booking(workflows, prefix, cpus):
    per_node = {}
    for w in workflows:
        for t in w["tasks"]:
            if t["status"] in ("SCHEDULED", "RUNNING"):
                per_node[t["node"]] = per_node.get(t["node"], 0) + 1
    for node, count in per_node.items():
        if node.startswith(prefix) and count * CPUS_PER_TASK > cpus:
            raise AssertionError(f"node {node} holds {count} two-cpu tasks but has {cpus} cpus")
    # Tasks on this test's nodes (a shared database may hold other tests' nodes too).
    return sum(count for node, count in per_node.items() if node.startswith(prefix))


def crash(args, workdir):
    prefix = f"crash{random.randrange(1 << 30)}"
    nodes, cpus = 4, 8
    cluster = write_cluster(workdir, prefix, nodes, cpus)
    name = prefix + "-wf"
    spec = workflow(name)
    server = Server(args.serve, args.db, cluster, workdir, "crash-1")
    acked = {}  # key -> workflow id
    lock = threading.Lock()
    killed = threading.Event()

    def submit(i):
        key = f"{prefix}-{i}"
        try:
            status, body = request(server.port, "POST", "/api/pool/default/workflow", spec,
                                   {"Content-Type": "application/yaml", "Idempotency-Key": key})
        except (OSError, http.client.HTTPException):
            # No complete response (the kill landed mid-reply): not an acknowledgement.
            return
        if status == 200:
            with lock:
                acked[key] = json.loads(body)["workflow_id"]
                if len(acked) >= args.kill_after and not killed.is_set():
                    killed.set()
                    server.kill9()

    with concurrent.futures.ThreadPoolExecutor(max_workers=64) as pool:
        list(pool.map(submit, range(args.submissions)))
    if not killed.is_set():
        server.kill9()
    print(f"crash: {len(acked)} of {args.submissions} submissions acknowledged before kill -9")

    server = Server(args.serve, args.db, cluster, workdir, "crash-2")
    try:
        stored = list_workflows(server.port, name)
        ids = [w["id"] for w in stored]
        assert len(ids) == len(set(ids)), "duplicate workflow ids"
        for key, wid in acked.items():
            status, body = request(server.port, "GET", f"/api/workflow/{wid}")
            assert status == 200, f"acknowledged {wid} ({key}) lost: {status} {body}"
        assert set(acked.values()) <= set(ids)
        assert len(stored) <= args.submissions
        # The client retries everything with the same keys: exactly one workflow per key.
        retried = {}
        def retry(i):
            key = f"{prefix}-{i}"
            status, body = request(server.port, "POST", "/api/pool/default/workflow", spec,
                                   {"Content-Type": "application/yaml", "Idempotency-Key": key})
            assert status == 200, body
            retried[key] = json.loads(body)["workflow_id"]
        with concurrent.futures.ThreadPoolExecutor(max_workers=16) as pool:
            list(pool.map(retry, range(args.submissions)))
        for key, wid in acked.items():
            assert retried[key] == wid, f"{key}: retry gave {retried[key]}, acknowledged {wid}"
        stored = list_workflows(server.port, name)
        assert len(stored) == args.submissions, f"{len(stored)} workflows for {args.submissions} keys"
        assert len({w["id"] for w in stored}) == args.submissions
        # Let the scheduler place what fits: 4 nodes x 8 cpus = 16 two-cpu tasks at most.
        capacity = nodes * cpus // CPUS_PER_TASK
        deadline = time.time() + 30
        placed = 0
        while time.time() < deadline:
            placed = check_no_double_booking(list_workflows(server.port, name), prefix, cpus)
            if placed >= capacity:
                break
            time.sleep(0.5)
        placed = check_no_double_booking(list_workflows(server.port, name), prefix, cpus)
        assert placed == capacity, f"{placed} tasks placed, expected {capacity}"
        print(f"crash: ok: {len(acked)} acknowledged all present, {args.submissions} exactly once "
              f"after retries, {placed} tasks placed on {nodes}x{cpus} cpus, none double-booked")
    finally:
        server.stop()


def leader(args, workdir):
    if not args.db.startswith("postgres"):
        print("leader: needs a PostgreSQL --db")
        return 77
    prefix = f"lead{random.randrange(1 << 30)}"
    cpus = 64
    cluster = write_cluster(workdir, prefix, 2, cpus)
    name = prefix + "-wf"
    a = Server(args.serve, args.db, cluster, workdir, "leader-a", lease_ttl="3s")
    b = Server(args.serve, args.db, cluster, workdir, "leader-b", lease_ttl="3s")
    try:
        time.sleep(1)
        leaders = [s for s in (a, b) if s.metric("gpupool_scheduler_leader") == 1]
        assert len(leaders) == 1, f"{len(leaders)} leaders"
        old, new = (a, b) if leaders[0] is a else (b, a)
        for i in range(20):
            status, body = request(new.port, "POST", "/api/pool/default/workflow", workflow(name),
                                   {"Content-Type": "application/yaml"})
            assert status == 200, body
        deadline = time.time() + 20
        while time.time() < deadline:
            running = [w for w in list_workflows(new.port, name) if w["status"] == "RUNNING"]
            if len(running) == 20:
                break
            time.sleep(0.2)
        before = {w["id"]: w for w in list_workflows(new.port, name)}
        assert all(w["status"] == "RUNNING" for w in before.values()), "not all running"
        old.kill9()
        killed_at = time.time()
        for i in range(10):
            status, body = request(new.port, "POST", "/api/pool/default/workflow", workflow(name),
                                   {"Content-Type": "application/yaml"})
            assert status == 200, body
        while time.time() - killed_at < 15 and new.metric("gpupool_scheduler_leader") != 1:
            time.sleep(0.05)
        takeover = time.time() - killed_at
        assert new.metric("gpupool_scheduler_leader") == 1, "no takeover"
        deadline = time.time() + 20
        while time.time() < deadline:
            after = list_workflows(new.port, name)
            if all(w["status"] == "RUNNING" for w in after) and len(after) == 30:
                break
            time.sleep(0.2)
        after = {w["id"]: w for w in list_workflows(new.port, name)}
        assert len(after) == 30
        for wid, w in after.items():
            assert w["status"] == "RUNNING", f"{wid} {w['status']}"
            assert len(w["tasks"]) == 1, f"{wid} has {len(w['tasks'])} attempts"
            if wid in before:
                assert w["tasks"][0]["node"] == before[wid]["tasks"][0]["node"], f"{wid} moved"
        bound = new.metric('gpupool_task_transitions_total{from="PENDING",to="SCHEDULED"}')
        assert bound == 10, f"the new leader bound {bound} pods, expected only the 10 new ones"
        check_no_double_booking(list(after.values()), prefix, cpus)
        print(f"leader: ok: takeover {takeover:.1f}s after kill -9 (lease 3s); 20 running pods "
              f"kept their nodes; the new leader bound exactly the 10 new pods")
    finally:
        for s in (a, b):
            s.stop()
    return 0


def psql(url, sql):
    subprocess.run(["psql", "-q", "-v", "ON_ERROR_STOP=1", url, "-c", sql], check=True,
                   stdout=subprocess.DEVNULL)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["crash", "leader"])
    parser.add_argument("--serve", required=True)
    parser.add_argument("--db", default="")
    parser.add_argument("--db-env", default="")
    parser.add_argument("--submissions", type=int, default=1000)
    parser.add_argument("--kill-after", type=int, default=300)
    args = parser.parse_args()
    if args.db_env:
        args.db = os.environ.get(args.db_env, "")
        if not args.db:
            print(f"{args.mode}: ${args.db_env} is unset; skipped")
            return 77
    workdir = tempfile.mkdtemp(prefix="gpupool_process_test_")
    schema = ""
    base_db = args.db
    try:
        if args.db.startswith("postgres"):
            # A schema of its own: another test's unfinished workflows in the shared database
            # would otherwise compete for this test's nodes.
            schema = f"gpupool_{args.mode}_{random.randrange(1 << 30)}"
            psql(args.db, f"CREATE SCHEMA {schema}")
            sep = "&" if "?" in args.db else "?"
            args.db = f"{args.db}{sep}options=-c%20search_path%3D{schema}"
        if not args.db:
            args.db = "sqlite:" + os.path.join(workdir, "db")
        if args.mode == "crash":
            crash(args, workdir)
            return 0
        return leader(args, workdir)
    except AssertionError as e:
        print(f"{args.mode}: FAILED: {e}")
        for log in sorted(os.listdir(workdir)):
            if log.endswith(".log"):
                print(f"--- {log}\n" + open(os.path.join(workdir, log)).read()[-3000:])
        return 1
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        if schema:
            psql(base_db, f"DROP SCHEMA {schema} CASCADE")


if __name__ == "__main__":
    sys.exit(main())
