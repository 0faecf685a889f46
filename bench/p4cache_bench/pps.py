"""softnic against BMv2: packets per second of the cache's program on each.

The program is ``p4src/v1model/p4cache.p4``; the workloads, the state (64 cached keys, one slot
each, filled by OP_UPDATE packet-outs) and the measurement are ``dataplane.py``'s, reused
function by function: GET hits answered and misses forwarded per second, in-process (softnic's
engine alone, no I/O) and through veth between two namespaces, open-loop rate steps then flat
out; the headline per kind is the highest offered rate with < 1 % loss and >= 97 % delivered.

BMv2 (``simple_switch_grpc``, compiled with ``p4c-bm2-ss``) is measured the same way through
veth when both are on PATH; otherwise its side of the JSON is ``{"skipped": ...}`` and only
softnic runs. BMv2 has no in-process mode.

``--target xdp`` adds softnic's kernel engine (``softnic run --engine xdp``: the program as an
XDP program on the switch's veth ports) to the same sweeps, beside the Python engine and BMv2,
into ``pps-xdp.json``. Its rates go higher, and the sender (a Python agent) becomes the limit:
the sender's own ceiling is measured in the same run (a veth step with no switch program at
all would not be the same path, so it is the highest rate the sender offered), and the kernel's
own rate is ``p4cache-bench dataplane``'s (BPF_PROG_TEST_RUN) and ``hostpath``'s.

Run: ``p4cache-bench pps`` (root: network namespaces); ``--quick`` for a smoke run.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from p4cache import paths
from p4cache_bench.common import (
    Agent,
    free_port,
    machine_info,
    median,
    needs_root,
    placed_path,
    softnic_run,
    stop_process,
    write_results,
)

RESULTS = paths.bench_results() / "pps.json"
BMV2_TOOLS = ("simple_switch_grpc", "p4c-bm2-ss")
DEFAULT_RATES = [5_000, 10_000, 15_000, 20_000, 25_000, 30_000]
QUICK_RATES = [5_000, 20_000]
DEFAULT_XDP_RATES = [20_000, 40_000, 60_000, 80_000, 100_000, 120_000]
QUICK_XDP_RATES = [20_000, 60_000]


def bmv2_missing() -> list[str]:
    return [t for t in BMV2_TOOLS if shutil.which(t) is None]


@contextlib.contextmanager
def bmv2_run(topo, cpu_port: int) -> Iterator[str]:  # noqa: ANN001 - a softnic.netns.Topology
    """``simple_switch_grpc --no-p4`` on ``topo``'s ports, logging off; yields its address."""
    grpc_addr = f"127.0.0.1:{free_port()}"
    sw = subprocess.Popen(["simple_switch_grpc", "--no-p4", *topo.interface_args(),
                           "--log-level", "off", "--", "--grpc-server-addr", grpc_addr,
                           "--cpu-port", str(cpu_port)],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        host, port = grpc_addr.rsplit(":", 1)
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection((host, int(port)), 0.5).close()
                break
            except OSError:
                if sw.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("simple_switch_grpc did not start: "
                                       f"{sw.stderr.read() if sw.stderr else ''}") from None
                time.sleep(0.1)
        yield grpc_addr
    finally:
        stop_process(sw)


@contextlib.contextmanager
def rig(target: str, prog, wls: list) -> Iterator[tuple[Agent, dict[str, Agent]]]:  # noqa: ANN001
    """client - switch - server on veth, the cache filled; like dataplane.veth_rig for either
    switch."""
    from p4cache.topo.placement import XDP_ENGINE, receive_redirects
    from p4cache_bench import dataplane as dpb
    from softnic.netns import Topology

    cpu = ["--cpu-port", str(dpb.CPU_PORT)]
    with Topology(2) as topo:
        if target == "xdp":
            for h in topo.hosts:        # the program redirects into the switch's veths
                receive_redirects(h.ifname, h.ns)
        run = (softnic_run(topo, cpu) if target == "softnic"
               else softnic_run(topo, cpu, engine=XDP_ENGINE) if target == "xdp"
               else bmv2_run(topo, dpb.CPU_PORT))
        with run as grpc_addr, dpb.rig_agents(topo, grpc_addr, prog, wls) as agents:
            yield agents


def veth_sweeps(target: str, prog, wls: list, s: Settings) -> dict[str, dict[str, dict]]:  # noqa: ANN001
    """Every rate step plus saturation per workload and kind on ``target``; medians."""
    from p4cache_bench import dataplane as dpb
    from p4cache_bench.common import summarize_sweeps

    runs: dict[tuple[str, str], list[list[dict]]] = {(w.name, k): [] for w in wls
                                                     for k in ("hit", "miss")}
    with rig(target, prog, wls) as (sender, receivers):
        step = 0
        for _ in range(s.repeats):
            for w in wls:
                for kind in ("hit", "miss"):
                    sender.write({"templates": [f.hex() for f in w.frames(kind)]})
                    sender.read()
                    ttl = 64 if kind == "hit" else dpb.REQUEST_TTL
                    sweep = []
                    for rate in [*s.rates, 0]:
                        step += 1
                        sweep.append(dpb.veth_step(sender, receivers[kind], step, rate, s.count,
                                                   w.answer_len(kind), ttl))
                    runs[(w.name, kind)].append(sweep)
                    sat = sweep[-1]
                    print(f"  {target} {w.name} {kind:4s}: saturated {sat['delivered_pps']:.0f}/s,"
                          f" {sat['loss']:.1%} lost", file=sys.stderr, flush=True)
    out: dict[str, dict[str, dict]] = {}
    for (name, kind), r in runs.items():
        out.setdefault(name, {})[kind] = summarize_sweeps(s.rates, r, "as_expected")
    return out


@dataclass
class Settings:
    repeats: int
    count: int                # requests per veth step
    rates: list[int]
    inproc_seconds: float
    inproc_repeats: int
    key_lens: list[int]
    reply_lens: list[int]
    target: str = "softnic"       # xdp: the kernel engine too (xdp_rates)
    xdp_rates: list[int] | None = None


def inprocess(prog, wls: list, s: Settings) -> dict:  # noqa: ANN001
    from p4cache_bench import dataplane as dpb

    sw = dpb.inprocess_switch(prog.json_path, wls)
    runs: dict[tuple[str, str], list[dict]] = {}
    for _ in range(s.inproc_repeats):      # each repeat goes round every workload and kind, so a
        for w in wls:                      # busy moment of the shared machine hits one repeat
            for kind in ("hit", "miss"):
                runs.setdefault((w.name, kind), []).append(
                    dpb.inprocess_pps(sw, w.frames(kind), s.inproc_seconds, 5_000_000))
    out: dict = {}
    for (name, kind), r in runs.items():
        out.setdefault(name, {})[kind] = {"median_pps": median(r), "runs": r}
    return out


def headline(v: dict) -> dict:
    """Per workload and kind: max rate with < 1 % loss and the saturated delivered rate."""
    return {name: {kind: {"max_rate_under_1pct_loss_pps": x["max_rate_under_1pct_loss_pps"],
                          "saturated_delivered_pps": x["saturated_delivered_pps"]}
                   for kind, x in kinds.items()} for name, kinds in v.items()}


def run_bench(s: Settings) -> dict:
    from rich.console import Console

    from p4cache.program import build
    from p4cache_bench import dataplane as dpb

    console = Console(stderr=True)
    t0 = time.monotonic()
    wls = dpb.workloads(s.key_lens, s.reply_lens)
    result: dict = {"machine": machine_info(), "settings": asdict(s),
                    "program": "p4src/v1model/p4cache.p4",
                    "workloads": {w.name: {"key_bytes": w.key_len, "reply_bytes": w.reply_len}
                                  for w in wls}}
    prog = build()
    with console.status("softnic in-process"):
        result["softnic"] = {"inprocess": inprocess(prog, wls, s)}
    with console.status("softnic through veth"):
        result["softnic"]["veth"] = veth_sweeps("softnic", prog, wls, s)
    result["softnic"]["headline"] = headline(result["softnic"]["veth"])
    if s.target == "xdp":
        with console.status("the xdp engine through veth"):
            xs = Settings(**{**asdict(s), "rates": s.xdp_rates or s.rates})
            result["xdp"] = {"veth": veth_sweeps("xdp", prog, wls, xs)}
            result["xdp"]["headline"] = headline(result["xdp"]["veth"])
            result["xdp"]["sender_ceiling_pps"] = sender_ceiling(result["xdp"]["veth"])
    missing = bmv2_missing()
    if missing:
        result["bmv2"] = {"skipped": f"{', '.join(missing)} not on PATH (BMv2 is not "
                                     "installable on this machine); only softnic measured"}
    else:
        with console.status("BMv2 through veth"):
            bprog = build(compiler="p4c-bm2-ss")
            result["bmv2"] = {"veth": veth_sweeps("simple_switch_grpc", bprog, wls, s)}
            result["bmv2"]["headline"] = headline(result["bmv2"]["veth"])
    result["duration_s"] = round(time.monotonic() - t0, 1)
    result["machine"]["loadavg_at_end"] = list(os.getloadavg())
    return result


def sender_ceiling(veth: dict) -> float:
    """The highest rate the sender agent offered in any saturated step: where the switch keeps
    up with it, this (not the switch) is what a sweep measures."""
    return max(kind["steps"][-1]["offered_pps"] for kinds in veth.values()
               for kind in kinds.values())


def xdp_table(result: dict) -> str:
    """The xdp engine beside the Python engine, through the same veth rig in the same run."""
    lines = ["| workload | kind | xdp veth max < 1 % loss /s | xdp saturated /s "
             "| softnic veth max < 1 % loss /s | xdp / softnic |", "|---|---|---|---|---|---|"]
    for name, kinds in result["xdp"]["headline"].items():
        for kind, h in kinds.items():
            sn = result["softnic"]["headline"][name][kind]["max_rate_under_1pct_loss_pps"]
            xm = h["max_rate_under_1pct_loss_pps"]
            lines.append(f"| {name} | {kind} | {xm} | {h['saturated_delivered_pps']:.0f} | {sn} "
                         f"| {xm / sn:.1f}x |" if sn else f"| {name} | {kind} | {xm} | "
                         f"{h['saturated_delivered_pps']:.0f} | {sn} | - |")
    lines.append(f"sender's ceiling (highest rate it offered flat out): "
                 f"{result['xdp']['sender_ceiling_pps']:.0f}/s")
    return "\n".join(lines)


def markdown_table(result: dict) -> str:
    lines = ["| workload | kind | softnic in-process /s | softnic veth max < 1 % loss /s "
             "| softnic veth saturated /s | BMv2 veth max < 1 % loss /s | BMv2 saturated /s |",
             "|---|---|---|---|---|---|---|"]
    b = result["bmv2"].get("headline")
    for name, kinds in result["softnic"]["headline"].items():
        for kind, h in kinds.items():
            ip = result["softnic"]["inprocess"][name][kind]["median_pps"]
            bh = b[name][kind] if b else None
            lines.append(f"| {name} | {kind} | {ip:.0f} | {h['max_rate_under_1pct_loss_pps']} "
                         f"| {h['saturated_delivered_pps']:.0f} "
                         f"| {bh['max_rate_under_1pct_loss_pps'] if bh else 'skipped'} "
                         f"| {bh['saturated_delivered_pps'] if bh else 'skipped'} |")
    return "\n".join(lines)


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",")]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="p4cache-bench pps", description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: one workload, two steps of 1000 requests, one repeat")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--count", type=int, help="requests per veth step (default 10000)")
    ap.add_argument("--rates", type=_ints, help="offered rates per step, comma-separated")
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--target", choices=("softnic", "xdp"), default="softnic",
                    help="xdp: also the xdp engine (softnic run --engine xdp), beside softnic's "
                    "Python engine and BMv2; results in pps-xdp.json")
    ap.add_argument("--xdp-rates", type=_ints,
                    help="offered rates for the xdp engine (default 20000,40000,...,120000)")
    args = ap.parse_args(argv)
    if needs_root("pps"):
        return 2
    q = args.quick
    s = Settings(repeats=1 if q else args.repeats, count=args.count or (1000 if q else 10_000),
                 rates=args.rates or (QUICK_RATES if q else DEFAULT_RATES),
                 inproc_seconds=0.3 if q else 1.0, inproc_repeats=1 if q else 5,
                 key_lens=[16],
                 reply_lens=[100] if q else [100, 500], target=args.target,
                 xdp_rates=args.xdp_rates or (QUICK_XDP_RATES if q else DEFAULT_XDP_RATES))
    result = run_bench(s)
    print(markdown_table(result))
    if "xdp" in result:
        print(xdp_table(result))
    if "skipped" in result["bmv2"]:
        print(f"BMv2: skipped ({result['bmv2']['skipped']})")
    write_results(result, placed_path(args.out, RESULTS, {"target": s.target}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
