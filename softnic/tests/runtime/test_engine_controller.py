"""CPU port: packet-in with controller header metadata, packet-out with a prepended header."""

from __future__ import annotations

from scapy.layers.l2 import Ether

from softnic.runtime.api import PacketIn
from softnic.tests.runtime.engine_helpers import load_switch

FRAME = bytes(Ether(dst="00:00:00:00:00:01", src="00:00:00:00:00:02", type=0x1234)) + b"hi"


def test_packet_in_strips_controller_header():
    got: list[PacketIn] = []
    sw = load_switch("controller", cpu_port=255)
    sw.set_packet_in_handler(got.append)
    assert sw.process_packet(7, FRAME) == []
    assert got == [PacketIn(FRAME, {"ingress_port": 7, "_pad": 0})]


def test_packet_out_prepends_header_and_forwards():
    sw = load_switch("controller", cpu_port=255)
    assert sw.packet_out(FRAME, {"egress_port": 3}) == [(3, FRAME)]


def test_explicit_controller_header_names():
    got: list[PacketIn] = []
    sw = load_switch("controller", cpu_port=255)
    sw.set_controller_headers(None, "packet_out_header_t")
    sw.set_packet_in_handler(got.append)
    sw.process_packet(7, FRAME)
    # without a packet_in header type the whole frame (with the header) is the payload
    assert got[0].metadata == {} and got[0].payload.endswith(FRAME)
    assert got[0].payload[:2] == bytes([7 >> 1, (7 & 1) << 7])


def test_without_cpu_port_packets_to_255_are_ordinary_output():
    sw = load_switch("controller")
    [(port, data)] = sw.process_packet(7, FRAME)
    assert port == 255 and data[2:] == FRAME
