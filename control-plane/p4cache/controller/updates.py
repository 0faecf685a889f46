"""Control datagrams (docs/update-protocol.md) from the controller: packet-outs in, acks out.

Each datagram travels as a packet-out holding a whole Ethernet / IPv4 / UDP frame whose IPv4
source is the server the datagram is about (the switch reads the server from the source
address). The switch turns it around in place and sends it back as a packet-in: addresses and
ports swapped, op | 0x80, a status.

Requests are told apart by their UDP source port, which the ack carries back as its destination
port: every outstanding request has its own port, and a retransmission reuses it (and its bytes),
so an ack to any copy answers the request. The op and slot are checked as well.

Retransmissions: an ack that does not come within ``ack_timeout`` is waited for again after
sending the same frame once more, with the wait doubled each time, ``attempts`` times in all.
A repeated OP_UPDATE can come back ``stale`` when the first copy was applied and its ack lost:
the callers (promote.py) settle that with an OP_READ.
"""

from __future__ import annotations

import ipaddress
import itertools
import logging
import struct
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from p4cache import dataplane as dp

log = logging.getLogger("p4cache.controller.updates")

ETH = struct.Struct("!6s6sH")
IPV4 = struct.Struct("!BBHHHBBH4s4s")
UDP = struct.Struct("!HHHH")
ETH_IPV4 = 0x0800
PROTO_UDP = 17
FIRST_PORT, LAST_PORT = 20000, 60999


class AckTimeout(Exception):
    """No acknowledgement after every retransmission."""


@dataclass(frozen=True)
class Endpoint:
    """The server a control datagram is about: its IPv4 address (the frame's source) and
    MAC."""

    ip: str
    mac: str = "02:00:00:00:00:01"


def _mac(text: str) -> bytes:
    return bytes(int(x, 16) for x in text.split(":"))


def _checksum(header: bytes) -> int:
    total = sum(struct.unpack(f"!{len(header) // 2}H", header))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def control_frame(server: Endpoint, dst_ip: str, dst_mac: str, sport: int, payload: bytes,
                  ip_id: int = 0) -> bytes:
    """An Ethernet / IPv4 / UDP frame to CACHE_CTRL_PORT from ``server`` (UDP checksum 0:
    none, as RFC 768 allows on IPv4)."""
    udp_len = UDP.size + len(payload)
    src = ipaddress.IPv4Address(server.ip).packed
    dst = ipaddress.IPv4Address(dst_ip).packed
    hdr = IPV4.pack(0x45, 0, IPV4.size + udp_len, ip_id & 0xFFFF, 0, 64, PROTO_UDP, 0, src, dst)
    hdr = hdr[:10] + struct.pack("!H", _checksum(hdr)) + hdr[12:]
    return (ETH.pack(_mac(dst_mac), _mac(server.mac), ETH_IPV4) + hdr
            + UDP.pack(sport, dp.CACHE_CTRL_PORT, udp_len, 0) + payload)


@dataclass(frozen=True)
class AckFrame:
    server_ip: str   # the ack's destination: the server the request was about
    port: int        # the ack's UDP destination port: the request id
    ctrl: dp.Ctrl


def parse_ack_frame(frame: bytes) -> AckFrame | None:
    """Read a packet-in; None if it is not a control-datagram acknowledgement."""
    if len(frame) < ETH.size + IPV4.size + UDP.size:
        return None
    _, _, ethertype = ETH.unpack_from(frame)
    if ethertype != ETH_IPV4:
        return None
    ver_ihl, _, _, _, _, _, proto, _, _, dst = IPV4.unpack_from(frame, ETH.size)
    ihl = (ver_ihl & 0x0F) * 4
    if ver_ihl >> 4 != 4 or proto != PROTO_UDP or ihl < IPV4.size:
        return None
    off = ETH.size + ihl
    if len(frame) < off + UDP.size:
        return None
    sport, dport, _, _ = UDP.unpack_from(frame, off)
    if sport != dp.CACHE_CTRL_PORT:
        return None
    try:
        ctrl = dp.parse_ctrl(frame[off + UDP.size:])
    except ValueError:
        return None
    if not ctrl.is_ack:
        return None
    return AckFrame(str(ipaddress.IPv4Address(dst)), dport, ctrl)


@dataclass
class _Pending:
    server: Endpoint
    port: int
    op: int
    slot: int
    frame: bytes
    done: threading.Event = field(default_factory=threading.Event)
    ack: dp.Ctrl | None = None
    sent_at: float = 0.0


@dataclass
class UpdateStats:
    requests: int = 0
    retransmissions: int = 0
    timeouts: int = 0
    stray_acks: int = 0
    by_status: dict[str, int] = field(default_factory=dict)


class Updates:
    """Send control datagrams as packet-outs and wait for their acks (thread-safe)."""

    def __init__(self, send: Callable[[bytes], None], ctrl_ip: str, ctrl_mac: str,
                 ack_timeout: float = 0.05, attempts: int = 6) -> None:
        self._send = send
        self.ctrl_ip = ctrl_ip
        self.ctrl_mac = ctrl_mac
        self.ack_timeout = ack_timeout
        self.attempts = attempts
        self._lock = threading.Lock()
        self._pending: dict[int, _Pending] = {}
        self._ports = itertools.cycle(range(FIRST_PORT, LAST_PORT + 1))
        self._ip_ids = itertools.count(1)
        self.stats = UpdateStats()
        self.ack_latency: list[float] = []  # seconds, appended per first-transmission ack

    # -- receive side (called by the packet-in thread)
    def on_packet_in(self, frame: bytes) -> bool:
        """Match an acknowledgement to its request; False if it answers nothing pending."""
        ack = parse_ack_frame(frame)
        if ack is None:
            return False
        with self._lock:
            p = self._pending.get(ack.port)
            if (p is None or p.ack is not None or ack.server_ip != p.server.ip
                    or ack.ctrl.op != (p.op | dp.ACK_FLAG)
                    or (p.op in (dp.OP_UPDATE, dp.OP_READ) and ack.ctrl.slot != p.slot)):
                self.stats.stray_acks += 1
                return False
            p.ack = ack.ctrl
            name = ack.ctrl.status_name
            self.stats.by_status[name] = self.stats.by_status.get(name, 0) + 1
        p.done.set()
        return True

    # -- send side
    def request(self, server: Endpoint, datagram: bytes) -> dp.Ctrl:
        """Send one control datagram and return its acknowledgement (raises AckTimeout)."""
        return self.request_many([(server, datagram)])[0]

    def request_many(self, items: Sequence[tuple[Endpoint, bytes]], window: int = 64
                     ) -> list[dp.Ctrl]:
        """Send several datagrams, ``window`` at a time (so the switch's packet-out path is not
        swamped into retransmissions), retransmit the unanswered ones, and return their acks in
        order. Raises AckTimeout if any stays unanswered."""
        out: list[dp.Ctrl] = []
        for i in range(0, len(items), window):
            out += self._request_window(items[i:i + window])
        return out

    def _request_window(self, items: Sequence[tuple[Endpoint, bytes]]) -> list[dp.Ctrl]:
        pend = [self._register(server, datagram) for server, datagram in items]
        try:
            wait = self.ack_timeout
            for attempt in range(self.attempts):
                todo = [p for p in pend if not p.done.is_set()]
                if not todo:
                    break
                for p in todo:
                    if attempt:
                        self.stats.retransmissions += 1
                    else:
                        p.sent_at = time.monotonic()
                    self._send(p.frame)
                # Acks of a window come back one by one (the switch takes its packet-outs in
                # turn), so the wait restarts while they keep coming: only a window whose acks
                # stopped for ``wait`` is sent again, not the tail of a long window that is
                # simply still being answered.
                deadline = time.monotonic() + wait
                answered = 0
                for p in todo:
                    while not p.done.wait(max(0.0, deadline - time.monotonic())):
                        now_answered = sum(q.done.is_set() for q in todo)
                        if now_answered == answered:
                            break
                        answered = now_answered
                        deadline = time.monotonic() + wait
                    if not p.done.is_set():
                        break
                wait *= 2
            missing = [p for p in pend if not p.done.is_set()]
            if missing:
                self.stats.timeouts += len(missing)
                what = ", ".join(f"op {p.op} slot {p.slot} for {p.server.ip}"
                                 for p in missing[:5])
                raise AckTimeout(f"no acknowledgement after {self.attempts} transmissions: "
                                 f"{what}{' ...' if len(missing) > 5 else ''}")
            now = time.monotonic()
            self.ack_latency.extend(now - p.sent_at for p in pend[:1])
            del self.ack_latency[:-1000]
            return [p.ack for p in pend]  # type: ignore[misc]
        finally:
            with self._lock:
                for p in pend:
                    self._pending.pop(p.port, None)

    def _register(self, server: Endpoint, datagram: bytes) -> _Pending:
        ctrl = dp.parse_ctrl(datagram)
        with self._lock:
            if len(self._pending) >= LAST_PORT - FIRST_PORT:
                raise RuntimeError("every request port is in use")
            port = next(self._ports)
            while port in self._pending:
                port = next(self._ports)
            frame = control_frame(server, self.ctrl_ip, self.ctrl_mac, port, datagram,
                                  next(self._ip_ids))
            p = _Pending(server, port, ctrl.op, ctrl.slot, frame)
            self._pending[port] = p
            self.stats.requests += 1
        return p

    # -- the datagrams the controller sends
    def update(self, server: Endpoint, slot: int, version: int, reply: bytes) -> dp.Ctrl:
        """OP_UPDATE: ``reply`` into ``slot`` at ``version`` (empty: invalidate)."""
        return self.request(server, dp.update_datagram(slot, version, reply))

    def read(self, server: Endpoint, slot: int) -> dp.Ctrl:
        """OP_READ: the slot's version, length and state (STATUS_VALID / STATUS_INVALID)."""
        return self.request(server, dp.read_datagram(slot))

    def read_many(self, server: Endpoint, slots: Sequence[int]) -> dict[int, dp.Ctrl]:
        acks = self.request_many([(server, dp.read_datagram(s)) for s in slots])
        return dict(zip(slots, acks, strict=True))
