#!/usr/bin/env python3
"""Checks gpupool-http-load (bench/http_load.cc) against a real gpupool-serve on SQLite.

  http_load_test.py --load BINARY --serve BINARY

- 200 submissions at 100/s on up to 4 connections: every one is answered 2xx, and the store then
  holds exactly 200 workflows of that name (each due request was sent once, none twice).
- The same without a token: all 200 are counted as non-2xx (401), none as errors.
- A port nobody listens on: exit 1, naming the URL; a URL that is not http://: exit 2.
Nothing here depends on timing: the rate is low and only counts are checked.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "server"))
from process_test import (Server, free_port, list_workflows, workflow,  # noqa: E402
                          write_cluster)


def run_load(binary, *args):
    return subprocess.run([binary, *args], capture_output=True, text=True, timeout=120)


def result_fields(stdout):
    line = next((l for l in stdout.splitlines() if l.startswith("RESULT ")), None)
    assert line is not None, f"no RESULT line in:\n{stdout}"
    return dict(re.findall(r"(\S+)=(\S+)", line))


def check(condition, message):
    if not condition:
        print(f"FAIL: {message}")
        sys.exit(1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--load", required=True)
    parser.add_argument("--serve", required=True)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        cluster = write_cluster(workdir, "load", nodes=1, cpus=64)
        server = Server(args.serve, f"sqlite:{workdir}/load.db", cluster, workdir, "serve")
        try:
            body = os.path.join(workdir, "workflow.yaml")
            with open(body, "w") as f:
                f.write(workflow("loadtest"))
            url = f"http://127.0.0.1:{server.port}/api/pool/default/workflow"
            common = ["--url", url, "--method", "POST", "--body-file", body, "--content-type",
                      "application/yaml", "--rate", "100", "--duration", "2", "--connections",
                      "4"]
            done = run_load(args.load, *common, "--header",
                            "Authorization: Bearer dev:load:osmo-admin")
            check(done.returncode == 0, f"load exited {done.returncode}: {done.stderr}")
            fields = result_fields(done.stdout)
            check(fields["answered"] == "200", f"answered {fields['answered']}, want 200")
            check(fields["errors"] == "0" and fields["non2xx"] == "0", f"failures: {fields}")
            stored = len(list_workflows(server.port, "loadtest"))
            check(stored == 200, f"the store holds {stored} workflows, want 200")

            denied = run_load(args.load, *common)
            fields = result_fields(denied.stdout)
            check(fields["answered"] == "200" and fields["non2xx"] == "200" and
                  fields["errors"] == "0", f"without a token: {fields}")
            check(len(list_workflows(server.port, "loadtest")) == 200,
                  "refused submissions were stored")
        finally:
            server.stop()

        nobody = f"http://127.0.0.1:{free_port()}/healthz"
        refused = run_load(args.load, "--url", nobody, "--duration", "1")
        check(refused.returncode == 1 and nobody in refused.stderr,
              f"unreachable target: exit {refused.returncode}, {refused.stderr!r}")
        bad = run_load(args.load, "--url", "ftp://127.0.0.1/x")
        check(bad.returncode == 2 and "http://" in bad.stderr,
              f"bad URL: exit {bad.returncode}, {bad.stderr!r}")
    print("ok: 200 open-loop submissions stored exactly once; 401s counted; bad targets refused")


if __name__ == "__main__":
    main()
