"""StreamChannel over real gRPC with the real engine: arbitration between controllers,
packet-in, packet-out and digests."""

from __future__ import annotations

import time

import grpc
import pytest
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2 as pb

from softnic.tests.runtime import test_p4rt_fixture as fx
from softnic.tests.runtime.test_p4rt import env, eth_ipv4, exact_entry, ready, tern_entry
from softnic.tests.runtime.test_p4rt_fixture import update, write_errors

__all__ = ["env", "ready"]  # fixtures shared with test_p4rt


def test_arbitration_between_two_clients(env) -> None:
    _, connect, _ = env
    first = connect(election_id=(0, 1))
    assert first.election_id == (0, 1)
    first.set_pipeline()
    second = connect(arbitrate=False)
    reply = second.arbitrate((0, 2))
    assert reply.arbitration.status.code == code_pb2.OK
    demoted = first.next("arbitration")
    assert demoted.arbitration.status.code == code_pb2.ALREADY_EXISTS
    assert (demoted.arbitration.election_id.high, demoted.arbitration.election_id.low) == (0, 2)
    with pytest.raises(grpc.RpcError) as e:
        first.write(update("INSERT", "table_entry", exact_entry(b"\x01" * 6, 1)))
    assert e.value.code() == grpc.StatusCode.PERMISSION_DENIED
    second.write(update("INSERT", "table_entry", exact_entry(b"\x01" * 6, 1)))
    assert len(first.read(pb.Entity(table_entry=pb.TableEntry()))) == 1  # backups may read
    dup = connect(arbitrate=False)
    with pytest.raises(grpc.RpcError) as e:  # same election id as the primary: stream refused
        dup.arbitrate((0, 2))
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    second.close()
    promoted = first.next("arbitration")
    assert promoted.arbitration.status.code == code_pb2.OK
    first.write(update("DELETE", "table_entry", exact_entry(b"\x01" * 6, 1)))


def test_packet_in_reaches_the_primary(ready) -> None:
    sw, c, _ = ready
    c.write(update("INSERT", "table_entry",
                   tern_entry(0x0A000000, 0xFF000000, 17, fx.ACT_TO_CPU, 1)))
    frame = eth_ipv4()
    assert sw.process_packet(3, frame) == []  # to the CPU port, not returned
    msg = c.next("packet")
    assert msg is not None
    assert msg.packet.payload == frame
    meta = {m.metadata_id: int.from_bytes(m.value, "big") for m in msg.packet.metadata}
    assert meta[1] == 3  # ingress_port


def test_packet_out_is_processed(ready) -> None:
    _, c, emitted = ready
    frame = eth_ipv4()
    req = pb.StreamMessageRequest()
    req.packet.payload = frame
    req.packet.metadata.add(metadata_id=1, value=b"\x02")  # egress_port
    req.packet.metadata.add(metadata_id=2, value=b"\x00")
    c.send(req)
    deadline = time.monotonic() + 5
    while not emitted and time.monotonic() < deadline:
        time.sleep(0.01)
    assert emitted == [(2, frame)]


def test_packet_out_from_backup_is_refused(env) -> None:
    _, connect, emitted = env
    primary = connect(election_id=(0, 5))
    primary.set_pipeline()
    backup = connect(election_id=(0, 1))
    req = pb.StreamMessageRequest()
    req.packet.payload = eth_ipv4()
    req.packet.metadata.add(metadata_id=1, value=b"\x02")
    backup.send(req)
    err = backup.next("error")
    assert err.error.canonical_code == code_pb2.PERMISSION_DENIED
    assert err.error.packet_out.packet_out.payload == req.packet.payload
    assert emitted == []


def test_digests_need_a_digest_entry(ready) -> None:
    sw, c, _ = ready
    c.write(update("INSERT", "table_entry",
                   tern_entry(0x0A000000, 0xFF000000, 17, fx.ACT_LEARN, 1)))
    sw.process_packet(4, eth_ipv4(src=bytes.fromhex("0200000000aa")))
    assert c.next("digest", timeout=0.5) is None  # no DigestEntry yet: nothing sent
    d = pb.DigestEntry(digest_id=fx.D_LEARN)
    d.config.max_timeout_ns, d.config.max_list_size, d.config.ack_timeout_ns = 0, 1, 10**9
    c.write(update("INSERT", "digest_entry", d))
    with pytest.raises(grpc.RpcError) as e:
        c.write(update("INSERT", "digest_entry", d))
    assert write_errors(e.value)[0].canonical_code == code_pb2.ALREADY_EXISTS
    [got] = c.read(pb.Entity(digest_entry=pb.DigestEntry()))
    assert got.digest_entry.config == d.config
    sw.process_packet(4, eth_ipv4(src=bytes.fromhex("0200000000aa")))
    msg = c.next("digest")
    assert msg is not None and msg.digest.digest_id == fx.D_LEARN
    [data] = msg.digest.data
    src, port = (m.bitstring for m in data.struct.members)
    assert src == bytes.fromhex("0200000000aa") and port == b"\x04"
    ack = pb.StreamMessageRequest()
    ack.digest_ack.digest_id, ack.digest_ack.list_id = fx.D_LEARN, msg.digest.list_id
    c.send(ack)
    c.write(update("DELETE", "digest_entry", d))
    assert c.read(pb.Entity(digest_entry=pb.DigestEntry())) == []
