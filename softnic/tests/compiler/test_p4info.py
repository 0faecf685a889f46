"""P4Info writer: fields, ids, aliases, file formats, and a real consumer (p4runtime-shell).

The resources are built by hand so these tests pin the writer alone; the expected ids of the
p4lang/tutorials ``basic.p4`` names are the ones real p4c prints, which is the point of hashing
names the way p4c does.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format, text_format
from p4.config.v1 import p4info_pb2

from softnic.compiler.diagnostics import CompileError
from softnic.compiler.p4info.resources import (
    ActionInfo,
    ActionParamInfo,
    ActionRefInfo,
    ControllerHeaderInfo,
    CounterInfo,
    DigestInfo,
    MatchFieldInfo,
    MeterInfo,
    ProgramResources,
    RegisterInfo,
    StructFieldInfo,
    TableInfo,
)
from softnic.compiler.p4info.serialize import (
    P4InfoFormatError,
    build_p4info,
    format_for_path,
    name_hash,
    shortest_unique_suffixes,
    write_p4info,
)

P4Ids = p4info_pb2.P4Ids


def basic_resources() -> ProgramResources:
    """The control-plane view of p4lang/tutorials basic.p4."""
    return ProgramResources(
        program_name="basic",
        tables=[
            TableInfo(
                name="MyIngress.ipv4_lpm",
                match_fields=[MatchFieldInfo("hdr.ipv4.dstAddr", 32, "LPM")],
                action_refs=[
                    ActionRefInfo("MyIngress.ipv4_forward"),
                    ActionRefInfo("MyIngress.drop"),
                    ActionRefInfo("NoAction"),
                ],
                size=1024,
            )
        ],
        actions=[
            ActionInfo("NoAction"),
            ActionInfo("MyIngress.drop"),
            ActionInfo(
                "MyIngress.ipv4_forward",
                params=[ActionParamInfo("dstAddr", 48), ActionParamInfo("port", 9)],
            ),
        ],
    )


def rich_resources() -> ProgramResources:
    """Every kind of object the writer supports, with annotations and scopes."""
    return ProgramResources(
        program_name="rich",
        tables=[
            TableInfo(
                name="MyIngress.fwd",
                match_fields=[
                    MatchFieldInfo("hdr.eth.dst", 48, "EXACT"),
                    MatchFieldInfo("hdr.ip.src", 32, "TERNARY", annotations=['@name("src")']),
                    MatchFieldInfo("meta.port", 16, "RANGE"),
                    MatchFieldInfo("meta.vlan", 12, "OPTIONAL"),
                ],
                action_refs=[
                    ActionRefInfo("MyIngress.set_port", "TABLE_ONLY", ["@tableonly"]),
                    ActionRefInfo("MyIngress.drop", "DEFAULT_ONLY", ["@defaultonly"]),
                ],
                size=256,
                const_default_action="MyIngress.drop",
                direct_counters=["MyIngress.fwd_hits"],
                direct_meters=["MyIngress.fwd_rate"],
                annotations=["@my_table_note"],
            ),
            TableInfo(
                name="MyEgress.fixed",
                match_fields=[MatchFieldInfo("meta.x", 8, "exact")],
                action_refs=[ActionRefInfo("NoAction")],
                is_const_table=True,
            ),
            TableInfo(
                name="MyEgress.seeded",
                match_fields=[],
                action_refs=[ActionRefInfo("NoAction")],
            ),
        ],
        actions=[
            ActionInfo("NoAction"),
            ActionInfo("MyIngress.drop", annotations=['@brief("drop it")']),
            ActionInfo(
                "MyIngress.set_port",
                params=[ActionParamInfo("port", 9), ActionParamInfo("tag", 12, ["@note"])],
            ),
        ],
        counters=[
            CounterInfo("MyIngress.pkts", "PACKETS", size=64),
            CounterInfo("MyIngress.fwd_hits", "BOTH", direct_table="MyIngress.fwd"),
        ],
        meters=[
            MeterInfo("MyIngress.rate", "BYTES", size=8),
            MeterInfo("MyIngress.fwd_rate", "PACKETS", direct_table="MyIngress.fwd"),
        ],
        registers=[
            RegisterInfo("MyIngress.slots", 64, 4096),
            RegisterInfo("MyIngress.deltas", 16, 10, signed=True),
        ],
        digests=[
            DigestInfo("hot_key_t", [StructFieldInfo("slot", 32), StructFieldInfo("hash", 16)])
        ],
        controller_headers=[
            ControllerHeaderInfo(
                "packet_in",
                [StructFieldInfo("ingress_port", 9), StructFieldInfo("_pad", 7)],
                annotations=['@controller_header("packet_in")'],
            ),
            ControllerHeaderInfo("packet_out", [StructFieldInfo("egress_port", 9)]),
        ],
    )


def by_name(objs: Iterable[Any], name: str) -> Any:
    """The one P4Info object named ``name`` in a repeated field of any kind."""
    matches = [o for o in objs if o.preamble.name == name]
    assert len(matches) == 1, f"{name}: {len(matches)} entries"
    return matches[0]


def prefix_of(obj_id: int) -> int:
    return obj_id >> 24


# ------------------------------------------------------------------------------ ids
def test_ids_equal_those_p4c_prints_for_basic_p4() -> None:
    info = build_p4info(basic_resources())
    # Values from the P4Info p4c-bm2-ss generates for p4lang/tutorials basic.p4.
    assert by_name(info.tables, "MyIngress.ipv4_lpm").preamble.id == 37375156
    assert by_name(info.actions, "MyIngress.ipv4_forward").preamble.id == 28792405
    assert by_name(info.actions, "MyIngress.drop").preamble.id == 25652968
    assert by_name(info.actions, "NoAction").preamble.id == 21257015


def test_name_hash_is_jenkins_one_at_a_time() -> None:
    # Reference values of Bob Jenkins' one-at-a-time hash.
    assert name_hash("a") == 0xCA2E9442
    assert name_hash("The quick brown fox jumps over the lazy dog") == 0x519E91F5
    assert name_hash("") == 0


def test_every_id_has_its_resource_type_prefix() -> None:
    info = build_p4info(rich_resources())
    expected = [
        (info.tables, P4Ids.TABLE),
        (info.actions, P4Ids.ACTION),
        (info.counters, P4Ids.COUNTER),
        (info.direct_counters, P4Ids.DIRECT_COUNTER),
        (info.meters, P4Ids.METER),
        (info.direct_meters, P4Ids.DIRECT_METER),
        (info.registers, P4Ids.REGISTER),
        (info.digests, P4Ids.DIGEST),
        (info.controller_packet_metadata, P4Ids.CONTROLLER_HEADER),
    ]
    assert P4Ids.TABLE == 0x02 and P4Ids.DIRECT_METER == 0x15 and P4Ids.DIGEST == 0x17
    for objs, prefix in expected:
        assert len(objs) > 0
        for obj in objs:
            assert prefix_of(obj.preamble.id) == prefix, obj.preamble.name
    all_ids = [o.preamble.id for objs, _ in expected for o in objs]
    assert len(all_ids) == len(set(all_ids))


def test_ids_do_not_depend_on_declaration_order() -> None:
    first = build_p4info(rich_resources())
    res = rich_resources()
    rng = random.Random(7)
    for group in (res.tables, res.actions, res.counters, res.meters, res.registers):
        rng.shuffle(group)
    second = build_p4info(res)
    ids1 = {o.preamble.name: o.preamble.id for o in _all_objects(first)}
    ids2 = {o.preamble.name: o.preamble.id for o in _all_objects(second)}
    assert ids1 == ids2


def _all_objects(info: p4info_pb2.P4Info) -> list:
    return [
        *info.tables,
        *info.actions,
        *info.counters,
        *info.direct_counters,
        *info.meters,
        *info.direct_meters,
        *info.registers,
        *info.digests,
        *info.controller_packet_metadata,
    ]


def test_explicit_id_gets_prefix_and_wins() -> None:
    res = basic_resources()
    res.actions[1].id = 0x10  # MyIngress.drop, no prefix written
    res.tables[0].id = 0x02000005  # prefix written already
    info = build_p4info(res)
    assert by_name(info.actions, "MyIngress.drop").preamble.id == 0x01000010
    assert by_name(info.tables, "MyIngress.ipv4_lpm").preamble.id == 0x02000005
    # Other names keep their hashed ids.
    assert by_name(info.actions, "NoAction").preamble.id == 21257015


def test_explicit_id_reserved_before_hashing() -> None:
    """An @id equal to another object's hashed id pushes that object, not the @id."""
    res = basic_resources()
    noaction_hash_id = 21257015
    res.actions[2].id = noaction_hash_id  # ipv4_forward takes NoAction's natural id
    info = build_p4info(res)
    assert by_name(info.actions, "MyIngress.ipv4_forward").preamble.id == noaction_hash_id
    assert by_name(info.actions, "NoAction").preamble.id == noaction_hash_id + 1


def test_duplicate_explicit_id_is_a_compile_error() -> None:
    res = basic_resources()
    res.actions[0].id = 0x01000042
    res.actions[1].id = 0x42
    msg = "@id 0x01000042 is assigned to multiple declarations: 'NoAction' and 'MyIngress.drop'"
    with pytest.raises(CompileError, match=msg):
        build_p4info(res)


def test_explicit_id_with_wrong_prefix_is_a_compile_error() -> None:
    res = basic_resources()
    res.tables[0].id = 0x01000001  # an action prefix on a table
    with pytest.raises(CompileError, match="wrong 8-bit prefix"):
        build_p4info(res)


def test_same_low_bits_in_different_kinds_do_not_collide() -> None:
    res = basic_resources()
    res.actions[0].id = 7
    res.tables[0].id = 7
    info = build_p4info(res)
    assert by_name(info.actions, "NoAction").preamble.id == 0x01000007
    assert by_name(info.tables, "MyIngress.ipv4_lpm").preamble.id == 0x02000007


def _colliding_names(count: int, bits: int = 8) -> list[str]:
    """Names whose hashes agree in the low ``bits`` bits, found by brute force."""
    buckets: dict[int, list[str]] = {}
    i = 0
    while True:
        name = f"c.a{i}"
        bucket = buckets.setdefault(name_hash(name) & ((1 << bits) - 1), [])
        bucket.append(name)
        if len(bucket) == count:
            return bucket
        i += 1


def test_hash_collisions_resolved_by_probing_in_name_order() -> None:
    """Force collisions by pre-taking ids, and check the probing is order independent."""
    names = _colliding_names(3, bits=4)
    low = [name_hash(n) & 0xFFFFFF for n in names]
    # Occupy the natural slot of every name with explicit ids on other actions.
    blockers = [ActionInfo(f"blocker{i}", id=v) for i, v in enumerate(low)]
    res = ProgramResources(actions=[*blockers, *(ActionInfo(n) for n in names)])
    info = build_p4info(res)
    ids = {a.preamble.name: a.preamble.id for a in info.actions}
    taken = {0x01000000 | v for v in low}
    for name, natural in zip(names, low, strict=True):
        got = ids[name] & 0xFFFFFF
        assert ids[name] not in taken and got != natural
        assert 0 < got - natural <= len(names) + len(low)
    assert len(set(ids.values())) == len(ids)
    res.actions.reverse()
    assert {a.preamble.name: a.preamble.id for a in build_p4info(res).actions} == ids


def test_real_24_bit_hash_collision_between_two_names() -> None:
    """Two names whose hashes share the low 24 bits (found by a birthday search).

    The name that sorts first keeps the natural id and the other probes to the next one,
    whatever the declaration order.
    """
    first, second = "MyIngress.t8641", "MyIngress.t959"  # sorted order
    natural = name_hash(first) & 0xFFFFFF
    assert name_hash(second) & 0xFFFFFF == natural
    for order in ([first, second], [second, first]):
        res = ProgramResources(tables=[TableInfo(n, [], []) for n in order])
        info = build_p4info(res)
        assert by_name(info.tables, first).preamble.id == 0x02000000 | natural
        assert by_name(info.tables, second).preamble.id == 0x02000000 | (natural + 1)


# ------------------------------------------------------------------------------ fields
def test_table_fields() -> None:
    info = build_p4info(rich_resources())
    t = by_name(info.tables, "MyIngress.fwd")
    mt = p4info_pb2.MatchField
    assert [(m.id, m.name, m.bitwidth, m.match_type) for m in t.match_fields] == [
        (1, "hdr.eth.dst", 48, mt.EXACT),
        (2, "hdr.ip.src", 32, mt.TERNARY),
        (3, "meta.port", 16, mt.RANGE),
        (4, "meta.vlan", 12, mt.OPTIONAL),
    ]
    assert list(t.match_fields[1].annotations) == ['@name("src")']
    set_port = by_name(info.actions, "MyIngress.set_port").preamble.id
    drop = by_name(info.actions, "MyIngress.drop").preamble.id
    scope = p4info_pb2.ActionRef
    assert [(r.id, r.scope, list(r.annotations)) for r in t.action_refs] == [
        (set_port, scope.TABLE_ONLY, ["@tableonly"]),
        (drop, scope.DEFAULT_ONLY, ["@defaultonly"]),
    ]
    assert t.const_default_action_id == drop
    hits = by_name(info.direct_counters, "MyIngress.fwd_hits").preamble.id
    rate = by_name(info.direct_meters, "MyIngress.fwd_rate").preamble.id
    assert list(t.direct_resource_ids) == [hits, rate]
    assert t.size == 256
    assert not t.is_const_table and not t.has_initial_entries  # p4c 1.2.4.1 never sets it
    assert list(t.preamble.annotations) == ["@my_table_note"]
    fixed = by_name(info.tables, "MyEgress.fixed")
    assert fixed.is_const_table and not fixed.has_initial_entries and fixed.size == 1024
    assert fixed.match_fields[0].match_type == mt.EXACT  # lower-case kind accepted
    assert fixed.const_default_action_id == 0
    seeded = by_name(info.tables, "MyEgress.seeded")
    assert not seeded.has_initial_entries and not seeded.is_const_table
    assert len(seeded.match_fields) == 0


def test_action_fields() -> None:
    info = build_p4info(rich_resources())
    a = by_name(info.actions, "MyIngress.set_port")
    assert [(p.id, p.name, p.bitwidth, list(p.annotations)) for p in a.params] == [
        (1, "port", 9, []),
        (2, "tag", 12, ["@note"]),
    ]
    assert list(by_name(info.actions, "MyIngress.drop").preamble.annotations) == [
        '@brief("drop it")'
    ]
    assert [a.preamble.name for a in info.actions] == [
        "NoAction",
        "MyIngress.drop",
        "MyIngress.set_port",
    ]


def test_counters_and_meters() -> None:
    info = build_p4info(rich_resources())
    fwd = by_name(info.tables, "MyIngress.fwd").preamble.id
    c = by_name(info.counters, "MyIngress.pkts")
    assert c.spec.unit == p4info_pb2.CounterSpec.PACKETS and c.size == 64
    dc = by_name(info.direct_counters, "MyIngress.fwd_hits")
    assert dc.spec.unit == p4info_pb2.CounterSpec.BOTH and dc.direct_table_id == fwd
    m = by_name(info.meters, "MyIngress.rate")
    assert m.spec.unit == p4info_pb2.MeterSpec.BYTES and m.size == 8
    assert m.spec.type == p4info_pb2.MeterSpec.TWO_RATE_THREE_COLOR
    dm = by_name(info.direct_meters, "MyIngress.fwd_rate")
    assert dm.spec.unit == p4info_pb2.MeterSpec.PACKETS and dm.direct_table_id == fwd
    assert len(info.counters) == 1 and len(info.direct_counters) == 1


def test_registers() -> None:
    info = build_p4info(rich_resources())
    slots = by_name(info.registers, "MyIngress.slots")
    assert slots.size == 4096
    assert slots.type_spec.bitstring.WhichOneof("type_spec") == "bit"
    assert slots.type_spec.bitstring.bit.bitwidth == 64
    deltas = by_name(info.registers, "MyIngress.deltas")
    assert deltas.type_spec.bitstring.WhichOneof("type_spec") == "int"
    assert deltas.type_spec.bitstring.int.bitwidth == 16 and deltas.size == 10


def test_digest_and_type_info() -> None:
    info = build_p4info(rich_resources())
    d = by_name(info.digests, "hot_key_t")
    assert d.type_spec.struct.name == "hot_key_t"
    members = info.type_info.structs["hot_key_t"].members
    assert [(m.name, m.type_spec.bitstring.bit.bitwidth) for m in members] == [
        ("slot", 32),
        ("hash", 16),
    ]


def test_repeated_digest_type_listed_once() -> None:
    res = rich_resources()
    res.digests.append(DigestInfo("hot_key_t", list(res.digests[0].fields)))
    info = build_p4info(res)
    assert len(info.digests) == 1


def test_conflicting_duplicate_names_rejected() -> None:
    res = basic_resources()
    res.actions.append(ActionInfo("MyIngress.drop", params=[ActionParamInfo("x", 1)]))
    with pytest.raises(CompileError, match="declared twice"):
        build_p4info(res)


def test_controller_packet_metadata() -> None:
    info = build_p4info(rich_resources())
    pin = by_name(info.controller_packet_metadata, "packet_in")
    assert list(pin.preamble.annotations) == ['@controller_header("packet_in")']
    assert [(m.id, m.name, m.bitwidth) for m in pin.metadata] == [
        (1, "ingress_port", 9),
        (2, "_pad", 7),
    ]
    pout = by_name(info.controller_packet_metadata, "packet_out")
    # The annotation p4c always prints is added when the resources lack it.
    assert list(pout.preamble.annotations) == ['@controller_header("packet_out")']


def test_pkg_info_is_the_arch_alone_as_p4c_writes_it() -> None:
    # p4c-bm2-ss 1.2.4.1 on p4cache.p4: pkg_info { arch: "v1model" }, no name from the file
    info = build_p4info(rich_resources())
    assert str(info.pkg_info) == 'arch: "v1model"\n'


def test_scope_annotations_added_like_p4c() -> None:
    res = rich_resources()
    for ref in res.tables[0].action_refs:
        ref.annotations = []
    refs = by_name(build_p4info(res).tables, "MyIngress.fwd").action_refs
    assert [list(r.annotations) for r in refs] == [["@tableonly"], ["@defaultonly"]]


def test_unknown_references_are_errors() -> None:
    res = basic_resources()
    res.tables[0].action_refs.append(ActionRefInfo("MyIngress.missing"))
    with pytest.raises(CompileError, match="unknown action 'MyIngress.missing'"):
        build_p4info(res)
    res = rich_resources()
    res.tables[0].match_fields[0].match_type = "selector"
    with pytest.raises(CompileError, match="selector"):
        build_p4info(res)


# ------------------------------------------------------------------------------ aliases
def test_aliases_are_shortest_unique_suffixes() -> None:
    aliases = shortest_unique_suffixes(
        ["MyIngress.drop", "MyEgress.drop", "MyIngress.fwd", "a.b.c", "d.b.c", "c", "x"]
    )
    assert aliases == {
        "MyIngress.drop": "MyIngress.drop",
        "MyEgress.drop": "MyEgress.drop",
        "MyIngress.fwd": "fwd",
        "a.b.c": "a.b.c",
        "d.b.c": "d.b.c",
        "c": "c",
        "x": "x",
    }


def test_aliases_in_p4info() -> None:
    info = build_p4info(basic_resources())
    assert by_name(info.tables, "MyIngress.ipv4_lpm").preamble.alias == "ipv4_lpm"
    assert by_name(info.actions, "MyIngress.drop").preamble.alias == "drop"
    res = basic_resources()
    res.actions.append(ActionInfo("MyEgress.drop"))
    info = build_p4info(res)
    assert by_name(info.actions, "MyIngress.drop").preamble.alias == "MyIngress.drop"
    assert by_name(info.actions, "MyEgress.drop").preamble.alias == "MyEgress.drop"


# ------------------------------------------------------------------------------ writing
@pytest.mark.parametrize(
    ("suffix", "fmt"), [(".txt", "text"), (".json", "json"), (".bin", "binary")]
)
def test_format_from_suffix(suffix: str, fmt: str) -> None:
    assert format_for_path(f"out/prog.p4info{suffix}") == fmt


@pytest.mark.parametrize(
    ("name", "suffix"),
    [
        ("prog.p4info.txtpb", ".txtpb"),  # later p4c releases know it; 1.2.4 does not
        ("prog.p4info", ".p4info"),
        ("prog.TXT", ".TXT"),  # compared as written
        ("prog.yaml", ".yaml"),
        ("build.d/prog", ".d/prog"),  # the last '.' of the whole name, directories included
    ],
)
def test_suffixes_p4c_1_2_4_refuses_with_its_message(name: str, suffix: str) -> None:
    with pytest.raises(P4InfoFormatError) as e:
        format_for_path(name)
    assert str(e.value) == (
        f"{name}: Could not detect p4runtime info file format from file suffix {suffix}")


@pytest.mark.parametrize("name", ["prog", "build/prog", ""])
def test_a_name_without_a_dot_is_an_unknown_file_kind(name: str) -> None:
    with pytest.raises(P4InfoFormatError) as e:
        format_for_path(name)
    assert str(e.value) == f"{name}: unknown file kind; known suffixes are .bin, .txt, .json"


def test_written_files_load_back_identically(tmp_path: Path) -> None:
    info = build_p4info(rich_resources())
    for suffix in (".txt", ".json", ".bin"):
        path = tmp_path / f"rich.p4info{suffix}"
        write_p4info(info, path)
        loaded = p4info_pb2.P4Info()
        if suffix == ".txt":
            text_format.Parse(path.read_text(), loaded)
        elif suffix == ".json":
            json_format.Parse(path.read_text(), loaded)
        else:
            loaded.ParseFromString(path.read_bytes())
        assert loaded == info, suffix
    text = (tmp_path / "rich.p4info.txt").read_text()
    assert text.startswith("# proto-file: p4/config/v1/p4info.proto\n")  # as current p4c
    assert 'name: "MyIngress.fwd"' in text
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        f"rich.p4info{s}" for s in (".txt", ".json", ".bin")
    )  # no temporary files left behind


def test_write_with_unknown_suffix_writes_nothing(tmp_path: Path) -> None:
    with pytest.raises(P4InfoFormatError):
        write_p4info(build_p4info(basic_resources()), tmp_path / "x.p4info")
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------------------ consumer
def test_p4runtime_shell_context_resolves_names_and_ids(tmp_path: Path) -> None:
    from p4runtime_sh.context import Context, P4Type

    path = tmp_path / "rich.p4info.txt"
    info = build_p4info(rich_resources())
    write_p4info(info, path)
    loaded = text_format.Parse(path.read_text(), p4info_pb2.P4Info())
    ctx = Context()
    ctx.set_p4info(loaded)
    fwd = by_name(info.tables, "MyIngress.fwd")
    assert ctx.get_table_id("MyIngress.fwd") == fwd.preamble.id
    assert ctx.get_table_id("fwd") == fwd.preamble.id  # shell accepts unique suffixes too
    assert ctx.get_action_id("set_port") == by_name(info.actions, "MyIngress.set_port").preamble.id
    assert ctx.get_mf_id("MyIngress.fwd", "meta.port") == 3
    assert ctx.get_param_id("MyIngress.set_port", "tag") == 2
    assert ctx.get_name_from_id(fwd.preamble.id) == "MyIngress.fwd"
    assert ctx.get_direct_counter_id("fwd_hits") == fwd.direct_resource_ids[0]
    assert ctx.get_obj(P4Type.digest, "hot_key_t") is not None
    assert ctx.get_packet_metadata_name_from_id("packet_in", 2) == "_pad"


def test_p4runtime_shell_builds_a_table_entry() -> None:
    """The shell's own TableEntry/Action helpers turn names into the ids we assigned."""
    from p4runtime_sh import shell

    info = build_p4info(basic_resources())
    shell.context.set_p4info(info)
    te = shell.TableEntry("MyIngress.ipv4_lpm")(action="MyIngress.ipv4_forward")
    te.match["hdr.ipv4.dstAddr"] = "10.0.1.0/24"
    te.action["dstAddr"] = "00:00:00:00:01:01"
    te.action["port"] = "1"
    msg = te.msg()
    assert msg.table_id == 37375156
    assert msg.match[0].field_id == 1
    assert msg.match[0].lpm.prefix_len == 24
    assert msg.action.action.action_id == 28792405
    assert [p.param_id for p in msg.action.action.params] == [1, 2]
    assert msg.action.action.params[1].value == b"\x01"
