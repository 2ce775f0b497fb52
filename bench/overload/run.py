#!/usr/bin/env python3
"""Overload: drives a release `abr serve` beyond its capacity with wrk on loopback and
reports what it answered.

Four wrk runs at once for DURATION seconds: `POST /v1/tasks` (tasks that run at once, each
a real Chromium job on the demo site: far more than two job slots can take; the tenant's
limit of sessions at once, `ABR_TENANT_MAX_SESSIONS`, bounds what is accepted; the daily
limit is raised out of the way), `GET /v1/platforms` (a cheap authenticated route), `GET /v1/health` and
`GET /v1/ready` (their latency is the point). Meanwhile the runner's RSS (and its
Chromium's) is sampled every 250 ms. Afterwards every accepted task is awaited and counted:
each must reach a final state, and the number the runner lists must be the number wrk saw
accepted.

Usage: bench/overload/run.py [--seconds 30] [--connections 64]
Needs: Debian's wrk (installed when missing), the release binaries (built when missing),
driver/setup done. Talks to 127.0.0.1 only; stops everything it started.
"""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TOKEN = "overload-token-0123456789abcdef"
SITE = "127.0.0.1:18788"
ABR = "127.0.0.1:18787"


def sh(*args, **kw):
    return subprocess.run(args, check=True, **kw)


def ensure_wrk():
    if shutil.which("wrk"):
        return
    sh("apt-get", "install", "-y", "wrk", stdout=subprocess.DEVNULL)


def binaries():
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    abr = os.path.join(target, "release", "abr")
    site = os.path.join(target, "release", "abr-demo-site")
    if not (os.path.exists(abr) and os.path.exists(site)):
        sh("cargo", "build", "--release", "-p", "abr-service", "-p", "abr-demo", cwd=ROOT)
    return abr, site


def api(method, path, body=None):
    request = urllib.request.Request(
        f"http://{ABR}{path}",
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, json.loads(answer.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def wait_ready(deadline=60):
    end = time.time() + deadline
    while time.time() < end:
        try:
            with urllib.request.urlopen(f"http://{ABR}/v1/health", timeout=2):
                return
        except Exception:
            time.sleep(0.2)
    sys.exit("abr did not start")


def rss_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def descendants(pid):
    out = subprocess.run(["ps", "-e", "-o", "pid=,ppid="], capture_output=True, text=True).stdout
    children = {}
    for line in out.split("\n"):
        parts = line.split()
        if len(parts) == 2:
            children.setdefault(int(parts[1]), []).append(int(parts[0]))
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        for c in children.get(p, []):
            found.append(c)
            todo.append(c)
    return found


def wrk(path, connections, seconds, body_file=None, threads=1):
    env = dict(os.environ, WRK_TOKEN=TOKEN)
    if body_file:
        env["WRK_BODY"] = body_file
    return subprocess.Popen(
        ["wrk", "-t", str(threads), "-c", str(connections), "-d", f"{seconds}s",
         "--timeout", "30s", "--latency", "-s", os.path.join(ROOT, "bench/overload/tally.lua"),
         f"http://{ABR}{path}"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )


def tally(output):
    result = {"status": {}}
    for line in output.split("\n"):
        parts = line.split()
        if len(parts) == 3 and parts[0] == "status":
            result["status"][int(parts[1])] = int(parts[2])
        elif len(parts) == 2 and parts[1].isdigit():
            result[parts[0]] = int(parts[1])
    return result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, default=30)
    parser.add_argument("--connections", type=int, default=64)
    args = parser.parse_args()
    ensure_wrk()
    abr_bin, site_bin = binaries()
    work = tempfile.mkdtemp(prefix="abr-overload-")
    started = []
    try:
        site = subprocess.Popen([site_bin, "--bind", SITE], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        started.append(site)
        env = dict(
            os.environ,
            ABR_API_TOKEN=TOKEN,
            ABR_BIND=ABR,
            ABR_DATA_DIR=os.path.join(work, "data"),
            ABR_INSECURE_DEV="1",
            ABR_TASK_APPROVAL="off",
            ABR_EGRESS_ALLOW_PRIVATE=SITE,
            ABR_TENANT_MAX_EXECUTIONS_PER_DAY="1000000",
            RUST_LOG="warn",
        )
        runner = subprocess.Popen([abr_bin, "serve"], env=env, stdout=subprocess.DEVNULL,
                                  stderr=open(os.path.join(work, "abr.log"), "w"),
                                  start_new_session=True)
        started.append(runner)
        wait_ready()
        body = {
            "plan": {
                "targetUrl": f"http://{SITE}/",
                "steps": [{"type": "extract", "name": "title", "kind": "text",
                           "selector": "h1", "description": "Read the heading"}],
                "verification": {"method": "dom_check", "selector": "h1"},
            }
        }
        body_file = os.path.join(work, "task.json")
        with open(body_file, "w") as f:
            json.dump(body, f)
        # One task first: the browser is warm before the load starts.
        status, first = api("POST", "/v1/tasks", body)
        assert status == 201, (status, first)

        samples = []
        stop = threading.Event()

        def sample():
            while not stop.is_set():
                own = rss_kb(runner.pid)
                browsers = sum(rss_kb(p) for p in descendants(runner.pid))
                samples.append((own, browsers))
                time.sleep(0.25)

        sampler = threading.Thread(target=sample)
        sampler.start()
        s = args.seconds
        runs = {
            "POST /v1/tasks": wrk("/v1/tasks", args.connections, s, body_file, threads=2),
            "GET /v1/platforms": wrk("/v1/platforms", 8, s),
            "GET /v1/health": wrk("/v1/health", 2, s),
            "GET /v1/ready": wrk("/v1/ready", 2, s),
        }
        results = {name: tally(p.communicate()[0]) for name, p in runs.items()}
        stop.set()
        sampler.join()

        # Every accepted task reaches a final state, and the runner lists as many as were
        # accepted (plus the warm-up one).
        accepted = results["POST /v1/tasks"]["status"].get(201, 0) + 1
        deadline = time.time() + 600
        while True:
            listed, final, cursor = 0, 0, None
            while True:
                path = "/v1/tasks?limit=100" + (f"&cursor={cursor}" if cursor else "")
                status, page = api("GET", path)
                assert status == 200, (status, page)
                for task in page["items"]:
                    listed += 1
                    if task["state"] in ("succeeded", "failed", "uncertain", "needs_reauth",
                                         "rejected", "closed"):
                        final += 1
                cursor = page.get("nextCursor")
                if not cursor:
                    break
            if final == listed or time.time() > deadline:
                break
            time.sleep(1)

        own = [a for a, _ in samples]
        browsers = [b for _, b in samples]
        print(f"seconds {s}, task connections {args.connections}")
        for name, r in results.items():
            total = sum(r["status"].values())
            refused = sum(v for k, v in r["status"].items() if k in (429, 503))
            other = {k: v for k, v in r["status"].items() if k not in (200, 201, 429, 503)}
            print(
                f"{name}: {total / s:.0f} req/s, statuses {dict(sorted(r['status'].items()))}, "
                f"refused {100 * refused / max(total, 1):.1f} %, without Retry-After "
                f"{r.get('missing_retry_after', 0)}, other {other}, socket errors "
                f"{r.get('errors', 0)}, p50 {r.get('p50_us', 0) / 1000:.1f} ms, "
                f"p99 {r.get('p99_us', 0) / 1000:.1f} ms, max {r.get('max_us', 0) / 1000:.1f} ms"
            )
        print(f"tasks accepted {accepted}, listed {listed}, final {final}")
        print(
            f"abr RSS start {own[0] // 1024} MiB, peak {max(own) // 1024} MiB, end "
            f"{own[-1] // 1024} MiB; its Chromium peak {max(browsers) // 1024} MiB"
        )
        ok = accepted == listed == final
        print("nothing accepted was lost" if ok else "MISMATCH")
        return 0 if ok else 1
    finally:
        for p in reversed(started):
            try:
                os.killpg(p.pid, signal.SIGTERM)
                p.wait(timeout=30)
            except Exception:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except Exception:
                    pass
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
