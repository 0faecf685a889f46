"""One coherence run: the whole system in a lab, recording clients, faults on a schedule, a verdict.

``run_coherence`` brings nothing up itself: it takes a running ``Lab`` with memcached, agents and
controller started, runs the recording clients (one process per client host, several per host if
asked) for ``duration`` seconds while ``faults`` fire at their times, merges the histories into one
file and hands it to the linearizability checker.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from p4cache.lab import Lab

Fault = tuple[float, str, Callable[[], None]]


@dataclass
class RunResult:
    history: Path
    operations: int
    by_op: dict[str, int] = field(default_factory=dict)
    faults: list[tuple[float, str]] = field(default_factory=list)
    client_errors: list[str] = field(default_factory=list)


def faults_for(lab: Lab, variant: str, duration: float, server: int = 0) -> list[Fault]:
    """The fault schedule of a named variant: a kill a third of the way in, a restart later."""
    t1, t2 = duration * 0.35, duration * 0.55
    if variant == "controller_restart":
        return [(t1, "kill the controller", lambda: lab.stop_controller(crash=True)),
                (t2, "start the controller", lambda: lab.start_controller())]
    if variant == "agent_restart":
        return [(t1, "kill the agent", lambda: lab.stop_agent(server, crash=True)),
                (t2, "start the agent", lambda: lab.start_agent(server))]
    if variant == "switch_restart":
        return [(t1, "restart the switch", lab.restart_switch)]
    if variant in ("steady", "broken_gate"):
        return []
    raise ValueError(f"unknown variant {variant!r}")


def run_coherence(lab: Lab, out: Path, duration: float, faults: list[Fault],
                  clients_per_host: int = 1, client_args: list[str] | None = None,
                  seed: int = 1) -> RunResult:
    out.mkdir(parents=True, exist_ok=True)
    server = lab.servers[0]
    procs = []
    n = 0
    for host in lab.clients:
        for _ in range(clients_per_host):
            n += 1
            hist = out / f"client{n}.jsonl"
            argv = [sys.executable, "-m", "p4cache.workload.coherence", "--server", server.ip,
                    "--client", str(n), "--history", str(hist), "--duration", str(duration),
                    "--seed", str(seed), *(client_args or [])]
            procs.append((hist, lab.popen(host.ns, argv, f"client{n}")))
    start = time.monotonic()
    fired: list[tuple[float, str]] = []
    for at, what, action in sorted(faults, key=lambda f: f[0]):
        delay = start + at - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        action()
        fired.append((round(time.monotonic() - start, 2), what))
    result = RunResult(out / "history.jsonl", 0, faults=fired)
    with open(result.history, "w") as merged:
        for i, (hist, p) in enumerate(procs, 1):
            try:
                p.wait(duration + 60)
            except Exception:  # noqa: BLE001 - a stuck client is an error, reported below
                p.kill()
            if p.returncode != 0:
                result.client_errors.append(f"client{i} exited {p.returncode}: "
                                            f"{lab.log(f'client{i}')[-2000:]}")
            if hist.exists():
                for line in hist.read_text().splitlines():
                    merged.write(line + "\n")
                    op = json.loads(line)["op"]
                    result.by_op[op] = result.by_op.get(op, 0) + 1
                    result.operations += 1
    return result
