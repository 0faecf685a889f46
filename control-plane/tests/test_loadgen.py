"""p4cache-loadgen (tools/loadgen) through p4cache.workload.loadgen: its Go unit tests (Zipf
sampler, histogram, key formats, hash ring), then the real binary against a real memcached over
UDP and TCP, and against a UDP responder whose replies carry checksum 0, as the switch's do."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from p4cache.paths import checkout
from p4cache.workload import loadgen
from p4cache_bench.cachelab import key_of, value_of

REPO = checkout()
GO_ENV = {"GOTOOLCHAIN": "local", "GOFLAGS": "-mod=readonly"}
SO_NO_CHECK = 11

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the raw socket of --classify needs root")


@pytest.fixture(scope="module", autouse=True)
def loadgen_binary() -> Path:
    """Build (or bring up to date) build/bin/p4cache-loadgen, unless $P4CACHE_LOADGEN is set."""
    if not os.environ.get(loadgen.ENV_BINARY):
        proc = subprocess.run(["make", "-s", "loadgen"], cwd=REPO, capture_output=True,
                              text=True, check=False)
        assert proc.returncode == 0, f"make loadgen failed:\n{proc.stdout}\n{proc.stderr}"
    return loadgen.find_binary()


def _go() -> str | None:
    return shutil.which("go") or next(
        (g for g in ["/usr/local/go/bin/go"] if os.access(g, os.X_OK)), None)


def test_go_unit_tests() -> None:
    """Zipf frequencies vs the exact probabilities, histogram percentiles within 1 %, keys as
    cachelab.key_of/value_of, the ring as p4cache.ring."""
    go = _go()
    if go is None:
        pytest.skip("no go toolchain")
    assert REPO is not None
    proc = subprocess.run([go, "test", "-count=1", "-trimpath", "-buildvcs=false", "."],
                          cwd=REPO / "tools" / "loadgen", env={**os.environ, **GO_ENV},
                          capture_output=True, text=True, check=False, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _free_port() -> int:
    """A port free for both TCP and UDP on 127.0.0.1."""
    for _ in range(50):
        with socket.socket() as t, socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
            t.bind(("127.0.0.1", 0))
            port = t.getsockname()[1]
            try:
                u.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no port free for both TCP and UDP")


@pytest.fixture(scope="module")
def memcached() -> Iterator[str]:
    exe = shutil.which("memcached")
    if exe is None:
        pytest.skip("memcached is not installed (make setup installs it)")
    if os.geteuid() != 0:
        pytest.skip("runs memcached -u root and a raw socket: needs root")
    port = _free_port()
    proc = subprocess.Popen([exe, "-U", str(port), "-p", str(port), "-l", "127.0.0.1", "-u",
                             "root", "-t", "1", "-m", "64"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 5
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
                break
            assert time.monotonic() < deadline, "memcached did not start"
            time.sleep(0.05)
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(5)


def _check_latency(step: loadgen.Step, cls: str) -> None:
    for lat in step.latency[cls]:
        assert lat.count > 0
        assert 0 < lat.min_us <= lat.p50_us <= lat.p90_us <= lat.p99_us <= lat.p999_us
        assert lat.p999_us <= lat.max_us
    sched, sent = step.latency[cls]
    assert sched.p50_us >= sent.p50_us * 0.99  # from the schedule includes the send lag


@needs_root
def test_udp_and_tcp_against_memcached(memcached: str) -> None:
    rep = loadgen.run(loadgen.argv([memcached], proto="udp", rates=[2000], step_s=1.0,
                                   warmup_s=0.2, keys=2000, get_pct=100, preload=True),
                      timeout_s=30)
    assert rep.preload is not None and rep.preload["stored"] == 2000, rep.preload
    assert rep.machine["cores"] >= 1 and not rep.errors
    # what the preload stored is cachelab's key and value text (the value at 100 bytes)
    host, port = memcached.split(":")
    with socket.create_connection((host, int(port)), 5) as c:
        c.sendall(b"get " + key_of(42) + b"\r\n")
        got = b""
        while not got.endswith(b"END\r\n"):
            got += c.recv(4096)
    value = value_of(42)[:4].ljust(100, b"x")
    assert got == b"VALUE %s 0 100\r\n%s\r\nEND\r\n" % (key_of(42), value)
    (s,) = rep.steps
    assert s.complete and abs(s.sent - 1600) <= 2 and abs(s.send_rate - 2000) < 20
    assert s.replies["memcached"] == s.sent and s.replies["switch"] == 0
    assert s.kinds["value"] == s.sent and s.hit_fraction == 1.0
    assert s.timeouts == 0 and s.loss_fraction == 0.0
    _check_latency(s, "memcached")
    _check_latency(s, "all")

    rep = loadgen.run(loadgen.argv([memcached], proto="tcp", rates=[2000], step_s=1.0,
                                   warmup_s=0.2, keys=2000, get_pct=90, value_size=100),
                      timeout_s=30)
    (s,) = rep.steps
    assert s.complete and abs(s.sent - 1600) <= 2
    assert s.replies["all"] == s.replies["memcached"] == s.sent
    assert s.kinds["value"] == s.gets > 0 and s.kinds["stored"] == s.sets > 0
    assert s.kinds["miss"] == 0
    assert s.loss_fraction == 0.0 and not rep.errors
    _check_latency(s, "memcached")


def _responder(sock: socket.socket, stop: threading.Event) -> None:
    """Answers every GET with a one-value reply, its UDP checksum 0 (SO_NO_CHECK)."""
    sock.settimeout(0.05)
    while not stop.is_set():
        try:
            data, peer = sock.recvfrom(2048)
        except TimeoutError:
            continue
        rid = struct.unpack_from("!H", data)[0]
        key = data[8:].split(b"\r\n")[0].split(b" ")[1]
        body = b"VALUE %s 0 3\r\nabc\r\nEND\r\n" % key
        sock.sendto(struct.pack("!HHHH", rid, 0, 1, 0) + body, peer)


@needs_root
def test_checksum_zero_replies_are_the_switchs() -> None:
    """A responder sending with SO_NO_CHECK writes UDP checksum 0, the switch's mark: its
    replies count as ``switch``; without it, as ``memcached``."""
    for no_check, cls in ((True, "switch"), (False, "memcached")):
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.setsockopt(socket.SOL_SOCKET, SO_NO_CHECK, 1 if no_check else 0)
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        stop = threading.Event()
        t = threading.Thread(target=_responder, args=(sock, stop), daemon=True)
        t.start()
        try:
            rep = loadgen.run(loadgen.argv([f"127.0.0.1:{port}"], rates=[500], step_s=0.6,
                                           warmup_s=0.1, keys=100, get_pct=100, conns=2),
                              timeout_s=30)
        finally:
            stop.set()
            t.join()
            sock.close()
        (s,) = rep.steps
        assert s.sent == 250 and s.replies[cls] == s.sent and s.replies["all"] == s.sent, s
        assert s.kinds["value"] == s.sent and s.loss_fraction == 0.0
        _check_latency(s, cls)


def test_bad_flags_are_clear_errors() -> None:
    with pytest.raises(loadgen.LoadgenError, match="nothing to do"):
        loadgen.run(["--server", "127.0.0.1:1"])
    with pytest.raises(loadgen.LoadgenError, match="--warmup"):
        loadgen.run(loadgen.argv(["127.0.0.1:1"], rates=[10], step_s=1, warmup_s=2))
    with pytest.raises(loadgen.LoadgenError, match="IPv4 address:port"):
        loadgen.run(["--server", "localhost", "--rate", "10"])

