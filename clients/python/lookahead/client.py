"""LookaheadClient: a thin, blocking wrapper over the generated SidecarService stub."""

from __future__ import annotations

from typing import Iterable, Iterator, Optional, Sequence

import grpc

from lookahead.near import NearCache, NearStats, Ticket
from lookahead.v1 import object_pb2, sidecar_pb2, sidecar_pb2_grpc


def _hint(depth, max_objects, fields) -> Optional[sidecar_pb2.PrefetchHint]:
    # None everywhere leaves the hint unset, so the sidecar's own settings apply;
    # depth=0 is meaningful (no prefetch for this request) and is sent.
    if depth is None and max_objects is None and not fields:
        return None
    return sidecar_pb2.PrefetchHint(depth=depth, max_objects=max_objects, fields=fields or ())


class GraphStream:
    """The results of one GetGraph call, iterated in breadth-first order.

    Iterating yields lookahead.v1.Result messages (object, status, level).
    missing_ids collects the ids the sidecar reported as nonexistent so far;
    it is complete once iteration has finished. close() cancels the call.
    """

    def __init__(self, call):
        self._call = call
        self.missing_ids: list[str] = []

    def __iter__(self) -> Iterator[sidecar_pb2.Result]:
        try:
            for chunk in self._call:
                self.missing_ids.extend(chunk.missing_ids)
                yield from chunk.results
        finally:
            # Leaving the loop early (break, exception) must not leave the
            # server streaming into a call nobody reads.
            self._call.cancel()

    def close(self) -> None:
        self._call.cancel()

    def __enter__(self) -> "GraphStream":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class LookaheadClient:
    """A connection to one lookahead sidecar; safe to share between threads.

    target is a gRPC target: "127.0.0.1:7070" for TCP or
    "unix:///run/lookahead.sock" for a unix socket. Without credentials the
    channel is plaintext, as befits loopback inside a pod. timeout is the
    default deadline in seconds of every call (None = no deadline); each
    method also takes its own.

    near_cache_bytes > 0 keeps up to that many bytes of objects in this
    process, kept coherent by the sidecar (see lookahead.near): get and
    batch_get answer what it holds without a call, marked by status
    CACHE_STATUS_UNSPECIFIED; client_name labels it in the sidecar's metrics.

    Errors are grpc.RpcError as raised by grpcio: e.code() is
    grpc.StatusCode.NOT_FOUND for a missing object, INVALID_ARGUMENT for bad
    input (e.details() names the problem), UNAVAILABLE when neither the
    cache nor the origin can answer.
    """

    def __init__(
        self,
        target: str,
        *,
        timeout: Optional[float] = None,
        credentials: Optional[grpc.ChannelCredentials] = None,
        options: Sequence[tuple] = (),
        near_cache_bytes: int = 0,
        client_name: str = "",
    ):
        if credentials is None:
            self._channel = grpc.insecure_channel(target, options=options)
        else:
            self._channel = grpc.secure_channel(target, credentials, options=options)
        self._timeout = timeout
        self.stub = sidecar_pb2_grpc.SidecarServiceStub(self._channel)
        """The generated stub, for calls the helpers do not cover."""
        self.near: Optional[NearCache] = (
            NearCache(self.stub, near_cache_bytes, client_name) if near_cache_bytes > 0 else None
        )

    def close(self) -> None:
        if self.near is not None:
            self.near.close()
        self._channel.close()

    def near_stats(self) -> NearStats:
        """The near cache's counters (hits, misses, pushes_received, pushes_used,
        invalidations, flushes) and size; zeros without one."""
        return self.near.stats() if self.near is not None else NearStats()

    def _ticket(self) -> Ticket:
        return self.near.ticket() if self.near is not None else Ticket(0)

    def __enter__(self) -> "LookaheadClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _t(self, timeout):
        return self._timeout if timeout is None else timeout

    def get(
        self,
        id: str,
        depth: Optional[int] = None,
        *,
        max_objects: Optional[int] = None,
        fields: Sequence[str] = (),
        timeout: Optional[float] = None,
    ) -> sidecar_pb2.GetResponse:
        """Returns one object and where the sidecar found it (.object, .status).

        depth, max_objects and fields override the sidecar's prefetch for
        this request; depth=0 turns prefetching off for it.
        """
        if self.near is not None:
            obj = self.near.get(id)
            if obj is not None:
                return sidecar_pb2.GetResponse(object=obj)
        t = self._ticket()
        req = sidecar_pb2.GetRequest(id=id, hint=_hint(depth, max_objects, fields))
        resp = self.stub.Get(req, timeout=self._t(timeout), metadata=t.metadata())
        if self.near is not None and not resp.stale:
            self.near.fill(resp.object, t)
        return resp

    def batch_get(
        self,
        ids: Iterable[str],
        depth: Optional[int] = None,
        *,
        max_objects: Optional[int] = None,
        fields: Sequence[str] = (),
        timeout: Optional[float] = None,
    ) -> sidecar_pb2.BatchGetResponse:
        """Returns the objects found among ids (.results) and the ids that are missing (.missing_ids)."""
        ids = list(ids)
        if self.near is None:
            req = sidecar_pb2.BatchGetRequest(ids=ids, hint=_hint(depth, max_objects, fields))
            return self.stub.BatchGet(req, timeout=self._t(timeout))
        held: dict[str, Optional[object_pb2.Object]] = {}
        for id_ in ids:
            if id_ not in held:
                held[id_] = self.near.get(id_)
        ask = [id_ for id_, obj in held.items() if obj is None]
        asked: dict[str, sidecar_pb2.Result] = {}
        missing: list[str] = []
        if ask:
            t = self._ticket()
            req = sidecar_pb2.BatchGetRequest(ids=ask, hint=_hint(depth, max_objects, fields))
            resp = self.stub.BatchGet(req, timeout=self._t(timeout), metadata=t.metadata())
            for r in resp.results:
                asked[r.object.id] = r
                if not r.stale:
                    self.near.fill(r.object, t)
            missing = list(resp.missing_ids)
        out = sidecar_pb2.BatchGetResponse(missing_ids=missing)
        for id_, obj in held.items():  # request order, duplicates removed
            if obj is not None:
                out.results.add(object=obj)
            elif id_ in asked:
                out.results.append(asked[id_])
        return out

    def get_graph(
        self,
        roots: Iterable[str] | str,
        depth: Optional[int] = None,
        *,
        max_objects: Optional[int] = None,
        fields: Sequence[str] = (),
        timeout: Optional[float] = None,
    ) -> GraphStream:
        """Streams the subgraph below roots in breadth-first order.

        depth and max_objects of None take the sidecar's settings.
        """
        if isinstance(roots, str):
            roots = [roots]
        req = sidecar_pb2.GetGraphRequest(
            roots=list(roots), depth=depth, max_objects=max_objects, fields=fields
        )
        return GraphStream(self.stub.GetGraph(req, timeout=self._t(timeout)))

    def put(
        self,
        obj: object_pb2.Object,
        *,
        expected_version: Optional[int] = None,
        timeout: Optional[float] = None,
    ) -> int:
        """Writes obj through to the origin and returns its new version.

        expected_version makes the write conditional; 0 means "must not exist yet".
        """
        t = self._ticket()
        req = sidecar_pb2.PutRequest(object=obj, expected_version=expected_version)
        try:
            version = self.stub.Put(req, timeout=self._t(timeout), metadata=t.metadata()).version
        except grpc.RpcError:
            if self.near is not None:
                self.near.wrote(t, obj.id, 0, False, ok=False)
            raise
        if self.near is not None:
            self.near.wrote(t, obj.id, version, False, ok=True)
        return version

    def delete(
        self, id: str, *, expected_version: Optional[int] = None, timeout: Optional[float] = None
    ) -> None:
        """Deletes an object at the origin and drops the cached copy."""
        t = self._ticket()
        req = sidecar_pb2.DeleteRequest(id=id, expected_version=expected_version)
        try:
            self.stub.Delete(req, timeout=self._t(timeout), metadata=t.metadata())
        except grpc.RpcError:
            if self.near is not None:
                self.near.wrote(t, id, 0, True, ok=False)
            raise
        if self.near is not None:
            self.near.wrote(t, id, 0, True, ok=True)

    def invalidate(self, ids: Iterable[str], *, timeout: Optional[float] = None) -> int:
        """Drops cached copies without touching the origin; returns how many were cached."""
        ids = list(ids)
        if self.near is not None:
            for id_ in ids:
                self.near.floor(id_, 0, False, False)
        req = sidecar_pb2.InvalidateRequest(ids=ids)
        return self.stub.Invalidate(req, timeout=self._t(timeout)).invalidated
