#!/usr/bin/python3
"""The images of the Dockerfile, built with podman (no Docker engine needed; the base image comes
from scripts/container-setup.sh, never from a registry). The collector: starts a
container, uploads a result and reads it back, checks the image's user, volume and health
check, and removes the container. The agent stage: runs and fingerprints the host."""

import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402
from harness import check, eq  # noqa: E402

IMAGE = "localhost/atomwatch-collector:test"
AGENT_IMAGE = "localhost/atomwatch-agent:test"


def sh(*argv, check_rc=True, timeout=1800):
    out = subprocess.run(list(argv), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         timeout=timeout)
    if check_rc and out.returncode != 0:
        raise AssertionError("%s failed (%d):\n%s" % (" ".join(argv), out.returncode,
                                                     out.stdout[-4000:]))
    return out.stdout


def test_image():
    sh("sh", os.path.join(h.SOURCE_DIR, "scripts", "container-setup.sh"))
    sh("podman", "build", "--pull=never", "--format", "docker", "-t", IMAGE, h.SOURCE_DIR)
    image = json.loads(sh("podman", "image", "inspect", IMAGE))[0]
    config = image["Config"]
    eq(config.get("User"), "atomwatch", "runs as a non-root user")
    check("8080/tcp" in config.get("ExposedPorts", {}), config)
    check("/var/lib/atomwatch" in config.get("Volumes", {}), config)
    eq(config.get("Entrypoint"), ["atomwatch-collector"])
    # podman shows the health check beside Config, docker inside it.
    check((image.get("Healthcheck") or config.get("Healthcheck") or {}).get("Test"),
          "a health check")

    name = "aw-collector-test-%d" % os.getpid()
    port = h.free_port()
    h.on_exit(lambda: subprocess.run(["podman", "rm", "-f", "-v", name],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    sh("podman", "run", "--pull=never", "-d", "--name", name, "-p", "127.0.0.1:%d:8080" % port,
       IMAGE)
    deadline = time.time() + 60
    while True:
        try:
            if h.request(port, "GET", "/healthz", timeout=5).status == 200:
                break
        except OSError:
            pass
        check(time.time() < deadline, "no /healthz:\n" + sh("podman", "logs", name,
                                                            check_rc=False))
        time.sleep(0.5)
    eq(sh("podman", "exec", name, "id", "-u").strip() != "0", True, "not root")
    token = sh("podman", "exec", name, "atomwatch-collector", "token", "create", "--db",
               "sqlite:/var/lib/atomwatch/atomwatch.db", "--role", "agent", "--host",
               "graviton4-a").strip().splitlines()[-1]
    doc = h.make_doc()
    r = h.request(port, "POST", "/api/v1/results", doc, token=token)
    eq(r.status, 201, r)
    r = h.request(port, "GET", "/api/v1/runs/" + doc["run_id"])
    eq(r.status, 200, r)
    eq(json.dumps(r.json(), sort_keys=True), json.dumps(doc, sort_keys=True), "read back")
    out = sh("podman", "healthcheck", "run", name, check_rc=False)
    check("unhealthy" not in out, "health check: " + out)
    sh("podman", "stop", "-t", "30", name)
    logs = sh("podman", "logs", name)
    check("stopped" in logs, "clean stop on SIGTERM:\n" + logs)
    sh("podman", "rm", "-f", "-v", name)


def test_agent_image():
    sh("podman", "build", "--pull=never", "--format", "docker", "--target", "agent", "-t",
       AGENT_IMAGE, h.SOURCE_DIR)
    eq(json.loads(sh("podman", "image", "inspect", AGENT_IMAGE))[0]["Config"].get("User"),
       "atomwatch", "the agent runs as a non-root user")
    check("atomwatch-agent" in sh("podman", "run", "--pull=never", "--rm", AGENT_IMAGE,
                                  "--version"))
    out = subprocess.run(["podman", "run", "--pull=never", "--rm", AGENT_IMAGE, "fingerprint",
                          "--config", "/usr/share/atomwatch/agent.yaml"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, timeout=300)
    eq(out.returncode, 0, out.stderr)
    check(json.loads(out.stdout)["arch"], out.stdout)


def main():
    h.run([("collector: build, run, upload and read back", test_image),
           ("agent: build, run, fingerprint", test_agent_image)], "container images")


if __name__ == "__main__":
    main()
