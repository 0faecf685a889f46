"""Packets per second of ``softnic run``, in-process and through veth pairs.

Two programs (``p4/`` beside this module): ``l3.p4`` (IPv4 LPM forwarding, like p4lang/tutorials
basic) and ``stateful.p4`` (the same plus two hashes and two register read-modify-writes per
packet, the kind of work the cache does). Each is measured two ways:

* in-process: ``Switch.process_packet`` in a loop over 256 flows with one /32 route, no I/O: the
  engine's own ceiling.
* veth: ``softnic run`` between namespaces h1 and h2 (route installed over P4Runtime like a
  real controller would). A sender in h1 offers a fixed number of frames per step, open loop, at
  fixed rates and then flat out (saturation); a receiver in h2 counts the frames of each step by
  a (step, seq) tag. Per step we report offered and delivered rate and loss; the headline is the
  highest offered rate with < 1 % loss and at least 97 % of it delivered (the switch
  keeps up; the buffer alone would hide loss on a short step) and the delivered rate at
  saturation (what FIDELITY.md quotes for BMv2: about 14k pkt/s default build, 30-39k without
  logging). Sender and receiver are Python processes sharing the machine's cores with the switch,
  as BMv2's traffic generators would.

Every measurement is repeated (medians reported); counts and times are bounded (about 2 minutes
by default, seconds with ``--quick``). Results go to ``bench/results/softnic_pps.json`` with
machine information, and a plot to ``docs/softnic_pps.png``.

Run: ``.venv/bin/python -m p4cache_bench.softnic_pps`` (root needed for the veth part) or
``p4cache-bench softnic``; ``--quick`` for a short smoke run.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from p4cache import paths
from p4cache.program import output_paths
from p4cache_bench.common import (
    Agent,
    agent_argv,
    machine_info,
    pyplot,
    save_figure,
    shown,
    softnic_run,
    step_rates,
    summarize_sweeps,
    write_json,
)
from p4cache_bench.common import median as _median
from softnic.runtime.api import ActionCall, MatchKey, TableEntry

P4_DIR = Path(__file__).resolve().parent / "p4"
PROGRAMS = {"l3": P4_DIR / "l3.p4", "stateful": P4_DIR / "stateful.p4"}
RESULTS = paths.bench_results() / "softnic_pps.json"
PLOT = paths.bench_plots() / "softnic_pps.png"

TABLE = "MyIngress.ipv4_lpm"
ACTION = "MyIngress.ipv4_forward"
H1 = {"mac": "08:00:00:00:01:11", "ip": "10.0.1.1", "gw_mac": "08:00:00:00:01:00"}
H2 = {"mac": "08:00:00:00:02:22", "ip": "10.0.2.2"}
UDP_DPORT = 5555  # the receiver counts only these
N_FLOWS = 256


def mac_int(mac: str) -> int:
    return int(mac.replace(":", ""), 16)


def ip_int(ip: str) -> int:
    return int.from_bytes(socket.inet_aton(ip), "big")


def build_frames(payload_len: int = 18) -> list[bytes]:
    """UDP frames h1 -> h2 from N_FLOWS source ports (so hashes hit many register cells).

    The UDP checksum is 0 ("none"), so the veth sender may tag the payload without breaking it.
    """
    return [bytes(Ether(dst=H1["gw_mac"], src=H1["mac"]) / IP(src=H1["ip"], dst=H2["ip"], ttl=64)
                  / UDP(sport=10000 + i, dport=UDP_DPORT, chksum=0) / (b"p" * payload_len))
            for i in range(N_FLOWS)]


def compile_program(p4: Path, outdir: Path) -> tuple[Path, Path]:
    """``softnic compile`` (p4c-bm2-ss command line) -> (BMv2 JSON, P4Info text)."""
    out_json, out_info = output_paths(outdir, p4.stem)
    res = subprocess.run([sys.executable, "-m", "softnic.cli", "compile", "-o", str(out_json),
                          "--p4runtime-files", str(out_info), str(p4)],
                         capture_output=True, text=True, timeout=120)
    if res.returncode != 0:
        raise RuntimeError(f"compiling {p4} failed:\n{res.stderr}")
    return out_json, out_info


# -- (i) in-process

def inprocess_pps(bmv2_json: Path, seconds: float, max_packets: int) -> dict:
    from softnic.runtime.switch import Switch

    sw = Switch()
    sw.load_json(json.loads(bmv2_json.read_text()))
    sw.table_add(TABLE, TableEntry(key=[MatchKey(value=ip_int(H2["ip"]), prefix_len=32)],
                                   action=ActionCall(ACTION, [mac_int(H2["mac"]), 2])))
    frames = build_frames()
    out = sw.process_packet(1, frames[0])
    if [p for p, _ in out] != [2]:
        raise RuntimeError(f"in-process sanity check failed: {out!r}")
    process = sw.process_packet
    n = 0
    nf = len(frames)
    start = time.perf_counter()
    deadline = start + seconds
    while n < max_packets:
        process(1, frames[n % nf])
        n += 1
        if n % 256 == 0 and time.perf_counter() >= deadline:
            break
    dur = time.perf_counter() - start
    return {"packets": n, "duration_s": round(dur, 4), "pps": round(n / dur, 1)}


# -- (ii) through veth

DEFAULT_RATES = [5_000, 10_000, 20_000, 30_000, 40_000, 50_000, 60_000, 80_000]
QUICK_RATES = [5_000, 20_000]


def _install_route(grpc_addr: str, bmv2_json: Path, p4info: Path) -> None:
    """Push the pipeline and the h2 route over P4Runtime with p4runtime-shell, like a controller."""
    import p4runtime_sh.shell as sh

    # p4runtime-shell echoes what it sends; keep the benchmark's output to the numbers
    with contextlib.redirect_stdout(io.StringIO()):
        sh.setup(device_id=0, grpc_addr=grpc_addr, election_id=(0, 1),
                 config=sh.FwdPipeConfig(str(p4info), str(bmv2_json)))
        try:
            te = sh.TableEntry(TABLE)(action=ACTION)
            te.match["hdr.ipv4.dstAddr"] = f"{H2['ip']}/32"
            te.action["dstAddr"] = H2["mac"]
            te.action["port"] = "2"
            te.insert()
        finally:
            sh.teardown()


@contextlib.contextmanager
def veth_rig(bmv2_json: Path, p4info: Path):  # noqa: ANN201 - yields (sender, receiver)
    """h1 - softnic run - h2 on veth pairs, the route installed, sender and receiver running."""
    from softnic.netns import Topology

    with Topology(2) as topo, softnic_run(topo) as grpc_addr:
        h1, h2 = topo.hosts
        agents: list[Agent] = []
        try:
            _install_route(grpc_addr, bmv2_json, p4info)
            agents.append(Agent(agent_argv(h2, "recv", h2.ifname, str(UDP_DPORT))))
            agents.append(Agent(agent_argv(h1, "send", h1.ifname)))
            agents[1].write({"templates": [f.hex() for f in build_frames()]})
            agents[1].read()
            yield agents[1], agents[0]
        finally:
            for a in agents:
                a.close()


def veth_step(sender: Agent, receiver: Agent, step: int, rate: float, count: int) -> dict:
    """Offer ``count`` frames at ``rate`` (0: saturation); delivered rate and loss."""
    expect_s = count / rate if rate else count / 50_000
    receiver.write({"step": step, "count": count, "first_wait": 5.0 + expect_s, "idle": 0.5})
    sender.write({"step": step, "rate": rate, "count": count})
    s = sender.read()
    r = receiver.read()
    rates = step_rates(s, r)
    return {"target_pps": rate or None, "offered_pps": rates["offered_pps"],
            "delivered_pps": rates["delivered_pps"], "sent": s["sent"],
            "send_errors": s["send_errors"], "received": r["received"],
            "duplicates": r["duplicates"], "loss": rates["loss"],
            "ttl_decremented": r["ttl_decremented"]}


def veth_sweep(bmv2_json: Path, p4info: Path, rates: list[int], count: int,
               repeats: int) -> dict:
    """Every rate step plus saturation, ``repeats`` sweeps against one switch; medians."""
    runs: list[list[dict]] = []
    with veth_rig(bmv2_json, p4info) as (sender, receiver):
        step = 0
        for _ in range(repeats):
            sweep = []
            for rate in [*rates, 0]:
                step += 1
                sweep.append(veth_step(sender, receiver, step, rate, count))
            runs.append(sweep)
    return summarize_sweeps(rates, runs, "ttl_decremented")


# -- driver

@dataclass
class Settings:
    repeats: int
    inproc_seconds: float
    inproc_max_packets: int
    veth_count: int
    veth_rates: list[int]


def run_bench(settings: Settings, modes: list[str], programs: list[str]) -> dict:
    result: dict = {"machine": machine_info(), "settings": asdict(settings),
                    "reference": REFERENCE, "results": {}}
    with tempfile.TemporaryDirectory(prefix="softnic-bench-") as tmp:
        for name in programs:
            bmv2_json, p4info = compile_program(PROGRAMS[name], Path(tmp))
            entry: dict = {"program": shown(PROGRAMS[name])}
            if "inprocess" in modes:
                runs = [inprocess_pps(bmv2_json, settings.inproc_seconds,
                                      settings.inproc_max_packets)
                        for _ in range(settings.repeats)]
                entry["inprocess"] = {"median_pps": _median(runs), "runs": runs}
                print(f"{name:9s} in-process: {entry['inprocess']['median_pps']:>10.1f} pkt/s",
                      flush=True)
            if "veth" in modes:
                v = veth_sweep(bmv2_json, p4info, settings.veth_rates, settings.veth_count,
                               settings.repeats)
                entry["veth"] = v
                print(f"{name:9s} veth:       max {v['max_rate_under_1pct_loss_pps']} pkt/s "
                      f"with <1% loss; saturated {v['saturated_delivered_pps']:.0f} pkt/s "
                      f"delivered, {v['saturated_loss']:.1%} lost", flush=True)
            result["results"][name] = entry
    return result


REFERENCE = {
    "source": "FIDELITY.md (quoted, not measured here)",
    "bmv2_simple_switch_default_pps": 14_000,
    "bmv2_simple_switch_nolog_pps": [30_000, 39_000],
}


def plot(result: dict, path: Path) -> bool:
    """In-process bars and the veth offered/delivered curves; False when matplotlib is missing."""
    if (plt := pyplot()) is None:
        return False
    res = result["results"]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4), gridspec_kw={"width_ratios": [1, 2]})
    names = [n for n in res if "inprocess" in res[n]]
    bars = ax1.bar(names, [res[n]["inprocess"]["median_pps"] for n in names], color="#4c72b0")
    ax1.bar_label(bars, fmt="%.0f")
    ax1.set_title("in-process (engine only)")
    ax1.set_ylabel("packets / s (median)")
    ax1.margins(y=0.15)
    top = 0.0
    for name, color in zip(res, ["#dd8452", "#55a868", "#c44e52"], strict=False):
        v = res[name].get("veth")
        if v is None:
            continue
        rated = [s for s in v["steps"] if s["target_pps"] != "saturation"]
        xs = [s["offered_pps"] for s in rated]
        ax2.plot(xs, [s["delivered_pps"] for s in rated], "o-", color=color,
                 label=f"{name}: max {v['max_rate_under_1pct_loss_pps']} with <1% loss")
        sat = v["steps"][-1]
        ax2.plot([sat["offered_pps"]], [sat["delivered_pps"]], "*", ms=12, color=color,
                 label=f"{name}: saturated ({sat['loss']:.0%} lost)")
        top = max(top, *xs, sat["offered_pps"])
    if top:
        ax2.plot([0, top], [0, top], ":", color="grey", label="delivered = offered")
        ax2.axhline(14_000, color="grey", lw=0.8, ls="--")
        ax2.axhspan(30_000, 39_000, color="grey", alpha=0.12)
        ax2.text(top * 0.99, 14_500, "BMv2 default (quoted)", ha="right", fontsize=7)
        ax2.text(top * 0.99, 39_500, "BMv2 no logging (quoted)", ha="right", fontsize=7)
        ax2.set_xlabel("offered packets / s (open loop)")
        ax2.set_ylabel("delivered packets / s (median)")
        ax2.set_title("through veth (softnic run, P4Runtime-installed route)")
        ax2.legend(fontsize=7, loc="upper left")
    m = result["machine"]
    fig.suptitle(f"softnic forwarding rate - {m['cpus']} CPUs, Python {m['python']}, "
                 f"commit {m['git_commit']}", fontsize=9)
    save_figure(fig, path)
    return True


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="p4cache-bench softnic",
                                 description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="short smoke run (1 repeat, few packets)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--veth-count", type=int,
                    help="frames offered per veth rate step (default 10000, --quick 1000)")
    ap.add_argument("--rates", type=lambda t: [int(x) for x in t.split(",")],
                    help="comma-separated offered rates in pkt/s (saturation is always added)")
    ap.add_argument("--inproc-seconds", type=float, default=3.0)
    ap.add_argument("--mode", choices=["inprocess", "veth"], action="append")
    ap.add_argument("--program", choices=sorted(PROGRAMS), action="append")
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--plot", type=Path, default=PLOT)
    args = ap.parse_args(argv)
    settings = Settings(repeats=1 if args.quick else args.repeats,
                        inproc_seconds=0.5 if args.quick else args.inproc_seconds,
                        inproc_max_packets=200_000 if args.quick else 2_000_000,
                        veth_count=args.veth_count or (1000 if args.quick else 10_000),
                        veth_rates=args.rates or (QUICK_RATES if args.quick else DEFAULT_RATES))
    modes = args.mode or ["inprocess", "veth"]
    if "veth" in modes and os.geteuid() != 0:
        print("p4cache-bench: the veth mode needs root; running in-process only", file=sys.stderr)
        modes = [m for m in modes if m != "veth"]
    result = run_bench(settings, modes, args.program or sorted(PROGRAMS))
    write_json(args.out, result, indent=2)
    print(f"results: {args.out}")
    if plot(result, args.plot):
        print(f"plot: {args.plot}")
    else:
        print("plot skipped: matplotlib is not installed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
