"""A lookahead origin over SQLite, in Python: the OriginService contract of
docs/origin.md in one file. Run it with the stubs of clients/python:

    python origin.py --db shop.sqlite --listen 127.0.0.1:7071
"""
import argparse
import json
import os
import signal
import sqlite3
import sys
import threading
import uuid
from concurrent import futures

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "clients", "python"))
import grpc  # noqa: E402
from lookahead.v1 import object_pb2, origin_pb2, origin_pb2_grpc  # noqa: E402

MAX_ID_BYTES = 1024
SCHEMA = """
CREATE TABLE IF NOT EXISTS objects (
  id TEXT PRIMARY KEY, version INTEGER NOT NULL, deleted INTEGER NOT NULL,
  type TEXT NOT NULL, refs TEXT NOT NULL, payload BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS changes (
  revision INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL,
  version INTEGER NOT NULL, deleted INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


class BadInput(Exception):
    """A request the contract answers with INVALID_ARGUMENT."""


class Store:
    """Objects, a change log and the dataset identity in one SQLite file.
    A deleted object keeps its row (deleted=1) so that its version never
    goes back when it is created again."""

    def __init__(self, path):
        self.db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self.lock = threading.Lock()  # one connection, one user at a time
        self.changed = threading.Condition(self.lock)
        with self.lock:
            self.db.executescript(SCHEMA)
            row = self.db.execute("SELECT value FROM meta WHERE key='dataset_id'").fetchone()
            if row is None:  # a new store is a new dataset
                row = (str(uuid.uuid4()),)
                self.db.execute("INSERT INTO meta VALUES ('dataset_id', ?)", row)
            self.dataset_id = row[0]

    def revision(self):
        return self.db.execute("SELECT COALESCE(MAX(revision), 0) FROM changes").fetchone()[0]

    def get(self, ids):
        """Live objects among ids, as {id: Object}."""
        found = {}
        for i in range(0, len(ids), 500):  # SQLite's limit on parameters
            part = ids[i:i + 500]
            q = "SELECT id, version, type, refs, payload FROM objects WHERE deleted=0 AND id IN (%s)"
            with self.lock:
                rows = self.db.execute(q % ",".join("?" * len(part)), part).fetchall()
            for id_, version, type_, refs, payload in rows:
                found[id_] = object_pb2.Object(
                    id=id_, version=version, type=type_, payload=payload,
                    refs=[object_pb2.Ref(field=f, id=r) for f, r in json.loads(refs)])
        return found

    def write(self, id_, obj, expected):
        """Put obj (None: delete id_) at the next version; returns (version, revision)."""
        with self.lock:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                row = self.db.execute("SELECT version, deleted FROM objects WHERE id=?", (id_,)).fetchone()
                last = row[0] if row else 0
                live = last if row and not row[1] else 0
                if obj is None and live == 0:
                    raise KeyError(id_)
                if expected is not None and expected != live:
                    raise ValueError("%s is at version %d, not the expected %d" % (id_, live, expected))
                version = last + 1  # a delete's change supersedes every version before it
                if obj is None:
                    self.db.execute("UPDATE objects SET deleted=1, version=? WHERE id=?", (version, id_))
                else:
                    refs = json.dumps([[r.field, r.id] for r in obj.refs])
                    self.db.execute("INSERT OR REPLACE INTO objects VALUES (?,?,0,?,?,?)",
                                    (id_, version, obj.type, refs, obj.payload))
                cur = self.db.execute("INSERT INTO changes (id, version, deleted) VALUES (?,?,?)",
                                      (id_, version, obj is None))
                self.db.execute("COMMIT")
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
            self.changed.notify_all()
            return version, cur.lastrowid

    def changes(self, after, limit=1000):
        return self.db.execute("SELECT revision, id, version, deleted FROM changes WHERE revision > ? "
                               "ORDER BY revision LIMIT ?", (after, limit)).fetchall()


def check_ids(name, ids, max_ids):
    if len(ids) > max_ids:
        raise BadInput("%s: %d ids exceed the limit of %d per request" % (name, len(ids), max_ids))
    for i, id_ in enumerate(ids):
        if not id_:
            raise BadInput("%s[%d]: empty id" % (name, i))
        if len(id_.encode()) > MAX_ID_BYTES:
            raise BadInput("%s[%d]: id over %d bytes" % (name, i, MAX_ID_BYTES))


def unique(ids):
    return list(dict.fromkeys(ids))  # first occurrence of each, in order


class Origin(origin_pb2_grpc.OriginServiceServicer):
    def __init__(self, store, max_ids=10000, max_depth=64, max_objects=1000000):
        self.store, self.max_ids, self.max_depth, self.max_objects = store, max_ids, max_depth, max_objects
        self.stopping = threading.Event()

    def BatchGet(self, request, context):
        with errors(context):
            check_ids("ids", request.ids, self.max_ids)
            ids = unique(request.ids)
            found = self.store.get(ids)
            return origin_pb2.OriginServiceBatchGetResponse(
                objects=[found[i] for i in ids if i in found],
                missing_ids=[i for i in ids if i not in found])

    def Expand(self, request, context):
        """Breadth-first below the roots, one query per level. max_objects
        caps the ids visited, known and missing ones included; an id is
        visited once, so cycles end."""
        with errors(context):
            if not request.roots:
                raise BadInput("roots: none given")
            check_ids("roots", request.roots, self.max_ids)
            check_ids("known_ids", request.known_ids, self.max_ids)
            if request.depth > self.max_depth:
                raise BadInput("depth %d exceeds the limit of %d" % (request.depth, self.max_depth))
            if request.max_objects > self.max_objects:
                raise BadInput("max_objects %d exceeds the limit of %d" % (request.max_objects, self.max_objects))
            if any(not f for f in request.fields):
                raise BadInput("fields: empty field name")
            budget = request.max_objects or self.max_objects
            fields, known = set(request.fields), set(request.known_ids)
            level = unique(request.roots)[:budget]
            visited = set(level)
            for depth in range(request.depth + 1):
                if not level or not context.is_active():
                    return
                found = self.store.get(level)
                yield origin_pb2.ExpandResponse(
                    level=depth,
                    objects=[found[i] for i in level if i in found and i not in known],
                    missing_ids=[i for i in level if i not in found])
                nxt = []
                for i in level:
                    for r in found[i].refs if i in found else ():
                        if (not fields or r.field in fields) and r.id not in visited and len(visited) < budget:
                            visited.add(r.id)
                            nxt.append(r.id)
                level = nxt

    def Watch(self, request, context):
        store = self.store
        with store.lock:
            current = store.revision()
        context.send_initial_metadata((("lookahead-revision", str(current)),
                                       ("lookahead-dataset-id", store.dataset_id)))
        after = request.from_revision if request.HasField("from_revision") else current
        while context.is_active() and not self.stopping.is_set():
            with store.lock:
                rows = store.changes(after)
                if not rows:
                    store.changed.wait(timeout=0.5)  # woken by every commit
                    continue
            after = rows[-1][0]
            yield origin_pb2.WatchResponse(changes=[
                origin_pb2.Change(revision=r, id=i, version=v, deleted=bool(d)) for r, i, v, d in rows])
        if self.stopping.is_set():
            context.abort(grpc.StatusCode.UNAVAILABLE, "origin shutting down")

    def Put(self, request, context):
        with errors(context):
            if not request.HasField("object"):
                raise BadInput("object: missing")
            check_ids("object.id", [request.object.id], 1)
            check_ids("object.refs", [r.id for r in request.object.refs], len(request.object.refs))
            expected = request.expected_version if request.HasField("expected_version") else None
            version, revision = self.store.write(request.object.id, request.object, expected)
            return origin_pb2.OriginServicePutResponse(version=version, revision=revision)

    def Delete(self, request, context):
        with errors(context):
            check_ids("id", [request.id], 1)
            expected = request.expected_version if request.HasField("expected_version") else None
            _, revision = self.store.write(request.id, None, expected)
            return origin_pb2.OriginServiceDeleteResponse(revision=revision)

    def Describe(self, request, context):
        return origin_pb2.DescribeResponse(
            dataset_id=self.store.dataset_id, expand=True, watch=True, writes=True,
            limits=origin_pb2.OriginLimits(max_ids=self.max_ids, max_depth=self.max_depth,
                                           max_objects=self.max_objects))


class errors:
    """Turns the store's exceptions into the contract's status codes."""

    def __init__(self, context):
        self.context = context

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb):
        codes = {BadInput: grpc.StatusCode.INVALID_ARGUMENT, KeyError: grpc.StatusCode.NOT_FOUND,
                 ValueError: grpc.StatusCode.FAILED_PRECONDITION}
        if kind in codes:
            msg = "object %s not found" % exc.args[0] if kind is KeyError else str(exc)
            self.context.abort(codes[kind], msg)
        return False


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--listen", default="127.0.0.1:7071", help="gRPC address; port 0 picks a free one")
    p.add_argument("--db", default="origin.sqlite", help="SQLite file, created if needed")
    p.add_argument("--addr-file", help='once serving, write "grpc ADDR" to this file')
    p.add_argument("--max-ids", type=int, default=10000, help="ids per BatchGet, roots and known ids per Expand")
    args = p.parse_args()

    svc = Origin(Store(args.db), max_ids=args.max_ids)
    # Let sidecars ping every 10 s while a call (the Watch stream) is open,
    # so that they can tell an origin that vanished from one with nothing
    # to say (docs/origin.md, "Keepalive pings").
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=32), options=[
        ("grpc.http2.min_ping_interval_without_data_ms", 10000),
        ("grpc.http2.max_ping_strikes", 0),
    ])
    origin_pb2_grpc.add_OriginServiceServicer_to_server(svc, server)
    port = server.add_insecure_port(args.listen)
    if port == 0:
        sys.exit("origin: cannot listen on %s" % args.listen)
    server.start()
    addr = "%s:%d" % (args.listen.rsplit(":", 1)[0], port)
    if args.addr_file:
        with open(args.addr_file + ".tmp", "w") as f:
            f.write("grpc %s\n" % addr)
        os.replace(args.addr_file + ".tmp", args.addr_file)  # never half-written
    print("serving on %s, dataset %s" % (addr, svc.store.dataset_id), file=sys.stderr, flush=True)

    def stop(*_):
        svc.stopping.set()  # ends Watch streams, which never end on their own
        server.stop(grace=5)
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    server.wait_for_termination()


if __name__ == "__main__":
    main()
