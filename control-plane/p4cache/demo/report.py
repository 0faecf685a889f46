"""What the `make run` job measured, as numbers (``summarize``), a report on the terminal
(``render``), a JSON file and a plot.

Where each number comes from:
  GETs sent, their latencies   the clients' recorded history (UDP GETs, timeouts as "unknown")
  served by the switch         the switch's own hit counter (cache_stats, read by the controller)
                               over the run, divided by the GETs sent
  load on each server          memcached's own ``cmd_get`` / ``cmd_set`` counters over the run
  hit / miss latency           a GET counts as a hit when its key was filled in the switch at
                               the controller's looks before and after it (every 0.5 s), as a
                               miss when it was in neither; GETs around a change are left out
  promotions, evictions        the controller's counters over the run
  coherence                    porcupine (p4cache-lincheck) over every recorded operation,
                               the data set's load included
"""

from __future__ import annotations

import bisect
import json
from collections import Counter
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from p4cache.demo.job import JobResult, Sample
from p4cache.lincheck import LincheckError, check_history
from p4cache.lincheck.history import Op, read_history


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q / 100 * (len(s) - 1))))]


def _valid(samples: list[Sample]) -> list[Sample]:
    return [s for s in samples if "switch_counters" in s.status]


def _filled(sample: Sample) -> set[str]:
    return {k["key"] for k in sample.status.get("keys", []) if k.get("phase") == "filled"}


def _cached(sample: Sample) -> set[str]:
    return {k["key"] for k in sample.status.get("keys", [])}


def _delta(first: dict[str, Any], last: dict[str, Any], *path: str) -> int:
    a, b = first, last
    for p in path:
        a, b = a[p], b[p]
    return int(b) - int(a)


def classify_latencies(res: JobResult) -> dict[str, list[float]]:
    """GET latencies in µs, split into switch hits and misses by the controller's looks."""
    looks = _valid(res.samples)
    times = [res.started_ns + int(s.t * 1e9) for s in looks]
    filled = [_filled(s) for s in looks]
    cached = [_cached(s) for s in looks]
    out: dict[str, list[float]] = {"hit": [], "miss": []}
    for op in read_history(res.history):
        if op.op != "get" or op.ret is None or op.client == 0 or op.call < res.started_ns:
            continue
        i = bisect.bisect_right(times, op.call) - 1
        j = bisect.bisect_left(times, op.ret)
        if i < 0 or j >= len(times):
            continue
        us = (op.ret - op.call) / 1000
        if op.key in filled[i] and op.key in filled[j]:
            out["hit"].append(us)
        elif op.key not in cached[i] and op.key not in cached[j]:
            out["miss"].append(us)
    return out


def optimal_share(gets: list[Op], slots: int, writes: list[Op] | None = None) -> float | None:
    """The share of ``gets`` the best cache of ``slots`` slots could serve: GETs of the
    ``slots`` keys asked for most in the run, except each key's first GET (no cache that learns
    from misses, ours or any other, knows a key before it is asked for). Without ``writes``,
    writes cost it nothing (as if the cache were updated in place): an upper bound, not a
    forecast. With them, the first GET after each write to a key misses too: the bound for a
    cache that invalidates on writes and refills from memcached, as this one does, if its
    refill took no time."""
    if not gets:
        return None
    top = {k for k, _ in Counter(o.key for o in gets).most_common(slots)}
    seen: set[str] = set()
    servable = 0
    ops = sorted(gets + (writes or []), key=lambda o: o.call)
    for o in ops:
        if o.op != "get":
            seen.discard(o.key)
            continue
        servable += o.key in seen and o.key in top
        seen.add(o.key)
    return servable / len(gets)


def summarize(res: JobResult, check: bool = True) -> dict[str, Any]:
    ops = [o for o in read_history(res.history) if o.client != 0]
    gets = [o for o in ops if o.op == "get"]
    writes = [o for o in ops if o.op != "get"]
    looks = _valid(res.samples)
    out: dict[str, Any] = {"spec": res.spec.__dict__, "errors": list(res.errors),
                           "clients": res.clients}
    out["gets"] = {"sent": len(gets), "timed_out": sum(o.ret is None for o in gets)}
    out["writes"] = {"sent": len(writes), "ok": sum(o.ret is not None for o in writes),
                     "refused_or_unknown": sum(o.ret is None for o in writes)}
    if len(looks) >= 2:
        first, last = looks[0].status, looks[-1].status
        hits = _delta(first, last, "switch_counters", "hit")
        best = optimal_share(gets, last["cache"]["slots"])
        best_inv = optimal_share(gets, last["cache"]["slots"], writes)
        out["switch"] = {
            "hits": hits,
            "share_of_gets": round(hits / len(gets), 4) if gets else None,
            "optimal_share": None if best is None else round(best, 4),
            "of_optimal": round(hits / len(gets) / best, 4) if gets and best else None,
            "optimal_share_invalidating": None if best_inv is None else round(best_inv, 4),
            "cached_at_end": last["cache"]["cached"], "slots": last["cache"]["slots"],
            "promotions": _delta(first, last, "promotions"),
            "refills": _delta(first, last, "refills"),
            "evictions": _delta(first, last, "evictions"),
            "invalidations": _delta(first, last, "invalidations"),
            "promotion_latency_ms": last["latency"]["promotion"],
        }
    else:
        out["switch"] = None
        out["errors"].append("the controller's status could not be read during the run")
    load: dict[str, Any] = {}
    for name, after in res.stats_after.items():
        before = res.stats_before.get(name, {})
        load[name] = {k: after.get(k, 0) - before.get(k, 0)
                      for k in ("cmd_get", "get_hits", "cmd_set", "delete_hits")}
    total = sum(v["cmd_get"] for v in load.values())
    for v in load.values():
        v["share_of_gets_sent"] = round(v["cmd_get"] / len(gets), 4) if gets else None
    out["servers"] = load
    out["servers_total_gets"] = total
    lat = classify_latencies(res)
    out["latency_us"] = {
        cls: {"n": len(v), "p50": _r(percentile(v, 50)), "p90": _r(percentile(v, 90)),
              "p99": _r(percentile(v, 99))} for cls, v in lat.items()}
    if check:
        try:
            v = check_history(res.history, timeout_s=120)
            out["coherence"] = {"linearizable": v.ok, "operations": v.operations,
                                "keys": v.keys, "ms": v.ms, "timed_out": len(v.timed_out),
                                "violations": [x["key"] for x in v.violations][:10]}
        except LincheckError as e:
            out["coherence"] = {"linearizable": None, "error": str(e)}
    out["_latencies"] = lat
    return out


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 1)


def write(summary: dict[str, Any], res: JobResult) -> tuple[Path, Path | None]:
    body = {k: v for k, v in summary.items() if not k.startswith("_")}
    path = res.out_dir / "report.json"
    path.write_text(json.dumps(body, indent=2) + "\n")
    return path, plot(summary, res)


def plot(summary: dict[str, Any], res: JobResult) -> Path | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    looks = _valid(res.samples)
    gets = sorted(o.call for o in read_history(res.history)
                  if o.op == "get" and o.client != 0)
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4))
    ts, shares = [], []
    # The controller reads the switch's counters about once a second: windows of at least
    # two seconds between its looks, so that every window holds fresh readings.
    spaced = looks[:1]
    for s in looks[1:]:
        if s.t - spaced[-1].t >= 2.0:
            spaced.append(s)
    for prev, cur in zip(spaced, spaced[1:], strict=False):
        lo = res.started_ns + int(prev.t * 1e9)
        hi = res.started_ns + int(cur.t * 1e9)
        sent = bisect.bisect_left(gets, hi) - bisect.bisect_left(gets, lo)
        hits = cur.status["switch_counters"]["hit"] - prev.status["switch_counters"]["hit"]
        if sent:
            ts.append(cur.t)
            shares.append(100 * min(1.0, hits / sent))
    a1.plot(ts, shares, color="tab:blue", marker="o")
    a1.set_xlabel("seconds since the clients started")
    a1.set_ylabel("GETs served by the switch (%)")
    a1.set_ylim(0, 100)
    a1.grid(alpha=0.3)
    a1.set_title("switch share over the run (2 s windows)")
    for cls, color in (("hit", "tab:green"), ("miss", "tab:red")):
        v = sorted(summary["_latencies"][cls])
        if v:
            a2.plot(v, [(i + 1) / len(v) for i in range(len(v))], color=color,
                    label=f"{cls} (n={len(v)})")
    a2.set_xscale("log")
    a2.set_xlabel("GET latency at the client (µs)")
    a2.set_ylabel("CDF")
    a2.grid(alpha=0.3)
    a2.legend()
    a2.set_title("switch hits against misses")
    fig.tight_layout()
    path = res.out_dir / "run.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def render(summary: dict[str, Any], console: Console) -> None:
    t = Table(title="what happened", show_header=False, title_justify="left")
    g, sw = summary["gets"], summary["switch"]
    t.add_row("GETs sent (UDP)", f"{g['sent']} ({g['timed_out']} timed out)")
    if sw:
        share = 100 * (sw["share_of_gets"] or 0)
        t.add_row("served by the switch", f"{sw['hits']} = [bold]{share:.1f}%[/] of GETs sent")
        if sw.get("optimal_share") is not None:
            t.add_row("optimal for this run (top-K keys, each key's first GET a miss)",
                      f"{100 * sw['optimal_share']:.1f}%: the switch served "
                      f"[bold]{sw['of_optimal']:.2f}×[/] of it")
            t.add_row("  the same if each write's next GET must miss (invalidate, refill)",
                      f"{100 * sw['optimal_share_invalidating']:.1f}%")
        t.add_row("cached at the end", f"{sw['cached_at_end']} keys of {sw['slots']} slots")
        t.add_row("promotions / refills", f"{sw['promotions']} / {sw['refills']}")
        t.add_row("evictions", str(sw["evictions"]))
        t.add_row("invalidations (writes to cached keys)", str(sw["invalidations"]))
    w = summary["writes"]
    t.add_row("SETs and DELETEs (TCP, gated)",
              f"{w['sent']} ({w['refused_or_unknown']} refused or unknown)")
    console.print(t)
    st = Table(title="load on each server (memcached's own counters)", title_justify="left")
    for col in ("server", "GETs it served", "share of GETs sent", "SETs"):
        st.add_column(col)
    for name, v in summary["servers"].items():
        share = v["share_of_gets_sent"]
        st.add_row(name, str(v["cmd_get"]), "-" if share is None else f"{100 * share:.1f}%",
                   str(v["cmd_set"]))
    console.print(st)
    lt = Table(title="GET latency at the client, µs", title_justify="left")
    for col in ("", "n", "p50", "p90", "p99"):
        lt.add_column(col)
    for cls, v in summary["latency_us"].items():
        lt.add_row("switch hit" if cls == "hit" else "miss (memcached)", str(v["n"]),
                   *(str(v[q]) for q in ("p50", "p90", "p99")))
    console.print(lt)
    coh = summary.get("coherence")
    if coh is not None:
        if coh.get("linearizable"):
            console.print(f"coherence: [bold green]linearizable[/] — {coh['operations']} "
                          f"operations on {coh['keys']} keys checked by porcupine in "
                          f"{coh['ms']} ms")
        elif coh.get("linearizable") is None:
            console.print(f"coherence: [yellow]not checked[/]: {coh.get('error')}")
        else:
            console.print(f"coherence: [bold red]NOT linearizable[/] on keys "
                          f"{coh['violations']} ({coh['timed_out']} keys timed out)")
    for e in summary["errors"]:
        console.print(f"[red]error:[/] {e}")
