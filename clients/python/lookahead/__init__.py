"""Python client for a lookahead sidecar."""

from lookahead.client import GraphStream, LookaheadClient
from lookahead.near import NearStats
from lookahead.v1.object_pb2 import Object, Ref
from lookahead.v1.sidecar_pb2 import CacheStatus, Result

__all__ = ["CacheStatus", "GraphStream", "LookaheadClient", "NearStats", "Object", "Ref", "Result"]
