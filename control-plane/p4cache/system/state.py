"""The state file of a running system (``<run dir>/state.json``) and what later commands read.

``up`` writes it as soon as it starts and again after every step (``complete`` false until the
end), so a run killed half-way leaves a record of what to remove.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from p4cache.controller import status as status_mod
from p4cache.system import procs

DEFAULT_RUN_DIR = Path("/run/p4cache")
STATE_FILE = "state.json"
VERSION = 1


class NotUp(RuntimeError):
    """No system is up in this run directory."""


def run_dir_of(run_dir: str | Path | None) -> Path:
    return Path(run_dir or os.environ.get("P4CACHE_RUN_DIR") or DEFAULT_RUN_DIR).absolute()


@dataclass
class HostState:
    name: str
    role: str                          # "memcached" or "client"
    ns: str                            # network namespace (ip netns exec <ns> ...)
    ip: str
    prefix: int
    mac: str
    switch: str
    switch_port: int
    iface: str = "eth0"                # the host's data interface
    udp_port: int | None = None        # memcached's UDP port (clients' GETs; the switch caches)
    tcp_port: int | None = None        # the agent's TCP write gate (same number as udp_port)
    backend_port: int | None = None    # memcached's own TCP port, reachable only from the host
    agent_control: str | None = None   # the agent's control address (management network)
    mgmt_ip: str | None = None         # host end of the management veth
    mgmt_iface: str | None = None      # root end of the management veth

    @property
    def memcached_addr(self) -> str:
        """``ip:port`` a memcached client uses (UDP to memcached, TCP through the gate)."""
        return f"{self.ip}:{self.udp_port}"


@dataclass
class ProcState:
    name: str                          # "switch-s1", "memcached-m1", "agent-m1", "controller"
    pid: int                           # also its process group (started in its own session)
    argv0: str                         # basename checked before killing (pid reuse)
    log: str
    ns: str | None = None

    def alive(self) -> bool:
        return procs.alive(self.pid, self.argv0)


@dataclass
class RunState:
    run_dir: str
    target: str = "softnic"
    topology: str = ""
    complete: bool = False
    builder_pid: int = 0
    grpc_addr: str = ""
    status_addr: str = ""
    placement: str = "switch"          # or "host" (p4cache.topo.placement)
    controllers: dict[str, str] = field(default_factory=dict)  # process name -> status address
    program: dict[str, str] = field(default_factory=dict)
    controller_config: str = ""
    hosts: list[HostState] = field(default_factory=list)
    processes: list[ProcState] = field(default_factory=list)
    namespaces: list[str] = field(default_factory=list)
    interfaces: list[str] = field(default_factory=list)   # root-namespace links we created
    switches: dict[str, dict[str, Any]] = field(default_factory=dict)

    # ---- files ----------------------------------------------------------------------------
    @property
    def path(self) -> Path:
        return Path(self.run_dir) / STATE_FILE

    @property
    def log_dir(self) -> Path:
        return Path(self.run_dir) / "logs"

    def save(self) -> None:
        Path(self.run_dir).mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"version": VERSION, **asdict(self)}, indent=2) + "\n")
        tmp.replace(self.path)

    @classmethod
    def load(cls, run_dir: str | Path | None = None) -> RunState:
        """The state of the system up in ``run_dir`` (default /run/p4cache or $P4CACHE_RUN_DIR);
        raises NotUp when there is none."""
        d = run_dir_of(run_dir)
        path = d / STATE_FILE
        try:
            doc = json.loads(path.read_text())
        except FileNotFoundError:
            raise NotUp(f"nothing is up in {d} (no {STATE_FILE}); start it with "
                        f"`p4cache up{'' if d == DEFAULT_RUN_DIR else f' --run-dir {d}'}`") \
                from None
        except (OSError, ValueError) as e:
            raise NotUp(f"{path}: unreadable state ({e}); `p4cache down` removes it") from e
        if doc.pop("version", None) != VERSION:
            raise NotUp(f"{path}: written by another p4cache version; `p4cache down` removes it")
        doc["hosts"] = [HostState(**h) for h in doc.get("hosts", [])]
        doc["processes"] = [ProcState(**p) for p in doc.get("processes", [])]
        doc["run_dir"] = str(d)
        return cls(**doc)

    # ---- queries --------------------------------------------------------------------------
    @property
    def servers(self) -> list[HostState]:
        return [h for h in self.hosts if h.role == "memcached"]

    @property
    def clients(self) -> list[HostState]:
        return [h for h in self.hosts if h.role == "client"]

    def host(self, name: str) -> HostState:
        for h in self.hosts:
            if h.name == name:
                return h
        raise KeyError(f"no host {name!r} in this system; hosts: "
                       f"{', '.join(h.name for h in self.hosts)}")

    def exec_prefix(self, host_name: str) -> list[str]:
        """argv prefix that runs a command inside ``host_name``'s namespace."""
        return ["ip", "netns", "exec", self.host(host_name).ns]

    def process(self, name: str) -> ProcState | None:
        for p in self.processes:
            if p.name == name:
                return p
        return None

    def controller_status(self, timeout: float = 5.0) -> dict[str, Any]:
        """What ``p4cache-controller status --json`` prints, for several controllers (the host
        placement) merged into one (raises OSError when a controller does not answer)."""
        if len(self.controllers) <= 1:
            return status_mod.fetch(self.status_addr, timeout=timeout)
        return status_mod.merge({name: status_mod.fetch(addr, timeout=timeout)
                                 for name, addr in self.controllers.items()})

    def summary(self) -> dict[str, Any]:
        """Everything ``p4cache status --json`` prints except the controller's own status."""
        return {
            "run_dir": self.run_dir, "target": self.target, "placement": self.placement,
            "topology": self.topology, "controllers": self.controllers,
            "complete": self.complete, "grpc_addr": self.grpc_addr,
            "status_addr": self.status_addr, "log_dir": str(self.log_dir),
            "hosts": [{**asdict(h), "ns_present": Path(f"/run/netns/{h.ns}").exists()}
                      for h in self.hosts],
            "processes": [{**asdict(p), "alive": p.alive()} for p in self.processes],
        }
