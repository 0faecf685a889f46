"""Mininet switches that run a P4Runtime target, in the p4lang/tutorials style.

As tutorials' ``utils/p4runtime_switch.py``: ``start()`` launches the target with one
``-i PORT@IFACE`` per data interface, ``--grpc-server-addr``, ``--cpu-port``, ``--device-id`` and a
log file, then waits until the gRPC port listens; ``stop()`` kills it. The target starts with no
program (``--no-p4``): the controller pushes the pipeline over P4Runtime.

Unlike tutorials, the target is started detached (its own session, output to the log file), so it
outlives the Python process that built the network; ``pid`` is recorded by the caller
(p4cache.system) and the whole process group is killed on teardown.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path
from typing import Any

from mininet.node import Switch

from p4cache.lab import lab as labmod
from p4cache.topo import placement as pl
from softnic import netns


class P4RuntimeSwitch(Switch):
    """A switch whose data plane is an external P4Runtime target (subclasses say which)."""

    target = "softnic"                  # argv[0] given to p4cache.lab.switch_argv
    engine_args: tuple[str, ...] = ()   # softnic run's engine options

    def __init__(self, name: str, grpc_addr: str = "127.0.0.1:9559", cpu_port: int = 255,
                 device_id: int = 0, log_file: str | None = None, start_timeout: float = 30.0,
                 **params: Any) -> None:
        params.setdefault("inNamespace", False)
        super().__init__(name, **params)
        self.grpc_addr = grpc_addr
        self.cpu_port = cpu_port
        self.device_id = device_id
        self.log_file = log_file or f"/tmp/p4cache-{name}.log"
        self.start_timeout = start_timeout
        self.proc: subprocess.Popen | None = None

    def data_ports(self) -> dict[int, str]:
        """Switch port number -> interface name (Mininet's ``s1-eth<port>``), loopback excluded."""
        return {port: intf.name for port, intf in self.intfs.items() if intf.name != "lo"}

    def argv(self) -> list[str]:
        return labmod.switch_argv(self.grpc_addr, self.cpu_port, self.data_ports(),
                                  program=self.target, device_id=self.device_id,
                                  log_file=self.log_file, extra=self.engine_args)

    def start(self, controllers: list[Any]) -> None:
        for iface in self.data_ports().values():
            netns.quiet_interface(iface)
        Path(self.log_file).parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_file + ".out", "ab") as out:
            self.proc = subprocess.Popen(self.argv(), stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
        self._wait_listening()

    def _wait_listening(self) -> None:
        proc = self.proc
        assert proc is not None
        host, _, port = self.grpc_addr.rpartition(":")
        host = "127.0.0.1" if host in ("0.0.0.0", "") else host
        labmod.wait_tcp(host, int(port), self.start_timeout,
                 f"{self.name}: {self.target}'s P4Runtime server (log: {self.log_file}.out)",
                 alive=lambda: proc.poll() is None, log=self._tail)

    def _tail(self, n: int = 20) -> str:
        try:
            lines = Path(self.log_file + ".out").read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join(lines[-n:])

    def stop(self, deleteIntfs: bool = True) -> None:  # noqa: N803 - Mininet's signature
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(5)
            except ProcessLookupError:
                pass
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        super().stop(deleteIntfs)


class SoftnicSwitch(P4RuntimeSwitch):
    """``softnic run --no-p4``: p4cache's software drop-in for simple_switch_grpc."""

    target = "softnic"


class XdpSwitch(P4RuntimeSwitch):
    """``softnic run --no-p4 --engine xdp``: the same P4Runtime target, the program compiled to
    XDP and attached to the switch's ports (docs/xdp.md)."""

    target = "softnic"
    engine_args = pl.XDP_ENGINE


class SimpleSwitchGrpc(P4RuntimeSwitch):
    """BMv2's ``simple_switch_grpc --no-p4 ... -- --grpc-server-addr ... --cpu-port ...``."""

    target = "simple_switch_grpc"


class KernelBridge(Switch):
    """A plain Linux bridge named after the switch, over its ports: the L2 segment of the host
    placement (p4cache.topo.placement), where the program runs on the servers, not here."""

    def __init__(self, name: str, **params: Any) -> None:
        for p4_only in ("grpc_addr", "cpu_port", "device_id", "log_file"):
            params.pop(p4_only, None)
        params.setdefault("inNamespace", False)
        super().__init__(name, **params)

    def data_ports(self) -> dict[int, str]:
        return {port: intf.name for port, intf in self.intfs.items() if intf.name != "lo"}

    def start(self, controllers: list[Any]) -> None:
        pl.add_bridge(self.name, list(self.data_ports().values()))

    def stop(self, deleteIntfs: bool = True) -> None:  # noqa: N803 - Mininet's signature
        netns.delete_link(self.name)
        super().stop(deleteIntfs)


SWITCH_CLASSES: dict[str, type[P4RuntimeSwitch]] = {"softnic": SoftnicSwitch,
                                                     "xdp": XdpSwitch,
                                                     "bmv2": SimpleSwitchGrpc}
