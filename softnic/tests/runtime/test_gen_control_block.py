"""The compiled control (gen_control_block) must do exactly what walking the node graph does."""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path
from typing import Any

import pytest
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Ether

from softnic.compiler.compile import compile_file
from softnic.runtime.gen_control_block import MAX_DEPTH, compile_graph
from softnic.runtime.packet import PacketCtx
from softnic.runtime.pipeline import ActionCallNode, CondNode, walker
from softnic.runtime.switch import Switch
from softnic.tests.runtime.engine_helpers import FIXTURES, fixture_json

CORPUS = Path(__file__).parent.parent / "corpus"


def _programs() -> list[tuple[str, dict]]:
    out = [(p.stem, fixture_json(p.stem)) for p in sorted(FIXTURES.glob("*.json"))]
    for p in sorted(CORPUS.glob("*.p4")):
        out.append((p.stem, compile_file(str(p))[0]))
    return out


def _packets(seed: int, count: int) -> list[bytes]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        kind = rng.randrange(4)
        payload = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 40)))
        if kind == 0:
            p = Ether() / IP(dst=f"10.0.{rng.randrange(4)}.{rng.randrange(4)}",
                             ttl=rng.randrange(256)) / UDP(dport=rng.choice([53, 11211])) / payload
        elif kind == 1:
            p = Ether() / IP(ttl=rng.randrange(3)) / TCP(dport=rng.randrange(1 << 16)) / payload
        elif kind == 2:
            p = Ether(type=rng.randrange(1 << 16)) / payload
        else:
            p = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 80)))
        out.append(bytes(p))
    return out


@pytest.mark.parametrize("name,prog", _programs(), ids=lambda x: x if isinstance(x, str) else "")
def test_compiled_controls_match_the_node_walk(name: str, prog: dict) -> None:
    fast, walk = Switch(cpu_port=64), Switch(cpu_port=64)
    fast.load_json(json.loads(json.dumps(prog)))
    walk.load_json(json.loads(json.dumps(prog)))
    assert walk._p is not None and fast._p is not None
    assert fast._p.ingress_fn.__name__ == "_control", "every program here must compile"
    walk._p.ingress_fn = walker(walk._p.ingress_init)
    walk._p.egress_fn = walker(walk._p.egress_init)
    for i, data in enumerate(_packets(len(name), 60)):
        port = i % 4
        assert fast.process_packet(port, data) == walk.process_packet(port, data), (name, i)
    for reg in fast._p.comp.registers:
        assert fast._p.comp.registers[reg].cells == walk._p.comp.registers[reg].cells


class _Rec:
    """An action function recording its name in F[0] (as a list of names)."""

    def __init__(self, tag: str) -> None:
        self.tag = tag

    def __call__(self, f: list[Any], data: Any, s: PacketCtx) -> None:
        f[0].append(self.tag)
        if self.tag == "x":
            s.exited = True


def _act(tag: str, nxt: Any) -> ActionCallNode:
    a = ActionCallNode()
    a.name, a.fn, a.next = tag, _Rec(tag), nxt
    return a


def _cond(bit: int, t: Any, f: Any) -> CondNode:
    c = CondNode()
    c.name = f"c{bit}"
    c.fn = lambda fl, b=bit: bool(fl[1] >> b & 1)
    c.true_next, c.false_next = t, f
    return c


def _walk(init: Any, f: list[Any]) -> None:
    s = PacketCtx()
    node = init
    while node is not None:
        node = node.apply(f, s)


def _same(init: Any, nbits: int) -> None:
    fn = compile_graph(init, "<test>")
    assert fn is not None
    for bits in range(1 << nbits):
        a: list[Any] = [[], bits]
        b: list[Any] = [[], bits]
        _walk(init, a)
        fn(b, PacketCtx())
        assert a[0] == b[0], bits


def test_overlapping_regions_run_as_the_walk_does() -> None:
    # d is reached from both branches of c0 and from inside c1's region (not a clean join).
    d = _act("d", None)
    e = _act("e", d)
    c1 = _cond(1, d, e)
    a = _act("a", c1)
    b = _act("b", d)
    c0 = _cond(0, a, b)
    _same(c0, 2)


def test_exit_stops_the_compiled_control() -> None:
    tail = _act("tail", None)
    x = _act("x", tail)
    c0 = _cond(0, x, tail)
    _same(c0, 1)
    fn = compile_graph(c0, "<test>")
    assert fn is not None
    f: list[Any] = [[], 1]
    fn(f, PacketCtx())
    assert f[0] == ["x"]


def test_sequences_of_ifs_compile_without_duplicating_nodes() -> None:
    node: Any = None
    for i in reversed(range(12)):  # if (b_i) { a_i } ; twelve times in a row
        act = _act(f"a{i}", node)
        node = _cond(i, act, node)
    fn = compile_graph(node, "<test>")
    assert fn is not None
    for bits in itertools.chain(range(64), [0xFFF, 0xAAA, 0x555]):
        a: list[Any] = [[], bits]
        b: list[Any] = [[], bits]
        _walk(node, a)
        fn(b, PacketCtx())
        assert a[0] == b[0] == [f"a{i}" for i in range(12) if bits >> i & 1]


def test_nesting_deeper_than_the_bound_keeps_the_node_walk() -> None:
    node: Any = _act("end", None)
    for i in range(MAX_DEPTH + 5):  # if (..) { if (..) { ... } } : each level nests deeper
        node = _cond(i % 8, node, None)
    assert compile_graph(node, "<test>") is None
