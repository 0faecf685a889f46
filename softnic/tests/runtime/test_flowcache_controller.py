"""The p4lang/tutorials flowcache loop, over real gRPC, on the look-alike corpus program.

What the exercise's controller does with simple_switch_grpc, step by step, with the values
worked out from the P4 source (softnic/tests/corpus/flow_cache.p4) and the P4Runtime spec:
1. it reads the punt reasons and opcodes from P4Info ``type_info.serializable_enums``
   (Reason_t.UNKNOWN_FLOW = 1, Opcode_t.OUT_TO_PORT = 1) and configures clone session 57 to
   the CPU port (510);
2. a first IPv4 packet misses flow_cache: the original is dropped, the clone reaches the
   controller as a PacketIn whose ``reason`` metadata is UNKNOWN_FLOW and ``in_port`` the
   ingress port;
3. the controller sends the packet back as a PacketOut (opcode OUT_TO_PORT, port 3; metadata
   values encoded on ``bitwidth`` bytes as the tutorials' p4runtime_lib does) - it leaves on
   port 3 unchanged - and installs a flow_cache entry with a 300 ms idle timeout;
4. the next packets hit: port 3, TTL 64 -> 63, DSCP 5 (tos 0x14), destination MAC rewritten;
5. when traffic stops, an IdleTimeoutNotification names the entry; the controller deletes it
   from the notification's match, and the next packet is punted again.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from p4.v1 import p4runtime_pb2 as pb

from softnic.compiler.compile import compile_file
from softnic.compiler.p4info.serialize import build_p4info
from softnic.runtime.p4rt import P4RuntimeServer
from softnic.runtime.switch import Switch
from softnic.tests.runtime.test_p4rt import eth_ipv4
from softnic.tests.runtime.test_p4rt_fixture import Client, update

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
CPU_PORT = 510
MS = 1_000_000
NEXT_HOP = bytes.fromhex("080000000333")


def _enum(info, name: str) -> dict[str, int]:
    return {m.name: int.from_bytes(m.value, "big")
            for m in info.type_info.serializable_enums[name].members}


def _with_ipv4_checksum(frame: bytes) -> bytes:
    """The frame with its IPv4 header checksum (RFC 791) filled in, as the program's egress
    update_checksum leaves it."""
    ip = bytearray(frame[14:34])
    ip[10:12] = b"\x00\x00"
    total = sum(int.from_bytes(ip[i:i + 2], "big") for i in range(0, 20, 2))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    ip[10:12] = (~total & 0xFFFF).to_bytes(2, "big")
    return frame[:14] + bytes(ip) + frame[34:]


def _wait(emitted: list, n: int) -> None:
    deadline = time.monotonic() + 5
    while len(emitted) < n and time.monotonic() < deadline:
        time.sleep(0.01)


def test_flowcache_controller_loop() -> None:
    bmv2, res = compile_file(CORPUS / "flow_cache.p4")
    info = build_p4info(res)
    sw = Switch(cpu_port=CPU_PORT)
    srv = P4RuntimeServer(sw, device_id=0, cpu_port=CPU_PORT)
    emitted: list[tuple[int, bytes]] = []
    srv.set_transmit(lambda port, data: emitted.append((port, data)))
    srv.service.idle.interval_s = 0.05
    c = Client(f"127.0.0.1:{srv.start('127.0.0.1:0')}")
    try:
        c.set_pipeline(device_config=json.dumps(bmv2).encode(), p4info_msg=info)
        reasons, opcodes = _enum(info, "Reason_t"), _enum(info, "Opcode_t")
        assert reasons == {"UNKNOWN_FLOW": 1, "BAD_OPCODE": 2}
        assert opcodes == {"NOP": 0, "OUT_TO_PORT": 1}
        pre = pb.PacketReplicationEngineEntry()
        pre.clone_session_entry.session_id = 57
        pre.clone_session_entry.replicas.add(egress_port=CPU_PORT, instance=1)
        c.write(update("INSERT", "packet_replication_engine_entry", pre))

        frame = _with_ipv4_checksum(eth_ipv4(ip_src="10.0.1.1", ip_dst="10.0.3.3", proto=17))
        assert sw.process_packet(1, frame) == []  # dropped; the clone goes to the CPU
        pin = c.next("packet")
        assert pin is not None and pin.packet.payload == frame
        [cpm] = [m for m in info.controller_packet_metadata if m.preamble.name == "packet_in"]
        names = {m.id: m.name for m in cpm.metadata}
        meta = {names[m.metadata_id]: int.from_bytes(m.value, "big") for m in pin.packet.metadata}
        assert meta["reason"] == reasons["UNKNOWN_FLOW"] and meta["in_port"] == 1

        out = pb.StreamMessageRequest()
        out.packet.payload = frame
        for i, (value, width) in enumerate([(opcodes["OUT_TO_PORT"], 8), (0, 8), (3, 32)], 1):
            out.packet.metadata.add(metadata_id=i, value=value.to_bytes(width, "big"))
        c.send(out)
        _wait(emitted, 1)
        assert emitted == [(3, frame)]

        [t] = info.tables
        actions = {a.preamble.name: a for a in info.actions}
        entry = pb.TableEntry(table_id=t.preamble.id, idle_timeout_ns=300 * MS)
        for fid, value in ((1, b"\x11"), (2, bytes([10, 0, 1, 1])), (3, bytes([10, 0, 3, 3]))):
            entry.match.add(field_id=fid).exact.value = value
        act = entry.action.action
        act.action_id = actions["FcIngress.use_cached"].preamble.id
        for pid, value in ((1, b"\x03"), (2, b"\x01"), (3, b"\x05"), (4, NEXT_HOP)):
            act.params.add(param_id=pid, value=value)
        c.write(update("INSERT", "table_entry", entry))

        for _ in range(3):
            [(port, data)] = sw.process_packet(1, frame)
            assert port == 3 and data[:6] == NEXT_HOP
            assert data[14 + 8] == 63 and data[14 + 1] == 0x14  # TTL, tos = DSCP 5 << 2
            time.sleep(0.05)

        note = c.next("idle_timeout_notification", timeout=5.0)
        assert note is not None
        [te] = note.idle_timeout_notification.table_entry
        delete = pb.TableEntry(table_id=te.table_id)
        delete.match.extend(te.match)
        c.write(update("DELETE", "table_entry", delete))
        assert c.read(pb.Entity(table_entry=pb.TableEntry(table_id=t.preamble.id))) == []
        assert sw.process_packet(1, frame) == []
        again = c.next("packet")
        assert again is not None and again.packet.payload == frame
    finally:
        c.close()
        srv.stop()
