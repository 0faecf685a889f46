"""The issue's acceptance check, done the way a user does it: ``python -m p4runtime_sh`` (a real
P4Runtime client written elsewhere) connects to ``softnic run``, pushes a pipeline compiled by
``softnic compile``, inserts a table entry and reads it back."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
SOFTNIC = Path(sys.executable).with_name("softnic")

SHELL_COMMANDS = """\
te = table_entry["MyIngress.ipv4_lpm"](action="MyIngress.ipv4_forward")
te.match["hdr.ipv4.dstAddr"] = "10.0.2.2/32"
te.action["dstAddr"] = "08:00:00:00:02:22"
te.action["port"] = "2"
te.insert()
for e in table_entry["MyIngress.ipv4_lpm"].read(): print("READBACK", e)
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_listening(port: int, proc: subprocess.Popen, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"softnic run exited early: {proc.stderr.read() if proc.stderr else ''}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    pytest.fail("softnic run did not open its gRPC port")


def test_p4runtime_shell_inserts_and_reads_entry(tmp_path: Path) -> None:
    json_path = tmp_path / "basic_l3.json"
    p4info_path = tmp_path / "basic_l3.p4info.txt"
    subprocess.run(
        [str(SOFTNIC), "compile", str(CORPUS / "basic_l3.p4"), "-o", str(json_path),
         "--p4runtime-files", str(p4info_path)],
        check=True, capture_output=True, text=True, timeout=60,
    )
    port = _free_port()
    switch = subprocess.Popen(
        [str(SOFTNIC), "run", "--no-p4", "--", "--grpc-server-addr", f"127.0.0.1:{port}",
         "--cpu-port", "64"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        _wait_listening(port, switch)
        shell = subprocess.run(
            [sys.executable, "-m", "p4runtime_sh", "--grpc-addr", f"127.0.0.1:{port}",
             "--device-id", "0", "--election-id", "0,1",
             "--config", f"{p4info_path},{json_path}"],
            input=SHELL_COMMANDS, capture_output=True, text=True, timeout=120,
        )
    finally:
        switch.terminate()
        switch.wait(timeout=10)
    out = shell.stdout + shell.stderr
    assert shell.returncode == 0, out
    assert "Traceback" not in out, out
    readback = out[out.index("READBACK"):]
    assert '("MyIngress.ipv4_lpm")' in readback
    assert 'value: "\\\\x0a\\\\x00\\\\x02\\\\x02"' in readback
    assert "prefix_len: 32" in readback
    assert '("MyIngress.ipv4_forward")' in readback
    assert 'value: "\\\\x08\\\\x00\\\\x00\\\\x00\\\\x02\\\\x22"' in readback
    assert switch.returncode == 0
