"""What the benchmarks share: machine information, medians, the veth traffic agents, the
``softnic run`` process and the rate-step sweep's bookkeeping."""

from __future__ import annotations

import contextlib
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from p4cache import paths

ROOT = paths.checkout()  # the source checkout, None when p4cache is installed from a wheel

LOSS_OK = 0.01  # "max rate": median loss below 1 % ...
KEEP_UP = 0.97  # ... and delivered >= 97 % of offered: the port's socket buffer holds thousands
# of frames, so a short step at too high a rate loses nothing yet is delivered late and slowly


def machine_info() -> dict:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    commit, dirty = "", []
    if ROOT is not None:
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain",
                                "--untracked-files=no"],
                               capture_output=True, text=True).stdout.split("\n")
    try:
        load = list(os.getloadavg())
    except OSError:
        load = []
    return {"cpu": model, "cpus": os.cpu_count(), "kernel": platform.release(),
            "python": platform.python_version(), "git_commit": commit,
            "git_modified_files": sorted(line[3:] for line in dirty if line.strip()),
            "loadavg_at_start": load, "date": time.strftime("%Y-%m-%dT%H:%M:%S%z")}


def shown(path: Path) -> str:
    """A path as results record it: relative to the checkout when inside it, else absolute."""
    if ROOT is not None and path.is_relative_to(ROOT):
        return path.relative_to(ROOT).as_posix()
    return str(path)


def median(runs: Sequence[dict], key: str = "pps") -> float:
    return round(statistics.median(r[key] for r in runs), 1)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Agent:
    """A ``p4cache_bench.veth_traffic`` process in a namespace, driven one JSON line at a time."""

    def __init__(self, argv: list[str]) -> None:
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True)
        if not self.read().get("ready"):
            raise RuntimeError(f"{argv} did not start")

    def write(self, cmd: dict) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()

    def read(self) -> dict:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"traffic agent exited (code {self.proc.poll()})")
        return json.loads(line)

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def agent_argv(host, *args: str) -> list[str]:  # noqa: ANN001 - a softnic.netns.Host
    """The command line of a ``p4cache_bench.veth_traffic`` agent inside ``host``'s namespace."""
    return host.cmd([sys.executable, "-m", "p4cache_bench.veth_traffic", *args])


@contextlib.contextmanager
def softnic_run(topo, extra: Sequence[str] = (),  # noqa: ANN001 - a Topology
                engine: Sequence[str] = ()) -> Iterator[str]:
    """``softnic run --no-p4`` (``engine``: e.g. ``--engine xdp``) on ``topo``'s switch ports;
    yields its P4Runtime address."""
    grpc_addr = f"127.0.0.1:{free_port()}"
    sw = subprocess.Popen([sys.executable, "-m", "softnic.cli", "run", "--no-p4", *engine,
                           *topo.interface_args(), "--", "--grpc-server-addr", grpc_addr,
                           *extra],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert sw.stdout is not None and sw.stderr is not None
        line = sw.stdout.readline()
        if "P4Runtime on" not in line:
            raise RuntimeError(f"softnic run did not start: {line}{sw.stderr.read()}")
        yield grpc_addr
    finally:
        stop_process(sw)


def step_rates(sender: dict, receiver: dict) -> dict:
    """Offered and delivered rate and loss of one step, from the agents' answers."""
    s, r = sender, receiver
    offered = s["sent"] / s["send_duration_s"] if s["send_duration_s"] > 0 else 0.0
    # delivered: first frame sent -> last frame received, so a backlog draining after the
    # sender stopped is counted against the switch, not hidden
    span = r["t_last_rx"] - s["t_first_send"] if r["received"] else 0.0
    delivered = r["received"] / span if span > 0 else 0.0
    loss = 1.0 - r["received"] / s["sent"] if s["sent"] else 1.0
    return {"offered_pps": round(offered, 1), "delivered_pps": round(delivered, 1),
            "loss": round(loss, 5)}


def max_rate(steps: list[dict]) -> dict | None:
    """The highest paced step (not saturation) with < 1 % loss that the switch kept up with."""
    ok = [s for s in steps if s["target_pps"] != "saturation"
          and s["loss"] < LOSS_OK and s["delivered_pps"] >= KEEP_UP * s["offered_pps"]]
    return max(ok, key=lambda s: s["target_pps"]) if ok else None


def summarize_sweeps(rates: list[int], runs: list[list[dict]], check: str) -> dict:
    """Medians per step over repeated sweeps (``rates`` then saturation), and the max rate.

    ``check`` names the per-step boolean the receiver reports (every frame as expected); a step
    passes it only if every repeat did."""
    steps = []
    for i, rate in enumerate([*rates, 0]):
        col = [sweep[i] for sweep in runs]
        steps.append({
            "target_pps": rate or "saturation",
            "offered_pps": median(col, "offered_pps"),
            "delivered_pps": median(col, "delivered_pps"),
            "loss": round(statistics.median(r["loss"] for r in col), 5),
            "duplicates": sum(r["duplicates"] for r in col),
            check: all(r[check] for r in col)})
    best = max_rate(steps)
    return {
        "max_rate_under_1pct_loss_pps": best["target_pps"] if best else 0,
        "delivered_at_max_rate_pps": best["delivered_pps"] if best else 0.0,
        "saturated_delivered_pps": steps[-1]["delivered_pps"],
        "saturated_loss": steps[-1]["loss"],
        "steps": steps, "runs": runs}


def stop_process(proc: subprocess.Popen, timeout: float = 10.0) -> None:
    """Terminate ``proc``; killed if it has not exited after ``timeout`` seconds."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()


# ----------------------------------------------------------------------------- reporting

def needs_root(name: str) -> bool:
    """True when not root, after saying so: the benchmark needs network namespaces."""
    if os.geteuid() == 0:
        return False
    print(f"p4cache-bench {name}: needs root (network namespaces)", file=sys.stderr)
    return True


def pyplot():  # noqa: ANN201 - matplotlib.pyplot, or None
    """matplotlib's pyplot on the Agg backend, or None when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def save_figure(fig, path: Path) -> Path:  # noqa: ANN001 - a matplotlib Figure
    """``fig`` laid out and written to ``path`` (100 dpi), then closed."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def write_json(path: Path, result: dict, indent: int = 1) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=indent) + "\n")


def write_results(result: dict, out: Path, indent: int = 1) -> None:
    """The results written to ``out`` and where, with the run's duration."""
    write_json(out, result, indent)
    print(f"results: {out} ({result['duration_s']:.0f} s)")


def report(result: dict, out: Path, plot_path: Path, print_summary, plot) -> None:  # noqa: ANN001
    """Summary printed, results written, plot drawn (``plot`` returns its path or None)."""
    print_summary(result)
    write_results(result, out)
    if (p := plot(result, plot_path)) is not None:
        print(f"plot: {p}")


def loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def progress_bar(console):  # noqa: ANN001, ANN201 - rich objects
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), console=console)


def plot_title(result: dict) -> str:
    m = result["machine"]
    where = placed_name(result.get("settings", {}))
    return ((f"{where}; " if where != "softnic" else "") +
            f"{m['cpus']} CPUs (shared VM), load {m['loadavg_at_start'][0]:.1f}, commit "
            f"{m['git_commit']}" + (" + local changes" if m.get("git_modified_files") else ""))


# ---- where the cache runs: the lab benches' --target and --placement -------------------------

LAB_TARGETS = ("softnic", "xdp")     # p4cache.lab.lab.TARGETS: softnic run's two engines


def add_target_args(ap, placements: bool = True) -> None:  # noqa: ANN001 - an ArgumentParser
    """``--target softnic|xdp`` (and ``--placement switch|host``) for a bench on the lab."""
    from p4cache.topo.placement import PLACEMENTS

    ap.add_argument("--target", choices=LAB_TARGETS, default="softnic",
                    help="the switch's engine: softnic's Python engine (default) or xdp (the "
                    "program as an XDP program in the kernel)")
    if placements:
        ap.add_argument("--placement", choices=PLACEMENTS, default="switch",
                        help="switch (default) or host: the xdp program on the server's own "
                        "interface, no P4 switch")


def placed_name(settings: dict) -> str:
    """``softnic``, ``xdp`` or ``xdp-host``: the results' and plots' name suffix."""
    target = settings.get("target", "softnic")
    return target + ("-host" if settings.get("placement", "switch") == "host" else "")


def placed_path(path: Path, default: Path, settings: dict) -> Path:
    """A default results or plot path gets the placement's name (hitshare-xdp.json), so runs on
    other targets sit beside the softnic run instead of replacing it; a path given stays."""
    name = placed_name(settings)
    if path != default or name == "softnic":
        return path
    return path.with_name(f"{path.stem}-{name}{path.suffix}")
