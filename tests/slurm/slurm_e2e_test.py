#!/usr/bin/env python3
"""gpupool-serve on a real Slurm cluster (scripts/slurm-test-cluster.sh, started by the ctest
fixture), over slurmrestd.

  workflow --transport tcp|unix: nodes are imported from Slurm; a workflow of three tasks
          (2 GPUs, 1 GPU, no GPU) runs for real as Slurm batch jobs; each task writes
          $SLURMD_NODENAME and $CUDA_VISIBLE_DEVICES to a file; the workflow completes; every task
          ran on the node gpupool chose, with as many GPUs as it asked for; each attempt key is the
          name of exactly one Slurm job. A task that exits 3 fails its workflow with exit code 3.
  ctld-restart: slurmctld stops while three tasks run and three more are placed; it starts
          again from its saved state; all six complete, each task ran exactly once.
  logs: a task's output file is read through GET /api/workflow/ID/logs while it runs and after;
          `gpupool workflow logs --follow` prints it as it grows and returns once the task ended;
          without a task name every task's output under its header; a user who may not read the
          workflow is refused.
  restart: six workflows; gpupool is killed with SIGKILL while their jobs are being submitted and
          started; a new gpupool on the same database finds the jobs by their attempt keys: every
          task runs exactly once (one Slurm job per key, one line in each task's file) and every
          workflow completes.
  array: six one-GPU tasks of one workflow, placed in one step: the tasks on one node run as
          one Slurm job array, each element on the chosen node with its own GPU, GPUPOOL_TASK_KEY
          and output file (read through the logs route); one element cancelled through
          slurmrestd (DELETE /job/ARRAY_INDEX) ends its task alone, its siblings complete.
  quota-reclaim: two pools over the one partition, 8 GPUs deserved each. Team B fills all 24
          GPUs with LOW 4-GPU tasks (over quota: A's GPUs are idle), each running in Slurm on the
          node gpupool chose with 4 GPUs of its own. Team A, the owner, submits its 8 GPUs at
          NORMAL: two of B's jobs are cancelled in Slurm (CANCELLED), their tasks requeued
          (PENDING, "evicted (reclaim): ..."), A's tasks run in Slurm on the GPUs freed; neither
          team nor any node ever runs more GPUs than exist, A holds its 8, B the 16 left. Once
          A's tasks end, B's evicted tasks run again under the same attempt keys (a new job each).

Exit 0 on success, 1 on failure, 77 when the cluster fixture could not start (Slurm's packages
missing, or not root).
"""
import argparse
import json
import os
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

ADMIN = "Bearer dev:slurm-test:osmo-admin"


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


def read_env(cluster_dir):
    env = {}
    with open(os.path.join(cluster_dir, "env")) as f:
        for line in f:
            line = line.strip()
            if line.startswith("export "):
                key, _, value = line[len("export "):].partition("=")
                env[key] = value
    return env


def slurm(env, *args):
    return subprocess.run(list(args), env={**os.environ, "SLURM_CONF": env["SLURM_CONF"]},
                          check=True, capture_output=True, text=True).stdout


def write_token(cluster_env, workdir):
    token = slurm(cluster_env, "scontrol", "token",
                  f"username={cluster_env['GPUPOOL_SLURM_USER']}", "lifespan=3600")
    token_file = os.path.join(workdir, "jwt")
    with open(token_file, "w") as f:
        f.write(token)
    return token_file


class Server:
    def __init__(self, binary, workdir, cluster_env, transport, db, name, backend=None):
        """backend: the --backend arguments; None: the cluster over `transport`."""
        self.port = free_port()
        self.log_path = os.path.join(workdir, f"{name}.log")
        self.log = open(self.log_path, "ab")
        if backend is None and transport == "unix":
            backend = ["--backend", f"slurm:unix:{cluster_env['GPUPOOL_SLURM_SOCKET']}"]
        elif backend is None:
            backend = ["--backend", f"slurm:{cluster_env['GPUPOOL_SLURM_URL']}",
                       "--slurm-jwt-file", write_token(cluster_env, workdir),
                       "--slurm-user", cluster_env["GPUPOOL_SLURM_USER"]]
        env = {k: v for k, v in os.environ.items() if k != "SLURM_JWT"}
        self.proc = subprocess.Popen(
            [binary, "serve", "--listen", f"127.0.0.1:{self.port}", "--db", db, "--auth", "dev",
             "--interval", "100ms", "--node-sync", "1s",
             "--slurm-output-dir", cluster_env["GPUPOOL_SLURM_JOBS_DIR"]] + backend,
            stdout=self.log, stderr=subprocess.STDOUT, env=env)
        deadline = time.time() + 60
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{name} exited with {self.proc.returncode}: {self.tail()}")
            try:
                if request(self.port, "GET", "/readyz", timeout=2)[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"{name} did not become ready: {self.tail()}")

    def tail(self):
        self.log.flush()
        with open(self.log_path, errors="replace") as f:
            return f.read()[-2000:]

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill9()


def workflow_yaml(name, tasks):
    """tasks: [(task name, gpus, shell command)]."""
    lines = [f"workflow:\n  name: {name}\n  resources:"]
    for gpus in sorted({t[1] for t in tasks}):
        lines.append(f"    g{gpus}: {{cpu: 1, memory: 1Gi, storage: 1Gi, gpu: {gpus}}}")
    lines.append("  tasks:")
    for task, gpus, command in tasks:
        lines.append(f"  - name: {task}\n    image: none\n    resource: g{gpus}\n"
                     f"    command: [sh, -c, {json.dumps(command)}]")
    return "\n".join(lines) + "\n"


def submit(port, text):
    status, body = request(port, "POST", "/api/pool/default/workflow", text,
                           {"Content-Type": "application/yaml"})
    assert status == 200, f"submit: {status} {body}"
    return json.loads(body)["workflow_id"]


def get_workflow(port, wid):
    status, body = request(port, "GET", f"/api/workflow/{wid}")
    assert status == 200, f"get {wid}: {status} {body}"
    return json.loads(body)


def attempt_keys(flow):
    """The attempt key of each task entry: "<workflow>/<group>/<task>/<retry>", where retry
    counts the entries of the same task before it."""
    keys, seen = [], {}
    for task in flow["tasks"]:
        name = (task["group"], task["name"])
        retry = seen.get(name, 0)
        seen[name] = retry + 1
        keys.append(f"{flow['id']}/{task['group']}/{task['name']}/{retry}")
    return keys


def wait_finished(server, wids, timeout_s=180):
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        flows = {w: get_workflow(server.port, w) for w in wids}
        if all(f["status"] in ("COMPLETED", "CANCELED") or f["status"].startswith("FAILED")
               for f in flows.values()):
            return flows
        time.sleep(0.3)
    raise AssertionError(f"not finished in {timeout_s} s: "
                         f"{ {w: f['status'] for w, f in flows.items()} }\n{server.tail()}")


def array_indexes(text):
    """Slurm's array task string ("0-2,5", "1") as indexes."""
    out = []
    for part in text.split("%")[0].split(","):
        low, _, high = part.partition("-")
        low, high = low.strip("[]"), high.strip("[]")
        if low:
            out.extend(range(int(low), int(high or low) + 1))
    return out


def slurm_job_list(env):
    """[(attempt key, state, node, job id)] of every job of gpupool's slurmctld still knows; an
    array's elements (comment "gpupool array:KEY0 KEY1 ...") under their own keys, job id
    "ARRAY_INDEX"."""
    jobs = []
    for line in slurm(env, "squeue", "-h", "-t", "all", "-o", "%j|%T|%N|%F|%K|%k").splitlines():
        name, state, node, array_id, index, comment = line.split("|", 5)
        if comment.startswith("gpupool array:"):
            keys = comment[len("gpupool array:"):].split(" ")
            for i in array_indexes(index):
                jobs.append((keys[i], state, node, f"{array_id}_{i}"))
        else:
            jobs.append((name, state, node, array_id))
    return jobs


def slurm_job_sizes(env):
    """{attempt key: (CPUs, memory)} of the jobs slurmctld still knows, as squeue gives them; an
    array's elements (one size for all) under their own keys."""
    sizes = {}
    for line in slurm(env, "squeue", "-h", "-t", "all", "-o", "%j|%C|%m|%k").splitlines():
        name, cpus, memory, comment = line.split("|", 3)
        keys = [name]
        if comment.startswith("gpupool array:"):
            keys = comment[len("gpupool array:"):].split(" ")
        for key in keys:
            sizes[key] = (cpus, memory)
    return sizes


def slurm_jobs(env):
    """{attempt key: [(state, node)]} of every job slurmctld still knows."""
    jobs = {}
    for key, state, node, _ in slurm_job_list(env):
        jobs.setdefault(key, []).append((state, node))
    return jobs


def check_nodes(server, env):
    status, body = request(server.port, "GET", "/api/nodes")
    assert status == 200, body
    nodes = json.loads(body)["items"]
    names = sorted(n["metadata"]["name"] for n in nodes)
    want = [f"gpu{i:04d}" for i in range(1, int(env["GPUPOOL_SLURM_NODES"]) + 1)]
    assert names == want, f"imported nodes {names}, want {want}"
    for n in nodes:
        labels = n["metadata"]["labels"]
        assert labels.get("nvidia.com/gpu.product") == "a100", labels
        assert labels.get("partition.slurm.gpupool.io/gpu") == "true", labels
        assert n["status"]["capacity"]["nvidia.com/gpu"] in ("8", 8), n["status"]


def node_object(server, name):
    status, body = request(server.port, "GET", "/api/nodes")
    assert status == 200, body
    return next(n for n in json.loads(body)["items"] if n["metadata"]["name"] == name)


def check_node_down(server, env):
    """A node set DOWN under a running task: the task fails with Slurm's NODE_FAIL (the default
    exit actions), and gpupool sees the node unschedulable with Slurm's reason."""
    wid = submit(server.port, workflow_yaml("slurm-e2e-down", [("long", 1, "sleep 120")]))
    deadline = time.time() + 60
    while time.time() < deadline:
        task = get_workflow(server.port, wid)["tasks"][0]
        if task["status"] == "RUNNING" and slurm_jobs(env).get(
                attempt_keys(get_workflow(server.port, wid))[0], [("", "")])[0][0] == "RUNNING":
            break
        time.sleep(0.2)
    node = task["node"]
    slurm(env, "scontrol", "update", f"nodename={node}", "state=down", "reason=e2e power loss")
    try:
        flow = wait_finished(server, [wid], timeout_s=60)[wid]
        task = flow["tasks"][0]
        assert flow["status"] == "FAILED", f"{flow['status']}: {task}"
        assert "NODE_FAIL" in task["message"], task["message"]
        deadline = time.time() + 30
        while time.time() < deadline:
            obj = node_object(server, node)
            if obj.get("spec", {}).get("unschedulable"):
                break
            time.sleep(0.2)
        assert obj.get("spec", {}).get("unschedulable"), f"{node} still schedulable: {obj}"
        taint = obj["spec"]["taints"][0]
        assert (taint["key"], taint["value"]) == ("slurm.gpupool.io/unavailable", "down"), taint
        assert obj["metadata"]["annotations"]["slurm.gpupool.io/reason"] == "e2e power loss"
        print(f"node down: the task on {node} failed ({task['message']}); the node is "
              f"unschedulable in gpupool")
    finally:
        slurm(env, "scontrol", "update", f"nodename={node}", "state=resume")


def shared_jobs_dir(env, name):
    """A directory for this run's job files, writable by the jobs' user (slurmd runs them as
    another user than the test)."""
    path = os.path.join(env["GPUPOOL_SLURM_JOBS_DIR"], f"e2e-{name}-{os.getpid()}")
    os.makedirs(path)
    os.chmod(path, 0o1777)
    return path


def run_workflow(args, env, workdir):
    db = f"sqlite:{os.path.join(workdir, 'gpupool.db')}"
    server = Server(args.serve, workdir, env, args.transport, db, "serve")
    try:
        check_nodes(server, env)
        out = shared_jobs_dir(env, args.transport)
        tasks = [(name, gpus, f'echo "$SLURMD_NODENAME $CUDA_VISIBLE_DEVICES" > {out}/{name}.txt')
                 for name, gpus in (("two", 2), ("one", 1), ("none", 0))]
        wid = submit(server.port, workflow_yaml(f"slurm-e2e-{args.transport}", tasks))
        failing = submit(server.port, workflow_yaml(
            f"slurm-e2e-fail-{args.transport}", [("bad", 1, "exit 3")]))
        flows = wait_finished(server, [wid, failing])
        flow = flows[wid]
        assert flow["status"] == "COMPLETED", f"{flow['status']}: {json.dumps(flow['tasks'])}"
        jobs = slurm_jobs(env)
        sizes = slurm_job_sizes(env)
        for task, key in zip(flow["tasks"], attempt_keys(flow)):
            name = task["name"]
            gpus = dict((t[0], t[1]) for t in tasks)[name]
            with open(os.path.join(out, f"{name}.txt")) as f:
                node, _, devices = f.read().strip().partition(" ")
            assert node == task["node"], f"{name} ran on {node}, gpupool chose {task['node']}"
            got = len([d for d in devices.split(",") if d]) if gpus else 0
            assert got == gpus, f"{name}: CUDA_VISIBLE_DEVICES={devices!r}, asked for {gpus}"
            assert jobs.get(key) == [("COMPLETED", node)], f"{key}: Slurm jobs {jobs.get(key)}"
            # The task's own 1 CPU and 1 GiB: the default pool on Slurm has no sidecar.
            assert sizes.get(key) == ("1", "1G"), f"{key}: Slurm job CPUs, memory {sizes.get(key)}"
        # The step's submissions went behind a gate (a job they depended on), which
        # gpupool cancelled once they were in: Slurm took hold, afterany and the cancel.
        gates = [state for key, state, _, _ in slurm_job_list(env) if key == "gpupool-gate"]
        assert gates and all(state == "CANCELLED" for state in gates), f"gates: {gates}"
        bad = flows[failing]
        assert bad["status"] == "FAILED", bad["status"]
        assert bad["tasks"][0]["exit_code"] == 3, bad["tasks"][0]
        assert "exit code 3" in bad["tasks"][0]["message"], bad["tasks"][0]["message"]
        print(f"workflow ({args.transport}): {len(flow['tasks'])} tasks ran on the chosen nodes "
              f"with their GPUs; a failing task failed its workflow with exit code 3")
        if args.transport == "tcp":
            check_node_down(server, env)
    finally:
        server.stop()


def gpupool_cli(args, port, *words, token="dev:slurm-test:osmo-admin", timeout=120):
    env = {**os.environ, "GPUPOOL_TOKEN": token}
    return subprocess.run([args.cli, "--server", f"http://127.0.0.1:{port}", *words], env=env,
                          capture_output=True, text=True, timeout=timeout)


def wait_for(what, check, timeout_s=60, state=None):
    """`state()`, when given, says what was seen last, for the timeout's message."""
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}" + (f": {state()}" if state else ""))


def run_logs(args, env, workdir):
    db = f"sqlite:{os.path.join(workdir, 'gpupool.db')}"
    server = Server(args.serve, workdir, env, "tcp", db, "serve")
    try:
        gate = shared_jobs_dir(env, "logs")
        # "talker" writes a line, waits until the test lets it go on, then writes a line with a
        # character of three bytes (U+2713) and ends; "quiet" writes to stderr (the same file).
        talker = (f"echo first; while [ ! -e {gate}/go ]; do sleep 0.2; done; "
                  "printf 'second \\342\\234\\223\\n'")
        wid = submit(server.port, workflow_yaml("slurm-e2e-logs", [
            ("talker", 1, talker), ("quiet", 0, "echo oops >&2")]))

        def chunk(task, offset=0, token=ADMIN):
            status, body = request(server.port, "GET",
                                   f"/api/workflow/{wid}/logs?task={task}&offset={offset}",
                                   headers={"Authorization": token})
            return status, json.loads(body)

        first = wait_for("the talker's first line", lambda: (
            lambda c: c if c[0] == 200 and c[1]["text"] == "first\n" else None)(chunk("talker")))[1]
        assert first["complete"] is False and first["status"] == "RUNNING", first
        assert first["next_offset"] == 6 and first["size"] == 6, first
        # Offline there is no backend to read from.
        offline = subprocess.run([args.cli, "--db", db, "workflow", "logs", wid],
                                 capture_output=True, text=True, timeout=60)
        assert offline.returncode == 2 and "--server" in offline.stderr, offline
        # Refused to someone who may not read the workflow, as GET /api/workflow/ID is.
        status, refused = chunk("talker", token="Bearer dev:eve:")
        assert status == 403, (status, refused)

        follow = subprocess.Popen(
            [args.cli, "--server", f"http://127.0.0.1:{server.port}", "workflow", "logs", wid,
             "talker", "--follow"],
            env={**os.environ, "GPUPOOL_TOKEN": "dev:slurm-test:osmo-admin"},
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            time.sleep(1)
            assert follow.poll() is None, "--follow returned while the task runs"
            open(os.path.join(gate, "go"), "w").close()
            out, err = follow.communicate(timeout=120)
        finally:
            if follow.poll() is None:
                follow.kill()
        assert follow.returncode == 0, err
        assert out == "first\nsecond \u2713\n", repr(out)

        flow = wait_finished(server, [wid])[wid]
        assert flow["status"] == "COMPLETED", flow["status"]
        status, rest = chunk("talker", 6)
        assert status == 200 and rest["text"] == "second \u2713\n" and rest["complete"], rest
        listing = gpupool_cli(args, server.port, "workflow", "logs", wid)
        assert listing.returncode == 0, listing.stderr
        want = "==> talker <==\nfirst\nsecond \u2713\n\n==> quiet <==\noops\n"
        assert listing.stdout == want, repr(listing.stdout)
        print("logs: a running task's output read by offset, followed until it ended, every "
              "task's output under its header; refused without access, and offline")
    finally:
        server.stop()


def run_restart(args, env, workdir):
    db = f"sqlite:{os.path.join(workdir, 'gpupool.db')}"
    out = shared_jobs_dir(env, "restart")
    server = Server(args.serve, workdir, env, "tcp", db, "before")
    wids = []
    try:
        def wave(first, until):
            for i in range(first, first + 3):
                command = f'echo "$SLURMD_NODENAME" >> {out}/w{i}.txt; sleep 2'
                wids.append(submit(server.port, workflow_yaml(f"restart-{i}", [("t", 1, command)])))
            deadline = time.time() + 60
            while time.time() < deadline:
                statuses = [get_workflow(server.port, w)["tasks"][0]["status"] for w in wids]
                if any(s in until for s in statuses[first:]):
                    return statuses
                time.sleep(0.02)
            raise AssertionError(f"no task reached {until}: {statuses}")
        # The first wave runs; the second is killed as soon as gpupool binds one of its tasks,
        # before or while it hands them to Slurm.
        wave(0, ("RUNNING",))
        statuses = wave(3, ("SCHEDULED", "RUNNING"))
    finally:
        server.kill9()
    assert "COMPLETED" not in statuses, f"finished before the kill: {statuses}"
    after = Server(args.serve, workdir, env, "tcp", db, "after")
    try:
        flows = wait_finished(after, wids)
        for wid, flow in flows.items():
            assert flow["status"] == "COMPLETED", f"{wid}: {flow['status']} {flow['tasks']}"
        jobs = slurm_jobs(env)
        for i, wid in enumerate(wids):
            assert len(flows[wid]["tasks"]) == 1, f"{wid}: {flows[wid]['tasks']}"
            task = flows[wid]["tasks"][0]
            key = attempt_keys(flows[wid])[0]
            assert len(jobs.get(key, [])) == 1, f"{key}: Slurm jobs {jobs.get(key)}"
            with open(os.path.join(out, f"w{i}.txt")) as f:
                runs = f.read().split()
            assert runs == [task["node"]], f"{wid} ran {runs}, chosen node {task['node']}"
        print(f"restart: killed with tasks {statuses}; after the restart {len(wids)} workflows "
              f"completed, each task ran exactly once")
    finally:
        after.stop()


def run_ctld_restart(args, env, workdir):
    """slurmctld stops under gpupool and comes back from its saved state: tasks that ran go on,
    tasks placed meanwhile stay SCHEDULED (no job of theirs exists yet) and are submitted once it
    answers, each runs exactly once."""
    db = f"sqlite:{os.path.join(workdir, 'gpupool.db')}"
    out = shared_jobs_dir(env, "ctld")
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts",
                          "slurm-test-cluster.sh")
    server = Server(args.serve, workdir, env, "tcp", db, "serve")
    wids = []

    def submit_wave(first):
        for i in range(first, first + 3):
            command = f'echo "$SLURMD_NODENAME" >> {out}/w{i}.txt; sleep 3'
            wids.append(submit(server.port, workflow_yaml(f"ctld-{i}", [("t", 1, command)])))

    def wait_status(indices, wanted):
        deadline = time.time() + 60
        while time.time() < deadline:
            tasks = [get_workflow(server.port, wids[i])["tasks"][0] for i in indices]
            statuses = [t["status"] for t in tasks]
            if all(s == wanted and t.get("node") for s, t in zip(statuses, tasks)):
                return
            time.sleep(0.1)
        raise AssertionError(f"not {wanted}: {statuses}")

    try:
        submit_wave(0)
        wait_status(range(0, 3), "RUNNING")
        subprocess.run([script, "ctld-stop", args.cluster_dir], check=True)
        try:
            submit_wave(3)  # placed by gpupool while slurmctld is down
            wait_status(range(3, 6), "SCHEDULED")
            time.sleep(1.5)  # several steps: launched, but never RUNNING without a job
            statuses = [get_workflow(server.port, wids[i])["tasks"][0]["status"]
                        for i in range(3, 6)]
            assert statuses == ["SCHEDULED"] * 3, f"placed while slurmctld is down: {statuses}"
        finally:
            subprocess.run([script, "ctld-start", args.cluster_dir], check=True)
        flows = wait_finished(server, wids)
        jobs = slurm_jobs(env)
        for i, wid in enumerate(wids):
            flow = flows[wid]
            assert flow["status"] == "COMPLETED", f"{wid}: {flow['status']} {flow['tasks']}"
            key = attempt_keys(flow)[0]
            assert len(jobs.get(key, [])) == 1, f"{key}: Slurm jobs {jobs.get(key)}"
            with open(os.path.join(out, f"w{i}.txt")) as f:
                runs = f.read().split()
            assert runs == [flow["tasks"][0]["node"]], f"{wid} ran {runs}"
        print(f"slurmctld restart: {len(wids)} workflows (3 placed while it was down) completed, "
              f"each task ran exactly once")
    finally:
        server.stop()


def run_array(args, env, workdir):
    """A step's tasks on one node go to Slurm as one job array: each element runs its own task
    on the chosen node with its GPUs, environment and output file; one element cancelled
    (DELETE /job/ARRAY_INDEX through slurmrestd, as gpupool's Stop does) ends only its task."""
    db = f"sqlite:{os.path.join(workdir, 'gpupool.db')}"
    server = Server(args.serve, workdir, env, "tcp", db, "serve")
    gate = None
    try:
        out = shared_jobs_dir(env, "array")
        gate = os.path.join(out, "go")
        # Each task writes its node, GPUs and key to its own file, says hello on its output,
        # then waits for the gate; quotes in the command test the dispatcher's quoting.
        tasks = [(f"t{i}", 1,
                  f'echo "$SLURMD_NODENAME $CUDA_VISIBLE_DEVICES $GPUPOOL_TASK_KEY" > {out}/t{i}.txt;'
                  f" echo \"hello from t{i}'s job\"; while [ ! -e {gate} ]; do sleep 0.2; done")
                 for i in range(6)]
        # Exit 143 (the cancelled element's SIGTERM) completes a task, so that the workflow
        # goes on and its other tasks are not cancelled by gpupool.
        wid = submit(server.port, workflow_yaml("slurm-e2e-array", tasks).replace(
            "\n    command:", '\n    exitActions: {COMPLETE: "143"}\n    command:'))

        def started():
            flow = get_workflow(server.port, wid)
            if not all(t["status"] == "RUNNING" for t in flow["tasks"]):
                return None
            if not all(os.path.exists(f"{out}/{t[0]}.txt") for t in tasks):
                return None
            return flow
        flow = wait_for("all six tasks running", started, timeout_s=90)
        keys = dict(zip((t["name"] for t in flow["tasks"]), attempt_keys(flow)))
        nodes = {t["name"]: t["node"] for t in flow["tasks"]}
        jobs = {key: (state, node, job) for key, state, node, job in slurm_job_list(env)}
        by_node = {}
        for name, node in nodes.items():
            by_node.setdefault(node, []).append(name)
        arrays = 0
        for node, names in by_node.items():
            ids = {jobs[keys[n]][2].split("_")[0] for n in names}
            if len(names) > 1:
                # One array per node: the same array id, one element per task.
                assert len(ids) == 1, f"{node}: {names} in jobs {ids}"
                assert all("_" in jobs[keys[n]][2] for n in names), {n: jobs[keys[n]] for n in names}
                arrays += 1
        assert arrays >= 1, f"no node ran several tasks: {nodes}"
        devices_seen = {}
        for name, key in keys.items():
            with open(f"{out}/{name}.txt") as f:
                node, devices, task_key = f.read().split()
            assert node == nodes[name], f"{name} ran on {node}, gpupool chose {nodes[name]}"
            assert task_key == key, f"{name}: GPUPOOL_TASK_KEY={task_key}, want {key}"
            assert len(devices.split(",")) == 1, f"{name}: CUDA_VISIBLE_DEVICES={devices}"
            devices_seen.setdefault(node, []).append(devices)
            assert jobs[key][1] == node, f"{key}: Slurm ran it on {jobs[key][1]}"
        for node, devices in devices_seen.items():
            assert len(set(devices)) == len(devices), f"{node}: GPUs shared: {devices}"

        # Cancel one element of the array alone.
        node, names = next((n, v) for n, v in by_node.items() if len(v) > 1)
        victim = names[0]
        element = jobs[keys[victim]][2]
        token = slurm(env, "scontrol", "token", f"username={env['GPUPOOL_SLURM_USER']}",
                      "lifespan=600").strip().partition("=")[2]
        status, body = request(int(env["GPUPOOL_SLURM_URL"].rsplit(":", 1)[1]), "DELETE",
                               f"/slurm/v0.0.38/job/{element}",
                               headers={"X-SLURM-USER-NAME": env["GPUPOOL_SLURM_USER"],
                                        "X-SLURM-USER-TOKEN": token})
        assert status == 200, f"DELETE {element}: {status} {body}"
        wait_for(f"{victim} ended", lambda: next(
            t for t in get_workflow(server.port, wid)["tasks"] if t["name"] == victim
        )["status"] != "RUNNING", timeout_s=60)
        still = {key: state for key, state, _, _ in slurm_job_list(env)}
        for name in names[1:]:
            assert still[keys[name]] == "RUNNING", f"{name} is {still[keys[name]]} after {element}"
        open(gate, "w").close()
        flow = wait_finished(server, [wid])[wid]
        by_name = {t["name"]: t for t in flow["tasks"]}
        assert by_name[victim]["exit_code"] == 143, by_name[victim]
        for name in names[1:]:
            assert by_name[name]["status"] == "COMPLETED", by_name[name]
        # Each task's output is its own file, read by gpupool's logs route.
        for name in nodes:
            status, body = request(server.port, "GET", f"/api/workflow/{wid}/logs?task={name}",
                                   headers={"Authorization": ADMIN})
            assert status == 200, (status, body)
            text = json.loads(body)["text"]
            assert text.startswith(f"hello from {name}'s job\n"), (name, text)
        print(f"array: {len(tasks)} tasks on {len(by_node)} nodes, {arrays} array(s); each "
              f"element ran its task with its GPU, key and output; {element} ({victim}) was "
              f"cancelled alone")
    finally:
        if gate:  # a failed run's tasks end too, rather than hold GPUs for the next test
            open(gate, "w").close()
        server.stop()


# Two teams over the loopback cluster's one partition (3 nodes x 8 GPUs): each pool is a copy of
# the default pool with a guarantee of 8 GPUs, i.e. its deserved quota in the nodes' node pool.
QUOTA_POOLS = """\
apiVersion: gpupool.io/v1
kind: Pool
metadata: {name: NAME}
spec:
  backend: default
  default_platform: default
  common_default_variables: {USER_CPU: 1, USER_GPU: 0, USER_MEMORY: 1Gi, USER_STORAGE: 1Gi}
  common_resource_validations: [default_cpu, default_memory, default_storage]
  common_pod_template: [default_user]
  platforms:
    default: {description: all of the partition's nodes}
  resources: {gpu: {guarantee: 8}}
"""
QUOTA_DESERVED = 8
QUOTA_TASK_GPUS = 4


class Teams:
    """The quota scenario's workflows, one 4-GPU task each, by team ("a", "b"): what gpupool and
    Slurm say about them, and the GPUs each team holds."""

    def __init__(self, server, env, out):
        self.server, self.env, self.out = server, env, out
        self.wids = {"a": [], "b": []}
        self.capacity = 8 * int(env["GPUPOOL_SLURM_NODES"])
        # slurmctld keeps ended jobs (MinJobAge): names of this run's own tell its jobs apart.
        self.prefix = f"quota-{os.getpid()}"
        self.last = {}

    def submit(self, team, name, priority, command):
        text = workflow_yaml(name, [("t", QUOTA_TASK_GPUS, command)]).replace(
            "\n  resources:", f"\n  priority: {priority}\n  resources:", 1)
        status, body = request(self.server.port, "POST", f"/api/pool/team-{team}/workflow", text,
                               {"Content-Type": "application/yaml"})
        assert status == 200, f"submit to team-{team}: {status} {body}"
        self.wids[team].append(json.loads(body)["workflow_id"])
        return self.wids[team][-1]

    def tasks(self):
        """{workflow id: (team, its task, its attempt key)}; checks on the way that neither
        team, nor any node, runs more GPUs than there are."""
        out, held, per_node = {}, {"a": 0, "b": 0}, {}
        for team, wids in self.wids.items():
            for wid in wids:
                flow = get_workflow(self.server.port, wid)
                task = flow["tasks"][-1]
                out[wid] = (team, task, attempt_keys(flow)[-1])
                if task["status"] == "RUNNING":
                    held[team] += QUOTA_TASK_GPUS
                    per_node[task["node"]] = per_node.get(task["node"], 0) + QUOTA_TASK_GPUS
        assert held["a"] + held["b"] <= self.capacity, f"more GPUs running than exist: {held}"
        assert all(n <= 8 for n in per_node.values()), f"a node over its 8 GPUs: {per_node}"
        return out

    def held(self, tasks, team):
        return sum(QUOTA_TASK_GPUS for t, task, _ in tasks.values()
                   if t == team and task["status"] == "RUNNING")

    def record(self):
        """Shell that appends the run's node and GPUs to the file of its workflow (the first
        part of the attempt key): a task evicted and run again writes a second line."""
        return (f'echo "$SLURMD_NODENAME $CUDA_VISIBLE_DEVICES" >> '
                f'"{self.out}/${{GPUPOOL_TASK_KEY%%/*}}.txt"; ')

    def ran(self, wid):
        """[(node, CUDA_VISIBLE_DEVICES)] of each run of the workflow's task, from its file."""
        path = os.path.join(self.out, f"{wid}.txt")
        if not os.path.exists(path):
            return []
        with open(path) as f:
            return [tuple(line.split()) for line in f.read().splitlines() if line.strip()]

    def running_on_slurm(self, wids, runs=1):
        """The tasks of `wids` RUNNING in gpupool and in Slurm, each with `runs` lines written;
        None until then (`self.last` says where each one is, for the timeout's message)."""
        tasks, jobs = self.tasks(), slurm_jobs(self.env)
        self.last = {tasks[w][2]: (tasks[w][1]["status"], tasks[w][1]["node"],
                                   tasks[w][1]["message"][:200], jobs.get(tasks[w][2]),
                                   self.ran(w)) for w in wids}
        for wid in wids:
            _, task, key = tasks[wid]
            if task["status"] != "RUNNING" or len(self.ran(wid)) != runs:
                return None
            if not any(state == "RUNNING" for state, _ in jobs.get(key, [])):
                return None
        return tasks


class MessageWatcher:
    """Every message the workflows' tasks show while it runs. An evicted task says so
    for one scheduling step (100 ms) only, then why it waits: asked as fast as the server
    answers, apart from the slower checks on Slurm."""

    def __init__(self, port, wids):
        self.port, self.wids = port, wids
        self.seen, self.done = {}, threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.done.is_set():
            for wid in self.wids:
                task = get_workflow(self.port, wid)["tasks"][-1]
                self.seen.setdefault(wid, set()).add(task["message"])
            time.sleep(0.02)  # a fifth of a step: the message is still seen

    def stop(self):
        self.done.set()
        self.thread.join(timeout=30)
        return self.seen


def metric(port, series):
    """The value of one series of the server's /metrics, 0 when absent."""
    status, body = request(port, "GET", "/metrics")
    assert status == 200, f"/metrics: {status}"
    for line in body.splitlines():
        if line.startswith(series + " "):
            return float(line.split()[-1])
    return 0


def check_runs(teams, tasks, jobs, wids):
    """Each task of `wids` runs in Slurm on the node gpupool chose, with 4 GPUs of its own: no
    two running tasks on a node share a GPU."""
    devices = {}
    for wid in wids:
        _, task, key = tasks[wid]
        node, visible = teams.ran(wid)[-1]
        assert node == task["node"], f"{key} ran on {node}, gpupool chose {task['node']}"
        running = [n for state, n in jobs[key] if state == "RUNNING"]
        assert running == [node], f"{key}: Slurm jobs {jobs[key]}, gpupool chose {node}"
        gpus = visible.split(",")
        assert len(gpus) == QUOTA_TASK_GPUS, f"{key}: CUDA_VISIBLE_DEVICES={visible}"
        for gpu in gpus:
            other = devices.get((node, gpu))
            assert other is None, f"GPU {gpu} of {node} is {key}'s and {other}'s"
            devices[node, gpu] = key


def borrow(teams):
    """Team B fills the cluster at LOW priority, three times its quota; returns its workflows."""
    for i in range(teams.capacity // QUOTA_TASK_GPUS):
        teams.submit("b", f"{teams.prefix}-b{i}", "LOW", teams.record() + "sleep 600")
    tasks = wait_for("team B's LOW tasks running on Slurm",
                     lambda: teams.running_on_slurm(teams.wids["b"]), timeout_s=90,
                     state=lambda: teams.last)
    check_runs(teams, tasks, slurm_jobs(teams.env), teams.wids["b"])
    held = teams.held(tasks, "b")
    assert held == teams.capacity and held > QUOTA_DESERVED, f"team B holds {held} GPUs"
    return tasks


def reclaim(teams, gate):
    """Team A, the owner, submits its quota at NORMAL: as many of B's over-quota tasks are
    cancelled in Slurm and requeued in gpupool, A's run on the GPUs they freed."""
    before = teams.tasks()
    for i in range(QUOTA_DESERVED // QUOTA_TASK_GPUS):
        teams.submit("a", f"{teams.prefix}-a{i}", "NORMAL",
                     teams.record() + f"while [ ! -e {gate} ]; do sleep 0.2; done")
    watcher = MessageWatcher(teams.server.port, teams.wids["b"])
    try:
        tasks = wait_for("team A's tasks running on Slurm",
                         lambda: teams.running_on_slurm(teams.wids["a"]), timeout_s=90,
                         state=lambda: teams.last)
    finally:
        messages = watcher.stop()
    jobs = slurm_jobs(teams.env)
    victims = [w for w in teams.wids["b"] if tasks[w][1]["status"] != "RUNNING"]
    assert len(victims) == QUOTA_DESERVED // QUOTA_TASK_GPUS, f"reclaimed {victims}"
    for wid in victims:
        _, task, key = tasks[wid]
        # Requeued, not failed: pending again under the same attempt key, its node given up.
        assert task["status"] == "PENDING" and task["node"] == "", f"{key}: {task}"
        said = [m for m in messages.get(wid, ())
                if "eviction (reclaim): reclaimed by queue team-a" in m
                or "evicted (reclaim): reclaimed by queue team-a" in m]
        assert said, f"{key}: never said it was reclaimed: {messages.get(wid)}"
        assert [s for s, _ in jobs[key]] == ["CANCELLED"], f"{key}: Slurm jobs {jobs[key]}"
    survivors = [w for w in teams.wids["b"] if w not in victims]
    check_runs(teams, tasks, jobs, teams.wids["a"] + survivors)
    freed = sorted(before[w][1]["node"] for w in victims)
    taken = sorted(tasks[w][1]["node"] for w in teams.wids["a"])
    assert taken == freed, f"team A runs on {taken}, the reclaimed GPUs were on {freed}"
    held_a, held_b = teams.held(tasks, "a"), teams.held(tasks, "b")
    assert held_a >= QUOTA_DESERVED, f"team A holds {held_a} GPUs, deserves {QUOTA_DESERVED}"
    assert held_b <= teams.capacity - held_a, f"team B holds {held_b} of {teams.capacity}"
    # Slurm agrees: the GPUs of each team's RUNNING jobs are what gpupool says it holds.
    in_slurm = {team: sum(QUOTA_TASK_GPUS for w in teams.wids[team]
                          for state, _ in jobs.get(tasks[w][2], []) if state == "RUNNING")
                for team in "ab"}
    assert in_slurm == {"a": held_a, "b": held_b}, f"Slurm runs {in_slurm} GPUs per team"
    # Only an eviction takes a task from RUNNING back to PENDING.
    requeued = metric(teams.server.port, 'gpupool_task_transitions_total{from="RUNNING",'
                      'to="PENDING"}')
    assert requeued == len(victims), f"RUNNING -> PENDING {requeued} times, {len(victims)} victims"
    return victims, said[0]


def run_quota_reclaim(args, env, workdir):
    """Two pools over one partition keep their quotas: B borrows A's idle GPUs at LOW, A
    reclaims them; B's evicted tasks run again, under the same keys, once A's end."""
    # The scenario counts every GPU of the cluster: jobs an earlier test left running (a failed
    # one whose tasks wait for a gate that never opened) would hold some.
    cancel_live_jobs(env, "an earlier test left running")
    db = f"sqlite:{os.path.join(workdir, 'gpupool.db')}"
    server = Server(args.serve, workdir, env, "tcp", db, "serve")
    teams = None
    try:
        pools = os.path.join(workdir, "pools.yaml")
        with open(pools, "w") as f:
            f.write("---\n".join(QUOTA_POOLS.replace("NAME", f"team-{t}") for t in "ab"))
        applied = gpupool_cli(args, server.port, "apply", "-f", pools)
        assert applied.returncode == 0, f"apply: {applied.stdout}{applied.stderr}"
        out = shared_jobs_dir(env, "quota")
        teams = Teams(server, env, out)
        borrow(teams)
        gate = os.path.join(out, "go")
        victims, said = reclaim(teams, gate)
        # A's tasks end: the requeued B tasks run again, each as a new job of its key.
        open(gate, "w").close()
        tasks = wait_for("the reclaimed tasks running again", lambda: teams.running_on_slurm(
            victims, runs=2), timeout_s=90, state=lambda: teams.last)
        jobs = slurm_jobs(env)
        for wid in victims:
            key = tasks[wid][2]
            states = sorted(state for state, _ in jobs[key])
            assert states == ["CANCELLED", "RUNNING"], f"{key}: Slurm jobs {jobs[key]}"
        check_runs(teams, tasks, jobs, teams.wids["b"])
        print(f"quota-reclaim: team B borrowed {teams.capacity} GPUs at LOW (deserved "
              f"{QUOTA_DESERVED}); team A's {QUOTA_DESERVED} reclaimed {len(victims)} of its "
              f"jobs (cancelled in Slurm; {said!r}); A ran on the freed GPUs, then B's "
              f"evicted tasks ran again")
    finally:
        stop_quota_work(server, env, teams)


LIVE_STATES = ("RUNNING", "PENDING", "COMPLETING", "CONFIGURING")

HPC_POOL = QUOTA_POOLS.replace("NAME", "hpc").replace("backend: default", "backend: hpc").replace(
    "  resources: {gpu: {guarantee: 8}}\n", "")


def run_backend_config(args, env, workdir):
    """`gpupool serve --backend config:hpc`: the BACKEND config hpc says how to reach Slurm (URL,
    token file, user, output directory); its nodes carry gpupool.io/backend=hpc, so the pool
    naming BACKEND hpc runs there and the default pool (BACKEND default) does not."""
    db = f"sqlite:{os.path.join(workdir, 'gpupool.db')}"
    out = shared_jobs_dir(env, "backend-config")
    config = os.path.join(workdir, "hpc.json")
    with open(config, "w") as f:
        json.dump({"description": "the loopback Slurm cluster", "slurm": {
            "url": env["GPUPOOL_SLURM_URL"], "jwt_file": write_token(env, workdir),
            "user": env["GPUPOOL_SLURM_USER"], "output_dir": env["GPUPOOL_SLURM_JOBS_DIR"]}}, f)
    pools = os.path.join(workdir, "pools.yaml")
    with open(pools, "w") as f:
        f.write(HPC_POOL)
    for words in (["config", "update", "BACKEND", "hpc", "-f", config], ["apply", "-f", pools]):
        done = subprocess.run([args.cli, *words, "--db", db], capture_output=True, text=True,
                              timeout=60)
        assert done.returncode == 0, f"{words}: {done.stdout}{done.stderr}"
    server = Server(args.serve, workdir, env, "tcp", db, "serve",
                    backend=["--backend", "config:hpc"])
    try:
        node = node_object(server, "gpu0001")
        assert node["metadata"]["labels"].get("gpupool.io/backend") == "hpc", node["metadata"]
        text = workflow_yaml("slurm-e2e-hpc",
                             [("where", 1, f'echo "$SLURMD_NODENAME" > {out}/where.txt')])
        status, body = request(server.port, "POST", "/api/pool/hpc/workflow", text,
                               {"Content-Type": "application/yaml"})
        assert status == 200, f"submit to hpc: {status} {body}"
        wid = json.loads(body)["workflow_id"]
        # The default pool (BACKEND default) has no node here: refused at submission, with why.
        status, body = request(server.port, "POST", "/api/pool/default/workflow",
                               workflow_yaml("slurm-e2e-default", [("stray", 1, "true")]),
                               {"Content-Type": "application/yaml"})
        assert status == 400 and "no nodes in platform default of pool default" in body, body
        flow = wait_finished(server, [wid])[wid]
        assert flow["status"] == "COMPLETED", f"{flow['status']}: {json.dumps(flow['tasks'])}"
        with open(os.path.join(out, "where.txt")) as f:
            ran_on = f.read().strip()
        assert ran_on == flow["tasks"][0]["node"], (ran_on, flow["tasks"][0])
        print(f"backend-config: BACKEND hpc's slurm settings connected gpupool; pool hpc's task "
              f"ran on {ran_on}; the default pool (BACKEND default) was refused: no nodes")
    finally:
        server.stop()


def cancel_live_jobs(env, why):
    """Cancels the jobs still live in Slurm and waits (bounded) until they are gone: the tests
    run one at a time, so any such job is one an earlier run left behind."""
    left = [job for _, state, _, job in slurm_job_list(env) if state in LIVE_STATES]
    if not left:
        return
    print(f"cancelling {len(left)} jobs {why}: {left}")
    subprocess.run(["scancel", *left], env={**os.environ, "SLURM_CONF": env["SLURM_CONF"]})
    wait_for("the cancelled jobs gone", lambda: not any(
        state in LIVE_STATES for _, state, _, _ in slurm_job_list(env)), timeout_s=60)


def stop_quota_work(server, env, teams):
    """Cancels the scenario's workflows so that the next test finds the cluster idle; what
    gpupool leaves running is cancelled in Slurm."""
    for wid in (teams.wids["a"] + teams.wids["b"]) if teams else []:
        request(server.port, "POST", f"/api/workflow/{wid}/cancel")
    deadline = time.time() + 60
    while time.time() < deadline and any(s in LIVE_STATES for _, s, _, _ in slurm_job_list(env)):
        time.sleep(0.5)
    server.stop()
    cancel_live_jobs(env, "gpupool left running")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["workflow", "restart", "ctld-restart", "logs", "array",
                                         "quota-reclaim", "backend-config"])
    parser.add_argument("--serve", required=True)
    parser.add_argument("--cli", help="the gpupool binary (logs, quota-reclaim)")
    parser.add_argument("--cluster-state", required=True,
                        help="the fixture's state file: the cluster's directory or why it skipped")
    parser.add_argument("--transport", choices=["tcp", "unix"], default="tcp")
    args = parser.parse_args()
    state = open(args.cluster_state).read().strip() if os.path.exists(args.cluster_state) else ""
    if not state or state.startswith("skipped") or not os.path.exists(os.path.join(state, "env")):
        print(f"SKIPPED: no Slurm test cluster: {state or 'the fixture did not run'}")
        return 77
    args.cluster_dir = state
    env = read_env(args.cluster_dir)
    workdir = tempfile.mkdtemp(prefix="gpupool-slurm-e2e-")
    try:
        if args.mode == "workflow":
            run_workflow(args, env, workdir)
        elif args.mode == "restart":
            run_restart(args, env, workdir)
        elif args.mode == "logs":
            run_logs(args, env, workdir)
        elif args.mode == "array":
            run_array(args, env, workdir)
        elif args.mode == "quota-reclaim":
            run_quota_reclaim(args, env, workdir)
        elif args.mode == "backend-config":
            run_backend_config(args, env, workdir)
        else:
            run_ctld_restart(args, env, workdir)
    except AssertionError as e:
        print(f"FAILED: {e}")
        print(f"(logs kept in {workdir})")
        return 1
    shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
