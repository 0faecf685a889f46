"""What the whole-system benchmarks (loadbalance, etc) share: the lab's status channels, a
JSON-lines worker inside a namespace, the servers' nftables rate limit and its counters, and
latency summaries.

Everything here talks to a running ``p4cache.lab.Lab``; nothing brings one up.
"""

from __future__ import annotations

import json
import math
import socket
import statistics
import sys
import time
from collections.abc import Sequence

from bench.common import Agent as Worker

NFT_TABLE = "p4bench"


def pct(xs: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (0 for an empty list)."""
    if not xs:
        return 0.0
    s = sorted(xs)
    return s[max(0, min(len(s) - 1, math.ceil(q / 100 * len(s)) - 1))]


def summary(xs: Sequence[float], unit: str, nd: int = 1) -> dict:
    """n, p50, p90, p99, max and mean of ``xs`` with ``unit`` in the field names."""
    if not xs:
        return {"n": 0}
    return {"n": len(xs), f"p50_{unit}": round(statistics.median(xs), nd),
            f"p90_{unit}": round(pct(xs, 90), nd), f"p99_{unit}": round(pct(xs, 99), nd),
            f"max_{unit}": round(max(xs), nd), f"mean_{unit}": round(statistics.fmean(xs), nd)}


def controller_status(lab) -> dict:  # noqa: ANN001 - a Lab
    from p4cache.controller.status import fetch

    return fetch(f"127.0.0.1:{lab.status_port}")


def agent_status(host) -> dict:  # noqa: ANN001 - a lab Host (a server)
    """The host agent's status over its control channel."""
    h, port = host.agent_control.rsplit(":", 1)
    with socket.create_connection((h, int(port)), timeout=5.0) as s:
        s.sendall(b'{"id":1,"op":"status"}\n')
        buf = b""
        while not buf.endswith(b"\n"):
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
    rep = json.loads(buf)
    if not rep.get("ok"):
        raise RuntimeError(f"agent status: {rep}")
    return rep["status"]


def wait_ready(lab, timeout: float = 40.0) -> None:  # noqa: ANN001 - a Lab
    """Until the controller has the switch, its pipeline and every agent, and each agent knows
    its watch set."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            st = controller_status(lab)
            if (st["switch"]["connected"] and st["switch"]["pipeline_pushed"]
                    and st["agents"] and all(a["up"] for a in st["agents"])
                    and all(agent_status(h)["watch"]["known"] for h in lab.servers)):
                return
        except (OSError, KeyError, ValueError, RuntimeError):
            pass
        time.sleep(0.2)
    raise RuntimeError(f"controller or agents not ready (switch running: "
                       f"{lab.running('switch')}):\n" + lab.log("controller")[-3000:])


def other_labs(tag: str) -> list[str]:
    """Namespaces of other p4cache labs on the machine (they share CPUs and management nets)."""
    from p4cache.lab import netns

    return sorted(n for n in netns.namespaces()
                  if n.startswith(netns.PREFIX) and not n.startswith(tag + "-"))


def start_worker(host, module: str) -> Worker:  # noqa: ANN001 - a lab Host
    """``python -m <module> --worker`` in ``host``'s namespace, driven by JSON lines."""
    from p4cache.lab import netns

    return Worker([*netns.exec_prefix(host.ns), sys.executable, "-m", module, "--worker"])


def ask_all(workers: Sequence[Worker], cmds: Sequence[dict]) -> list[dict]:
    """Send one command to each worker (they run at once), then collect the answers."""
    for w, c in zip(workers, cmds, strict=True):
        w.write(c)
    out = [w.read() for w in workers]
    for o in out:
        if "error" in o:
            raise RuntimeError(f"worker: {o['error']}")
    return out


def serve_worker(handle) -> int:  # noqa: ANN001 - a callable dict -> dict
    """The worker's side: ready, then one JSON answer per JSON command on stdin."""
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        try:
            out = handle(json.loads(line))
        except Exception as e:  # noqa: BLE001 - reported to the driver, which raises
            out = {"error": repr(e)}
        print(json.dumps(out), flush=True)
    return 0


# ----------------------------------------------------------------------------- rate limit

def limit_ruleset(rate: int, burst: int, port: int) -> str:
    """nft: UDP to memcached's port above ``rate`` packets/s (``burst`` packets of credit) is
    dropped at the server's input hook; the first rule counts drops, the second what passed."""
    return (f"add table inet {NFT_TABLE}; "
            f"add chain inet {NFT_TABLE} input {{ type filter hook input priority -10; }}; "
            f"add rule inet {NFT_TABLE} input udp dport {port} "
            f"limit rate over {rate}/second burst {burst} packets counter drop; "
            f"add rule inet {NFT_TABLE} input udp dport {port} counter accept")


def install_limit(lab, rate: int, burst: int, port: int) -> None:  # noqa: ANN001 - a Lab
    from p4cache.lab import netns

    for h in lab.servers:
        netns.run(["nft", limit_ruleset(rate, burst, port)], ns=h.ns)


def limit_counters(lab) -> dict[str, dict[str, int]]:  # noqa: ANN001 - a Lab
    """Per server address: UDP GET packets dropped by the limit and passed to memcached."""
    from p4cache.lab import netns

    out = {}
    for h in lab.servers:
        js = json.loads(netns.run(["nft", "-j", "list", "table", "inet", NFT_TABLE], ns=h.ns))
        counts = [e["counter"]["packets"] for item in js["nftables"] if "rule" in item
                  for e in item["rule"]["expr"] if "counter" in e]
        out[h.ip] = {"dropped": counts[0], "passed": counts[1]}
    return out


def counter_delta(after: dict[str, dict[str, int]], before: dict[str, dict[str, int]]
                  ) -> dict[str, dict[str, int]]:
    return {ip: {k: after[ip][k] - before[ip][k] for k in after[ip]} for ip in after}
