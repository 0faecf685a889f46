"""GETs answered per second and GET latency with the cache's program on memcached's own
interface (the xdp engine, host placement), against memcached alone and the Python engine.

The issue: "`p4cache-bench hostpath`: GETs answered per second and latency (p50/p99) for 16-byte
keys and 100-byte values, Zipf 0.99, 95 % GET: memcached alone; memcached behind the xdp engine on
its interface; the same through the Python engine." Targets: with the xdp engine >= 5x memcached
alone in GETs answered per second at < 1 % loss, and hit p50 <= 0.3x the miss p50.

Two labs are up for the whole run (p4cache.lab): ``xdp`` (LabSpec target xdp, placement host: the
program on the server's eth0, no P4 switch, the hosts on a kernel bridge) and ``python`` (the
Python engine as the switch between client and server; it cannot sit on a host's interface).
Both load the same keys (16 bytes, 100-byte values) straight into memcached's backend port with
p4cache-loadgen --preload. Every repetition then runs, in this order:

1. warm-up of the xdp lab's cache: UDP GETs, Zipf 0.99, at ``warm_rate`` for ``warm_s``; the
   controller promotes keys seen HOT_THRESHOLD times in an epoch, so the hit share depends on
   the request rate (a rank is cached once it is asked >= 8 times a second);
2. ``ceiling``: the generator against the fastest responder there is, the xdp program with only
   the ``ceiling_keys`` hottest keys asked (all cached): every reply comes from XDP;
3. ``xdp``: open-loop rate sweep, UDP GETs (95 % of the rate) and, at once, SETs (5 %) over TCP
   through the agent's write gate (a UDP SET flushes the whole cache, docs/dataplane.md);
4. ``live``: the generator's ceiling is far below the kernel's, so the xdp path is also driven
   from inside the kernel with BPF_PROG_TEST_RUN's live-frames mode (below), controller stopped
   so that the frames' miss keys do not become hot;
5. ``memcached``: the switch process killed and the program detached from eth0; the same sweep
   (GETs and SETs both over UDP: nothing to invalidate) against memcached alone; then the switch
   and the controller started again (the next repetition warms the cache anew);
6. ``python``: the sweep through the Python engine's lab (warmed first at ``python_warm_rate``).

Sweeps are p4cache-loadgen from the client namespace (docs/loadgen.md): rate steps, replies
classed switch/memcached by UDP checksum 0. A step's "GETs answered" is its GET replies (VALUE or
END) per second of its window; a configuration's max rate is its highest step with < 1 % of the
requests unanswered after 1 s and the generator sending >= 97 % of the offered rate. Latency
(p50/p99 from the scheduled send time) of switch hits and memcached replies is read at
``lat_rate``, a step every sweep has, below every configuration's max.

Live frames (BPF_F_TEST_XDP_LIVE_FRAMES, kernel >= 5.18), run inside the server's namespace so
that the context's ingress_ifindex is its eth0: frames the program redirects are really
transmitted, XDP_PASS frames go up the stack to memcached. The kernel copies the frame into its
page-pool pages once, when a page is first allocated; a recycled page keeps whatever the program
left in it (only the data pointers are reset, net/bpf/test_run.c ``reset_ctx``), so after the
first batch a hit would run on its own reply (checked: 256 hits per call whatever the repeat).
A small restore program (``LIVE_C``) therefore writes the request back, taking the frames in turn
from a 128-entry array, and tail-calls the attached p4cache program (a new fd of it by id);
with the tail-call slot empty it returns XDP_PASS: memcached alone, fed as fast as the kernel
injects. Counted: the client's eth0 RX packets (replies that really arrived) and memcached's
``cmd_get`` delta per second of wall time, over ``live_s`` of back-to-back calls:

- ``live_hits``: cached keys through the program (every reply from XDP);
- ``live_misses``: uncached keys through the program (XDP_PASS to memcached);
- ``live_mixed``: hits and misses in the proportion the xdp sweep's hit share ``h`` measured;
- ``live_memcached``: the same mixed frames, XDP_PASS without the program: memcached alone.

The ratio the target asks is ``live_mixed`` over ``live_memcached`` (one measurement each,
interleaved), next to the sweeps' max rates. The restore program's cost (a map lookup, a store
of the frame, a tail call) is in the xdp figures and not in memcached's.

Run: ``p4cache-bench hostpath`` (root, the xdp engine's requirements, p4cache-loadgen);
``--quick`` for a smoke run. Results: ``bench/results/hostpath.json``, ``docs/bench_hostpath.png``.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from p4cache import paths
from p4cache.workload.clients import memcached_stats
from p4cache_bench.common import (
    KEEP_UP,
    LOSS_OK,
    loadavg,
    machine_info,
    needs_root,
    plot_title,
    progress_bar,
    pyplot,
    report,
    save_figure,
)

RESULTS = paths.bench_results() / "hostpath.json"
PLOT = paths.bench_plots() / "bench_hostpath.png"
CONFIGS = ("ceiling", "xdp", "memcached", "python")
LIVE = ("live_hits", "live_misses", "live_mixed", "live_mixed_nowrites", "live_memcached")
TARGETS = {"over_memcached": 5.0, "max_loss": LOSS_OK, "hit_p50_over_miss_p50": 0.3,
           "source": "the issue (p4cache-bench hostpath)"}
BMC = {"source": "BMC (Ghigoff et al., NSDI 2021), quoted, not measured here",
       "speedup_over_memcached": 18, "cores": 8, "nic": "40 GbE, driver-mode XDP"}
KEY_SIZE, VALUE_SIZE, ZIPF, GET_PCT = 16, 100, 0.99, 95.0
LIVE_FRAMES = 128          # the restore program's frame array
LIVE_REPEAT = 1 << 16      # frames per BPF_PROG_TEST_RUN call
LIVE_BATCH = 64            # frames per batch (the kernel's default)


@dataclass
class Settings:
    keys: int = 20_000
    reps: int = 3
    rates: list[int] = field(default_factory=lambda: [
        2000, 10_000, 20_000, 30_000, 40_000, 50_000, 60_000, 80_000])
    python_rates: list[int] = field(default_factory=lambda: [1000, 2000, 3000, 5000, 8000])
    lat_rate: int = 2000          # the common rate of the latency comparison
    target_lat_rate: int = 10_000  # xdp's hit p50 against its miss p50 (the target)
    step_s: float = 2.5
    warmup_s: float = 0.5
    warm_rate: int = 20_000
    warm_s: float = 15.0
    python_warm_rate: int = 2000
    python_warm_s: float = 8.0
    ceiling_keys: int = 32
    live_s: float = 3.0
    slots: int | None = None   # the program's (4096)
    seed: int = 1


QUICK = Settings(keys=2000, reps=1, rates=[2000, 10_000], python_rates=[1000],
                 step_s=1.0, warm_s=2.0, python_warm_s=2.0, live_s=0.5)


# ----------------------------------------------------------------------------- live frames

LIVE_C = """\
// p4cache-bench hostpath: restore the request a live-frames test run's recycled page held,
// then tail-call the program in slot 0 of `next` (empty: XDP_PASS, memcached alone).
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#define NFRAMES @NFRAMES@
#define MAXLEN 128
struct frame { __u32 len; __u8 data[MAXLEN]; };
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, NFRAMES);
         __type(key, __u32); __type(value, struct frame); } frames SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY); __uint(max_entries, 1);
         __type(key, __u32); __type(value, __u64); } seq SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_PROG_ARRAY); __uint(max_entries, 1);
         __type(key, __u32); __type(value, __u32); } next SEC(".maps");

SEC("xdp.frags")
int restore(struct xdp_md *ctx)
{
    __u32 zero = 0;
    __u64 *n = bpf_map_lookup_elem(&seq, &zero);
    if (!n)
        return XDP_ABORTED;
    __u32 i = (__u32)(*n % NFRAMES);
    *n += 1;
    struct frame *f = bpf_map_lookup_elem(&frames, &i);
    if (!f)
        return XDP_ABORTED;
    __u32 len = f->len;
    if (len == 0 || len > MAXLEN)
        return XDP_ABORTED;
    if (bpf_xdp_store_bytes(ctx, 0, f->data, len))
        return XDP_ABORTED;
    bpf_tail_call(ctx, &next, 0);
    return XDP_PASS;
}
char LICENSE[] SEC("license") = "GPL";
""".replace("@NFRAMES@", str(LIVE_FRAMES))


def get_frame(rank: int, server: dict, client: dict, sport: int = 40001) -> bytes:
    """A client's UDP ``get`` of rank ``rank``'s key, as it arrives at the server's eth0."""
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether

    from p4cache import dataplane as dp
    from p4cache_bench.cachelab import key_of

    return bytes(Ether(dst=server["mac"], src=client["mac"])
                 / IP(src=client["ip"], dst=server["ip"], ttl=64)
                 / UDP(sport=sport, dport=dp.MEMCACHED_PORT)
                 / dp.get_request(rank & 0xFFFF, key_of(rank)))


def mixed(hits: list[bytes], misses: list[bytes], h: float, n: int = LIVE_FRAMES) -> list[bytes]:
    """``n`` frames, round(h n) of them hits, spread evenly (Bresenham)."""
    out, acc, hi, mi = [], 0.0, 0, 0
    for _ in range(n):
        acc += h
        if acc >= 1.0 - 1e-9:
            acc -= 1.0
            out.append(hits[hi % len(hits)])
            hi += 1
        else:
            out.append(misses[mi % len(misses)])
            mi += 1
    return out


def _memcached_gets(port: int) -> int:
    gets = memcached_stats(("127.0.0.1", port)).get("cmd_get")
    if gets is None:
        raise RuntimeError("memcached stats without cmd_get")
    return gets


def _rx_packets(ns: str, ifname: str = "eth0") -> int:
    out = subprocess.run(["ip", "-n", ns, "-j", "-s", "link", "show", ifname],
                         capture_output=True, text=True, check=True).stdout
    return int(json.loads(out)[0]["stats64"]["rx"]["packets"])


def live_worker(cmd: dict) -> dict:
    """Inside the server's namespace: each run in ``cmd["runs"]`` (name, frames as hex, through
    the program or not) for ``seconds`` of back-to-back live-frames test runs; per run the wall
    time, frames run, the client's RX packets and memcached's GETs."""
    from softnic.runtime.xdp import libbpf

    ifindex = socket.if_nametoindex("eth0")
    prog_id = libbpf.xdp_query_id(ifindex, "native")
    if not prog_id:
        raise RuntimeError("no XDP program on eth0")
    prog_fd = libbpf.prog_get_fd_by_id(prog_id)
    out: dict = {"prog_id": prog_id, "ifindex": ifindex, "runs": {}}
    with tempfile.TemporaryDirectory() as tmp:
        src, obj_path = Path(tmp) / "live.c", Path(tmp) / "live.o"
        src.write_text(LIVE_C)
        libbpf.compile_c(src, obj_path)
        obj = libbpf.BpfObject.load(obj_path)
    try:
        rfd = obj.program_fd("restore")
        frames_map, next_map = obj.map("frames"), obj.map("next")
        zero = struct.pack("<I", 0)
        for run in cmd["runs"]:
            frames = [bytes.fromhex(f) for f in run["frames"]]
            for i in range(LIVE_FRAMES):  # every entry: an empty one would abort its runs
                f = frames[i % len(frames)]
                frames_map.update(struct.pack("<I", i),
                                  struct.pack("<I", len(f)) + f.ljust(128, b"\0"))
            if run["program"]:
                next_map.update(zero, struct.pack("<I", prog_fd))
            else:
                next_map.delete(zero)
            rx0, gets0 = _rx_packets(cmd["client_ns"]), _memcached_gets(cmd["memcached_port"])
            t0 = time.perf_counter()
            calls = 0
            while time.perf_counter() - t0 < cmd["seconds"]:
                libbpf.test_run(rfd, frames[0], repeat=LIVE_REPEAT, live=True,
                                batch_size=LIVE_BATCH, ingress_ifindex=ifindex)
                calls += 1
            wall = time.perf_counter() - t0
            # what memcached answered in the window; its socket's backlog (a few hundred
            # datagrams) is left out: read at once, not after a drain
            gets = _memcached_gets(cmd["memcached_port"]) - gets0
            time.sleep(0.2)  # replies in flight on the bridge
            rx = _rx_packets(cmd["client_ns"]) - rx0
            out["runs"][run["name"]] = {
                "wall_s": round(wall, 3), "frames_run": calls * LIVE_REPEAT,
                "frames_per_s": round(calls * LIVE_REPEAT / wall),
                "client_rx": rx, "client_rx_per_s": round(rx / wall),
                "memcached_gets": gets, "memcached_gets_per_s": round(gets / wall),
                "hit_frames": run["hit_frames"], "frames": len(frames)}
    finally:
        obj.close()
        os.close(prog_fd)
    return out


# ----------------------------------------------------------------------------- the labs

class HostLab:
    """One lab (xdp host placement or the Python engine as switch) with keys loaded and the
    agent and controller up."""

    def __init__(self, lab, s: Settings) -> None:  # noqa: ANN001 - a started p4cache.lab.Lab
        from p4cache_bench import cachelab

        self.lab, self.s = lab, s
        self.server, self.client = lab.servers[0], lab.clients[0]
        lab.start_agent(0)
        self.cl = cachelab.CacheLab.__new__(cachelab.CacheLab)  # its controller helpers only
        self.cl.lab = lab
        self.cl.start_controller(s.slots)
        self.preload = self.loadgen_server(["--preload"], proto="tcp",
                                           server="127.0.0.1:11212").preload

    def loadgen_server(self, extra: list[str], proto: str, server: str):  # noqa: ANN201
        from p4cache.workload import loadgen
        from softnic import netns
        args = loadgen.argv([server], proto=proto, keys=self.s.keys, key_size=KEY_SIZE,
                            value_size=VALUE_SIZE, extra=extra)
        return loadgen.run(args, prefix=netns.exec_prefix(self.server.ns), timeout_s=120)

    def sweep(self, rates: list[int], keys: int | None = None, sets_over: str | None = "tcp",
              step_s: float | None = None, get_pct: float = GET_PCT) -> list[dict]:
        """One open-loop sweep from the client; SETs (100 - get_pct %) over TCP through the gate
        in a second generator at the same steps (``sets_over="tcp"``), or mixed into the UDP
        stream (``"udp"``), or none (None: 100 % GET)."""
        from p4cache.workload import loadgen
        from softnic import netns
        s = self.s
        step = step_s or s.step_s
        n = keys or s.keys
        udp_get = get_pct if sets_over == "udp" else 100.0
        udp_rates = rates if sets_over != "tcp" else [r * get_pct / 100 for r in rates]
        common = {"step_s": step, "warmup_s": s.warmup_s, "keys": n, "key_size": KEY_SIZE,
                  "value_size": VALUE_SIZE, "zipf": ZIPF, "seed": s.seed}
        srv = f"{self.server.ip}:11211"
        prefix = netns.exec_prefix(self.client.ns)
        tcp = None
        if sets_over == "tcp":
            targs = loadgen.argv([srv], proto="tcp", rates=[r - u for r, u in
                                                             zip(rates, udp_rates, strict=True)],
                                 get_pct=0.0, conns=1, **common)
            tcp = subprocess.Popen([*prefix, str(loadgen.find_binary()), *targs, "--json", "-"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            rep = loadgen.run(loadgen.argv([srv], proto="udp", rates=udp_rates, get_pct=udp_get,
                                           **common), prefix=prefix,
                              timeout_s=len(rates) * step + 60)
        finally:
            tset = None
            if tcp is not None:
                out, err = tcp.communicate(timeout=120)
                try:
                    tset = json.loads(out)["steps"]
                except (json.JSONDecodeError, KeyError):
                    tset = None
        steps = []
        for i, (rate, st) in enumerate(zip(rates, rep.steps, strict=True)):
            gets = st.kinds["value"] + st.kinds["miss"]
            sw = st.latency["switch"][0]
            mc = st.latency["memcached"][0]
            row = {
                "rate": rate, "udp_rate": round(udp_rates[i]), "sent": st.sent,
                "send_rate": round(st.send_rate), "gets": st.gets, "loss": round(
                    st.loss_fraction, 5),
                "gets_answered_per_s": round(gets / st.window_s) if st.window_s else 0,
                "replies_per_s": {k: round(v) for k, v in st.replies_per_s.items()},
                "switch_share": round(st.replies["switch"] / st.replies["all"], 4)
                if st.replies["all"] else 0.0,
                "hit_fraction": round(st.hit_fraction, 4),
                "switch_us": {"n": sw.count, "p50": sw.p50_us, "p99": sw.p99_us},
                "memcached_us": {"n": mc.count, "p50": mc.p50_us, "p99": mc.p99_us},
                "send_lag_p99_us": st.send_lag.p99_us}
            if tset is not None and i < len(tset):
                row["tcp_sets"] = {"sent": tset[i]["sent"], "loss": round(
                    tset[i]["loss_fraction"], 5)}
            steps.append(row)
        return steps

    def warm(self, rate: int, seconds: float) -> dict:
        """Zipf GETs at ``rate`` until the cache holds what that rate makes hot; the last step's
        switch share."""
        n = max(2, int(seconds // 3))
        steps = self.sweep([rate] * n, sets_over=None, step_s=seconds / n)
        return {"rate": rate, "seconds": seconds,
                "switch_share_by_step": [st["switch_share"] for st in steps]}


def max_rate(steps: list[dict]) -> dict | None:
    ok = [st for st in steps
          if st["loss"] < LOSS_OK and st["send_rate"] >= KEEP_UP * st["udp_rate"]]
    return max(ok, key=lambda st: st["rate"]) if ok else None


def at_rate(steps: list[dict], rate: int) -> dict | None:
    return next((st for st in steps if st["rate"] == rate), None)


def detach(lab) -> None:  # noqa: ANN001 - a Lab
    """memcached alone: the switch process killed, the program off eth0."""
    from softnic import netns

    lab.kill("switch")
    for mode in ("xdpdrv", "xdpgeneric"):
        netns.run(["ip", "link", "set", "dev", "eth0", mode, "off"], ns=lab.switch_ns,
                  check=False)


def xdp_attached(lab) -> bool:  # noqa: ANN001 - a Lab
    from softnic import netns

    js = json.loads(netns.run(["ip", "-j", "link", "show", "eth0"], ns=lab.servers[0].ns))
    return "xdp" in js[0]


def run_live(hl: HostLab, s: Settings, h: float, h_nowrites: float, seconds: float) -> dict:
    """The live-frames runs (module doc) inside the server's namespace, controller stopped."""
    from softnic import netns

    srv = {"mac": hl.server.mac, "ip": hl.server.ip}
    cli = {"mac": hl.client.mac, "ip": hl.client.ip}
    hits = [get_frame(r, srv, cli) for r in range(1, 9)]
    cold = s.keys - LIVE_FRAMES
    misses = [get_frame(r, srv, cli) for r in range(cold, cold + LIVE_FRAMES)]
    mix, mix_nw = mixed(hits, misses, h), mixed(hits, misses, h_nowrites)
    runs = [("live_hits", hits, True, len(hits)), ("live_misses", misses, True, 0),
            ("live_mixed", mix, True, sum(f in hits for f in mix)),
            ("live_mixed_nowrites", mix_nw, True, sum(f in hits for f in mix_nw)),
            ("live_memcached", mix, False, sum(f in hits for f in mix))]
    cmd = {"client_ns": hl.client.ns, "memcached_port": 11212, "seconds": seconds,
           "runs": [{"name": n, "frames": [f.hex() for f in fs], "program": p, "hit_frames": k}
                    for n, fs, p, k in runs]}
    proc = subprocess.run([*netns.exec_prefix(hl.server.ns), sys.executable, "-m",
                           "p4cache_bench.hostpath", "--live-worker"], input=json.dumps(cmd),
                          capture_output=True, text=True, timeout=60 + 8 * seconds, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"live worker failed: {proc.stderr[-3000:]}")
    out = json.loads(proc.stdout)
    out["h"] = round(h, 4)
    out["h_nowrites"] = round(h_nowrites, 4)
    return out


def run_bench(s: Settings, workdir: Path, console=None) -> dict:  # noqa: ANN001
    from rich.console import Console

    from p4cache.lab import Lab, LabSpec
    from p4cache.lab.lab import PREFIX
    from p4cache_bench import cachelab

    console = console or Console(stderr=True)
    t_start = time.monotonic()
    machine = machine_info()
    reps: list[dict] = []
    all_rates = sorted({*s.rates, s.lat_rate, s.target_lat_rate})
    py_rates = sorted({*s.python_rates, s.lat_rate})
    with Lab(LabSpec(servers=1, clients=1, target="xdp", placement="host", slots=s.slots),
             workdir / "xdp") as xlab, \
         Lab(LabSpec(servers=1, clients=1, target="softnic", slots=s.slots), workdir / "python",
             tag=f"{PREFIX}{os.getpid()}p") as plab:
        others = [o for o in cachelab.other_labs(xlab.tag) if not o.startswith(plab.tag + "-")]
        if others:
            console.print(f"[yellow]warning: other labs are up: {', '.join(others)}")
        xh, ph = HostLab(xlab, s), HostLab(plab, s)
        ceiling_rates = all_rates
        with progress_bar(console) as prog:
            task = prog.add_task("hostpath", total=s.reps * 6)
            for r in range(s.reps):
                rep: dict = {"rep": r, "loadavg": loadavg()}
                prog.update(task, description=f"rep {r + 1}: warm xdp cache")
                rep["warm_xdp"] = xh.warm(s.warm_rate, s.warm_s)
                prog.advance(task)
                prog.update(task, description=f"rep {r + 1}: generator ceiling")
                rep["ceiling"] = xh.sweep(ceiling_rates, keys=s.ceiling_keys, sets_over=None)
                prog.advance(task)
                prog.update(task, description=f"rep {r + 1}: xdp")
                rep["xdp"] = xh.sweep(all_rates)
                prog.advance(task)
                prog.update(task, description=f"rep {r + 1}: live frames")
                # the hit share with 5 % writes at the sweep's max rate, and without writes
                # (the warm-up's last step)
                best = max_rate(rep["xdp"]) or rep["xdp"][0]
                h_nw = rep["warm_xdp"]["switch_share_by_step"][-1]
                # the sweep's writes invalidated the hottest keys: GETs only until the
                # controller refilled them, then it stops (the live misses must stay misses)
                rep["rewarm_xdp"] = xh.warm(s.warm_rate, max(3.0, s.warm_s / 3))
                xlab.stop_controller()
                rep["live"] = run_live(xh, s, best["switch_share"], h_nw, s.live_s)
                prog.advance(task)
                prog.update(task, description=f"rep {r + 1}: memcached alone")
                detach(xlab)
                rep["memcached_attached"] = xdp_attached(xlab)
                rep["memcached"] = xh.sweep(all_rates, sets_over="udp")
                xlab.start_switch()
                xh.cl.start_controller(s.slots)
                prog.advance(task)
                prog.update(task, description=f"rep {r + 1}: python engine")
                rep["warm_python"] = ph.warm(s.python_warm_rate, s.python_warm_s)
                rep["python"] = ph.sweep(py_rates)
                prog.advance(task)
                reps.append(rep)
    return summarize(s, reps, machine, others, xh.preload, t_start)


def _med(xs: list[float]) -> float:
    return round(statistics.median(xs), 1) if xs else 0.0


def summarize(s: Settings, reps: list[dict], machine: dict, others: list[str],
              preload: dict | None, t_start: float) -> dict:
    med: dict = {}
    for c in CONFIGS:
        best = [max_rate(rep[c]) for rep in reps]
        lat = [at_rate(rep[c], s.lat_rate) for rep in reps]
        med[c] = {
            "max_rate_under_1pct_loss": _med([b["rate"] if b else 0 for b in best]),
            "gets_answered_per_s_at_max": _med([b["gets_answered_per_s"] if b else 0
                                                for b in best]),
            "switch_share_at_max": round(statistics.median(
                [b["switch_share"] if b else 0 for b in best]), 4),
            "lat_rate": s.lat_rate,
            "hit_p50_us": _med([x["switch_us"]["p50"] for x in lat if x and x["switch_us"]["n"]]),
            "hit_p99_us": _med([x["switch_us"]["p99"] for x in lat if x and x["switch_us"]["n"]]),
            "miss_p50_us": _med([x["memcached_us"]["p50"] for x in lat
                                 if x and x["memcached_us"]["n"]]),
            "miss_p99_us": _med([x["memcached_us"]["p99"] for x in lat
                                 if x and x["memcached_us"]["n"]]),
            "switch_share_at_lat_rate": round(statistics.median(
                [x["switch_share"] for x in lat if x]), 4) if any(lat) else 0.0}
    live: dict = {}
    for name in LIVE:
        runs = [rep["live"]["runs"][name] for rep in reps]
        live[name] = {k: _med([x[k] for x in runs]) for k in
                      ("client_rx_per_s", "memcached_gets_per_s", "frames_per_s")}
    live["h"] = round(statistics.median(rep["live"]["h"] for rep in reps), 4)
    live["h_nowrites"] = round(statistics.median(rep["live"]["h_nowrites"] for rep in reps), 4)

    def over_memcached(name: str) -> list[float]:
        return [rep["live"]["runs"][name]["client_rx_per_s"]
                / max(1, rep["live"]["runs"]["live_memcached"]["client_rx_per_s"])
                for rep in reps]

    ratio_live = over_memcached("live_mixed")
    # memcached answers more when it is fed slower (live_misses: the same GETs behind the
    # program, injected at a third of the rate, less contention on its socket): its best
    best_mc = [max(rep["live"]["runs"]["live_memcached"]["client_rx_per_s"],
                   rep["live"]["runs"]["live_misses"]["memcached_gets_per_s"]) for rep in reps]
    over_best = [rep["live"]["runs"]["live_mixed"]["client_rx_per_s"] / max(1, b)
                 for rep, b in zip(reps, best_mc, strict=True)]
    over_best_hits = [rep["live"]["runs"]["live_hits"]["client_rx_per_s"] / max(1, b)
                      for rep, b in zip(reps, best_mc, strict=True)]
    hit_only = [rep["live"]["runs"]["live_hits"]["client_rx_per_s"]
                / max(1, rep["live"]["runs"]["live_memcached"]["client_rx_per_s"])
                for rep in reps]
    x, m = med["xdp"], med["memcached"]
    sweep_ratio = (x["gets_answered_per_s_at_max"] / m["gets_answered_per_s_at_max"]
                   if m["gets_answered_per_s_at_max"] else 0.0)
    tl = [at_rate(rep["xdp"], s.target_lat_rate) for rep in reps]
    tl_hit = _med([t["switch_us"]["p50"] for t in tl if t and t["switch_us"]["n"]])
    tl_miss = _med([t["memcached_us"]["p50"] for t in tl if t and t["memcached_us"]["n"]])
    hit_over_miss = tl_hit / tl_miss if tl_miss else 0.0
    xdp_latency = {"rate": s.target_lat_rate, "hit_p50_us": tl_hit, "miss_p50_us": tl_miss,
                   "hit_p99_us": _med([t["switch_us"]["p99"] for t in tl
                                       if t and t["switch_us"]["n"]]),
                   "miss_p99_us": _med([t["memcached_us"]["p99"] for t in tl
                                        if t and t["memcached_us"]["n"]]),
                   "loss": _med([t["loss"] for t in tl if t])}
    live_ratio = round(statistics.median(ratio_live), 2)
    verdict = {
        "over_memcached_live": live_ratio,
        "over_memcached_live_hits_only": round(statistics.median(hit_only), 2),
        "over_memcached_live_nowrites": round(statistics.median(
            over_memcached("live_mixed_nowrites")), 2),
        "memcached_best_live_per_s": _med(best_mc),
        "over_memcached_best_live": round(statistics.median(over_best), 2),
        "over_memcached_best_live_hits_only": round(statistics.median(over_best_hits), 2),
        "over_memcached_sweep": round(sweep_ratio, 2),
        "sweep_limited_by_generator": (med["ceiling"]["max_rate_under_1pct_loss"]
                                       <= x["max_rate_under_1pct_loss"]),
        "amdahl_bound_1_over_1_minus_h": round(1 / (1 - live["h"]), 2) if live["h"] < 1 else None,
        "met_over_memcached": live_ratio >= TARGETS["over_memcached"],
        "hit_p50_over_miss_p50": round(hit_over_miss, 3),
        "hit_p50_over_miss_p50_at_lat_rate": round(x["hit_p50_us"] / x["miss_p50_us"], 3)
        if x["miss_p50_us"] else None,
        "xdp_latency_at_target_rate": xdp_latency,
        "met_latency": 0 < hit_over_miss <= TARGETS["hit_p50_over_miss_p50"]}
    return {"bench": "hostpath", "settings": asdict(s), "machine": machine,
            "other_labs": others, "targets": TARGETS, "bmc": BMC, "preload": preload,
            "medians": med, "live": live, "verdict": verdict, "repetitions": reps,
            "duration_s": round(time.monotonic() - t_start, 1)}


# ----------------------------------------------------------------------------- reporting

def _k(v: float) -> str:
    return f"{v / 1000:.1f}k"


def print_summary(result: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    med, live, v = result["medians"], result["live"], result["verdict"]
    t = Table(title=f"hostpath: medians of {result['settings']['reps']} (generator sweeps)")
    for col in ("config", "max rate <1% loss", "GETs answered/s", "switch share",
                f"hit p50/p99 µs @{result['settings']['lat_rate']}/s", "miss p50/p99 µs"):
        t.add_column(col)
    for c in CONFIGS:
        m = med[c]
        t.add_row(c, _k(m["max_rate_under_1pct_loss"]), _k(m["gets_answered_per_s_at_max"]),
                  f"{m['switch_share_at_max']:.2f}",
                  f"{m['hit_p50_us']:.0f} / {m['hit_p99_us']:.0f}",
                  f"{m['miss_p50_us']:.0f} / {m['miss_p99_us']:.0f}")
    lt = Table(title=f"live frames (in the kernel), h = {live['h']:.2f} (5 % writes), "
                     f"{live['h_nowrites']:.2f} (GETs only)")
    for col in ("run", "replies at the client /s", "memcached GETs /s", "frames run /s"):
        lt.add_column(col)
    for n in LIVE:
        x = live[n]
        lt.add_row(n, _k(x["client_rx_per_s"]), _k(x["memcached_gets_per_s"]),
                   _k(x["frames_per_s"]))
    con = Console()
    con.print(t)
    con.print(lt)
    con.print(f"xdp over memcached alone: live {v['over_memcached_live']}x "
              f"(h without writes {v['over_memcached_live_nowrites']}x, hits only "
              f"{v['over_memcached_live_hits_only']}x; 1/(1-h) "
              f"{v['amdahl_bound_1_over_1_minus_h']}), sweeps {v['over_memcached_sweep']}x; "
              f"target >= {TARGETS['over_memcached']}x: "
              f"{'met' if v['met_over_memcached'] else 'NOT met'}")
    xl = v["xdp_latency_at_target_rate"]
    con.print(f"hit p50 / miss p50 (xdp at {xl['rate']}/s: {xl['hit_p50_us']:.0f} / "
              f"{xl['miss_p50_us']:.0f} µs): {v['hit_p50_over_miss_p50']}; target <= "
              f"{TARGETS['hit_p50_over_miss_p50']}: {'met' if v['met_latency'] else 'NOT met'}")


def plot(result: dict, path: Path) -> Path | None:
    plt = pyplot()
    if plt is None:
        return None
    med, live = result["medians"], result["live"]
    fig, (a1, a2, a3) = plt.subplots(1, 3, figsize=(15, 4.8),
                                     gridspec_kw={"width_ratios": [1.1, 1.1, 1]})
    # 1: GETs answered per second against offered rate, median per step
    colors = {"ceiling": "grey", "xdp": "tab:blue", "memcached": "tab:orange",
              "python": "tab:green"}
    for c in CONFIGS:
        rows = [rep[c] for rep in result["repetitions"]]
        rates = [st["rate"] for st in rows[0]]
        ys = [statistics.median(r[i]["gets_answered_per_s"] for r in rows)
              for i in range(len(rates))]
        a1.plot([x / 1000 for x in rates], [y / 1000 for y in ys], "o-", color=colors[c],
                label=f"{c} (max {_k(med[c]['max_rate_under_1pct_loss'])}/s at <1 % loss)")
    a1.set_xlabel("offered requests/s (thousands)")
    a1.set_ylabel("GETs answered/s (thousands)")
    a1.set_title("p4cache-loadgen sweeps (client namespace)")
    a1.legend(fontsize=7)
    a1.grid(alpha=0.3)
    # 2: live frames, in the kernel
    names = list(LIVE)
    vals = [live[n]["client_rx_per_s"] / 1000 for n in names]
    a2.bar(range(len(names)), vals,
           color=["tab:blue", "tab:purple", "tab:cyan", "tab:olive", "tab:orange"])
    for i, y in enumerate(vals):
        a2.text(i, y, f"{y:.0f}k", ha="center", va="bottom", fontsize=8)
    a2.axhline(med["ceiling"]["max_rate_under_1pct_loss"] / 1000, color="grey", ls="--",
               label="generator ceiling (sweep)")
    a2.set_xticks(range(len(names)))
    a2.set_xticklabels([n.replace("live_", "").replace("_", "\n")
                        + ("\n(alone)" if n == "live_memcached" else "") for n in names],
                       fontsize=7)
    a2.set_ylabel("replies at the client /s (thousands)")
    a2.set_title(f"live frames (BPF_PROG_TEST_RUN), h = {live['h']:.2f} / "
                 f"{live['h_nowrites']:.2f}; "
                 f"xdp/memcached {result['verdict']['over_memcached_live']}x", fontsize=9)
    a2.legend(fontsize=7)
    # 3: latency at lat_rate
    labels, p50, p99 = [], [], []
    for c, kinds in (("xdp", ("hit", "miss")), ("memcached", ("miss",)),
                     ("python", ("hit", "miss"))):
        for k in kinds:
            if med[c][f"{k}_p50_us"]:
                labels.append(f"{c}\n{k if c != 'memcached' else 'alone'}")
                p50.append(med[c][f"{k}_p50_us"])
                p99.append(med[c][f"{k}_p99_us"])
    xs = range(len(labels))
    a3.bar([x - 0.2 for x in xs], p50, 0.4, label="p50")
    a3.bar([x + 0.2 for x in xs], p99, 0.4, label="p99")
    a3.set_yscale("log")
    a3.set_xticks(list(xs))
    a3.set_xticklabels(labels, fontsize=8)
    a3.set_ylabel("µs from scheduled send (log)")
    a3.set_title(f"GET latency at {result['settings']['lat_rate']}/s", fontsize=9)
    a3.legend(fontsize=7)
    fig.suptitle(f"hostpath: 16 B keys, 100 B values, Zipf 0.99, 95 % GET — "
                 f"{plot_title(result)}", fontsize=9)
    return save_figure(fig, path)


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def main(argv: list[str] | None = None) -> int:
    args_in = list(sys.argv[1:] if argv is None else argv)
    if args_in == ["--live-worker"]:
        print(json.dumps(live_worker(json.loads(sys.stdin.read()))))
        return 0
    ap = argparse.ArgumentParser(prog="p4cache-bench hostpath",
                                 description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="smoke run: 1 repetition, few steps")
    ap.add_argument("--reps", type=int, help="repetitions (default 3)")
    ap.add_argument("--keys", type=int, help="keys loaded (default 20000)")
    ap.add_argument("--rates", type=_ints, help="offered rates of the sweeps (requests/s)")
    ap.add_argument("--step", type=float, help="seconds per rate step (default 2.5)")
    ap.add_argument("--live-seconds", type=float, help="seconds per live-frames run (default 3)")
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--plot", type=Path, default=PLOT)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/p4cache-bench-hostpath"))
    args = ap.parse_args(args_in)
    if needs_root("hostpath"):
        return 2
    from softnic.runtime.xdp import libbpf

    if missing := libbpf.missing_requirements():
        print(f"p4cache-bench hostpath: the xdp engine cannot run here: {missing}",
              file=sys.stderr)
        return 2
    s = replace(QUICK) if args.quick else Settings()
    if args.reps:
        s.reps = args.reps
    if args.keys:
        s.keys = args.keys
    if args.rates:
        s.rates = args.rates
    if args.step:
        s.step_s = args.step
    if args.live_seconds:
        s.live_s = args.live_seconds
    report(run_bench(s, args.workdir), args.out, args.plot, print_summary, plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
