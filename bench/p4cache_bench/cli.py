"""``p4cache-bench NAME [args]``: run one benchmark.

Each benchmark writes JSON to ``bench/results/`` and a plot to ``docs/``; ``p4cache-bench NAME
--help`` shows its options.
"""

from __future__ import annotations

import sys

# name -> (module under bench, one-line description)
BENCHMARKS = {
    "softnic": ("softnic_pps", "packets/s of softnic itself on two small programs "
                "(bench/p4cache_bench/p4), in-process and through veth"),
    "dataplane": ("dataplane", "GET hits answered and misses forwarded per second by the "
                  "cache's data plane (p4src) on softnic, in-process and through veth, and on "
                  "the xdp engine in the kernel (BPF_PROG_TEST_RUN) next to the Python engine"),
    "gate": ("gate", "the host agent's write gate (added TCP latency, invalidations) and the "
             "controller's promotion (time to hot, re-hot after a write), on the lab"),
    "hitshare": ("hitshare", "share of GETs the switch answers against cache size at Zipf 0.9 "
                 "and 0.99 (BMC's 16 B / 32 B setting), next to the optimal top-K, on the lab"),
    "latency": ("latency", "UDP GET latency CDF of switch hits, misses and no cache, "
                "interleaved, from a client namespace on the lab"),
    "hotin": ("hotin", "switch hit share over time when the hot set changes: time until the "
              "new hot keys are served, on the lab"),
    "loadbalance": ("loadbalance", "GETs/s of four rate-limited memcached servers under "
                    "Zipf 0.99 with the switch cache and without it (NetCache), on the lab"),
    "etc": ("etc", "Facebook ETC's write-heavy mix through the whole system: hit share, "
            "latencies, invalidations, promotions and a linearizability verdict"),
    "hostpath": ("hostpath", "GETs answered/s and hit/miss latency with the xdp engine on "
                 "memcached's own interface, against memcached alone and the Python engine, "
                 "with the generator's ceiling and live-frame test runs in the kernel"),
    "pps": ("pps", "softnic against BMv2 packets/s on the cache's program (BMv2 only if "
            "simple_switch_grpc is on PATH)"),
}


def usage() -> str:
    width = max(len(n) for n in BENCHMARKS)
    lines = ["usage: p4cache-bench NAME [args]   (p4cache-bench NAME --help: its options)", "",
             "benchmarks:"]
    lines += [f"  {n:<{width}}  {d}" for n, (_, d) in BENCHMARKS.items()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    import importlib

    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(usage())
        return 0 if args else 2
    name, rest = args[0], args[1:]
    if name.startswith("-"):
        # The dispatcher once ran the softnic benchmark directly: keep its options working.
        print("p4cache-bench: no benchmark named; running `softnic` (the former default)",
              file=sys.stderr)
        name, rest = "softnic", args
    if name not in BENCHMARKS:
        print(f"p4cache-bench: unknown benchmark {name!r}\n\n{usage()}", file=sys.stderr)
        return 2
    module = importlib.import_module(f"p4cache_bench.{BENCHMARKS[name][0]}")
    return module.main(rest)


if __name__ == "__main__":
    sys.exit(main())
