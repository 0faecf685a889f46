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
* Frames are read from a ``PACKET_RX_RING`` (:class:`RxRing`) without a system call per frame;
  when the ring cannot be set up the port falls back to ``recv`` (logged once per port).
* With GSO/GRO a veth can hand us a frame much larger than its MTU. Ring slots are sized for the
  MTU, but a larger frame is still read whole (see :class:`RxRing`; the ``recv`` fallback uses a
  64 KiB+ buffer), and a frame that does not fit the egress interface's MTU is counted in
  ``tx_oversize`` and dropped, as the kernel would refuse it anyway (EMSGSIZE).
* One bad packet (an exception in the handler, a send error) is counted and logged at a limited
  rate; it never stops the loop.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import mmap
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
PACKET_RX_RING = 5
PACKET_COPY_THRESH = 7
PACKET_VERSION = 10
TPACKET_V2 = 1
TP_STATUS_KERNEL = 0
TP_STATUS_USER = 1
TP_STATUS_COPY = 2
# struct tpacket2_hdr is 32 bytes; the sockaddr_ll that follows it carries sll_pkttype at +10
TP_PKTTYPE_OFFSET = 32 + 10
TP_MAC_MIN = 80  # TPACKET_ALIGN(tpacket2_hdr + sockaddr_ll + 16): where a SOCK_RAW frame starts
RING_BYTES = 16 * 1024 * 1024  # 8192 slots at MTU 1500: at least the frames SOCKET_BUFFER held

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
    rx_truncated: int = 0  # frames larger than a ring slot whose full copy was lost


@dataclass
class Port:
    number: int
    ifname: str
    sock: socket.socket
    mtu: int
    filter_outgoing: bool  # True when the kernel could not drop our own transmissions for us
    stats: PortStats = field(default_factory=PortStats)
    ring: RxRing | None = None  # None: the recv() fallback
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


class RxRing:
    """A ``PACKET_RX_RING`` (TPACKET_V2) shared with the kernel through ``mmap``.

    Why: with ``recv`` every frame costs a system call (~2 us, as much as a third of the
    per-packet budget). With the ring the kernel copies frames into slots of a shared buffer
    and flips each slot's ``tp_status`` to ``TP_STATUS_USER``; we read the slot, hand it back
    by writing ``TP_STATUS_KERNEL`` and only make a system call (epoll) when the ring is empty.

    Slots are sized for the interface MTU, not for 64 KiB GRO super-frames (that would leave
    a handful of slots). A larger frame is still delivered whole: ``PACKET_COPY_THRESH`` makes
    the kernel queue a full copy on the socket's ordinary receive queue and mark the slot
    ``TP_STATUS_COPY``; the reader takes that copy with ``recv``. Only when the kernel could
    not queue the copy (receive buffer full) is the frame lost, counted in ``rx_truncated``.
    """

    def __init__(self, sock: socket.socket, max_frame: int) -> None:
        frame_size = 2048
        while frame_size < TP_MAC_MIN + max_frame:
            frame_size *= 2
        block_size = max(frame_size, 16 * mmap.PAGESIZE)  # both powers of two: no slack
        block_nr = max(2, RING_BYTES // block_size)
        self.frame_size = frame_size
        self.frame_nr = block_nr * (block_size // frame_size)
        sock.setsockopt(SOL_PACKET, PACKET_VERSION, TPACKET_V2)
        sock.setsockopt(SOL_PACKET, PACKET_COPY_THRESH, 1)
        req = struct.pack("IIII", block_size, block_nr, frame_size, self.frame_nr)
        sock.setsockopt(SOL_PACKET, PACKET_RX_RING, req)
        try:
            self.mm = mmap.mmap(sock.fileno(), block_size * block_nr, mmap.MAP_SHARED,
                                mmap.PROT_READ | mmap.PROT_WRITE)
        except OSError:
            # an unmapped ring would swallow every frame: take it down so recv() works
            sock.setsockopt(SOL_PACKET, PACKET_RX_RING, bytes(16))
            raise
        # u32 view: with w = i * frame_size // 4, slot i's tp_status, tp_len and tp_snaplen
        # are words w, w+1, w+2 and tp_mac the low half of w+3
        self.words = memoryview(self.mm).cast("I")
        self.index = 0  # next slot to look at

    def close(self) -> None:
        self.words.release()
        self.mm.close()


def open_port(number: int, ifname: str) -> Port:
    """Open, bind and configure the raw socket of one port. Raises :class:`PortError`."""
    try:
        ifindex = socket.if_nametoindex(ifname)
    except OSError:
        raise PortError(f"interface {ifname!r} (port {number}) does not exist") from None
    try:
        # protocol 0: the socket receives nothing until bind() below, so no frame from another
        # interface can be queued before it is bound, and the ring is set up on an empty socket
        sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    except PermissionError:
        raise PortError("raw sockets need root or CAP_NET_RAW") from None
    ring: RxRing | None = None
    try:
        _grow_buffer(sock, SO_RCVBUFFORCE, socket.SO_RCVBUF, SOCKET_BUFFER)
        _grow_buffer(sock, SO_SNDBUFFORCE, socket.SO_SNDBUF, SOCKET_BUFFER)
        mtu = _interface_mtu(sock, ifname)
        try:
            ring = RxRing(sock, mtu + ETH_HLEN + VLAN_HLEN)
        except (OSError, ValueError) as exc:
            log.warning("port %d (%s): no PACKET_RX_RING (%s); reading with recv()",
                        number, ifname, exc)
        sock.bind((ifname, ETH_P_ALL))
        mreq = struct.pack("iHH8s", ifindex, PACKET_MR_PROMISC, 0, b"")
        sock.setsockopt(SOL_PACKET, PACKET_ADD_MEMBERSHIP, mreq)
        try:
            sock.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
            filter_outgoing = False
        except OSError:
            filter_outgoing = True
    except OSError as exc:
        if ring is not None:
            ring.close()
        sock.close()
        raise PortError(f"cannot open interface {ifname!r} (port {number}): {exc}") from exc
    return Port(number, ifname, sock, mtu, filter_outgoing, ring=ring)


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
            if port.ring is not None:
                port.ring.close()
                port.ring = None
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

        Per readiness event a port hands over a batch of up to ``BATCH`` frames (for fairness
        between ports), read from its RX ring without system calls, or with one ``recv`` each
        on the fallback path. Per frame what remains is the handler and one ``send``; the
        per-port state is looked up once per batch, not once per frame.
        """
        by_fd = self._by_fd
        ports = self.ports
        wake = self._wake_r
        send = self._send
        poll = ep.poll
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
                ring = port.ring
                if ring is not None:
                    frames = self._ring_frames(port, ring, filter_outgoing)
                else:
                    frames = self._recv_frames(port, filter_outgoing)
                for frame in frames:
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

    def _ring_frames(self, port: Port, ring: RxRing, filter_outgoing: bool) -> list[bytes]:
        """Take up to ``BATCH`` frames out of the RX ring, handing each slot straight back."""
        frames: list[bytes] = []
        mm = ring.mm
        words = ring.words
        fsize = ring.frame_size
        nslots = ring.frame_nr
        i = ring.index
        for _ in range(BATCH):
            off = i * fsize
            w = off >> 2
            status = words[w]
            if not status & TP_STATUS_USER:
                break
            snap = words[w + 2]
            if status & TP_STATUS_COPY:  # the full frame waits on the socket's receive queue
                try:
                    frame: bytes | None = port.sock.recv(RECV_BUF_SIZE, socket.MSG_DONTWAIT)
                except OSError:
                    frame = None
            elif snap < words[w + 1]:  # cut to the slot and no full copy: lost
                frame = None
            else:
                mac = off + (words[w + 3] & 0xFFFF)
                frame = mm[mac:mac + snap]
            outgoing = filter_outgoing and mm[off + TP_PKTTYPE_OFFSET] == PACKET_OUTGOING
            words[w] = TP_STATUS_KERNEL
            i = i + 1 if i + 1 < nslots else 0
            if outgoing:
                continue
            if frame is None:
                port.stats.rx_truncated += 1
                self._rate_limited_error("port %d: %d-byte frame truncated to %d by the RX ring, "
                                         "dropped", port.number, words[w + 1], snap)
                continue
            frames.append(frame)
        ring.index = i
        return frames

    def _recv_frames(self, port: Port, filter_outgoing: bool) -> list[bytes]:
        """Fallback without a ring: ``recv`` until EAGAIN, at most ``BATCH`` frames.

        ``recv`` hands back a ``bytes`` object directly (cheaper than ``recv_into`` plus a copy).
        """
        frames: list[bytes] = []
        sock = port.sock
        dontwait = socket.MSG_DONTWAIT
        for _ in range(BATCH):
            try:
                if filter_outgoing:
                    frame, addr = sock.recvfrom(RECV_BUF_SIZE, dontwait)
                    if addr[2] == PACKET_OUTGOING:
                        continue
                else:
                    frame = sock.recv(RECV_BUF_SIZE, dontwait)
            except BlockingIOError:
                break
            except OSError as exc:  # e.g. ENETDOWN when the interface went away
                self._rate_limited_error("port %d: receive failed: %s", port.number, exc)
                break
            frames.append(frame)
        return frames

    def stats(self) -> dict[int, PortStats]:
        return {n: p.stats for n, p in self.ports.items()}
