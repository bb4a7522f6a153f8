"""The near cache against the real sidecar: in-process answers, invalidations,
pushes, and emptying when the channel breaks."""

from __future__ import annotations

import shutil
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import grpc
import pytest

from conftest import bin_dir, start, wait_serving
from lookahead import CacheStatus, LookaheadClient, Object

NEAR = CacheStatus.CACHE_STATUS_UNSPECIFIED  # the status of a near-cache answer


def eventually(cond, what: str, timeout: float = 10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = cond()
        if got:
            return got
        time.sleep(0.002)
    pytest.fail(f"not within {timeout}s: {what}")


def near_hit(c: LookaheadClient, id_: str):
    # depth=0: no prefetch below id, which other tests' trees must not see.
    return eventually(lambda: (r := c.get(id_, depth=0)).status == NEAR and r, f"{id_} answered by the near cache")


@pytest.fixture(scope="module")
def own():
    """An origin and a sidecar of this module's own: a near cache reports the
    pushed objects it used, which prefetches below them, and the session's
    stack has tests that count its prefetches."""
    bins = bin_dir()
    workdir = Path(tempfile.mkdtemp(prefix="lookahead-py-near-"))
    procs = []
    try:
        origin = start(bins / "origin", ["--listen", "127.0.0.1:0", "--metrics-listen", "",
                                         "--data", str(workdir / "data"), "--seed", "tasks", "--task-roots", "3"], workdir)
        procs.append(origin)
        wait_serving(origin)
        sidecar = start(bins / "sidecar", ["--listen", "127.0.0.1:0", "--metrics-listen", "",
                                           "--origin", origin.grpc], workdir)
        procs.append(sidecar)
        wait_serving(sidecar)
        yield sidecar.grpc
    finally:
        for p in reversed(procs):
            p.stop()
        shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture
def near(own):
    with LookaheadClient(own, near_cache_bytes=1 << 22, client_name="pytest") as c:
        yield c


def test_reads_are_answered_in_process(near):
    obj = near_hit(near, "task-2.1").object
    assert obj.id == "task-2.1"
    resp = near.batch_get(["task-2.1", "task-2.2", "task-2.1", "nope"], depth=0)
    assert [r.object.id for r in resp.results] == ["task-2.1", "task-2.2"]
    assert resp.results[0].status == NEAR
    assert list(resp.missing_ids) == ["nope"]
    st = near.near_stats()
    assert st.hits > 0 and st.misses > 0 and st.objects > 0


def test_own_writes_at_once_others_soon(own, near):
    obj = near_hit(near, "task-2.3").object
    v = near.put(Object(id=obj.id, type=obj.type, refs=obj.refs, payload=b"own"))
    assert near.get("task-2.3").object.version == v, "read your own write"
    near_hit(near, "task-2.3")
    with LookaheadClient(own) as other:
        v2 = other.put(Object(id=obj.id, type=obj.type, refs=obj.refs, payload=b"other"))
    eventually(lambda: near.get("task-2.3").object.version == v2, "another client's write arrives")
    assert near.near_stats().invalidations > 0
    near.delete("task-2.3")
    with pytest.raises(grpc.RpcError) as e:
        near.get("task-2.3")
    assert e.value.code() == grpc.StatusCode.NOT_FOUND


def test_prefetched_objects_are_pushed(near):
    near_hit(near, "task-2.9")
    near.invalidate(["task-2.4", "task-2.21", "task-2.22"])
    near.batch_get(["task-2.4"], depth=2)
    # No read of the child before it arrives: a read would fill the near
    # cache itself.
    eventually(lambda: "task-2.22" in near.near._s.entries, "a prefetched child is pushed")
    assert near.get("task-2.22").status == NEAR
    st = near.near_stats()
    assert st.pushes_received > 0 and st.pushes_used > 0


@contextmanager
def one_tree_sidecar(*sidecar_args: str):
    """An origin with one task tree and a sidecar in front of it, run with
    sidecar_args, for a test that stops or configures them."""
    bins = bin_dir()
    workdir = Path(tempfile.mkdtemp(prefix="lookahead-py-near-"))
    procs = []
    try:
        origin = start(bins / "origin", ["--listen", "127.0.0.1:0", "--metrics-listen", "",
                                         "--data", str(workdir / "data"), "--seed", "tasks", "--task-roots", "1"], workdir)
        procs.append(origin)
        wait_serving(origin)
        sidecar = start(bins / "sidecar", ["--listen", "127.0.0.1:0", "--metrics-listen", "",
                                           "--origin", origin.grpc, *sidecar_args], workdir)
        procs.append(sidecar)
        wait_serving(sidecar)
        yield sidecar
    finally:
        for p in reversed(procs):
            p.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def test_emptied_when_the_channel_breaks():
    with one_tree_sidecar() as sidecar, LookaheadClient(sidecar.grpc, near_cache_bytes=1 << 20, timeout=2) as c:
        near_hit(c, "task-0")
        sidecar.stop()
        eventually(lambda: c.near_stats().objects == 0 and c.near_stats().flushes > 0, "emptied")
        with pytest.raises(grpc.RpcError):
            c.get("task-0")


def test_dropped_when_the_sidecars_copy_reaches_its_ttl():
    with one_tree_sidecar("--ttl", "1s") as sidecar, LookaheadClient(sidecar.grpc, near_cache_bytes=1 << 20) as c:
        near_hit(c, "task-0")
        # No write is made: only the sidecar's expiry can invalidate the copy
        # (the max-age rule stops answering it, counting nothing).
        eventually(lambda: c.near_stats().invalidations > 0, "the expiry reaches the near cache")
        assert c.get("task-0", depth=0).status != NEAR, "read through the sidecar again"
