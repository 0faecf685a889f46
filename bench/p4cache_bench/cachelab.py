"""What the whole-system benchmarks (hitshare, latency, hotin, loadbalance, etc, gate) share:
the lab with a BMC-style key space loaded into memcached, JSON-lines workers inside namespaces,
the controller's and the agents' status, the servers' nftables rate limit and its counters, and
latency summaries.

The worker (``python -m p4cache_bench.cachelab --worker``) runs inside a namespace and takes one
JSON command per line on stdin, answering one JSON line on stdout:

- ``load``: pipelined ``set ... noreply`` of ranks 1..n into memcached (run in the server's
  namespace, straight to memcached's TCP backend on 127.0.0.1, before any key is cached);
- ``zipf``: open-loop UDP GETs of Zipf-distributed ranks at a fixed rate, every reply read through
  a raw socket and told apart by its UDP checksum (0: the switch's reply, see gate.py),
  counted in bins of send time; optionally the rank -> key mapping shifts at given times;
- ``latency``: one GET at a time, round robin over named key classes (each with its own source
  address), the round trip of every request and who answered it.

Keys and values follow BMC's setting (p4cache.workload.generator, pool "bmc"): rank r's key is
``k<r>`` padded with "_" to 16 bytes, its value 32 bytes.
"""

from __future__ import annotations

import contextlib
import json
import math
import random
import select
import socket
import statistics
import struct
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

VALUE_LEN = 32
KEY_LEN = 16
NFT_TABLE = "p4bench"


def pct(xs: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (0 for an empty list)."""
    if not xs:
        return 0.0
    s = sorted(xs)
    return s[max(0, min(len(s) - 1, math.ceil(q / 100 * len(s)) - 1))]


STATS: dict[str, Callable[[Sequence[float]], float]] = {
    "p50": statistics.median, "p90": lambda xs: pct(xs, 90), "p99": lambda xs: pct(xs, 99),
    "p999": lambda xs: pct(xs, 99.9), "max": max, "min": min, "mean": statistics.fmean}


def summary(xs: Sequence[float], unit: str, nd: int = 1,
            stats: Sequence[str] = ("p50", "p90", "p99", "max", "mean")) -> dict:
    """n and ``stats`` (names in ``STATS``) of ``xs``, rounded to ``nd`` digits, with ``unit``
    in the field names."""
    if not xs:
        return {"n": 0}
    return {"n": len(xs), **{f"{k}_{unit}": round(STATS[k](xs), nd) for k in stats}}


def key_of(rank: int) -> bytes:
    """Rank ``rank``'s key: BMC's 16-byte keys (the generator's naming)."""
    return (b"k%d" % rank).ljust(KEY_LEN, b"_")


def value_of(rank: int) -> bytes:
    return (b"v%d-" % rank).ljust(VALUE_LEN, b"x")


def shifted(rank: int, n: int, shift: int) -> int:
    """The key index rank ``rank`` maps to after the hot set moved by ``shift`` ranks."""
    return (rank - 1 + shift) % n + 1


# ----------------------------------------------------------------------------- worker side

def _op_load(cmd: dict) -> dict:
    """Ranks 1..n into memcached, pipelined, then one ``version`` to know they all landed."""
    host, port = cmd["addr"].rsplit(":", 1)
    n, batch = cmd["n"], 2000
    t0 = time.monotonic()
    with socket.create_connection((host, int(port)), timeout=30.0) as s:
        for lo in range(1, n + 1, batch):
            buf = b"".join(b"set %s 0 0 %d noreply\r\n%s\r\n" % (key_of(r), VALUE_LEN, value_of(r))
                           for r in range(lo, min(n, lo + batch - 1) + 1))
            s.sendall(buf)
        s.sendall(b"version\r\n")
        got = b""
        while b"\r\n" not in got:
            chunk = s.recv(4096)
            if not chunk:
                break
            got += chunk
    if not got.startswith(b"VERSION"):
        raise RuntimeError(f"memcached after loading: {got[:100]!r}")
    return {"loaded": n, "load_s": round(time.monotonic() - t0, 3)}


class Replies:
    """UDP replies from memcached's port to our sockets, read through a raw socket."""

    def __init__(self) -> None:
        self.raw = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_UDP)
        self.raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
        self.raw.setblocking(False)

    def drain(self, ports: set[int]) -> list[tuple[int, int, bool, bytes, float]]:
        """(dport, request id, from the switch, payload after the frame header, time)."""
        from p4cache import dataplane as dp

        out = []
        while True:
            try:
                data = self.raw.recv(65536)
            except BlockingIOError:
                return out
            t = time.perf_counter()
            ihl = (data[0] & 0x0F) * 4
            sport, dport, _, csum = struct.unpack_from("!HHHH", data, ihl)
            if sport != dp.MEMCACHED_PORT or dport not in ports:
                continue
            rid = struct.unpack_from("!H", data, ihl + 8)[0]
            out.append((dport, rid, csum == 0, data[ihl + 16:], t))

    def close(self) -> None:
        self.raw.close()


def _udp(src: str = "0.0.0.0") -> tuple[socket.socket, int]:
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    u.bind((src, 0))
    u.setblocking(False)
    return u, u.getsockname()[1]


def _discard(u: socket.socket) -> None:
    """The kernel's copy of what the raw socket already read."""
    while True:
        try:
            u.recv(65536)
        except BlockingIOError:
            return


def _op_zipf(cmd: dict) -> dict:
    """Open-loop Zipf GETs at ``rate`` for ``duration`` s; counts per bin of send time."""
    from p4cache import dataplane as dp
    from p4cache.workload.generator import Zipf

    n, bin_s, rate = cmd["n"], cmd["bin_s"], cmd["rate"]
    zipf = Zipf(n, cmd["skew"], cmd["seed"])
    keys = [b""] + [key_of(r) for r in range(1, n + 1)]
    # [[at_s, shift], ...] in time order: from at_s on, rank r is served by key r + shift
    shifts = [(0.0, 0)] + [tuple(x) for x in cmd.get("shifts", [])]
    cur = 0
    top = cmd.get("count_top", 0)
    rank_counts = [0] * (top + 1)
    nbins = int(cmd["duration"] / bin_s + 0.5)
    # per bin: sent, switch replies, memcached replies, replies that were not a value
    bins = [[0, 0, 0, 0] for _ in range(nbins)]
    sent_bin = [-1] * 65536
    u, port = _udp()
    rep = Replies()
    dest = (cmd["server"], dp.MEMCACHED_PORT)
    total = int(nbins * bin_s * rate)
    linger = cmd.get("linger_s", 0.3)
    seq, late_max = 0, 0.0
    t0 = time.perf_counter()
    try:
        while True:
            now = time.perf_counter()
            while seq < total and t0 + seq / rate <= now:
                due = seq / rate
                r = zipf.sample()
                if r <= top:
                    rank_counts[r] += 1
                while cur + 1 < len(shifts) and due >= shifts[cur + 1][0]:
                    cur += 1
                k = shifted(r, n, shifts[cur][1])
                rid = seq & 0xFFFF
                u.sendto(dp.get_request(rid, keys[k]), dest)
                b = int(due / bin_s)
                sent_bin[rid] = b
                bins[b][0] += 1
                late_max = max(late_max, now - t0 - due)
                seq += 1
            end = t0 + total / rate + linger
            if seq >= total and now >= end:
                break
            nxt = t0 + seq / rate if seq < total else end
            ready, _, _ = select.select([rep.raw, u], [], [], max(0.0, nxt - now))
            if u in ready:
                _discard(u)
            for _dport, rid, sw, body, _t in rep.drain({port}):
                b = sent_bin[rid]
                if b < 0:
                    continue
                sent_bin[rid] = -1
                bins[b][1 if sw else 2] += 1
                if not body.startswith(b"VALUE "):
                    bins[b][3] += 1
    finally:
        u.close()
        rep.close()
    return {"bins": bins, "sent": seq, "rank_counts_top": rank_counts[1:],
            "max_send_lag_ms": round(late_max * 1e3, 2)}


def _op_latency(cmd: dict) -> dict:
    """One GET at a time; classes in a shuffled order every round; RTT and who answered."""
    from p4cache import dataplane as dp

    classes: dict[str, dict[str, Any]] = cmd["classes"]  # name -> {"src": ip, "keys": [...]}
    socks = {name: _udp(c["src"]) for name, c in classes.items()}
    rep = Replies()
    rng = random.Random(cmd["seed"])
    dest = (cmd["server"], dp.MEMCACHED_PORT)
    out: dict[str, dict[str, list]] = {c: {"rtt_us": [], "switch": [], "value_ok": []}
                                       for c in classes}
    timeouts = {c: 0 for c in classes}
    idx = dict.fromkeys(classes, cmd.get("offset", 0))
    names = list(classes)
    try:
        for i in range(cmd["rounds"]):
            rng.shuffle(names)
            for j, c in enumerate(names):
                keys = classes[c]["keys"]
                key = keys[idx[c] % len(keys)].encode()
                idx[c] += 1
                u, port = socks[c]
                got = _one_get(u, port, rep, dest, (i * len(names) + j) & 0xFFFF, key,
                               cmd["timeout_s"])
                if got is None:
                    timeouts[c] += 1
                    continue
                rtt, sw, body = got
                out[c]["rtt_us"].append(round(rtt * 1e6, 1))
                out[c]["switch"].append(sw)
                out[c]["value_ok"].append(body.startswith(b"VALUE " + key + b" "))
            if cmd.get("gap_s"):
                time.sleep(cmd["gap_s"])
    finally:
        for u, _ in socks.values():
            u.close()
        rep.close()
    return {"classes": out, "timeouts": timeouts}


def _one_get(u: socket.socket, port: int, rep: Replies, dest: tuple[str, int], rid: int,
             key: bytes, timeout: float) -> tuple[float, bool, bytes] | None:
    """One GET from ``u``; (round trip s, from the switch, reply payload) or None on timeout."""
    from p4cache import dataplane as dp

    frame = dp.get_request(rid, key)
    t0 = time.perf_counter()
    u.sendto(frame, dest)
    deadline = t0 + timeout
    while True:
        left = deadline - time.perf_counter()
        if left <= 0:
            return None
        ready, _, _ = select.select([rep.raw], [], [], left)
        if not ready:
            continue
        for dport, got_rid, sw, body, t in rep.drain({port}):
            if dport == port and got_rid == rid:
                _discard(u)
                return t - t0, sw, body


OPS: dict[str, Callable[[dict], dict]] = {"load": _op_load, "zipf": _op_zipf,
                                          "latency": _op_latency}


def serve_worker(ops: dict[str, Callable[[dict], dict]]) -> int:
    """The worker's side: ready, then one JSON answer per JSON command on stdin, by its "op"."""
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        try:
            cmd = json.loads(line)
            op = ops.get(cmd["op"])
            out = op(cmd) if op else {"error": f"unknown op {cmd['op']!r}"}
        except Exception as e:  # noqa: BLE001 - reported to the driver, which raises
            out = {"error": repr(e)}
        print(json.dumps(out), flush=True)
    return 0


# ----------------------------------------------------------------------------- driver side

@dataclass
class Worker:
    """A worker process (``python -m <module> --worker``) inside a namespace."""

    proc: Any

    @classmethod
    def start(cls, ns: str, module: str = "p4cache_bench.cachelab") -> Worker:
        from p4cache_bench.common import Agent
        from softnic import netns

        return cls(Agent([*netns.exec_prefix(ns), sys.executable, "-m", module, "--worker"]))

    def send(self, cmd: dict) -> None:
        self.proc.write(cmd)

    def recv(self, check: bool = True) -> dict:
        """The next answer; an error answer raises unless not ``check``."""
        out = self.proc.read()
        if check and "error" in out:
            raise RuntimeError(f"worker: {out['error']}")
        return out

    def ask(self, cmd: dict) -> dict:
        self.send(cmd)
        return self.recv()

    def close(self) -> None:
        self.proc.close()


def start_workers(hosts: Sequence, module: str) -> list[Worker]:
    """One ``module`` worker in each host's namespace (those started are closed on failure)."""
    workers: list[Worker] = []
    try:
        for h in hosts:
            workers.append(Worker.start(h.ns, module))
    except BaseException:
        close_all(workers)
        raise
    return workers


def close_all(workers: Sequence[Worker]) -> None:
    for w in workers:
        w.close()


def ask_all(workers: Sequence[Worker], cmds: Sequence[dict]) -> list[dict]:
    """Send one command to each worker (they run at once), then collect the answers."""
    for w, c in zip(workers, cmds, strict=True):
        w.send(c)
    out = [w.recv(check=False) for w in workers]
    for o in out:
        if "error" in o:
            raise RuntimeError(f"worker: {o['error']}")
    return out


# ----------------------------------------------------------------------------- lab status

def controller_status(lab) -> dict:  # noqa: ANN001 - a Lab
    from p4cache.controller.status import fetch

    return fetch(f"127.0.0.1:{lab.status_port}")


def settled_controller_status(lab, timeout: float = 60.0) -> dict:  # noqa: ANN001 - a Lab
    """The controller's status once its switch counters were read after this call began.

    The controller reads the switch's counters once an epoch and its status reports the last
    read; a fixed wait for the next epoch is not enough on a busy machine. This waits (up to
    ``timeout``, generous: only a stuck controller takes that long) for a status whose
    ``switch_counters_read_s`` is past the controller's uptime when the call began, so the
    counters include every packet the switch handled before the call.
    """
    since = controller_status(lab)["uptime_s"]
    deadline = time.monotonic() + timeout
    while True:
        st = controller_status(lab)
        read = st.get("switch_counters_read_s")
        if read is not None and read > since:
            return st
        if time.monotonic() > deadline:
            raise RuntimeError(f"the controller read no switch counters within {timeout} s "
                               f"(last read at uptime {read} s, waiting for > {since} s)")
        time.sleep(0.1)


def agent_status(host) -> dict:  # noqa: ANN001 - a lab Host (a server)
    """The host agent's status over its control channel."""
    from p4cache import agent_protocol as proto

    h, port = host.agent_control.rsplit(":", 1)
    with socket.create_connection((h, int(port)), timeout=5.0) as s:
        s.sendall(proto.encode(proto.request(proto.STATUS, 1)))
        buf = b""
        while not buf.endswith(b"\n"):
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
    rep = proto.decode(buf)
    if not rep.get(proto.OK):
        raise RuntimeError(f"agent status: {rep}")
    return rep[proto.STATUS_FIELD]


def wait_ready(lab, timeout: float = 40.0, watch: bool = True) -> None:  # noqa: ANN001 - a Lab
    """Until the controller has the switch, its pipeline and every agent up, and (``watch``)
    there are agents and each one's server knows its watch set."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            st = controller_status(lab)
            if (st["switch"]["connected"] and st["switch"]["pipeline_pushed"]
                    and all(a["up"] for a in st["agents"])
                    and (not watch or (st["agents"] and all(
                        agent_status(h)["watch"]["known"] for h in lab.servers)))):
                return
        except (OSError, KeyError, ValueError, RuntimeError):
            pass
        time.sleep(0.2)
    raise RuntimeError(f"controller or agents not ready (switch running: "
                       f"{lab.running('switch')}):\n" + lab.log("controller")[-3000:])


def start_system(lab, timeout: float = 40.0) -> None:  # noqa: ANN001 - a Lab
    """Every server's agent, then the controller; returns once ``wait_ready``."""
    for i in range(len(lab.servers)):
        lab.start_agent(i)
    lab.start_controller()
    wait_ready(lab, timeout)


def other_labs(tag: str) -> list[str]:
    """Namespaces of other p4cache labs on the machine (they share CPUs and management nets)."""
    from p4cache.lab.lab import PREFIX
    from softnic import netns

    return sorted(n for n in netns.namespaces()
                  if n.startswith(PREFIX) and not n.startswith(tag + "-"))


def warn_other_labs(tag: str, console) -> list[str]:  # noqa: ANN001 - a rich Console
    """``other_labs``, with a warning on ``console`` when there are any."""
    others = other_labs(tag)
    if others:
        console.print(f"[yellow]warning: other labs are up: {', '.join(others)}")
    return others


class CacheLab:
    """A Lab (one server, one client) with the agent, memcached loaded with ranks 1..n, the
    workers, and the controller (re)started with a given number of slots."""

    def __init__(self, lab, n_keys: int) -> None:  # noqa: ANN001 - a p4cache.lab.Lab
        self.lab = lab
        self.server, self.client = lab.servers[0], lab.clients[0]
        lab.start_agent(0)
        self.sw = Worker.start(self.server.ns)
        self.cw = Worker.start(self.client.ns)
        self.load = self.sw.ask({"op": "load", "addr": "127.0.0.1:11212", "n": n_keys})
        self.n = n_keys

    def close(self) -> None:
        self.sw.close()
        self.cw.close()

    def start_controller(self, slots: int | None = None, clients: list[str] | None = None
                         ) -> float:
        """Start the controller with ``slots`` (None: the program's) and the client allow-list
        ``clients`` (None: the lab's 10.0.0.0/24); seconds until it is ready."""
        from p4cache.lab.lab import _venv_bin, wait_tcp

        t0 = time.monotonic()
        lab = self.lab
        cfg = lab.controller_config()
        if slots is not None:
            cfg["cache"]["slots"] = slots
        if clients is not None:
            cfg["clients"] = clients
        path = lab.workdir / "controller.json"
        path.write_text(json.dumps(cfg, indent=2))
        lab.popen(None, [_venv_bin("p4cache-controller"), "run", "--config", str(path)],
                  "controller")
        wait_tcp("127.0.0.1", lab.status_port, 30.0, what="the controller's status server",
                 alive=lambda: lab.running("controller"), log=lambda: lab.log("controller"))
        self.wait_ready()
        return round(time.monotonic() - t0, 2)

    def fresh_cache(self, slots: int | None) -> float:
        """An empty cache: controller stopped, switch restarted empty, controller started."""
        t0 = time.monotonic()
        self.lab.stop_controller()
        self.lab.restart_switch()
        self.start_controller(slots)
        return round(time.monotonic() - t0, 2)

    def status(self) -> dict:
        return controller_status(self.lab)

    def settled_status(self) -> dict:
        """``status`` with switch counters read after the call began (settled_controller_status)."""
        return settled_controller_status(self.lab)

    def wait_ready(self, timeout: float = 40.0) -> None:
        wait_ready(self.lab, timeout, watch=False)

    def hits(self) -> int:
        """The switch's hit counter, read after the call began."""
        return int(self.settled_status()["switch_counters"]["hit"])


@contextlib.contextmanager
def cache_lab(workdir: Path, n_keys: int, console, target: str = "softnic",  # noqa: ANN001
              placement: str = "switch") -> Iterator[tuple[CacheLab, list[str]]]:
    """A one-server, one-client lab with ranks 1..``n_keys`` loaded (see ``CacheLab``), the
    cache on ``target`` at ``placement`` (p4cache.lab.LabSpec); yields it and the other labs that
    were up (warned about on ``console``)."""
    from p4cache.lab import Lab, LabSpec

    with Lab(LabSpec(servers=1, clients=1, target=target, placement=placement), workdir) as lab:
        others = warn_other_labs(lab.tag, console)
        cl = CacheLab(lab, n_keys)
        try:
            yield cl, others
        finally:
            cl.close()


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
    from softnic import netns

    for h in lab.servers:
        netns.run(["nft", limit_ruleset(rate, burst, port)], ns=h.ns)


def limit_counters(lab) -> dict[str, dict[str, int]]:  # noqa: ANN001 - a Lab
    """Per server address: UDP GET packets dropped by the limit and passed to memcached."""
    from softnic import netns

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


if __name__ == "__main__":
    if sys.argv[1:] == ["--worker"]:
        sys.exit(serve_worker(OPS))
    print("usage: python -m p4cache_bench.cachelab --worker", file=sys.stderr)
    sys.exit(2)
