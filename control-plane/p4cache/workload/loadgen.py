"""Run p4cache-loadgen (tools/loadgen, docs/loadgen.md), the open-loop memcached load generator in
Go, and parse its JSON report.

The binary is ``$P4CACHE_LOADGEN`` when set, else ``build/bin/p4cache-loadgen`` of this checkout
(``make loadgen``, part of ``make setup``), else ``p4cache-loadgen`` on PATH. A run can go through
an argv prefix, e.g. ``["ip", "netns", "exec", ns]`` to send from inside a network namespace.

Keys default to ``cachelab.key_of`` (``--key-format cachelab``, 16 bytes) and SET values to
``cachelab.value_of``'s text at ``value_size`` bytes, so a lab loaded by ``cachelab`` is read back
as hits.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from p4cache import paths

BINARY = "p4cache-loadgen"
ENV_BINARY = "P4CACHE_LOADGEN"  # an explicit path to the binary wins


class LoadgenError(RuntimeError):
    """The generator failed: bad arguments (exit 2), a failed run (exit 1), or no report."""


class LoadgenNotBuilt(LoadgenError, FileNotFoundError):
    """The binary is missing."""


def find_binary() -> Path:
    """$P4CACHE_LOADGEN, else build/bin/p4cache-loadgen of this checkout, else PATH."""
    return paths.find_tool(BINARY, ENV_BINARY, "loadgen", paths.built_tool(BINARY),
                           LoadgenNotBuilt)


@dataclass(frozen=True)
class Latency:
    """One histogram's summary, microseconds."""

    count: int
    p50_us: float
    p90_us: float
    p99_us: float
    p999_us: float
    max_us: float
    min_us: float
    mean_us: float

    @classmethod
    def of(cls, d: dict[str, Any]) -> Latency:
        return cls(**{k: d[k] for k in cls.__dataclass_fields__})


@dataclass(frozen=True)
class Step:
    """One rate step. ``latency[cls]`` for cls in switch, memcached (unknown without classify)
    and all: ``(from scheduled send time, from actual send time)``."""

    step: int
    offered_rate: float
    window_s: float
    complete: bool
    sent: int
    gets: int
    sets: int
    send_rate: float
    skipped: int
    send_errors: int
    replies: dict[str, int]
    replies_per_s: dict[str, float]
    kinds: dict[str, int]
    hit_fraction: float
    timeouts: int
    loss_fraction: float
    send_lag: Latency
    latency: dict[str, tuple[Latency, Latency]]
    raw: dict[str, Any] = field(repr=False)

    @classmethod
    def of(cls, d: dict[str, Any]) -> Step:
        lat = {c: (Latency.of(v["from_scheduled"]), Latency.of(v["from_sent"]))
               for c, v in d["latency_us"].items()}
        plain = {k: d[k] for k in cls.__dataclass_fields__
                 if k not in ("send_lag", "latency", "raw")}
        return cls(**plain, send_lag=Latency.of(d["send_lag_us"]), latency=lat, raw=d)


@dataclass(frozen=True)
class Report:
    config: dict[str, Any]
    machine: dict[str, Any]
    preload: dict[str, Any] | None
    steps: list[Step]
    unmatched_replies: int
    errors: list[str]
    interrupted: bool
    stderr: str
    raw: dict[str, Any] = field(repr=False)

    @classmethod
    def of(cls, d: dict[str, Any], stderr: str = "") -> Report:
        return cls(config=d["config"], machine=d["machine"], preload=d["preload"],
                   steps=[Step.of(s) for s in d["steps"]],
                   unmatched_replies=d["unmatched_replies"], errors=d["errors"],
                   interrupted=d["interrupted"], stderr=stderr, raw=d)


def argv(servers: Sequence[str], *, proto: str = "udp", rates: Sequence[float] = (),
         step_s: float = 5.0, warmup_s: float = 0.5, conns: int = 4, keys: int = 10000,
         key_size: int = 16, key_format: str = "cachelab", value_size: int = 100,
         zipf: float = 0.99, get_pct: float = 95.0, timeout_s: float = 1.0,
         arrival: str = "fixed", classify: bool | None = None, preload: bool = False,
         duration_s: float = 0.0, seed: int = 1, bind: str | None = None,
         extra: Sequence[str] = ()) -> list[str]:
    """The generator's arguments (without the binary); ``servers`` as "ip:port"."""
    a = ["--server", ",".join(servers), "--proto", proto, "--conns", str(conns),
         "--step", f"{step_s}s", "--warmup", f"{warmup_s}s", "--keys", str(keys),
         "--key-size", str(key_size), "--key-format", key_format,
         "--value-size", str(value_size), "--zipf", str(zipf), "--get", str(get_pct),
         "--timeout", f"{timeout_s}s", "--arrival", arrival, "--seed", str(seed)]
    if rates:
        a += ["--rates", ",".join(f"{r:g}" for r in rates)]
    if classify is not None:
        a += [f"--classify={'true' if classify else 'false'}"]
    if preload:
        a.append("--preload")
    if duration_s:
        a += ["--duration", f"{duration_s}s"]
    if bind:
        a += ["--bind", bind]
    return a + list(extra)


def run(args: Sequence[str], *, prefix: Sequence[str] = (), timeout_s: float | None = None,
        binary: Path | None = None) -> Report:
    """Run the generator with ``args`` (see ``argv``), behind ``prefix`` (e.g. ``["ip", "netns",
    "exec", ns]``); its report, or LoadgenError when it fails or prints none."""
    exe = binary or find_binary()
    proc = subprocess.run([*prefix, str(exe), *args, "--json", "-"], capture_output=True,
                          text=True, timeout=timeout_s, check=False)
    if proc.returncode == 2:
        raise LoadgenError(f"{BINARY}: bad arguments: {proc.stderr.strip()}")
    try:
        data = json.loads(proc.stdout)
    except json.JSONDecodeError as e:
        raise LoadgenError(f"{BINARY} exited {proc.returncode} without a report: "
                           f"{proc.stderr.strip()[-2000:]}") from e
    if proc.returncode != 0:
        raise LoadgenError(f"{BINARY} failed (exit {proc.returncode}): {data.get('errors')}; "
                           f"{proc.stderr.strip()[-2000:]}")
    return Report.of(data, proc.stderr)
