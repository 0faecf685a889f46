"""``XdpSwitch``: the v1model engine whose packet path is an XDP program in the kernel.

It implements :class:`softnic.runtime.api.SwitchAPI`, so the P4Runtime service, the controller
and the PTF suite drive it unchanged. A pipeline load generates C from the BMv2 JSON
(:mod:`softnic.compiler.xdp`), compiles it with clang, loads it with libbpf and, when ports are
attached, attaches it to every port (atomically replacing the previous program).

The control plane is softnic's own: an in-process :class:`~softnic.runtime.switch.Switch` (the
*shadow*) validates and keeps every table entry and default action, with the Python engine's
errors and messages; each accepted change is then written to the program's maps
(:mod:`softnic.compiler.xdp.tables` says how). Counters, direct counters and registers are read
from and written to the maps. Packets never run through the shadow.

``process_packet`` runs one frame with BPF_PROG_TEST_RUN: the port and the time go in through
the frame's XDP metadata, the verdict comes back the same way. Frames arriving on attached
interfaces are handled in the kernel; packets for the CPU port and digests come back through
ring buffers, which a thread polls while ports are attached.
"""

from __future__ import annotations

import hashlib
import logging
import mmap
import shutil
import socket
import struct
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from softnic.compiler.xdp.abi import (
    CFG_XDP_TX,
    CONFIG,
    CONFIG_MAP,
    DIGEST_RING,
    ETH_HLEN,
    IF_PORTS_MAP,
    NO_PIN,
    PACKET_IN_RING,
    PIN_HEADER,
    PROGRAM_NAME,
    RUN_MAGIC,
    RUN_META,
    STATS,
    STATS_MAP,
    TX_PORTS_MAP,
    VERDICT_CPU,
    VERDICT_PORT,
)
from softnic.compiler.xdp.program import XdpProgram, generate
from softnic.compiler.xdp.tables import (
    LPM,
    SEARCH,
    TableSpec,
    pack_exact_key,
    pack_lpm_key,
    pack_search_entry,
    pack_value,
    unpack_counters,
)
from softnic.runtime.api import (
    ActionCall,
    Digest,
    MatchKey,
    NotFound,
    PacketIn,
    PipelineLoadError,
    SwitchError,
    TableEntry,
)
from softnic.runtime.codegen import DROP_PORT
from softnic.runtime.switch import Switch
from softnic.runtime.tm import digest_field_names
from softnic.runtime.xdp import libbpf
from softnic.runtime.xdp.libbpf import BpfError, BpfObject, RingBuffer

log = logging.getLogger("softnic.xdp")



def _monotonic_us() -> int:
    """CLOCK_MONOTONIC in µs: the clock of bpf_ktime_get_ns()."""
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000


# clang's objects by the SHA-256 of their C, for this process: a controller that pushes the same
# pipeline again (every PTF test does) pays for the verifier, not for clang (~1.5 s).
_OBJECTS: dict[str, bytes] = {}
_OBJECTS_MAX = 8


def _compile_cached(c_path: Path, o_path: Path) -> None:
    digest = hashlib.sha256(c_path.read_bytes()).hexdigest()
    obj = _OBJECTS.get(digest)
    if obj is None:
        libbpf.compile_c(c_path, o_path)
        while len(_OBJECTS) >= _OBJECTS_MAX:
            _OBJECTS.pop(next(iter(_OBJECTS)))
        _OBJECTS[digest] = o_path.read_bytes()
    else:
        o_path.write_bytes(obj)


class Loaded:
    """One generated, compiled and loaded program with its maps."""

    def __init__(self, prog: XdpProgram, obj: BpfObject, workdir: Path) -> None:
        self.prog = prog
        self.obj = obj
        self.workdir = workdir
        self.fd = obj.program_fd(PROGRAM_NAME)
        self.maps = {n: obj.map(n) for n in obj.map_names()}
        self._mmaps: dict[str, mmap.mmap] = {}

    def map(self, cname: str) -> libbpf.BpfMap:
        return self.maps[cname]

    def mmapped(self, cname: str, size: int) -> mmap.mmap:
        mm = self._mmaps.get(cname)
        if mm is None:
            length = -(-size // mmap.PAGESIZE) * mmap.PAGESIZE
            mm = self._mmaps[cname] = mmap.mmap(self.maps[cname].fd, length, mmap.MAP_SHARED,
                                                mmap.PROT_READ | mmap.PROT_WRITE)
        return mm

    def close(self) -> None:
        """Unload (the kernel frees the program once nothing holds it) and remove the build."""
        for mm in self._mmaps.values():
            mm.close()
        self._mmaps = {}
        self.obj.close()
        shutil.rmtree(self.workdir, ignore_errors=True)


class XdpSwitch:
    """A v1model switch whose data plane is the kernel (see the module docstring)."""

    def __init__(self, cpu_port: int | None = None, drop_port: int = DROP_PORT,
                 device_id: int = 0, build_dir: Path | None = None,
                 xdp_mode: str = "native") -> None:
        self.cpu_port = cpu_port
        self.drop_port = drop_port
        self.device_id = device_id
        self.xdp_mode = xdp_mode
        self._build_dir = build_dir
        self.shadow = Switch(cpu_port=cpu_port, drop_port=drop_port, device_id=device_id)
        self._lock = threading.RLock()
        self._cur: Loaded | None = None
        self._json: dict | None = None
        self._t0_us = _monotonic_us()
        self._packet_in_cb: Callable[[PacketIn], None] | None = None
        self._transmit: Callable[[int, bytes], object] | None = None
        self._digest_cb: Callable[[Digest], None] | None = None
        self._ports: dict[int, int] = {}  # port -> ifindex of attached interfaces
        self._modes: dict[int, str] = {}  # ifindex -> "native" or "skb"
        self._host_port = 0xFFFFFFFF
        self._rings: list[RingBuffer] = []
        self._pending_digests: list[Digest] = []
        self._pending_pins: list[PacketIn] = []
        self._poller: threading.Thread | None = None
        self._stop = threading.Event()

    # -- pipeline ------------------------------------------------------------------------------
    def load_json(self, bmv2_json: dict) -> None:
        missing = libbpf.missing_requirements()
        if missing:
            raise PipelineLoadError("the xdp engine cannot run here: " + "; ".join(missing))
        ctrl_in = self.shadow.controller_headers()[0] if self.shadow.has_pipeline() else None
        self._load(bmv2_json, ctrl_in)

    def _load(self, bmv2_json: dict, ctrl_in: str | None) -> None:
        prog = generate(bmv2_json, drop_port=self.drop_port, cpu_port=self.cpu_port,
                        ctrl_in=ctrl_in)
        workdir = Path(tempfile.mkdtemp(prefix="softnic-xdp-", dir=self._build_dir))
        c_path, o_path = workdir / "program.c", workdir / "program.o"
        prog.write(c_path)
        try:
            _compile_cached(c_path, o_path)
            obj = BpfObject.load(o_path)
        except BpfError as e:
            shutil.rmtree(workdir, ignore_errors=True)
            raise PipelineLoadError(f"xdp: {e}") from None
        new = Loaded(prog, obj, workdir)
        try:
            self.shadow.load_json(bmv2_json)
            with self._lock:
                self._init_maps(new)
                for t in prog.tables:
                    self._sync_table(new, t)
                old = self._cur
                self._attach(new, old)
                self._cur = new
                self._json = bmv2_json
                self._open_rings(new)
        except Exception:
            new.close()
            raise
        if old is not None:
            old.close()

    def has_pipeline(self) -> bool:
        return self._cur is not None

    def set_controller_headers(self, packet_in: str | None, packet_out: str | None) -> None:
        self.shadow.set_controller_headers(packet_in, packet_out)
        cur = self._cur
        if cur is not None and self._json is not None and cur.prog.ctrl_in != packet_in:
            # the deparser records where the packet_in header went: regenerate for this type
            self._load(self._json, packet_in)

    def program(self) -> XdpProgram | None:
        cur = self._cur
        return cur.prog if cur is not None else None

    def program_paths(self) -> tuple[Path, Path] | None:
        """(C source, object) of the loaded program, for users and the docs' numbers."""
        cur = self._cur
        return (cur.workdir / "program.c", cur.workdir / "program.o") if cur else None

    def verifier_stats(self) -> dict[str, int]:
        cur = self._require()
        return cur.obj.prog_info(PROGRAM_NAME)

    def stats(self) -> dict[str, int]:
        cur = self._require()
        m = cur.map(STATS_MAP)
        out = {}
        for i, name in enumerate(STATS):
            v = m.lookup(struct.pack("<I", i))
            out[name] = struct.unpack("<Q", v)[0] if v else 0
        return out

    def _require(self) -> Loaded:
        cur = self._cur
        if cur is None:
            raise SwitchError("no pipeline loaded")
        return cur

    def _init_maps(self, new: Loaded) -> None:
        # XDP_TX only where every port has a driver: a veth wakes its peer for XDP_TX only if
        # the peer runs XDP itself (docs/xdp.md)
        flags = CFG_XDP_TX if self._modes and all(
            Path(f"/sys/class/net/{socket.if_indextoname(i)}/device").exists()
            for i in self._ports.values()) else 0
        new.map(CONFIG_MAP).update(struct.pack("<I", 0),
                                   CONFIG.pack(self._t0_us, self._host_port, flags))
        for port, ifindex in self._ports.items():
            new.map(IF_PORTS_MAP).update(struct.pack("<I", ifindex), struct.pack("<I", port))
            new.map(TX_PORTS_MAP).update(struct.pack("<I", port), struct.pack("<I", ifindex))

    # -- interfaces ------------------------------------------------------------------------------
    def attach_ports(self, ports: dict[int, str], host_port: int | None = None) -> None:
        """Run the program on these interfaces (port number -> interface name); ``host_port``
        is the port whose packets go up the local network stack (XDP_PASS)."""
        with self._lock:
            self._ports = {p: socket.if_nametoindex(i) for p, i in ports.items()}
            self._modes = {socket.if_nametoindex(i): self.xdp_mode
                           for i in ports.values()}
            self._host_port = host_port if host_port is not None else 0xFFFFFFFF
            cur = self._cur
            if cur is not None:
                self._init_maps(cur)
                self._attach(cur, None)
        if self._poller is None:
            self._poller = threading.Thread(target=self._poll, name="xdp-rings", daemon=True)
            self._poller.start()

    def _attach(self, new: Loaded, old: Loaded | None) -> None:
        for ifindex in self._ports.values():
            libbpf.xdp_attach(ifindex, new.fd, self._modes[ifindex],
                              old_prog_fd=old.fd if old is not None else None)

    def detach(self) -> None:
        self._stop.set()
        with self._lock:
            for ifindex in self._ports.values():
                try:
                    libbpf.xdp_detach(ifindex, self._modes[ifindex])
                except BpfError as e:
                    log.warning("detaching from ifindex %d: %s", ifindex, e)
            self._ports = {}

    def close(self) -> None:
        self.detach()
        if self._poller is not None:
            self._poller.join(timeout=2)
        with self._lock:
            for r in self._rings:
                r.close()
            self._rings = []
            if self._cur is not None:
                self._cur.close()
                self._cur = None

    # -- ring buffers ----------------------------------------------------------------------------
    def _open_rings(self, new: Loaded) -> None:
        for r in self._rings:
            r.close()
        self._rings = [RingBuffer(new.map(DIGEST_RING), self._on_digest),
                       RingBuffer(new.map(PACKET_IN_RING), self._on_packet_in)]

    def _on_digest(self, rec: bytes) -> None:
        cur = self._cur
        if cur is None:
            return
        lid = struct.unpack_from("<I", rec)[0]
        spec = cur.prog.digests.get(lid)
        if spec is None:
            return
        words = struct.unpack_from(f"<{cur.prog.digest_words}Q", rec, 8)
        fields = {}
        k = 0
        names = digest_field_names([f[0] for f in spec.fields])
        for fname, (_, _, width) in zip(names, spec.fields, strict=True):
            n = max(1, (width + 63) // 64)
            v = 0
            for i in range(n):
                v |= words[k + i] << (64 * i)
            fields[fname] = v & ((1 << width) - 1)
            k += n
        self._pending_digests.append(Digest(spec.name, fields))

    def _on_packet_in(self, rec: bytes) -> None:
        """A frame from the program: for the CPU port, or one it had no room to build in
        place (the runtime sends it; see rewrite_frame in the generated C)."""
        n, pin, port, _ = PIN_HEADER.unpack_from(rec)
        frame = rec[PIN_HEADER.size:PIN_HEADER.size + n]
        if port == self.cpu_port:
            self._pending_pins.append(self._packet_in(frame, pin))
        elif self._transmit is not None:
            self._transmit(port, frame)

    def _packet_in(self, frame: bytes, pin: int) -> PacketIn:
        cur = self._cur
        ctrl = cur.prog.ctrl_in if cur is not None else None
        if ctrl is None or pin == NO_PIN:
            return PacketIn(frame, {})
        h = next((h for h in cur.prog.prog.layout.headers.values()  # type: ignore[union-attr]
                  if h.type_name == ctrl and not h.metadata), None)
        if h is None:
            return PacketIn(frame, {})
        nb = h.nbits // 8
        raw = frame[pin:pin + nb]
        if len(raw) < nb:
            return PacketIn(frame, {})
        v = int.from_bytes(raw, "big")
        meta = {}
        shift = h.nbits
        for fname, w, _ in h.fields:
            shift -= w
            meta[fname] = (v >> shift) & ((1 << w) - 1)
        return PacketIn(frame[:pin] + frame[pin + nb:], meta)

    def _drain(self) -> tuple[list[Digest], list[PacketIn]]:
        for r in self._rings:
            r.consume()
        d, p = self._pending_digests, self._pending_pins
        self._pending_digests, self._pending_pins = [], []
        return d, p

    def _deliver(self, digests: list[Digest], pins: list[PacketIn]) -> None:
        if digests and self._digest_cb is not None:
            for dg in digests:
                self._digest_cb(dg)
        if pins and self._packet_in_cb is not None:
            for p in pins:
                self._packet_in_cb(p)

    def _poll(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                rings = list(self._rings)
                got = self._drain() if rings else ([], [])
            self._deliver(*got)
            time.sleep(0.002 if any(got) else 0.01)

    # -- packets ---------------------------------------------------------------------------------
    def now_us(self) -> int:
        return _monotonic_us() - self._t0_us

    def process_packet(self, port: int, data: bytes) -> list[tuple[int, bytes]]:
        with self._lock:
            cur = self._cur
            if cur is None:
                return []
            data = bytes(data)
            meta = RUN_META.pack(RUN_MAGIC, port, self.now_us(), len(data), 0, 0, 0)
            try:
                res = libbpf.test_run(cur.fd, data.ljust(ETH_HLEN, b"\0"), meta)
            except BpfError as e:
                log.warning("xdp: test run failed: %s", e)
                return []
            digests, pins = self._drain()
            _, eport, _, _, verdict, pin, out_len = RUN_META.unpack_from(res.meta)
            frame = res.data[:out_len]
            out: list[tuple[int, bytes]] = []
            if verdict == VERDICT_PORT:
                out.append((eport, frame))
            elif verdict == VERDICT_CPU:
                pins.append(self._packet_in(frame, pin))
        self._deliver(digests, pins)
        return out

    def packet_out(self, data: bytes, metadata: dict[str, int]) -> list[tuple[int, bytes]]:
        if self._cur is None:
            raise SwitchError("no pipeline loaded")
        if self.cpu_port is None:
            raise SwitchError("no CPU port configured")
        prefix = self.shadow.controller_prefix(metadata)
        return self.process_packet(self.cpu_port, prefix + bytes(data))

    def run_many(self, port: int, data: bytes, repeat: int) -> int:
        """Run one frame ``repeat`` times in the kernel; the mean ns per run (benchmarks)."""
        cur = self._require()
        meta = RUN_META.pack(RUN_MAGIC, port, self.now_us(), len(data), 0, 0, 0)
        res = libbpf.test_run(cur.fd, bytes(data), meta, repeat=repeat)
        self._drain()
        return res.duration_ns

    def set_transmit(self, fn: Callable[[int, bytes], object] | None) -> None:
        """How the runtime sends a frame out of a port (frames the program hands back)."""
        self._transmit = fn

    def set_packet_in_handler(self, cb: Callable[[PacketIn], None] | None) -> None:
        self._packet_in_cb = cb

    def set_digest_handler(self, cb: Callable[[Digest], None] | None) -> None:
        self._digest_cb = cb

    # -- tables ----------------------------------------------------------------------------------
    def _spec(self, cur: Loaded, table: str) -> TableSpec | None:
        return cur.prog.tables.get(table)

    def _action_id(self, cur: Loaded, t: TableSpec, name: str) -> int:
        for aid, sig in t.actions.items():
            if sig.name == name:
                return aid
        raise SwitchError(f"table '{t.name}': action '{name}' has no id")

    def _key_bytes(self, t: TableSpec, key: list[MatchKey | None]) -> bytes:
        return pack_lpm_key(t, key) if t.kind == LPM else pack_exact_key(t, key)

    def _write(self, cur: Loaded, t: TableSpec, e: TableEntry, keep_counters: bool) -> None:
        m = cur.map(t.cname)
        kb = self._key_bytes(t, e.key)
        pk, nb = e.counter_packets, e.counter_bytes
        if keep_counters:
            old = m.lookup(kb)
            if old is not None:
                pk, nb = unpack_counters(old)
        aid = self._action_id(cur, t, e.action.name)
        m.update(kb, pack_value(t, aid, e.action.params, pk, nb))

    def _sync_table(self, cur: Loaded, table: str) -> None:
        """Make the maps of ``table`` equal the shadow's entries and default action."""
        t = self._spec(cur, table)
        if t is None:
            return
        d = self.shadow.table_get_default(table)
        if any(s.name == d.name for s in t.actions.values()):
            cur.map(t.cname + "_def").update(struct.pack("<I", 0), pack_value(
                t, self._action_id(cur, t, d.name), d.params))
        if t.kind == SEARCH:
            self._rewrite_search(cur, t)
            return
        m = cur.map(t.cname)
        entries = self.shadow.table_entries(table)
        want = {self._key_bytes(t, e.key): e for e in entries}
        for k in list(m.keys()):
            if k not in want:
                m.delete(k)
        for e in entries:
            self._write(cur, t, e, keep_counters=True)

    def _rewrite_search(self, cur: Loaded, t: TableSpec) -> None:
        m = cur.map(t.cname)
        old: dict[tuple, tuple[int, int]] = {}
        for i in range(t.size):
            v = m.lookup(struct.pack("<I", i))
            if v is None or not struct.unpack_from("<I", v)[0]:
                break
            old[v[:8 + 24 * max(1, t.key_words)]] = unpack_counters(
                v[8 + 24 * max(1, t.key_words):])
        entries = self.shadow.table_match_order(t.name)
        for i, e in enumerate(entries[:t.size]):
            aid = self._action_id(cur, t, e.action.name)
            blob = pack_search_entry(t, e.key, aid, e.action.params)
            pk, nb = old.get(blob[:8 + 24 * max(1, t.key_words)], (0, 0))
            m.update(struct.pack("<I", i), pack_search_entry(t, e.key, aid, e.action.params,
                                                             pk, nb))
        for i in range(len(entries), t.size):
            v = m.lookup(struct.pack("<I", i))
            if v is None or not struct.unpack_from("<I", v)[0]:
                break
            m.update(struct.pack("<I", i), bytes(t.entry_size))

    def _mirror(self, table: str, apply: Callable[[Loaded, TableSpec], None]) -> None:
        cur = self._cur
        if cur is None:
            return
        t = self._spec(cur, table)
        if t is None:
            return
        try:
            apply(cur, t)
        except BpfError as e:
            raise SwitchError(f"table '{table}': {e}") from None

    def table_add(self, table: str, entry: TableEntry) -> None:
        with self._lock:
            self.shadow.table_add(table, entry)
            try:
                self._mirror(table, lambda cur, t: self._sync_one(cur, t, entry))
            except SwitchError:
                self.shadow.table_delete(table, entry.key, entry.priority)
                raise

    def _sync_one(self, cur: Loaded, t: TableSpec, entry: TableEntry) -> None:
        if t.kind == SEARCH:
            self._rewrite_search(cur, t)
        else:
            self._write(cur, t, entry, keep_counters=True)

    def table_modify(self, table: str, entry: TableEntry) -> None:
        with self._lock:
            self.shadow.table_modify(table, entry)
            self._mirror(table, lambda cur, t: self._sync_one(cur, t, entry))

    def table_delete(self, table: str, key: list[MatchKey | None], priority: int) -> None:
        with self._lock:
            self.shadow.table_delete(table, key, priority)

            def apply(cur: Loaded, t: TableSpec) -> None:
                if t.kind == SEARCH:
                    self._rewrite_search(cur, t)
                else:
                    cur.map(t.cname).delete(self._key_bytes(t, key))
            self._mirror(table, apply)

    def table_entries(self, table: str) -> list[TableEntry]:
        with self._lock:
            entries = self.shadow.table_entries(table)
            cur = self._cur
            t = self._spec(cur, table) if cur is not None else None
            if t is None or cur is None:
                return entries
            for e in entries:
                e.counter_packets, e.counter_bytes = self._counters_of(cur, t, e.key, e.priority)
            return entries

    def _counters_of(self, cur: Loaded, t: TableSpec, key: list[MatchKey | None],
                     priority: int) -> tuple[int, int]:
        m = cur.map(t.cname)
        if t.kind == SEARCH:
            order = self.shadow.table_match_order(t.name)
            for i, e in enumerate(order):
                if e.key == key and (e.priority == priority or not priority):
                    v = m.lookup(struct.pack("<I", i))
                    if v is not None:
                        return unpack_counters(v[8 + 24 * max(1, t.key_words):])
            return 0, 0
        v = m.lookup(self._key_bytes(t, key))
        return unpack_counters(v) if v is not None else (0, 0)

    def table_set_default(self, table: str, action: ActionCall) -> None:
        with self._lock:
            self.shadow.table_set_default(table, action)
            self._mirror(table, lambda cur, t: self._sync_default(cur, t))

    def _sync_default(self, cur: Loaded, t: TableSpec) -> None:
        d = self.shadow.table_get_default(t.name)
        if any(s.name == d.name for s in t.actions.values()):
            cur.map(t.cname + "_def").update(struct.pack("<I", 0), pack_value(
                t, self._action_id(cur, t, d.name), d.params))

    def table_get_default(self, table: str) -> ActionCall:
        return self.shadow.table_get_default(table)

    def table_reset_default(self, table: str) -> None:
        with self._lock:
            self.shadow.table_reset_default(table)
            self._mirror(table, lambda cur, t: self._sync_default(cur, t))

    def table_clear(self, table: str) -> None:
        with self._lock:
            self.shadow.table_clear(table)
            self._mirror(table, lambda cur, t: self._sync_table(cur, t.name))

    # -- externs ---------------------------------------------------------------------------------
    def counter_read(self, name: str, index: int) -> tuple[int, int]:
        with self._lock:
            self.shadow.counter_read(name, index)  # validates name and index
            cur = self._cur
            c = cur.prog.counters.get(name) if cur is not None else None
            if c is None or cur is None:
                return 0, 0
            vals = cur.map(c.cname).lookup_percpu(struct.pack("<I", index)) or []
            pk = sum(struct.unpack_from("<QQ", v)[0] for v in vals)
            nb = sum(struct.unpack_from("<QQ", v)[1] for v in vals)
            return pk, nb

    def counter_write(self, name: str, index: int, packets: int, nbytes: int) -> None:
        with self._lock:
            self.shadow.counter_write(name, index, packets, nbytes)
            cur = self._cur
            c = cur.prog.counters.get(name) if cur is not None else None
            if c is None or cur is None:
                return
            n = libbpf.num_possible_cpus()
            vals = [struct.pack("<QQ", packets, nbytes)] + [bytes(16)] * (n - 1)
            cur.map(c.cname).update_percpu(struct.pack("<I", index), vals)

    def counter_size(self, name: str) -> int:
        return self.shadow.counter_size(name)

    def direct_counter_read(self, table: str, entry_key: list[MatchKey | None],
                            priority: int) -> tuple[int, int]:
        with self._lock:
            self.shadow.direct_counter_read(table, entry_key, priority)  # validates
            cur = self._cur
            t = self._spec(cur, table) if cur is not None else None
            if t is None or cur is None:
                return 0, 0
            return self._counters_of(cur, t, entry_key, priority)

    def direct_counter_write(self, table: str, entry_key: list[MatchKey | None], priority: int,
                             packets: int, nbytes: int) -> None:
        with self._lock:
            self.shadow.direct_counter_write(table, entry_key, priority, packets, nbytes)
            cur = self._cur
            t = self._spec(cur, table) if cur is not None else None
            if t is None or cur is None:
                return
            if t.kind == SEARCH:
                self._rewrite_search(cur, t)
                order = self.shadow.table_match_order(table)
                for i, e in enumerate(order):
                    if e.key == entry_key and (e.priority == priority or not priority):
                        m = cur.map(t.cname)
                        k = struct.pack("<I", i)
                        v = bytearray(m.lookup(k) or b"")
                        off = 8 + 24 * max(1, t.key_words) + 8
                        v[off:off + 16] = struct.pack("<QQ", packets, nbytes)
                        m.update(k, bytes(v))
                return
            m = cur.map(t.cname)
            kb = self._key_bytes(t, entry_key)
            v = m.lookup(kb)
            if v is not None:
                m.update(kb, v[:8] + struct.pack("<QQ", packets, nbytes) + v[24:])

    def _register(self, name: str) -> tuple[Loaded, Any] | None:
        cur = self._cur
        r = cur.prog.registers.get(name) if cur is not None else None
        return (cur, r) if cur is not None and r is not None else None

    def register_read(self, name: str, index: int) -> int:
        with self._lock:
            shadow_value = self.shadow.register_read(name, index)  # validates
            got = self._register(name)
            if got is None:
                return shadow_value  # a register no action uses: never written by packets
            cur, r = got
            v = cur.map(r.cname).lookup(struct.pack("<I", index))
            if v is None:
                raise NotFound(f"register '{name}': index {index} out of range")
            return int.from_bytes(v, "little") & ((1 << r.width) - 1)

    def register_cells(self, name: str) -> list[int]:
        """Every cell of a register array, read in place (the arrays are mmap-able)."""
        with self._lock:
            got = self._register(name)
            if got is None:
                return [self.shadow.register_read(name, i)
                        for i in range(self.shadow.register_size(name))]
            cur, r = got
            view = cur.mmapped(r.cname, r.size * 8 * max(1, (r.width + 63) // 64))
            if r.width <= 64:
                return list(struct.unpack_from(f"<{r.size}Q", view))
            n = (r.width + 63) // 64
            words = struct.unpack_from(f"<{r.size * n}Q", view)
            return [sum(words[i * n + k] << (64 * k) for k in range(n)) for i in range(r.size)]

    def register_write(self, name: str, index: int, value: int) -> None:
        with self._lock:
            self.shadow.register_write(name, index, value)
            got = self._register(name)
            if got is None:
                return
            cur, r = got
            nbytes = 8 * max(1, (r.width + 63) // 64)
            v = (value & ((1 << r.width) - 1)).to_bytes(nbytes, "little")
            cur.map(r.cname).update(struct.pack("<I", index), v)

    def register_size(self, name: str) -> int:
        return self.shadow.register_size(name)

    def meter_set(self, name: str, index: int, config: tuple[int, int, int, int]) -> None:
        self.shadow.meter_set(name, index, config)

    def meter_get(self, name: str, index: int) -> tuple[int, int, int, int] | None:
        return self.shadow.meter_get(name, index)

    def parse_vset_set(self, name: str, members: Any) -> None:
        raise NotFound(f"no parser value set '{name}' (the xdp target has none)")

    def parse_vset_get(self, name: str) -> Any:
        raise NotFound(f"no parser value set '{name}' (the xdp target has none)")

    # -- packet replication engine (kept for P4Runtime; the xdp target multicasts nothing) ---
    def mc_group_set(self, group: int, replicas: list[tuple[int, int]]) -> None:
        self.shadow.mc_group_set(group, replicas)

    def mc_group_delete(self, group: int) -> None:
        self.shadow.mc_group_delete(group)

    def mc_groups(self) -> dict[int, list[tuple[int, int]]]:
        return self.shadow.mc_groups()

    def clone_session_set(self, session: int, replicas: list[tuple[int, int]],
                          truncate_len: int = 0) -> None:
        self.shadow.clone_session_set(session, replicas, truncate_len)

    def clone_session_delete(self, session: int) -> None:
        self.shadow.clone_session_delete(session)

    def clone_sessions(self) -> dict[int, tuple[list[tuple[int, int]], int]]:
        return self.shadow.clone_sessions()
