"""``Switch``: the v1model (simple_switch) execution engine behind ``softnic run``.

It implements :class:`softnic.runtime.api.SwitchAPI`. A packet goes parser -> verify checksum ->
ingress -> traffic manager -> egress -> compute checksum -> deparser, with the after-ingress and
after-egress decisions of BMv2's ``docs/simple_switch.md`` (clone, digest, resubmit, multicast,
drop on egress_spec 511, recirculate), all within one ``process_packet`` call.

Choices where BMv2 leaves room (documented here for the users of this class):

* Clones follow BMv2's ``simple_switch.cpp``. I2E: the bytes ingress received are parsed
  again with ingress_port set (so a parser that branches on it takes the same path), then all
  metadata is reset (ingress_port included, as BMv2's ``reset_metadata`` does) and the field
  list copied in; packet_length in egress is the received size. E2E: the header state the
  egress pipeline left (before checksum update and deparsing, before the drop check) is copied,
  metadata reset, the field list copied in; packet_length is the original's. The clone
  session's egress_port / egress_rid and instance_type are set in both cases.
* Egress starts with egress_spec = drop_port + 1 truncated to the field width (0 with the
  default drop port 511) as BMv2's egress thread writes it, so only an egress mark_to_drop
  drops, and with packet_length taken from BMv2's packet length register: the received size,
  plus / minus the header sizes of add_header / remove_header calls that changed validity
  (push / pop do not count, as in BMv2). Multicast replicas carry the ingress register;
  recirculated packets start from the deparsed size. The register is only kept when the
  program can make it differ from packet_length.
* Resubmitted and recirculated packets start ingress with all metadata reset, as BMv2's
  ``simple_switch.cpp`` does (``reset_metadata`` before the field list copy; its ingress thread
  never writes ingress_port again): ingress_port is 0 unless the preserved field list holds
  it. An I2E clone made on such a pass is still parsed with the port the packet arrived on
  (BMv2 takes that one from the packet object, not from the PHV).
* CPU port: ``Switch(cpu_port=N)``. A packet leaving on N becomes a :class:`PacketIn`: the first
  valid header (in deparser order) whose *header type* is the packet_in controller header is
  removed from the bytes and its fields become ``metadata`` (by field name). ``packet_out``
  serialises the packet_out controller header from ``metadata`` (missing fields are 0), prepends
  it and runs the packet through ingress with ``ingress_port = N``. The P4Runtime server passes
  the header type names it finds in P4Info with :meth:`Switch.set_controller_headers`; until it
  does, a header type whose name contains ``packet_in`` / ``packet_out`` is used.
* Thread safety: one lock serialises packets and every control-plane call, so a table update is
  atomic with respect to packets.
* A packet that makes the engine fail (``assert`` primitive, a bug) is dropped, counted in
  ``Switch.stats`` (``assert_failures`` / ``engine_errors``), reported to the trace callback and
  logged as a warning on logger ``softnic.switch`` at most once per second;
  ``process_packet`` never raises.
* Parser loops: BMv2's parser has no loop bound (``state start { transition start; }`` hangs
  its packet thread). softnic ends parsing with ``error.ParserTimeout`` once the states that lie
  on a cycle of the parse graph were visited more than (looping states) * length + 256 times for
  one packet (``codegen.PARSER_STEPS_*``); ingress then runs with parser_error set, as for any
  parser error. Loop-free parsers carry no counter. A control flow graph with a cycle (never
  emitted by p4c) is refused at load time, so every per-packet loop is bounded.
* Resubmit / recirculate loops are cut after 32 ingress passes and clone storms (an egress that
  clones its own clones) after 256 egress passes per received packet; BMv2 would loop forever.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from time import monotonic
from typing import Any

from softnic.runtime.api import (
    ActionCall,
    Digest,
    InvalidArgument,
    MatchKey,
    NotFound,
    PacketIn,
    PipelineLoadError,
    SwitchError,
    TableEntry,
)
from softnic.runtime.codegen import DROP_PORT, Compiled, compile_program
from softnic.runtime.exprgen import hexint
from softnic.runtime.externs import Meter
from softnic.runtime.loader import Program, load_program
from softnic.runtime.packet import AssertFailed, PacketCtx, ParserError
from softnic.runtime.pre import PacketReplicationEngine
from softnic.runtime.tables import Entry, Table
from softnic.runtime.trace import Tracer

MAX_PASSES = 32  # ingress passes (resubmit / recirculate) per received packet
MAX_COPIES = 256  # egress passes (clones, replicas) per received packet
ENGINE_ERROR_LOG_INTERVAL = 1.0  # seconds between two engine-error warnings in the log
log = logging.getLogger("softnic.switch")
NORMAL, INGRESS_CLONE, EGRESS_CLONE, RECIRC, REPLICATION, RESUBMIT = 0, 1, 2, 4, 5, 6


@dataclass
class SwitchStats:
    """Packets the engine could not process; tests assert these stay 0 on any input."""

    engine_errors: int = 0  # unexpected exceptions: softnic bugs
    assert_failures: int = 0  # assert / assume primitives that failed
    last_error: str = ""
    last_warning: float = float("-inf")


class TableNode:
    __slots__ = ("table", "default", "json_default", "default_const", "next_by_action",
                 "hit_miss", "base_next", "plen_slot", "name")

    def __init__(self, table: Table, plen_slot: int) -> None:
        self.table = table
        self.name = table.name
        self.plen_slot = plen_slot
        self.default: Entry | None = None
        self.json_default: Entry | None = None
        self.default_const = False

    def apply(self, f: list[int], s: PacketCtx) -> Any:
        t = self.table
        e = t.lookup(f)
        if e is None:
            e = self.default
            if e is None:
                return self.base_next if not self.hit_miss else self.hit_miss[1]
            e.fn(f, e.data, s)
            return None if s.exited else e.next
        if t.with_counters:
            c = e.counter
            c[0] += 1
            c[1] += f[self.plen_slot]
        if t.meter_target is not None:
            m = e.meter
            f[t.meter_target] = 0 if m is None else m.execute(
                f[self.plen_slot] if t.meter_bytes else 1, time.monotonic())
        e.fn(f, e.data, s)
        return None if s.exited else e.next


class CondNode:
    __slots__ = ("name", "fn", "true_next", "false_next")

    def apply(self, f: list[int], s: PacketCtx) -> Any:
        return self.true_next if self.fn(f) else self.false_next


class ActionCallNode:
    __slots__ = ("name", "fn", "next")

    def apply(self, f: list[int], s: PacketCtx) -> Any:
        self.fn(f, (), s)
        return None if s.exited else self.next


class Pipeline:
    """Everything built from one JSON: compiled code, tables, node graph, metadata slots."""

    def __init__(self, prog: Program, comp: Compiled) -> None:
        self.prog = prog
        self.comp = comp
        self.template = prog.layout.template
        self.sm = prog.layout.sm
        self.tables: dict[str, TableNode] = {}
        self.nodes: dict[str, Any] = {}
        self.inits: dict[str, Any] = {}
        sm = self.sm
        # standard_metadata slots as plain attributes: the per-packet path avoids dict lookups
        self.s_iport = sm["ingress_port"]
        self.s_espec = sm["egress_spec"]
        self.s_eport = sm["egress_port"]
        self.s_itype = sm["instance_type"]
        self.s_plen = sm["packet_length"]
        self.s_igts = sm["ingress_global_timestamp"]
        self.s_egts = sm["egress_global_timestamp"]
        self.s_mcast = sm["mcast_grp"]
        self.s_rid = sm["egress_rid"]
        self.s_perr = sm["parser_error"]
        self.sobe = prog.errors["StackOutOfBounds"]
        self.ingress_init: Any = None
        self.egress_init: Any = None
        # BMv2's packet length register: a hidden slot when the program can make it differ
        # from packet_length (add/remove_header, writes to packet_length); otherwise
        # packet_length itself, so the common case costs nothing extra per packet.
        self.track_len = comp.track_len
        self.len_slot = prog.layout.len_reg if comp.track_len else self.s_plen
        self.espec_init = 0
        self.meta_ranges = _metadata_ranges(prog.layout)
        self.error_names = {code: name for name, code in prog.errors.items()}

    def error_name(self, code: int) -> str:
        """The P4 name of an error code, from the JSON ``errors`` table (as BMv2 logs it)."""
        return self.error_names.get(code, f"error {code}")


def _metadata_ranges(lay: Any) -> list[tuple[int, int]]:
    """Slot ranges holding metadata (everything but packet headers and stack indices).

    BMv2's ``reset_metadata`` zeroes exactly these for clones; resetting them to the template
    does the same, keeping metadata headers valid.
    """
    meta = [True] * len(lay.template)
    for h in lay.headers.values():
        if not h.metadata:
            for i in range(h.base, h.base + h.span):
                meta[i] = False
    for st in lay.stacks.values():
        meta[st.next_slot] = False
    out: list[tuple[int, int]] = []
    start = None
    for i, m in enumerate(meta + [False]):
        if m and start is None:
            start = i
        elif not m and start is not None:
            out.append((start, i))
            start = None
    return out


def _successors(n: Any) -> list[Any]:
    if isinstance(n, CondNode):
        out = [n.true_next, n.false_next]
    elif isinstance(n, ActionCallNode):
        out = [n.next]
    else:
        out = [n.base_next, *(n.hit_miss or ()), *n.next_by_action.values()]
    return [x for x in out if x is not None]


def _check_acyclic(pl: Pipeline) -> None:
    """Refuse a control graph with a cycle: a packet would walk it forever under the lock.

    p4c never emits one (P4 controls have no loops), so this only catches hand-made JSON; with
    it, every ingress / egress pass visits each node at most once.
    """
    state: dict[int, int] = {}  # id(node) -> 1 on the DFS path, 2 done
    for root in pl.nodes.values():
        if id(root) in state:
            continue
        stack = [(root, iter(_successors(root)))]
        state[id(root)] = 1
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                state[id(node)] = 2
                stack.pop()
                continue
            mark = state.get(id(nxt))
            if mark == 1:
                raise PipelineLoadError(f"control flow loops back to node '{nxt.name}'")
            if mark is None:
                state[id(nxt)] = 1
                stack.append((nxt, iter(_successors(nxt))))


def _json_entry_key(t: Table, mk_list: Any, where: str) -> list[MatchKey | None]:
    if not isinstance(mk_list, list) or len(mk_list) != len(t.kinds):
        raise PipelineLoadError(f"{where}: match_key does not fit the table key")
    out: list[MatchKey | None] = []
    for kind, mk in zip(t.kinds, mk_list, strict=True):
        if not isinstance(mk, dict):
            raise PipelineLoadError(f"{where}: malformed match_key {mk!r}")
        if kind == "valid":
            out.append(MatchKey(value=1 if mk.get("key") else 0))
        elif kind == "exact":
            out.append(MatchKey(value=hexint(mk.get("key"), where)))
        elif kind == "lpm":
            out.append(MatchKey(value=hexint(mk.get("key"), where),
                                prefix_len=int(mk.get("prefix_length", 0))))
        elif kind in ("ternary", "optional"):
            out.append(MatchKey(value=hexint(mk.get("key"), where),
                                mask=hexint(mk.get("mask", "0x" + "f" * 64), where)))
        elif kind == "range":
            out.append(MatchKey(value=hexint(mk.get("start"), where),
                                high=hexint(mk.get("end"), where)))
    return out


class Switch:
    def __init__(self, cpu_port: int | None = None,
                 trace: Callable[[str], None] | None = None, drop_port: int = DROP_PORT,
                 device_id: int = 0) -> None:
        self.cpu_port = cpu_port
        self.drop_port = drop_port
        self.device_id = device_id
        self._trace = trace
        self._lock = threading.Lock()
        self._p: Pipeline | None = None
        self._pre = PacketReplicationEngine()
        self._packet_in_cb: Callable[[PacketIn], None] | None = None
        self._digest_cb: Callable[[Digest], None] | None = None
        self._ctrl_in: str | None = None
        self._ctrl_out: str | None = None
        self._ctrl_explicit = False
        self._t0 = time.monotonic()
        self._pkt_id = 0
        self.stats = SwitchStats()
        self._rx_port = 0

    # ------------------------------------------------------------------ pipeline loading
    def load_json(self, bmv2_json: dict) -> None:
        try:
            pl = self._build(bmv2_json)
        except PipelineLoadError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as e:
            raise PipelineLoadError(f"malformed BMv2 JSON: {type(e).__name__}: {e}") from e
        except Exception as e:  # a check the loader lacks: still a load failure, never a crash
            raise PipelineLoadError(
                f"BMv2 JSON not loadable (unexpected {type(e).__name__}: {e})") from e
        with self._lock:
            self._p = pl
            if not self._ctrl_explicit:
                self._ctrl_in = self._guess_ctrl("packet_in")
                self._ctrl_out = self._guess_ctrl("packet_out")

    def has_pipeline(self) -> bool:
        return self._p is not None

    def set_controller_headers(self, packet_in: str | None, packet_out: str | None) -> None:
        """Header TYPE names of the @controller_header("packet_in"/"packet_out") headers."""
        with self._lock:
            self._ctrl_in, self._ctrl_out = packet_in, packet_out
            self._ctrl_explicit = True

    def set_trace(self, trace: Callable[[str], None] | None) -> None:
        with self._lock:
            self._trace = trace

    def _guess_ctrl(self, word: str) -> str | None:
        assert self._p is not None
        for tname in self._p.prog.header_types:
            if word in tname.lower():
                return tname
        return None

    def _build(self, j: dict) -> Pipeline:
        prog = load_program(j)
        comp, _, _ = compile_program(prog)
        pl = Pipeline(prog, comp)
        # BMv2's egress thread writes drop_port + 1 into egress_spec (truncated to the field
        # width, i.e. 0 for the default 511), so only an egress mark_to_drop drops.
        pl.espec_init = (self.drop_port + 1) & ((1 << prog.layout.widths[pl.s_espec]) - 1)
        plen = prog.layout.sm["packet_length"]
        pending: list[tuple[Any, dict]] = []
        for pj in j["pipelines"]:
            pname = pj.get("name")
            if pname not in ("ingress", "egress"):
                raise PipelineLoadError(f"unknown pipeline {pname!r} (v1model has ingress/egress)")
            if pj.get("action_profiles"):
                raise PipelineLoadError("action profiles / selectors are not supported by softnic")
            for tj in pj.get("tables") or []:
                node = self._build_table(prog, comp, tj, plen)
                if node.name in pl.nodes:
                    raise PipelineLoadError(f"duplicate control node name '{node.name}'")
                pl.nodes[node.name] = node
                pl.tables[node.name] = node
                pending.append((node, tj))
            for cj in pj.get("conditionals") or []:
                c = CondNode()
                c.name = cj.get("name")
                c.fn = comp.conditions[c.name]
                pl.nodes[c.name] = c
                pending.append((c, cj))
            for aj in pj.get("action_calls") or []:
                a = ActionCallNode()
                a.name = aj.get("name")
                info = comp.actions.get(aj.get("action_id"))
                if info is None:
                    raise PipelineLoadError(f"action call '{a.name}': unknown action id")
                a.fn = info.fn
                pl.nodes[a.name] = a
                pending.append((a, aj))

        def node(name: Any, where: str) -> Any:
            if name is None:
                return None
            if name not in pl.nodes:
                raise PipelineLoadError(f"{where}: unknown next node {name!r}")
            return pl.nodes[name]

        for n, nj in pending:
            where = f"node '{n.name}'"
            if isinstance(n, CondNode):
                n.true_next = node(nj.get("true_next"), where)
                n.false_next = node(nj.get("false_next"), where)
            elif isinstance(n, ActionCallNode):
                n.next = node(nj.get("next_node"), where)
            else:
                self._link_table(prog, comp, n, nj, node)
        for pj in j["pipelines"]:
            pl.inits[pj["name"]] = node(pj.get("init_table"), f"pipeline '{pj['name']}'")
        for name in ("ingress", "egress"):
            pl.inits.setdefault(name, None)
        pl.ingress_init = pl.inits["ingress"]
        pl.egress_init = pl.inits["egress"]
        _check_acyclic(pl)
        return pl

    def _build_table(self, prog: Program, comp: Compiled, tj: dict, plen: int) -> TableNode:
        name = tj.get("name")
        where = f"table '{name}'"
        if tj.get("type", "simple") != "simple":
            raise PipelineLoadError(f"{where}: table type {tj.get('type')!r} is not supported")
        kinds = [k.get("match_type") for k in tj.get("key") or []]
        widths = []
        for k in tj.get("key") or []:
            if k.get("match_type") == "valid":
                widths.append(1)
            else:
                widths.append(prog.layout.widths[prog.layout.field_slot(k.get("target"))])
        names = tj.get("actions") or []
        ids = tj.get("action_ids") or []
        if len(names) != len(ids):
            raise PipelineLoadError(f"{where}: 'actions' and 'action_ids' differ in length")
        actions = {}
        for an, aid in zip(names, ids, strict=True):
            if aid not in comp.actions:
                raise PipelineLoadError(f"{where}: unknown action id {aid}")
            actions[an] = comp.actions[aid]
        tup, kint = comp.key_fns[name]
        t = Table(name, kinds, widths, tj.get("match_type", "exact"), tup, kint, actions,
                  int(tj.get("max_size", 0) or 0))
        t.with_counters = bool(tj.get("with_counters", False))
        dm = tj.get("direct_meters")
        if dm is not None:
            mj = prog.meters.get(dm)
            if mj is None:
                raise PipelineLoadError(f"{where}: unknown direct meter {dm!r}")
            t.meter_target = prog.layout.field_slot(mj.get("result_target"))
            t.meter_bytes = mj.get("type") == "bytes"
        return TableNode(t, plen)

    def _link_table(self, prog: Program, comp: Compiled, n: TableNode, tj: dict,
                    node: Callable[[Any, str], Any]) -> None:
        where = f"table '{n.name}'"
        nt = tj.get("next_tables") or {}
        n.base_next = node(tj.get("base_default_next"), where)
        n.hit_miss = None
        n.next_by_action = {}
        if "__HIT__" in nt or "__MISS__" in nt:
            n.hit_miss = (node(nt.get("__HIT__"), where) if "__HIT__" in nt else n.base_next,
                          node(nt.get("__MISS__"), where) if "__MISS__" in nt else n.base_next)
        else:
            for an, nx in nt.items():
                n.next_by_action[an] = node(nx, where)
        t = n.table
        de = tj.get("default_entry")
        if isinstance(de, dict):
            aid = de.get("action_id")
            info = comp.actions.get(aid)
            if info is None:
                raise PipelineLoadError(f"{where}: default action id {aid!r} unknown")
            data = [hexint(x, where) for x in de.get("action_data") or []]
            if len(data) != len(info.param_widths):
                raise PipelineLoadError(f"{where}: default action data does not fit '{info.name}'")
            e = Entry()
            e.aid, e.params, e.fn, e.data = aid, data, info.fn, tuple(data)
            e.next = self._next_for(n, info.name, hit=False)
            n.default = n.json_default = e
            n.default_const = bool(de.get("action_const", False)) or bool(
                de.get("action_entry_const", False) and "action_data" in de)
        entries = tj.get("entries")
        if entries:
            t.immutable = True
            prios = [int(e.get("priority", 0)) for e in entries if isinstance(e, dict)]
            top = max(prios, default=0) + 1
            for i, ej in enumerate(entries):
                ew = f"{where} entry {i}"
                if not isinstance(ej, dict) or not isinstance(ej.get("action_entry"), dict):
                    raise PipelineLoadError(f"{ew}: malformed entry")
                ae = ej["action_entry"]
                info = comp.actions.get(ae.get("action_id"))
                if info is None:
                    raise PipelineLoadError(f"{ew}: unknown action id {ae.get('action_id')!r}")
                call = ActionCall(info.name, [hexint(x, ew) for x in ae.get("action_data") or []])
                key = _json_entry_key(t, ej.get("match_key"), ew)
                prio = top - int(ej.get("priority", 0)) if t.mode == "ternary" else 0
                try:
                    e = t.make_entry(key, call, prio,
                                     lambda a, n=n: self._next_for(n, a, hit=True))
                    e.is_const = True
                    if prog.meters and t.meter_target is not None:
                        e.meter = Meter()
                    t.insert(e)
                except SwitchError as err:
                    raise PipelineLoadError(f"{ew}: {err}") from err

    @staticmethod
    def _next_for(n: TableNode, action: str, hit: bool) -> Any:
        if n.hit_miss is not None:
            return n.hit_miss[0 if hit else 1]
        return n.next_by_action.get(action, n.base_next)

    # ------------------------------------------------------------------ packets
    def set_packet_in_handler(self, cb: Callable[[PacketIn], None] | None) -> None:
        self._packet_in_cb = cb

    def set_digest_handler(self, cb: Callable[[Digest], None] | None) -> None:
        self._digest_cb = cb

    def process_packet(self, port: int, data: bytes) -> list[tuple[int, bytes]]:
        with self._lock:
            p = self._p
            if p is None:
                return []
            out: list[tuple[int, bytes]] = []
            pins: list[PacketIn] = []
            digests: list[Digest] = []
            tr = Tracer(self._trace, self._pkt_id) if self._trace is not None else None
            self._pkt_id += 1
            try:
                if tr:
                    tr(f"Processing packet received on port {port}")
                if type(data) is not bytes:
                    data = bytes(data)
                self._run(p, port, data, out, pins, digests, tr)
            except Exception as e:  # never let a packet take the port thread down
                self._engine_error(e, port, tr)
        # callbacks run outside the lock, so they may call back into the switch
        if digests and self._digest_cb is not None:
            for d in digests:
                self._digest_cb(d)
        if pins and self._packet_in_cb is not None:
            for pi in pins:
                self._packet_in_cb(pi)
        return out

    def _engine_error(self, e: Exception, port: int, tr: Tracer | None) -> None:
        """Count a packet the engine failed on and say so, at most once per second in the log.

        An ``assert`` primitive that fails is the program's doing (BMv2 aborts the whole
        process), so it is counted apart from real engine errors, which are softnic bugs.
        """
        st = self.stats
        if isinstance(e, AssertFailed):
            st.assert_failures += 1
        else:
            st.engine_errors += 1
        st.last_error = f"{type(e).__name__}: {e}"
        if tr:
            tr(f"Packet dropped: engine error {st.last_error}")
        now = monotonic()
        if now - st.last_warning >= ENGINE_ERROR_LOG_INTERVAL:
            st.last_warning = now
            log.warning("packet from port %d dropped: engine error %s (%d engine errors, "
                        "%d assert failures so far)", port, st.last_error,
                        st.engine_errors, st.assert_failures, exc_info=e)

    def packet_out(self, data: bytes, metadata: dict[str, int]) -> list[tuple[int, bytes]]:
        with self._lock:
            p = self._p
            if p is None:
                raise SwitchError("no pipeline loaded")
            if self.cpu_port is None:
                raise SwitchError("no CPU port configured")
            prefix = b""
            if self._ctrl_out is not None:
                hdr = next((h for h in p.prog.layout.headers.values()
                            if h.type_name == self._ctrl_out and not h.metadata), None)
                if hdr is not None:
                    v = 0
                    for fname, w, _ in hdr.fields:
                        v = (v << w) | (int(metadata.get(fname, 0)) & ((1 << w) - 1))
                    prefix = v.to_bytes(hdr.nbits // 8, "big")
        return self.process_packet(self.cpu_port, prefix + bytes(data))

    def _now_us(self) -> int:
        return int((time.monotonic() - self._t0) * 1e6)

    def _parse(self, p: Pipeline, data: bytes, f: list[int], s: PacketCtx,
               tr: Tracer | None) -> int:
        c = p.comp
        n = len(data)
        pos = 0
        if tr is None:
            st = c.parser_init
        else:
            c.traced_env["T"] = tr
            st = c.parser_init_traced
            tr("Parser 'parser': start")
        try:
            while st is not None:
                st, pos = st(data, n, pos, f, s)
        except ParserError as e:
            f[p.sm["parser_error"]] = e.code
            pos = e.pos
            if tr:
                tr(f"Exception while parsing: {p.error_name(e.code)} (at byte {pos})")
        except IndexError:
            f[p.sm["parser_error"]] = p.sobe
            if tr:
                tr("Exception while parsing: StackOutOfBounds")
        if tr:
            tr(f"Parser 'parser': end; bytes parsed: {pos}")
        if c.verify_checksums is not None:
            c.verify_checksums(f, data[pos:])
        return pos

    def _pipeline(self, p: Pipeline, name: str, f: list[int], s: PacketCtx,
                  tr: Tracer | None) -> None:
        node = p.inits[name]
        if tr is None:
            while node is not None:
                node = node.apply(f, s)
            return
        tr(f"Pipeline '{name}': start")
        logs: list[str] = []
        s.logs = logs
        while node is not None:
            if isinstance(node, TableNode):
                t = node.table
                tr(f"Applying table '{node.name}'")
                tr(f"Looking up key: {t.key_tup(f)}")
                e = t.lookup(f)
                if e is None:
                    d = node.default
                    tr(f"Table '{node.name}': miss")
                    if d is not None:
                        tr(f"Action entry is {self._aname(p, d.aid)} - {d.params}")
                        self._trace_prims(p, d.aid, tr)
                else:
                    tr(f"Table '{node.name}': hit")
                    tr(f"Action entry is {self._aname(p, e.aid)} - {e.params}")
                    self._trace_prims(p, e.aid, tr)
            elif isinstance(node, CondNode):
                tr(f"Condition '{node.name}' is {bool(node.fn(f))}")
            node = node.apply(f, s)
            for m in logs:
                tr(m)
            logs.clear()
        tr(f"Pipeline '{name}': end")

    @staticmethod
    def _aname(p: Pipeline, aid: int) -> str:
        return p.comp.actions[aid].name

    @staticmethod
    def _trace_prims(p: Pipeline, aid: int, tr: Tracer) -> None:
        for line in p.comp.actions[aid].primitives:
            tr(line)

    def _run(self, p: Pipeline, port: int, data: bytes, out: list, pins: list, digests: list,
             tr: Tracer | None) -> None:
        # a FIFO of further passes (clones, replicas, resubmits); a plain list read with an
        # index: cheaper to create than a deque, and most packets never add to it
        work: list = []
        now = int((monotonic() - self._t0) * 1e6)
        self._rx_port = port  # the arrival port, for every pass of this packet (see _egress)
        job = self._ingress(p, data, port, NORMAL, None, work, digests, tr, now)
        if job is not None:
            self._egress(p, job, work, out, pins, tr, now)
        if not work:
            return
        passes = 1
        copies = 1
        i = 0
        while i < len(work):
            job = work[i]
            i += 1
            if job[0]:  # egress job
                copies += 1
                if copies > MAX_COPIES:
                    if tr:
                        tr("Clone/replication limit reached, dropping the remaining copies")
                    return
                self._egress(p, job, work, out, pins, tr, now)
                continue
            passes += 1
            if passes > MAX_PASSES:
                if tr:
                    tr("Resubmit/recirculate limit reached, dropping")
                continue
            job = self._ingress(p, job[1], job[2], job[3], job[4], work, digests, tr, now)
            if job is not None:
                work.append(job)

    def _ingress(self, p: Pipeline, data: bytes, port: int, itype: int, preserved: list | None,
                 work: list, digests: list, tr: Tracer | None, now: int) -> tuple | None:
        """Run parser + ingress; return the unicast egress job, queue any other copies."""
        f = p.template.copy()
        s = PacketCtx()
        n = len(data)
        f[p.s_iport] = port
        f[p.s_plen] = n
        if p.track_len:
            f[p.len_slot] = n
        f[p.s_itype] = itype
        f[p.s_igts] = now
        if itype:  # resubmit / recirculate: BMv2 reset all metadata, ingress_port included
            f[p.s_iport] = 0
            for slot, v in preserved:  # type: ignore[union-attr]
                f[slot] = v
        if tr is None:
            c = p.comp
            pos = 0
            st = c.parser_init
            try:
                while st is not None:
                    st, pos = st(data, n, pos, f, s)
            except ParserError as e:
                f[p.s_perr] = e.code
                pos = e.pos
            except IndexError:
                f[p.s_perr] = p.sobe
            payload = data[pos:] if pos else data
            if c.verify_checksums is not None:
                c.verify_checksums(f, payload)
            node = p.ingress_init
            while node is not None:
                node = node.apply(f, s)
        else:
            pos = self._parse(p, data, f, s, tr)
            payload = data[pos:]
            self._pipeline(p, "ingress", f, s, tr)
        if s.clone is not None:
            self._clone_i2e(p, s.clone, data, port, f, work, tr)
        if s.digests:
            for lid in s.digests:
                lname, flds = p.prog.learn_lists[lid]
                digests.append(Digest(lname, self._digest_fields(flds, f)))
        if s.resubmit is not None:
            if tr:
                tr("Resubmitting packet")
            work.append((0, data, port, RESUBMIT, self._preserve(p, s.resubmit, f)))
            return None
        mgrp = f[p.s_mcast]
        if mgrp:
            reps = self._pre.groups.get(mgrp, [])
            if tr:
                tr(f"Multicasting packet to group {mgrp} ({len(reps)} replicas)")
            for eport, rid in reps:
                f2 = f.copy()
                f2[p.s_itype] = REPLICATION
                work.append((1, f2, payload, eport, rid, s.truncate))
            return None
        espec = f[p.s_espec]
        if espec == self.drop_port:
            if tr:
                tr("Dropping packet at the end of ingress")
            return None
        if tr:
            tr(f"Egress port is {espec}")
        return (1, f, payload, espec, 0, s.truncate)

    def _egress(self, p: Pipeline, job: tuple, work: list, out: list, pins: list,
                tr: Tracer | None, now: int) -> None:
        _, f, payload, eport, rid, trunc = job
        f[p.s_eport] = eport
        f[p.s_rid] = rid
        f[p.s_egts] = now
        f[p.s_espec] = p.espec_init
        if p.track_len:
            f[p.s_plen] = f[p.len_slot] & 0xFFFFFFFF
        s = PacketCtx()
        if trunc:
            s.truncate = trunc
        if tr is None:
            node = p.egress_init
            while node is not None:
                node = node.apply(f, s)
        else:
            self._pipeline(p, "egress", f, s, tr)
        if s.clone is not None:  # BMv2 clones before the drop check and the deparser
            self._clone_e2e(p, s.clone, f, payload, work, tr)
        if f[p.s_espec] == self.drop_port:
            if tr:
                tr("Dropping packet at the end of egress")
            return
        c = p.comp
        if c.update_checksums is not None:
            c.update_checksums(f, payload)
        data = c.deparse(f) + payload
        if s.recirculate is not None:
            if tr:
                tr("Recirculating packet")
            work.append((0, data, self._rx_port, RECIRC, self._preserve(p, s.recirculate, f)))
            return
        if s.truncate and len(data) > s.truncate:
            data = data[:s.truncate]
        if eport == self.cpu_port:
            pins.append(self._packet_in(p, f, data, payload))
            if tr:
                tr(f"Sending packet of size {len(data)} to the CPU port {eport}")
            return
        if tr:
            tr(f"Transmitting packet of size {len(data)} out of port {eport}")
        out.append((eport, data))

    @staticmethod
    def _preserve(p: Pipeline, fl: int, f: list[int]) -> list:
        return [(slot, f[slot]) for slot in p.prog.field_lists.get(fl, []) if slot != p.s_itype]

    def _session(self, session: int, tr: Tracer | None) -> tuple[list, int] | None:
        sess = self._pre.sessions.get(session)
        if sess is None and tr:
            tr(f"Clone session {session} is not configured; no clone made")
        return sess

    @staticmethod
    def _reset_metadata(p: Pipeline, f: list[int]) -> None:
        t = p.template
        for a, b in p.meta_ranges:
            f[a:b] = t[a:b]

    def _clone_i2e(self, p: Pipeline, clone: tuple[int, int], data: bytes, port: int,
                   f: list[int], work: list, tr: Tracer | None) -> None:
        """Ingress-to-egress clone, as BMv2 makes it: the received bytes are parsed again with
        ingress_port set (parsers may branch on it), then all metadata is reset, the field
        list copied in, and the length register set to the size the packet arrived with."""
        sess = self._session(clone[0], tr)
        if sess is None:
            return
        replicas, trunc = sess
        preserved = self._preserve(p, clone[1], f)
        f2 = p.template.copy()
        f2[p.s_iport] = port
        pos = self._parse(p, data, f2, PacketCtx(), None)
        self._reset_metadata(p, f2)
        for slot, v in preserved:
            f2[slot] = v
        f2[p.s_itype] = INGRESS_CLONE
        f2[p.len_slot] = len(data)
        self._enqueue_clones(f2, data[pos:], replicas, trunc, clone[0], work, tr)

    def _clone_e2e(self, p: Pipeline, clone: tuple[int, int], f: list[int], payload: bytes,
                   work: list, tr: Tracer | None) -> None:
        """Egress-to-egress clone, as BMv2 makes it: a copy of the header state the egress
        pipeline left (before the deparser), metadata reset, the field list copied in, and
        the original's length register."""
        sess = self._session(clone[0], tr)
        if sess is None:
            return
        replicas, trunc = sess
        f2 = f.copy()
        self._reset_metadata(p, f2)
        for slot, v in self._preserve(p, clone[1], f):
            f2[slot] = v
        f2[p.s_itype] = EGRESS_CLONE
        f2[p.len_slot] = f[p.len_slot] if p.track_len else f[p.s_plen]
        self._enqueue_clones(f2, payload, replicas, trunc, clone[0], work, tr)

    @staticmethod
    def _enqueue_clones(f: list[int], payload: bytes, replicas: list, trunc: int, session: int,
                        work: list, tr: Tracer | None) -> None:
        last = len(replicas) - 1
        for i, (eport, rid) in enumerate(replicas):
            if tr:
                tr(f"Cloning packet to port {eport} (session {session})")
            work.append((1, f if i == last else f.copy(), payload, eport, rid, trunc))

    @staticmethod
    def _digest_fields(flds: list[tuple[str, int]], f: list[int]) -> dict[str, int]:
        short = [n.rsplit(".", 1)[-1] for n, _ in flds]
        use_short = len(set(short)) == len(short)
        pairs = zip(flds, short, strict=True)
        return {(sn if use_short else n): f[slot] for (n, slot), sn in pairs}

    def _packet_in(self, p: Pipeline, f: list[int], data: bytes, payload: bytes) -> PacketIn:
        if self._ctrl_in is None:
            return PacketIn(data, {})
        lay = p.prog.layout
        parts = []
        meta: dict[str, int] | None = None
        for hn in p.comp.deparse_order:
            h = lay.headers[hn]
            if not f[h.valid_slot]:
                continue
            if meta is None and h.type_name == self._ctrl_in:
                meta = {fn: f[h.base + i] for i, (fn, _, _) in enumerate(h.fields)}
                continue
            parts.append(p.comp.packers[hn](f))
        if meta is None:
            return PacketIn(data, {})
        body = b"".join(parts) + payload
        return PacketIn(body[:len(data)], meta)

    # ------------------------------------------------------------------ tables
    def _table(self, name: str) -> TableNode:
        p = self._p
        if p is None:
            raise SwitchError("no pipeline loaded")
        node = p.tables.get(name)
        if node is None:
            raise NotFound(f"no table named '{name}'")
        return node

    def _mutable(self, node: TableNode) -> Table:
        if node.table.immutable:
            raise InvalidArgument(f"table '{node.name}' has const entries")
        return node.table

    def table_add(self, table: str, entry: TableEntry) -> None:
        with self._lock:
            node = self._table(table)
            t = self._mutable(node)
            e = t.make_entry(entry.key, entry.action, entry.priority,
                             lambda a: self._next_for(node, a, hit=True))
            e.counter = [entry.counter_packets, entry.counter_bytes]
            if t.meter_target is not None:
                e.meter = Meter()
                e.meter.set(entry.meter_config)
            t.insert(e)

    def table_modify(self, table: str, entry: TableEntry) -> None:
        with self._lock:
            node = self._table(table)
            t = self._mutable(node)
            e = t.find(entry.key, entry.priority)
            t.bind_action(e, entry.action, lambda a: self._next_for(node, a, hit=True))
            if e.meter is not None and entry.meter_config is not None:
                e.meter.set(entry.meter_config)

    def table_delete(self, table: str, key: list[MatchKey | None], priority: int) -> None:
        with self._lock:
            node = self._table(table)
            t = self._mutable(node)
            t.remove(t.find(key, priority))

    def table_entries(self, table: str) -> list[TableEntry]:
        with self._lock:
            node = self._table(table)
            return [node.table.to_api(e) for e in node.table.entries.values()]

    def table_set_default(self, table: str, action: ActionCall) -> None:
        with self._lock:
            node = self._table(table)
            if node.default_const:
                raise InvalidArgument(f"table '{table}': the default action is const")
            e = Entry()
            node.table.bind_action(e, action, lambda a: self._next_for(node, a, hit=False))
            node.default = e

    def table_get_default(self, table: str) -> ActionCall:
        with self._lock:
            node = self._table(table)
            d = node.default
            if d is None:
                return ActionCall("NoAction", [])
            return ActionCall(self._aname(self._p, d.aid), list(d.params))  # type: ignore[arg-type]

    def table_reset_default(self, table: str) -> None:
        with self._lock:
            node = self._table(table)
            node.default = node.json_default

    def table_clear(self, table: str) -> None:
        with self._lock:
            node = self._table(table)
            self._mutable(node).clear()

    # ------------------------------------------------------------------ externs
    def _extern(self, kind: str, name: str) -> Any:
        p = self._p
        if p is None:
            raise SwitchError("no pipeline loaded")
        obj = getattr(p.comp, kind).get(name)
        if obj is None:
            raise NotFound(f"no {kind[:-1]} named '{name}'")
        return obj

    @staticmethod
    def _index(obj: Any, index: int) -> None:
        if not 0 <= index < obj.size:  # IndexError: P4Runtime's OUT_OF_RANGE
            raise IndexError(f"index {index} out of range for '{obj.name}' ({obj.size})")

    def counter_read(self, name: str, index: int) -> tuple[int, int]:
        with self._lock:
            c = self._extern("counters", name)
            self._index(c, index)
            return c.packets[index], c.bytes[index]

    def counter_write(self, name: str, index: int, packets: int, nbytes: int) -> None:
        with self._lock:
            c = self._extern("counters", name)
            self._index(c, index)
            c.packets[index], c.bytes[index] = packets, nbytes

    def counter_size(self, name: str) -> int:
        with self._lock:
            return self._extern("counters", name).size

    def direct_counter_read(self, table: str, entry_key: list[MatchKey | None],
                            priority: int) -> tuple[int, int]:
        with self._lock:
            e = self._table(table).table.find(entry_key, priority)
            return e.counter[0], e.counter[1]

    def register_read(self, name: str, index: int) -> int:
        with self._lock:
            r = self._extern("registers", name)
            self._index(r, index)
            return r.cells[index]

    def register_write(self, name: str, index: int, value: int) -> None:
        with self._lock:
            r = self._extern("registers", name)
            self._index(r, index)
            r.cells[index] = value & r.mask

    def register_size(self, name: str) -> int:
        with self._lock:
            return self._extern("registers", name).size

    def meter_set(self, name: str, index: int, config: tuple[int, int, int, int]) -> None:
        with self._lock:
            m = self._extern("meters", name)
            self._index(m, index)
            m.meters[index].set(config)

    def meter_get(self, name: str, index: int) -> tuple[int, int, int, int] | None:
        with self._lock:
            m = self._extern("meters", name)
            self._index(m, index)
            return m.meters[index].config

    # ------------------------------------------------------------------ PRE
    def mc_group_set(self, group: int, replicas: list[tuple[int, int]]) -> None:
        with self._lock:
            self._pre.group_set(group, replicas)

    def mc_group_delete(self, group: int) -> None:
        with self._lock:
            self._pre.group_delete(group)

    def mc_groups(self) -> dict[int, list[tuple[int, int]]]:
        with self._lock:
            return {g: list(r) for g, r in self._pre.groups.items()}

    def clone_session_set(self, session: int, replicas: list[tuple[int, int]],
                          truncate_len: int = 0) -> None:
        with self._lock:
            self._pre.session_set(session, replicas, truncate_len)

    def clone_session_delete(self, session: int) -> None:
        with self._lock:
            self._pre.session_delete(session)

    def clone_sessions(self) -> dict[int, tuple[list[tuple[int, int]], int]]:
        with self._lock:
            return {k: (list(r), t) for k, (r, t) in self._pre.sessions.items()}
