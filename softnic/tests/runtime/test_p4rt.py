"""P4Runtime service over real gRPC on 127.0.0.1, driving the real softnic engine: pipeline
config, Write/Read of every supported entity, and the error codes the spec prescribes."""

from __future__ import annotations

import grpc
import pytest
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2 as pb

from softnic.runtime.p4rt import P4RuntimeServer
from softnic.tests.runtime import test_p4rt_fixture as fx
from softnic.tests.runtime.test_p4rt_fixture import Client, update, write_errors

H1 = bytes.fromhex("080000000101")
H2 = bytes.fromhex("080000000202")


def eth_ipv4(dst: bytes = H2, src: bytes = H1, ip_src: str = "10.0.0.1",
             ip_dst: str = "10.0.1.2", proto: int = 17) -> bytes:
    ip = bytearray(20)
    ip[0] = 0x45
    ip[2:4] = (20 + 8).to_bytes(2, "big")
    ip[8] = 64
    ip[9] = proto
    ip[12:16] = bytes(int(x) for x in ip_src.split("."))
    ip[16:20] = bytes(int(x) for x in ip_dst.split("."))
    return dst + src + b"\x08\x00" + bytes(ip) + b"\x00\x01\x00\x02\x00\x08\x00\x00"


@pytest.fixture
def env():
    sw = fx.make_switch()
    srv = P4RuntimeServer(sw, device_id=0, cpu_port=fx.CPU_PORT)
    emitted: list[tuple[int, bytes]] = []
    srv.set_transmit(lambda port, data: emitted.append((port, data)))
    port = srv.start("127.0.0.1:0")
    clients: list[Client] = []

    def connect(**kw) -> Client:
        c = Client(f"127.0.0.1:{port}", **kw)
        clients.append(c)
        return c

    yield sw, connect, emitted
    for c in clients:
        c.close()
    srv.stop(0)


@pytest.fixture
def ready(env):
    """A primary client with the test pipeline committed."""
    sw, connect, emitted = env
    c = connect()
    c.set_pipeline()
    return sw, c, emitted


def exact_entry(dst: bytes, port: int, action: int = fx.ACT_FWD) -> pb.TableEntry:
    e = pb.TableEntry(table_id=fx.T_EXACT)
    e.match.add(field_id=1).exact.value = dst
    e.action.action.action_id = action
    if action == fx.ACT_FWD:
        e.action.action.params.add(param_id=1, value=port.to_bytes(2, "big"))
    return e


def tern_entry(src: int, mask: int, proto: int, action: int, priority: int,
               params: list[tuple[int, bytes]] = ()) -> pb.TableEntry:
    e = pb.TableEntry(table_id=fx.T_TERN, priority=priority)
    t = e.match.add(field_id=1).ternary
    t.value, t.mask = src.to_bytes(4, "big"), mask.to_bytes(4, "big")
    e.match.add(field_id=2).exact.value = bytes([proto])
    e.action.action.action_id = action
    for pid, v in params:
        e.action.action.params.add(param_id=pid, value=v)
    return e


def rpc_code(fn) -> grpc.StatusCode:
    with pytest.raises(grpc.RpcError) as e:
        fn()
    return e.value.code()


def write_codes(c: Client, *updates) -> list[int]:
    with pytest.raises(grpc.RpcError) as e:
        c.write(*updates)
    assert e.value.code() == grpc.StatusCode.UNKNOWN
    return [err.canonical_code for err in write_errors(e.value)]


def test_capabilities_and_nothing_before_a_pipeline(env) -> None:
    _, connect, _ = env
    c = connect()
    assert c.stub.Capabilities(pb.CapabilitiesRequest()).p4runtime_api_version.startswith("1.")
    fp = grpc.StatusCode.FAILED_PRECONDITION
    assert rpc_code(lambda: c.write(update("INSERT", "table_entry", exact_entry(H2, 1)))) == fp
    assert rpc_code(lambda: c.read(pb.Entity(table_entry=pb.TableEntry()))) == fp
    req = pb.GetForwardingPipelineConfigRequest(device_id=0)
    assert rpc_code(lambda: c.stub.GetForwardingPipelineConfig(req)) == fp
    wrong_dev = pb.ReadRequest(device_id=7)
    assert rpc_code(lambda: list(c.stub.Read(wrong_dev))) == grpc.StatusCode.NOT_FOUND


def test_pipeline_raw_json_and_get_config(env) -> None:
    _, connect, _ = env
    c = connect()
    c.set_pipeline(cookie=42)
    G = pb.GetForwardingPipelineConfigRequest
    full = c.stub.GetForwardingPipelineConfig(G(device_id=0, response_type=G.ALL)).config
    assert full.p4_device_config == fx.bmv2_json_bytes()
    assert full.p4info == fx.p4info() and full.cookie.cookie == 42
    only = c.stub.GetForwardingPipelineConfig(G(device_id=0, response_type=G.COOKIE_ONLY)).config
    assert only.cookie.cookie == 42 and not only.p4_device_config and not only.p4info.tables
    dev = c.stub.GetForwardingPipelineConfig(
        G(device_id=0, response_type=G.DEVICE_CONFIG_AND_COOKIE)).config
    assert dev.p4_device_config and not dev.p4info.tables


def test_pipeline_as_p4deviceconfig(env) -> None:
    sw, connect, _ = env
    c = connect()
    data = fx.bmv2_json_bytes()
    n, length = len(data), b""
    while True:  # varint of the device_data length
        length += bytes([(n & 0x7F) | (0x80 if n >> 7 else 0)])
        n >>= 7
        if not n:
            break
    c.set_pipeline(device_config=b"\x08\x00\x1a" + length + data)  # reassign=false, device_data
    c.write(update("INSERT", "table_entry", exact_entry(H2, 2)))
    assert sw.process_packet(1, eth_ipv4())[0][0] == 2


def test_pipeline_actions_and_bad_configs(env) -> None:
    _, connect, _ = env
    c = connect()
    R = pb.SetForwardingPipelineConfigRequest
    c.set_pipeline(action=R.VERIFY)
    fp = grpc.StatusCode.FAILED_PRECONDITION
    assert rpc_code(lambda: c.read(pb.Entity(table_entry=pb.TableEntry()))) == fp
    assert rpc_code(lambda: c.set_pipeline(action=R.COMMIT)) == fp  # nothing saved
    c.set_pipeline(action=R.VERIFY_AND_SAVE)
    assert rpc_code(lambda: c.read(pb.Entity(table_entry=pb.TableEntry()))) == fp
    c.set_pipeline(action=R.COMMIT)
    assert c.read(pb.Entity(table_entry=pb.TableEntry())) == []
    c.set_pipeline(action=R.RECONCILE_AND_COMMIT)
    inv = grpc.StatusCode.INVALID_ARGUMENT
    assert rpc_code(lambda: c.set_pipeline(device_config=b"{ nope")) == inv
    other = fx.p4info()
    other.tables[0].preamble.name = "MyIngress.not_there"
    # a P4Info table p4c left out of the JSON: BMv2 accepts the pair (test_bmv2_dialect.py)
    c.set_pipeline(p4info_msg=other)
    assert c.read(pb.Entity(table_entry=pb.TableEntry())) == []
    backup = connect(election_id=(0, 0))
    assert rpc_code(lambda: backup.set_pipeline()) == grpc.StatusCode.PERMISSION_DENIED


def test_exact_entry_lifecycle(ready) -> None:
    sw, c, _ = ready
    c.write(update("INSERT", "table_entry", exact_entry(H2, 2)))
    assert sw.process_packet(1, eth_ipv4())[0][0] == 2
    [got] = c.read(pb.Entity(table_entry=pb.TableEntry(table_id=fx.T_EXACT)))
    assert got.table_entry.match[0].exact.value == H2
    assert got.table_entry.action.action.params[0].value == b"\x02"  # canonical form
    c.write(update("MODIFY", "table_entry", exact_entry(H2, 3)))
    assert sw.process_packet(1, eth_ipv4())[0][0] == 3
    assert write_codes(c, update("INSERT", "table_entry", exact_entry(H2, 4))) == \
        [code_pb2.ALREADY_EXISTS]
    c.write(update("DELETE", "table_entry", exact_entry(H2, 0)))
    assert c.read(pb.Entity(table_entry=pb.TableEntry(table_id=fx.T_EXACT))) == []
    assert write_codes(c, update("DELETE", "table_entry", exact_entry(H2, 0))) == \
        [code_pb2.NOT_FOUND]
    assert write_codes(c, update("MODIFY", "table_entry", exact_entry(H2, 1))) == \
        [code_pb2.NOT_FOUND]


def test_batch_reports_one_error_per_update(ready) -> None:
    sw, c, _ = ready
    unknown_table = exact_entry(H1, 1)
    unknown_table.table_id = 0x02000999
    too_wide = exact_entry(H1, 1)
    too_wide.match[0].exact.value = b"\x01" * 7  # 48-bit field
    bad_port = exact_entry(H1, 1)
    bad_port.action.action.params[0].value = b"\x02\x00"  # 512 does not fit 9 bits
    codes = write_codes(c, update("INSERT", "table_entry", exact_entry(H2, 2)),
                        update("INSERT", "table_entry", unknown_table),
                        update("INSERT", "table_entry", too_wide),
                        update("INSERT", "table_entry", bad_port))
    inv = code_pb2.INVALID_ARGUMENT
    assert codes == [code_pb2.OK, inv, inv, inv]
    assert len(c.read(pb.Entity(table_entry=pb.TableEntry(table_id=fx.T_EXACT)))) == 1
    with pytest.raises(grpc.RpcError) as e:
        c.write(update("INSERT", "table_entry", too_wide))
    assert "too long" in write_errors(e.value)[0].message


def test_lpm_ternary_priority_and_wildcard_read(ready) -> None:
    sw, c, _ = ready
    lpm = pb.TableEntry(table_id=fx.T_LPM)
    m = lpm.match.add(field_id=1).lpm
    m.value, m.prefix_len = bytes([10, 0, 1, 0]), 24
    lpm.action.action.action_id = fx.ACT_SET_NHOP
    lpm.action.action.params.add(param_id=1, value=bytes.fromhex("0a0b0c0d0e0f"))
    lpm.action.action.params.add(param_id=2, value=b"\x05")
    c.write(update("INSERT", "table_entry", lpm))
    out = sw.process_packet(1, eth_ipv4(ip_dst="10.0.1.9"))
    assert out[0][0] == 5 and out[0][1][:6] == bytes.fromhex("0a0b0c0d0e0f")
    assert write_codes(c, update("INSERT", "table_entry",
                                 tern_entry(0x0A000000, 0xFF000000, 17, fx.ACT_LEARN, 0))) == \
        [code_pb2.INVALID_ARGUMENT]  # ternary table without priority
    c.write(update("INSERT", "table_entry",
                   tern_entry(0x0A000000, 0xFF000000, 17, fx.ACT_LEARN, 10)),
            update("INSERT", "table_entry",
                   tern_entry(0x0A000000, 0xFF000000, 17, fx.ACT_NOACTION, 20)))
    everything = c.read(pb.Entity(table_entry=pb.TableEntry()))
    assert sorted(e.table_entry.table_id for e in everything) == [fx.T_LPM, fx.T_TERN, fx.T_TERN]
    one = tern_entry(0x0A000000, 0xFF000000, 17, fx.ACT_NOACTION, 20)
    one.ClearField("action")
    [got] = c.read(pb.Entity(table_entry=one))
    assert got.table_entry.priority == 20
    assert got.table_entry.action.action.action_id == fx.ACT_NOACTION


def test_default_action(ready) -> None:
    sw, c, _ = ready
    d = pb.TableEntry(table_id=fx.T_EXACT, is_default_action=True)
    d.action.action.action_id = fx.ACT_FWD
    d.action.action.params.add(param_id=1, value=b"\x07")
    c.write(update("MODIFY", "table_entry", d))
    assert sw.process_packet(1, eth_ipv4())[0][0] == 7
    q = pb.TableEntry(table_id=fx.T_EXACT, is_default_action=True)
    [got] = c.read(pb.Entity(table_entry=q))
    assert got.table_entry.is_default_action
    assert got.table_entry.action.action.action_id == fx.ACT_FWD
    assert write_codes(c, update("INSERT", "table_entry", d)) == [code_pb2.INVALID_ARGUMENT]
    const = pb.TableEntry(table_id=fx.T_LPM, is_default_action=True)
    const.action.action.action_id = fx.ACT_NOACTION
    assert write_codes(c, update("MODIFY", "table_entry", const)) == \
        [code_pb2.PERMISSION_DENIED]
    c.write(update("MODIFY", "table_entry", q))  # no action: back to the program's default
    [got] = c.read(pb.Entity(table_entry=q))
    assert got.table_entry.action.action.action_id == fx.ACT_NOACTION


def test_counters(ready) -> None:
    sw, c, _ = ready
    c.write(update("INSERT", "table_entry", exact_entry(H2, 3)))
    for _ in range(2):
        sw.process_packet(1, eth_ipv4())
    [cell] = c.read(pb.Entity(counter_entry=pb.CounterEntry(counter_id=fx.C_INGRESS,
                                                            index=pb.Index(index=3))))
    assert cell.counter_entry.data.packet_count == 2
    assert cell.counter_entry.data.byte_count == 2 * len(eth_ipv4())
    cells = c.read(pb.Entity(counter_entry=pb.CounterEntry(counter_id=fx.C_INGRESS)))
    assert len(cells) == 16
    everything = c.read(pb.Entity(counter_entry=pb.CounterEntry()))
    assert len(everything) == 16
    dc = pb.DirectCounterEntry()
    dc.table_entry.CopyFrom(exact_entry(H2, 0))
    dc.table_entry.ClearField("action")
    [d] = c.read(pb.Entity(direct_counter_entry=dc))
    assert d.direct_counter_entry.data.packet_count == 2
    # index is an int64 in the proto: past the end and negative are both OUT_OF_RANGE (the spec's
    # code for an index outside the array), never an empty answer
    for bad in (99, 16, -1, -(2 ** 63)):
        oor = pb.CounterEntry(counter_id=fx.C_INGRESS, index=pb.Index(index=bad))
        assert rpc_code(lambda oor=oor: c.read(pb.Entity(counter_entry=oor))) == \
            grpc.StatusCode.OUT_OF_RANGE
    neg = pb.CounterEntry(counter_id=fx.C_INGRESS, index=pb.Index(index=-1))
    assert write_codes(c, update("MODIFY", "counter_entry", neg)) == [code_pb2.OUT_OF_RANGE]
    with pytest.raises(IndexError):  # the engine API refuses it too (no Python wrap-around)
        sw.counter_read("MyIngress.c_ingress", -1)
    w = pb.CounterEntry(counter_id=fx.C_INGRESS, index=pb.Index(index=5))
    w.data.packet_count, w.data.byte_count = 11, 1100
    c.write(update("MODIFY", "counter_entry", w))
    [cell] = c.read(pb.Entity(counter_entry=pb.CounterEntry(counter_id=fx.C_INGRESS,
                                                            index=pb.Index(index=5))))
    assert (cell.counter_entry.data.packet_count, cell.counter_entry.data.byte_count) == \
        (11, 1100)
    assert write_codes(c, update("INSERT", "counter_entry", w)) == [code_pb2.INVALID_ARGUMENT]


def test_registers(ready) -> None:
    sw, c, _ = ready
    r = pb.RegisterEntry(register_id=fx.R_LAST, index=pb.Index(index=2))
    r.data.bitstring = bytes.fromhex("deadbeef")
    c.write(update("MODIFY", "register_entry", r))
    [got] = c.read(pb.Entity(register_entry=pb.RegisterEntry(register_id=fx.R_LAST,
                                                             index=pb.Index(index=2))))
    assert got.register_entry.data.bitstring == bytes.fromhex("deadbeef")
    assert sw.register_read("MyIngress.r_last", 2) == 0xDEADBEEF
    c.write(update("INSERT", "table_entry",
                   tern_entry(0x0A000000, 0xFF000000, 17, fx.ACT_REMEMBER, 1, [(1, b"\x01")])))
    sw.process_packet(1, eth_ipv4(ip_src="10.9.8.7"))
    cells = c.read(pb.Entity(register_entry=pb.RegisterEntry(register_id=fx.R_LAST)))
    assert [x.register_entry.data.bitstring for x in cells][:3] == \
        [b"\x00", bytes([10, 9, 8, 7]), bytes.fromhex("deadbeef")]
    r.data.bitstring = b"\x01\x00\x00\x00\x00"  # 33+ bits into a 32-bit register
    assert write_codes(c, update("MODIFY", "register_entry", r)) == [code_pb2.INVALID_ARGUMENT]
    r.index.index = 8
    r.data.bitstring = b"\x01"
    assert write_codes(c, update("MODIFY", "register_entry", r)) == [code_pb2.OUT_OF_RANGE]


def test_meter_config(ready) -> None:
    _, c, _ = ready
    m = pb.MeterEntry(meter_id=fx.M_IN, index=pb.Index(index=1))
    m.config.cir, m.config.cburst, m.config.pir, m.config.pburst = 1000, 100, 2000, 200
    c.write(update("MODIFY", "meter_entry", m))
    [got] = c.read(pb.Entity(meter_entry=pb.MeterEntry(meter_id=fx.M_IN,
                                                       index=pb.Index(index=1))))
    assert got.meter_entry.config == m.config


def test_multicast_and_clone_sessions(ready) -> None:
    sw, c, _ = ready
    g = pb.PacketReplicationEngineEntry()
    g.multicast_group_entry.multicast_group_id = 1
    g.multicast_group_entry.replicas.add(egress_port=1, instance=0)
    g.multicast_group_entry.replicas.add(egress_port=2, instance=0)
    c.write(update("INSERT", "packet_replication_engine_entry", g))
    assert write_codes(c, update("INSERT", "packet_replication_engine_entry", g)) == \
        [code_pb2.ALREADY_EXISTS]
    [got] = c.read(pb.Entity(packet_replication_engine_entry=g))
    assert got.packet_replication_engine_entry == g
    c.write(update("INSERT", "table_entry",
                   tern_entry(0x0A000000, 0xFF000000, 17, fx.ACT_MCAST, 1, [(1, b"\x01")])))
    out = sw.process_packet(3, eth_ipv4())
    assert sorted(p for p, _ in out) == [1, 2]
    s = pb.PacketReplicationEngineEntry()
    s.clone_session_entry.session_id = 5
    s.clone_session_entry.replicas.add(port=b"\x04", instance=1)
    c.write(update("INSERT", "packet_replication_engine_entry", s))
    [got] = c.read(pb.Entity(packet_replication_engine_entry=s))
    assert got.packet_replication_engine_entry.clone_session_entry.replicas[0].port == b"\x04"
    c.write(update("DELETE", "packet_replication_engine_entry", g))
    assert rpc_code(lambda: c.read(pb.Entity(packet_replication_engine_entry=g))) == \
        grpc.StatusCode.NOT_FOUND
    c.set_pipeline()  # a new pipeline starts without clone sessions, as on BMv2
    everything = pb.PacketReplicationEngineEntry()
    everything.clone_session_entry.session_id = 0
    assert c.read(pb.Entity(packet_replication_engine_entry=everything)) == []


def test_unsupported_entities(ready) -> None:
    _, c, _ = ready
    member = pb.ActionProfileMember(action_profile_id=1, member_id=1)
    assert write_codes(c, update("INSERT", "action_profile_member", member)) == \
        [code_pb2.UNIMPLEMENTED]


def test_malformed_requests_get_clear_errors_and_never_crash(ready) -> None:
    import random

    sw, c, _ = ready
    inv = code_pb2.INVALID_ARGUMENT
    assert write_codes(c, pb.Update(type=pb.Update.INSERT)) == [inv]  # no entity
    assert write_codes(c, pb.Update(type=pb.Update.UNSPECIFIED,
                                    entity=pb.Entity(table_entry=exact_entry(H2, 1)))) == [inv]
    bad_read = pb.Entity(table_entry=pb.TableEntry(table_id=0x02000999))
    assert rpc_code(lambda: c.read(bad_read)) == grpc.StatusCode.INVALID_ARGUMENT
    bad_counter = pb.Entity(counter_entry=pb.CounterEntry(counter_id=12345))
    assert rpc_code(lambda: c.read(bad_counter)) == grpc.StatusCode.INVALID_ARGUMENT
    rng = random.Random(7)
    updates = []
    for _ in range(150):  # random bytes in every value position
        e = tern_entry(0, 0xFFFFFFFF, 0, fx.ACT_MCAST, rng.randrange(-1, 3))
        t = e.match[0].ternary
        t.value = rng.randbytes(rng.randrange(0, 6))
        t.mask = rng.randbytes(rng.randrange(0, 6))
        e.match[1].exact.value = rng.randbytes(rng.randrange(0, 3))
        e.action.action.params.add(param_id=rng.randrange(0, 3),
                                   value=rng.randbytes(rng.randrange(0, 4)))
        updates.append(update(rng.choice(["INSERT", "MODIFY", "DELETE"]), "table_entry", e))
    with pytest.raises(grpc.RpcError) as e:
        c.write(*updates)
    errors = write_errors(e.value)  # fits the client's metadata limit: messages shortened
    assert len(errors) == len(updates)
    codes = {err.canonical_code for err in errors}
    assert codes <= {code_pb2.OK, inv, code_pb2.NOT_FOUND, code_pb2.ALREADY_EXISTS}
    assert code_pb2.INTERNAL not in codes
    # still serving, and what was accepted is readable and well-formed
    for ent in c.read(pb.Entity(table_entry=pb.TableEntry(table_id=fx.T_TERN))):
        assert ent.table_entry.priority > 0
