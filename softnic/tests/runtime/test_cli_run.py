"""``softnic run`` as a process, forwarding real traffic between network namespaces.

The switch ends of the veth pairs are in the root namespace so that the test process can reach
the P4Runtime server on 127.0.0.1 and drive it with p4runtime-shell, like a real controller.
"""

from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from softnic.netns import Topology, require_netns
from softnic.runtime.pcap import read_pcap

ROOT = Path(__file__).resolve().parents[3]
L3_P4 = ROOT / "bench" / "p4cache_bench" / "p4" / "l3.p4"
H1_GW_MAC = "08:00:00:00:01:00"
H2_GW_MAC = "08:00:00:00:02:00"

# The default action forwards everything to port 2 with h2's MAC: traffic h1 -> h2 passes with
# no control plane at all, so the program given on the command line is what is tested.
STATIC_P4 = L3_P4.read_text().replace(
    "default_action = drop();", "default_action = ipv4_forward(0x080000000222, 2);")


def compile_p4(src: Path, out: Path) -> tuple[Path, Path]:
    bmv2_json, p4info = out / f"{src.stem}.json", out / f"{src.stem}.p4info.txt"
    res = subprocess.run([sys.executable, "-m", "softnic.cli", "compile", "-o", str(bmv2_json),
                          "--p4runtime-files", str(p4info), str(src)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    return bmv2_json, p4info


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class SoftnicRun:
    """A ``softnic run`` subprocess; waits for its startup line."""

    def __init__(self, args: list[str], grpc_addr: str | None = None) -> None:
        self.grpc_addr = grpc_addr or f"127.0.0.1:{free_port()}"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "softnic.cli", "run", *args,
             "--", "--grpc-server-addr", self.grpc_addr],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        self.startup = self.proc.stdout.readline()
        if "P4Runtime on" not in self.startup:
            self.proc.kill()
            _, err = self.proc.communicate(timeout=10)
            raise AssertionError(f"softnic run did not start: {self.startup!r} {err}")

    def stop(self, sig: int = signal.SIGTERM) -> tuple[int, str, str]:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            out, err = self.proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, err = self.proc.communicate()
        return self.proc.returncode, out, err


@pytest.fixture(scope="module")
def topo() -> Iterator[Topology]:
    with Topology(2) as t:
        yield t


@pytest.fixture(scope="module")
def programs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path]]:
    require_netns()
    out = tmp_path_factory.mktemp("progs")
    static = out / "static_l3.p4"
    static.write_text(STATIC_P4)
    return {"l3": compile_p4(L3_P4, out), "static": compile_p4(static, out)}


def udp_frame(sport: int, payload: bytes, ttl: int = 64) -> bytes:
    return bytes(Ether(dst=H1_GW_MAC, src="08:00:00:00:01:11")
                 / IP(src="10.0.1.1", dst="10.0.2.2", ttl=ttl)
                 / UDP(sport=sport, dport=7777) / payload)


def expected_out(frame: bytes) -> bytes:
    """What basic L3 forwarding must make of ``frame``: MACs rewritten, TTL - 1, new checksum."""
    pkt = Ether(frame)
    pkt[Ether].src, pkt[Ether].dst = pkt[Ether].dst, "08:00:00:00:02:22"
    pkt[IP].ttl -= 1
    del pkt[IP].chksum
    return bytes(Ether(bytes(pkt)))


def test_bad_interface_fails_cleanly() -> None:
    require_netns()
    res = subprocess.run([sys.executable, "-m", "softnic.cli", "run", "--no-p4", "-i", "1@lo",
                          "-i", "2@nosuchif9", "--", "--grpc-server-addr",
                          f"127.0.0.1:{free_port()}"], capture_output=True, text=True, timeout=60)
    assert res.returncode == 1
    assert "nosuchif9" in res.stderr and "does not exist" in res.stderr
    assert "Traceback" not in res.stderr


def test_bad_program_fails_cleanly(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{ not json")
    res = subprocess.run([sys.executable, "-m", "softnic.cli", "run", str(bad)],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 1
    assert "cannot load" in res.stderr and "Traceback" not in res.stderr


def from_h1(frame: bytes) -> bool:
    """IPv4 source address 10.0.1.1 (h1)."""
    return frame[26:30] == bytes([10, 0, 1, 1])


def test_static_l3_forwarding_exact(topo: Topology, programs, tmp_path: Path) -> None:
    """JSON given on the command line: frames h1 -> h2 come out rewritten exactly as in BMv2."""
    h1, h2 = topo.hosts
    sw = SoftnicRun([str(programs["static"][0]), *topo.interface_args(),
                     "--pcap-dir", str(tmp_path)])
    try:
        assert "ports 1@" in sw.startup and "cpu port none" in sw.startup
        frames = [udp_frame(20000 + i, bytes([i]) * (10 + i)) for i in range(5)]
        # no count limit: h2 answers the UDP frames with ICMP port-unreachable, which this static
        # program sends straight back out of port 2, so h2 also receives its own replies
        cap = h2.capture(0x0800, timeout=1.5)
        h1.send_frames(frames)
        got = [f for f in cap.frames() if from_h1(f)]
    finally:
        rc, _out, err = sw.stop()
    assert rc == 0, err
    assert got == [expected_out(f) for f in frames]
    assert Ether(got[0])[IP].ttl == 63
    # --pcap-dir: what entered port 1 and what left port 2 (only h1's frames, as above)
    ins = [d for _, d in read_pcap(tmp_path / f"{h1.switch_ifname}_in.pcap")]
    outs = [d for _, d in read_pcap(tmp_path / f"{h2.switch_ifname}_out.pcap") if from_h1(d)]
    assert ins == frames and outs == got


def test_kernel_udp_passes_and_non_ip_is_dropped(topo: Topology, programs) -> None:
    """A real UDP socket exchange: the h2 stack accepts what softnic forwards (checksums OK)."""
    h1, h2 = topo.hosts
    sw = SoftnicRun([str(programs["static"][0]), *topo.interface_args()])
    try:
        server = h2.popen([sys.executable, "-c",
                           "import socket; s = socket.socket(2, 2); s.bind(('10.0.2.2', 7777));"
                           "s.settimeout(5); print('ready', flush=True); d, a = s.recvfrom(100);"
                           "print(d.decode(), a[0])"], stdout=subprocess.PIPE, text=True)
        assert server.stdout is not None and server.stdout.readline().strip() == "ready"
        h1.run([sys.executable, "-c", "import socket; socket.socket(2, 2).sendto(b'hello',"
                " ('10.0.2.2', 7777))"], check=True)
        out, _ = server.communicate(timeout=10)
        assert out.split() == ["hello", "10.0.1.1"]
        # non-IPv4 frames are dropped by the program (else branch)
        cap = h2.capture(0x88B5, timeout=1.0)
        h1.send_frames([bytes.fromhex("080000000222080000000111") + b"\x88\xb5" + bytes(50)])
        assert cap.frames() == []
    finally:
        rc, _, err = sw.stop()
    assert rc == 0, err


def test_log_console_traces_packets(topo: Topology, programs) -> None:
    h1, h2 = topo.hosts
    sw = SoftnicRun([str(programs["static"][0]), *topo.interface_args(), "--log-console"])
    try:
        cap = h2.capture(0x0800, timeout=2.0, count=1)
        h1.send_frames([udp_frame(30000, b"trace me")])
        assert len(cap.frames()) == 1
        time.sleep(0.2)
    finally:
        rc, _, err = sw.stop(signal.SIGINT)
    assert rc == 0, err
    assert "port 1: received packet of" in err
    assert "port 1 -> port 2: transmitting" in err
    # the engine trace, BMv2-like: parser states, the table with its miss (the static program
    # forwards by default action), the action run, checksum-updated output on port 2
    for line in ("Processing packet received on port 1", "Parser state 'start'",
                 "Extracting header 'ethernet'", "Parser state 'parse_ipv4'",
                 "Pipeline 'ingress': start", "Applying table 'MyIngress.ipv4_lpm'",
                 "Table 'MyIngress.ipv4_lpm': miss",
                 "Action entry is MyIngress.ipv4_forward - [", "Egress port is 2",
                 "Pipeline 'egress': start", "Transmitting packet of size"):
        assert line in err, line


@contextlib.contextmanager
def p4runtime_shell(grpc_addr: str, bmv2_json: Path, p4info: Path) -> Iterator[Any]:
    """A p4runtime-shell session that has pushed the pipeline (primary, election id 1)."""
    import p4runtime_sh.shell as sh

    sh.setup(device_id=0, grpc_addr=grpc_addr, election_id=(0, 1),
             config=sh.FwdPipeConfig(str(p4info), str(bmv2_json)))
    try:
        yield sh
    finally:
        sh.teardown()


def test_p4runtime_controlled_forwarding(topo: Topology, programs) -> None:
    """--no-p4: the controller pushes the pipeline; traffic is dropped until it adds the route."""
    h1, h2 = topo.hosts
    bmv2_json, p4info = programs["l3"]
    sw = SoftnicRun(["--no-p4", *topo.interface_args(), "--device-id", "0"])
    try:
        assert "program none (--no-p4)" in sw.startup
        with p4runtime_shell(sw.grpc_addr, bmv2_json, p4info) as sh:
            cap = h2.capture(0x0800, timeout=1.0)
            h1.send_frames([udp_frame(40000, b"no route yet")])
            assert cap.frames() == []

            te = sh.TableEntry("MyIngress.ipv4_lpm")(action="MyIngress.ipv4_forward")
            te.match["hdr.ipv4.dstAddr"] = "10.0.2.2/32"
            te.action["dstAddr"] = "08:00:00:00:02:22"
            te.action["port"] = "2"
            te.insert()
            assert len(list(sh.TableEntry("MyIngress.ipv4_lpm").read())) == 1

            f = udp_frame(40001, b"routed")
            cap = h2.capture(0x0800, timeout=2.0, count=1)
            h1.send_frames([f])
            assert cap.frames() == [expected_out(f)]
    finally:
        rc, _, err = sw.stop()
    assert rc == 0, err


def test_sigterm_and_sigint_exit_0_and_release_ports(topo: Topology) -> None:
    for sig in (signal.SIGTERM, signal.SIGINT):
        sw = SoftnicRun(["--no-p4", *topo.interface_args()])
        t0 = time.monotonic()
        rc, _, err = sw.stop(sig)
        assert rc == 0, err
        # promptly: well before stop()'s 15 s kill (a busy machine slows the exit down)
        assert time.monotonic() - t0 < 12
        assert "Traceback" not in err
    # ports and gRPC address are released: a new switch binds the same ones at once
    sw2 = SoftnicRun(["--no-p4", *topo.interface_args()], grpc_addr=sw.grpc_addr)
    assert sw2.stop()[0] == 0
