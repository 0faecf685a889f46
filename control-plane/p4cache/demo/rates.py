"""The rates `make run` reports after its workload: GETs answered per second through the running
system, split by who answered (the cache's program or memcached), from p4cache-loadgen
(docs/loadgen.md) on one client.

The job's Python clients record a history for the linearizability check at a few hundred
operations a second; they cannot show what the xdp engine does. So the generator then loads its
own key set through the agents' gates (TCP ``set``), warms the cache at a moderate rate (the
controller promotes the keys the program reports), and sweeps open-loop UDP GET rates over it
(Zipf, GETs only: UDP writes would invalidate the cache under test). Each step says how many
GETs a second came back and from whom, the loss, and the median latency of each.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.table import Table

from p4cache.demo.job import Target
from p4cache.workload import loadgen as lg

LOSS_OK = 0.01


@dataclass(frozen=True)
class RatesSpec:
    keys: int = 2000
    zipf: float = 0.99
    value_size: int = 100
    warm_rate: float = 3000.0
    warm_s: float = 6.0
    rates: tuple[float, ...] = (2000.0, 5000.0, 10000.0, 20000.0, 40000.0)
    step_s: float = 2.0


def measure(target: Target, spec: RatesSpec, console: Console) -> dict[str, Any]:
    """Preload, warm, sweep; the steps as plain numbers (raises LoadgenError when the generator
    is missing or fails)."""
    client = target.clients[0]
    servers = [f"{ip}:{port}" for ip, port in target.servers.values()]
    prefix = target.prefix(client)
    common = {"keys": spec.keys, "zipf": spec.zipf, "value_size": spec.value_size,
              "get_pct": 100.0}
    console.print(f"[bold]4.[/] rates: p4cache-loadgen on {client} stores {spec.keys} keys "
                  f"through the gates, warms the cache at {spec.warm_rate:g} GETs/s for "
                  f"{spec.warm_s:g} s, then sweeps {', '.join(f'{r:g}' for r in spec.rates)} "
                  f"GETs/s ({spec.step_s:g} s each)")
    pre = lg.run(lg.argv(servers, proto="tcp", preload=True, **common), prefix=prefix,
                 timeout_s=120)
    lg.run(lg.argv(servers, rates=[spec.warm_rate], step_s=spec.warm_s, **common),
           prefix=prefix, timeout_s=spec.warm_s + 60)
    rep = lg.run(lg.argv(servers, rates=spec.rates, step_s=spec.step_s, **common),
                 prefix=prefix, timeout_s=len(spec.rates) * spec.step_s + 60)
    steps = [_step(s) for s in rep.steps]
    ok = [s for s in steps if s["loss"] < LOSS_OK]
    return {"generator": "p4cache-loadgen", "spec": {**common, "rates": list(spec.rates),
                                                     "step_s": spec.step_s},
            "preloaded": (pre.preload or {}).get("stored"), "steps": steps,
            "max_rate_under_1pct_loss": max((s["offered"] for s in ok), default=0.0)}


def _step(s: lg.Step) -> dict[str, Any]:
    def p50(cls: str) -> float | None:
        lat = s.latency.get(cls)
        return round(lat[0].p50_us, 1) if lat and lat[0].count else None

    per_s = s.replies_per_s
    answered = per_s["all"] if "all" in per_s else sum(per_s.values())
    return {"offered": s.offered_rate, "answered_per_s": round(answered, 1),
            "switch_per_s": round(per_s.get("switch", 0.0), 1),
            "memcached_per_s": round(per_s.get("memcached", 0.0), 1),
            "loss": round(s.loss_fraction, 4), "p50_switch_us": p50("switch"),
            "p50_memcached_us": p50("memcached")}


def render(rates: dict[str, Any], console: Console) -> None:
    t = Table(title="GETs per second, open loop over UDP (p4cache-loadgen); p50 in µs",
              title_justify="left")
    for col in ("offered", "answered", "by the cache", "by memcached", "loss", "p50 cache",
                "p50 memcached"):
        t.add_column(col, justify="right")
    for s in rates["steps"]:
        t.add_row(f"{s['offered']:g}", f"{s['answered_per_s']:.0f}", f"{s['switch_per_s']:.0f}",
                  f"{s['memcached_per_s']:.0f}", f"{100 * s['loss']:.1f}%",
                  _us(s["p50_switch_us"]), _us(s["p50_memcached_us"]))
    console.print(t)
    console.print(f"highest offered rate with < 1 % loss: "
                  f"[bold]{rates['max_rate_under_1pct_loss']:g} GETs/s[/] (the generator shares "
                  "the machine's cores with everything else: p4cache-bench hostpath says where "
                  "its own ceiling is)")


def _us(v: float | None) -> str:
    return "-" if v is None else f"{v:.0f}"
