"""The whole p4cache on one machine, on Mininet: ``p4cache up/exec/status/down`` and its API.

Command line (root needed)::

    p4cache up [--target softnic|xdp|bmv2] [--placement switch|host] [--topo FILE] [--slots N]
               [--run-dir DIR]
    p4cache exec HOST -- CMD...          # CMD inside HOST's namespace, exit code passed through
    p4cache status [--json]
    p4cache down                          # idempotent; exit 0 when nothing is up

Python API (what ``make run`` imports)::

    from p4cache import system
    st = system.up(topo_path=None, target="softnic", run_dir=None, slots=None,
                   placement="switch")                                       # -> RunState
    st = system.RunState.load(run_dir=None)     # the system already up (raises NotUp if none)
    st.servers, st.clients                      # list[HostState]
    #   .name .role .ns .ip .prefix .mac .switch_port
    #   .udp_port (memcached UDP, what the switch caches) .tcp_port (the agent's TCP write gate,
    #   same number) .backend_port (memcached's TCP, only from the host itself)
    #   .agent_control .mgmt_ip .memcached_addr ("ip:udp_port")
    st.exec_prefix("c1")                        # ["ip", "netns", "exec", "p4c-c1"]
    st.controller_status()                      # dict, as `p4cache-controller status --json`
    st.log_dir                                  # Path: switch, memcached, agents, controller logs
    st.processes, st.grpc_addr, st.status_addr
    system.down(run_dir=None)                   # list of what was removed

``run_dir`` defaults to $P4CACHE_RUN_DIR or /run/p4cache; it holds ``state.json``,
``controller.json`` and ``logs/``. One system per machine: hosts' namespaces are ``p4c-<host>``,
the switch's interfaces ``s1-eth<port>``, the management veths ``p4cmgmt<n>`` (10.251.x.0/24).
``up`` first removes a previous run's leftovers (state file, or these names), so it also recovers
from a crash or Ctrl-C of an earlier ``up``.
"""

import importlib
from typing import Any

from p4cache.system.state import HostState, NotUp, ProcState, RunState

__all__ = ["HostState", "NotUp", "ProcState", "RunState", "UpError", "down", "up"]


def __getattr__(name: str) -> Any:
    # up/down pull in Mininet and the compiler: imported on first use (from
    # p4cache.system.bringup), so that `p4cache exec` and `p4cache status` start fast.
    if name in ("UpError", "down", "up"):
        value = getattr(importlib.import_module("p4cache.system.bringup"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'p4cache.system' has no attribute {name!r}")
