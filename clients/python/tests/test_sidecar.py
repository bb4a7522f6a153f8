"""End-to-end tests of the Python client against the real origin and sidecar."""

from __future__ import annotations

import time

import grpc
import pytest

from lookahead import CacheStatus, LookaheadClient, Object, Ref

TREE_SIZE = 781  # db4o task tree: 5 levels of fan-out 5 below a root
ROUND_TRIPS = "lookahead_origin_round_trips_total"


def tree_ids(root: str, levels: int = 5, fanout: int = 5) -> dict[str, int]:
    """The ids of the seeded task tree below root, with their level.

    Task k of a tree (its breadth-first index) is root.k, root itself for
    k = 0, and has the subtasks fanout*k+1 .. fanout*k+fanout.
    """
    ids, k, width = {}, 0, 1
    for level in range(levels):
        for _ in range(width):
            ids[f"{root}.{k}" if k else root] = level
            k += 1
        width *= fanout
    return ids


def walk(client: LookaheadClient, root: str) -> list:
    """Activates a tree the way db4o does: one Get per object, breadth-first."""
    got, queue = [], [root]
    while queue:
        id_ = queue.pop(0)
        resp = client.get(id_)
        assert resp.object.id == id_
        got.append(resp)
        queue.extend(r.id for r in resp.object.refs if r.field == "subtasks")
        assert len(got) <= 10 * TREE_SIZE, "walk does not terminate"
    return got


def settle(stack, name: str = ROUND_TRIPS, quiet: float = 0.3, limit: float = 10.0) -> float:
    """Waits until counter name has not moved for quiet seconds (in-flight prefetches done)."""
    deadline = time.monotonic() + limit
    last = stack.counter(name)
    while time.monotonic() < deadline:
        time.sleep(quiet)
        now = stack.counter(name)
        if now == last:
            return now
        last = now
    raise AssertionError(f"{name} still moving after {limit}s")


@pytest.fixture(scope="module")
def client(stack):
    with LookaheadClient(stack.target, timeout=10) as c:
        yield c


@pytest.fixture(scope="module")
def first_walk(stack, client):
    before = stack.counter(ROUND_TRIPS, required=False)  # no sample before the first round trip
    got = walk(client, "task-0")
    return got, stack.counter(ROUND_TRIPS) - before


def test_walk_by_get_returns_the_whole_tree(first_walk):
    got, round_trips = first_walk
    ids = [r.object.id for r in got]
    assert len(ids) == TREE_SIZE
    assert len(set(ids)) == TREE_SIZE, "an object came back twice"
    assert set(ids) == set(tree_ids("task-0"))
    # The counter is live: a cold walk had to reach the origin.
    assert round_trips > 0


def test_second_walk_is_all_hits_without_round_trips(stack, client, first_walk):
    before = settle(stack)
    hits_before = stack.counter("lookahead_cache_hits_total")
    misses_before = stack.counter("lookahead_cache_misses_total")
    got = walk(client, "task-0")
    assert len(got) == TREE_SIZE
    hit = {CacheStatus.CACHE_STATUS_HIT, CacheStatus.CACHE_STATUS_HIT_PREFETCHED}
    not_hits = [(r.object.id, CacheStatus.Name(r.status)) for r in got if r.status not in hit]
    assert not_hits == []
    assert stack.counter(ROUND_TRIPS) == before
    assert stack.counter("lookahead_cache_hits_total") - hits_before == TREE_SIZE
    assert stack.counter("lookahead_cache_misses_total") == misses_before


def test_get_graph_streams_the_tree_breadth_first(client):
    want = tree_ids("task-1")
    stream = client.get_graph(["task-1"], depth=4)
    results = list(stream)
    ids = [r.object.id for r in results]
    assert len(ids) == TREE_SIZE
    assert set(ids) == set(want) and len(set(ids)) == TREE_SIZE
    levels = [r.level for r in results]
    assert levels == sorted(levels), "levels out of breadth-first order"
    for r in results:
        assert r.level == want[r.object.id], f"{r.object.id} reported at level {r.level}"
    assert [levels.count(lv) for lv in range(5)] == [1, 5, 25, 125, 625]
    assert stream.missing_ids == []


def test_get_graph_stops_early_without_error(client):
    with client.get_graph("task-1", depth=4) as stream:
        first = next(iter(stream))
    assert first.object.id == "task-1" and first.level == 0


def test_batch_get_lists_missing_ids(client):
    resp = client.batch_get(["task-0.1", "no-such-task", "task-0.2", "task-0.1"])
    assert [r.object.id for r in resp.results] == ["task-0.1", "task-0.2"]
    assert list(resp.missing_ids) == ["no-such-task"]


def test_depth_0_hint_turns_prefetch_off(client):
    parent = client.get("task-2.7", depth=0)
    assert parent.status == CacheStatus.CACHE_STATUS_MISS
    assert [r.id for r in parent.object.refs] == [f"task-2.{k}" for k in range(36, 41)]
    child = client.get("task-2.36", depth=0)
    assert child.status == CacheStatus.CACHE_STATUS_MISS, "the child was prefetched"


def test_get_missing_id_is_not_found(client):
    with pytest.raises(grpc.RpcError) as exc:
        client.get("no-such-task")
    assert exc.value.code() == grpc.StatusCode.NOT_FOUND
    assert "no-such-task" in exc.value.details()


def test_get_empty_id_is_invalid_argument(client):
    with pytest.raises(grpc.RpcError) as exc:
        client.get("")
    assert exc.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "empty id" in exc.value.details()


def test_batch_get_over_1000_ids_is_invalid_argument(client):
    ids = [f"task-0.{i}" for i in range(1001)]
    with pytest.raises(grpc.RpcError) as exc:
        client.batch_get(ids)
    assert exc.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    details = exc.value.details()
    assert "ids" in details and "1001" in details and "limit of 1000" in details, details


def test_unix_socket_target(stack):
    with LookaheadClient(f"unix://{stack.unix_socket}", timeout=10) as c:
        resp = c.get("task-2.5", depth=0)
    assert resp.object.id == "task-2.5"
    assert [(r.field, r.id) for r in resp.object.refs] == [("subtasks", f"task-2.{k}") for k in range(26, 31)]


def test_put_get_delete_write_through(client):
    oid = f"py-put-{time.monotonic_ns()}"
    obj = Object(id=oid, type="Note", payload=b"hello", refs=[Ref(field="parent", id="task-0")])
    assert client.put(obj, expected_version=0) == 1  # 0: must not exist yet
    got = client.get(oid, depth=0)
    assert got.object.payload == b"hello"
    assert got.object.version == 1
    assert [(r.field, r.id) for r in got.object.refs] == [("parent", "task-0")]

    with pytest.raises(grpc.RpcError) as err:
        client.put(obj, expected_version=0)
    assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    obj.payload = b"again"
    assert client.put(obj, expected_version=1) == 2
    assert client.get(oid).object.payload == b"again"

    with pytest.raises(grpc.RpcError) as err:
        client.delete(oid, expected_version=1)
    assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    client.delete(oid, expected_version=2)
    with pytest.raises(grpc.RpcError) as err:
        client.get(oid)
    assert err.value.code() == grpc.StatusCode.NOT_FOUND


def test_invalidate_drops_the_cached_copy(client):
    client.get("task-1.77", depth=0)
    assert client.get("task-1.77", depth=0).status == CacheStatus.CACHE_STATUS_HIT
    assert client.invalidate(["task-1.77", "no-such-task"]) == 1
    assert client.get("task-1.77", depth=0).status == CacheStatus.CACHE_STATUS_MISS


def test_stale_flag_past_the_ttl(stack):
    with LookaheadClient(stack.stale_sidecar.grpc, timeout=10) as sc:
        resp = sc.get("task-1.2", depth=0)
        assert not resp.stale, "a fresh fetch is not stale"
        # Past the 100 ms TTL the sidecar answers its copy marked stale and
        # refetches it in the background: poll until an answer is stale.
        deadline = time.monotonic() + 10
        while not resp.stale:
            assert time.monotonic() < deadline, "no stale answer within 10 s"
            time.sleep(0.05)
            resp = sc.get("task-1.2", depth=0)
        assert resp.object.id == "task-1.2"
        assert resp.status == CacheStatus.CACHE_STATUS_HIT
        with sc.get_graph(["task-1.2"], depth=0) as graph:
            results = list(graph)
        assert [r.object.id for r in results] == ["task-1.2"]
