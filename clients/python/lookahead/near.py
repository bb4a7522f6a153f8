"""The near cache: objects kept in the application's process, kept coherent by
the sidecar over SidecarService.Subscribe (docs/near-cache.md in the
repository has the protocol and its consistency guarantee).

A read answered here is marked by status CACHE_STATUS_UNSPECIFIED (the
sidecar always sets a status) and returns a copy of the object held.
"""

from __future__ import annotations

import queue
import random
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Optional

import grpc

from lookahead.v1 import object_pb2, sidecar_pb2

SUBSCRIBER_HEADER = "lookahead-subscriber"
_ENTRY_OVERHEAD = 160  # bytes counted per entry beyond its object's encoded size
_HELLO_LEASE = 5.0  # seconds a subscription may take to say hello
_REPORT_BATCH = 256  # ids per report of used pushes
REPORT_HEADER = "lookahead-report"  # marks a report: the sidecar answers it without objects


@dataclass
class _Entry:
    obj: Optional[object_pb2.Object]  # None: a floor (tombstone)
    version: int
    size: int
    arrived: float
    deleted: bool = False
    pending: bool = False  # a delete of ours whose version is not known yet
    pushed: bool = False
    used: bool = False
    ref: bool = False  # read since the last eviction pass


@dataclass
class NearStats:
    hits: int = 0
    misses: int = 0
    pushes_received: int = 0
    pushes_used: int = 0
    invalidations: int = 0
    flushes: int = 0
    bytes: int = 0
    objects: int = 0


@dataclass
class Ticket:
    """Taken before a read through the sidecar; a fill is accepted only if
    nothing was lost meanwhile and the read was tracked."""

    gen: int
    subscriber: str = ""

    def metadata(self) -> tuple:
        return ((SUBSCRIBER_HEADER, self.subscriber),) if self.subscriber else ()


@dataclass
class _State:
    entries: "OrderedDict[str, _Entry]" = field(default_factory=OrderedDict)
    bytes: int = 0
    gen: int = 0
    live: bool = False
    subscriber: str = ""
    last_heard: float = 0.0
    lease: float = 0.0
    max_age: float = 0.0


class NearCache:
    """Bounded by budget bytes; fed by one Subscribe stream at a time, run on
    a daemon thread until close()."""

    def __init__(self, stub, budget: int, client_name: str = ""):
        self._stub = stub
        self.budget = budget
        self._name = client_name
        self._lock = threading.Lock()
        self._s = _State()
        self._stats = NearStats()
        self._stop = threading.Event()
        self._call = None
        self._used: "queue.Queue[str]" = queue.Queue(maxsize=4096)
        self._thread = threading.Thread(target=self._run, name="lookahead-near", daemon=True)
        self._thread.start()
        self._reporter = threading.Thread(target=self._report, name="lookahead-near-report", daemon=True)
        self._reporter.start()

    # -- reads ---------------------------------------------------------------

    def get(self, id_: str) -> Optional[object_pb2.Object]:
        """The held object, if the channel is up and was heard from within its
        lease and the copy is younger than the sidecar's max age."""
        now = time.monotonic()
        with self._lock:
            s, e = self._s, self._s.entries.get(id_)
            if (
                e is None
                or e.obj is None
                or not s.live
                or now - s.last_heard > s.lease
                or (s.max_age and now - e.arrived > s.max_age)
            ):
                self._stats.misses += 1
                return None
            e.ref = True
            if e.pushed and not e.used:
                e.used = True
                self._stats.pushes_used += 1
                try:
                    self._used.put_nowait(id_)
                except queue.Full:
                    pass
            self._stats.hits += 1
            return e.obj

    def ticket(self) -> Ticket:
        with self._lock:
            s = self._s
            return Ticket(s.gen, s.subscriber if s.live else "")

    def fill(self, obj: object_pb2.Object, t: Ticket) -> bool:
        """Keeps an answer read with ticket t unless the store was emptied
        since or it is older than what the store knows of its id."""
        with self._lock:
            if not t.subscriber or not self._s.live or self._s.gen != t.gen:
                return False
            return self._put(obj, pushed=False)

    # -- writes of ours ------------------------------------------------------

    def wrote(self, t: Ticket, id_: str, version: int, deleted: bool, ok: bool) -> None:
        """Applies a write of ours before it returns (see docs/near-cache.md)."""
        if not ok:
            self.floor(id_, 0, False, False)
        elif deleted:
            with self._lock:
                current = bool(t.subscriber) and self._s.live and self._s.gen == t.gen
            self.floor(id_, 0, True, current)
        else:
            self.floor(id_, version, False, False)

    # -- the store, under the lock ------------------------------------------

    def _put(self, obj: object_pb2.Object, pushed: bool) -> bool:
        s, id_, v = self._s, obj.id, obj.version
        old = s.entries.get(id_)
        if old is not None:
            if old.obj is None and (old.pending or v < old.version or (old.deleted and v <= old.version)):
                return False  # below the floor
            if old.obj is not None and old.version >= v:
                return False  # as new already
            self._remove(id_)
        size = obj.ByteSize() + len(id_) + _ENTRY_OVERHEAD
        if size > self.budget:
            return False
        self._insert(id_, _Entry(obj, v, size, time.monotonic(), pushed=pushed))
        return True

    def floor(self, id_: str, version: int, deleted: bool, pending: bool) -> None:
        with self._lock:
            old = self._s.entries.get(id_)
            if version == 0 and not pending:
                # No version to refuse by: a read in flight may bring the
                # dropped copy back (an Invalidate, the sidecar's TTL), so
                # every fill in flight is refused.
                if old is not None and old.obj is not None:
                    self._remove(id_)
                    self._stats.invalidations += 1
                self._s.gen += 1
                return
            if old is not None:
                if old.obj is not None:
                    if not deleted and not pending and old.version >= version:
                        return
                    self._stats.invalidations += 1
                elif not pending and version < old.version:
                    return
                self._remove(id_)
            self._insert(id_, _Entry(None, version, len(id_) + _ENTRY_OVERHEAD, time.monotonic(),
                                     deleted=deleted, pending=pending))

    def _insert(self, id_: str, e: _Entry) -> None:
        s = self._s
        s.entries[id_] = e
        s.bytes += e.size
        while s.bytes > self.budget:
            self._evict()

    def _evict(self) -> None:
        # Second chance: the oldest entry not read since it was last passed over.
        s = self._s
        while True:
            id_, e = next(iter(s.entries.items()))
            if e.obj is not None and e.ref:
                e.ref = False
                s.entries.move_to_end(id_)
                continue
            if e.obj is None:
                s.gen += 1  # a floor is lost: fills in flight are refused
            self._remove(id_)
            return

    def _remove(self, id_: str) -> None:
        e = self._s.entries.pop(id_)
        self._s.bytes -= e.size

    def flush(self, live: bool) -> None:
        with self._lock:
            s = self._s
            if s.entries or s.live:
                self._stats.flushes += 1
            s.entries.clear()
            s.bytes = 0
            s.gen += 1
            s.live = live
            if not live:
                s.subscriber = ""

    def stats(self) -> NearStats:
        with self._lock:
            st = NearStats(**self._stats.__dict__)
            st.bytes = self._s.bytes
            st.objects = sum(1 for e in self._s.entries.values() if e.obj is not None)
            return st

    # -- the channel ---------------------------------------------------------

    def _run(self) -> None:
        backoff = 0.01
        while not self._stop.is_set():
            heard = self._session()
            self.flush(False)  # no invalidation channel, no cached data
            if heard:
                backoff = 0.01
            if self._stop.wait(backoff / 2 + random.uniform(0, backoff / 2)):
                return
            backoff = min(2 * backoff, 1.0)

    def _session(self) -> bool:
        req = sidecar_pb2.SubscribeRequest(budget_bytes=self.budget, client_name=self._name)
        call = self._stub.Subscribe(req)
        with self._lock:
            self._call = call
            self._s.last_heard = time.monotonic()
            self._s.lease = _HELLO_LEASE
        if self._stop.is_set():
            call.cancel()
        done = threading.Event()
        dog = threading.Thread(target=self._watchdog, args=(call, done), daemon=True)
        dog.start()
        heard = False
        try:
            for resp in call:
                with self._lock:
                    self._s.last_heard = time.monotonic()
                for ev in resp.events:
                    kind = ev.WhichOneof("event")
                    if kind == "hello":
                        h = ev.hello
                        with self._lock:
                            s = self._s
                            s.live, s.subscriber = True, h.subscriber_id
                            s.lease = 3 * max(h.heartbeat_millis, 1) / 1000
                            s.max_age = h.max_age_millis / 1000
                        heard = True
                    elif kind == "invalidation":
                        inv = ev.invalidation
                        self.floor(inv.id, inv.version, inv.deleted, False)
                    elif kind == "push":
                        with self._lock:
                            self._stats.pushes_received += 1
                            if self._s.live:
                                self._put(ev.push.object, pushed=True)
                    elif kind == "flush":
                        self.flush(True)
        except grpc.RpcError:
            pass
        finally:
            done.set()
            dog.join()
        return heard

    def _watchdog(self, call, done: threading.Event) -> None:
        """Cancels the stream once it has been silent for longer than its lease."""
        while not done.wait(0.05):
            with self._lock:
                silent = time.monotonic() - self._s.last_heard > self._s.lease
            if silent or self._stop.is_set():
                call.cancel()
                return

    def _report(self) -> None:
        """Tells the sidecar, off the application's path, which pushed objects
        were read: its prefetcher moves its window on their first use. The
        report is marked, so the sidecar answers it without objects."""
        while not self._stop.is_set():
            try:
                ids = [self._used.get(timeout=0.1)]
            except queue.Empty:
                continue
            while len(ids) < _REPORT_BATCH:
                try:
                    ids.append(self._used.get_nowait())
                except queue.Empty:
                    break
            try:
                md = self.ticket().metadata() + ((REPORT_HEADER, "used"),)
                self._stub.BatchGet(sidecar_pb2.BatchGetRequest(ids=ids), timeout=5, metadata=md)
            except grpc.RpcError:
                pass

    def close(self) -> None:
        self._stop.set()
        with self._lock:
            call = self._call
        if call is not None:
            call.cancel()
        self._thread.join()
        self._reporter.join()
