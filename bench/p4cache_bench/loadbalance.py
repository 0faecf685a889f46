"""Load balance across rate-limited memcached servers, with the switch cache and without it.

NetCache's claim (/work/shared/reference/prior-art.md §1.1): the switch is a load-balancing
cache; serving the hottest keys in the network evens out the load on the servers, so a skewed
workload is no longer limited by the server that owns the hottest keys.

Setup: ``p4cache.lab`` with four memcached servers and two client hosts on softnic with the
cache's program, an agent on every server, the controller. Each server gets a real limit: an
nftables rule in its namespace drops UDP to memcached's port above ``--limit`` packets/s
(``limit rate over``; the VM's kernel has no tc police action). Keys (BMC's setting: 16-byte keys,
32-byte values, ``POOLS["bmc"]``) are sharded over the servers by ``p4cache.ring.HashRing``; every
key is stored through its server's gate first.

Two client processes (``--worker``, one per client namespace) send Zipf-0.99 GETs open loop
(Poisson arrivals) at increasing offered rates, each GET to the key's owner, and time every reply.
A step passes if fewer than 1 % of its GETs go unanswered and the p99 latency is within
``--bound-ms``; the throughput of a configuration is the answered rate of its highest passing
step. "Without the cache": the controller pushes the pipeline and is then stopped, so nothing is
ever promoted and every GET goes to its server. "With the cache": the controller runs again, a
warm-up at ``--warm-rate`` lets the hot keys be promoted, then the same steps. The nftables
counters give each server's offered load per step (passed + dropped).

Run: ``p4cache-bench loadbalance`` (root: network namespaces); ``--quick`` for a smoke run.
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
    ask_all,
    close_all,
    controller_status,
    counter_delta,
    install_limit,
    limit_counters,
    other_labs,
    pct,
    serve_worker,
    start_system,
    start_workers,
    warn_other_labs,
)
from p4cache_bench.common import (
    add_target_args,
    machine_info,
    needs_root,
    placed_path,
    progress_bar,
    pyplot,
    report,
    save_figure,
)

RESULTS = paths.bench_results() / "loadbalance.json"
PLOT = paths.bench_plots() / "bench_loadbalance.png"
TARGET_GAIN = 3.0          # the issue: >= 3x the throughput without the cache
LOSS_OK = 0.01
DEFAULT_RATES = [150, 180, 220, 260, 310, 370, 450, 540, 650, 780, 940, 1130, 1350, 1620, 1950,
                 2340]
QUICK_RATES = [300, 1100]
SLOW_US = 20_000           # replies slower than this are listed with their send time


# ----------------------------------------------------------------------------- worker side

@dataclass
class KeySpace:
    keys: list[bytes]          # index rank-1
    owner: list[int]           # index of the owning server, per rank
    servers: list[str]
    zipf: object               # a p4cache.workload.generator.Zipf with this shard's seed


def key_space(n: int, skew: float, seed: int, servers: list[str]) -> KeySpace:
    from p4cache.ring import HashRing
    from p4cache.workload.generator import Workload

    wl = Workload(n, skew, "bmc", seed=seed)
    ring = HashRing(servers)
    keys = [wl.key(r) for r in range(1, n + 1)]
    return KeySpace(keys, [servers.index(ring.owner(k)) for k in keys], servers, wl.zipf)


def value_for(rank: int, length: int) -> bytes:
    return f"v{rank}-".encode().ljust(length, b"x")[:length]


def _op_populate(cmd: dict) -> dict:
    """Every key stored through its server's gate (TCP)."""
    from p4cache.workload.clients import TcpClient
    from p4cache.workload.generator import Workload

    wl = Workload(cmd["keys"], cmd["skew"], "bmc")
    ks = key_space(cmd["keys"], cmd["skew"], 0, cmd["servers"])
    clients = [TcpClient(s) for s in ks.servers]
    bad = 0
    for rank, key in enumerate(ks.keys, start=1):
        if clients[ks.owner[rank - 1]].set(key, value_for(rank, wl.value_len(rank))) != "ok":
            bad += 1
    for c in clients:
        c.close()
    return {"stored": len(ks.keys) - bad, "failed": bad}


def _drain(sock: socket.socket, pending: dict[int, tuple[float, int]], lat: list[int],
           got: list[int], slow: list[tuple[float, int]]) -> int:
    """Every reply waiting on the socket; returns how many were not a VALUE reply."""
    bad = 0
    while True:
        try:
            data = sock.recv(65536)
        except BlockingIOError:
            return bad
        t = time.monotonic()
        if len(data) < 8:
            continue
        rid = struct.unpack_from("!H", data)[0]
        entry = pending.pop(rid, None)
        if entry is None:
            continue
        lat.append(int((t - entry[0]) * 1e6))
        got[entry[1]] += 1
        if lat[-1] > SLOW_US and len(slow) < 500:
            slow.append((entry[0], lat[-1]))
        if not data[8:].startswith(b"VALUE "):
            bad += 1


def _op_run(cmd: dict) -> dict:
    """Open-loop Zipf GETs at ``rate`` for ``duration`` s, then ``drain_s`` for late replies."""
    from p4cache import dataplane as dp
    from p4cache.workload.generator import derive_seed, open_loop

    ks = key_space(cmd["keys"], cmd["skew"], 0, cmd["servers"])
    zipf = ks.zipf.with_seed(derive_seed(cmd["seed"], "zipf"))
    times = open_loop(cmd["rate"], cmd["duration"], cmd["seed"])
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
    sock.setblocking(False)
    n, nsrv = len(times), len(ks.servers)
    pending: dict[int, tuple[float, int]] = {}
    lat: list[int] = []
    sent, got = [0] * nsrv, [0] * nsrv
    lag_max, bad, i = 0.0, 0, 0
    slow: list[tuple[float, int]] = []
    t0 = time.monotonic() + 0.02
    end = t0 + cmd["duration"] + cmd["drain_s"]
    try:
        while True:
            now = time.monotonic()
            while i < n and t0 + times[i] <= now:
                rank = zipf.sample()
                srv = ks.owner[rank - 1]
                rid = i % 0xFFFF + 1
                sock.sendto(dp.get_request(rid, ks.keys[rank - 1]),
                            (ks.servers[srv], dp.MEMCACHED_PORT))
                pending[rid] = (time.monotonic(), srv)
                sent[srv] += 1
                lag_max = max(lag_max, now - t0 - times[i])
                i += 1
            if i >= n and (not pending or now >= end):
                break
            wait = (t0 + times[i] - now) if i < n else end - now
            ready, _, _ = select.select([sock], [], [], max(0.0, wait))
            if ready:
                bad += _drain(sock, pending, lat, got, slow)
    finally:
        sock.close()
    return {"sent": sum(sent), "received": len(lat), "not_value": bad, "lat_us": lat,
            "sent_by_server": sent, "received_by_server": got,
            "send_lag_max_ms": round(lag_max * 1e3, 2),
            "slow": [(round(t - t0, 3), us // 1000) for t, us in slow]}


def worker_main() -> int:
    return serve_worker({"populate": _op_populate, "run": _op_run})


# ----------------------------------------------------------------------------- driver side

@dataclass
class Settings:
    keys: int
    skew: float
    limit_pps: int            # per server: UDP to memcached's port above this is dropped
    burst: int                # the limit's burst, packets
    bound_ms: float           # a step passes with p99 <= this and < 1 % unanswered
    step_s: float
    drain_s: float
    rates: list[int]
    warm_rate: int
    warm_s: float
    settle_s: float = 3.0
    servers: int = 4
    clients: int = 2
    stop_after_failures: int = 3
    target: str = "softnic"    # the lab's engine (common.add_target_args)
    placement: str = "switch"


def step_result(rate: int, s: Settings, outs: list[dict], nft: dict[str, dict[str, int]],
                servers: list[str]) -> dict:
    """One step's numbers from the workers' answers and the servers' nft counter deltas."""

    lat = sorted(x for o in outs for x in o["lat_us"])
    sent = sum(o["sent"] for o in outs)
    recv = len(lat)
    bound_us = s.bound_ms * 1e3
    within = sum(1 for x in lat if x <= bound_us)
    at_servers = sum(v["passed"] + v["dropped"] for v in nft.values())
    busiest = max(v["passed"] + v["dropped"] for v in nft.values())
    loss = 1 - recv / sent if sent else 1.0
    p99 = pct(lat, 99) / 1e3 if lat else None
    return {
        "target_rps": rate, "offered_rps": round(sent / s.step_s, 1),
        "answered_rps": round(recv / s.step_s, 1),
        "answered_within_bound_rps": round(within / s.step_s, 1),
        "loss": round(loss, 5),
        "p50_ms": round(pct(lat, 50) / 1e3, 3) if lat else None,
        "p99_ms": round(p99, 3) if p99 is not None else None,
        "not_value_replies": sum(o["not_value"] for o in outs),
        "send_lag_max_ms": max(o["send_lag_max_ms"] for o in outs),
        "slow_share": round(sum(1 for x in lat if x > bound_us) / recv, 5) if recv else None,
        "slow_replies_s_ms": sorted(x for o in outs for x in o["slow"])[:300],
        "switch_share": round(1 - at_servers / sent, 4) if sent else None,
        # the offered rate at which the busiest server would reach its limit, this step's mix
        "server_bound_rps": round(s.limit_pps * sent / busiest, 1) if busiest else None,
        "per_server": {ip: {"sent_rps": round(sum(o["sent_by_server"][j] for o in outs)
                                              / s.step_s, 1),
                            "at_server_rps": round((nft[ip]["passed"] + nft[ip]["dropped"])
                                                   / s.step_s, 1),
                            "passed_rps": round(nft[ip]["passed"] / s.step_s, 1),
                            "dropped_rps": round(nft[ip]["dropped"] / s.step_s, 1)}
                       for j, ip in enumerate(servers)},
        "ok": bool(sent) and loss < LOSS_OK and p99 is not None and p99 <= s.bound_ms,
    }


def run_step(lab, workers, s: Settings, rate: float, duration: float, seed: int,  # noqa: ANN001
             servers: list[str]) -> tuple[list[dict], dict]:

    before = limit_counters(lab)
    cmds = [{"op": "run", "keys": s.keys, "skew": s.skew, "servers": servers,
             "rate": rate / len(workers), "duration": duration, "drain_s": s.drain_s,
             "seed": seed * 100 + i} for i in range(len(workers))]
    outs = ask_all(workers, cmds)
    return outs, counter_delta(limit_counters(lab), before)


def sweep(lab, workers, s: Settings, servers: list[str], name: str, progress,  # noqa: ANN001
          seed0: int) -> list[dict]:
    """The rate steps in order; stops after ``stop_after_failures`` failing steps in a row."""
    task = progress.add_task(name, total=len(s.rates))
    steps: list[dict] = []
    fails = 0
    for k, rate in enumerate(s.rates):
        outs, nft = run_step(lab, workers, s, rate, s.step_s, seed0 + k, servers)
        st = step_result(rate, s, outs, nft, servers)
        steps.append(st)
        progress.console.print(
            f"  {name} {rate:>5}/s: answered {st['answered_rps']:.0f}/s, loss {st['loss']:.1%},"
            f" p99 {st['p99_ms']} ms, switch share {st['switch_share']}"
            f" -> {'ok' if st['ok'] else 'FAIL'}")
        progress.advance(task)
        fails = 0 if st["ok"] else fails + 1
        if fails >= s.stop_after_failures:
            break
    progress.update(task, completed=len(s.rates))
    return steps


def throughput(steps: list[dict]) -> dict:
    ok = [x for x in steps if x["ok"]]
    best = max(ok, key=lambda x: x["answered_rps"]) if ok else None
    return {"throughput_rps": best["answered_rps"] if best else 0.0,
            "at_offered_rps": best["offered_rps"] if best else 0.0,
            "first_failing_step_rps": next((x["target_rps"] for x in steps if not x["ok"]),
                                           None)}


def expected(s: Settings, servers: list[str]) -> dict:
    """What the ring and Zipf predict: each server's share of GETs without a cache."""
    from p4cache.ring import HashRing
    from p4cache.workload.generator import Workload

    wl = Workload(s.keys, s.skew, "bmc")
    ring = HashRing(servers)
    share = dict.fromkeys(servers, 0.0)
    for r in range(1, s.keys + 1):
        share[ring.owner(wl.key(r))] += wl.zipf.pmf(r)
    top = max(share.values())
    return {"server_share_no_cache": {k: round(v, 4) for k, v in share.items()},
            "max_share": round(top, 4),
            "predicted_no_cache_rps": round(s.limit_pps / top, 1),
            "note": "the hottest server saturates first: limit / its share of GETs"}


def bring_up(lab, s: Settings, console) -> list:  # noqa: ANN001
    """Agents, controller, keys stored through the gates, rate limits; returns the workers."""
    from p4cache.lab.lab import MEMCACHED_UDP

    start_system(lab)
    workers = start_workers(lab.clients, "p4cache_bench.loadbalance")
    try:
        pop = ask_all(workers[:1], [{"op": "populate", "keys": s.keys, "skew": s.skew,
                                     "servers": [h.ip for h in lab.servers]}])[0]
        if pop["failed"]:
            raise RuntimeError(f"populate: {pop}")
    except BaseException:
        close_all(workers)
        raise
    console.print(f"stored {pop['stored']} keys through the gates")
    install_limit(lab, s.limit_pps, s.burst, MEMCACHED_UDP)
    return workers


def cache_state(lab) -> dict:  # noqa: ANN001

    st = controller_status(lab)
    return {"cached": st["cache"]["cached"], "filled": st["cache"]["filled"],
            "promotions": st["promotions"], "refills": st["refills"],
            "evictions": st["evictions"], "digests": st["digests"],
            "aborted": st["aborted"], "switch_counters": st["switch_counters"],
            "promotion_latency": st["latency"]["promotion"]}


def no_cache_phase(lab, workers, s: Settings, result: dict, progress) -> None:  # noqa: ANN001
    """The controller pushed the pipeline and is stopped: the switch only forwards."""
    lab.stop_controller()
    servers = [h.ip for h in lab.servers]
    result["no_cache"] = {"steps": sweep(lab, workers, s, servers, "no cache", progress, 1000),
                          "controller_running": lab.running("controller")}


def cache_phase(lab, workers, s: Settings, result: dict, progress) -> None:  # noqa: ANN001
    """A warm-up at ``warm_rate`` promotes the hot keys, then the steps with the controller."""
    servers = [h.ip for h in lab.servers]
    task = progress.add_task(f"warm-up {s.warm_rate}/s for {s.warm_s:.0f} s", total=1)
    outs, nft = run_step(lab, workers, s, s.warm_rate, s.warm_s, 1, servers)
    progress.advance(task)
    time.sleep(s.settle_s)   # the warm-up's backlog drains before the first step
    warm = step_result(s.warm_rate, Settings(**{**asdict(s), "step_s": s.warm_s}), outs, nft,
                       servers)
    result["warm_up"] = {**warm, "cache_after": cache_state(lab)}
    progress.console.print(f"  warm-up: switch share {warm['switch_share']}, "
                           f"{result['warm_up']['cache_after']['cached']} keys cached")
    result["cache"] = {"steps": sweep(lab, workers, s, servers, "cache", progress, 2000),
                       "state_at_end": cache_state(lab)}


def in_lab(s: Settings, workdir: Path, result: dict, phase, progress) -> None:  # noqa: ANN001
    """A fresh lab (agents, controller, keys, limits) for one configuration."""
    from p4cache.lab import Lab, LabSpec

    t0 = time.monotonic()
    with Lab(LabSpec(servers=s.servers, clients=s.clients, target=s.target), workdir) as lab:
        others = warn_other_labs(lab.tag, progress.console)
        workers = bring_up(lab, s, progress.console)
        servers = [h.ip for h in lab.servers]
        result.setdefault("expected", expected(s, servers))
        result.setdefault("lab", {
            "servers": servers, "clients": [h.ip for h in lab.clients],
            "limit": f"nft: udp dport 11211 limit rate over {s.limit_pps}/second burst "
                     f"{s.burst} packets drop (server's input hook)",
            "setup_s": [], "other_labs": []})
        result["lab"]["setup_s"].append(round(time.monotonic() - t0, 1))
        result["lab"]["other_labs"] += others
        try:
            phase(lab, workers, s, result, progress)
        finally:
            close_all(workers)
        result["lab"]["other_labs"] = sorted(set(result["lab"]["other_labs"])
                                             | set(other_labs(lab.tag)))


def run_bench(s: Settings, workdir: Path) -> dict:
    from rich.console import Console

    t_start = time.monotonic()
    result: dict = {"machine": machine_info(), "settings": asdict(s)}
    with progress_bar(Console(stderr=True)) as progress:
        # Two labs, one after the other: a restarted controller keeps the switch's pipeline
        # and state, so the configuration without the cache gets a lab of its own.
        in_lab(s, workdir / "no-cache", result, no_cache_phase, progress)
        in_lab(s, workdir / "cache", result, cache_phase, progress)
    summarize(result)
    result["duration_s"] = round(time.monotonic() - t_start, 1)
    result["machine"]["loadavg_at_end"] = list(os.getloadavg())
    return result


def summarize(result: dict) -> None:
    nc, c = throughput(result["no_cache"]["steps"]), throughput(result["cache"]["steps"])
    result["no_cache"].update(nc)
    result["cache"].update(c)
    gain = c["throughput_rps"] / nc["throughput_rps"] if nc["throughput_rps"] else None
    s = result["settings"]
    result["target"] = {
        "source": "the issue (NetCache: the cache balances the load)", "gain_min": TARGET_GAIN,
        "criterion": f"throughput = answered GETs/s of the highest step with < 1 % unanswered "
                     f"and p99 <= {s['bound_ms']} ms",
        "no_cache_rps": nc["throughput_rps"], "cache_rps": c["throughput_rps"],
        "gain": round(gain, 2) if gain else None,
        "met": bool(gain) and gain >= TARGET_GAIN}


# ----------------------------------------------------------------------------- report

def print_summary(result: dict) -> None:
    t = result["target"]
    e = result["expected"]
    print(f"without the cache: {t['no_cache_rps']:.0f} GETs/s (predicted from the hottest "
          f"server's share {e['max_share']}: {e['predicted_no_cache_rps']:.0f}/s)")
    print(f"with the cache:    {t['cache_rps']:.0f} GETs/s "
          f"(switch share {result['warm_up']['switch_share']} after warm-up)")
    print(f"target: >= {t['gain_min']:.0f}x -> {t['gain']}x: {'met' if t['met'] else 'NOT met'}")


def _best_step(steps: list[dict]) -> dict | None:
    ok = [x for x in steps if x["ok"]]
    return max(ok, key=lambda x: x["answered_rps"]) if ok else (steps[0] if steps else None)


def plot(result: dict, path: Path) -> Path | None:
    if (plt := pyplot()) is None:
        return None
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 5))
    s = result["settings"]
    for name, color in (("no_cache", "#dd8452"), ("cache", "#4c72b0")):
        steps = result[name]["steps"]
        xs = [x["offered_rps"] for x in steps]
        ax1.plot(xs, [x["answered_within_bound_rps"] for x in steps], "-", color=color,
                 label=f"{name.replace('_', ' ')}: answered within {s['bound_ms']:.0f} ms")
        for x in steps:
            ax1.plot(x["offered_rps"], x["answered_within_bound_rps"],
                     "o" if x["ok"] else "x", color=color, mfc=color if x["ok"] else "none")
        ax1.axvline(result[name]["throughput_rps"], color=color, ls=":", lw=1)
    top = max(x["offered_rps"] for n in ("no_cache", "cache") for x in result[n]["steps"])
    ax1.plot([0, top], [0, top], color="grey", lw=0.6, ls="--", label="offered")
    ax1.set_xlabel("offered GETs/s (open loop, Zipf 0.99)")
    ax1.set_ylabel("GETs/s answered within the bound")
    ax1.set_title(f"o: step passes (< 1 % unanswered, p99 <= {s['bound_ms']:.0f} ms), x: fails;"
                  f" gain {result['target']['gain']}x", fontsize=9)
    ax1.legend(fontsize=8)
    servers = result["lab"]["servers"]
    width = 0.38
    for j, (name, color) in enumerate((("no_cache", "#dd8452"), ("cache", "#4c72b0"))):
        st = _best_step(result[name]["steps"])
        if st is None:
            continue
        vals = [st["per_server"][ip]["at_server_rps"] for ip in servers]
        pos = [i + (j - 0.5) * width for i in range(len(servers))]
        bars = ax2.bar(pos, vals, width, color=color,
                       label=f"{name.replace('_', ' ')} at {st['offered_rps']:.0f}/s offered "
                             f"(switch answered {st['switch_share']:.0%})")
        ax2.bar_label(bars, labels=[f"{v:.0f}" for v in vals], fontsize=7)
    ax2.axhline(s["limit_pps"], color="black", lw=0.8, ls="--")
    ax2.text(-0.5, s["limit_pps"], " per-server limit", va="bottom", fontsize=7)
    ax2.set_xticks(range(len(servers)), servers)
    ax2.set_ylabel("GETs/s reaching the server (nft: passed + dropped)")
    ax2.set_title("per-server load at each configuration's highest passing step", fontsize=9)
    ax2.set_ylim(0, s["limit_pps"] * 1.4)
    ax2.legend(fontsize=7, loc="upper right")
    m = result["machine"]
    fig.suptitle(f"p4cache load balance: 4 memcached servers limited to {s['limit_pps']} GETs/s "
                 f"each, {s['keys']} keys - shared {m['cpus']}-core VM, commit "
                 f"{m['git_commit']}", fontsize=9)
    return save_figure(fig, path)


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",")]


def main(argv: list[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list[:1] == ["--worker"]:
        return worker_main()
    ap = argparse.ArgumentParser(prog="p4cache-bench loadbalance",
                                 description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="smoke run: two steps of 2 s each")
    ap.add_argument("--keys", type=int, default=1000)
    ap.add_argument("--skew", type=float, default=0.99)
    ap.add_argument("--limit", type=int, default=150, help="GETs/s per server (nft limit)")
    ap.add_argument("--burst", type=int, default=15, help="the limit's burst, packets")
    ap.add_argument("--bound-ms", type=float, default=20.0, help="p99 bound of a passing step")
    ap.add_argument("--step-s", type=float, help="seconds per step (default 4, --quick 2)")
    ap.add_argument("--rates", type=_ints, help="offered GETs/s per step, comma-separated")
    ap.add_argument("--warm-rate", type=int, default=2500)
    ap.add_argument("--warm-s", type=float, help="warm-up seconds (default 12, --quick 3)")
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--plot", type=Path, default=PLOT)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/p4cache-bench-loadbalance"))
    add_target_args(ap, placements=False)   # four servers: the lab's host placement runs one
    args = ap.parse_args(args_list)
    if needs_root("loadbalance"):
        return 2
    q = args.quick
    s = Settings(keys=args.keys, skew=args.skew, limit_pps=args.limit, burst=args.burst,
                 bound_ms=args.bound_ms, step_s=args.step_s or (2.0 if q else 4.0),
                 drain_s=0.3 if q else 0.5,
                 rates=args.rates or (QUICK_RATES if q else DEFAULT_RATES),
                 warm_rate=args.warm_rate,
                 warm_s=args.warm_s or (2.5 if q else 12.0), settle_s=1.5 if q else 3.0,
                 target=args.target)
    where = {"target": s.target}
    report(run_bench(s, args.workdir), placed_path(args.out, RESULTS, where),
           placed_path(args.plot, PLOT, where), print_summary, plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
