"""``p4cache-controller run`` and ``status`` as a user runs them (subprocesses)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

from .conftest import SERVER_IP, config_dict, wait_until

BIN = Path(sys.executable).parent / "p4cache-controller"


def status(addr: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN), "status", "--connect", addr, *args], capture_output=True,
                          text=True, timeout=30)


def test_run_then_status_json_and_table(tmp_path: Path, softnic, pipeline, agent) -> None:
    d = config_dict(softnic.addr, pipeline, agent.addr)
    cfg = tmp_path / "controller.json"
    cfg.write_text(json.dumps(d))
    err = open(tmp_path / "stderr", "w+")  # noqa: SIM115
    proc = subprocess.Popen([str(BIN), "run", "--config", str(cfg)], stdout=subprocess.PIPE,
                            stderr=err, text=True)
    try:
        addr = d["status_listen"]

        def connected():
            r = status(addr, "--json")
            return r.returncode == 0 and json.loads(r.stdout)["switch"]["connected"] \
                and json.loads(r.stdout)
        st = wait_until(connected, 30, "controller connected")
        assert st["cache"] == {"slots": 4096, "cached": 0, "filled": 0, "in_progress": 0}
        assert st["switch"]["pipeline_pushed"] is True
        assert st["hit_ratio"] is None and st["switch_counters"]["hit"] == 0
        assert st["agents"][0]["name"] == "m1"
        # a table for people
        r = status(addr)
        assert r.returncode == 0
        for word in ("p4cache controller", "hit ratio", "promotions", "evictions",
                     "promotion latency", "cached keys"):
            assert word in r.stdout
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    err.seek(0)
    assert err.read() == "", "quiet by default"


def test_bad_config_is_a_clear_error(tmp_path: Path) -> None:
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({"servers": [{"ip": SERVER_IP}]}))
    r = subprocess.run([str(BIN), "run", "--config", str(cfg)], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 2
    assert r.stderr.strip() == f"p4cache-controller: {cfg}: program: missing"


def test_status_without_a_controller(tmp_path: Path) -> None:
    from .conftest import free_port
    r = status(f"127.0.0.1:{free_port()}")
    assert r.returncode == 1 and "no status from" in r.stderr
