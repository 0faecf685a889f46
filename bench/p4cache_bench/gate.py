"""The host agent's write gate and the controller's promotion, measured on the real system.

Everything runs in ``p4cache.lab``: network namespaces, softnic as the switch with the cache's
program, memcached (UDP 11211 on the server's address, TCP 11212 on 127.0.0.1), the host agent
``p4cache-agent`` in front of memcached's TCP port and the controller ``p4cache-controller``.
Two helper processes (this module with ``--worker``) do the timing inside the namespaces: one in
the server's namespace for TCP (so direct and gated requests take the same loopback-like path),
one in the client's namespace for UDP GETs.

1. Gate latency. One persistent TCP connection per (variant, target), one request at a time:
   directly to memcached (127.0.0.1:11212) and through the agent (its listen address), for a get
   and a set of an uncached key and of a key the switch caches. Rounds interleave the variants
   and alternate which target goes first. Before each round the "set cached" key is promoted
   again (UDP GETs until the switch answers), so the first agent set of each round invalidates a
   slot that is verified to answer; the later ones invalidate a key still in the agent's watch set
   W (the slot stays invalid, the controller keeps the entry, the agent keeps the key in W until
   the controller unwatches it), which costs the same OP_INVALIDATE_KEY round trip. The agent's
   invalidation counter is read before and after every gated block: every gated set of the
   cached key must have sent exactly one invalidation, no other variant any.
2. Invalidation latency: the agent's own ``latency`` (invalidate, flush, fence) from its status.
3. Time to hot: a fresh key is stored through the gate, then GETs at a steady rate from the
   client; time from the first GET sent to the first reply that came from the switch. Switch
   replies are told from memcached's by the UDP checksum: the data plane writes 0 ("none",
   p4src/v1model/include/control/lookup_reply.p4), the server's kernel always fills it in (the
   lab's veths have checksum offload off); the client reads every reply through a raw socket.
   The count of switch replies is checked against the switch's hit counter.
4. Re-hot after a write: a cached key gets one TCP set through the gate while GETs continue;
   time from the set's reply until the switch answers again (invalidate, the next digest, the
   controller's refill), and whether any switch reply after the set carried the old value.

Run: ``p4cache-bench gate`` (root: network namespaces); ``--quick`` for a smoke run.
"""

from __future__ import annotations

import argparse
import os
import random
import select
import socket
import statistics
import struct
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from p4cache import paths
from p4cache_bench.cachelab import (
    agent_status,
    controller_status,
    other_labs,
    serve_worker,
    settled_controller_status,
    start_system,
    start_workers,
    summary,
)
from p4cache_bench.common import (
    machine_info,
    needs_root,
    progress_bar,
    pyplot,
    save_figure,
    write_results,
)

RESULTS = paths.bench_results() / "gate.json"
PLOT_DIR = paths.bench_plots()
TARGET_ADDED_P50_US = 100.0   # the issue: the gate adds at most 100 µs p50 for uncached keys
VALUE = b"v" * 100
HOT_VALUE = b"h" * 100
VARIANTS = ("get_uncached", "get_cached", "set_uncached", "set_cached")


# ----------------------------------------------------------------------------- worker side
# Runs inside a namespace (``python -m p4cache_bench.gate --worker``): one JSON command per line on
# stdin, one JSON answer per line on stdout. Times are time.monotonic(), which every namespace
# shares, so the driver can compare them across workers.

def _read_reply(s: socket.socket, suffix: bytes) -> tuple[bytes, bool]:
    buf = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            raise ConnectionError("connection closed")
        buf += chunk
        if buf.endswith(suffix):
            return buf, True
        if buf.endswith(b"\r\n") and buf.startswith((b"SERVER_ERROR", b"CLIENT_ERROR",
                                                       b"ERROR")):
            return buf, False


def _op_rtts(conns: dict[str, socket.socket], cmd: dict) -> dict:
    """``n`` requests on the persistent connection ``name``, one at a time; RTTs in µs."""
    name = cmd["name"]
    s = conns.get(name)
    if s is None:
        host, port = cmd["addr"].rsplit(":", 1)
        s = socket.create_connection((host, int(port)), timeout=5.0)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conns[name] = s
    req, suffix = bytes.fromhex(cmd["request"]), bytes.fromhex(cmd["expect"])
    out, bad = [], []
    t_first = time.monotonic()
    for _ in range(cmd["n"]):
        t0 = time.perf_counter()
        s.sendall(req)
        reply, ok = _read_reply(s, suffix)
        out.append(round((time.perf_counter() - t0) * 1e6, 1))
        if not ok and len(bad) < 5:
            bad.append(reply[:200].decode("latin-1"))
    return {"rtts_us": out, "bad": bad, "t_first": t_first, "t_done": time.monotonic()}


def _parse_value(body: bytes, key: bytes) -> str | None:
    from p4cache.workload.clients import parse_get_reply

    try:
        v = parse_get_reply(body, key)
    except ValueError:
        return "<bad reply>"
    return None if v is None else v.decode("latin-1")


def _op_stream(cmd: dict) -> dict:
    """UDP GETs of one key at a steady rate; every reply with its send and receive time and
    whether the switch sent it (UDP checksum 0). Stops ``linger_s`` after the ``switch_runs``-th
    run of switch replies began, or after ``max_s``."""
    from p4cache import dataplane as dp

    key = cmd["key"].encode("latin-1")
    dest = (cmd["server"], dp.MEMCACHED_PORT)
    rate, switch_runs, linger = cmd["rate"], cmd["switch_runs"], cmd["linger_s"]
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.bind(("0.0.0.0", 0))
    u.setblocking(False)
    port = u.getsockname()[1]
    raw = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_UDP)
    raw.setblocking(False)
    sent: dict[int, tuple[int, float]] = {}
    replies: list[list] = []
    runs, prev_sw = 0, False
    t0 = time.monotonic()
    next_t, stop_at, seq = t0, t0 + cmd["max_s"], 0
    try:
        while True:
            now = time.monotonic()
            if now >= stop_at:
                break
            if now >= next_t and (runs < switch_runs or cmd.get("send_while_lingering", True)):
                rid = seq % 0xFFFF + 1
                u.sendto(dp.get_request(rid, key), dest)
                sent[rid] = (seq, time.monotonic())
                seq += 1
                next_t += 1.0 / rate
            ready, _, _ = select.select([raw, u], [], [],
                                        max(0.0, min(next_t, stop_at) - time.monotonic()))
            if u in ready:
                while True:
                    try:
                        u.recv(65536)
                    except BlockingIOError:
                        break
            if raw not in ready:
                continue
            while True:
                try:
                    data = raw.recv(65536)
                except BlockingIOError:
                    break
                t = time.monotonic()
                ihl = (data[0] & 0x0F) * 4
                sport, dport, _, csum = struct.unpack_from("!HHHH", data, ihl)
                if sport != dp.MEMCACHED_PORT or dport != port:
                    continue
                payload = data[ihl + 8:]
                rid = struct.unpack_from("!H", payload)[0]
                if rid not in sent:
                    continue
                sq, ts = sent.pop(rid)
                sw = csum == 0
                replies.append([sq, round(ts, 6), round(t, 6), sw,
                                _parse_value(payload[8:], key)])
                if sw and not prev_sw:
                    runs += 1
                    if runs >= switch_runs:
                        stop_at = min(stop_at, t + linger)
                prev_sw = sw
    finally:
        u.close()
        raw.close()
    return {"t_first_send": t0, "sent": seq, "replies": replies, "switch_runs": runs}


def worker_main() -> int:
    conns: dict[str, socket.socket] = {}
    return serve_worker({"rtts": lambda cmd: _op_rtts(conns, cmd), "stream": _op_stream})


# ----------------------------------------------------------------------------- driver side

@dataclass
class Settings:
    requests: int           # per variant and target, over all rounds
    rounds: int
    warmup: int             # requests per connection before the first round, not recorded
    hot_keys: int           # time-to-hot samples
    verified: int           # sets of the cached key each right after it was seen cached
    rehot: int              # re-hot samples
    rate: float             # UDP GETs per second for time to hot and re-hot
    max_wait_s: float       # give up on a key that is not served by the switch within this


GATE_STATS = ("p50", "p90", "p99", "max", "min", "mean")


def gate_summary(xs: list[float], unit: str, nd: int = 1) -> dict:
    return summary(xs, unit, nd, GATE_STATS)


class Rig:
    """The lab with agent and controller, the two workers, and the status channels."""

    def __init__(self, lab, console) -> None:  # noqa: ANN001
        self.lab = lab
        self.console = console
        self.server, self.client = lab.servers[0], lab.clients[0]
        self.sw, self.cw = start_workers([self.server, self.client], "p4cache_bench.gate")
        self.direct = f"127.0.0.1:{11212}"
        self.gated = f"{self.server.ip}:11211"

    def close(self) -> None:
        self.sw.close()
        self.cw.close()

    def ask(self, worker, cmd: dict) -> dict:  # noqa: ANN001
        worker.send(cmd)
        out = worker.recv(check=False)
        if "error" in out:
            raise RuntimeError(f"worker: {cmd['op']}: {out['error']}")
        return out

    def tcp(self, name: str, addr: str, request: bytes, expect: bytes, n: int) -> dict:
        return self.ask(self.sw, {"op": "rtts", "name": name, "addr": addr,
                                  "request": request.hex(), "expect": expect.hex(), "n": n})

    def stream(self, key: bytes, rate: float, max_s: float, switch_runs: int = 1,
               linger_s: float = 0.0) -> dict:
        return self.ask(self.cw, self._stream_cmd(key, rate, max_s, switch_runs, linger_s))

    def _stream_cmd(self, key: bytes, rate: float, max_s: float, switch_runs: int,
                    linger_s: float) -> dict:
        return {"op": "stream", "server": self.server.ip, "key": key.decode("latin-1"),
                "rate": rate, "max_s": max_s, "switch_runs": switch_runs, "linger_s": linger_s}

    def controller(self) -> dict:
        return controller_status(self.lab)

    def agent(self) -> dict:
        return agent_status(self.server)

    def key_phase(self, key: bytes) -> str | None:
        for k in self.controller()["keys"]:
            if k["key"] == key.decode("latin-1"):
                return k["phase"]
        return None

    def store(self, key: bytes, value: bytes, via: str) -> None:
        addr = self.gated if via == "agent" else self.direct
        r = self.tcp(f"store-{via}", addr, b"set %s 0 0 %d\r\n%s\r\n" % (key, len(value), value),
                     b"STORED\r\n", 1)
        if r["bad"]:
            raise RuntimeError(f"storing {key!r}: {r['bad']}")


def first_switch_after(replies: list[list], t: float) -> list | None:
    return next((r for r in replies if r[3] and r[1] >= t), None)


def promote(rig: Rig, key: bytes, rate: float, max_s: float, value: bytes = HOT_VALUE) -> dict:
    """GETs of ``key`` until the switch answers: one time-to-hot sample."""
    res = rig.stream(key, rate, max_s, switch_runs=1, linger_s=0.05)
    reps = res["replies"]
    first = next((r for r in reps if r[3]), None)
    out = {"key": key.decode(), "sent": res["sent"], "replies": len(reps),
           "switch_replies": sum(1 for r in reps if r[3]),
           "misses_before": sum(1 for r in reps if not r[3] and (first is None or r[2] < first[2]))}
    if first is None:
        out["time_to_hot_ms"] = None
        return out
    out["time_to_hot_ms"] = round((first[2] - res["t_first_send"]) * 1e3, 2)
    # The GET that brings the sketch's estimate to the threshold (if none of the first ones was
    # lost and no epoch boundary came in between): what is left is digest, controller, fill.
    from p4cache import dataplane as dp

    nth = next((r for r in reps if r[0] == dp.HOT_THRESHOLD - 1 and not r[3]), None)
    if nth is not None:
        out["threshold_get_ms"] = round((nth[1] - res["t_first_send"]) * 1e3, 2)
        out["after_threshold_ms"] = round((first[2] - nth[1]) * 1e3, 2)
    out["first_switch_request_seq"] = first[0]
    out["value_ok"] = all(r[4] == value.decode() for r in reps if r[3])
    return out


def wait_filled(rig: Rig, key: bytes, timeout: float = 3.0) -> str | None:
    deadline = time.monotonic() + timeout
    phase = None
    while time.monotonic() < deadline:
        phase = rig.key_phase(key)
        if phase == "filled":
            return phase
        time.sleep(0.05)
    return phase


def probe_cached(rig: Rig, key: bytes, n: int = 5, rate: float = 200.0) -> dict:
    """A few GETs: how many the switch answered (all of them: the key is cached)."""
    res = rig.stream(key, rate, n / rate + 0.05, switch_runs=1 << 30)
    reps = res["replies"]
    return {"sent": res["sent"], "replies": len(reps), "switch": sum(1 for r in reps if r[3])}


def rehot_sample(rig: Rig, key: bytes, j: int, s: Settings) -> dict:
    """GETs keep going; one set through the gate once the switch answers; until it answers
    again."""
    lead = 0.3
    rig.cw.send(rig._stream_cmd(key, s.rate, lead + s.max_wait_s, 2, 0.05))
    time.sleep(lead)
    value = (b"r%d-" % j + VALUE)[:len(VALUE)]
    w = rig.tcp("rehot-set", rig.gated, b"set %s 0 0 %d\r\n%s\r\n" % (key, len(value), value),
                b"STORED\r\n", 1)
    res = rig.cw.recv(check=False)
    if "error" in res:
        raise RuntimeError(res["error"])
    reps = res["replies"]
    before = [r for r in reps if r[2] <= w["t_first"]]
    out = {"key": key.decode(), "set_rtt_us": w["rtts_us"][0], "set_refused": bool(w["bad"]),
           "cached_before_set": bool(before) and all(r[3] for r in before[-3:]),
           "gets_before_set": len(before), "sent": res["sent"],
           "switch_replies": sum(1 for r in reps if r[3])}
    again = first_switch_after(reps, w["t_done"])
    # Coherence on the way: a switch reply to a GET sent after the set's reply must carry the
    # new value.
    out["stale_switch_replies"] = sum(1 for r in reps if r[3] and r[1] >= w["t_done"]
                                      and r[4] != value.decode())
    out["misses_after_set"] = sum(1 for r in reps if not r[3] and r[1] >= w["t_first"]
                                  and (again is None or r[2] < again[2]))
    out["rehot_ms"] = None if again is None else round((again[2] - w["t_done"]) * 1e3, 2)
    return out


def gate_latency(rig: Rig, s: Settings, keys: dict[str, bytes], progress, task) -> dict:  # noqa: ANN001
    """The four variants, direct and through the agent, interleaved over rounds."""
    reqs = {
        "get_uncached": (b"get %s\r\n" % keys["get_uncached"], b"END\r\n"),
        "get_cached": (b"get %s\r\n" % keys["get_cached"], b"END\r\n"),
        "set_uncached": (b"set %s 0 0 %d\r\n%s\r\n" % (keys["set_uncached"], len(VALUE), VALUE),
                         b"STORED\r\n"),
        "set_cached": (b"set %s 0 0 %d\r\n%s\r\n" % (keys["set_cached"], len(VALUE), VALUE),
                       b"STORED\r\n"),
    }
    addrs = {"direct": rig.direct, "agent": rig.gated}
    samples = {v: {"direct": [], "agent": []} for v in VARIANTS}
    bad: list[str] = []
    inval = {v: 0 for v in VARIANTS}
    verified: list[float] = []         # gated sets of the cached key right after re-promotion
    checks: list[dict] = []
    for v in VARIANTS:                 # warm-up: connections opened, code paths hot
        for t in ("direct", "agent"):
            if v == "set_cached" and t == "direct":
                continue               # keep the cached key cached until the first round
            rig.tcp(f"{v}-{t}", addrs[t], *reqs[v], s.warmup if v != "set_cached" else 0)
    per_round = [s.requests // s.rounds + (1 if i < s.requests % s.rounds else 0)
                 for i in range(s.rounds)]
    for rnd, n in enumerate(per_round):
        # the "set cached" key answers from the switch again before its gated block
        p = promote(rig, keys["set_cached"], s.rate, s.max_wait_s,
                    HOT_VALUE if rnd == 0 else VALUE)
        c_set = {"round": rnd, "set_cached_promoted_ms": p["time_to_hot_ms"],
                 "get_cached_probe": probe_cached(rig, keys["get_cached"]),
                 "get_cached_phase": rig.key_phase(keys["get_cached"]),
                 "set_cached_phase": rig.key_phase(keys["set_cached"])}
        order = ["direct", "agent"] if rnd % 2 == 0 else ["agent", "direct"]
        variants = list(VARIANTS)
        random.Random(rnd).shuffle(variants)
        for v in variants:
            for t in (["agent", "direct"] if v == "set_cached" and rnd == 0 else order):
                before = rig.agent()["counters"].get("invalidate_sent", 0) if t == "agent" else 0
                r = rig.tcp(f"{v}-{t}", addrs[t], *reqs[v], n)
                if t == "agent":
                    inval[v] += rig.agent()["counters"].get("invalidate_sent", 0) - before
                    if v == "set_cached":
                        c_set["first_gated_set_us"] = r["rtts_us"][0]
                samples[v][t] += r["rtts_us"]
                bad += r["bad"]
                progress.advance(task, n)
        c_set["get_cached_probe_after"] = probe_cached(rig, keys["get_cached"])
        checks.append(c_set)
    # Sets of the cached key each right after GETs showed the switch answering it: the slot is
    # valid when the gated set arrives. A direct set first (it does not invalidate), then the
    # gated one, paired with an equally isolated gated set of a key that is watched but whose
    # slot is already invalid (alternating which of the two goes first): isolated requests pay
    # for waking the agent, softnic and memcached, which back-to-back requests do not.
    task2 = progress.add_task("sets of a verified-cached key", total=s.verified)
    verified_direct: list[float] = []
    watched: list[float] = []
    set_watched = (b"set %s 0 0 %d\r\n%s\r\n" % (keys["set_watched"], len(VALUE), VALUE),
                   b"STORED\r\n")
    rig.tcp("set_watched-agent", addrs["agent"], *set_watched, 1)   # its slot invalid from now
    for i in range(s.verified):
        p = promote(rig, keys["set_cached"], s.rate, s.max_wait_s,
                    HOT_VALUE if i == 0 and not checks else VALUE)
        if p["time_to_hot_ms"] is None:
            progress.advance(task2)
            continue
        verified_direct += rig.tcp("set_cached-direct", addrs["direct"], *reqs["set_cached"],
                                   1)["rtts_us"]
        before = rig.agent()["counters"].get("invalidate_sent", 0)
        pair = [("set_cached-agent", reqs["set_cached"], verified),
                ("set_watched-agent", set_watched, watched)]
        got = []
        for name, req, _ in (pair if i % 2 == 0 else pair[::-1]):
            r = rig.tcp(name, addrs["agent"], *req, 1)
            bad += r["bad"]
            got.append(r["rtts_us"][0])
        if rig.agent()["counters"].get("invalidate_sent", 0) - before == 2:
            for (_, _, dest), v in zip(pair if i % 2 == 0 else pair[::-1], got, strict=True):
                dest.append(v)
        progress.advance(task2)
    out: dict = {"variants": {}, "rounds": checks, "errors": bad}
    for v in VARIANTS:
        d, a = samples[v]["direct"], samples[v]["agent"]
        sd, sa = gate_summary(d, "us"), gate_summary(a, "us")
        out["variants"][v] = {
            "direct": sd, "agent": sa,
            "added_p50_us": round(sa["p50_us"] - sd["p50_us"], 1),
            "added_p99_us": round(sa["p99_us"] - sd["p99_us"], 1),
            "ratio_p50": round(sa["p50_us"] / sd["p50_us"], 2),
            "ratio_p99": round(sa["p99_us"] / sd["p99_us"], 2),
            "invalidations_per_gated_request": round(inval[v] / len(a), 3) if a else None,
        }
    vd, va = gate_summary(verified_direct, "us"), gate_summary(verified, "us")
    out["set_cached_verified"] = {
        "what": "sets of the cached key, each right after UDP GETs showed the switch answering "
                "it (the slot was valid when the gated set arrived): direct, then through the "
                "agent (one invalidation each, checked on the agent's counter)",
        "direct": vd, "agent": va,
        "added_p50_us": round(va["p50_us"] - vd["p50_us"], 1) if va["n"] and vd["n"] else None,
        "samples_us": {"direct": verified_direct, "agent": verified}}
    out["set_watched_isolated"] = {
        "what": "gated sets of a watched key whose slot is already invalid, isolated like the "
                "ones above (same loop, alternating order)",
        "agent": gate_summary(watched, "us"), "samples_us": watched}
    out["samples_us"] = samples
    return out


def run_bench(s: Settings, workdir: Path) -> dict:
    from rich.console import Console

    from p4cache import dataplane as dp
    from p4cache.lab import Lab, LabSpec

    console = Console(stderr=True)
    t_start = time.monotonic()
    result: dict = {"machine": machine_info(), "settings": asdict(s)}
    with Lab(LabSpec(servers=1, clients=1), workdir) as lab:
        others_at_start = other_labs(lab.tag)
        if others_at_start:
            console.print(f"[yellow]warning: other labs are up ({', '.join(others_at_start)}): "
                          "they share the root namespace's management addresses and the CPUs")
        start_system(lab, timeout=30.0)
        rig = Rig(lab, console)
        try:
            result["lab"] = {"switch": "softnic run (p4src/v1model/p4cache.p4)",
                             "server": rig.server.ip, "client": rig.client.ip,
                             "direct": rig.direct, "agent": rig.gated,
                             "slots": rig.controller()["cache"]["slots"],
                             "setup_s": round(time.monotonic() - t_start, 1)}
            tag = f"{os.getpid()}"
            keys = {"get_uncached": f"gate-get-uncached-{tag}".encode(),
                    "set_uncached": f"gate-set-uncached-{tag}".encode()}
            hot = [f"gate-hot-{tag}-{i:02d}".encode() for i in range(max(3, s.hot_keys))]
            keys["get_cached"], keys["set_cached"] = hot[0], hot[1]
            keys["set_watched"] = hot[-1]
            rig.store(keys["get_uncached"], VALUE, "direct")
            rig.store(keys["set_uncached"], VALUE, "direct")
            hits0 = settled_controller_status(lab)["switch_counters"]["hit"]
            switch_seen = 0
            with progress_bar(console) as progress:
                # -- time to hot
                task = progress.add_task("time to hot", total=len(hot))
                tth: list[dict] = []
                for k in hot:
                    rig.store(k, HOT_VALUE, "agent")       # fresh, through the gate
                    time.sleep(0.05)
                    p = promote(rig, k, s.rate, s.max_wait_s)
                    p["phase_after"] = wait_filled(rig, k)
                    switch_seen += p["switch_replies"]
                    tth.append(p)
                    progress.console.print(f"  {k.decode()}: switch answers after "
                                           f"{p['time_to_hot_ms']} ms ({p['misses_before']} "
                                           f"misses first), controller: {p['phase_after']}")
                    progress.advance(task)
                ctl_tth = rig.controller()
                # -- re-hot after a write
                task = progress.add_task("re-hot after a write", total=s.rehot)
                rehot: list[dict] = []
                for j in range(s.rehot):
                    k = hot[2 + j % max(1, len(hot) - 2)] if len(hot) > 2 else hot[1]
                    r = rehot_sample(rig, k, j, s)
                    rehot.append(r)
                    progress.console.print(f"  {k.decode()}: set {r['set_rtt_us']:.0f} µs, "
                                           f"switch again after {r['rehot_ms']} ms "
                                           f"(cached before: {r['cached_before_set']}, "
                                           f"stale: {r['stale_switch_replies']})")
                    progress.advance(task)
                agent_rehot = rig.agent()["latency"]   # only the re-hot sets invalidated yet
                # counters read after the re-hot replies were read
                ctl_rehot = settled_controller_status(lab)
                # -- gate latency
                task = progress.add_task("gate latency", total=s.requests * 8)
                gl = gate_latency(rig, s, keys, progress, task)
            agent_st = rig.agent()
            ctl_end = rig.controller()
            result["lab"]["other_labs_at_start"] = others_at_start
            result["lab"]["other_labs_at_end"] = other_labs(lab.tag)
        finally:
            rig.close()
    # The switch replies seen by the client in the time-to-hot and re-hot phases, against the
    # switch's own hit counter over the same span (the GET probes of the latency phase come
    # after it).
    tth_ms = [p["time_to_hot_ms"] for p in tth if p["time_to_hot_ms"] is not None]
    rh_ms = [r["rehot_ms"] for r in rehot if r["rehot_ms"] is not None]
    epoch_s = (1 << dp.EPOCH_SHIFT) / 1e6
    promo = ctl_tth["latency"]["promotion"]
    result["gate_latency"] = gl
    g = gl["variants"]
    result["target"] = {
        "source": "the issue", "added_p50_us_max": TARGET_ADDED_P50_US,
        "get_uncached_added_p50_us": g["get_uncached"]["added_p50_us"],
        "set_uncached_added_p50_us": g["set_uncached"]["added_p50_us"],
        "met": max(g["get_uncached"]["added_p50_us"],
                   g["set_uncached"]["added_p50_us"]) <= TARGET_ADDED_P50_US}
    result["agent"] = {"latency": agent_st["latency"], "counters": agent_st["counters"],
                       "watch": agent_st["watch"]}
    result["time_to_hot"] = {
        "rate_per_s": s.rate, "hot_threshold": dp.HOT_THRESHOLD, "epoch_shift": dp.EPOCH_SHIFT,
        "epoch_s": epoch_s,
        "threshold_time_ms": round((dp.HOT_THRESHOLD - 1) / s.rate * 1e3, 1),
        **gate_summary(tth_ms, "ms", 2), "failed": len(tth) - len(tth_ms),
        "after_threshold_get_ms": gate_summary([p["after_threshold_ms"] for p in tth
                                           if "after_threshold_ms" in p], "ms", 2),
        "controller_promotion_latency": promo,
        "samples": tth}
    result["rehot"] = {**gate_summary(rh_ms, "ms", 2), "failed": len(rehot) - len(rh_ms),
                       "stale_switch_replies": sum(r["stale_switch_replies"] for r in rehot),
                       "all_cached_before_set": all(r["cached_before_set"] for r in rehot),
                       "set_rtt_us": gate_summary([r["set_rtt_us"] for r in rehot], "us"),
                       "agent_latency_after_rehot": agent_rehot,
                       "samples": rehot}
    result["controller"] = {k: ctl_end[k] for k in ("promotions", "refills",
                                                    "promotions_started", "aborted",
                                                    "evictions", "digests", "invalidations",
                                                    "latency", "switch_counters")}
    result["controller"]["promotion_latency_after_time_to_hot"] = promo
    result["controller"]["promotion_latency_after_rehot"] = ctl_rehot["latency"]["promotion"]
    result["reply_classification"] = {
        "rule": "UDP checksum 0: the switch's reply; any other: memcached's (kernel)",
        "switch_replies_seen": switch_seen + sum(r["switch_replies"] for r in rehot),
        "gets_sent": sum(p["sent"] for p in tth) + sum(r["sent"] for r in rehot),
        "switch_hit_counter_delta": ctl_rehot["switch_counters"]["hit"] - hits0,
        "span": "time to hot and re-hot phases (the counter read an epoch after)"}
    result["duration_s"] = round(time.monotonic() - t_start, 1)
    result["machine"]["loadavg_at_end"] = list(os.getloadavg())
    return result


# ----------------------------------------------------------------------------- report

def markdown_table(result: dict) -> str:
    lines = ["| request | direct p50 / p99 (µs) | through the agent p50 / p99 (µs) "
             "| added p50 / p99 (µs) | ratio p50 | invalidations per gated request |",
             "|---|---|---|---|---|---|"]
    for v, r in result["gate_latency"]["variants"].items():
        d, a = r["direct"], r["agent"]
        lines.append(f"| {v.replace('_', ' ')} | {d['p50_us']:.0f} / {d['p99_us']:.0f} "
                     f"| {a['p50_us']:.0f} / {a['p99_us']:.0f} "
                     f"| {r['added_p50_us']:+.0f} / {r['added_p99_us']:+.0f} "
                     f"| {r['ratio_p50']:.2f} | {r['invalidations_per_gated_request']} |")
    return "\n".join(lines)


def print_summary(result: dict) -> None:
    print(markdown_table(result))
    t = result["target"]
    print(f"target: the gate adds <= {t['added_p50_us_max']:.0f} µs p50 for uncached keys: "
          f"get {t['get_uncached_added_p50_us']:+.0f} µs, set {t['set_uncached_added_p50_us']:+.0f}"
          f" µs -> {'met' if t['met'] else 'NOT met'}")
    v = result["gate_latency"]["set_cached_verified"]
    if v["agent"]["n"] and v["direct"]["n"]:
        print(f"set of a key seen cached just before: direct p50 {v['direct']['p50_us']:.0f} µs, "
              f"through the agent p50 {v['agent']['p50_us']:.0f} µs p99 "
              f"{v['agent']['p99_us']:.0f} µs (n={v['agent']['n']}), added "
              f"{v['added_p50_us']:+.0f} µs")
    w = result["gate_latency"]["set_watched_isolated"]["agent"]
    if w["n"]:
        print(f"isolated gated set of a watched key with an invalid slot: p50 {w['p50_us']:.0f} "
              f"µs p99 {w['p99_us']:.0f} µs (n={w['n']})")
    lat = result["agent"]["latency"]
    for name, x in lat.items():
        print(f"agent latency {name}: n={x['n']} p50 {x['p50_us']} µs p99 {x['p99_us']} µs "
              f"max {x['max_us']} µs")
    h = result["time_to_hot"]
    if h["n"]:
        print(f"time to hot ({h['rate_per_s']:.0f} GETs/s): median {h['p50_ms']:.0f} ms, p90 "
              f"{h['p90_ms']:.0f} ms, max {h['max_ms']:.0f} ms (n={h['n']}, failed "
              f"{h['failed']}); epoch {h['epoch_s']:.3f} s, threshold {h['hot_threshold']}; "
              f"controller promotion p50 {h['controller_promotion_latency']['p50_ms']} ms")
    r = result["rehot"]
    if r["n"]:
        print(f"re-hot after a write: median {r['p50_ms']:.0f} ms, max {r['max_ms']:.0f} ms "
              f"(n={r['n']}, failed {r['failed']}, stale switch replies "
              f"{r['stale_switch_replies']})")


def _save(fig, ax, title: str, path: Path, paths: list[Path]) -> None:  # noqa: ANN001
    """Title, lay out, write the PNG, close the figure, remember the path."""
    ax.set_title(title, fontsize=9)
    paths.append(save_figure(fig, path))


def plot(result: dict, outdir: Path) -> list[Path]:
    if (plt := pyplot()) is None:
        return []
    outdir.mkdir(parents=True, exist_ok=True)
    m = result["machine"]
    title = (f"{m['cpus']} CPUs, Python {m['python']}, commit {m['git_commit']}"
             + (" + local changes" if m.get("git_modified_files") else ""))
    paths = []
    # gate latency: box plots, direct vs agent per variant
    gl = result["gate_latency"]
    fig, ax = plt.subplots(figsize=(12, 5.5))
    data, labels, colors = [], [], []
    for v in VARIANTS:
        for t, c in (("direct", "#4c72b0"), ("agent", "#dd8452")):
            data.append(gl["samples_us"][v][t])
            labels.append(f"{v.replace('_', ' ')}\n{t}")
            colors.append(c)
    iso = (("set cached\nisolated direct", gl["set_cached_verified"]["samples_us"]["direct"],
            "#4c72b0"),
           ("set cached\nisolated agent\n(slot valid)",
            gl["set_cached_verified"]["samples_us"]["agent"], "#c44e52"),
           ("set watched\nisolated agent\n(slot invalid)",
            gl["set_watched_isolated"]["samples_us"], "#dd8452"))
    for label, d, c in iso:
        if d:
            data.append(d)
            labels.append(label)
            colors.append(c)
    bp = ax.boxplot(data, whis=(1, 99), showfliers=False, patch_artist=True)
    for patch, c in zip(bp["boxes"], colors, strict=True):
        patch.set_facecolor(c)
        patch.set_alpha(0.6)
    for i, d in enumerate(data, start=1):
        p50 = statistics.median(d)
        ax.text(i, p50, f"{p50:.0f}", ha="center", va="bottom", fontsize=7)
    ax.set_xticks(range(1, len(labels) + 1), labels, fontsize=7)
    ax.axvline(2 * len(VARIANTS) + 0.5, color="grey", lw=0.8, ls=":")
    ax.text(2 * len(VARIANTS) + 0.6, ax.get_ylim()[1], "one request at a time,\nafter idle",
            fontsize=7, va="top", color="grey")
    ax.set_ylabel("request round trip, µs (box: p25-p75, whiskers p1-p99)")
    ax.set_yscale("log")
    _save(fig, ax, f"p4cache write gate: TCP requests from the server's namespace - {title}",
          outdir / "gate_latency.png", paths)
    # time to hot and re-hot
    h, r = result["time_to_hot"], result["rehot"]
    fig, ax = plt.subplots(figsize=(9, 4.5))
    for xs, label, c in ((
            [x["time_to_hot_ms"] for x in h["samples"] if x["time_to_hot_ms"] is not None],
            "time to hot (fresh key)", "#4c72b0"),
            ([x["rehot_ms"] for x in r["samples"] if x["rehot_ms"] is not None],
             "re-hot after a gated set", "#dd8452")):
        if xs:
            s = sorted(xs)
            ax.step(s, [(i + 1) / len(s) for i in range(len(s))], where="post", color=c,
                    label=f"{label}: median {statistics.median(s):.0f} ms (n={len(s)})")
    ax.axvline(h["epoch_s"] * 1e3, color="grey", ls=":", lw=1)
    ax.text(h["epoch_s"] * 1e3, 0.02, "one data-plane epoch ", fontsize=7, color="grey",
            ha="right")
    ax.axvline(h["threshold_time_ms"], color="grey", ls="--", lw=0.8)
    ax.text(h["threshold_time_ms"], 0.9, f" {h['hot_threshold']} misses at "
            f"{h['rate_per_s']:.0f}/s", fontsize=7, color="grey")
    ax.set_xlabel("ms from the first GET (time to hot) / from the set's reply (re-hot) until "
                  "the switch answers")
    ax.set_xscale("log")
    ax.set_ylabel("fraction of keys")
    ax.set_ylim(0, 1.05)
    ax.legend(fontsize=8, loc="lower right")
    _save(fig, ax, f"p4cache promotion seen by a client at {h['rate_per_s']:.0f} GETs/s - "
          f"{title}", outdir / "time_to_hot.png", paths)
    return paths


def main(argv: list[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list[:1] == ["--worker"]:
        return worker_main()
    ap = argparse.ArgumentParser(prog="p4cache-bench gate", description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: 300 requests per variant, 3 hot keys, 2 re-hot samples")
    ap.add_argument("--requests", type=int,
                    help="requests per variant and target (default 2000, --quick 300)")
    ap.add_argument("--rounds", type=int, help="interleaved rounds (default 10, --quick 2)")
    ap.add_argument("--hot-keys", type=int, help="time-to-hot samples (default 20, --quick 3)")
    ap.add_argument("--verified", type=int,
                    help="sets of a key seen cached just before (default 100, --quick 5)")
    ap.add_argument("--rehot", type=int, help="re-hot samples (default 20, --quick 2)")
    ap.add_argument("--rate", type=float, default=200.0, help="UDP GETs/s per hot key")
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--plot", type=Path, default=PLOT_DIR,
                    help="directory for gate_latency.png and time_to_hot.png (default docs/)")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/p4cache-bench-gate"),
                    help="the lab's logs")
    args = ap.parse_args(args_list)
    if needs_root("gate"):
        return 2
    q = args.quick
    s = Settings(requests=args.requests or (300 if q else 2000),
                 rounds=args.rounds or (2 if q else 10), warmup=50 if q else 200,
                 hot_keys=args.hot_keys or (3 if q else 20),
                 verified=args.verified or (5 if q else 100), rehot=args.rehot or (2 if q else 20),
                 rate=args.rate, max_wait_s=6.0)
    if s.requests < s.rounds:
        ap.error("--requests must be at least --rounds")
    result = run_bench(s, args.workdir)
    print_summary(result)
    write_results(result, args.out)
    for p in plot(result, args.plot):
        print(f"plot: {p}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
