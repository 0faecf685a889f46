"""One client of the `make run` workload, run inside a client host.

GETs go over UDP to the server that owns the key (the project's hash ring), where the switch
answers them if the key is cached; SETs and DELETEs go over TCP to the same address, where the
server's agent gates them. Arrivals are open loop (Poisson at ``--rate``). Every operation is
recorded in the history format of p4cache.lincheck (invocation and completion on CLOCK_MONOTONIC,
which every network namespace shares), so the run can be checked for linearizability and its
latencies read back. Values written are unique: "<key>=<client>.<seq>" padded to the key's size.

    python -m p4cache.demo.client --servers m1=10.0.0.1:11211,m2=10.0.0.2:11211 --client 1 \\
        --keys 2000 --skew 0.99 --rate 800 --duration 20 --history c1.jsonl
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from pathlib import Path

from p4cache.ring import HashRing
from p4cache.workload import clients
from p4cache.workload.clients import ERROR, NOT_SENT, UNKNOWN, TcpClient, UdpClient
from p4cache.workload.coherence import Recorder
from p4cache.workload.generator import DELETE, GET, SET, Fixed, Mix, Workload, open_loop


def parse_servers(text: str) -> dict[str, tuple[str, int]]:
    out: dict[str, tuple[str, int]] = {}
    for part in text.split(","):
        name, _, addr = part.partition("=")
        ip, _, port = addr.rpartition(":")
        if not name or not ip or not port.isdigit():
            raise argparse.ArgumentTypeError(f"--servers: want NAME=IP:PORT[,...], got {part!r}")
        out[name] = (ip, int(port))
    return out


def value_for(key: bytes, tag: str, size: int) -> bytes:
    """A unique value: the key and the writer's tag, padded with '.' to ``size`` bytes."""
    head = key + b"=" + tag.encode()
    return head + b"." * max(0, size - len(head))


def workload(args: argparse.Namespace, client: int, clients: int) -> Workload:
    mix = Mix(get=args.get, set=args.set, delete=args.delete)
    whole = Workload(args.keys, args.skew, key_sizes=Fixed(args.key_size),
                     value_sizes=Fixed(args.value_size), mix=mix, seed=args.seed)
    return whole.shard(client - 1, clients)


def load(args: argparse.Namespace) -> int:
    """Store every key once through its server's gate, recorded as writes of client 0: the
    checker then knows each key's first value."""
    ring = HashRing(args.servers)
    tcp = {n: TcpClient(ip, port, timeout=args.tcp_timeout)
           for n, (ip, port) in args.servers.items()}
    rec = Recorder(args.history, 0)
    whole = workload(args, 1, 1)
    failed = 0
    for rank in range(1, args.keys + 1):
        key = whole.key(rank)
        value = value_for(key, f"0.{rank}", whole.value_len(rank))
        call = time.monotonic_ns()
        outcome = tcp[ring.owner(key)].set(key, value)
        ret = time.monotonic_ns()
        if outcome == NOT_SENT:
            failed += 1
            continue
        done = outcome not in (UNKNOWN, ERROR)
        failed += not done
        rec.record(key.decode("latin-1"), "set", value.decode("latin-1"), 0, "tcp", call,
                   ret if done else None, outcome)
    rec.close()
    print(json.dumps({"loaded": args.keys - failed, "failed": failed}))
    return 0 if failed == 0 else 1


def stats(args: argparse.Namespace) -> int:
    """Each server's memcached counters (``stats`` through the gate), one JSON object."""
    out: dict[str, dict[str, int]] = {}
    for name, (ip, port) in args.servers.items():
        out[name] = clients.memcached_stats((ip, port), args.tcp_timeout)
    print(json.dumps(out))
    return 0


def run(args: argparse.Namespace) -> int:
    if args.mode == "load":
        return load(args)
    if args.mode == "stats":
        return stats(args)
    servers = args.servers
    ring = HashRing(servers)
    udp = {n: UdpClient(ip, port, timeout=args.udp_timeout) for n, (ip, port) in servers.items()}
    tcp = {n: TcpClient(ip, port, timeout=args.tcp_timeout) for n, (ip, port) in servers.items()}
    rec = Recorder(args.history, args.client)
    ops = workload(args, args.client, args.clients)
    stop = False

    def on_term(*_: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_term)
    start = time.monotonic()
    seq = late = not_sent = 0
    for at in open_loop(args.rate, args.duration, seed=args.seed * 1000 + args.client):
        if stop:
            break
        delay = start + at - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        elif delay < -0.05:
            late += 1
        op = ops.next()
        key = op.key.decode("latin-1")
        owner = ring.owner(op.key)
        call = time.monotonic_ns()
        if op.kind == GET:
            got = udp[owner].get(op.key)
            ret = time.monotonic_ns()
            if got == UNKNOWN:
                rec.record(key, "get", None, 0, "udp", call, None, UNKNOWN)
            else:
                assert not isinstance(got, str)
                rec.record(key, "get", None, 0, "udp", call, ret,
                           None if got is None else got.decode("latin-1"))
            continue
        seq += 1
        if op.kind == SET:
            value = value_for(op.key, f"{args.client}.{seq}", op.value_len)
            outcome = tcp[owner].set(op.key, value)
        else:
            assert op.kind == DELETE
            value = None
            outcome = tcp[owner].delete(op.key)
        ret = time.monotonic_ns()
        if outcome == NOT_SENT:
            not_sent += 1
            continue
        done = outcome not in (UNKNOWN, ERROR)
        verb = "set" if op.kind == SET else "delete"
        rec.record(key, verb, None if value is None else value.decode("latin-1"), 0, "tcp",
                   call, ret if done else None, outcome)
    rec.close()
    for c in (*udp.values(), *tcp.values()):
        c.close()
    print(json.dumps({"client": args.client, "operations": rec.count, "late": late,
                      "not_sent": not_sent, "seconds": round(time.monotonic() - start, 2)}))
    return 0


def arguments() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m p4cache.demo.client", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--servers", type=parse_servers, required=True,
                    help="NAME=IP:PORT,... (memcached's UDP port, the agent's TCP port)")
    ap.add_argument("--mode", choices=("run", "load", "stats"), default="run",
                    help="run the workload (default), load every key once, or print stats")
    ap.add_argument("--client", type=int, default=1, help="this client's number, 1..N")
    ap.add_argument("--clients", type=int, default=1, help="how many clients share the load")
    ap.add_argument("--history", type=Path, default=Path("history.jsonl"))
    ap.add_argument("--keys", type=int, default=2000)
    ap.add_argument("--skew", type=float, default=0.99)
    ap.add_argument("--key-size", type=int, default=16)
    ap.add_argument("--value-size", type=int, default=64)
    ap.add_argument("--get", type=float, default=95.0, help="share of GETs (weights)")
    ap.add_argument("--set", type=float, default=4.5)
    ap.add_argument("--delete", type=float, default=0.5)
    ap.add_argument("--rate", type=float, default=500.0, help="operations per second")
    ap.add_argument("--duration", type=float, default=20.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--udp-timeout", type=float, default=0.25)
    ap.add_argument("--tcp-timeout", type=float, default=3.0)
    return ap


def main(argv: list[str] | None = None) -> int:
    return run(arguments().parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
