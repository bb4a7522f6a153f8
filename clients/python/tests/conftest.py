"""Starts the real origin and sidecar binaries for the tests, on free ports."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

REPO = Path(__file__).resolve().parents[3]
START_TIMEOUT = 30.0


def bin_dir() -> Path:
    d = Path(os.environ.get("LOOKAHEAD_BIN") or REPO / "bin")
    for name in ("origin", "sidecar"):
        if not os.access(d / name, os.X_OK):
            # A missing binary is a failure, never a skip: run `make build`
            # or point LOOKAHEAD_BIN at the binaries.
            pytest.fail(f"{d / name} is missing; run `make build` in {REPO} or set LOOKAHEAD_BIN")
    return d


@dataclass
class Process:
    name: str
    popen: subprocess.Popen
    log: Path
    grpc: str = ""
    metrics: str = ""

    def log_tail(self, n: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""

    def stop(self, grace: float = 10.0) -> None:
        """SIGTERM, then SIGKILL after grace; safe to call twice."""
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(grace)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()


def start(binary: Path, args: list[str], workdir: Path, name: str = "") -> Process:
    """Runs binary with --addr-file and returns once it has written its addresses.

    name (the binary's by default) names its files in workdir.
    """
    name = name or binary.name
    addr_file = workdir / f"{name}.addr"
    log = workdir / f"{name}.log"
    with open(log, "wb") as out:
        popen = subprocess.Popen(
            [str(binary), *args, "--addr-file", str(addr_file)],
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
        )
    p = Process(name, popen, log)
    deadline = time.monotonic() + START_TIMEOUT
    try:
        while True:
            if addr_file.exists():
                for line in addr_file.read_text().splitlines():
                    f = line.split()
                    # One grpc line per listener; a unix socket's is a bare
                    # path, and the TCP one is what the tests dial.
                    if len(f) == 2 and f[0] == "grpc" and not f[1].startswith("/") and not p.grpc:
                        p.grpc = f[1]
                    elif len(f) == 2 and f[0] == "metrics":
                        p.metrics = f[1]
                if p.grpc:
                    return p
            if popen.poll() is not None:
                raise RuntimeError(f"{p.name} exited with {popen.returncode} at start:\n{p.log_tail()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{p.name} wrote no address in {START_TIMEOUT}s:\n{p.log_tail()}")
            time.sleep(0.01)
    except BaseException:
        p.stop(grace=2)
        raise


def wait_serving(p: Process) -> None:
    """Polls grpc.health.v1.Health/Check (service "") until SERVING."""
    deadline = time.monotonic() + START_TIMEOUT
    last = None
    with grpc.insecure_channel(p.grpc) as ch:
        health = health_pb2_grpc.HealthStub(ch)
        while time.monotonic() < deadline:
            if p.popen.poll() is not None:
                raise RuntimeError(f"{p.name} exited with {p.popen.returncode}:\n{p.log_tail()}")
            try:
                resp = health.Check(health_pb2.HealthCheckRequest(service=""), timeout=1)
                if resp.status == health_pb2.HealthCheckResponse.SERVING:
                    return
                last = health_pb2.HealthCheckResponse.ServingStatus.Name(resp.status)
            except grpc.RpcError as e:
                last = e
            time.sleep(0.02)
    raise RuntimeError(f"{p.name} not SERVING after {START_TIMEOUT}s (last: {last}):\n{p.log_tail()}")


_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)")


def scrape(metrics_addr: str, name: str, required: bool = True) -> float:
    """Sums every sample of counter name (all label sets) on /metrics.

    A labelled counter shows no sample before its first increment; that reads
    as 0 only when not required, so a misspelt name cannot pass for 0.
    """
    with urllib.request.urlopen(f"http://{metrics_addr}/metrics", timeout=5) as resp:
        text = resp.read().decode()
    total, seen = 0.0, False
    for line in text.splitlines():
        m = _SAMPLE.match(line)
        if m and m.group(1) == name:
            total += float(m.group(3))
            seen = True
    if not seen and required:
        raise AssertionError(f"metric {name} not exposed on {metrics_addr}/metrics")
    return total


@dataclass
class Stack:
    origin: Process
    sidecar: Process
    unix_socket: Path
    stale_sidecar: Process  # --ttl 100ms --stale-while-revalidate 1h

    @property
    def target(self) -> str:
        return self.sidecar.grpc

    def counter(self, name: str, required: bool = True) -> float:
        return scrape(self.sidecar.metrics, name, required)


@pytest.fixture(scope="session")
def stack():
    """An origin seeded with three db4o task trees and a sidecar in front of it."""
    bins = bin_dir()
    # mkdtemp under /tmp keeps the unix socket path under the 108-byte limit.
    workdir = Path(tempfile.mkdtemp(prefix="lookahead-py-"))
    procs: list[Process] = []
    try:
        origin = start(bins / "origin", [
            "--listen", "127.0.0.1:0", "--metrics-listen", "", "--data", str(workdir / "data"),
            "--seed", "tasks", "--task-roots", "3",
        ], workdir)
        procs.append(origin)
        wait_serving(origin)
        sock = workdir / "sidecar.sock"
        sidecar = start(bins / "sidecar", [
            "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0",
            "--origin", origin.grpc, "--unix-socket", str(sock), "--health-interval", "100ms",
        ], workdir)
        procs.append(sidecar)
        wait_serving(sidecar)
        # A second sidecar whose copies go stale after 100 ms and are
        # answered (marked stale) while it refetches them.
        stale = start(bins / "sidecar", [
            "--listen", "127.0.0.1:0", "--metrics-listen", "", "--origin", origin.grpc,
            "--ttl", "100ms", "--stale-while-revalidate", "1h", "--health-interval", "100ms",
        ], workdir, "stale-sidecar")
        procs.append(stale)
        wait_serving(stale)
        yield Stack(origin, sidecar, sock, stale)
    finally:
        # Reverse order: the sidecar first, then its origin.
        for p in reversed(procs):
            p.stop()
        shutil.rmtree(workdir, ignore_errors=True)
