"""The ``p4cache`` command: ``up | exec | status | down`` (p4cache.system) and ``run``, the main job
(p4cache.demo) on a system brought up for it. It sits above both packages, which never import it."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from typing import Any

from rich.console import Console
from rich.table import Table

from p4cache.controller import status as status_mod
from p4cache.system.state import NotUp, RunState, run_dir_of
from p4cache.topo import TopologyError
from p4cache.topo.placement import PLACEMENTS

err = Console(stderr=True)
out = Console(width=max(Console().width, 120))


def _hosts_table(st: RunState) -> Table:
    t = Table(title=f"p4cache on {st.target}: {st.topology}",
              caption="each host's namespace is p4c-<host> (p4cache exec HOST -- CMD)")
    for col in ("host", "role", "address", "MAC", "port", "UDP, gate TCP, local TCP",
                "agent control"):
        t.add_column(col, no_wrap=True)
    for h in st.hosts:
        ports = "-" if h.udp_port is None else \
            f"{h.udp_port}, {h.tcp_port}, {h.backend_port}"
        t.add_row(h.name, h.role, f"{h.ip}/{h.prefix}", h.mac, f"{h.switch}:{h.switch_port}",
                  ports, h.agent_control or "-")
    return t


def _procs_table(st: RunState) -> Table:
    t = Table(title="processes")
    for col in ("name", "pid", "alive", "namespace", "log"):
        t.add_column(col)
    for p in st.processes:
        ok = p.alive()
        t.add_row(p.name, str(p.pid), "[green]yes[/]" if ok else "[red]NO[/]", p.ns or "(root)",
                  p.log)
    return t


def cmd_up(args: argparse.Namespace) -> int:
    from p4cache.system.bringup import UpError, up

    def on_term(signum: int, frame: object) -> None:
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_term)
    try:
        st = up(args.topo, args.target, args.run_dir, args.slots,
                say=lambda m: err.print(f"[dim]p4cache up:[/] {m}"), placement=args.placement)
    except (UpError, TopologyError) as e:
        err.print(f"p4cache up: {e}", markup=False, highlight=False)
        return 2
    except KeyboardInterrupt:
        err.print("p4cache up: interrupted; what was started has been removed")
        return 130
    except Exception as e:
        err.print(f"p4cache up: {e}", markup=False, highlight=False)
        return 1
    out.print(_hosts_table(st))
    if st.placement == "host":
        progs = ", ".join(f"{n} {sw['grpc_addr']}" for n, sw in st.switches.items())
        out.print(f"the cache's program ({st.target}) on each server, P4Runtime on {progs}; "
                  f"controller status on {', '.join(st.controllers.values())}; "
                  f"logs in {st.log_dir}")
    else:
        out.print(f"switch {st.target} P4Runtime on {st.grpc_addr}; controller status on "
                  f"{st.status_addr}; logs in {st.log_dir}")
    srv = st.servers[0]
    out.print(f"try: p4cache exec {st.clients[0].name if st.clients else srv.name} -- "
              f"memccat --servers={srv.memcached_addr} KEY", markup=False, highlight=False)
    return 0


def cmd_exec(args: argparse.Namespace) -> int:
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not cmd:
        err.print("p4cache exec: give a command after the host: p4cache exec c1 -- ping 10.0.0.1")
        return 2
    try:
        st = RunState.load(args.run_dir)
        prefix = st.exec_prefix(args.host)
    except (NotUp, KeyError) as e:
        err.print(f"p4cache exec: {e.args[0]}", markup=False, highlight=False)
        return 2
    os.execvp(prefix[0], [*prefix, *cmd])
    return 127  # not reached


def _status(st: RunState) -> dict[str, Any]:
    doc = st.summary()
    try:
        doc["controller"] = st.controller_status()
    except (OSError, ValueError) as e:
        doc["controller"] = {"error": f"no answer from {st.status_addr}: {e}"}
    return doc


def cmd_status(args: argparse.Namespace) -> int:
    try:
        st = RunState.load(args.run_dir)
    except NotUp as e:
        if args.json:
            print(json.dumps({"up": False, "error": str(e)}))
        else:
            err.print(f"p4cache status: {e}", markup=False, highlight=False)
        return 3
    doc = _status(st)
    healthy = all(p["alive"] for p in doc["processes"]) and "error" not in doc["controller"] \
        and st.complete
    doc["up"] = True
    doc["healthy"] = healthy
    if args.json:
        print(json.dumps(doc, indent=2))
    else:
        out.print(_hosts_table(st))
        out.print(_procs_table(st))
        if "error" in doc["controller"]:
            err.print(f"controller: {doc['controller']['error']}", markup=False)
        else:
            status_mod.render(doc["controller"], out)
        if not st.complete:
            err.print("this run did not finish coming up; `p4cache down` removes it")
    return 0 if healthy else 1


def cmd_down(args: argparse.Namespace) -> int:
    from p4cache.system.bringup import down

    try:
        removed = down(args.run_dir)
    except OSError as e:
        err.print(f"p4cache down: {e}", markup=False, highlight=False)
        return 1
    if removed:
        err.print(f"p4cache down: removed {len(removed)} things: {', '.join(removed)}",
                  markup=False, highlight=False)
    else:
        err.print(f"p4cache down: nothing was up in {run_dir_of(args.run_dir)}")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    """`make run`: up, a data set, a skewed workload from every client, the report, down."""
    from pathlib import Path

    from p4cache.demo.job import JobSpec
    from p4cache.demo.main import run
    from p4cache.system.bringup import UpError

    spec = JobSpec(keys=args.keys, skew=args.skew, rate=args.rate, duration=args.duration)
    try:
        return run(target=args.target, placement=args.placement,
                   topo=args.topo and Path(args.topo),
                   run_dir=args.run_dir and Path(args.run_dir), out_dir=Path(args.out),
                   spec=spec, slots=args.slots, keep=args.keep, rates=not args.no_rates)
    except UpError as e:
        err.print(f"p4cache run: {e}", markup=False, highlight=False)
        return 2
    except KeyboardInterrupt:
        err.print("p4cache run: interrupted; everything was torn down")
        return 130


TARGET_CHOICES = ("softnic", "xdp", "bmv2")
PLACEMENT_HELP = ("where the program runs: switch (default: the topology's switch) or host "
                  "(--target xdp: on each memcached server's own interface, no P4 switch)")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="p4cache", description="p4cache on Mininet: the switch, "
                                "memcached with its host agent, and the controller")
    p.add_argument("--run-dir", default=None, help="where the state and logs live (default "
                   "$P4CACHE_RUN_DIR or /run/p4cache)")
    sub = p.add_subparsers(dest="cmd", required=True)
    u = sub.add_parser("up", help="bring everything up (removing a previous run first)")
    u.add_argument("--target", choices=TARGET_CHOICES, default="softnic",
                   help="the switch: softnic (default), xdp (softnic's kernel engine: the "
                   "program as an XDP program) or BMv2's simple_switch_grpc")
    u.add_argument("--placement", choices=PLACEMENTS, default="switch", help=PLACEMENT_HELP)
    u.add_argument("--topo", default=None,
                   help="topology file (default: the project's topo/topology.json)")
    u.add_argument("--slots", type=int, default=None, help="cache slots the controller uses")
    u.set_defaults(fn=cmd_up)
    e = sub.add_parser("exec", help="run a command inside a host's namespace")
    e.add_argument("host")
    e.add_argument("cmd", nargs=argparse.REMAINDER, help="-- CMD ARGS...")
    e.set_defaults(fn=cmd_exec)
    s = sub.add_parser("status", help="hosts, processes and the controller's status")
    s.add_argument("--json", action="store_true", help="machine-readable output")
    s.set_defaults(fn=cmd_status)
    d = sub.add_parser("down", help="remove everything (idempotent)")
    d.set_defaults(fn=cmd_down)
    r = sub.add_parser("run", help="what `make run` does: up, a skewed workload, the report "
                       "(switch share, server load, latencies, coherence verdict), down")
    r.add_argument("--target", choices=TARGET_CHOICES, default="softnic")
    r.add_argument("--placement", choices=PLACEMENTS, default="switch", help=PLACEMENT_HELP)
    r.add_argument("--topo", default=None, help="topology file (default topo/topology.json)")
    r.add_argument("--slots", type=int, default=None, help="cache slots the controller uses")
    r.add_argument("--duration", type=float, default=30.0, help="seconds of workload")
    r.add_argument("--rate", type=float, default=600.0, help="operations/s per client")
    r.add_argument("--keys", type=int, default=2000, help="keys in the data set")
    r.add_argument("--skew", type=float, default=0.99, help="Zipf exponent of key popularity")
    r.add_argument("--out", default="build/run", help="where the report, plot and history go")
    r.add_argument("--keep", action="store_true", help="leave the system up afterwards")
    r.add_argument("--no-rates", action="store_true", help="skip the last step: GETs answered "
                   "per second by the cache and by memcached, with p4cache-loadgen")
    r.set_defaults(fn=cmd_run)
    for sp in (u, e, s, d, r):
        sp.add_argument("--run-dir", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.cmd != "exec" and os.geteuid() != 0 and args.cmd != "status":
        err.print(f"p4cache {args.cmd}: needs root (namespaces, veths); run it with sudo")
        return 2
    return args.fn(args)


if __name__ == "__main__":
    sys.exit(main())
