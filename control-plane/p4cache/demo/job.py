"""The `make run` job on a running p4cache: load a data set, run one recording client per client
host, watch the controller while they run, and collect what the report needs.

It needs only a ``Target``: the servers clients address, a way to run a command inside a host,
and the controller's status. ``p4cache run`` builds one from the state `p4cache up` left; tests
can build one from a ``p4cache.lab.Lab``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn


@dataclass(frozen=True)
class Target:
    servers: dict[str, tuple[str, int]]         # name -> (address, memcached UDP / agent TCP port)
    clients: list[str]                          # client host names
    prefix: Callable[[str], list[str]]          # argv prefix that runs a command inside a host
    status: Callable[[], dict[str, Any]]        # the controller's status (p4cache-controller)
    log_dir: Path


@dataclass(frozen=True)
class JobSpec:
    keys: int = 2000
    skew: float = 0.99
    key_size: int = 16
    value_size: int = 64
    rate: float = 600.0          # per client, operations per second
    duration: float = 30.0
    get: float = 95.0
    set: float = 4.5
    delete: float = 0.5
    seed: int = 1
    poll: float = 0.5            # seconds between two looks at the controller


@dataclass
class Sample:
    t: float                     # seconds since the clients started
    status: dict[str, Any]


@dataclass
class JobResult:
    spec: JobSpec
    out_dir: Path
    history: Path
    started_ns: int = 0          # CLOCK_MONOTONIC when the clients were started
    samples: list[Sample] = field(default_factory=list)
    stats_before: dict[str, dict[str, int]] = field(default_factory=dict)
    stats_after: dict[str, dict[str, int]] = field(default_factory=dict)
    clients: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def _client_argv(target: Target, spec: JobSpec, *extra: str) -> list[str]:
    servers = ",".join(f"{n}={ip}:{port}" for n, (ip, port) in target.servers.items())
    return [sys.executable, "-m", "p4cache.demo.client", "--servers", servers,
            "--keys", str(spec.keys), "--skew", str(spec.skew),
            "--key-size", str(spec.key_size), "--value-size", str(spec.value_size),
            "--get", str(spec.get), "--set", str(spec.set), "--delete", str(spec.delete),
            "--seed", str(spec.seed), *extra]


def _in_host(target: Target, host: str, argv: list[str], timeout: float) -> str:
    res = subprocess.run([*target.prefix(host), *argv], capture_output=True, text=True,
                         timeout=timeout, check=False)
    if res.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[:4])}... in {host} exited {res.returncode}: "
                           f"{(res.stderr or res.stdout)[-1500:]}")
    return res.stdout


def _status(target: Target) -> dict[str, Any]:
    try:
        return target.status()
    except (OSError, ValueError) as e:
        return {"error": str(e)}


def run_job(target: Target, spec: JobSpec, out_dir: Path, console: Console | None = None
            ) -> JobResult:
    console = console or Console()
    out_dir.mkdir(parents=True, exist_ok=True)
    res = JobResult(spec, out_dir, out_dir / "history.jsonl")
    loader = target.clients[0]
    load_hist = out_dir / "load.jsonl"
    console.print(f"[bold]1.[/] loading {spec.keys} keys ({spec.key_size} B keys, "
                  f"{spec.value_size} B values) through the agents' gates, from {loader}")
    t0 = time.monotonic()
    out = _in_host(target, loader, _client_argv(target, spec, "--mode", "load",
                                                "--history", str(load_hist)), 300)
    console.print(f"   {json.loads(out.splitlines()[-1])['loaded']} keys stored in "
                  f"{time.monotonic() - t0:.1f} s")
    res.stats_before = json.loads(_in_host(target, loader, _client_argv(
        target, spec, "--mode", "stats"), 30).splitlines()[-1])

    n = len(target.clients)
    console.print(f"[bold]2.[/] {n} clients x {spec.rate:g} ops/s for {spec.duration:g} s: "
                  f"Zipf {spec.skew} over {spec.keys} keys, {spec.get:g}% GET (UDP, through "
                  f"the switch), {spec.set:g}% SET and {spec.delete:g}% DELETE (TCP, through "
                  f"the gates)")
    procs: list[tuple[str, Path, subprocess.Popen[str]]] = []
    res.samples.append(Sample(0.0, _status(target)))
    res.started_ns = time.monotonic_ns()
    start = time.monotonic()
    for i, host in enumerate(target.clients, 1):
        hist = out_dir / f"client{i}.jsonl"
        argv = _client_argv(target, spec, "--client", str(i), "--clients", str(n),
                            "--rate", str(spec.rate), "--duration", str(spec.duration),
                            "--history", str(hist))
        log = open(target.log_dir / f"run-client{i}.log", "w")  # noqa: SIM115 - child owns it
        procs.append((host, hist, subprocess.Popen([*target.prefix(host), *argv], stdout=log,
                                                   stderr=subprocess.STDOUT, text=True)))
        log.close()
    with Progress(TextColumn("   {task.description}"), BarColumn(),
                  TextColumn("{task.fields[info]}"), TimeRemainingColumn(), console=console,
                  transient=False) as progress:
        task = progress.add_task("workload", total=spec.duration, info="")
        while any(p.poll() is None for _, _, p in procs):
            time.sleep(spec.poll)
            st = _status(target)
            now = time.monotonic() - start
            res.samples.append(Sample(round(now, 3), st))
            progress.update(task, completed=min(now, spec.duration), info=_live(res))
            if now > spec.duration + 60:
                for _, _, p in procs:
                    p.kill()
                res.errors.append("clients did not finish within a minute of the end")
        res.samples.append(Sample(round(time.monotonic() - start, 3), _status(target)))
        progress.update(task, completed=spec.duration, info=_live(res))
    for i, (host, _, p) in enumerate(procs, 1):
        log_text = (target.log_dir / f"run-client{i}.log").read_text(errors="replace")
        if p.returncode != 0:
            res.errors.append(f"client {i} on {host} exited {p.returncode}: {log_text[-800:]}")
        else:
            res.clients.append(json.loads(log_text.strip().splitlines()[-1]))
    res.stats_after = json.loads(_in_host(target, loader, _client_argv(
        target, spec, "--mode", "stats"), 30).splitlines()[-1])
    with open(res.history, "w") as merged:
        for part in [load_hist, *(h for _, h, _ in procs)]:
            if part.exists():
                merged.write(part.read_text())
    return res


def _live(res: JobResult) -> str:
    """Switch hits so far, for the progress line."""
    ok = [s.status for s in res.samples if "switch_counters" in s.status]
    if len(ok) < 2:
        return "waiting for the controller" if not ok else ""
    first, last = ok[0]["switch_counters"], ok[-1]["switch_counters"]
    hits = last["hit"] - first["hit"]
    looked = hits + last["miss"] - first["miss"]
    share = f"{100 * hits / looked:.0f}%" if looked else "-"
    return (f"switch hits {hits} ({share} of lookups), cached {ok[-1]['cache']['cached']}, "
            f"promotions {ok[-1]['promotions']}")
