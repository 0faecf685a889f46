"""GET hits answered and misses forwarded per second by the cache's data plane on softnic.

The program is ``p4src/v1model/p4cache.p4`` as ``p4cache.program.build()`` compiles it. Four
workloads: 16- and 64-byte keys, each with 100- and 500-byte replies (the reply is the bytes the
switch stores and sends after the 8-byte memcached frame header: ``VALUE <key> 0 <n>\\r\\n``,
the value, ``\\r\\nEND\\r\\n``). Each workload has 64 cached keys (one slot each, filled by an
OP_UPDATE control datagram) offered round robin for hits, and 64 other keys for misses; every
request is a single-key ``get <key>\\r\\n`` from an allow-listed client to UDP 11211. A hit goes
back out of the port it came in by, as the reply; a miss is bridged to the server's port
unchanged (and feeds the hot-key sketch, as a miss does).

* in-process: ``Switch.process_packet`` in a loop, no I/O: the engine's ceiling. The first hit
  and miss of each workload are checked byte for byte against the expected reply / the request.
* veth: ``softnic run --cpu-port 255`` with a client namespace (port 1) and a server namespace
  (port 2). Pipeline and table entries are pushed over P4Runtime and every value is installed by
  a packet-out OP_UPDATE (StreamMessageRequest.packet with the packet_out metadata), each
  acknowledged by a packet-in with status "applied", like a controller would. A sender in the
  client namespace offers a fixed number of requests per step, open loop, at rate steps and then
  flat out; a receiver counts the step's answers: hits in the client namespace (replies to the
  client's UDP port, checked for length and TTL 64), misses in the server namespace (requests to
  11211, length and TTL unchanged). Client and server MACs are not the namespaces' own, so
  their kernels drop the frames as "other host" instead of answering with ICMP port
  unreachable, which would load the switch with a second packet per request.
* xdp: the same program, entries and values on softnic's second engine,
  ``softnic.runtime.xdp.engine.XdpSwitch`` (the program compiled to XDP, in the kernel), timed
  with the kernel's own clock: the duration BPF_PROG_TEST_RUN reports, the program's time per
  frame in the kernel, without the syscall and without Python, on the one CPU the test run
  runs on. Next to it the Python engine's in-process figures (above) and the ratio.

  - misses: ``run_many(port, request, R)`` (BPF_PROG_TEST_RUN with repeat R), the mean over
    the workload's 64 requests (8 with ``--quick``). The kernel runs one buffer R times without
    restoring it; a miss leaves the frame as it was, so every run is the same miss (checked:
    the cache's miss counter advances by exactly R per call). One difference: the program
    writes the egress port into the run's metadata where the ingress port came in, so runs
    2..R arrive on the server's port; a miss from there is forwarded the same way (checked at
    setup). The wall time of a repeated call is no measure: it holds ~15 ms of the kernel's
    own work around the runs.
  - hits cannot be timed so: a hit rewrites the request into the reply in place, and the next
    repeat runs the reply (on 6.18 a bridged, truncated reply: the cache's hit counter
    advances by 1 per call whatever R; recorded per workload as ``repeat_on_hits``). Live
    frames (BPF_F_TEST_XDP_LIVE_FRAMES) do not help: their page-pool pages are recycled with
    the program's output in them (64 hits per call whatever the repeat). So hits are single
    runs (repeat=1, a fresh copy of the request each, round robin), the kernel's duration of
    each summed; every one must count as a hit. That figure carries what a lone run costs
    more than a run in a loop (cold caches after the syscall, the timer's reads): misses are
    timed both ways to show how much (``single_minus_repeat_ns``). The wall time of each
    call from Python (ctypes, the bpf() syscall copying the frame in and out, the run) is
    reported separately as ``call_wall_ns``.

  The first hit and miss of each workload are checked byte for byte, as in-process; the
  verifier's figures of the loaded program (xlated and verified instructions, JIT bytes) go
  into the results.

Per step we report offered and delivered rate and loss; the headline per workload and kind is
the highest offered rate with < 1 % loss and >= 97 % of it delivered, and the delivered rate at
saturation, exactly as ``softnic_pps.py`` does. Every measurement is repeated (medians; the
veth repeats go round all workloads in turn, so a slow minute of the machine does not land on one
workload). Results go to ``bench/results/dataplane.json`` with machine information (including
files modified against the commit, e.g. engine work in progress), a plot to
``docs/dataplane_pps.png``.

Run: ``p4cache-bench dataplane`` (root needed for the veth part; ``--quick`` for a smoke run).
``--engine python`` is in-process and veth on the Python engine (veth is always the Python
engine, ``softnic run``); ``--engine xdp`` the xdp engine next to the Python engine in-process;
``--engine both`` all of it, the default when the xdp engine can run here
(``softnic.runtime.xdp.libbpf.missing_requirements()`` empty: root, libbpf, clang, kernel).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from p4cache import paths
from p4cache_bench.common import (
    KEEP_UP,
    LOSS_OK,
    Agent,
    agent_argv,
    machine_info,
    median,
    pyplot,
    save_figure,
    shown,
    softnic_run,
    step_rates,
    summarize_sweeps,
    write_results,
)

RESULTS = paths.bench_results() / "dataplane.json"
PLOT = paths.bench_plots() / "dataplane_pps.png"

KEY_LENS = (16, 64)
REPLY_LENS = (100, 500)
N_KEYS = 64  # keys per workload and kind
CPU_PORT = 255
CLIENT_PORT, SERVER_PORT = 1, 2  # switch ports
# Not the namespaces' MACs (see the module doc); l2_forward bridges on them.
CLIENT = {"mac": "02:00:00:00:01:01", "ip": "10.0.0.1", "udp": 40000}
SERVER = {"mac": "02:00:00:00:02:02", "ip": "10.0.0.2"}
CONTROLLER = {"mac": "02:00:00:00:00:fe", "ip": "10.255.0.1"}
REQUEST_TTL = 32  # a hit comes back with TTL 64 (the switch's), a miss keeps 32
TABLE_ACTIONS = {
    "l2": "CacheIngress.forwarding.bridge",
    "allow": "CacheIngress.lookup.allow_client",
    "slot": "CacheIngress.lookup.set_slot",
}

DEFAULT_RATES = [5_000, 10_000, 15_000, 20_000, 25_000, 30_000, 40_000, 50_000]
QUICK_RATES = [5_000, 20_000]

TARGETS = {
    "workload": "k16-r100",
    "inprocess_hits_pps": 50_000,
    "veth_hits_pps": 20_000,
    "veth_max_loss": LOSS_OK,
    "source": "the issue",
}
XDP_TARGETS = {
    "workload": "k16-r100",
    "hits_pps": 1_000_000,  # on one core: <= 1 us a packet
    "ns_per_hit": 1_000,
    "over_python": 30,  # xdp hits/s over the Python engine's in-process hits/s
    "source": "the issue (p4cache-bench dataplane --engine xdp)",
}
ENGINES = ("python", "xdp", "both")
XDP_REPEAT_PROBE = 100  # repeat of the one run_many call that shows repeat cannot time hits
TIMED = {
    "python": "Switch.process_packet called in a loop in-process: wall time per call (the whole "
              "engine in Python, no I/O)",
    "xdp_hit": "in-kernel program time per frame: the duration BPF_PROG_TEST_RUN reports for "
               "single runs (repeat=1, a fresh copy of the request each, round robin), summed "
               "over the batch; no syscall, no Python; includes what a lone run costs more "
               "than one in a loop (see single_minus_repeat_ns of the misses)",
    "xdp_miss": "in-kernel program time per frame: BPF_PROG_TEST_RUN's mean duration with "
                "repeat R per request (the kernel re-runs the same buffer; a miss leaves it "
                "unchanged, checked by the miss counter advancing by R); no syscall, no Python",
    "xdp_miss_single": "as xdp_hit, on the misses: the same method as the hits, for comparison",
    "call_wall_ns": "wall time per XdpSwitch.run_many(port, frame, 1) call from Python: ctypes, "
                    "the bpf() syscall copying the frame in and out, the run, the ring buffers' "
                    "drain; syscall_overhead_ns is that minus the in-kernel time",
    "why_hits_are_single_runs": "BPF_PROG_TEST_RUN with repeat reuses one buffer without "
                                "restoring it: a hit turns the request into the reply in place "
                                "and the next repeat runs the reply, which is no hit "
                                "(repeat_on_hits: the hit counter advances by 1 per call); live "
                                "frames recycle page-pool pages with the program's output in "
                                "them (64 hits per call, whatever the repeat)",
}
REFERENCE = {
    "source": "the issue (quoted, not measured here)",
    "probe": "real BMv2 simple_switch on a simpler probe of this design: 16-byte keys, tiny value",
    "bmv2_default_hits_pps": 2_800,
    "bmv2_nolog_hits_pps": 15_700,
}


def _mac_int(mac: str) -> int:
    return int(mac.replace(":", ""), 16)


def _ip_int(ip: str) -> int:
    return int.from_bytes(bytes(int(x) for x in ip.split(".")), "big")


# -- workloads

def reply_for(key: bytes, length: int) -> bytes:
    """memcached's reply to ``get key`` (after the frame header), ``length`` bytes long."""
    from p4cache import dataplane as dp

    for vlen in range(length):
        value = bytes(0x61 + (i % 26) for i in range(vlen))
        reply = dp.render_value_reply(key, 0, value)
        if len(reply) == length:
            return reply
        if len(reply) > length:
            break
    raise ValueError(f"no {length}-byte reply for a {len(key)}-byte key")


def _key(prefix: str, workload: int, i: int, length: int) -> bytes:
    k = f"{prefix}{workload}-{i:03d}-".encode()
    return (k + b"x" * length)[:length]


def get_frame(key: bytes, request_id: int = 0) -> bytes:
    from p4cache import dataplane as dp

    return bytes(Ether(dst=SERVER["mac"], src=CLIENT["mac"])
                 / IP(src=CLIENT["ip"], dst=SERVER["ip"], ttl=REQUEST_TTL)
                 / UDP(sport=CLIENT["udp"], dport=dp.MEMCACHED_PORT, chksum=0)
                 / dp.get_request(request_id, key))


def hit_reply_frame(request: bytes, reply: bytes) -> bytes:
    """What the switch must send back for ``request`` when it holds ``reply``."""
    from p4cache import dataplane as dp

    req = Ether(request)
    ip = IP(src=req[IP].dst, dst=req[IP].src, ttl=64, id=req[IP].id, flags=req[IP].flags,
            tos=req[IP].tos)
    rid = int.from_bytes(bytes(req[UDP].payload)[:2], "big")
    return bytes(Ether(dst=req.src, src=req.dst) / ip
                 / UDP(sport=req[UDP].dport, dport=req[UDP].sport, chksum=0)
                 / dp.get_reply(rid, reply))


def update_frame(slot: int, version: int, reply: bytes) -> bytes:
    """The OP_UPDATE control datagram the controller sends as a packet-out (in the server's
    name: its source address is the server's)."""
    from p4cache import dataplane as dp

    return bytes(Ether(dst=CONTROLLER["mac"], src=SERVER["mac"])
                 / IP(src=SERVER["ip"], dst=CONTROLLER["ip"])
                 / UDP(sport=dp.CACHE_CTRL_PORT, dport=dp.CACHE_CTRL_PORT)
                 / dp.update_datagram(slot, version, reply))


@dataclass
class Workload:
    index: int
    key_len: int
    reply_len: int
    hit_keys: list[bytes] = field(default_factory=list)
    miss_keys: list[bytes] = field(default_factory=list)
    replies: list[bytes] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"k{self.key_len}-r{self.reply_len}"

    def slot(self, i: int) -> int:
        return self.index * N_KEYS + i

    def frames(self, kind: str) -> list[bytes]:
        keys = self.hit_keys if kind == "hit" else self.miss_keys
        return [get_frame(k) for k in keys]

    def answer_len(self, kind: str) -> int:
        """Length of the frame the receiver counts: the reply (hit) or the request (miss)."""
        if kind == "hit":
            return 14 + 20 + 8 + 8 + self.reply_len
        return 14 + 20 + 8 + 8 + 4 + self.key_len + 2


def workloads(key_lens: list[int], reply_lens: list[int]) -> list[Workload]:
    out = []
    for klen in key_lens:
        for rlen in reply_lens:
            w = Workload(len(out), klen, rlen)
            w.hit_keys = [_key("h", w.index, i, klen) for i in range(N_KEYS)]
            w.miss_keys = [_key("m", w.index, i, klen) for i in range(N_KEYS)]
            w.replies = [reply_for(k, rlen) for k in w.hit_keys]
            out.append(w)
    return out


def table_entries(wls: list[Workload]) -> list[tuple[str, list[tuple[str, int, int | None]],
                                                      str, list[tuple[str, int]]]]:
    """(table, [(field, value, prefix_len)], action, [(param, value)]) for every entry needed."""
    from p4cache import dataplane as dp

    out: list = [
        (dp.TABLE_L2, [("dst_addr", _mac_int(CLIENT["mac"]), None)], TABLE_ACTIONS["l2"],
         [("port", CLIENT_PORT)]),
        (dp.TABLE_L2, [("dst_addr", _mac_int(SERVER["mac"]), None)], TABLE_ACTIONS["l2"],
         [("port", SERVER_PORT)]),
        (dp.TABLE_ALLOWLIST, [("src_addr", _ip_int("10.0.0.0"), 8)], TABLE_ACTIONS["allow"], []),
    ]
    for w in wls:
        for i, k in enumerate(w.hit_keys):
            server, kl, kv = dp.lookup_key(SERVER["ip"], k)
            out.append((dp.TABLE_LOOKUP,
                        [("server_addr", server, None), ("key_len", kl, None), ("key", kv, None)],
                        TABLE_ACTIONS["slot"], [("slot", w.slot(i))]))
    return out


def _ack_status(payload: bytes) -> int:
    from p4cache import dataplane as dp

    return dp.parse_ctrl(bytes(Ether(payload)[UDP].payload)).status


# -- (i) in-process

def inprocess_switch(bmv2_json: Path, wls: list[Workload]):  # noqa: ANN201 - a Switch
    """A softnic Switch with the program, the entries and every value installed (checked)."""
    from softnic.runtime.switch import Switch

    sw = Switch(cpu_port=CPU_PORT)
    _fill(sw, bmv2_json, wls, "in-process")
    return sw


def xdp_switch(bmv2_json: Path, wls: list[Workload], build_dir: Path):  # noqa: ANN201
    """(XdpSwitch, checks): the xdp engine, its program built under ``build_dir``, filled and
    checked as ``inprocess_switch``; the checks of the first hit and miss per workload."""
    from softnic.runtime.xdp.engine import XdpSwitch

    sw = XdpSwitch(cpu_port=CPU_PORT, build_dir=build_dir)
    try:
        return sw, _fill(sw, bmv2_json, wls, "xdp")
    except BaseException:
        sw.close()
        raise


def _fill(sw, bmv2_json: Path, wls: list[Workload], what: str) -> dict:  # noqa: ANN001
    from p4cache import dataplane as dp
    from softnic.runtime.api import ActionCall, MatchKey, TableEntry

    sw.load_json(json.loads(bmv2_json.read_text()))
    for table, keys, action, params in table_entries(wls):
        sw.table_add(table, TableEntry([MatchKey(v, prefix_len=p) if p is not None else
                                        MatchKey(v) for _, v, p in keys],
                                       ActionCall(action, [v for _, v in params])))
    acks: list = []
    sw.set_packet_in_handler(acks.append)
    for w in wls:
        for i, reply in enumerate(w.replies):
            sw.packet_out(update_frame(w.slot(i), 1, reply), {"egress_port": 0})
    sw.set_packet_in_handler(None)
    bad = [a for a in acks if _ack_status(a.payload) != dp.STATUS_APPLIED]
    if len(acks) != N_KEYS * len(wls) or bad:
        raise RuntimeError(f"{what}: {len(acks)} update acks, {len(bad)} not applied")
    # a miss also from the server's port: where the runs after the first of a repeated test
    # run arrive on the xdp engine (see the module doc)
    ports = (CLIENT_PORT, SERVER_PORT) if what == "xdp" else (CLIENT_PORT,)
    checks = {}
    for w in wls:
        req = w.frames("hit")[0]
        out = sw.process_packet(CLIENT_PORT, req)
        if out != [(CLIENT_PORT, hit_reply_frame(req, w.replies[0]))]:
            raise RuntimeError(f"{what} {w.name}: the hit was not answered as expected: "
                               f"{out!r}")
        hit = {"egress_port": out[0][0], "frame_bytes": len(out[0][1]),
               "as_expected": True}
        req = w.frames("miss")[0]
        for port in ports:
            out = sw.process_packet(port, req)
            if out != [(SERVER_PORT, req)]:
                raise RuntimeError(f"{what} {w.name}: the miss from port {port} was not "
                                   f"forwarded: {out!r}")
        miss = {"egress_port": out[0][0], "frame_bytes": len(out[0][1]),
                "ingress_ports": list(ports), "as_expected": True}
        checks[w.name] = {"hit": hit, "miss": miss}
    return checks


def cache_counts(sw) -> tuple[int, int]:  # noqa: ANN001 - either engine
    """(hits, misses) the program's cache_stats counter holds."""
    from p4cache import dataplane as dp

    return (sw.counter_read(dp.COUNTER_STATS, dp.STAT_HIT)[0],
            sw.counter_read(dp.COUNTER_STATS, dp.STAT_MISS)[0])


def _counted(before: tuple[int, int], after: tuple[int, int]) -> dict:
    return {"hits": after[0] - before[0], "misses": after[1] - before[1]}


def inprocess_pps(sw, frames: list[bytes], seconds: float, max_packets: int) -> dict:  # noqa: ANN001
    process = sw.process_packet
    n = 0
    nf = len(frames)
    before = cache_counts(sw)
    start = time.perf_counter()
    deadline = start + seconds
    while n < max_packets:
        process(CLIENT_PORT, frames[n % nf])
        n += 1
        if n % 64 == 0 and time.perf_counter() >= deadline:
            break
    dur = time.perf_counter() - start
    return {"packets": n, "duration_s": round(dur, 4), "pps": round(n / dur, 1),
            "counted": _counted(before, cache_counts(sw))}


# -- (iii) the xdp engine, timed by the kernel

def xdp_unavailable_reason() -> str | None:
    """Why the xdp engine cannot run here, or None when it can."""
    try:
        from softnic.runtime.xdp import libbpf
    except ImportError as e:  # pragma: no cover - softnic ships it
        return f"softnic.runtime.xdp: {e}"
    missing = libbpf.missing_requirements()
    return "; ".join(missing) if missing else None


def xdp_single(sw, frames: list[bytes], seconds: float, max_runs: int) -> dict:  # noqa: ANN001
    """Single test runs (repeat=1) round robin for ``seconds``: the kernel's duration of each
    summed, the wall time of the calls, what the cache counted."""
    run = sw.run_many
    durations: list[int] = []
    nf = len(frames)
    before = cache_counts(sw)
    start = time.perf_counter()
    deadline = start + seconds
    while len(durations) < max_runs:
        durations.append(run(CLIENT_PORT, frames[len(durations) % nf], 1))
        if len(durations) % 64 == 0 and time.perf_counter() >= deadline:
            break
    wall = time.perf_counter() - start
    n = len(durations)
    mean = sum(durations) / n
    return {"runs": n, "kernel_ns_mean": round(mean, 1),
            "kernel_ns_median": statistics.median(durations),
            "pps": round(1e9 / mean, 1), "call_wall_ns": round(wall * 1e9 / n, 1),
            "syscall_overhead_ns": round(wall * 1e9 / n - mean, 1), "wall_s": round(wall, 4),
            "counted": _counted(before, cache_counts(sw))}


def xdp_repeat(sw, frames: list[bytes], repeat: int) -> dict:  # noqa: ANN001
    """One BPF_PROG_TEST_RUN with ``repeat`` runs per frame: the kernel's mean per run, over
    the frames (each the same number of runs)."""
    before = cache_counts(sw)
    start = time.perf_counter()
    per_frame = [sw.run_many(CLIENT_PORT, f, repeat) for f in frames]
    wall = time.perf_counter() - start
    mean = sum(per_frame) / len(per_frame)
    return {"frames": len(frames), "repeat": repeat, "runs": len(frames) * repeat,
            "kernel_ns_mean": round(mean, 1), "pps": round(1e9 / mean, 1),
            "wall_s": round(wall, 4), "counted": _counted(before, cache_counts(sw))}


def xdp_repeat_on_hit(sw, w: Workload) -> dict:  # noqa: ANN001
    """What a repeated test run of a hit counts: the evidence that repeat cannot time hits."""
    before = cache_counts(sw)
    ns = sw.run_many(CLIENT_PORT, w.frames("hit")[0], XDP_REPEAT_PROBE)
    return {"repeat": XDP_REPEAT_PROBE, "kernel_ns_mean": ns,
            "counted": _counted(before, cache_counts(sw))}


# -- (ii) through veth

def _install(grpc_addr: str, prog, wls: list[Workload]) -> int:  # noqa: ANN001 - a Program
    """Pipeline and entries over P4Runtime, values by packet-out; returns the acks applied."""
    import p4runtime_sh.shell as sh

    from p4cache import dataplane as dp

    with contextlib.redirect_stdout(io.StringIO()):
        sh.setup(device_id=0, grpc_addr=grpc_addr, election_id=(0, 1),
                 config=sh.FwdPipeConfig(str(prog.p4info_path), str(prog.json_path)))
        try:
            for table, keys, action, params in table_entries(wls):
                te = sh.TableEntry(table)(action=action)
                for name, value, plen in keys:
                    te.match[name] = str(value) if plen is None else (
                        f"{'.'.join(str(b) for b in value.to_bytes(4, 'big'))}/{plen}")
                for name, value in params:
                    te.action[name] = str(value)
                te.insert()
            sent = 0
            for w in wls:
                for i, reply in enumerate(w.replies):
                    sh.PacketOut(payload=update_frame(w.slot(i), 1, reply),
                                 egress_port="0").send()
                    sent += 1
            applied = 0
            for _ in range(sent):
                msg = sh.client.get_stream_packet("packet", timeout=10)
                if msg is None:
                    break
                if _ack_status(msg.packet.payload) == dp.STATUS_APPLIED:
                    applied += 1
        finally:
            sh.teardown()
    if applied != sent:
        raise RuntimeError(f"veth: {applied} of {sent} packet-out updates acknowledged applied")
    return applied


@contextlib.contextmanager
def veth_rig(prog, wls: list[Workload]):  # noqa: ANN001, ANN201 - yields (sender, receivers)
    """client - softnic run - server, the cache filled; sender and both receivers running."""
    from softnic.netns import Topology

    with (Topology(2) as topo,
          softnic_run(topo, ["--cpu-port", str(CPU_PORT)]) as grpc_addr,
          rig_agents(topo, grpc_addr, prog, wls) as agents):
        yield agents


@contextlib.contextmanager
def rig_agents(topo, grpc_addr: str, prog, wls: list[Workload]):  # noqa: ANN001, ANN201
    """The cache filled through ``grpc_addr``, then the client's sender and the receivers of
    hits (client) and misses (server) on ``topo``; yields (sender, {"hit": .., "miss": ..})."""
    from p4cache import dataplane as dp

    client, server = topo.hosts
    agents: list[Agent] = []
    try:
        _install(grpc_addr, prog, wls)
        agents.append(Agent(agent_argv(client, "send", client.ifname)))
        agents.append(Agent(agent_argv(client, "recv", client.ifname, str(CLIENT["udp"]))))
        agents.append(Agent(agent_argv(server, "recv", server.ifname,
                                       str(dp.MEMCACHED_PORT))))
        yield agents[0], {"hit": agents[1], "miss": agents[2]}
    finally:
        for a in agents:
            a.close()


def veth_step(sender: Agent, receiver: Agent, step: int, rate: float, count: int,
              expect_len: int, expect_ttl: int) -> dict:
    """Offer ``count`` requests at ``rate`` (0: saturation); answers counted, loss."""
    expect_s = count / rate if rate else count / 50_000
    receiver.write({"step": step, "count": count, "first_wait": 5.0 + expect_s, "idle": 0.5,
                    "tag": "memcache", "expect_len": expect_len, "expect_ttl": expect_ttl})
    sender.write({"step": step, "rate": rate, "count": count, "tag": "memcache"})
    s = sender.read()
    r = receiver.read()
    rates = step_rates(s, r)
    return {"target_pps": rate or None, **rates, "sent": s["sent"],
            "send_errors": s["send_errors"], "received": r["received"],
            "duplicates": r["duplicates"], "as_expected": r["as_expected"]}


def veth_sweeps(prog, wls: list[Workload], rates: list[int], count: int,  # noqa: ANN001
                repeats: int) -> dict[str, dict[str, dict]]:
    """Every rate step plus saturation per workload and kind, ``repeats`` rounds; medians."""
    runs: dict[tuple[str, str], list[list[dict]]] = {(w.name, k): [] for w in wls
                                                     for k in ("hit", "miss")}
    with veth_rig(prog, wls) as (sender, receivers):
        step = 0
        for rnd in range(repeats):
            for w in wls:
                for kind in ("hit", "miss"):
                    sender.write({"templates": [f.hex() for f in w.frames(kind)]})
                    sender.read()
                    ttl = 64 if kind == "hit" else REQUEST_TTL
                    sweep = []
                    for rate in [*rates, 0]:
                        step += 1
                        sweep.append(veth_step(sender, receivers[kind], step, rate, count,
                                               w.answer_len(kind), ttl))
                    runs[(w.name, kind)].append(sweep)
                    sat = sweep[-1]
                    print(f"  round {rnd + 1}/{repeats} {w.name} {kind:4s}: saturated "
                          f"{sat['delivered_pps']:.0f}/s, {sat['loss']:.1%} lost", flush=True)
    out: dict[str, dict[str, dict]] = {}
    for (name, kind), r in runs.items():
        out.setdefault(name, {})[kind] = summarize_sweeps(rates, r, "as_expected")
    return out


# -- driver

@dataclass
class Settings:
    repeats: int
    inproc_seconds: float
    inproc_max_packets: int
    veth_count: int
    veth_rates: list[int]
    key_lens: list[int]
    reply_lens: list[int]
    keys_per_workload: int = N_KEYS
    engine: str = "python"  # python, xdp or both (see the module doc)
    xdp_seconds: float = 1.0  # per batch of single test runs
    xdp_max_runs: int = 1_000_000
    xdp_repeat: int = 10_000  # runs per request of the repeated test runs (misses)
    xdp_repeat_frames: int = N_KEYS  # requests (of the 64) timed by repeated test runs


def _step_at(v: dict, rate: int) -> dict | None:
    return next((s for s in v["steps"] if s["target_pps"] == rate), None)


def check_targets(result: dict) -> dict:
    t = dict(TARGETS)
    w = result["results"].get(t["workload"])
    if w is None:
        return {**t, "note": "workload not measured"}
    if "inprocess" in w:
        got = w["inprocess"]["hit"]["median_pps"]
        t["inprocess_hits_measured_pps"] = got
        t["inprocess_met"] = got >= t["inprocess_hits_pps"]
    if "veth" in w:
        v = w["veth"]["hit"]
        s = _step_at(v, t["veth_hits_pps"])
        t["veth_hits_max_rate_pps"] = v["max_rate_under_1pct_loss_pps"]
        if s is None:
            t["veth_met"] = v["max_rate_under_1pct_loss_pps"] >= t["veth_hits_pps"]
        else:
            t["veth_step_at_target"] = {k: s[k] for k in ("offered_pps", "delivered_pps",
                                                           "loss")}
            t["veth_met"] = (s["loss"] < LOSS_OK
                             and s["delivered_pps"] >= KEEP_UP * s["offered_pps"])
    if "xdp" in w:
        t["xdp"] = check_xdp_targets(w)
    return t


def check_xdp_targets(w: dict) -> dict:
    """The issue's targets for the xdp engine against one workload's medians (not asserted)."""
    x = w["xdp"]
    t = dict(XDP_TARGETS)
    t["hits_timed"] = TIMED["xdp_hit"]
    t["measured_hits_pps"] = x["hit"]["median_pps"]
    t["measured_ns_per_hit"] = x["hit"]["median_ns"]
    t["hits_met"] = x["hit"]["median_pps"] >= t["hits_pps"]
    t["measured_over_python"] = w["xdp_over_python"]["hit"]
    t["over_python_met"] = w["xdp_over_python"]["hit"] >= t["over_python"]
    return t


def _ns(pps: float) -> float:
    return round(1e9 / pps, 1) if pps else 0.0


def run_bench(settings: Settings, modes: list[str]) -> dict:
    from p4cache.program import build

    t0 = time.monotonic()
    prog = build()
    wls = workloads(settings.key_lens, settings.reply_lens)
    result: dict = {"machine": machine_info(), "settings": asdict(settings),
                    "program": {"source": "p4src/v1model/p4cache.p4",
                                "json": shown(prog.json_path)},
                    "targets": {}, "reference": REFERENCE,
                    "results": {w.name: {"key_bytes": w.key_len, "reply_bytes": w.reply_len,
                                         "request_frame_bytes": w.answer_len("miss"),
                                         "reply_frame_bytes": w.answer_len("hit")}
                                for w in wls}}
    if "inprocess" in modes:
        with contextlib.ExitStack() as stack:
            sw = inprocess_switch(prog.json_path, wls)
            xsw = None
            if settings.engine in ("xdp", "both"):
                build_dir = Path(stack.enter_context(
                    tempfile.TemporaryDirectory(prefix="p4cache-bench-xdp-")))
                t = time.monotonic()
                xsw, checks = xdp_switch(prog.json_path, wls, build_dir)
                stack.callback(xsw.close)
                verifier = {k: v for k, v in xsw.verifier_stats().items() if k != "id"}
                result["xdp"] = {
                    "engine": "softnic.runtime.xdp.engine.XdpSwitch",
                    "setup_s": round(time.monotonic() - t, 2), "verifier": verifier,
                    "timed": TIMED,
                    # the first hit and miss per workload, compared byte for byte with the
                    # expected reply / the request (a mismatch stops the benchmark)
                    "checked": checks,
                    "repeat_on_hits": {w.name: xdp_repeat_on_hit(xsw, w) for w in wls}}
                print(f"xdp engine: program loaded, {verifier['xlated_insns']} insns "
                      f"({verifier['jited_bytes']} bytes JITed), the verifier went through "
                      f"{verifier['verified_insns']}", flush=True)
            runs: dict[tuple[str, str, str], list[dict]] = {}
            for _ in range(settings.repeats):
                for w in wls:
                    for kind in ("hit", "miss"):
                        frames = w.frames(kind)
                        runs.setdefault(("python", w.name, kind), []).append(
                            inprocess_pps(sw, frames, settings.inproc_seconds,
                                          settings.inproc_max_packets))
                        if xsw is None:
                            continue
                        runs.setdefault(("xdp", w.name, kind), []).append(
                            xdp_single(xsw, frames, settings.xdp_seconds,
                                       settings.xdp_max_runs))
                        if kind == "miss":
                            runs.setdefault(("xdp-repeat", w.name, kind), []).append(
                                xdp_repeat(xsw, frames[:settings.xdp_repeat_frames],
                                           settings.xdp_repeat))
            if xsw is not None:
                result["xdp"]["engine_stats"] = xsw.stats()
        for w in wls:
            res = result["results"][w.name]
            entry = res["inprocess"] = {}
            for kind in ("hit", "miss"):
                r = runs[("python", w.name, kind)]
                entry[kind] = {"median_pps": median(r), "runs": r}
            print(f"{w.name:9s} in-process: hits {entry['hit']['median_pps']:>9.1f}/s, "
                  f"misses {entry['miss']['median_pps']:>9.1f}/s", flush=True)
            if xsw is None:
                continue
            res["xdp"] = xdp_summary(runs[("xdp", w.name, "hit")],
                                     runs[("xdp", w.name, "miss")],
                                     runs[("xdp-repeat", w.name, "miss")])
            res["xdp_over_python"] = {k: round(res["xdp"][k]["median_pps"]
                                               / entry[k]["median_pps"], 1)
                                      for k in ("hit", "miss")}
            x, q = res["xdp"], res["xdp_over_python"]
            print(f"{w.name:9s} xdp:        hits {x['hit']['median_pps']:>9.0f}/s "
                  f"({x['hit']['median_ns']:.0f} ns, x{q['hit']}), misses "
                  f"{x['miss']['median_pps']:>9.0f}/s ({x['miss']['median_ns']:.0f} ns, "
                  f"x{q['miss']}); a call from Python {x['hit']['call_wall_ns']:.0f} ns",
                  flush=True)
    if "veth" in modes:
        v = veth_sweeps(prog, wls, settings.veth_rates, settings.veth_count, settings.repeats)
        for w in wls:
            result["results"][w.name]["veth"] = v[w.name]
            for kind in ("hit", "miss"):
                s = v[w.name][kind]
                print(f"{w.name:9s} veth {kind:4s}: max {s['max_rate_under_1pct_loss_pps']}/s "
                      f"with <1% loss; saturated {s['saturated_delivered_pps']:.0f}/s "
                      f"delivered, {s['saturated_loss']:.1%} lost", flush=True)
    result["targets"] = check_targets(result)
    result["duration_s"] = round(time.monotonic() - t0, 1)
    result["machine"]["loadavg_at_end"] = list(os.getloadavg())
    return result


def xdp_summary(hit_single: list[dict], miss_single: list[dict],
                miss_repeat: list[dict]) -> dict:
    """Medians of one workload's xdp runs: hits timed as single runs, misses as repeated runs
    (and as single runs, to compare)."""
    def single(r: list[dict]) -> dict:
        pps = median(r)
        return {"median_pps": pps, "median_ns": _ns(pps),
                "call_wall_ns": median(r, "call_wall_ns"),
                "syscall_overhead_ns": median(r, "syscall_overhead_ns")}

    hit = {**single(hit_single), "timed": "single runs (repeat=1)", "runs": hit_single}
    s = {**single(miss_single), "runs": miss_single}
    pps = median(miss_repeat)
    miss = {"median_pps": pps, "median_ns": _ns(pps),
            "timed": f"repeated runs (repeat={miss_repeat[0]['repeat']})",
            "call_wall_ns": s["call_wall_ns"], "syscall_overhead_ns": s["syscall_overhead_ns"],
            "runs": miss_repeat, "single": s,
            "single_minus_repeat_ns": round(s["median_ns"] - _ns(pps), 1)}
    return {"hit": hit, "miss": miss}


def markdown_table(result: dict) -> str:
    """The medians side by side, as docs/bench-dataplane.md shows them."""
    def k(v: float) -> str:
        return f"{v / 1000:.1f}k"

    lines = ["| key / reply bytes | in-process hits/s | in-process misses/s "
             "| veth hits: max rate < 1 % loss | veth hits: saturated "
             "| veth misses: max rate < 1 % loss | veth misses: saturated |",
             "|---|---|---|---|---|---|---|"]
    for w in result["results"].values():
        cells = [f"{w['key_bytes']} / {w['reply_bytes']}"]
        for kind in ("hit", "miss"):
            ip = w.get("inprocess", {}).get(kind)
            cells.append(k(ip["median_pps"]) if ip else "-")
        for kind in ("hit", "miss"):
            v = w.get("veth", {}).get(kind)
            if v is None:
                cells += ["-", "-"]
                continue
            cells.append(f"{k(v['max_rate_under_1pct_loss_pps'])} "
                         f"({k(v['delivered_at_max_rate_pps'])} delivered)")
            cells.append(f"{k(v['saturated_delivered_pps'])} ({v['saturated_loss']:.1%} lost)")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _rate(v: float) -> str:
    if v >= 1e6:
        return f"{v / 1e6:.2f}M"
    return f"{v / 1e3:.0f}k" if v >= 1e5 else f"{v / 1e3:.1f}k"


def engine_table(result: dict) -> str:
    """The two engines side by side: medians per workload, the ratio, what a call costs."""
    lines = ["| key / reply bytes | Python hits/s | xdp hits/s (ns) | xdp / Python "
             "| Python misses/s | xdp misses/s (ns) | xdp / Python "
             "| xdp called from Python, ns per frame (hit / miss) |",
             "|---|---|---|---|---|---|---|---|"]
    for w in result["results"].values():
        x = w.get("xdp")
        if x is None:
            continue
        cells = [f"{w['key_bytes']} / {w['reply_bytes']}"]
        for kind in ("hit", "miss"):
            cells += [_rate(w["inprocess"][kind]["median_pps"]),
                      f"{_rate(x[kind]['median_pps'])} ({x[kind]['median_ns']:.0f})",
                      f"{w['xdp_over_python'][kind]:.1f}x"]
        cells.append(f"{x['hit']['call_wall_ns']:.0f} / {x['miss']['call_wall_ns']:.0f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def print_summary(result: dict) -> None:
    print(markdown_table(result))
    if "xdp" in result:
        x = result["xdp"]
        print(engine_table(result))
        print("xdp: hits timed as single runs (the kernel's duration of each, repeat=1: repeat "
              "cannot time hits), misses as repeated runs; in-kernel program time per frame, "
              "no syscall. Python: process_packet in-process.")
        v = x["verifier"]
        print(f"xdp program: {v['xlated_insns']} insns, {v['jited_bytes']} bytes JITed, "
              f"{v['verified_insns']} insns verified")
    t = result["targets"]
    print(f"targets ({t['workload']}): hits >= {t['inprocess_hits_pps']}/s in-process, "
          f">= {t['veth_hits_pps']}/s through veth with < {t['veth_max_loss']:.0%} loss")
    if "inprocess_met" in t:
        print(f"  in-process: {t['inprocess_hits_measured_pps']:.0f}/s -> "
              f"{'met' if t['inprocess_met'] else 'NOT met'}")
    if "veth_met" in t:
        s = t.get("veth_step_at_target")
        detail = (f"step {t['veth_hits_pps']}/s: {s['delivered_pps']:.0f}/s delivered, "
                  f"{s['loss']:.2%} lost" if s else "no step at the target rate")
        print(f"  veth: {detail}; max {t['veth_hits_max_rate_pps']}/s -> "
              f"{'met' if t['veth_met'] else 'NOT met'}")
    if "xdp" in t:
        x = t["xdp"]
        print(f"xdp targets ({x['workload']}, one core): hits >= {x['hits_pps']:,}/s "
              f"(<= {x['ns_per_hit']} ns), >= {x['over_python']}x the Python engine")
        print(f"  measured: {x['measured_hits_pps']:,.0f} hits/s ({x['measured_ns_per_hit']:.0f} "
              f"ns, single runs) -> {'met' if x['hits_met'] else 'NOT met'}; "
              f"{x['measured_over_python']}x -> {'met' if x['over_python_met'] else 'NOT met'}")
    r = REFERENCE
    print(f"reference (quoted, not measured here): BMv2 {r['bmv2_default_hits_pps']}/s default "
          f"build, {r['bmv2_nolog_hits_pps']}/s without logging ({r['probe']})")


def plot(result: dict, path: Path) -> bool:
    """Grouped bars: in-process and veth, hits and misses per workload; below, when the xdp
    engine was measured, both engines per workload (log scale)."""
    if (plt := pyplot()) is None:
        return False
    res = result["results"]
    names = list(res)
    if "xdp" in result:
        fig = plt.figure(figsize=(12, 10.5))
        grid = fig.add_gridspec(2, 2, height_ratios=[1, 1.1])
        ax1, ax2 = fig.add_subplot(grid[0, 0]), fig.add_subplot(grid[0, 1])
        plot_engines(result, fig.add_subplot(grid[1, :]))
    else:
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 5))
    what = {"hit": "hits answered", "miss": "misses forwarded"}
    width = 0.38
    colors = {"hit": "#4c72b0", "miss": "#dd8452"}
    xs = range(len(names))
    # in-process
    for j, kind in enumerate(("hit", "miss")):
        vals = [res[n].get("inprocess", {}).get(kind, {}).get("median_pps", 0.0) for n in names]
        bars = ax1.bar([x + (j - 0.5) * width for x in xs], vals, width, color=colors[kind],
                       label=what[kind])
        ax1.bar_label(bars, labels=[f"{v / 1000:.1f}k" for v in vals], fontsize=7)
    tgt = result["targets"]
    ax1.axhline(tgt["inprocess_hits_pps"], color="#4c72b0", lw=0.8, ls="--")
    ax1.text(len(names) - 0.5, tgt["inprocess_hits_pps"], "hit target (k16-r100)",
             ha="right", va="bottom", fontsize=7)
    ax1.set_title("in-process (engine only, no I/O)", fontsize=10)
    ax1.set_ylabel("requests / s (median of repeats)")
    # veth
    for j, kind in enumerate(("hit", "miss")):
        vals, sats = [], []
        for n in names:
            v = res[n].get("veth", {}).get(kind)
            vals.append(v["max_rate_under_1pct_loss_pps"] if v else 0)
            sats.append(v["saturated_delivered_pps"] if v else 0)
        pos = [x + (j - 0.5) * width for x in xs]
        bars = ax2.bar(pos, vals, width, color=colors[kind],
                       label=f"{what[kind]}: max rate with < 1 % loss")
        ax2.bar_label(bars, labels=[f"{v / 1000:.0f}k" for v in vals], fontsize=7)
        ax2.plot(pos, sats, "_", ms=16, mew=2, color="black" if j == 0 else "#7f3f00",
                 label=f"{what[kind]}: delivered at saturation")
    ax2.axhline(tgt["veth_hits_pps"], color="#4c72b0", lw=0.8, ls="--")
    ax2.text(len(names) - 0.5, tgt["veth_hits_pps"], "hit target (k16-r100)", ha="right",
             va="bottom", fontsize=7)
    ref = result["reference"]
    for val, label in ((ref["bmv2_default_hits_pps"], "BMv2 default (quoted)"),
                       (ref["bmv2_nolog_hits_pps"], "BMv2 no logging (quoted)")):
        ax2.axhline(val, color="grey", lw=0.8, ls=":")
        ax2.text(-0.5, val, label, ha="left", va="bottom", fontsize=7, color="grey")
    ax2.set_title("through veth (softnic run, P4Runtime, open-loop steps)", fontsize=10)
    ax2.set_ylabel("requests / s (median of repeats)")
    for ax in (ax1, ax2):
        ax.set_xticks(list(xs), [n.replace("-", "\n") for n in names])
        ax.set_xlabel("key bytes / reply bytes")
        ax.margins(y=0.18)
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2,
                  frameon=False)
    m = result["machine"]
    fig.suptitle(f"p4cache data plane on softnic - {m['cpus']} CPUs, Python {m['python']}, "
                 f"commit {m['git_commit']}"
                 + (" + local changes" if m.get("git_modified_files") else ""), fontsize=9)
    save_figure(fig, path)
    return True


def plot_engines(result: dict, ax) -> None:  # noqa: ANN001 - a matplotlib Axes
    """Per workload: hits and misses on the Python engine (in-process) and the xdp engine (in
    the kernel), the ratio over each xdp bar, and the xdp engine called from Python."""
    res = {n: w for n, w in result["results"].items() if "xdp" in w}
    names = list(res)
    xs = range(len(names))
    width = 0.2
    bars = (("hit", "inprocess", "#9bb3d6", "hits, Python engine"),
            ("hit", "xdp", "#1f4e9c", "hits, xdp engine"),
            ("miss", "inprocess", "#f0bf98", "misses, Python engine"),
            ("miss", "xdp", "#b5520f", "misses, xdp engine"))
    for j, (kind, engine, color, label) in enumerate(bars):
        vals = [res[n][engine][kind]["median_pps"] for n in names]
        pos = [x + (j - 1.5) * width for x in xs]
        b = ax.bar(pos, vals, width, color=color, label=label)
        labels = [_rate(v) for v in vals]
        if engine == "xdp":
            labels = [f"{lab}\n{res[n]['xdp_over_python'][kind]:.0f}x"
                      for lab, n in zip(labels, names, strict=True)]
            called = [1e9 / res[n]["xdp"][kind]["call_wall_ns"] for n in names]
            ax.plot(pos, called, "_", ms=14, mew=2, color="black",
                    label="xdp engine called from Python (syscall included)" if j == 1 else None)
        ax.bar_label(b, labels=labels, fontsize=7)
    tgt = XDP_TARGETS
    ax.axhline(tgt["hits_pps"], color="#1f4e9c", lw=0.8, ls="--")
    ax.text(len(names) - 0.5, tgt["hits_pps"], f"xdp hit target ({tgt['workload']}, one core)",
            ha="right", va="bottom", fontsize=7)
    ax.set_yscale("log")
    ax.set_ylim(1e3, ax.get_ylim()[1] * 4)
    ax.set_xticks(list(xs), [n.replace("-", " / ") for n in names])
    ax.set_xlabel("key bytes / reply bytes")
    ax.set_ylabel("requests / s (median of repeats, log)")
    rep = next(iter(res.values()))["xdp"]["miss"]["runs"][0]["repeat"]
    ax.set_title("Python engine in-process (process_packet calls, wall time) vs xdp engine in the "
                 "kernel (BPF_PROG_TEST_RUN's own duration:\nin-kernel program time per frame, no "
                 f"syscall; hits as single runs, misses as repeat={rep}); ratio xdp / Python over "
                 "the xdp bars", fontsize=9)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=5,
              frameon=False)


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",")]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="p4cache-bench dataplane",
                                 description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="short smoke run (1 repeat, 0.3 s in-process, 1000 requests per step)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--veth-count", type=int,
                    help="requests offered per veth rate step (default 10000, --quick 1000)")
    ap.add_argument("--rates", type=_ints,
                    help="comma-separated offered rates in requests/s (saturation is always "
                         f"added; default {','.join(map(str, DEFAULT_RATES))})")
    ap.add_argument("--inproc-seconds", type=float, default=3.0)
    ap.add_argument("--keys", type=_ints, default=list(KEY_LENS),
                    help="key lengths in bytes (default 16,64)")
    ap.add_argument("--replies", type=_ints, default=list(REPLY_LENS),
                    help="reply lengths in bytes (default 100,500)")
    ap.add_argument("--mode", choices=["inprocess", "veth"], action="append",
                    help="default: both, in-process only with --engine xdp (veth is always the "
                         "Python engine)")
    ap.add_argument("--engine", choices=ENGINES,
                    help="python; xdp (the xdp engine timed by the kernel, next to the Python "
                         "engine in-process); both (default when the xdp engine can run here, "
                         "else python)")
    ap.add_argument("--xdp-seconds", type=float, default=1.0,
                    help="seconds per batch of single xdp test runs (--quick 0.1)")
    ap.add_argument("--xdp-repeat", type=int, default=10_000,
                    help="test runs per request of the repeated xdp runs (--quick 200, on 8 "
                         "of the 64 requests)")
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--plot", type=Path, default=PLOT)
    args = ap.parse_args(argv)
    count = args.veth_count or (1000 if args.quick else 10_000)
    if not 1 <= count <= 1 << 16:
        ap.error("--veth-count must be 1..65536 (the request id carries the sequence number)")
    engine = args.engine
    if engine is None:
        reason = xdp_unavailable_reason()
        engine = "both" if reason is None else "python"
        if reason is not None:
            print(f"p4cache-bench: the xdp engine cannot run here ({reason}); Python engine only",
                  file=sys.stderr)
    elif engine != "python" and (reason := xdp_unavailable_reason()) is not None:
        ap.error(f"--engine {engine}: the xdp engine cannot run here: {reason}")
    modes = args.mode or (["inprocess"] if engine == "xdp" else ["inprocess", "veth"])
    if engine == "xdp" and "inprocess" not in modes:
        ap.error("--engine xdp is measured in the in-process mode (add --mode inprocess)")
    if args.xdp_repeat < 1 or args.xdp_seconds <= 0:
        ap.error("--xdp-repeat must be >= 1 and --xdp-seconds > 0")
    settings = Settings(repeats=1 if args.quick else args.repeats,
                        inproc_seconds=0.3 if args.quick else args.inproc_seconds,
                        inproc_max_packets=100_000 if args.quick else 2_000_000,
                        veth_count=count,
                        veth_rates=args.rates or (QUICK_RATES if args.quick else DEFAULT_RATES),
                        key_lens=args.keys, reply_lens=args.replies, engine=engine,
                        xdp_seconds=0.1 if args.quick else args.xdp_seconds,
                        xdp_repeat=200 if args.quick else args.xdp_repeat,
                        # a repeated test run costs ~15 ms of wall time beside the runs
                        xdp_repeat_frames=8 if args.quick else N_KEYS)
    if "veth" in modes and os.geteuid() != 0:
        print("p4cache-bench: the veth mode needs root; running in-process only", file=sys.stderr)
        modes = [m for m in modes if m != "veth"]
    result = run_bench(settings, modes)
    print_summary(result)
    write_results(result, args.out, indent=2)
    if plot(result, args.plot):
        print(f"plot: {args.plot}")
    else:
        print("plot skipped: matplotlib is not installed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
