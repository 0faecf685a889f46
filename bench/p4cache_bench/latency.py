"""UDP GET latency from a client namespace: switch hits, misses and no cache, interleaved.

One lab (softnic, memcached, agent, controller), one client namespace with two addresses:

- ``10.0.0.101``, in the controller's client allow-list: GETs of keys the switch caches are
  **hits** (the switch answers), GETs of keys it does not cache are **misses** (the switch forwards
  them, memcached answers, the reply crosses the switch again);
- ``10.0.0.150``, *not* in the allow-list: the switch neither answers nor counts its GETs
  (lookup_reply.p4, ``client_allowlist``), so they are forwarded like any packet: **no cache**,
  the same switch and memcached with the cache out of the path.

Hit keys are promoted first (GETs until the switch answers them). Miss and no-cache keys are
drawn round robin from thousands of loaded keys, each asked far less often than the
HOT_THRESHOLD misses per epoch that would make it hot, so they stay uncached. The three classes
are measured side by side: one GET at a time, every round asks each class once in a shuffled
order. Who answered is read from the reply's UDP checksum (0: the switch, see gate.py).

Run: ``p4cache-bench latency`` (root); ``--quick`` for a smoke run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from p4cache import paths
from p4cache_bench.cachelab import pct, summary
from p4cache_bench.common import (
    add_target_args,
    loadavg,
    machine_info,
    needs_root,
    placed_path,
    plot_title,
    progress_bar,
    pyplot,
    report,
    save_figure,
)

RESULTS = paths.bench_results() / "latency.json"
PLOT = paths.bench_plots() / "bench_latency_cdf.png"
TARGET_RATIO = 0.5          # the issue: hit p50 <= 0.5 x miss p50
NOCACHE_IP = "10.0.0.150"
CLASSES = ("hit", "miss", "nocache")


@dataclass
class Settings:
    keys: int               # loaded into memcached
    hot: int                # hit keys (ranks 1..hot)
    rounds: int             # one GET per class per round
    seed: int
    target: str = "softnic"    # the lab's engine (common.add_target_args)
    placement: str = "switch"


LAT_STATS = ("p50", "p90", "p99", "p999", "min", "mean")


def key_classes(s: Settings, client_ip: str) -> dict:
    """Hit keys ranks 1..hot; misses and no-cache from two disjoint halves of the rest."""
    from p4cache_bench.cachelab import key_of

    rest = list(range(s.hot + 1, s.keys + 1))
    half = len(rest) // 2

    def names(ranks: list[int]) -> list[str]:
        return [key_of(r).decode() for r in ranks]

    return {"hit": {"src": client_ip, "keys": names(list(range(1, s.hot + 1)))},
            "miss": {"src": client_ip, "keys": names(rest[:half])},
            "nocache": {"src": NOCACHE_IP, "keys": names(rest[half:])}}


def add_nocache_address(cl) -> None:  # noqa: ANN001 - a CacheLab
    """A second address on the client, outside the allow-list; the server reaches it by the
    client's MAC (static ARP, like every lab address)."""
    from softnic import netns

    netns.run(["ip", "addr", "add", f"{NOCACHE_IP}/24", "dev", "eth0"], ns=cl.client.ns)
    netns.run(["ip", "neigh", "replace", NOCACHE_IP, "lladdr", cl.client.mac, "dev", "eth0",
               "nud", "permanent"], ns=cl.server.ns)


def promote_hot(cl, classes: dict, timeout_s: float = 15.0) -> dict:  # noqa: ANN001
    """GETs of the hit keys, one at a time, until the switch answers every one of them (at
    most 8 promotions run at once and a key reports once an epoch: this can take epochs)."""
    t0 = time.monotonic()
    n = len(classes["hit"]["keys"])
    while time.monotonic() - t0 < timeout_s:
        r = cl.cw.ask({"op": "latency", "server": cl.server.ip, "seed": 0, "rounds": 4 * n,
                       "timeout_s": 0.5, "gap_s": 0.002, "classes": {"hit": classes["hit"]}})
        last = r["classes"]["hit"]["switch"][-2 * n:]
        if len(last) == 2 * n and all(last):
            return {"promote_s": round(time.monotonic() - t0, 2), "all_cached": True}
    return {"promote_s": round(time.monotonic() - t0, 2), "all_cached": False}


def run_bench(s: Settings, workdir: Path) -> dict:
    from rich.console import Console

    from p4cache_bench.cachelab import cache_lab, other_labs

    console = Console(stderr=True)
    t_start = time.monotonic()
    result: dict = {"machine": machine_info(), "settings": asdict(s)}
    with cache_lab(workdir, s.keys, console, s.target, s.placement) as (cl, others):
        add_nocache_address(cl)
        cl.start_controller(clients=[f"{cl.client.ip}/32"])
        classes = key_classes(s, cl.client.ip)
        result["lab"] = {"load": cl.load, "other_labs_at_start": others,
                         "allow_list": [f"{cl.client.ip}/32"], "nocache_src": NOCACHE_IP,
                         "promotion": promote_hot(cl, classes)}
        h0 = cl.hits()   # read after the promotion's GETs
        with progress_bar(console) as progress:
            task = progress.add_task("interleaved GETs (hit, miss, no cache)",
                                     total=s.rounds)
            raw = {c: {"rtt_us": [], "switch": [], "value_ok": []} for c in CLASSES}
            timeouts = dict.fromkeys(CLASSES, 0)
            chunk = max(1, s.rounds // 20)
            blocks: list[dict] = []
            for i in range(0, s.rounds, chunk):
                r = cl.cw.ask({"op": "latency", "server": cl.server.ip, "seed": s.seed + i,
                               "rounds": min(chunk, s.rounds - i), "timeout_s": 0.5,
                               "offset": i, "classes": classes})
                for c in CLASSES:
                    for f in raw[c]:
                        raw[c][f] += r["classes"][c][f]
                    timeouts[c] += r["timeouts"][c]
                blocks.append(block_p50s(r["classes"]))
                progress.advance(task, min(chunk, s.rounds - i))
        st = cl.settled_status()   # counters read after the last reply was read
        result["switch_hit_counter_delta"] = st["switch_counters"]["hit"] - h0
        result["controller"] = {k: st.get(k) for k in ("promotions", "evictions",
                                                        "rejected", "digests")}
        result["lab"]["other_labs_at_end"] = other_labs(cl.lab.tag)
    result["classes"] = summarize(raw, timeouts)
    result["samples_us"] = {c: raw[c]["rtt_us"] for c in CLASSES}
    result["blocks"] = blocks_summary(blocks)
    result["target"] = target(result["classes"])
    result["duration_s"] = round(time.monotonic() - t_start, 1)
    result["machine"]["loadavg_at_end"] = loadavg()
    return result


def block_p50s(classes: dict) -> dict:
    """p50 of each class in one block of rounds, and hit p50 / miss p50 in it."""
    p50 = {c: statistics.median(classes[c]["rtt_us"]) if classes[c]["rtt_us"] else None
           for c in CLASSES}
    ratio = p50["hit"] / p50["miss"] if p50["hit"] and p50["miss"] else None
    return {"p50_us": p50, "hit_over_miss_p50": ratio}


def blocks_summary(blocks: list[dict]) -> dict:
    """The ratio in each block of rounds (the run is cut in 20): how stable it is."""
    ratios = [b["hit_over_miss_p50"] for b in blocks if b["hit_over_miss_p50"] is not None]
    return {"n": len(ratios),
            "hit_over_miss_p50_median": round(statistics.median(ratios), 3) if ratios else None,
            "hit_over_miss_p50_min": round(min(ratios), 3) if ratios else None,
            "hit_over_miss_p50_max": round(max(ratios), 3) if ratios else None,
            "per_block": blocks}


def summarize(raw: dict, timeouts: dict) -> dict:
    out = {}
    for c in CLASSES:
        r = raw[c]
        out[c] = {**summary(r["rtt_us"], "us", stats=LAT_STATS), "timeouts": timeouts[c],
                  "answered_by_switch": sum(r["switch"]),
                  "answered_by_memcached": len(r["switch"]) - sum(r["switch"]),
                  "wrong_value": len(r["value_ok"]) - sum(r["value_ok"])}
    return out


def target(classes: dict) -> dict:
    h, m, n = (classes[c].get("p50_us") for c in CLASSES)
    ratio = round(h / m, 3) if h and m else None
    return {"source": "the issue", "hit_p50_over_miss_p50_max": TARGET_RATIO,
            "hit_p50_us": h, "miss_p50_us": m, "nocache_p50_us": n,
            "hit_over_miss_p50": ratio,
            "hit_over_nocache_p50": round(h / n, 3) if h and n else None,
            "miss_over_nocache_p50": round(m / n, 3) if m and n else None,
            "met": ratio is not None and ratio <= TARGET_RATIO}


def print_summary(result: dict) -> None:
    print("| class | n | p50 µs | p90 µs | p99 µs | by switch | by memcached | timeouts |")
    print("|---|---|---|---|---|---|---|---|")
    for c, r in result["classes"].items():
        print(f"| {c} | {r['n']} | {r['p50_us']} | {r['p90_us']} | {r['p99_us']} | "
              f"{r['answered_by_switch']} | {r['answered_by_memcached']} | {r['timeouts']} |")
    b = result["blocks"]
    print(f"hit p50 / miss p50 in {b['n']} blocks of the run: median "
          f"{b['hit_over_miss_p50_median']}, min {b['hit_over_miss_p50_min']}, max "
          f"{b['hit_over_miss_p50_max']}")
    t = result["target"]
    print(f"target: hit p50 <= {t['hit_p50_over_miss_p50_max']} x miss p50: "
          f"{t['hit_over_miss_p50']} -> {'met' if t['met'] else 'NOT met'}")


def plot(result: dict, path: Path) -> Path | None:
    if (plt := pyplot()) is None:
        return None

    fig, ax = plt.subplots(figsize=(9, 5))
    labels = {"hit": "switch hit", "miss": "miss (memcached, through the cache's lookup)",
              "nocache": "no cache (client not allow-listed)"}
    for c, color in zip(CLASSES, ("#55a868", "#dd8452", "#4c72b0"), strict=True):
        xs = sorted(result["samples_us"][c])
        if not xs:
            continue
        ax.step(xs, [(i + 1) / len(xs) for i in range(len(xs))], where="post", color=color,
                label=f"{labels[c]}: p50 {statistics.median(xs):.0f} µs, "
                      f"p99 {pct(xs, 99):.0f} µs (n={len(xs)})")
    ax.set_xscale("log")
    ax.set_xlabel("GET round trip from the client namespace, µs")
    ax.set_ylabel("fraction of GETs")
    ax.set_ylim(0, 1.02)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    t = result["target"]
    ax.set_title(f"p4cache UDP GET latency, interleaved; hit p50 / miss p50 = "
                 f"{t['hit_over_miss_p50']} (target <= 0.5)\n{plot_title(result)}", fontsize=9)
    return save_figure(fig, path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="p4cache-bench latency",
                                 description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="smoke run: 600 rounds")
    ap.add_argument("--rounds", type=int, help="GETs per class (default 30000)")
    ap.add_argument("--keys", type=int, default=10_000, help="keys loaded (default 10000)")
    ap.add_argument("--hot", type=int, default=16, help="cached keys (default 16)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--plot", type=Path, default=PLOT)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/p4cache-bench-latency"))
    add_target_args(ap)
    args = ap.parse_args(argv)
    if needs_root("latency"):
        return 2
    s = Settings(keys=args.keys, hot=args.hot,
                 rounds=args.rounds or (600 if args.quick else 30_000), seed=args.seed,
                 target=args.target, placement=args.placement)
    where = {"target": s.target, "placement": getattr(s, "placement", "switch")}
    report(run_bench(s, args.workdir), placed_path(args.out, RESULTS, where),
           placed_path(args.plot, PLOT, where), print_summary, plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
