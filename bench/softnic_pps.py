"""Packets per second of ``softnic run``, in-process and through veth pairs.

Two programs (``bench/p4``): ``l3.p4`` (IPv4 LPM forwarding, like p4lang/tutorials basic) and
``stateful.p4`` (the same plus two hashes and two register read-modify-writes per packet, the
kind of work the cache does). Each is measured two ways:

* in-process: ``Switch.process_packet`` in a loop, no I/O, the engine's own ceiling;
* veth: a raw-socket sender in namespace h1 sends a fixed number of UDP frames as fast as it
  can, ``softnic run`` forwards them (installed by P4Runtime like a real controller would), and a
  receiver in namespace h2 counts them. The sender outpaces the switch, so this is the saturated
  forwarding rate (received frames / time from first to last received), the number FIDELITY.md
  quotes for BMv2 (about 14k pkt/s default build, 30-39k without logging).

Every measurement is repeated and the median reported; counts and times are bounded. Results go
to ``bench/results/softnic_pps.json`` (with machine information) and, if matplotlib is
installed, a bar chart to ``docs/softnic_pps.png``.

Run: ``.venv/bin/python -m bench.softnic_pps`` (root needed for the veth part) or
``p4cache-bench``; ``--quick`` for a short smoke run.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from softnic.runtime.api import ActionCall, MatchKey, TableEntry

ROOT = Path(__file__).resolve().parent.parent
P4_DIR = Path(__file__).resolve().parent / "p4"
PROGRAMS = {"l3": P4_DIR / "l3.p4", "stateful": P4_DIR / "stateful.p4"}
RESULTS = Path(__file__).resolve().parent / "results" / "softnic_pps.json"
PLOT = ROOT / "docs" / "softnic_pps.png"

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
    """UDP frames h1 -> h2 from N_FLOWS source ports (so hashes hit many register cells)."""
    return [bytes(Ether(dst=H1["gw_mac"], src=H1["mac"]) / IP(src=H1["ip"], dst=H2["ip"], ttl=64)
                  / UDP(sport=10000 + i, dport=UDP_DPORT) / (b"p" * payload_len))
            for i in range(N_FLOWS)]


def compile_program(p4: Path, outdir: Path) -> tuple[Path, Path]:
    """``softnic compile`` (p4c-bm2-ss command line) -> (BMv2 JSON, P4Info text)."""
    out_json = outdir / f"{p4.stem}.json"
    out_info = outdir / f"{p4.stem}.p4info.txtpb"
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

_SENDER = """
import json, socket, sys, time
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((sys.argv[1], 0))
s.setsockopt(socket.SOL_SOCKET, 32, 4 * 1024 * 1024)  # SO_SNDBUFFORCE
frames = [bytes.fromhex(h) for h in json.load(sys.stdin)]
n = int(sys.argv[2]); nf = len(frames); sent = 0; errors = 0
send = s.send
t0 = time.perf_counter()
for i in range(n):
    try:
        send(frames[i % nf]); sent += 1
    except OSError:
        errors += 1
print(json.dumps({"sent": sent, "send_errors": errors, "duration_s": time.perf_counter() - t0}))
"""

_RECEIVER = """
import json, socket, sys, time
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
s.bind((sys.argv[1], 0x0800))
s.setsockopt(socket.SOL_SOCKET, 33, 16 * 1024 * 1024)  # SO_RCVBUFFORCE
expect, idle, port = int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
s.settimeout(30.0)
print("ready", flush=True)
n = 0; first = last = None; ttl_ok = True
while n < expect:
    try:
        data = s.recv(2048)
    except socket.timeout:
        break
    if len(data) < 42 or int.from_bytes(data[36:38], "big") != port:
        continue
    last = time.perf_counter()
    if first is None:
        first = last
        s.settimeout(idle)
    ttl_ok = ttl_ok and data[22] == 63
    n += 1
dur = (last - first) if n > 1 else 0.0
print(json.dumps({"received": n, "rx_window_s": dur, "ttl_decremented": ttl_ok}))
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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


def veth_pps(bmv2_json: Path, p4info: Path, count: int) -> dict:
    from softnic.netns import Topology

    frames = build_frames()
    with Topology(2, switch_in_root=True) as topo:
        h1, h2 = topo.hosts
        grpc_addr = f"127.0.0.1:{_free_port()}"
        sw = subprocess.Popen([sys.executable, "-m", "softnic.cli", "run", "--no-p4",
                               *topo.interface_args(), "--", "--grpc-server-addr", grpc_addr],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert sw.stdout is not None
            line = sw.stdout.readline()
            if "P4Runtime on" not in line:
                raise RuntimeError(f"softnic run did not start: {line}{sw.stderr.read()}")
            _install_route(grpc_addr, bmv2_json, p4info)
            recv = h2.popen([sys.executable, "-c", _RECEIVER, h2.ifname, str(count), "1.0",
                             str(UDP_DPORT)], stdout=subprocess.PIPE, text=True)
            assert recv.stdout is not None
            if recv.stdout.readline().strip() != "ready":
                raise RuntimeError("receiver did not start")
            snd = h1.run([sys.executable, "-c", _SENDER, h1.ifname, str(count)],
                         input=json.dumps([f.hex() for f in frames]), timeout=300)
            if snd.returncode != 0:
                raise RuntimeError(f"sender failed: {snd.stderr}")
            out, _ = recv.communicate(timeout=300)
        finally:
            sw.terminate()
            try:
                sw.wait(timeout=10)
            except subprocess.TimeoutExpired:
                sw.kill()
    s, r = json.loads(snd.stdout), json.loads(out)
    pps = r["received"] / r["rx_window_s"] if r["rx_window_s"] > 0 else 0.0
    return {"sent": s["sent"], "send_errors": s["send_errors"],
            "send_duration_s": round(s["duration_s"], 4), "received": r["received"],
            "rx_window_s": round(r["rx_window_s"], 4), "ttl_decremented": r["ttl_decremented"],
            "pps": round(pps, 1)}


# -- driver

@dataclass
class Settings:
    repeats: int
    inproc_seconds: float
    inproc_max_packets: int
    veth_count: int


def machine_info() -> dict:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    return {"cpu": model, "cpus": os.cpu_count(), "kernel": platform.release(),
            "python": platform.python_version(), "git_commit": commit,
            "date": time.strftime("%Y-%m-%dT%H:%M:%S%z")}


def _median(runs: list[dict], key: str = "pps") -> float:
    return round(statistics.median(r[key] for r in runs), 1)


def run_bench(settings: Settings, modes: list[str], programs: list[str]) -> dict:
    result: dict = {"machine": machine_info(), "settings": asdict(settings), "results": {}}
    with tempfile.TemporaryDirectory(prefix="softnic-bench-") as tmp:
        for name in programs:
            bmv2_json, p4info = compile_program(PROGRAMS[name], Path(tmp))
            entry: dict = {"program": str(PROGRAMS[name].relative_to(ROOT))}
            if "inprocess" in modes:
                runs = [inprocess_pps(bmv2_json, settings.inproc_seconds,
                                      settings.inproc_max_packets)
                        for _ in range(settings.repeats)]
                entry["inprocess"] = {"median_pps": _median(runs), "runs": runs}
                print(f"{name:9s} in-process: {entry['inprocess']['median_pps']:>10.1f} pkt/s",
                      flush=True)
            if "veth" in modes:
                runs = [veth_pps(bmv2_json, p4info, settings.veth_count)
                        for _ in range(settings.repeats)]
                entry["veth"] = {"median_pps": _median(runs), "runs": runs}
                print(f"{name:9s} veth:       {entry['veth']['median_pps']:>10.1f} pkt/s "
                      f"(received {[r['received'] for r in runs]} of {settings.veth_count})",
                      flush=True)
            result["results"][name] = entry
    return result


def plot(result: dict, path: Path) -> bool:
    """Bar chart of the medians; False (and nothing written) when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    labels, values = [], []
    for name, entry in result["results"].items():
        for mode in ("inprocess", "veth"):
            if mode in entry:
                labels.append(f"{name}\n{mode}")
                values.append(entry[mode]["median_pps"])
    fig, ax = plt.subplots(figsize=(6, 3.5))
    bars = ax.bar(labels, values, color=["#4c72b0", "#dd8452"] * len(result["results"]))
    ax.bar_label(bars, fmt="%.0f")
    ax.set_ylabel("packets / s (median)")
    ax.margins(y=0.15)
    m = result["machine"]
    ax.set_title(f"softnic forwarding rate ({m['cpus']} CPUs, Python {m['python']})")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="p4cache-bench", description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="short smoke run (1 repeat, few packets)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--veth-count", type=int, help="frames sent per veth run (default 20000)")
    ap.add_argument("--inproc-seconds", type=float, default=3.0)
    ap.add_argument("--mode", choices=["inprocess", "veth"], action="append")
    ap.add_argument("--program", choices=sorted(PROGRAMS), action="append")
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--plot", type=Path, default=PLOT)
    args = ap.parse_args(argv)
    settings = Settings(repeats=1 if args.quick else args.repeats,
                        inproc_seconds=0.5 if args.quick else args.inproc_seconds,
                        inproc_max_packets=200_000,
                        veth_count=args.veth_count or (2000 if args.quick else 20000))
    modes = args.mode or ["inprocess", "veth"]
    if "veth" in modes and os.geteuid() != 0:
        print("p4cache-bench: the veth mode needs root; running in-process only", file=sys.stderr)
        modes = [m for m in modes if m != "veth"]
    result = run_bench(settings, modes, args.program or sorted(PROGRAMS))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"results: {args.out}")
    if plot(result, args.plot):
        print(f"plot: {args.plot}")
    else:
        print("plot skipped: matplotlib is not installed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
