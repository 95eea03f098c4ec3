#!/usr/bin/env python3
"""Generates kafkaev's request/response codecs from Apache Kafka's JSON message schemas.

Reads ``<schemas>/*.json`` (development time only) and writes:

- ``kafkaev/protocol/codec_messages_decl.pxi``: C-level declarations (API key constants, the
  frame functions), included by ``kafkaev/protocol/codec.pxd`` so that ``connection.pyx`` cimports them;
- ``kafkaev/protocol/codec_messages.pxi``: the field tables (plain data) from which the
  hand-written ``kafkaev/protocol/codec_message_walker.pxi`` builds a class per message and
  struct at import and which it walks to encode and decode;
- the generated section of ``kafkaev/protocol/codec.pyi`` (between the BEGIN/END markers).

Usage: ``python tools/gen_messages.py [--schemas DIR] [--check]``. ``--check`` exits 1
when the committed output differs from what the schemas produce.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# ../shared beside the repository (the development tree and CI both lay it there).
DEFAULT_SCHEMAS = REPO.parent / "shared" / "kafka-protocol" / "message"
DECL_PATH = REPO / "kafkaev" / "protocol" / "codec_messages_decl.pxi"
IMPL_PATH = REPO / "kafkaev" / "protocol" / "codec_messages.pxi"
PYI_PATH = REPO / "kafkaev" / "protocol" / "codec.pyi"
PYI_BEGIN = "# --- BEGIN generated messages (tools/gen_messages.py) ---"
PYI_END = "# --- END generated messages ---"

# The client-facing APIs kafkaev has codecs for (broker-to-broker and controller APIs are
# left out). Sorted by API key in the output.
APIS = (
    # produce, fetch, metadata
    "Produce", "Fetch", "ListOffsets", "Metadata", "OffsetForLeaderEpoch", "DeleteRecords",
    # connection set-up
    "ApiVersions", "SaslHandshake", "SaslAuthenticate",
    # classic groups and offsets
    "OffsetCommit", "OffsetFetch", "FindCoordinator", "JoinGroup", "Heartbeat", "LeaveGroup",
    "SyncGroup", "DescribeGroups", "ListGroups", "DeleteGroups", "OffsetDelete",
    # the consumer group protocol (KIP-848)
    "ConsumerGroupHeartbeat", "ConsumerGroupDescribe",
    # share groups (KIP-932)
    "ShareGroupHeartbeat", "ShareGroupDescribe", "ShareFetch", "ShareAcknowledge",
    "DescribeShareGroupOffsets", "AlterShareGroupOffsets", "DeleteShareGroupOffsets",
    # transactions and idempotence
    "InitProducerId", "AddPartitionsToTxn", "AddOffsetsToTxn", "EndTxn", "TxnOffsetCommit",
    "DescribeTransactions", "ListTransactions", "DescribeProducers",
    # administration
    "CreateTopics", "DeleteTopics", "CreatePartitions", "DescribeCluster", "DescribeConfigs",
    "IncrementalAlterConfigs", "ListConfigResources", "ElectLeaders",
    "DescribeAcls", "CreateAcls", "DeleteAcls",
    "DescribeUserScramCredentials", "AlterUserScramCredentials",
)
# "data" schemas: no API key, no header, a leading Int16 version.
DATA_SCHEMAS = ("ConsumerProtocolSubscription", "ConsumerProtocolAssignment")

PRIMITIVES = {
    # schema type: (C type for attributes, pyi type, reader, writer, fixed size)
    "int8": ("int8_t", "int", "read_int8", "write_int8"),
    "int16": ("int16_t", "int", "read_int16", "write_int16"),
    "int32": ("int32_t", "int", "read_int32", "write_int32"),
    "int64": ("int64_t", "int", "read_int64", "write_int64"),
    "uint16": ("uint16_t", "int", "read_uint16", "write_uint16"),
    "uint32": ("uint32_t", "int", "read_uint32", "write_uint32"),
    "float64": ("double", "float", "read_float64", "write_float64"),
    "bool": ("bint", "bool", "read_bool", "write_bool"),
}
OBJECT_TYPES = {
    # schema type: pyi type
    "string": "str",
    "bytes": "bytes",
    "records": "bytes | memoryview",
    "uuid": "uuid.UUID",
}


# ---------------------------------------------------------------- schema model


@dataclass(frozen=True, slots=True)
class Versions:
    """A schema version range: "3+", "0-7", "5", or "none"."""

    lo: int
    hi: int | None  # None: open-ended
    empty: bool = False

    @classmethod
    def parse(cls, spec: str | None) -> Versions:
        if spec is None or spec == "none":
            return cls(0, -1, True)
        spec = spec.strip()
        if spec.endswith("+"):
            return cls(int(spec[:-1]), None)
        if "-" in spec:
            lo, hi = spec.split("-")
            return cls(int(lo), int(hi))
        return cls(int(spec), int(spec))

    def contains(self, v: int) -> bool:
        return not self.empty and v >= self.lo and (self.hi is None or v <= self.hi)

    def cond(self, valid: Versions, var: str = "v") -> str:
        """A Cython condition true for the versions of ``valid`` in this range."""
        if self.empty:
            return "False"
        vlo, vhi = valid.lo, valid.hi
        need_lo = self.lo > vlo
        need_hi = self.hi is not None and (vhi is None or self.hi < vhi)
        if self.hi is not None and self.hi < vlo:
            return "False"
        if vhi is not None and self.lo > vhi:
            return "False"
        if need_lo and need_hi:
            if self.lo == self.hi:
                return f"{var} == {self.lo}"
            return f"{self.lo} <= {var} <= {self.hi}"
        if need_lo:
            return f"{var} >= {self.lo}"
        if need_hi:
            return f"{var} <= {self.hi}"
        return "True"

    def __str__(self) -> str:
        if self.empty:
            return "none"
        if self.hi is None:
            return f"{self.lo}+"
        return f"{self.lo}" if self.lo == self.hi else f"{self.lo}-{self.hi}"


@dataclass(frozen=True, slots=True)
class FieldType:
    kind: str  # a PRIMITIVES/OBJECT_TYPES key, "struct" or "array"
    struct: str | None = None  # schema struct name for "struct" (and arrays of structs)
    elem: FieldType | None = None  # element type for "array"

    @classmethod
    def parse(cls, t: str) -> FieldType:
        if t.startswith("[]"):
            return cls("array", elem=cls.parse(t[2:]))
        if t in PRIMITIVES or t in OBJECT_TYPES:
            return cls(t)
        if not re.fullmatch(r"[A-Z][A-Za-z0-9]*", t):
            raise ValueError(f"unknown schema type {t!r}")
        return cls("struct", struct=t)

    def __str__(self) -> str:
        if self.kind == "array":
            return f"[]{self.elem}"
        return self.struct if self.kind == "struct" else self.kind


@dataclass(slots=True)
class Field:
    name: str  # schema name, e.g. "PartitionIndex"
    attr: str  # snake_case attribute, e.g. "partition_index"
    type: FieldType
    versions: Versions
    nullable: Versions
    tagged: Versions
    tag: int | None
    default: str | None
    flexible_override: Versions | None  # RequestHeader.ClientId: never compact


@dataclass(slots=True)
class Struct:
    schema_name: str  # name in the schema
    cls: str = ""  # generated class name (unique across all schemas)
    fields: list[Field] = field(default_factory=list)
    message: Message | None = None


@dataclass(slots=True)
class Message:
    name: str  # e.g. "ProduceRequest"
    kind: str  # "request", "response", "data", "header"
    api_key: int | None
    valid: Versions
    flexible: Versions
    root: Struct
    structs: list[Struct]  # nested and common structs, root excluded
    # The newest version is still in development: brokers offer it only with
    # unstable.api.versions.enable, and its fields may change before it is released.
    latest_unstable: bool = False


def snake(name: str) -> str:
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s)
    return s.lower()


def load_schema(path: Path) -> dict:
    # The schemas are JSON with // line comments.
    text = re.sub(r"^\s*//.*$", "", path.read_text(), flags=re.M)
    return json.loads(text)


def parse_message(doc: dict) -> Message:
    structs: dict[str, Struct] = {}
    common = {c["name"]: c for c in doc.get("commonStructs", [])}

    def parse_fields(raw: list[dict]) -> list[Field]:
        out = []
        for f in raw:
            ftype = FieldType.parse(f["type"])
            base = ftype.elem if ftype.kind == "array" else ftype
            if base.kind == "struct":
                if "fields" in f:
                    define(base.struct, f["fields"])
                elif base.struct in common:
                    define(base.struct, common[base.struct]["fields"])
                elif base.struct not in structs:
                    raise ValueError(f"{doc['name']}: struct {base.struct} has no definition")
            out.append(
                Field(
                    name=f["name"],
                    attr=snake(f["name"]),
                    type=ftype,
                    versions=Versions.parse(f["versions"]),
                    nullable=Versions.parse(f.get("nullableVersions")),
                    tagged=Versions.parse(f.get("taggedVersions")),
                    tag=f.get("tag"),
                    default=f.get("default"),
                    flexible_override=Versions.parse(f["flexibleVersions"]) if "flexibleVersions" in f else None,
                )
            )
        return out

    def define(name: str, raw: list[dict]) -> None:
        if name in structs:
            return  # a common struct referenced twice
        s = Struct(name)
        structs[name] = s  # before recursing: fields may refer back
        s.fields = parse_fields(raw)

    root = Struct(doc["name"])
    root.fields = parse_fields(doc["fields"])
    msg = Message(
        name=doc["name"],
        kind=doc["type"],
        api_key=doc.get("apiKey"),
        valid=Versions.parse(doc["validVersions"]),
        flexible=Versions.parse(doc.get("flexibleVersions")),
        root=root,
        structs=list(structs.values()),
        latest_unstable=bool(doc.get("latestVersionUnstable", False)),
    )
    for s in [root, *msg.structs]:
        s.message = msg
    return msg


def without_latest(valid: Versions) -> Versions:
    """``valid`` less its newest version (an unstable one kafkaev does not speak)."""
    if valid.hi is None or valid.hi <= valid.lo:
        raise ValueError(f"versions {valid}: no stable version would be left")
    return Versions(valid.lo, valid.hi - 1)


@dataclass(slots=True)
class Api:
    name: str  # "Produce"
    snake: str  # "produce"
    key: int
    request: Message
    response: Message

    @property
    def first_flexible(self) -> int | None:
        f = self.request.flexible
        return None if f.empty else f.lo


def load_all(schema_dir: Path) -> tuple[list[Api], list[Message]]:
    apis = []
    for name in APIS:
        req = parse_message(load_schema(schema_dir / f"{name}Request.json"))
        resp = parse_message(load_schema(schema_dir / f"{name}Response.json"))
        if req.api_key != resp.api_key or req.valid != resp.valid:
            raise ValueError(f"{name}: request and response schemas disagree")
        if req.latest_unstable:
            # Only the request schema carries the flag; the pair is cut back together.
            req.valid = resp.valid = without_latest(req.valid)
        apis.append(Api(name, snake(name), req.api_key, req, resp))
    apis.sort(key=lambda a: a.key)
    data = [parse_message(load_schema(schema_dir / f"{name}.json")) for name in DATA_SCHEMAS]
    assign_class_names([m for a in apis for m in (a.request, a.response)] + data)
    return apis, data


# Struct names that APIs added later reuse: their first user keeps the bare class name, so
# that adding an API never renames a class the client already uses (ShareFetchRequest's
# FetchTopic becomes ShareFetchRequestFetchTopic; FetchRequest's stays FetchTopic).
BARE_NAME_OWNERS = {
    "FetchTopic": "FetchRequest",
    "FetchPartition": "FetchRequest",
    "ForgottenTopic": "FetchRequest",
    "PartitionData": "FetchResponse",
    "DescribedGroup": "DescribeGroupsResponse",
    "Assignment": "ConsumerGroupHeartbeatResponse",
}


def assign_class_names(messages: list[Message]) -> None:
    """Struct names are unique within a schema, not across schemas: a name used by
    several schemas is prefixed with its message name (FetchResponseNodeEndpoint),
    except in its owner's (BARE_NAME_OWNERS)."""
    seen: dict[str, int] = {}
    for m in messages:
        seen[m.name] = seen.get(m.name, 0) + 1
        for s in m.structs:
            seen[s.schema_name] = seen.get(s.schema_name, 0) + 1
    for m in messages:
        m.root.cls = m.name
        for s in m.structs:
            bare = seen[s.schema_name] == 1 or BARE_NAME_OWNERS.get(s.schema_name) == m.name
            s.cls = s.schema_name if bare else m.name + s.schema_name


# ---------------------------------------------------------------- code emission


class Out:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def __call__(self, line: str = "", indent: int = 0) -> None:
        self.lines.append(("    " * indent + line).rstrip())

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


KIND_CONSTANTS = {
    "int8": "K_INT8", "int16": "K_INT16", "int32": "K_INT32", "int64": "K_INT64",
    "uint16": "K_UINT16", "uint32": "K_UINT32", "float64": "K_FLOAT64", "bool": "K_BOOL",
    "string": "K_STRING", "bytes": "K_BYTES", "records": "K_RECORDS", "uuid": "K_UUID",
    "struct": "K_STRUCT",
}


def struct_of(m: Message, name: str) -> Struct:
    for s in m.structs:
        if s.schema_name == name:
            return s
    raise KeyError(name)


def is_tagged(f: Field) -> bool:
    return f.tag is not None


def element_type(f: Field) -> FieldType:
    return f.type.elem if f.type.kind == "array" else f.type


def default_literal(f: Field) -> str:
    """The Python literal of a scalar field's default (arrays and structs: see fresh_default)."""
    k = f.type.kind
    d = None if f.default is None else str(f.default)
    if k in ("int8", "int16", "int32", "int64", "uint16", "uint32"):
        return str(int(d, 0)) if d not in (None, "") else "0"
    if k == "float64":
        return repr(float(d)) if d not in (None, "") else "0.0"
    if k == "bool":
        return "True" if d == "true" else "False"
    if k == "string":
        if d == "null" or (d is None and is_tagged(f) and not f.nullable.empty):
            return "None"
        return repr(d or "")
    if k in ("bytes", "records"):
        return "None" if d == "null" or k == "records" else 'b""'
    if k == "uuid":
        return "ZERO_UUID"
    return "None"


def fresh_default(f: Field, m: Message) -> str | None:
    """The factory building a field's default anew for each message, or None when the
    default is a shared immutable value."""
    k = f.type.kind
    if k == "array":
        return None if f.default == "null" else "list"
    if k == "struct":
        if is_tagged(f) or f.default == "null":
            return None  # absent tagged struct: None, so decoding allocates nothing
        return struct_of(m, f.type.struct).cls
    return None


FIELD_FRESH = 1  # message_codec.pxi: the default is a new list/struct per message
FIELD_CLASSIC = 2  # never compact, even in flexible versions


def type_name(f: Field, m: Message) -> str:
    et = element_type(f)
    base = struct_of(m, et.struct).cls if et.kind == "struct" else et.kind
    return ("[]" if f.type.kind == "array" else "") + base


def field_entry(f: Field, m: Message) -> str:
    """(name, type, versions, nullable versions, tagged versions, tag, default, flags)"""
    flags = 0
    if fresh_default(f, m) is not None:
        flags |= FIELD_FRESH
    if f.flexible_override is not None and f.flexible_override.empty:
        flags |= FIELD_CLASSIC
    if f.type.kind in ("array", "struct", "uuid"):
        default = "None"  # built by the codec: fresh list/struct, ZERO_UUID, or None
    else:
        default = default_literal(f)
    tag = -1 if f.tag is None else f.tag
    return (f"({f.attr!r}, {type_name(f, m)!r}, {str(f.versions)!r}, {str(f.nullable)!r}, "
            f"{str(f.tagged)!r}, {tag}, {default}, {flags}),")


def all_structs(apis: list[Api], data: list[Message]) -> list[Struct]:
    out = []
    for m in [x for a in apis for x in (a.request, a.response)] + data:
        out.append(m.root)
        out.extend(m.structs)
    return out


def structs_post_order(m: Message) -> list[Struct]:
    """Nested structs before the structs that hold them (the tables refer to them)."""
    out: list[Struct] = []

    def visit(s: Struct) -> None:
        if s in out:
            return
        for f in s.fields:
            et = element_type(f)
            if et.kind == "struct":
                visit(struct_of(m, et.struct))
        out.append(s)

    visit(m.root)
    for s in m.structs:
        visit(s)
    return out


HEADER = """\
# GENERATED by tools/gen_messages.py from Apache Kafka's JSON message schemas.
# Do not edit: change the generator and regenerate.
"""


def gen_decl(apis: list[Api]) -> str:
    o = Out()
    o(HEADER.rstrip())
    o("# C-level interface of the request/response codecs (kafkaev/protocol/codec_message_walker.pxi).")
    o()
    o("cdef enum:")
    for a in apis:
        o(f"API_{snake(a.name).upper()} = {a.key}", 1)
    o()
    o("# Writes one complete request frame: size prefix, header (v1, or v2 from the API's")
    o("# first flexible version), body. A failed encode leaves the buffer as it was.")
    o("cdef int encode_request(WriteBuffer buf, int16_t api_key, int16_t api_version, int32_t correlation_id,")
    o("                        object client_id, object body) except -1")
    o("# Reads the correlation id (and header v1 tagged fields; ApiVersions always uses v0).")
    o("cdef int32_t decode_response_header(ReadBuffer r, int16_t api_key, int16_t api_version) except? -1")
    o("# Decodes the body into the API's response class; trailing bytes are ignored.")
    o("cdef object decode_response_body(ReadBuffer r, int16_t api_key, int16_t api_version)")
    o("cdef bint request_header_flexible(int16_t api_key, int16_t api_version)")
    o("cdef bint response_header_flexible(int16_t api_key, int16_t api_version)")
    return o.text()


def struct_doc(s: Struct) -> str:
    m = s.message
    what = "message" if s is m.root else f"struct {s.schema_name} of {m.name}"
    return f"{what}, versions {m.valid}"


def gen_impl(apis: list[Api], data: list[Message]) -> str:
    o = Out()
    o(HEADER.rstrip())
    o("# Message classes and the field tables message_codec.pxi walks; each table line is a")
    o("# schema field: name, wire type, versions present (then nullable/tagged versions).")
    o()
    o()
    o("class ApiKey(_enum.IntEnum):")
    o('"""Kafka API keys of the requests kafkaev speaks."""', 1)
    o()
    for a in apis:
        o(f"{snake(a.name).upper()} = {a.key}", 1)
    o()
    o()
    o("# (class, versions, flexible versions, docstring, fields); nested structs come before")
    o("# the structs holding them. Field: (name, type, versions, nullable versions, tagged")
    o("# versions, tag, default, flags); flags 1: fresh list/struct default, 2: never compact.")
    o("_STRUCT_TABLES = (")
    messages = [x for a in apis for x in (a.request, a.response)] + data
    for m in messages:
        o(f"# {m.name}: versions {m.valid}, flexible {m.flexible}", 1)
        for s in structs_post_order(m):
            o(f'("{s.cls}", "{m.valid}", "{m.flexible}", "{struct_doc(s)}", (', 1)
            for f in s.fields:
                o(field_entry(f, m), 2)
            o(")),", 1)
    o(")")
    o()
    o("# (name, key, request class, response class, flexible versions)")
    o("_API_TABLES = (")
    for a in apis:
        o(f'("{a.name}", {a.key}, "{a.request.name}", "{a.response.name}", "{a.request.flexible}"),', 1)
    o(")")
    o()
    o("_build_message_tables(globals(), _STRUCT_TABLES, _API_TABLES)")
    o()
    o("# Schema version range per API key (both ends supported).")
    o("SUPPORTED_VERSIONS = {")
    for a in apis:
        o(f"ApiKey.{snake(a.name).upper()}: ({a.request.valid.lo}, {a.request.valid.hi}),", 1)
    o("}")
    o()
    o("API_NAMES = {")
    for a in apis:
        o(f'ApiKey.{snake(a.name).upper()}: "{a.name}",', 1)
    o("}")
    o()
    o("# First flexible version per API key (None: never); decides the header versions.")
    o("FIRST_FLEXIBLE_VERSIONS = {")
    for a in apis:
        o(f"ApiKey.{snake(a.name).upper()}: {a.first_flexible},", 1)
    o("}")
    o()
    o("REQUEST_CLASSES = _message_classes(True)")
    o("RESPONSE_CLASSES = _message_classes(False)")
    for m in data:
        sn = snake(m.name)
        o()
        o()
        o(f"def encode_{sn}(obj, int version={m.valid.hi}):")
        o(f'"""A {m.name} as bytes: Int16 version, then the struct."""', 1)
        o(f'return _encode_data("{m.name}", obj, version)', 1)
        o()
        o()
        o(f"def decode_{sn}(data):")
        o(f'"""Decodes a {m.name} (its version is the leading Int16)."""', 1)
        o(f'return _decode_data("{m.name}", data)', 1)
    return o.text()


# ---------------------------------------------------------------- pyi


def pyi_type(f: Field, m: Message) -> str:
    def base(t: FieldType) -> str:
        if t.kind in PRIMITIVES:
            return PRIMITIVES[t.kind][1]
        if t.kind in OBJECT_TYPES:
            return OBJECT_TYPES[t.kind]
        if t.kind == "struct":
            return struct_of(m, t.struct).cls
        return f"list[{base(t.elem)}]"

    t = base(f.type)
    may_be_none = not f.nullable.empty or (
        f.type.kind in ("string", "bytes", "records", "struct", "array")
        and fresh_default(f, m) is None
        and (f.type.kind != "string" or default_literal(f) == "None")
        and (f.type.kind != "bytes" or default_literal(f) == "None")
    )
    return t + " | None" if may_be_none else t


def gen_pyi(apis: list[Api], data: list[Message]) -> str:
    o = Out()
    o(PYI_BEGIN)
    o("# Request/response codecs generated from Kafka's message schemas.")
    o("import enum  # noqa: E402")
    o("import uuid  # noqa: E402")
    o("from typing import Any, ClassVar  # noqa: E402")
    o()
    o("ZERO_UUID: uuid.UUID")
    o("KIND_NAMES: tuple[str, ...]")
    o()
    o("class ApiKey(enum.IntEnum):")
    for a in apis:
        o(f"{snake(a.name).upper()} = {a.key}", 1)
    o()
    o("SUPPORTED_VERSIONS: dict[int, tuple[int, int]]")
    o("API_NAMES: dict[int, str]")
    o("FIRST_FLEXIBLE_VERSIONS: dict[int, int | None]")
    o("REQUEST_CLASSES: dict[int, type[MessageStruct]]")
    o("RESPONSE_CLASSES: dict[int, type[MessageStruct]]")
    o()
    o("class MessageStruct:")
    o("_fields: ClassVar[tuple[str, ...]]", 1)
    o("unknown_tagged_fields: dict[int, bytes] | None", 1)
    o("def __init__(self, **fields: Any) -> None: ...", 1)
    o("def to_dict(self) -> dict[str, Any]: ...", 1)
    o()
    for s in all_structs(apis, data):
        m = s.message
        o(f"class {s.cls}(MessageStruct):")
        for f in s.fields:
            o(f"{f.attr}: {pyi_type(f, m)}", 1)
        if s.fields:
            params = ", ".join(f"{f.attr}: {pyi_type(f, m)} = ..." for f in s.fields)
            o(f"def __init__(self, *, {params}, unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...", 1)
        else:
            o("...", 1)
        o()
    o("def encode_request_frame(api_key: int, version: int, correlation_id: int, client_id: str | None, body: MessageStruct) -> bytes: ...")
    o("def decode_response_frame(api_key: int, version: int, payload: bytes | memoryview) -> tuple[int, Any]: ...")
    o("def built_unchecked(cls: type[Any], *values: Any) -> Any: ...")
    o("def decode_response_with_tables(api_key: int, version: int, payload: bytes | memoryview) -> tuple[int, Any]: ...")
    o("def decode_request_frame(payload: bytes | memoryview) -> tuple[int, int, int, str | None, Any]: ...")
    o("def encode_response_frame(api_key: int, version: int, correlation_id: int, body: MessageStruct) -> bytes: ...")
    o("def request_header_version(api_key: int, version: int) -> int: ...")
    o("def response_header_version(api_key: int, version: int) -> int: ...")
    o("def message_spec(cls: type[MessageStruct]) -> list[tuple[str, str, tuple[int, int], tuple[int, int], int, tuple[int, int]]]: ...")
    for m in data:
        sn = snake(m.name)
        o(f"def encode_{sn}(obj: {m.name}, version: int = ...) -> bytes: ...")
        o(f"def decode_{sn}(data: bytes | memoryview) -> {m.name}: ...")
    o(PYI_END)
    return o.text()


def splice_pyi(existing: str, section: str) -> str:
    """Replaces the generated section of the shared stub file, or appends it."""
    if PYI_BEGIN in existing and PYI_END in existing:
        head, rest = existing.split(PYI_BEGIN, 1)
        _, tail = rest.split(PYI_END, 1)
        return head + section.rstrip("\n") + tail
    return existing.rstrip("\n") + "\n\n" + section if existing.strip() else section


def generate(schema_dir: Path) -> dict[Path, str]:
    apis, data = load_all(schema_dir)
    existing_pyi = PYI_PATH.read_text() if PYI_PATH.exists() else ""
    return {
        DECL_PATH: gen_decl(apis),
        IMPL_PATH: gen_impl(apis, data),
        PYI_PATH: splice_pyi(existing_pyi, gen_pyi(apis, data)),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--schemas", type=Path, default=DEFAULT_SCHEMAS, help="directory of Kafka's message/*.json")
    p.add_argument("--check", action="store_true", help="exit 1 if the committed output is stale")
    args = p.parse_args(argv)
    outputs = generate(args.schemas)
    stale = [path for path, text in outputs.items() if not path.exists() or path.read_text() != text]
    if args.check:
        for path in stale:
            print(f"stale: {path.relative_to(REPO)}", file=sys.stderr)
        return 1 if stale else 0
    for path in stale:
        path.write_text(text := outputs[path])
        print(f"wrote {path.relative_to(REPO)} ({text.count(chr(10))} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
