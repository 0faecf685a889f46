"""Traffic generator and counter for the veth benchmark, run inside the host namespaces.

``python -m p4cache_bench.veth_traffic send IFACE`` and ``... recv IFACE PORT`` are long-lived: the
benchmark starts each once per program and drives them with one JSON command per line on stdin,
answering one JSON line on stdout per command. Keeping them alive avoids a Python start-up
(~100 ms, and CPU stolen from the switch) per measurement step.

Every frame carries ``step`` and ``seq`` (two big-endian u32) at the start of its UDP payload, so
the receiver counts only the frames of the current step, spots duplicates, and never mistakes a
late frame of an earlier step for a delivery. The UDP checksum of the template is zero
("none" for IPv4), so rewriting the payload keeps the frames valid.

memcached requests cannot carry that tag: their UDP payload starts with the memcached frame
header, whose sequence and count fields must be 0 and 1 for the switch to answer. With
``"tag": "memcache"`` the step goes in the IPv4 identification (16 bits; its header checksum is
recomputed) and ``seq`` in the memcached request id (16 bits, so at most 65,536 frames per step):
the switch copies both into its reply, and a forwarded miss keeps them as they are.

The sender is open loop: at rate R it sends frame i at ``t0 + i/R`` whatever the switch does,
sleeping (never spinning, which would steal the switch's core) when it is ahead. Rate 0 means
"as fast as possible" (saturation).
"""

from __future__ import annotations

import json
import socket
import struct
import sys
import time

SO_SNDBUFFORCE = 32
SO_RCVBUFFORCE = 33
ETH_P_IP = 0x0800
TAG = struct.Struct("!II")
TAG_OFFSET = 42  # Ethernet 14 + IPv4 20 (no options) + UDP 8
MAX_BURST = 64  # frames sent back to back before the clock is read again
IP_ID_OFFSET = 18  # Ethernet 14 + 4: the IPv4 identification
IP_CSUM_OFFSET = 24
MC_SEQ_LIMIT = 1 << 16
SOL_PACKET = 263
PACKET_IGNORE_OUTGOING = 23  # Linux >= 4.20: a packet socket skips the host's own frames


def tag_frames(templates: list[bytes], step: int, count: int) -> list[bytes]:
    """``count`` frames cycling over ``templates``, each tagged with (step, seq)."""
    out = []
    nt = len(templates)
    for seq in range(count):
        t = templates[seq % nt]
        out.append(t[:TAG_OFFSET] + TAG.pack(step, seq) + t[TAG_OFFSET + TAG.size:])
    return out


def _ipv4_checksum(header: bytes) -> int:
    total = sum(struct.unpack("!10H", header))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def tag_memcache_frames(templates: list[bytes], step: int, count: int) -> list[bytes]:
    """``count`` memcached request frames cycling over ``templates``: IPv4 identification = step
    (mod 2^16, header checksum recomputed), memcached request id = seq."""
    if count > MC_SEQ_LIMIT:
        raise ValueError(f"{count} frames per step: the memcached request id holds {MC_SEQ_LIMIT}")
    out = []
    nt = len(templates)
    ident = struct.pack("!H", step & 0xFFFF)
    for seq in range(count):
        t = templates[seq % nt]
        hdr = t[14:IP_ID_OFFSET] + ident + t[IP_ID_OFFSET + 2:IP_CSUM_OFFSET] + b"\0\0" + t[26:34]
        csum = _ipv4_checksum(hdr)
        out.append(t[:14] + hdr[:10] + struct.pack("!H", csum) + hdr[12:] + t[34:TAG_OFFSET]
                   + struct.pack("!H", seq) + t[TAG_OFFSET + 2:])
    return out


TAGGERS = {"payload": tag_frames, "memcache": tag_memcache_frames}


def send_paced(sock: socket.socket, frames: list[bytes], rate: float) -> dict:
    """Send ``frames`` open loop at ``rate`` frames/s (0: flat out); returns what happened."""
    send = sock.send
    n = len(frames)
    sent = errors = 0
    i = 0
    clock = time.monotonic
    t0 = clock()
    while i < n:
        if rate > 0:
            elapsed = clock() - t0
            due = min(n, int(elapsed * rate) + 1)
            if due <= i:
                time.sleep(max((i + 1) / rate - elapsed, 0.0001))
                continue
            end = min(due, i + MAX_BURST)
        else:
            end = min(n, i + MAX_BURST)
        while i < end:
            try:
                send(frames[i])
                sent += 1
            except OSError:  # ENOBUFS: the frame was not offered; counted apart from loss
                errors += 1
            i += 1
    t1 = clock()
    return {"sent": sent, "send_errors": errors, "t_first_send": t0, "send_duration_s": t1 - t0}


def receive_step(sock: socket.socket, port: int, step: int, count: int, first_wait: float,
                 idle: float, tag: str = "payload", expect_len: int | None = None,
                 expect_ttl: int | None = None) -> dict:
    """Count the frames of ``step``: until all ``count`` arrived or ``idle`` s of silence.

    ``tag`` says where (step, seq) are (see the module's doc). ``expect_len`` and ``expect_ttl``
    (frame length, IPv4 TTL) are checked on every counted frame: ``as_expected`` says whether all
    matched, ``ttl_decremented`` whether every TTL was 63 (a routed 64).
    """
    if tag == "memcache":
        return _receive_memcache(sock, port, step, count, first_wait, idle, expect_len,
                                 expect_ttl)
    seen = bytearray(count)
    unique = dups = foreign = 0
    first = last = 0.0
    ttl_ok = True
    expected = True
    sock.settimeout(first_wait)
    recv = sock.recv
    clock = time.monotonic
    while unique < count:
        try:
            data = recv(2048)
        except TimeoutError:
            break
        if len(data) < TAG_OFFSET + TAG.size or data[36:38] != port.to_bytes(2, "big"):
            continue
        s, seq = TAG.unpack_from(data, TAG_OFFSET)
        if s != step or seq >= count:
            foreign += 1
            continue
        now = clock()
        if seen[seq]:
            dups += 1
            continue
        seen[seq] = 1
        unique += 1
        ttl_ok = ttl_ok and data[22] == 63
        if expect_len is not None and len(data) != expect_len:
            expected = False
        if expect_ttl is not None and data[22] != expect_ttl:
            expected = False
        if not first:
            first = now
            sock.settimeout(idle)
        last = now
    return {"received": unique, "duplicates": dups, "stale": foreign, "t_first_rx": first,
            "t_last_rx": last, "ttl_decremented": ttl_ok, "as_expected": expected}


def _receive_memcache(sock: socket.socket, port: int, step: int, count: int, first_wait: float,
                      idle: float, expect_len: int | None, expect_ttl: int | None) -> dict:
    """:func:`receive_step` for frames tagged by :func:`tag_memcache_frames`."""
    seen = bytearray(count)
    unique = dups = foreign = 0
    first = last = 0.0
    ttl_ok = expected = True
    want_step = step & 0xFFFF
    port_bytes = port.to_bytes(2, "big")
    sock.settimeout(first_wait)
    recv = sock.recv
    clock = time.monotonic
    while unique < count:
        try:
            data = recv(2048)
        except TimeoutError:
            break
        if len(data) < TAG_OFFSET + 2 or data[36:38] != port_bytes:
            continue
        seq = data[TAG_OFFSET] << 8 | data[TAG_OFFSET + 1]
        if (data[IP_ID_OFFSET] << 8 | data[IP_ID_OFFSET + 1]) != want_step or seq >= count:
            foreign += 1
            continue
        now = clock()
        if seen[seq]:
            dups += 1
            continue
        seen[seq] = 1
        unique += 1
        ttl_ok = ttl_ok and data[22] == 63
        if expect_len is not None and len(data) != expect_len:
            expected = False
        if expect_ttl is not None and data[22] != expect_ttl:
            expected = False
        if not first:
            first = now
            sock.settimeout(idle)
        last = now
    return {"received": unique, "duplicates": dups, "stale": foreign, "t_first_rx": first,
            "t_last_rx": last, "ttl_decremented": ttl_ok, "as_expected": expected}


def _serve(handle) -> None:  # noqa: ANN001 - a callable dict -> dict
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        print(json.dumps(handle(json.loads(line))), flush=True)


def main(argv: list[str]) -> int:
    role, ifname = argv[0], argv[1]
    if role == "send":
        sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        sock.bind((ifname, 0))
        sock.setsockopt(socket.SOL_SOCKET, SO_SNDBUFFORCE, 4 * 1024 * 1024)
        templates: list[bytes] = []

        def handle(cmd: dict) -> dict:
            if "templates" in cmd:
                templates[:] = [bytes.fromhex(h) for h in cmd["templates"]]
                return {"ok": True}
            tagger = TAGGERS[cmd.get("tag", "payload")]
            frames = tagger(templates, cmd["step"], cmd["count"])
            return send_paced(sock, frames, float(cmd["rate"]))

        _serve(handle)
        return 0
    if role == "recv":
        port = int(argv[2])
        sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_IP))
        sock.bind((ifname, ETH_P_IP))
        sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 32 * 1024 * 1024)
        try:  # a receiver beside the sender (answers come back to the client) skips its frames
            sock.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
        except OSError:
            pass

        def handle(cmd: dict) -> dict:
            return receive_step(sock, port, cmd["step"], cmd["count"], cmd["first_wait"],
                                cmd["idle"], cmd.get("tag", "payload"), cmd.get("expect_len"),
                                cmd.get("expect_ttl"))

        _serve(handle)
        return 0
    print("usage: python -m p4cache_bench.veth_traffic send IFACE | recv IFACE PORT "
          f"(got {role!r})", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
