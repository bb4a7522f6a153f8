from lookahead.v1 import object_pb2 as _object_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class OriginServiceBatchGetRequest(_message.Message):
    __slots__ = ("ids",)
    IDS_FIELD_NUMBER: _ClassVar[int]
    ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, ids: _Optional[_Iterable[str]] = ...) -> None: ...

class OriginServiceBatchGetResponse(_message.Message):
    __slots__ = ("objects", "missing_ids")
    OBJECTS_FIELD_NUMBER: _ClassVar[int]
    MISSING_IDS_FIELD_NUMBER: _ClassVar[int]
    objects: _containers.RepeatedCompositeFieldContainer[_object_pb2.Object]
    missing_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, objects: _Optional[_Iterable[_Union[_object_pb2.Object, _Mapping]]] = ..., missing_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class ExpandRequest(_message.Message):
    __slots__ = ("roots", "depth", "max_objects", "fields", "known_ids")
    ROOTS_FIELD_NUMBER: _ClassVar[int]
    DEPTH_FIELD_NUMBER: _ClassVar[int]
    MAX_OBJECTS_FIELD_NUMBER: _ClassVar[int]
    FIELDS_FIELD_NUMBER: _ClassVar[int]
    KNOWN_IDS_FIELD_NUMBER: _ClassVar[int]
    roots: _containers.RepeatedScalarFieldContainer[str]
    depth: int
    max_objects: int
    fields: _containers.RepeatedScalarFieldContainer[str]
    known_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, roots: _Optional[_Iterable[str]] = ..., depth: _Optional[int] = ..., max_objects: _Optional[int] = ..., fields: _Optional[_Iterable[str]] = ..., known_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class ExpandResponse(_message.Message):
    __slots__ = ("level", "objects", "missing_ids")
    LEVEL_FIELD_NUMBER: _ClassVar[int]
    OBJECTS_FIELD_NUMBER: _ClassVar[int]
    MISSING_IDS_FIELD_NUMBER: _ClassVar[int]
    level: int
    objects: _containers.RepeatedCompositeFieldContainer[_object_pb2.Object]
    missing_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, level: _Optional[int] = ..., objects: _Optional[_Iterable[_Union[_object_pb2.Object, _Mapping]]] = ..., missing_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class WatchRequest(_message.Message):
    __slots__ = ("from_revision",)
    FROM_REVISION_FIELD_NUMBER: _ClassVar[int]
    from_revision: int
    def __init__(self, from_revision: _Optional[int] = ...) -> None: ...

class WatchResponse(_message.Message):
    __slots__ = ("changes",)
    CHANGES_FIELD_NUMBER: _ClassVar[int]
    changes: _containers.RepeatedCompositeFieldContainer[Change]
    def __init__(self, changes: _Optional[_Iterable[_Union[Change, _Mapping]]] = ...) -> None: ...

class Change(_message.Message):
    __slots__ = ("revision", "id", "version", "deleted")
    REVISION_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    DELETED_FIELD_NUMBER: _ClassVar[int]
    revision: int
    id: str
    version: int
    deleted: bool
    def __init__(self, revision: _Optional[int] = ..., id: _Optional[str] = ..., version: _Optional[int] = ..., deleted: _Optional[bool] = ...) -> None: ...

class OriginServicePutRequest(_message.Message):
    __slots__ = ("object", "expected_version")
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_VERSION_FIELD_NUMBER: _ClassVar[int]
    object: _object_pb2.Object
    expected_version: int
    def __init__(self, object: _Optional[_Union[_object_pb2.Object, _Mapping]] = ..., expected_version: _Optional[int] = ...) -> None: ...

class OriginServicePutResponse(_message.Message):
    __slots__ = ("version", "revision")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    version: int
    revision: int
    def __init__(self, version: _Optional[int] = ..., revision: _Optional[int] = ...) -> None: ...

class OriginServiceDeleteRequest(_message.Message):
    __slots__ = ("id", "expected_version")
    ID_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_VERSION_FIELD_NUMBER: _ClassVar[int]
    id: str
    expected_version: int
    def __init__(self, id: _Optional[str] = ..., expected_version: _Optional[int] = ...) -> None: ...

class OriginServiceDeleteResponse(_message.Message):
    __slots__ = ("revision",)
    REVISION_FIELD_NUMBER: _ClassVar[int]
    revision: int
    def __init__(self, revision: _Optional[int] = ...) -> None: ...

class DescribeRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class DescribeResponse(_message.Message):
    __slots__ = ("dataset_id", "expand", "watch", "writes", "limits")
    DATASET_ID_FIELD_NUMBER: _ClassVar[int]
    EXPAND_FIELD_NUMBER: _ClassVar[int]
    WATCH_FIELD_NUMBER: _ClassVar[int]
    WRITES_FIELD_NUMBER: _ClassVar[int]
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    dataset_id: str
    expand: bool
    watch: bool
    writes: bool
    limits: OriginLimits
    def __init__(self, dataset_id: _Optional[str] = ..., expand: _Optional[bool] = ..., watch: _Optional[bool] = ..., writes: _Optional[bool] = ..., limits: _Optional[_Union[OriginLimits, _Mapping]] = ...) -> None: ...

class OriginLimits(_message.Message):
    __slots__ = ("max_ids", "max_depth", "max_objects")
    MAX_IDS_FIELD_NUMBER: _ClassVar[int]
    MAX_DEPTH_FIELD_NUMBER: _ClassVar[int]
    MAX_OBJECTS_FIELD_NUMBER: _ClassVar[int]
    max_ids: int
    max_depth: int
    max_objects: int
    def __init__(self, max_ids: _Optional[int] = ..., max_depth: _Optional[int] = ..., max_objects: _Optional[int] = ...) -> None: ...
