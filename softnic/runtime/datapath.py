"""The packet path of ``Switch``, the v1model (simple_switch) engine behind ``softnic run``.

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

import time

from softnic.runtime.api import Digest, PacketIn, SwitchError
from softnic.runtime.packet import PacketCtx, ParserError
from softnic.runtime.pipeline import Pipeline
from softnic.runtime.tm import NORMAL, RECIRC, REPLICATION, RESUBMIT
from softnic.runtime.trace import Tracer

MAX_PASSES = 32  # ingress passes (resubmit / recirculate) per received packet
MAX_COPIES = 256  # egress passes (clones, replicas) per received packet


class Datapath:
    """Mixin of :class:`~softnic.runtime.switch.Switch`: parser, pipelines, passes, outputs."""

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

    def packet_out(self, data: bytes, metadata: dict[str, int]) -> list[tuple[int, bytes]]:
        with self._lock:
            p = self._p
            if p is None:
                raise SwitchError("no pipeline loaded")
            if self.cpu_port is None:
                raise SwitchError("no CPU port configured")
            prefix = self.controller_prefix(metadata)
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

    def _run(self, p: Pipeline, port: int, data: bytes, out: list, pins: list, digests: list,
             tr: Tracer | None) -> None:
        # a FIFO of further passes (clones, replicas, resubmits); a plain list read with an
        # index: cheaper to create than a deque, and most packets never add to it
        work: list = []
        now = self._now_us()
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
            p.ingress_fn(f, s)
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
            p.egress_fn(f, s)
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
