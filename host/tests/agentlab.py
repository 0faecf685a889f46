"""The agent beside memcached in the lab (p4cache.lab): a real softnic switch running the
p4cache program, memcached and the agent in the server's namespace, a client namespace whose
UDP GETs the switch answers from its slots.

The switch is driven here directly over P4Runtime (forwarding, client allow-list, the trusted
agent) and slots are filled with OP_UPDATE datagrams from the server's data address, as a
trusted agent may send them: no controller is involved, so a test decides exactly what the
switch caches.
"""

from __future__ import annotations

import itertools
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from agentdiff import run_to_close

from p4cache import dataplane as dp
from p4cache.controller.p4rt import PipelineFiles, Switch
from p4cache.lab import Lab, LabSpec
from p4cache.lab.lab import SWITCH_ADDR, _venv_bin, wait_tcp

AGENT_PORT = 11211
AGENT_CONTROL = 11213
NO_GATE_PORT = 11215
NO_GATE_CONTROL = 11216

# Run in a namespace: one control datagram from the server's data address, its ack printed.
CTRL = """
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(0.2)
s.bind((sys.argv[1], 0))
for _ in range(10):
    s.sendto(bytes.fromhex(sys.argv[3]), (sys.argv[2], 11311))
    try:
        print(s.recv(100).hex()); break
    except TimeoutError:
        pass
"""

# Run in the client namespace: optionally a TCP exchange with the gate (read up to a given
# reply end), then UDP GETs; prints the TCP reply and each GET's payload, hex.
CLIENT = """
import socket, sys
server, tcp_hex, tcp_end, keys = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
out = []
if tcp_hex:
    t = socket.create_connection((server, 11211), timeout=5)
    t.sendall(bytes.fromhex(tcp_hex))
    buf, end = b"", bytes.fromhex(tcp_end)
    while not buf.endswith(end):
        d = t.recv(65536)
        if not d:
            break
        buf += d
    out.append(buf.hex())
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.settimeout(2)
for i, k in enumerate(keys):
    req = (i + 1).to_bytes(2, "big") + bytes([0, 0, 0, 1, 0, 0]) + b"get " + k.encode() + b"\\r\\n"
    u.sendto(req, (server, 11211))
    out.append(u.recv(65536)[8:].hex())
print(" ".join(out) if out else "-")
"""


@dataclass
class AgentLab:
    lab: Lab
    switch: Switch
    versions: itertools.count = field(default_factory=lambda: itertools.count(100, 10))
    slots: dict[bytes, int] = field(default_factory=dict)

    @property
    def server(self):  # noqa: ANN201
        return self.lab.servers[0]

    @property
    def mgmt(self) -> str:
        """The server's management address: the gate and the control channel, from here."""
        assert self.server.mgmt_ip
        return self.server.mgmt_ip

    def run_in(self, host, code: str, *args: str) -> str:  # noqa: ANN001
        r = self.lab.host_run(host, ["python3", "-c", code, *args], timeout=30)
        assert r.returncode == 0, r.stderr + self.lab.log("switch")[-1500:]
        return r.stdout.strip()

    def ctrl(self, payload: bytes) -> dp.Ctrl:
        out = self.run_in(self.server, CTRL, self.server.ip, SWITCH_ADDR, payload.hex())
        assert out, "the switch did not acknowledge"
        return dp.parse_ctrl(bytes.fromhex(out))

    def cache(self, key: bytes, reply: bytes, slot: int | None = None) -> None:
        """Have the switch answer GETs of ``key`` with ``reply`` (the entry, then the slot)."""
        if key not in self.slots:
            slot = len(self.slots) + 1 if slot is None else slot
            v = next(self.versions)
            assert self.ctrl(dp.update_datagram(slot, v, b"")).status == dp.STATUS_APPLIED
            te = self.switch.entry(dp.TABLE_LOOKUP, {
                "server_addr": self.server.ip, "key_len": str(len(key)),
                "key": str(int.from_bytes(key, "big"))},
                "CacheIngress.lookup.set_slot", {"slot": str(slot)})
            self.switch.insert(te)
            self.slots[key] = slot
        slot = self.slots[key]
        v = next(self.versions)
        assert self.ctrl(dp.update_datagram(slot, v, b"")).status == dp.STATUS_APPLIED
        ack = self.ctrl(dp.update_datagram(slot, v + 1, reply))
        assert ack.status == dp.STATUS_APPLIED, ack

    def client(self, *keys: bytes, tcp: bytes = b"", tcp_end: bytes = b"\r\n",
               port: int = AGENT_PORT) -> list[bytes]:
        """From the client: a TCP exchange with the gate (``port`` on the server's data
        address, through the switch), then UDP GETs of ``keys`` at once."""
        code = CLIENT.replace("11211)", f"{port})", 1)
        out = self.run_in(self.lab.clients[0], code, self.server.ip, tcp.hex(), tcp_end.hex(),
                          *(k.decode() for k in keys))
        return [] if out == "-" else [bytes.fromhex(x) for x in out.split(" ")]

    def stat(self, index: int) -> int:
        return self.switch.read_counter(dp.COUNTER_STATS)[index][0]

    def start_agent(self, name: str, port: int, control: int, *extra: str) -> None:
        argv = [_venv_bin("p4cache-agent"), "--listen", f"0.0.0.0:{port}",
                "--source", self.server.ip, "--memcached", "127.0.0.1:11212",
                "--switch", f"{SWITCH_ADDR}:{dp.CACHE_CTRL_PORT}",
                "--control", f"{self.mgmt}:{control}", "-v", *extra]
        self.lab.popen(self.server.ns, argv, name)
        wait_tcp(self.mgmt, control, 15.0, f"agent {name}", alive=lambda: self.lab.running(name),
                 log=lambda: self.lab.log(name))

    def block_control_datagrams(self, on: bool) -> None:
        """The switch unreachable for the agent: its control datagrams dropped on the way out."""
        cmd = ("add chain inet p4cache output { type filter hook output priority 0; }; "
               "add rule inet p4cache output udp dport 11311 drop") if on else \
            "delete chain inet p4cache output"
        if not on:
            subprocess.run([*_ns(self.server.ns), "nft", "flush chain inet p4cache output"],
                           check=False, capture_output=True)
        subprocess.run([*_ns(self.server.ns), "nft", cmd], check=True, capture_output=True)


def _ns(ns: str) -> list[str]:
    return ["ip", "netns", "exec", ns]


def bring_up(workdir: Path) -> tuple[Lab, AgentLab]:
    lab = Lab(LabSpec(servers=1, clients=1), workdir)
    lab.__enter__()
    try:
        assert lab.program is not None
        sw = Switch(lab.grpc_addr, PipelineFiles(lab.program.json_path, lab.program.p4info_path))
        sw.connect()
        cfg = lab.controller_config()
        for e in cfg["table_entries"]:
            sw.install(sw.entry(e["table"], {k: str(v) for k, v in e["match"].items()},
                                e["action_name"],
                                {k: str(v) for k, v in e["action_params"].items()}))
        sw.install(sw.entry(dp.TABLE_ALLOWLIST, {"src_addr": "10.0.0.0/24"},
                            "CacheIngress.lookup.allow_client"))
        s = lab.servers[0]
        sw.install(sw.entry(dp.TABLE_AGENTS, {"ingress_port": str(s.port), "src_addr": s.ip},
                            "CacheIngress.control_trust.trust_agent"))
        al = AgentLab(lab, sw)
        al.start_agent("agent", AGENT_PORT, AGENT_CONTROL)
        al.start_agent("agent-nogate", NO_GATE_PORT, NO_GATE_CONTROL, "--no-gate")
        return lab, al
    except BaseException:
        lab.__exit__(None, None, None)
        raise


def gate_exchange(al: AgentLab, data: bytes, port: int = AGENT_PORT, timeout: float = 20.0,
                  chunks: list[bytes] | None = None) -> bytes:
    """Send ``data`` (or ``chunks``) to the gate from the root namespace, half-close, read to
    the close."""
    return run_to_close(port, chunks if chunks is not None else [data], timeout=timeout,
                        host=al.mgmt)
