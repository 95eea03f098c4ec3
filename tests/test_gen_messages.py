"""The message-codec generator: its schema model and type mapping, and that the
committed output is exactly what the schemas produce."""

import importlib.util
import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("gen_messages", REPO / "tools" / "gen_messages.py")
gen = importlib.util.module_from_spec(_spec)
sys.modules["gen_messages"] = gen  # dataclasses resolve annotations through sys.modules
_spec.loader.exec_module(gen)

# The schemas are a development-time input in ../shared beside the repository. CI always has
# them, so there the check runs (and fails if they went missing) instead of skipping.
needs_schemas = pytest.mark.skipif(
    not gen.DEFAULT_SCHEMAS.is_dir() and not os.environ.get("CI"),
    reason=f"Kafka message schemas not present at {gen.DEFAULT_SCHEMAS} (development-time input)",
)


@pytest.mark.parametrize(
    ("spec", "lo", "hi", "inside", "outside"),
    [
        ("3+", 3, None, [3, 4, 99], [0, 2]),
        ("0-7", 0, 7, [0, 7], [8, -1]),
        ("5", 5, 5, [5], [4, 6]),
    ],
)
def test_versions_parse_and_contains(spec, lo, hi, inside, outside):
    v = gen.Versions.parse(spec)
    assert (v.lo, v.hi) == (lo, hi)
    assert all(v.contains(x) for x in inside)
    assert not any(v.contains(x) for x in outside)
    assert str(v) == spec


def test_versions_none_is_empty():
    v = gen.Versions.parse("none")
    assert v.empty and not v.contains(0)
    assert v.cond(gen.Versions.parse("0-5")) == "False"
    assert gen.Versions.parse(None).empty


@pytest.mark.parametrize(
    ("field", "valid", "expected"),
    [
        ("0+", "0-11", "True"),  # always present: no branch at all
        ("3+", "0-11", "v >= 3"),
        ("3+", "3-11", "True"),  # starts where the message starts
        ("0-7", "0-9", "v <= 7"),
        ("2-7", "0-9", "2 <= v <= 7"),
        ("5", "0-9", "v == 5"),
        ("12+", "0-11", "False"),  # never in a valid version
        ("0-2", "3-9", "False"),
    ],
)
def test_version_conditions_are_simplified_against_valid_range(field, valid, expected):
    assert gen.Versions.parse(field).cond(gen.Versions.parse(valid)) == expected


@pytest.mark.parametrize(
    ("name", "attr"),
    [
        ("PartitionIndex", "partition_index"),
        ("TopicId", "topic_id"),
        ("ThrottleTimeMs", "throttle_time_ms"),
        ("Acks", "acks"),
        ("ZkMigrationReady", "zk_migration_ready"),
        ("IsrNodes", "isr_nodes"),
        ("KRaftVersionFeature", "k_raft_version_feature"),
        ("SASLMechanism", "sasl_mechanism"),
    ],
)
def test_snake_case(name, attr):
    assert gen.snake(name) == attr


def test_field_type_parsing():
    t = gen.FieldType.parse("[]int32")
    assert t.kind == "array" and t.elem.kind == "int32"
    s = gen.FieldType.parse("[]PartitionData")
    assert s.elem.kind == "struct" and s.elem.struct == "PartitionData"
    assert str(s) == "[]PartitionData"
    with pytest.raises(ValueError, match="unknown schema type"):
        gen.FieldType.parse("int128")


def _field(doc_field):
    msg = gen.parse_message(
        {"name": "TestRequest", "type": "request", "apiKey": 999, "validVersions": "0-5",
         "flexibleVersions": "3+", "fields": [doc_field]}
    )
    return msg, msg.root.fields[0]


@pytest.mark.parametrize(
    ("doc", "default", "in_table"),
    [
        ({"name": "A", "type": "int8", "versions": "0+"}, "0", "0"),
        ({"name": "A", "type": "int16", "versions": "0+", "default": "-1"}, "-1", "-1"),
        ({"name": "A", "type": "int32", "versions": "0+", "default": "0x7fffffff"}, "2147483647", "2147483647"),
        ({"name": "A", "type": "int64", "versions": "0+", "default": "-1"}, "-1", "-1"),
        ({"name": "A", "type": "uint16", "versions": "0+"}, "0", "0"),
        ({"name": "A", "type": "float64", "versions": "0+", "default": "1.5"}, "1.5", "1.5"),
        ({"name": "A", "type": "bool", "versions": "0+", "default": "true"}, "True", "True"),
        ({"name": "A", "type": "string", "versions": "0+"}, "''", "''"),
        ({"name": "A", "type": "string", "versions": "0+", "nullableVersions": "0+", "default": "null"}, "None", "None"),
        ({"name": "A", "type": "bytes", "versions": "0+"}, 'b""', 'b""'),
        ({"name": "A", "type": "records", "versions": "0+", "nullableVersions": "0+"}, "None", "None"),
        ({"name": "A", "type": "uuid", "versions": "0+"}, "ZERO_UUID", "None"),  # the codec supplies ZERO_UUID
    ],
)
def test_type_mapping_and_defaults(doc, default, in_table):
    msg, f = _field(doc)
    assert gen.default_literal(f) == default
    entry = gen.field_entry(f, msg)
    nullable = "'0+'" if "nullableVersions" in doc else "'none'"
    assert entry == f"('a', {doc['type']!r}, '0+', {nullable}, 'none', -1, {in_table}, 0),"


def test_arrays_and_structs_get_fresh_defaults():
    msg, f = _field({"name": "Topics", "type": "[]Topic", "versions": "0+",
                     "fields": [{"name": "Name", "type": "string", "versions": "0+"}]})
    assert gen.fresh_default(f, msg) == "list"
    msg, f = _field({"name": "Topics", "type": "[]Topic", "versions": "0+", "nullableVersions": "1+",
                     "default": "null", "fields": [{"name": "Name", "type": "string", "versions": "0+"}]})
    assert gen.fresh_default(f, msg) is None
    msg, f = _field({"name": "Leader", "type": "Leader", "versions": "0+",
                     "fields": [{"name": "Id", "type": "int32", "versions": "0+"}]})
    msg.structs[0].cls = "Leader"
    assert gen.fresh_default(f, msg) == "Leader"
    # A tagged struct absent from the wire decodes as None, not a fresh default object.
    msg, f = _field({"name": "Leader", "type": "Leader", "versions": "3+", "taggedVersions": "3+", "tag": 0,
                     "fields": [{"name": "Id", "type": "int32", "versions": "0+"}]})
    assert gen.fresh_default(f, msg) is None


def test_nested_struct_without_definition_is_rejected():
    with pytest.raises(ValueError, match="has no definition"):
        _field({"name": "X", "type": "[]Missing", "versions": "0+"})


def test_struct_names_shared_by_schemas_are_prefixed():
    def msg(name, struct):
        return gen.parse_message(
            {"name": name, "type": "response", "apiKey": 1, "validVersions": "0", "flexibleVersions": "none",
             "fields": [{"name": "F", "type": f"[]{struct}", "versions": "0+",
                         "fields": [{"name": "Id", "type": "int32", "versions": "0+"}]}]}
        )

    a, b, c = msg("AResponse", "Shared"), msg("BResponse", "Shared"), msg("CResponse", "Own")
    gen.assign_class_names([a, b, c])
    assert a.structs[0].cls == "AResponseShared"
    assert b.structs[0].cls == "BResponseShared"
    assert c.structs[0].cls == "Own"


def test_table_entries_carry_version_rules():
    msg, f = _field({"name": "TransactionalId", "type": "string", "versions": "3+", "nullableVersions": "3+",
                     "default": "null"})
    assert gen.field_entry(f, msg) == "('transactional_id', 'string', '3+', '3+', 'none', -1, None, 0),"
    msg, f = _field({"name": "Leader", "type": "Leader", "versions": "10+", "taggedVersions": "10+", "tag": 1,
                     "fields": [{"name": "Id", "type": "int32", "versions": "0+"}]})
    msg.structs[0].cls = "Leader"
    assert gen.field_entry(f, msg) == "('leader', 'Leader', '10+', 'none', '10+', 1, None, 0),"
    msg, f = _field({"name": "Topics", "type": "[]Topic", "versions": "0+",
                     "fields": [{"name": "Name", "type": "string", "versions": "0+"}]})
    msg.structs[0].cls = "Topic"
    assert gen.field_entry(f, msg) == "('topics', '[]Topic', '0+', 'none', 'none', -1, None, 1),"
    msg, f = _field({"name": "ClientId", "type": "string", "versions": "1+", "nullableVersions": "1+",
                     "flexibleVersions": "none"})
    assert gen.field_entry(f, msg).endswith(", 2),")


def test_nested_tables_come_before_their_users():
    msg = gen.parse_message(
        {"name": "TestResponse", "type": "response", "apiKey": 1, "validVersions": "0", "flexibleVersions": "none",
         "fields": [{"name": "Outer", "type": "[]Outer", "versions": "0+", "fields": [
             {"name": "Inner", "type": "[]Inner", "versions": "0+", "fields": [
                 {"name": "Id", "type": "int32", "versions": "0+"}]}]}]})
    gen.assign_class_names([msg])
    assert [s.cls for s in gen.structs_post_order(msg)] == ["Inner", "Outer", "TestResponse"]


@needs_schemas
def test_every_api_has_request_and_response_with_matching_versions():
    apis, data = gen.load_all(gen.DEFAULT_SCHEMAS)
    assert len(apis) == len(gen.APIS)
    keys = {a.key for a in apis}
    assert {0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 18, 22, 23, 68} <= keys
    produce = next(a for a in apis if a.name == "Produce")
    assert produce.first_flexible == 9
    sasl = next(a for a in apis if a.name == "SaslHandshake")
    assert sasl.first_flexible is None
    assert [m.name for m in data] == list(gen.DATA_SCHEMAS)


def test_an_unstable_latest_version_is_left_out():
    doc = {"name": "TestRequest", "type": "request", "apiKey": 999, "validVersions": "0-6",
           "latestVersionUnstable": True, "flexibleVersions": "2+", "fields": []}
    msg = gen.parse_message(doc)
    assert msg.latest_unstable
    assert gen.without_latest(msg.valid) == gen.Versions(0, 5)
    with pytest.raises(ValueError, match="no stable version"):
        gen.without_latest(gen.Versions(3, 3))


def test_a_reused_struct_name_stays_bare_in_its_owner():
    def msg(name, key):
        return gen.parse_message(
            {"name": name, "type": "request", "apiKey": key, "validVersions": "0", "flexibleVersions": "none",
             "fields": [{"name": "Topics", "type": "[]FetchTopic", "versions": "0+",
                         "fields": [{"name": "Id", "type": "int32", "versions": "0+"}]}]}
        )

    fetch, share = msg("FetchRequest", 1), msg("ShareFetchRequest", 78)
    gen.assign_class_names([fetch, share])
    assert fetch.structs[0].cls == "FetchTopic"
    assert share.structs[0].cls == "ShareFetchRequestFetchTopic"


@needs_schemas
def test_schemas_of_kafka_4_4_with_unstable_versions_cut():
    apis, _ = gen.load_all(gen.DEFAULT_SCHEMAS)
    by_name = {a.name: a for a in apis}
    assert (by_name["Produce"].request.valid.lo, by_name["Produce"].request.valid.hi) == (3, 13)
    assert (by_name["Fetch"].request.valid.lo, by_name["Fetch"].request.valid.hi) == (4, 18)
    # InitProducerId v6 (KIP-939) is still unstable in 4.4.0.
    init = by_name["InitProducerId"]
    assert init.request.valid.hi == init.response.valid.hi == 5
    for needed in ("ShareFetch", "ShareAcknowledge", "ShareGroupHeartbeat", "ConsumerGroupDescribe",
                   "DescribeTransactions", "ListTransactions", "IncrementalAlterConfigs", "DescribeAcls",
                   "CreateAcls", "DeleteAcls", "DescribeProducers"):
        assert needed in by_name


@needs_schemas
def test_generated_class_names_are_unique():
    apis, data = gen.load_all(gen.DEFAULT_SCHEMAS)
    names = [s.cls for s in gen.all_structs(apis, data)]
    assert len(names) == len(set(names))


@needs_schemas
def test_committed_output_is_what_the_schemas_generate():
    outputs = gen.generate(gen.DEFAULT_SCHEMAS)
    for path, text in outputs.items():
        assert path.read_text() == text, f"{path.relative_to(REPO)} is stale: run tools/gen_messages.py"


@needs_schemas
def test_check_mode_reports_clean_tree():
    assert gen.main(["--check"]) == 0
