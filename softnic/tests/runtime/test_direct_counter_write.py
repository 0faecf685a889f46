"""Direct counter writes: ``Switch.direct_counter_write`` and P4Runtime DirectCounterEntry MODIFY.

A written value must be what a read returns, and packets hitting the entry afterwards must add
to it (the engine updates the very cells the packet path increments).
"""

from __future__ import annotations

import grpc
import pytest
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2 as pb
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from softnic.runtime.api import ActionCall, InvalidArgument, MatchKey, NotFound, TableEntry
from softnic.tests.runtime import test_p4rt_fixture as fx
from softnic.tests.runtime.engine_helpers import load_switch
from softnic.tests.runtime.test_p4rt import env, eth_ipv4, exact_entry, ready, write_codes
from softnic.tests.runtime.test_p4rt_fixture import update

__all__ = ["env", "ready"]  # pytest fixtures reused from test_p4rt

STATS = "MyIngress.stats"
H2 = bytes.fromhex("080000000202")
H3 = bytes.fromhex("080000000303")


# -- engine -------------------------------------------------------------------------------------

@pytest.fixture
def sw():
    s = load_switch("stateful")
    s.table_add(STATS, TableEntry([MatchKey(0x0800)], ActionCall("MyIngress.do_stats", [])))
    return s


def test_engine_write_then_read_and_packets_add(sw) -> None:
    data = bytes(Ether() / IP(src="1.2.3.4", dst="5.6.7.8") / UDP())
    sw.process_packet(0, data)
    sw.direct_counter_write(STATS, [MatchKey(0x0800)], 0, 1000, 64000)
    assert sw.direct_counter_read(STATS, [MatchKey(0x0800)], 0) == (1000, 64000)
    sw.process_packet(0, data)
    sw.process_packet(0, data)
    assert sw.direct_counter_read(STATS, [MatchKey(0x0800)], 0) == (1002, 64000 + 2 * len(data))
    [e] = sw.table_entries(STATS)
    assert (e.counter_packets, e.counter_bytes) == (1002, 64000 + 2 * len(data))
    sw.direct_counter_write(STATS, [MatchKey(0x0800)], 0, 0, 0)
    assert sw.direct_counter_read(STATS, [MatchKey(0x0800)], 0) == (0, 0)


def test_engine_write_errors(sw) -> None:
    with pytest.raises(NotFound):
        sw.direct_counter_write(STATS, [MatchKey(0x86DD)], 0, 1, 1)
    with pytest.raises(NotFound):
        sw.direct_counter_write("MyIngress.nope", [MatchKey(0x0800)], 0, 1, 1)
    with pytest.raises(InvalidArgument):
        sw.direct_counter_write(STATS, [MatchKey(0x0800)], 0, -1, 0)
    assert sw.direct_counter_read(STATS, [MatchKey(0x0800)], 0) == (0, 0)


# -- P4Runtime over gRPC ------------------------------------------------------------------------

def dc_entry(dst: bytes, packets: int | None = None, nbytes: int | None = None
             ) -> pb.DirectCounterEntry:
    dc = pb.DirectCounterEntry()
    dc.table_entry.CopyFrom(exact_entry(dst, 0))
    dc.table_entry.ClearField("action")
    if packets is not None:
        dc.data.packet_count = packets
    if nbytes is not None:
        dc.data.byte_count = nbytes
    return dc


def read_dc(c: fx.Client, dst: bytes) -> tuple[int, int]:
    [d] = c.read(pb.Entity(direct_counter_entry=dc_entry(dst)))
    return d.direct_counter_entry.data.packet_count, d.direct_counter_entry.data.byte_count


def test_p4rt_write_then_read_and_packets_add(ready) -> None:
    sw, c, _ = ready
    c.write(update("INSERT", "table_entry", exact_entry(H2, 3)),
            update("INSERT", "table_entry", exact_entry(H3, 4)))
    sw.process_packet(1, eth_ipv4())
    assert read_dc(c, H2) == (1, len(eth_ipv4()))
    c.write(update("MODIFY", "direct_counter_entry", dc_entry(H2, 500, 123456)))
    assert read_dc(c, H2) == (500, 123456)
    assert read_dc(c, H3) == (0, 0)  # only the addressed entry changed
    for _ in range(3):
        assert sw.process_packet(1, eth_ipv4())[0][0] == 3
    assert read_dc(c, H2) == (503, 123456 + 3 * len(eth_ipv4()))
    # the table entry read with counter_data shows the same cells
    q = pb.TableEntry(table_id=fx.T_EXACT)
    q.counter_data.SetInParent()
    got = {e.table_entry.match[0].exact.value: e.table_entry.counter_data
           for e in c.read(pb.Entity(table_entry=q))}
    assert (got[H2].packet_count, got[H2].byte_count) == (503, 123456 + 3 * len(eth_ipv4()))
    c.write(update("MODIFY", "direct_counter_entry", dc_entry(H2, 0, 0)))
    assert read_dc(c, H2) == (0, 0)


def test_p4rt_write_errors(ready) -> None:
    _, c, _ = ready
    c.write(update("INSERT", "table_entry", exact_entry(H2, 3)))
    assert write_codes(c, update("MODIFY", "direct_counter_entry", dc_entry(H3, 1, 1))) == \
        [code_pb2.NOT_FOUND]
    assert write_codes(c, update("INSERT", "direct_counter_entry", dc_entry(H2, 1, 1))) == \
        [code_pb2.INVALID_ARGUMENT]
    assert write_codes(c, update("MODIFY", "direct_counter_entry", dc_entry(H2, -5, 0))) == \
        [code_pb2.INVALID_ARGUMENT]
    assert read_dc(c, H2) == (0, 0)  # failed writes left the cells alone


def test_p4rt_write_needs_primary(env) -> None:
    sw, connect, _ = env
    primary = connect(election_id=(0, 5))
    primary.set_pipeline()
    primary.write(update("INSERT", "table_entry", exact_entry(H2, 3)))
    backup = connect(election_id=(0, 1))
    with pytest.raises(grpc.RpcError) as e:
        backup.write(update("MODIFY", "direct_counter_entry", dc_entry(H2, 9, 9)))
    assert e.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert read_dc(primary, H2) == (0, 0)
