from lookahead.v1 import object_pb2 as _object_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class CacheStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CACHE_STATUS_UNSPECIFIED: _ClassVar[CacheStatus]
    CACHE_STATUS_MISS: _ClassVar[CacheStatus]
    CACHE_STATUS_HIT: _ClassVar[CacheStatus]
    CACHE_STATUS_HIT_PREFETCHED: _ClassVar[CacheStatus]
    CACHE_STATUS_JOINED: _ClassVar[CacheStatus]
CACHE_STATUS_UNSPECIFIED: CacheStatus
CACHE_STATUS_MISS: CacheStatus
CACHE_STATUS_HIT: CacheStatus
CACHE_STATUS_HIT_PREFETCHED: CacheStatus
CACHE_STATUS_JOINED: CacheStatus

class PrefetchHint(_message.Message):
    __slots__ = ("depth", "max_objects", "fields")
    DEPTH_FIELD_NUMBER: _ClassVar[int]
    MAX_OBJECTS_FIELD_NUMBER: _ClassVar[int]
    FIELDS_FIELD_NUMBER: _ClassVar[int]
    depth: int
    max_objects: int
    fields: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, depth: _Optional[int] = ..., max_objects: _Optional[int] = ..., fields: _Optional[_Iterable[str]] = ...) -> None: ...

class Result(_message.Message):
    __slots__ = ("object", "status", "level", "stale")
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    LEVEL_FIELD_NUMBER: _ClassVar[int]
    STALE_FIELD_NUMBER: _ClassVar[int]
    object: _object_pb2.Object
    status: CacheStatus
    level: int
    stale: bool
    def __init__(self, object: _Optional[_Union[_object_pb2.Object, _Mapping]] = ..., status: _Optional[_Union[CacheStatus, str]] = ..., level: _Optional[int] = ..., stale: _Optional[bool] = ...) -> None: ...

class GetRequest(_message.Message):
    __slots__ = ("id", "hint")
    ID_FIELD_NUMBER: _ClassVar[int]
    HINT_FIELD_NUMBER: _ClassVar[int]
    id: str
    hint: PrefetchHint
    def __init__(self, id: _Optional[str] = ..., hint: _Optional[_Union[PrefetchHint, _Mapping]] = ...) -> None: ...

class GetResponse(_message.Message):
    __slots__ = ("object", "status", "stale")
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    STALE_FIELD_NUMBER: _ClassVar[int]
    object: _object_pb2.Object
    status: CacheStatus
    stale: bool
    def __init__(self, object: _Optional[_Union[_object_pb2.Object, _Mapping]] = ..., status: _Optional[_Union[CacheStatus, str]] = ..., stale: _Optional[bool] = ...) -> None: ...

class BatchGetRequest(_message.Message):
    __slots__ = ("ids", "hint")
    IDS_FIELD_NUMBER: _ClassVar[int]
    HINT_FIELD_NUMBER: _ClassVar[int]
    ids: _containers.RepeatedScalarFieldContainer[str]
    hint: PrefetchHint
    def __init__(self, ids: _Optional[_Iterable[str]] = ..., hint: _Optional[_Union[PrefetchHint, _Mapping]] = ...) -> None: ...

class BatchGetResponse(_message.Message):
    __slots__ = ("results", "missing_ids")
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    MISSING_IDS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[Result]
    missing_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, results: _Optional[_Iterable[_Union[Result, _Mapping]]] = ..., missing_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class GetGraphRequest(_message.Message):
    __slots__ = ("roots", "depth", "max_objects", "fields")
    ROOTS_FIELD_NUMBER: _ClassVar[int]
    DEPTH_FIELD_NUMBER: _ClassVar[int]
    MAX_OBJECTS_FIELD_NUMBER: _ClassVar[int]
    FIELDS_FIELD_NUMBER: _ClassVar[int]
    roots: _containers.RepeatedScalarFieldContainer[str]
    depth: int
    max_objects: int
    fields: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, roots: _Optional[_Iterable[str]] = ..., depth: _Optional[int] = ..., max_objects: _Optional[int] = ..., fields: _Optional[_Iterable[str]] = ...) -> None: ...

class GetGraphResponse(_message.Message):
    __slots__ = ("results", "missing_ids")
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    MISSING_IDS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[Result]
    missing_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, results: _Optional[_Iterable[_Union[Result, _Mapping]]] = ..., missing_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class PutRequest(_message.Message):
    __slots__ = ("object", "expected_version")
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_VERSION_FIELD_NUMBER: _ClassVar[int]
    object: _object_pb2.Object
    expected_version: int
    def __init__(self, object: _Optional[_Union[_object_pb2.Object, _Mapping]] = ..., expected_version: _Optional[int] = ...) -> None: ...

class PutResponse(_message.Message):
    __slots__ = ("version",)
    VERSION_FIELD_NUMBER: _ClassVar[int]
    version: int
    def __init__(self, version: _Optional[int] = ...) -> None: ...

class DeleteRequest(_message.Message):
    __slots__ = ("id", "expected_version")
    ID_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_VERSION_FIELD_NUMBER: _ClassVar[int]
    id: str
    expected_version: int
    def __init__(self, id: _Optional[str] = ..., expected_version: _Optional[int] = ...) -> None: ...

class DeleteResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class InvalidateRequest(_message.Message):
    __slots__ = ("ids",)
    IDS_FIELD_NUMBER: _ClassVar[int]
    ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, ids: _Optional[_Iterable[str]] = ...) -> None: ...

class InvalidateResponse(_message.Message):
    __slots__ = ("invalidated",)
    INVALIDATED_FIELD_NUMBER: _ClassVar[int]
    invalidated: int
    def __init__(self, invalidated: _Optional[int] = ...) -> None: ...

class SubscribeRequest(_message.Message):
    __slots__ = ("budget_bytes", "client_name")
    BUDGET_BYTES_FIELD_NUMBER: _ClassVar[int]
    CLIENT_NAME_FIELD_NUMBER: _ClassVar[int]
    budget_bytes: int
    client_name: str
    def __init__(self, budget_bytes: _Optional[int] = ..., client_name: _Optional[str] = ...) -> None: ...

class SubscribeResponse(_message.Message):
    __slots__ = ("events",)
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    events: _containers.RepeatedCompositeFieldContainer[NearEvent]
    def __init__(self, events: _Optional[_Iterable[_Union[NearEvent, _Mapping]]] = ...) -> None: ...

class NearEvent(_message.Message):
    __slots__ = ("hello", "invalidation", "push", "flush", "heartbeat")
    HELLO_FIELD_NUMBER: _ClassVar[int]
    INVALIDATION_FIELD_NUMBER: _ClassVar[int]
    PUSH_FIELD_NUMBER: _ClassVar[int]
    FLUSH_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_FIELD_NUMBER: _ClassVar[int]
    hello: NearHello
    invalidation: NearInvalidation
    push: NearPush
    flush: NearFlush
    heartbeat: NearHeartbeat
    def __init__(self, hello: _Optional[_Union[NearHello, _Mapping]] = ..., invalidation: _Optional[_Union[NearInvalidation, _Mapping]] = ..., push: _Optional[_Union[NearPush, _Mapping]] = ..., flush: _Optional[_Union[NearFlush, _Mapping]] = ..., heartbeat: _Optional[_Union[NearHeartbeat, _Mapping]] = ...) -> None: ...

class NearHello(_message.Message):
    __slots__ = ("subscriber_id", "heartbeat_millis", "max_age_millis")
    SUBSCRIBER_ID_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_MILLIS_FIELD_NUMBER: _ClassVar[int]
    MAX_AGE_MILLIS_FIELD_NUMBER: _ClassVar[int]
    subscriber_id: str
    heartbeat_millis: int
    max_age_millis: int
    def __init__(self, subscriber_id: _Optional[str] = ..., heartbeat_millis: _Optional[int] = ..., max_age_millis: _Optional[int] = ...) -> None: ...

class NearInvalidation(_message.Message):
    __slots__ = ("id", "version", "deleted")
    ID_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    DELETED_FIELD_NUMBER: _ClassVar[int]
    id: str
    version: int
    deleted: bool
    def __init__(self, id: _Optional[str] = ..., version: _Optional[int] = ..., deleted: _Optional[bool] = ...) -> None: ...

class NearPush(_message.Message):
    __slots__ = ("object", "reason")
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    object: _object_pb2.Object
    reason: str
    def __init__(self, object: _Optional[_Union[_object_pb2.Object, _Mapping]] = ..., reason: _Optional[str] = ...) -> None: ...

class NearFlush(_message.Message):
    __slots__ = ("reason",)
    REASON_FIELD_NUMBER: _ClassVar[int]
    reason: str
    def __init__(self, reason: _Optional[str] = ...) -> None: ...

class NearHeartbeat(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...
