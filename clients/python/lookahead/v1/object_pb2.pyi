from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Ref(_message.Message):
    __slots__ = ("field", "id")
    FIELD_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    field: str
    id: str
    def __init__(self, field: _Optional[str] = ..., id: _Optional[str] = ...) -> None: ...

class Object(_message.Message):
    __slots__ = ("id", "version", "type", "refs", "payload")
    ID_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    REFS_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    id: str
    version: int
    type: str
    refs: _containers.RepeatedCompositeFieldContainer[Ref]
    payload: bytes
    def __init__(self, id: _Optional[str] = ..., version: _Optional[int] = ..., type: _Optional[str] = ..., refs: _Optional[_Iterable[_Union[Ref, _Mapping]]] = ..., payload: _Optional[bytes] = ...) -> None: ...
