"""A recording client for the coherence test: random GETs and writes on a small hot key set.

Each process runs one client. Every operation is recorded with its invocation and completion
times (CLOCK_MONOTONIC, shared by all network namespaces) and what it returned, one JSON line per
operation, for the linearizability checker (p4cache.lincheck). Values are unique per write
("<client>.<seq>"), so every value a GET returns names the write it came from.

    python -m p4cache.workload.coherence --server 10.0.0.1 --client 1 --duration 20 \\
        --history h1.jsonl [--keys 6] [--mix udp_get=70,tcp_set=12,...] [--ttl-keys 2 --ttl 4]
"""

from __future__ import annotations

import argparse
import json
import random
import signal
import sys
import time
from pathlib import Path

from p4cache.workload.clients import ERROR, NOT_SENT, UNKNOWN, TcpClient, UdpClient

DEFAULT_MIX = {"udp_get": 70, "tcp_get": 8, "tcp_set": 14, "tcp_delete": 3,
               "udp_delete": 3, "udp_set": 2}


def parse_mix(text: str) -> dict[str, int]:
    mix = {}
    for part in text.split(","):
        name, _, weight = part.partition("=")
        if name not in DEFAULT_MIX:
            raise argparse.ArgumentTypeError(f"unknown operation {name!r} in --mix "
                                             f"(known: {', '.join(DEFAULT_MIX)})")
        mix[name] = int(weight)
    return mix


def key_name(i: int) -> str:
    return f"hot{i}"


def zipf_weights(n: int, s: float) -> list[float]:
    return [1.0 / (i + 1) ** s for i in range(n)]


class Recorder:
    def __init__(self, path: Path, client: int) -> None:
        self.fh = open(path, "w")  # noqa: SIM115 - closed in close()
        self.client = client
        self.count = 0

    def record(self, key: str, op: str, value: str | None, ttl: int, via: str,
               call: int, ret: int | None, result: object) -> None:
        self.fh.write(json.dumps({"client": self.client, "key": key, "op": op, "value": value,
                                  "ttl": ttl, "via": via, "call": call, "return": ret,
                                  "result": result}) + "\n")
        self.count += 1

    def close(self) -> None:
        self.fh.close()


def run(args: argparse.Namespace) -> int:
    rng = random.Random(args.seed * 1000 + args.client)
    udp = UdpClient(args.server)
    tcp = TcpClient(args.server, timeout=args.tcp_timeout)
    rec = Recorder(args.history, args.client)
    ops = list(args.mix)
    op_weights = [args.mix[o] for o in ops]
    keys = [key_name(i) for i in range(args.keys)]
    key_weights = zipf_weights(args.keys, args.skew)
    ttl_keys = set(keys[len(keys) - args.ttl_keys:]) if args.ttl_keys else set()
    stop = False

    def on_term(*_: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_term)
    deadline = time.monotonic() + args.duration
    seq = 0
    not_sent = 0
    interval = 1.0 / args.rate if args.rate else 0.0
    next_at = time.monotonic()
    while not stop and time.monotonic() < deadline:
        if interval:
            now = time.monotonic()
            if now < next_at:
                time.sleep(next_at - now)
            next_at += interval
        op = rng.choices(ops, op_weights)[0]
        key = rng.choices(keys, key_weights)[0]
        kb = key.encode()
        ttl = args.ttl if key in ttl_keys else 0
        seq += 1
        value = f"{args.client}.{seq}"
        via, _, verb = op.partition("_")
        client = udp if via == "udp" else tcp
        call = time.monotonic_ns()
        if verb == "get":
            got = client.get(kb)
            ret = time.monotonic_ns()
            if got == NOT_SENT:
                not_sent += 1
                time.sleep(0.005)     # the agent is down: do not spin on refused connects
            elif got == UNKNOWN:
                rec.record(key, "get", None, 0, via, call, None, UNKNOWN)
            else:
                result = None if got is None else got.decode()
                rec.record(key, "get", None, 0, via, call, ret, result)
            continue
        if verb == "set":
            outcome = client.set(kb, value.encode(), ttl)
        else:
            outcome = client.delete(kb)
        ret = time.monotonic_ns()
        if outcome == NOT_SENT:
            # Not in the history: an operation that was never sent has no effect to check,
            # and recording it as unknown gives the checker writes that may land at any later
            # time, which makes its search explode (agent_restart once timed out this way).
            not_sent += 1
            time.sleep(0.005)
            continue
        done = outcome not in (UNKNOWN, ERROR)
        rec.record(key, verb, value if verb == "set" else None, ttl if verb == "set" else 0,
                   via, call, ret if done else None, outcome)
    rec.close()
    udp.close()
    tcp.close()
    print(json.dumps({"client": args.client, "operations": rec.count, "not_sent": not_sent}))
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="p4cache-coherence-client", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--server", required=True)
    ap.add_argument("--client", type=int, required=True)
    ap.add_argument("--history", type=Path, required=True)
    ap.add_argument("--duration", type=float, default=10.0)
    ap.add_argument("--keys", type=int, default=6)
    ap.add_argument("--skew", type=float, default=0.9)
    ap.add_argument("--mix", type=parse_mix, default=dict(DEFAULT_MIX))
    ap.add_argument("--ttl-keys", type=int, default=0,
                    help="the last N keys are written with --ttl (expiries during the run)")
    ap.add_argument("--ttl", type=int, default=4)
    ap.add_argument("--rate", type=float, default=0.0, help="operations per second (0: flat out)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--tcp-timeout", type=float, default=3.0)
    return run(ap.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
