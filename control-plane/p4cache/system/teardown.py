"""Removing a system: what its state file records, and leftovers found by name.

Leftovers by name (for a run whose state file is gone or incomplete): namespaces ``p4c-*``
(with every process inside them), switch processes attached to ``s<N>-eth<M>`` interfaces,
controllers started by ``up`` (in any run directory), root links ``s<N>-eth<M>`` and
``p4cmgmt<N>``. The p4cache.lab's own names (``p4c<pid>...``) never match these.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
from pathlib import Path

from p4cache.system import procs
from p4cache.system.state import STATE_FILE, NotUp, RunState, run_dir_of
from softnic import netns

NS_PREFIX = "p4c-"
MGMT_IFACE = re.compile(r"p4cmgmt\d+")
SWITCH_IFACE = re.compile(r"s\d+-eth\d+")
SWITCH_BRIDGE = re.compile(r"s\d+")           # the host placement's plain bridge
SWITCH_TARGETS = ("softnic", "simple_switch_grpc")


def locked(run_dir: Path) -> contextlib.AbstractContextManager[None]:
    """One ``up`` or ``down`` at a time per run directory (released if the holder dies)."""
    return netns.file_lock(run_dir / "lock")


def _is_switch(argv: list[str]) -> bool:
    words = {Path(a).name for a in argv[:3]}
    return bool(words & set(SWITCH_TARGETS)) and any(
        "@" in a and SWITCH_IFACE.fullmatch(a.split("@", 1)[1]) for a in argv)


def _is_system_controller(argv: list[str]) -> bool:
    """A controller started by ``up`` (any run directory: one system per machine), known by its
    config: ``<run dir>/controller*.json`` next to ``lock`` and ``logs/`` (the namespace lab's
    controllers have neither)."""
    if "p4cache-controller" not in {Path(a).name for a in argv[:2]} or "--config" not in argv:
        return False
    i = argv.index("--config")
    if i + 1 >= len(argv):
        return False
    config = Path(argv[i + 1])
    return config.name.startswith("controller") and config.suffix == ".json" and \
        (config.parent / "lock").exists() and \
        (config.parent / "logs").is_dir()


def _links() -> list[str]:
    out = netns.run(["ip", "-o", "link", "show"], check=False)
    return [line.split(":")[1].strip().split("@")[0] for line in out.splitlines() if ":" in line]


def _empty_switch_bridges() -> list[str]:
    """Bridges named like a topology's switch (``s1``) with no port left: what a host-placement
    run leaves when its state file is lost (its ports went with the deleted veths)."""
    out = netns.run(["ip", "-o", "link", "show", "type", "bridge"], check=False)
    names = [line.split(":")[1].strip().split("@")[0] for line in out.splitlines() if ":" in line]
    return [b for b in names if SWITCH_BRIDGE.fullmatch(b)
            and not any(Path(f"/sys/class/net/{b}/brif").iterdir())]


def _kill(pid: int) -> None:
    procs.kill_group(pid) if _leads_group(pid) else _kill_one(pid)


def _leads_group(pid: int) -> bool:
    try:
        return os.getpgid(pid) == pid
    except ProcessLookupError:
        return False


def _kill_one(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def remove(run_dir: str | Path | None = None) -> list[str]:
    """Kill, delete and unlink everything of the system in ``run_dir`` and any leftovers by
    name; return a description of what was removed (empty: nothing was up). Idempotent."""
    d = run_dir_of(run_dir)
    removed: list[str] = []
    st: RunState | None = None
    try:
        st = RunState.load(d)
    except NotUp:
        pass
    if st is not None:
        for p in reversed(st.processes):
            if p.alive():
                procs.kill_group(p.pid)
                removed.append(f"{p.name} (pid {p.pid})")
    for pid in procs.find(lambda a: _is_switch(a) or _is_system_controller(a)):
        what = " ".join(Path(a).name for a in procs.cmdline(pid)[:2])
        _kill(pid)
        removed.append(f"{what} (pid {pid})")
    ours = set(st.namespaces) if st else set()
    for ns in netns.namespaces():
        if ns.startswith(NS_PREFIX) or ns in ours:
            pids = netns.run(["ip", "netns", "pids", ns], check=False).split()
            for pid in map(int, pids):
                _kill(pid)
                removed.append(f"pid {pid} in {ns}")
            netns.delete_namespace(ns)
            removed.append(f"namespace {ns}")
    recorded = set(st.interfaces) if st else set()
    for link in _links():
        if link in recorded or MGMT_IFACE.fullmatch(link) or SWITCH_IFACE.fullmatch(link):
            netns.delete_link(link)
            removed.append(f"interface {link}")
    for bridge in _empty_switch_bridges():   # the host placement's, if no state names it
        netns.delete_link(bridge)
        removed.append(f"bridge {bridge}")
    for name in (STATE_FILE, "state.tmp"):
        path = d / name
        if path.exists():
            path.unlink()
            if name == STATE_FILE and not removed:
                removed.append(f"state file {path}")
    return removed
