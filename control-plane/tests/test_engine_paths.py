"""The cache program runs the same through softnic's compiled controls and its node walk.

gen_control_block turns the program's controls into one function each; the traced path still
walks the node graph. Both must give the same packets, digests and register contents.
"""

from __future__ import annotations

import json
import random

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from p4cache import dataplane as d
from p4cache.program import build
from softnic.runtime.api import ActionCall, MatchKey, TableEntry
from softnic.runtime.pipeline import walker
from softnic.runtime.switch import Switch

CLIENT, SERVER = "10.0.0.1", "10.0.0.2"
CMAC, SMAC = 0x1, 0x2


def _switch(walk: bool, traced: bool = False) -> Switch:
    sw = Switch(cpu_port=d.CPU_PORT, trace=(lambda line: None) if traced else None)
    sw.load_json(json.loads(build().json_path.read_text()))
    if walk:
        assert sw._p is not None
        sw._p.ingress_fn = walker(sw._p.ingress_init)
        sw._p.egress_fn = walker(sw._p.egress_init)
    sw.table_add(d.TABLE_L2, TableEntry([MatchKey(CMAC)], ActionCall(
        "CacheIngress.forwarding.bridge", [1])))
    sw.table_add(d.TABLE_L2, TableEntry([MatchKey(SMAC)], ActionCall(
        "CacheIngress.forwarding.bridge", [2])))
    sw.table_add(d.TABLE_ALLOWLIST, TableEntry([MatchKey(0x0A000000, prefix_len=8)], ActionCall(
        "CacheIngress.lookup.allow_client", [])))
    for slot, key in enumerate([b"k", b"key-16-bytes-xyz", b"x" * d.KMAX]):
        sw.table_add(d.TABLE_LOOKUP, TableEntry(
            [MatchKey(v) for v in d.lookup_key(SERVER, key)],
            ActionCall("CacheIngress.lookup.set_slot", [slot])))
    return sw


def _frame(payload: bytes, dport: int = d.MEMCACHED_PORT, src: str = CLIENT) -> bytes:
    return bytes(Ether(src="00:00:00:00:00:01", dst="00:00:00:00:00:02")
                 / IP(src=src, dst=SERVER) / UDP(sport=40000, dport=dport) / payload)


def _traffic(seed: int) -> list[tuple[str, bytes]]:
    rng = random.Random(seed)
    keys = [b"k", b"key-16-bytes-xyz", b"x" * d.KMAX, b"miss"]
    out: list[tuple[str, bytes]] = []
    version = 1
    for slot, key in enumerate(keys[:3]):
        reply = d.render_value_reply(key, slot, bytes(rng.randrange(256) for _ in range(40)))
        out.append(("pout", _frame(d.update_datagram(slot, 1, reply), d.CACHE_CTRL_PORT, SERVER)))
    for i in range(300):
        key = rng.choice(keys)
        r = rng.random()
        if r < 0.6:
            out.append(("pkt", _frame(d.get_request(i, key))))
        elif r < 0.7:
            out.append(("pkt", _frame(d.memcache_frame(i, b"set " + key + b" 0 0 1\r\nx\r\n"))))
        elif r < 0.8:  # a refill: invalidate with a newer version, then fill (or a stale one)
            slot = rng.randrange(3)
            version += 2
            reply = d.render_value_reply(keys[slot], 0, bytes(rng.randrange(256) for _ in range(9)))
            out.append(("pout", _frame(d.update_datagram(slot, version, b""), d.CACHE_CTRL_PORT,
                                       SERVER)))
            out.append(("pout", _frame(d.update_datagram(slot, version + rng.choice([1, -1]),
                                                         reply), d.CACHE_CTRL_PORT, SERVER)))
        elif r < 0.9:
            raw = bytearray(_frame(d.get_request(i, key)))
            raw[rng.randrange(len(raw))] ^= 1 << rng.randrange(8)
            out.append(("pkt", bytes(raw)))
        else:  # cut short anywhere: parser errors on every path of the byte loops
            raw = _frame(d.get_request(i, key) if r < 0.95 else d.memcache_frame(
                i, b"delete  " + key + b" noreply\r\n"))
            out.append(("pkt", raw[:rng.randrange(40, len(raw) + 1)]))
    return out


@pytest.mark.parametrize("other", ["walked", "traced"])
def test_fast_path_agrees_with_the_slow_paths_on_the_cache_program(
        other: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Against the node walk (same parser), and against the traced path (the parser without
    its fast-path transformations: inlined successors, loops, in-place extracts)."""
    # One frozen clock for both switches: the hot-key epochs come from it.
    fast = _switch(walk=False)
    walk = _switch(walk=True) if other == "walked" else _switch(walk=False, traced=True)
    fast._now_us = walk._now_us = lambda: 1_000_000  # type: ignore[method-assign]
    for sw in (fast, walk):
        sw.digests = []  # type: ignore[attr-defined]
        sw.set_digest_handler(sw.digests.append)  # type: ignore[attr-defined]
    hits = 0
    for kind, data in _traffic(7):
        if kind == "pout":
            a = fast.packet_out(data, {"egress_port": 0, "_pad": 0})
            b = walk.packet_out(data, {"egress_port": 0, "_pad": 0})
        else:
            a, b = fast.process_packet(1, data), walk.process_packet(1, data)
            hits += sum(1 for port, _ in a if port == 1)
        assert a == b
    assert hits > 5  # the traffic really exercised the hit path
    assert fast.digests == walk.digests  # type: ignore[attr-defined]
    assert fast._p is not None and walk._p is not None
    for name, reg in fast._p.comp.registers.items():
        assert reg.cells == walk._p.comp.registers[name].cells, name
