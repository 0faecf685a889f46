"""Raw Ethernet port I/O for ``softnic run``: the counterpart of BMv2's ``-i PORT@IFACE``.

Each switch port is one ``AF_PACKET``/``SOCK_RAW`` socket bound to its interface for all
protocols (``ETH_P_ALL``) and put in promiscuous mode, so the switch sees every frame the wire
carries, whatever its destination MAC, exactly like BMv2 on libpcap. One thread runs an epoll
loop over all the sockets: it reads frames in batches, hands each to a packet handler (normally
``Switch.process_packet``) and sends every ``(egress_port, frame)`` it returns out of the right
socket.

Details that matter on veth pairs:

* Frames we transmit are looped back to packet sockets as ``PACKET_OUTGOING``; they must not be
  processed again, or every packet would be forwarded twice. ``PACKET_IGNORE_OUTGOING`` (Linux
  4.20+) makes the kernel drop them before they reach us; on older kernels we read the packet type
  from the source address and skip them ourselves.
* With GSO/GRO a veth can hand us a frame much larger than its MTU. We read with a 64 KiB+ buffer,
  so we never truncate, and a frame that does not fit the egress interface's MTU is counted in
  ``tx_oversize`` and dropped, as the kernel would refuse it anyway (EMSGSIZE).
* One bad packet (an exception in the handler, a send error) is counted and logged at a limited
  rate; it never stops the loop.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import select
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from softnic.runtime.pcap import PcapWriter

log = logging.getLogger("softnic.ports")

ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_ADD_MEMBERSHIP = 1
PACKET_MR_PROMISC = 1
PACKET_OUTGOING = 4
PACKET_IGNORE_OUTGOING = 23
SIOCGIFMTU = 0x8921
SO_RCVBUFFORCE = 33
SO_SNDBUFFORCE = 32

ETH_HLEN = 14
VLAN_HLEN = 4
RECV_BUF_SIZE = 65536 + 1024  # larger than any GSO/GRO super-frame a veth hands us
BATCH = 64  # frames read from one socket before looking at the others (fairness)
SOCKET_BUFFER = 4 * 1024 * 1024

PacketHandler = Callable[[int, bytes], Iterable[tuple[int, bytes]]]


class PortError(Exception):
    """A port cannot be opened (unknown interface, no permission, ...)."""


@dataclass
class PortStats:
    rx: int = 0
    tx: int = 0
    rx_bytes: int = 0
    tx_bytes: int = 0
    tx_errors: int = 0
    tx_oversize: int = 0
    handler_errors: int = 0


@dataclass
class Port:
    number: int
    ifname: str
    sock: socket.socket
    mtu: int
    filter_outgoing: bool  # True when the kernel could not drop our own transmissions for us
    stats: PortStats = field(default_factory=PortStats)
    pcap_in: PcapWriter | None = None
    pcap_out: PcapWriter | None = None

    @property
    def max_frame(self) -> int:
        # MTU counts the L3 payload; allow the Ethernet header and one 802.1Q tag on top.
        return self.mtu + ETH_HLEN + VLAN_HLEN


def parse_port_spec(spec: str) -> tuple[int, str]:
    """Parse BMv2's ``PORT@IFACE`` (``1@veth1``) into ``(1, "veth1")``."""
    num, sep, ifname = spec.partition("@")
    if not sep or not num or not ifname:
        raise ValueError(f"bad interface spec {spec!r}: expected PORT@IFACE, e.g. 1@veth1")
    try:
        port = int(num, 0)
    except ValueError:
        raise ValueError(f"bad interface spec {spec!r}: port {num!r} is not a number") from None
    if not 0 <= port < 512:
        raise ValueError(f"bad interface spec {spec!r}: port must be in 0..511")
    if len(ifname) >= 16:
        raise ValueError(f"bad interface spec {spec!r}: interface name too long")
    return port, ifname


def _interface_mtu(sock: socket.socket, ifname: str) -> int:
    req = struct.pack("16si12x", ifname.encode(), 0)
    res = fcntl.ioctl(sock.fileno(), SIOCGIFMTU, req)
    return struct.unpack_from("16si", res)[1]


def _grow_buffer(sock: socket.socket, force_opt: int, opt: int, size: int) -> None:
    try:
        sock.setsockopt(socket.SOL_SOCKET, force_opt, size)  # root: beyond net.core.*mem_max
    except OSError:
        sock.setsockopt(socket.SOL_SOCKET, opt, size)


def open_port(number: int, ifname: str) -> Port:
    """Open, bind and configure the raw socket of one port. Raises :class:`PortError`."""
    try:
        ifindex = socket.if_nametoindex(ifname)
    except OSError:
        raise PortError(f"interface {ifname!r} (port {number}) does not exist") from None
    try:
        sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    except PermissionError:
        raise PortError("raw sockets need root or CAP_NET_RAW") from None
    try:
        sock.bind((ifname, ETH_P_ALL))
        mreq = struct.pack("iHH8s", ifindex, PACKET_MR_PROMISC, 0, b"")
        sock.setsockopt(SOL_PACKET, PACKET_ADD_MEMBERSHIP, mreq)
        try:
            sock.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
            filter_outgoing = False
        except OSError:
            filter_outgoing = True
        _grow_buffer(sock, SO_RCVBUFFORCE, socket.SO_RCVBUF, SOCKET_BUFFER)
        _grow_buffer(sock, SO_SNDBUFFORCE, socket.SO_SNDBUF, SOCKET_BUFFER)
        mtu = _interface_mtu(sock, ifname)
    except OSError as exc:
        sock.close()
        raise PortError(f"cannot open interface {ifname!r} (port {number}): {exc}") from exc
    return Port(number, ifname, sock, mtu, filter_outgoing)


class PortSet:
    """All the ports of one switch plus the thread that moves packets between them and the handler.

    ``transmit`` may be called from any thread (the P4Runtime server uses it for packet-out).
    """

    def __init__(self, specs: dict[int, str], pcap_dir: str | Path | None = None) -> None:
        if len(set(specs.values())) != len(specs):
            raise PortError("the same interface is given for two ports")
        self._specs = dict(specs)
        self._pcap_dir = Path(pcap_dir) if pcap_dir is not None else None
        self.ports: dict[int, Port] = {}
        self._by_fd: dict[int, Port] = {}
        self._thread: threading.Thread | None = None
        self._wake_r, self._wake_w = -1, -1
        self._pcap_lock = threading.Lock()
        self._stopping = False
        self._last_error_log = 0.0
        self.unknown_egress = 0

    # -- lifecycle
    def open(self) -> None:
        """Open every port; on any failure close those already opened and raise PortError."""
        try:
            for number, ifname in sorted(self._specs.items()):
                port = open_port(number, ifname)
                self.ports[number] = port
                self._by_fd[port.sock.fileno()] = port
                if self._pcap_dir is not None:
                    self._pcap_dir.mkdir(parents=True, exist_ok=True)
                    port.pcap_in = PcapWriter(self._pcap_dir / f"{ifname}_in.pcap")
                    port.pcap_out = PcapWriter(self._pcap_dir / f"{ifname}_out.pcap")
        except BaseException:
            self.close()
            raise

    def start(self, handler: PacketHandler) -> None:
        """Start the forwarding thread; ``handler(port, frame)`` returns the frames to send."""
        if not self.ports and not self._specs:
            log.info("no ports: the data plane thread has nothing to read")
        if not self.ports and self._specs:
            self.open()
        self._wake_r, self._wake_w = os.pipe()
        self._stopping = False
        self._thread = threading.Thread(
            target=self._loop, args=(handler,), name="softnic-ports", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread (if running) and close sockets and pcap files. Idempotent."""
        self._stopping = True
        if self._thread is not None:
            os.write(self._wake_w, b"x")
            self._thread.join(timeout=5)
            self._thread = None
        for fd in (self._wake_r, self._wake_w):
            if fd >= 0:
                os.close(fd)
        self._wake_r = self._wake_w = -1
        self.close()

    def close(self) -> None:
        for port in self.ports.values():
            port.sock.close()
            with self._pcap_lock:
                for w in (port.pcap_in, port.pcap_out):
                    if w is not None:
                        w.close()
        self.ports.clear()
        self._by_fd.clear()

    def __enter__(self) -> PortSet:
        if not self.ports:
            self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- data path
    def transmit(self, number: int, frame: bytes) -> bool:
        """Send one frame out of port ``number``; False (and counted) when it cannot be sent."""
        port = self.ports.get(number)
        if port is None:
            self.unknown_egress += 1
            return False
        return self._send(port, frame)

    def _send(self, port: Port, frame: bytes) -> bool:
        st = port.stats
        if len(frame) > port.max_frame:
            st.tx_oversize += 1
            self._rate_limited_error(
                "port %d: %d-byte frame exceeds MTU %d, dropped", port.number, len(frame), port.mtu)
            return False
        try:
            port.sock.send(frame)
        except OSError as exc:
            st.tx_errors += 1
            if exc.errno == errno.EMSGSIZE:
                st.tx_oversize += 1
            self._rate_limited_error("port %d: send failed: %s", port.number, exc)
            return False
        st.tx += 1
        st.tx_bytes += len(frame)
        if port.pcap_out is not None:
            with self._pcap_lock:
                port.pcap_out.write(frame)
        return True

    def _rate_limited_error(self, msg: str, *args: object) -> None:
        now = time.monotonic()
        if now - self._last_error_log >= 1.0:
            self._last_error_log = now
            log.warning(msg, *args)

    def _loop(self, handler: PacketHandler) -> None:
        ep = select.epoll()
        try:
            ep.register(self._wake_r, select.EPOLLIN)
            for fd in self._by_fd:
                ep.register(fd, select.EPOLLIN)
            self._run(ep, handler)
        finally:
            ep.close()

    def _run(self, ep: select.epoll, handler: PacketHandler) -> None:
        """The hot loop. Everything it touches per packet is a local variable.

        Per frame the cost is one ``recv`` and one ``send`` system call (each ~2 us here) plus the
        handler; the Python around them is kept to a few bytecodes: ``recv`` hands back a
        ``bytes`` object directly (cheaper than ``recv_into`` plus a copy), a socket is drained
        until EAGAIN (at most ``BATCH`` frames, for fairness) per readiness event, and the
        per-port state is looked up once per batch, not once per frame.
        """
        by_fd = self._by_fd
        ports = self.ports
        wake = self._wake_r
        send = self._send
        dontwait = socket.MSG_DONTWAIT
        size = RECV_BUF_SIZE
        poll = ep.poll
        batch = range(BATCH)
        while not self._stopping:
            try:
                events = poll()
            except InterruptedError:
                continue
            for fd, _ev in events:
                if fd == wake:
                    return
                port = by_fd.get(fd)
                if port is None:
                    continue
                st = port.stats
                pcap_in = port.pcap_in
                number = port.number
                filter_outgoing = port.filter_outgoing
                recv = port.sock.recvfrom if filter_outgoing else port.sock.recv
                for _ in batch:
                    try:
                        if filter_outgoing:
                            frame, addr = recv(size, dontwait)
                            if addr[2] == PACKET_OUTGOING:
                                continue
                        else:
                            frame = recv(size, dontwait)
                    except BlockingIOError:
                        break
                    except OSError as exc:  # e.g. ENETDOWN when the interface went away
                        self._rate_limited_error("port %d: receive failed: %s", number, exc)
                        break
                    st.rx += 1
                    st.rx_bytes += len(frame)
                    if pcap_in is not None:
                        with self._pcap_lock:
                            pcap_in.write(frame)
                    try:
                        out = handler(number, frame)
                    except Exception as exc:  # one bad packet must never stop the switch
                        st.handler_errors += 1
                        self._rate_limited_error(
                            "port %d: error processing a %d-byte packet: %r",
                            number, len(frame), exc)
                        continue
                    for egress, data in out:
                        eport = ports.get(egress)
                        if eport is None:
                            self.unknown_egress += 1
                            continue
                        send(eport, data)

    def stats(self) -> dict[int, PortStats]:
        return {n: p.stats for n, p in self.ports.items()}
