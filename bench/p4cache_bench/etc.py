"""Facebook ETC's write-heavy mix through the whole system: what coherence costs, and whether it
holds.

Setup: ``p4cache.lab`` with two memcached servers (keys sharded by ``p4cache.ring.HashRing``), an
agent on each, the controller, softnic with the cache's program, and two client hosts with
``--procs`` client processes each (``--worker``). Every process draws operations from
``Workload(keys, 0.99, "etc").shard(i, n)``: GET 73.4 %, SET 2.3 %, DELETE 24.0 %, ETC's key and
value sizes (``POOLS["etc"]``; values capped at ``--value-cap`` bytes so every UDP reply fits one
datagram). GETs are UDP through the switch, SETs and DELETEs TCP through the owning server's
agent (the write gate). ETC is a look-aside cache: a GET that misses in memcached is followed by
a SET of a fresh value (a "fill", as the application would after reading its database), so
deleted keys come back; ``--no-fill`` turns that off.

Each process paces its operations at ``--rate`` per second (one at a time) and records every one
with its invocation and completion times (CLOCK_MONOTONIC) in the coherence test's format
(``p4cache.workload.coherence.Recorder``); every written value is unique ("<client>.<seq>", padded
to the key's size). Replies are read through a raw socket and told apart by the UDP checksum: the
switch's are 0 (gate.py's method). The merged history goes to ``p4cache-lincheck``.

Reported: hit share (GETs answered by the switch), GET latency of hits and misses, write latency
through the gate, the agents' invalidations, the controller's promotions, refills and evictions,
and the checker's verdict.

Run: ``p4cache-bench etc`` (root: network namespaces); ``--quick`` for a smoke run.
"""

from __future__ import annotations

import argparse
import os
import select
import socket
import struct
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from p4cache import paths
from p4cache_bench.cachelab import (
    agent_status,
    ask_all,
    close_all,
    other_labs,
    serve_worker,
    settled_controller_status,
    start_system,
    start_workers,
    summary,
)
from p4cache_bench.common import machine_info, needs_root, pyplot, report, save_figure

RESULTS = paths.bench_results() / "etc.json"
PLOT = paths.bench_plots() / "bench_etc.png"
LAT_KINDS = ("get_hit", "get_miss", "set", "delete", "fill")


# ----------------------------------------------------------------------------- worker side

class UdpGetter:
    """UDP GETs through the switch; replies read from a raw socket so the UDP checksum shows
    who answered (0: the switch)."""

    def __init__(self, timeout: float) -> None:
        self.u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.u.bind(("0.0.0.0", 0))
        self.u.setblocking(False)
        self.port = self.u.getsockname()[1]
        self.raw = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_UDP)
        self.raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
        self.timeout = timeout
        self.rid = 0

    def _drain_udp(self) -> None:
        while True:
            try:
                self.u.recv(65536)
            except BlockingIOError:
                return

    def _match(self, data: bytes, rid: int) -> tuple[bytes, bool] | None:
        from p4cache import dataplane as dp

        ihl = (data[0] & 0x0F) * 4
        sport, dport, _, csum = struct.unpack_from("!HHHH", data, ihl)
        payload = data[ihl + 8:]
        if sport != dp.MEMCACHED_PORT or dport != self.port or len(payload) < 8:
            return None
        got, _seq, total = struct.unpack_from("!HHH", payload)
        if got != rid:
            return None
        return (payload[8:] if total == 1 else b""), csum == 0

    def get(self, server: str, key: bytes) -> tuple[object, bool | None]:
        """(value bytes | None | UNKNOWN, from the switch?)."""
        from p4cache import dataplane as dp
        from p4cache.workload.clients import UNKNOWN, parse_get_reply

        self.rid = self.rid % 0xFFFF + 1
        self.u.sendto(dp.get_request(self.rid, key), (server, dp.MEMCACHED_PORT))
        deadline = time.monotonic() + self.timeout
        try:
            while (left := deadline - time.monotonic()) > 0:
                if not select.select([self.raw], [], [], left)[0]:
                    continue
                m = self._match(self.raw.recv(65536), self.rid)
                if m is None:
                    continue
                body, from_switch = m
                try:
                    return parse_get_reply(body, key), from_switch
                except ValueError:
                    return UNKNOWN, from_switch
            return UNKNOWN, None
        finally:
            self._drain_udp()

    def close(self) -> None:
        self.u.close()
        self.raw.close()


@dataclass
class Client:
    """One worker's run: its stream, sockets, history and counters."""

    cmd: dict
    lat: dict[str, list[int]]
    counts: dict[str, int]

    @classmethod
    def new(cls, cmd: dict) -> Client:
        return cls(cmd, {k: [] for k in LAT_KINDS},
                   {"get": 0, "set": 0, "delete": 0, "fill": 0, "switch_replies": 0,
                    "get_unknown": 0, "write_unknown": 0, "write_error": 0, "not_sent": 0})


def _value(client: int, seq: int, length: int) -> bytes:
    tag = f"{client}.{seq}".encode()
    return tag + b"." + b"x" * max(0, length - len(tag) - 1) if length > len(tag) else tag


def _record_write(c: Client, rec, key: str, verb: str, value: bytes | None, call: int,  # noqa: ANN001
                  outcome: str, via: str = "tcp") -> None:
    from p4cache.workload.clients import ERROR, NOT_SENT, UNKNOWN

    if outcome == NOT_SENT:
        c.counts["not_sent"] += 1
        return
    ret = time.monotonic_ns()
    done = outcome not in (UNKNOWN, ERROR)
    if outcome == UNKNOWN:
        c.counts["write_unknown"] += 1
    elif outcome == ERROR:
        c.counts["write_error"] += 1
    rec.record(key, verb, value.decode() if value is not None else None, 0, via, call,
               ret if done else None, outcome)


def _one_op(c: Client, op, rec, udp: UdpGetter, tcp: dict, owner, seq: int) -> None:  # noqa: ANN001
    """Run and record one operation (and the fill after a GET that found nothing)."""
    from p4cache.workload.clients import UNKNOWN
    from p4cache.workload.generator import GET, SET

    cap, client = c.cmd["value_cap"], c.cmd["client"]
    server = owner(op.key)
    key = op.key.decode("latin-1")
    call = time.monotonic_ns()
    if op.kind == GET:
        c.counts["get"] += 1
        got, from_switch = udp.get(server, op.key)
        ret = time.monotonic_ns()
        if got == UNKNOWN:
            c.counts["get_unknown"] += 1
            rec.record(key, "get", None, 0, "udp", call, None, UNKNOWN)
            return
        c.counts["switch_replies"] += int(bool(from_switch))
        c.lat["get_hit" if from_switch else "get_miss"].append((ret - call) // 1000)
        rec.record(key, "get", None, 0, "udp", call, ret,
                   None if got is None else got.decode("latin-1"))
        if got is None and c.cmd["fill"]:
            value = _value(client, seq, min(op.value_len, cap))
            t = time.monotonic_ns()
            _record_write(c, rec, key, "set", value, t, tcp[server].set(op.key, value))
            c.counts["fill"] += 1
            c.lat["fill"].append((time.monotonic_ns() - t) // 1000)
        return
    if op.kind == SET:
        value = _value(client, seq, min(op.value_len, cap))
        _record_write(c, rec, key, "set", value, call, tcp[server].set(op.key, value))
    else:
        value = None
        _record_write(c, rec, key, "delete", None, call, tcp[server].delete(op.key))
    c.counts[op.kind] += 1
    c.lat[op.kind].append((time.monotonic_ns() - call) // 1000)


def _op_run(cmd: dict) -> dict:
    from p4cache.ring import HashRing
    from p4cache.workload.clients import TcpClient
    from p4cache.workload.coherence import Recorder
    from p4cache.workload.generator import Workload

    wl = Workload(cmd["keys"], cmd["skew"], "etc", seed=cmd["seed"]).shard(cmd["shard"],
                                                                          cmd["shards"])
    ring = HashRing(cmd["servers"])
    owners: dict[bytes, str] = {}

    def owner(key: bytes) -> str:
        if key not in owners:
            owners[key] = ring.owner(key)
        return owners[key]

    c = Client.new(cmd)
    rec = Recorder(Path(cmd["history"]), cmd["client"])
    udp = UdpGetter(cmd["get_timeout_s"])
    tcp = {s: TcpClient(s, timeout=3.0) for s in cmd["servers"]}
    interval, seq = 1.0 / cmd["rate"], 0
    t0 = time.monotonic()
    next_at, end = t0, t0 + cmd["duration"]
    try:
        while (now := time.monotonic()) < end:
            if now < next_at:
                time.sleep(next_at - now)
            next_at += interval
            seq += 1
            _one_op(c, wl.next(), rec, udp, tcp, owner, seq)
    finally:
        rec.close()
        udp.close()
        for t in tcp.values():
            t.close()
    return {"client": cmd["client"], "operations": rec.count, "counts": c.counts,
            "lat_us": c.lat, "elapsed_s": round(time.monotonic() - t0, 2)}


def worker_main() -> int:
    return serve_worker({"run": _op_run})


# ----------------------------------------------------------------------------- driver side

@dataclass
class Settings:
    keys: int
    skew: float
    duration_s: float
    rate: float               # operations per second per client process
    procs: int                # client processes per client host
    value_cap: int
    fill: bool
    get_timeout_s: float
    check_timeout_s: float
    servers: int = 2
    clients: int = 2


def counters(lab) -> dict:  # noqa: ANN001
    """The controller's and the agents' counters, to subtract."""

    st = settled_controller_status(lab)   # switch counters read after the call began
    agents = [agent_status(h) for h in lab.servers]
    return {"controller": {k: st[k] for k in ("promotions", "refills", "refill_asks",
                                              "evictions", "digests", "promotions_started")},
            "aborted": st["aborted"], "switch": st["switch_counters"],
            "cached": st["cache"]["cached"],
            "agents": [a["counters"] for a in agents],
            "agent_latency": [a["latency"] for a in agents],
            "promotion_latency": st["latency"]["promotion"]}


def _delta(a: dict, b: dict) -> dict:
    return {k: a[k] - b.get(k, 0) for k in a if isinstance(a[k], int | float)}


def system_costs(before: dict, after: dict) -> dict:
    agents: dict[str, int] = {}
    for a1, a0 in zip(after["agents"], before["agents"], strict=True):
        for k, v in _delta(a1, a0).items():
            agents[k] = agents.get(k, 0) + v
    return {"controller": _delta(after["controller"], before["controller"]),
            "aborted_at_end": after["aborted"],
            "switch_counters": _delta(after["switch"], before["switch"]),
            "agents": agents, "agent_latency_at_end": after["agent_latency"],
            "promotion_latency_at_end": after["promotion_latency"],
            "cached_at_end": after["cached"]}


def merge(outs: list[dict], s: Settings) -> dict:

    counts: dict[str, int] = {}
    for o in outs:
        for k, v in o["counts"].items():
            counts[k] = counts.get(k, 0) + v
    lat = {k: [x for o in outs for x in o["lat_us"][k]] for k in LAT_KINDS}
    answered = len(lat["get_hit"]) + len(lat["get_miss"])
    return {"operations": sum(o["operations"] for o in outs), "counts": counts,
            "ops_per_s": round(sum(o["operations"] for o in outs) / s.duration_s, 1),
            "hit_share": round(len(lat["get_hit"]) / answered, 4) if answered else None,
            "latency_us": {k: summary(v, "us") for k, v in lat.items()},
            "cdf_us": {k: sorted(v)[:: max(1, len(v) // 400)] for k, v in lat.items()}}


def run_clients(lab, s: Settings, hist_dir: Path) -> list[dict]:  # noqa: ANN001

    hosts = [h for h in lab.clients for _ in range(s.procs)]
    workers = start_workers(hosts, "p4cache_bench.etc")
    servers = [h.ip for h in lab.servers]
    try:
        cmds = [{"op": "run", "client": i + 1, "shard": i, "shards": len(hosts),
                 "keys": s.keys, "skew": s.skew, "servers": servers, "seed": 1,
                 "rate": s.rate, "duration": s.duration_s, "value_cap": s.value_cap,
                 "fill": s.fill, "get_timeout_s": s.get_timeout_s,
                 "history": str(hist_dir / f"client{i + 1}.jsonl")}
                for i in range(len(hosts))]
        return ask_all(workers, cmds)
    finally:
        close_all(workers)


def check(hist_dir: Path, n: int, timeout_s: float) -> dict:
    from p4cache.lincheck import check_history

    merged = hist_dir / "history.jsonl"
    with open(merged, "w") as fh:
        for i in range(1, n + 1):
            fh.write((hist_dir / f"client{i}.jsonl").read_text())
    t0 = time.monotonic()
    v = check_history(merged, timeout_s=timeout_s)
    results: dict[str, int] = {}
    for r in v.per_key.values():
        results[r.result] = results.get(r.result, 0) + 1
    return {"linearizable": v.ok, "keys": v.keys, "operations": v.operations,
            "dropped": v.dropped, "checker_ms": v.ms, "per_key_results": results,
            "violations": v.violations[:3], "timed_out": v.timed_out, "error": v.error,
            "wall_s": round(time.monotonic() - t0, 1), "history": str(merged)}


def run_bench(s: Settings, workdir: Path) -> dict:
    from rich.console import Console

    from p4cache.lab import Lab, LabSpec

    console = Console(stderr=True)
    t_start = time.monotonic()
    result: dict = {"machine": machine_info(), "settings": asdict(s)}
    hist_dir = workdir / "history"
    hist_dir.mkdir(parents=True, exist_ok=True)
    with Lab(LabSpec(servers=s.servers, clients=s.clients), workdir / "lab") as lab:
        others = other_labs(lab.tag)
        start_system(lab)
        result["lab"] = {"servers": [h.ip for h in lab.servers],
                         "clients": [h.ip for h in lab.clients],
                         "client_processes": s.procs * len(lab.clients),
                         "setup_s": round(time.monotonic() - t_start, 1),
                         "other_labs_at_start": others}
        before = counters(lab)
        with console.status(f"ETC mix: {s.procs * len(lab.clients)} clients x {s.rate:.0f} "
                            f"ops/s for {s.duration_s:.0f} s"):
            outs = run_clients(lab, s, hist_dir)
        result["system"] = system_costs(before, counters(lab))
        result["lab"]["other_labs_at_end"] = other_labs(lab.tag)
    result["workload"] = merge(outs, s)
    with console.status("linearizability check"):
        result["coherence"] = check(hist_dir, len(outs), s.check_timeout_s)
    result["duration_s"] = round(time.monotonic() - t_start, 1)
    result["machine"]["loadavg_at_end"] = list(os.getloadavg())
    return result


# ----------------------------------------------------------------------------- report

def print_summary(result: dict) -> None:
    w, sy, co = result["workload"], result["system"], result["coherence"]
    c = w["counts"]
    print(f"operations: {w['operations']} ({w['ops_per_s']}/s): get {c['get']}, set {c['set']}, "
          f"delete {c['delete']}, fill {c['fill']}; unknown gets {c['get_unknown']}")
    print(f"hit share (GETs answered by the switch): {w['hit_share']}")
    for k, x in w["latency_us"].items():
        if x["n"]:
            print(f"  {k:8s} n={x['n']:6d} p50 {x['p50_us']:7.0f} µs  p99 {x['p99_us']:7.0f} µs")
    ag, ctl = sy["agents"], sy["controller"]
    print(f"invalidations sent by the agents: {ag.get('invalidate_sent', 0)}; promotions "
          f"{ctl['promotions']}, refills {ctl['refills']}, evictions {ctl['evictions']}")
    print(f"linearizable: {co['linearizable']} ({co['keys']} keys, {co['operations']} ops, "
          f"{co['per_key_results']}, {co['wall_s']} s)")


def plot(result: dict, path: Path) -> Path | None:
    if (plt := pyplot()) is None:
        return None
    w, sy = result["workload"], result["system"]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 5))
    colors = {"get_hit": "#4c72b0", "get_miss": "#dd8452", "set": "#55a868",
              "delete": "#c44e52", "fill": "#8172b3"}
    for k, xs in w["cdf_us"].items():
        if xs:
            ax1.step(xs, [(i + 1) / len(xs) for i in range(len(xs))], where="post",
                     color=colors[k], label=f"{k.replace('_', ' ')}: p50 "
                     f"{w['latency_us'][k]['p50_us']:.0f} µs (n={w['latency_us'][k]['n']})")
    ax1.set_xscale("log")
    ax1.set_xlabel("latency, µs (GETs: UDP through the switch; writes: TCP through the gate)")
    ax1.set_ylabel("fraction of operations")
    ax1.legend(fontsize=8, loc="lower right")
    ax1.set_title(f"hit share {w['hit_share']:.1%}; linearizable: "
                  f"{result['coherence']['linearizable']}", fontsize=9)
    c, ag, ctl = w["counts"], sy["agents"], sy["controller"]
    bars = {"GETs": c["get"], "switch hits": c["switch_replies"], "SETs": c["set"],
            "DELETEs": c["delete"], "fills": c["fill"],
            "invalidations": ag.get("invalidate_sent", 0),
            "promotions\n(new + refills)": ctl["promotions"], "refills": ctl["refills"],
            "given up:\nkey gone": sy["aborted_at_end"].get("not-found", 0),
            "evictions": ctl["evictions"], "cached\nat the end": sy["cached_at_end"]}
    b = ax2.bar(list(bars), [max(v, 0.9) for v in bars.values()], color="#4c72b0")
    ax2.bar_label(b, labels=[str(v) for v in bars.values()], fontsize=7)
    ax2.set_yscale("log")
    ax2.tick_params(axis="x", labelsize=7, rotation=30)
    ax2.set_title(f"counts over the {result['settings']['duration_s']:.0f} s run", fontsize=9)
    m = result["machine"]
    fig.suptitle(f"p4cache under Facebook ETC's mix ({result['settings']['keys']} keys, Zipf "
                 f"{result['settings']['skew']}) - shared {m['cpus']}-core VM, commit "
                 f"{m['git_commit']}", fontsize=9)
    return save_figure(fig, path)


def main(argv: list[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list[:1] == ["--worker"]:
        return worker_main()
    ap = argparse.ArgumentParser(prog="p4cache-bench etc", description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="smoke run: 8 s, one process per host")
    ap.add_argument("--keys", type=int, default=1000)
    ap.add_argument("--skew", type=float, default=0.99)
    ap.add_argument("--duration", type=float, help="seconds of traffic (default 60, --quick 8)")
    ap.add_argument("--rate", type=float, default=150.0, help="ops/s per client process")
    ap.add_argument("--procs", type=int, help="client processes per client host (default 2)")
    ap.add_argument("--value-cap", type=int, default=1000)
    ap.add_argument("--no-fill", action="store_true",
                    help="no SET after a GET that found nothing (not look-aside)")
    ap.add_argument("--check-timeout", type=float, default=120.0)
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--plot", type=Path, default=PLOT)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/p4cache-bench-etc"))
    args = ap.parse_args(args_list)
    if needs_root("etc"):
        return 2
    q = args.quick
    s = Settings(keys=args.keys, skew=args.skew, duration_s=args.duration or (8.0 if q else 60.0),
                 rate=args.rate, procs=args.procs or (1 if q else 2), value_cap=args.value_cap,
                 fill=not args.no_fill, get_timeout_s=0.25, check_timeout_s=args.check_timeout)
    report(run_bench(s, args.workdir), args.out, args.plot, print_summary, plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
