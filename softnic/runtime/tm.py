"""Traffic manager and outputs: clones, digests and packet-ins, as BMv2 makes them.

Copies are queued on the packet's work list as egress jobs
``(1, fields, payload, egress_port, rid, truncate)``; the packet path runs them.
"""

from __future__ import annotations

from softnic.runtime.api import PacketIn
from softnic.runtime.packet import PacketCtx
from softnic.runtime.pipeline import Pipeline
from softnic.runtime.pre import PacketReplicationEngine
from softnic.runtime.trace import Tracer

NORMAL, INGRESS_CLONE, EGRESS_CLONE, RECIRC, REPLICATION, RESUBMIT = 0, 1, 2, 4, 5, 6


class TrafficManager:
    """Mixin of :class:`~softnic.runtime.switch.Switch`; uses its ``_parse`` / ``_preserve``."""

    _pre: PacketReplicationEngine
    _ctrl_in: str | None

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
        names = digest_field_names([n for n, _ in flds])
        return {name: f[slot] for name, (_, slot) in zip(names, flds, strict=True)}

    def _packet_in(self, p: Pipeline, f: list[int], data: bytes, payload: bytes) -> PacketIn:
        if self._ctrl_in is None:
            return PacketIn(data, {})
        lay = p.prog.layout
        parts = []
        meta: dict[str, int] | None = None
        hlen = 0
        for hn in p.comp.deparse_order:
            h = lay.headers[hn]
            if not f[h.valid_slot]:
                continue
            if meta is None and h.type_name == self._ctrl_in:
                meta = {fn: f[h.base + i] for i, (fn, _, _) in enumerate(h.fields)}
                hlen = h.nbits // 8
                continue
            parts.append(p.comp.packers[hn](f))
        if meta is None:
            return PacketIn(data, {})
        body = b"".join(parts) + payload
        # ``data`` is the deparsed frame, packet_in header included, after any truncate(): as on
        # BMv2, the controller gets what is left of it once that header is taken off.
        return PacketIn(body[:max(0, len(data) - hlen)], meta)


def digest_field_names(names: list[str]) -> list[str]:
    """A digest's field names as the engine reports them: the last part of each JSON field name
    (``userMetadata.key`` -> ``key``) when those are unique, else the names as they are."""
    short = [n.rsplit(".", 1)[-1] for n in names]
    return short if len(set(short)) == len(short) else list(names)
