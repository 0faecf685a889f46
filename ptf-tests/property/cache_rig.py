"""The cache pipeline in the in-process engine, side by side with the reference model.

``Rig.send`` / ``Rig.send_out`` run one frame through both and check the three invariants:

* no engine error (softnic counts every exception a packet raised, and drops the packet);
* the frames that leave (ports and packet-ins) are exactly the model's: nothing the model
  forwards is answered, answers carry exactly the stored reply, forwarded frames are the input
  byte for byte;
* every cell of every slot register (valid, written, version, len, generation and the reply
  store) and the cache generation equal the model's copy afterwards: a cell changes only by the
  model's writes, untouched slots never; and so do the counters of cache_stats (hits, misses,
  invalidations, updates, stale, untrusted, not allowed, flushes; not the hot-key reports).

A failure raises ``Mismatch`` naming the invariant, the frame (hex) and the model's reasoning.

``Rig(engine="xdp")`` runs the same checks on the xdp engine (the P4 program as an XDP program
in the kernel, BPF_PROG_TEST_RUN per frame). ``twin=True`` adds softnic's Python engine beside
it, loaded from the same JSON with the same entries and driven by the same clock: every frame's
outputs, packet-ins and digests must be identical on both, and every register cell and counter
of the program (hot-key sketches and Bloom filters included, which the model does not cover)
must be equal every ``TWIN_FULL_EVERY`` frames and at ``twin_check()``.
"""

from __future__ import annotations

import json
import os
import struct
from dataclasses import dataclass, field
from pathlib import Path

import cache_oracle as co
import cache_wire as w
from cache_oracle import Oracle, Verdict

from p4cache import dataplane as dp
from p4cache import program
from softnic.runtime.api import ActionCall, MatchKey, TableEntry
from softnic.runtime.switch import Switch

# -- the installed state (same for every module; tests pick from it)
CLIENT_PORT, SERVER_PORT, AGENT_PORT, SERVER2_PORT = 1, 2, 3, 4
DATA_PORTS = (CLIENT_PORT, SERVER_PORT, AGENT_PORT, SERVER2_PORT)
SERVER_IP = w.ip4("10.0.0.2")
SERVER2_IP = w.ip4("10.0.0.3")
CLIENTS = (w.ip4("10.0.1.1"), w.ip4("10.0.1.200"), w.ip4("10.0.2.7"))
STRANGERS = (w.ip4("10.0.9.9"), w.ip4("192.168.1.1"), w.ip4("10.0.2.8"))
AGENT_IP = w.ip4("10.0.3.1")  # a trusted host that is no memcached server (the controller's)
L2 = {w.CLIENT_MAC: CLIENT_PORT, w.SERVER_MAC: SERVER_PORT, w.AGENT_MAC: AGENT_PORT,
      w.SERVER2_MAC: SERVER2_PORT}
ALLOW = [(w.ip4("10.0.1.0"), 24), (w.ip4("10.0.2.7"), 32)]
# The agent next to each memcached server speaks for it: control datagrams come from the
# server's address, on the server's port. trusted_agents holds (ingress port, address): the same
# address on another port is spoofed.
AGENTS = {(SERVER_PORT, SERVER_IP), (SERVER2_PORT, SERVER2_IP), (AGENT_PORT, AGENT_IP)}
AGENT_PORTS = {ip: port for port, ip in AGENTS}
# Keys of server 1, chosen for their edges: 1 and 64 bytes, the lowest and highest printable
# bytes, bytes >= 0x80, a key that is a prefix of another; slots at both ends of the range.
CACHED = {
    b"k": 0,
    b"hello": 5,
    b"user:1000": 17,
    b"abc": 100,
    b"abcd": 101,
    b"!": 202,
    b"~~": 303,
    b"\x80\xfe\xff": 404,
    b"x" * 63: 2048,
    b"K" * 64: 4095,
    b"session/7f3a9c": 3000,
}
# Server 2 holds some of the same keys in other slots: a value is served only for its server.
CACHED2 = {b"hello": 6, b"k": 1, b"only-on-2": 7}
LOOKUP = {**{(SERVER_IP, k): s for k, s in CACHED.items()},
          **{(SERVER2_IP, k): s for k, s in CACHED2.items()}}
UNCACHED = (b"nope", b"abcde", b"ab", b"hello2", b"Hello", b"K" * 63, b"\x81", b"only-on-2")


def reply_for(key: bytes, size: int) -> bytes:
    """A reply of exactly ``size`` bytes (1..512): memcached's VALUE reply for ``key`` when one
    of that size exists, else plain bytes (the switch stores whatever the controller sends)."""
    for n in range(size, -1, -1):
        r = dp.render_value_reply(key, 0, bytes(0x61 + i % 26 for i in range(n)))
        if len(r) == size:
            return r
    return bytes(0x41 + i % 26 for i in range(size))


class Mismatch(AssertionError):
    pass


def engine_cells(sw, name: str) -> list[int]:
    if isinstance(sw, Switch):
        return list(sw._extern("registers", name).cells)
    return sw.register_cells(name)


def engine_counts(sw, name: str) -> list[int]:
    if isinstance(sw, Switch):
        return list(sw._extern("counters", name).packets)
    return [sw.counter_read(name, i)[0] for i in range(sw.counter_size(name))]


def engine_errors(sw) -> tuple[int, int]:
    """(packets the engine ended with an error, failed asserts)."""
    if isinstance(sw, Switch):
        return sw.stats.engine_errors, sw.stats.assert_failures
    return sw.stats()["STAT_ENGINE_ERROR"], 0


@dataclass
class Tally:
    kinds: dict[str, int] = field(default_factory=dict)
    reasons: dict[str, int] = field(default_factory=dict)  # the reason, flush left out
    flushes: dict[str, int] = field(default_factory=dict)  # why the cache was flushed
    deviated: int = 0  # frames on which a known deviation changes the model's verdict

    def add(self, v: Verdict) -> None:
        self.kinds[v.kind] = self.kinds.get(v.kind, 0) + 1
        reason = v.reason.partition("; flush: ")[0]
        self.reasons[reason] = self.reasons.get(reason, 0) + 1
        if v.flush is not None:
            self.flushes[v.flush] = self.flushes.get(v.flush, 0) + 1


def pipeline_json() -> Path:
    """The BMv2 JSON under test: ``P4CACHE_P4_JSON`` if set (e.g. a deliberately broken copy),
    else ``p4cache.program.build()`` of p4src/."""
    env = os.environ.get("P4CACHE_P4_JSON")
    return Path(env) if env else program.build().json_path


ENGINES = ("softnic", "xdp")
TWIN_FULL_EVERY = 250  # frames between two whole-state comparisons of the twin engines
TICK_US = 1009  # the twins' clock per frame: an epoch (2**20 us) every ~1000 frames


def make_engine(kind: str):
    if kind == "xdp":
        from softnic.runtime.xdp.engine import XdpSwitch
        return XdpSwitch(cpu_port=co.CPU_PORT)
    return Switch(cpu_port=co.CPU_PORT)


def install(sw) -> None:
    """The pipeline and the installed state every module tests against."""
    sw.load_json(json.loads(pipeline_json().read_text()))
    for mac, port in L2.items():
        sw.table_add(dp.TABLE_L2, TableEntry(
            [MatchKey(int.from_bytes(mac, "big"))],
            ActionCall("CacheIngress.forwarding.bridge", [port])))
    for net, plen in ALLOW:
        sw.table_add(dp.TABLE_ALLOWLIST, TableEntry(
            [MatchKey(net, prefix_len=plen)], ActionCall("CacheIngress.lookup.allow_client")))
    for port, ip in AGENTS:
        sw.table_add(dp.TABLE_AGENTS, TableEntry(
            [MatchKey(port), MatchKey(ip)],
            ActionCall("CacheIngress.control_trust.trust_agent")))
    for (server, key), slot in LOOKUP.items():
        sw.table_add(dp.TABLE_LOOKUP, TableEntry(
            [MatchKey(server), MatchKey(len(key)), MatchKey(int.from_bytes(key, "big"))],
            ActionCall("CacheIngress.lookup.set_slot", [slot])))


class Rig:
    def __init__(self, deviations: frozenset[str] = co.KNOWN_DEVIATIONS,
                 engine: str = "softnic", twin: bool = False) -> None:
        self.engine = engine
        self.sw = make_engine(engine)
        install(self.sw)
        self.pins: list = []
        self.digests: list = []
        self.sw.set_packet_in_handler(self.pins.append)
        self.sw.set_digest_handler(self.digests.append)
        self.twin = None
        self.twin_pins: list = []
        self.twin_digests: list = []
        self.clock = 0
        self.differences = 0
        if twin:
            self.twin = make_engine("softnic")
            install(self.twin)
            self.twin.set_packet_in_handler(self.twin_pins.append)
            self.twin.set_digest_handler(self.twin_digests.append)
            # one clock for both, advanced per frame: hot-key epochs line up
            self.twin._now_us = lambda: self.clock
            if engine == "xdp":
                self.sw.now_us = lambda: self.clock
            else:
                self.sw._now_us = lambda: self.clock
        self.model = Oracle(l2=L2, allow=ALLOW, agents=AGENTS, keys=LOOKUP,
                            deviations=deviations)
        # The strict model, on the same registers and counters: an engine that already behaves
        # as the rules say where a deviation is accepted passes too.
        self.strict = None
        if deviations:
            self.strict = Oracle(l2=L2, allow=ALLOW, agents=AGENTS, keys=LOOKUP,
                                 deviations=frozenset())
            self.strict.regs = self.model.regs
            self.strict.stats = self.model.stats
        self.tally = Tally()
        self.sent = 0
        assert self.register_problem() is None, self.register_problem()
        sizes = (1, 2, 8, 9, 33, 100, 255, 256, 257, 400, 511, 512)
        for i, ((_, key), slot) in enumerate(LOOKUP.items()):
            self.fill(slot, reply_for(key, sizes[i % len(sizes)]))

    # -- engine access (through the engine API, so every engine is checked the same way)
    def cells(self, name: str) -> list[int]:
        return engine_cells(self.sw, co.PREFIX + name)

    def counts(self) -> list[int]:
        return engine_counts(self.sw, co.STATS_COUNTER)

    def generation(self) -> int:
        return self.cells(co.GENERATION)[0]

    def answers(self, slot: int) -> bool:
        """The engine's slot answers GETs (valid, of the current generation)."""
        return bool(self.cells("slot_valid")[slot]) and \
            self.cells("slot_generation")[slot] == self.generation()

    def errors(self) -> tuple[int, int]:
        return engine_errors(self.sw)

    def error_text(self) -> str:
        if isinstance(self.sw, Switch):
            return self.sw.stats.last_error
        return f"xdp engine statistics: {self.sw.stats()}"

    # -- one frame through both
    def send(self, port: int, frame: bytes) -> Verdict:
        v = self.model.predict(port, frame)
        vs = self.strict.predict(port, frame) if self.strict else v
        before = self.errors()
        self.tick()
        self.digests.clear()
        out = self.sw.process_packet(port, frame)
        if self.twin is None:
            return self._check(v, vs, frame, port, before, out, [])
        self.twin_digests.clear()
        tout = self.twin.process_packet(port, frame)
        verdict = self._check(v, vs, frame, port, before, out, [])
        self.twin_compare(frame, port, out, [], tout, [])
        return verdict

    def send_out(self, frame: bytes, egress: int) -> Verdict:
        v = self.model.predict_packet_out(frame, egress)
        vs = self.strict.predict_packet_out(frame, egress) if self.strict else v
        before = self.errors()
        self.tick()
        self.pins.clear()
        self.digests.clear()
        out = self.sw.packet_out(frame, {"egress_port": egress})
        pins = [(p.metadata.get("ingress_port"), p.payload) for p in self.pins]
        if self.twin is None:
            return self._check(v, vs, frame, "packet-out", before, out, pins)
        self.twin_pins.clear()
        self.twin_digests.clear()
        tout = self.twin.packet_out(frame, {"egress_port": egress})
        tpins = [(p.metadata.get("ingress_port"), p.payload) for p in self.twin_pins]
        verdict = self._check(v, vs, frame, "packet-out", before, out, pins)
        self.twin_compare(frame, "packet-out", out, pins, tout, tpins)
        return verdict

    # -- the twin engines
    def tick(self) -> None:
        self.clock += TICK_US

    def twin_compare(self, frame: bytes, port, out, pins, tout, tpins) -> None:
        """The engine under test and the Python engine must do the same with ``frame``."""
        problems = []
        if out != tout:
            problems.append("OUTPUT FRAMES DIFFER BETWEEN ENGINES")
        if pins != tpins:
            problems.append("PACKET-INS DIFFER BETWEEN ENGINES")
        if self.digests != self.twin_digests:
            problems.append(f"DIGESTS DIFFER BETWEEN ENGINES: {self.engine} {self.digests}, "
                            f"softnic {self.twin_digests}")
        if not problems and self.sent % TWIN_FULL_EVERY == 0:
            state = self.twin_state_problem()
            if state:
                problems.append(state)
        if problems:
            self.differences += 1
            lines = problems + [f"  frame #{self.sent} in on {port}: {frame.hex()}"]
            lines += [f"  {self.engine} out {p}: {b.hex()}" for p, b in out]
            lines += [f"  softnic out {p}: {b.hex()}" for p, b in tout]
            lines += [f"  {self.engine} packet-in: {b.hex()}" for _, b in pins]
            lines += [f"  softnic packet-in: {b.hex()}" for _, b in tpins]
            raise Mismatch("\n".join(lines))

    def twin_state_problem(self) -> str | None:
        """Every register cell and counter of the program, on both engines."""
        assert self.twin is not None
        j = json.loads(pipeline_json().read_text())
        for r in j["register_arrays"]:
            a, b = engine_cells(self.sw, r["name"]), engine_cells(self.twin, r["name"])
            if a != b:
                diffs = [(i, x, y) for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y][:6]
                return (f"REGISTER {r['name']} DIFFERS BETWEEN ENGINES: " + ", ".join(
                    f"[{i}] {self.engine} {x:#x}, softnic {y:#x}" for i, x, y in diffs))
        for c in j["counter_arrays"]:
            if c.get("is_direct"):
                continue
            a = [self.sw.counter_read(c["name"], i) for i in range(c["size"])]
            b = [self.twin.counter_read(c["name"], i) for i in range(c["size"])]
            if a != b:
                diffs = [(i, x, y) for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y][:6]
                return (f"COUNTER {c['name']} DIFFERS BETWEEN ENGINES: " + ", ".join(
                    f"[{i}] {self.engine} {x}, softnic {y}" for i, x, y in diffs))
        return None

    @staticmethod
    def _same(a: Verdict, b: Verdict) -> bool:
        return (a.kind, a.outputs, a.packet_ins, a.writes, a.counts) == \
            (b.kind, b.outputs, b.packet_ins, b.writes, b.counts)

    def _commit(self, v: Verdict) -> list[tuple[str, int, int]]:
        undo = [(n, i, self.model.regs[n][i]) for n, i, _ in v.writes]
        self.model.commit(v)
        return undo

    def _undo(self, v: Verdict, undo: list[tuple[str, int, int]]) -> None:
        for n, i, value in reversed(undo):
            self.model.regs[n][i] = value
        for c in v.counts:
            self.model.stats[c] -= 1

    def _check(self, v: Verdict, vs: Verdict, frame: bytes, port, before, out,
               pins) -> Verdict:
        """Check the engine against the model's verdict ``v``; where a known deviation makes
        the strict model's ``vs`` differ, an engine that follows ``vs`` in everything (frames,
        registers, counters) passes too."""
        self.sent += 1
        engine_error = None
        if self.errors() != before:
            engine_error = "ENGINE ERROR: " + self.error_text()
        if vs is not v and not self._same(v, vs):
            self.tally.deviated += 1
            undo = self._commit(vs)
            if (engine_error is None and self.frames_match(vs, out, pins)
                    and self.register_problem() is None):
                self.tally.add(vs)
                return vs  # the engine follows the rule the deviation is about: fine too
            self._undo(vs, undo)
        self.tally.add(v)
        problem = engine_error
        if problem is None and not self.frames_match(v, out, pins):
            problem = self.output_problem(v, frame, port, out, pins)
        slot_before = None if v.slot is None else self.model.slot_state(v.slot)
        self.model.commit(v)
        state = self.register_problem()
        if problem or state:
            if state:  # start the next frame from the engine's state, so one fault is one failure
                self.resync()
            text = "\n".join(p for p in (problem, state) if p)
            raise Mismatch(self.describe(text, v, frame, port, out, pins, slot_before))
        return v

    @staticmethod
    def frames_match(v: Verdict, out, pins) -> bool:
        return out == v.outputs and pins == [(co.CPU_PORT, p) for p in v.packet_ins]

    def resync(self) -> None:
        """Take the engine's slot registers and counters as the model's (after a frame sent
        around it)."""
        for name in co.REGISTERS:
            self.model.regs[name][:] = self.cells(name)
        self.model.stats[:] = self.counts()

    @staticmethod
    def output_problem(v: Verdict, frame: bytes, port, out, pins) -> str:
        answered = [o for o in out if o[0] == port and o[1] != frame]
        if v.kind == "answered":
            return "WRONG ANSWER" if answered else "CLEAN GET FOR A VALID SLOT NOT ANSWERED"
        if v.kind == "acked":
            return "WRONG OR MISSING ACKNOWLEDGEMENT"
        if answered:
            return "MALFORMED OR UNEXPECTED DATAGRAM ANSWERED"
        if v.kind in ("forwarded", "sent"):
            if not out:
                return "FRAME DROPPED THAT MUST BE FORWARDED"
            if any(o[1] != frame for o in out):
                return "FORWARDED FRAME ALTERED"
        if v.kind == "dropped" and (out or pins):
            return "FRAME SENT THAT MUST BE DROPPED"
        return "OUTPUT DIFFERS FROM THE MODEL"

    def register_problem(self) -> str | None:
        """None if every register cell and modelled counter equals the model's, else what
        differs."""
        for name in co.REGISTERS:
            got = self.cells(name)
            want = self.model.regs[name]
            if got != want:
                diffs = [(i, got[i], want[i]) for i in range(len(want)) if got[i] != want[i]]
                detail = ", ".join(f"{name}[{i}] is {g:#x}, model {m:#x}" for i, g, m in diffs[:6])
                if name == co.GENERATION:
                    return f"CACHE GENERATION CHANGED NOT AS THE MODEL SAYS: {detail}"
                slots = sorted({i // co.REG_CELLS[name] for i, _, _ in diffs})
                return f"SLOT STATE CHANGED NOT AS THE MODEL SAYS (slots {slots[:8]}): {detail}"
        got = self.counts()
        want = self.model.stats
        diffs = [(i, got[i], want[i]) for i in co.MODELLED_STATS if got[i] != want[i]]
        if diffs:
            detail = ", ".join(f"cache_stats[{i}] is {g}, model {m}" for i, g, m in diffs)
            return f"COUNTERS CHANGED NOT AS THE MODEL SAYS: {detail}"
        return None

    def describe(self, problem: str, v: Verdict | None, frame: bytes, port, out, pins,
                 slot_before: dict | None = None) -> str:
        lines = [problem, f"  frame #{self.sent} in on {port}: {frame.hex()}"]
        if v is not None:
            lines.append(f"  model: {v.kind} ({v.reason}), slot {v.slot}, status {v.status}, "
                         f"flush {v.flush is not None}")
            lines += [f"  model out {p}: {b.hex()}" for p, b in v.outputs]
            lines += [f"  model packet-in: {b.hex()}" for b in v.packet_ins]
            if slot_before is not None:
                lines.append(f"  slot {v.slot} before the frame: {slot_before}")
        if out is not None:
            lines += [f"  engine out {p}: {b.hex()}" for p, b in out] or ["  engine: no output"]
        if pins:
            lines += [f"  engine packet-in {p}: {b.hex()}" for p, b in pins]
        return "\n".join(lines)

    # -- helpers for tests
    def ctrl_frame(self, payload: bytes, *, src: int = SERVER_IP, sport: int = 7000) -> bytes:
        """A control datagram from the agent of ``src`` (to the switch's neighbour, the client's
        MAC: what matters is the source, and the port it comes in by: AGENT_PORTS[src] for the
        agent itself, any other port for a spoofer; or a packet-out)."""
        return w.udp_frame(payload, src=src, dst=CLIENTS[0], sport=sport, dport=co.CTRL_PORT,
                           eth_dst=w.CLIENT_MAC, eth_src=w.SERVER_MAC)

    def next_version(self, slot: int) -> int:
        v = self.model.regs["slot_version"][slot]
        if v >= 0xFFFFFFF0:  # a fuzzed update took the last versions: the controller resets
            for name in ("slot_version",):
                for sw in (self.sw, self.twin):
                    if sw is not None:
                        sw.register_write(co.PREFIX + name, slot, 0)
                self.model.regs[name][slot] = 0
            v = 0
        return v + 1

    def fill(self, slot: int, reply: bytes) -> None:
        """Make ``slot`` valid with ``reply``, as the controller would: invalidate (clears
        `written`), then update with a newer version. Both go through the checked path."""
        v = self.next_version(slot)
        a = self.send_out(self.ctrl_frame(struct.pack("!BBHIH", co.OP_UPDATE, 0, slot, v, 0)),
                          CLIENT_PORT)
        b = self.send_out(self.ctrl_frame(dp.update_datagram(slot, v + 1, reply)), CLIENT_PORT)
        assert a.status == co.STATUS_APPLIED and b.status == co.STATUS_APPLIED, (a, b)

    def get_frame(self, key: bytes, *, rid: int = 7, src: int = CLIENTS[0],
                  server: int = SERVER_IP, sport: int = 40000) -> bytes:
        return w.udp_frame(dp.get_request(rid, key), src=src, dst=server, sport=sport,
                           dport=co.MEMCACHED_PORT,
                           eth_dst=w.SERVER_MAC if server == SERVER_IP else w.SERVER2_MAC)
