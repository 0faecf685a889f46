"""softnic.runtime.xdp.libbpf against the real kernel: clang-compiled XDP objects, their maps,
BPF_PROG_TEST_RUN, ring buffers, verifier and compiler failures, and XDP attachment to a veth
pair in a namespace of its own."""

from __future__ import annotations

import ctypes
import logging
import os
import socket
import struct
import subprocess
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from softnic.runtime.xdp import libbpf as lb

_missing = lb.missing_requirements()
if _missing:
    pytest.skip("XDP unavailable: " + "; ".join(_missing), allow_module_level=True)

XDP_ABORTED, XDP_DROP, XDP_PASS, XDP_TX = 0, 1, 2, 3

PROGRAM_C = r"""
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

/* 0: frames respond() saw, 1: the tail word respond() appends, 2: frames count_drop() saw */
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 4);
    __type(key, __u32);
    __type(value, __u64);
} config SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 64);
    __type(key, __u32);
    __type(value, __u32);
} answers SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 8);
    __type(key, __u32);
    __type(value, __u32);
} port_count SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_RINGBUF);
    __uint(max_entries, 4096);
} events SEC(".maps");

struct event { __u32 port, key, seq, answer; };

/* meta: u32 port. frame: u32 key, u32 seq, u32 answer slot, ... */
SEC("xdp")
int respond(struct xdp_md *ctx)
{
    void *data = (void *)(long)ctx->data;
    void *meta = (void *)(long)ctx->data_meta;
    void *end = (void *)(long)ctx->data_end;
    __u32 port = 0, zero = 0, one = 1;

    if (meta + 4 <= data) {
        port = *(__u32 *)meta;
        *(__u32 *)meta = port | 0x80000000;
    }
    __u32 slot = port & 7;
    __u32 *count = bpf_map_lookup_elem(&port_count, &slot);
    if (count)
        *count += 1;
    __u64 *total = bpf_map_lookup_elem(&config, &zero);
    if (total)
        __sync_fetch_and_add(total, 1);

    if (data + 12 > end)
        return XDP_DROP;
    __u32 key = *(__u32 *)data;
    __u32 seq = *(__u32 *)(data + 4);
    __u32 *answer = bpf_map_lookup_elem(&answers, &key);
    if (!answer)
        return XDP_PASS;
    __u32 value = *answer;
    *(__u32 *)(data + 8) = value;

    __u32 len = end - data;
    if (len > 1024 || bpf_xdp_adjust_tail(ctx, 4))
        return XDP_ABORTED;
    __u64 *tail = bpf_map_lookup_elem(&config, &one);
    __u32 word = tail ? (__u32)*tail : 0;
    if (bpf_xdp_store_bytes(ctx, len, &word, 4))
        return XDP_ABORTED;

    struct event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
    if (e) {
        e->port = port;
        e->key = key;
        e->seq = seq;
        e->answer = value;
        bpf_ringbuf_submit(e, 0);
    }
    return XDP_TX;
}

SEC("xdp")
int count_drop(struct xdp_md *ctx)
{
    __u32 two = 2;
    __u64 *n = bpf_map_lookup_elem(&config, &two);
    if (n)
        __sync_fetch_and_add(n, 1);
    return XDP_DROP;
}

char LICENSE[] SEC("license") = "GPL";
"""

UNCHECKED_C = r"""
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int fine(struct xdp_md *ctx) { return XDP_PASS; }

SEC("xdp")
int unchecked(struct xdp_md *ctx)
{
    void *data = (void *)(long)ctx->data;
    return *(__u32 *)data == 7 ? XDP_DROP : XDP_PASS;   /* no data_end check */
}

char LICENSE[] SEC("license") = "GPL";
"""

KEY = struct.pack("<I", 0x0A0B0C0D)


def u32(v: int) -> bytes:
    return struct.pack("<I", v)


def u64(v: int) -> bytes:
    return struct.pack("<Q", v)


def compile_and_load(tmp: Path, source: str, name: str = "prog") -> lb.BpfObject:
    c_path, obj_path = tmp / f"{name}.c", tmp / f"{name}.o"
    c_path.write_text(source)
    lb.compile_c(c_path, obj_path)
    return lb.BpfObject.load(obj_path)


@pytest.fixture(scope="module")
def obj_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("xdp")
    (tmp / "prog.c").write_text(PROGRAM_C)
    lb.compile_c(tmp / "prog.c", tmp / "prog.o")
    return tmp / "prog.o"


@pytest.fixture
def obj(obj_file: Path) -> Iterator[lb.BpfObject]:
    """A freshly loaded object per test (its maps start empty)."""
    with lb.BpfObject.load(obj_file) as o:
        yield o


def test_objects_programs_and_maps(obj: lb.BpfObject) -> None:
    assert set(obj.map_names()) == {"config", "answers", "port_count", "events"}
    assert sorted(obj.program_names()) == ["count_drop", "respond"]
    assert obj.program_fd("respond") > 0
    shapes = {
        n: (m.type, m.key_size, m.value_size, m.max_entries, m.percpu)
        for n in obj.map_names()
        for m in [obj.map(n)]
    }
    assert shapes == {
        "config": (lb.BPF_MAP_TYPE_ARRAY, 4, 8, 4, False),
        "answers": (lb.BPF_MAP_TYPE_HASH, 4, 4, 64, False),
        "port_count": (lb.BPF_MAP_TYPE_PERCPU_ARRAY, 4, 4, 8, True),
        "events": (lb.BPF_MAP_TYPE_RINGBUF, 0, 0, 4096, False),
    }
    with pytest.raises(lb.BpfError, match="no program 'nope'"):
        obj.program_fd("nope")
    with pytest.raises(lb.BpfError, match="no map 'nope'.*answers"):
        obj.map("nope")

    info = obj.prog_info("respond")
    assert info["id"] > 0
    assert info["xlated_insns"] > 20
    assert info["jited_bytes"] > 0
    assert info["verified_insns"] >= info["xlated_insns"] // 2 > 0
    small = obj.prog_info("count_drop")
    assert 0 < small["xlated_insns"] < info["xlated_insns"]


def test_close_is_idempotent(obj_file: Path) -> None:
    o = lb.BpfObject.load(obj_file)
    o.map("answers")
    o.close()
    o.close()
    with pytest.raises(lb.BpfError, match="closed"):
        o.program_fd("respond")


def test_array_and_hash_round_trips(obj: lb.BpfObject) -> None:
    config = obj.map("config")
    assert config.lookup(u32(1)) == u64(0)  # arrays are zero-filled
    config.update(u32(1), u64(0x1122334455667788))
    assert config.lookup(u32(1)) == u64(0x1122334455667788)
    assert list(config.keys()) == [u32(i) for i in range(4)]
    with pytest.raises(lb.BpfError, match="map config: update: Argument list too long|E2BIG"):
        config.update(u32(4), u64(1))  # out of range
    with pytest.raises(lb.BpfError, match="map config: value is 4 bytes, map wants 8"):
        config.update(u32(0), u32(1))

    answers = obj.map("answers")
    assert answers.lookup(KEY) is None
    assert list(answers.keys()) == []
    for k in range(5):
        answers.update(u32(k), u32(100 + k))
    assert sorted(answers.keys()) == sorted(u32(k) for k in range(5))
    assert answers.lookup(u32(3)) == u32(103)
    answers.update(u32(3), u32(7), lb.BPF_EXIST)
    assert answers.lookup(u32(3)) == u32(7)
    with pytest.raises(lb.BpfError, match="map answers: update: .*EEXIST"):
        answers.update(u32(3), u32(8), lb.BPF_NOEXIST)
    with pytest.raises(lb.BpfError, match="map answers: update: .*ENOENT"):
        answers.update(u32(99), u32(8), lb.BPF_EXIST)
    assert answers.delete(u32(3)) is True
    assert answers.delete(u32(3)) is False
    assert answers.lookup(u32(3)) is None
    assert len(list(answers.keys())) == 4
    with pytest.raises(lb.BpfError, match="map answers: key is 2 bytes, map wants 4"):
        answers.lookup(b"\0\0")


def test_percpu_values_and_sums(obj: lb.BpfObject) -> None:
    ncpus = lb.num_possible_cpus()
    assert ncpus >= 1
    counts = obj.map("port_count")
    assert counts.lookup(u32(5)) == bytes(8 * ncpus)  # each u32 padded to 8 bytes
    assert counts.lookup_percpu(u32(5)) == [u32(0)] * ncpus

    counts.update_percpu(u32(5), [u32(1000 + c) for c in range(ncpus)])
    assert counts.lookup_percpu(u32(5)) == [u32(1000 + c) for c in range(ncpus)]
    raw = counts.lookup(u32(5))
    assert raw is not None and len(raw) == 8 * ncpus
    assert raw[8:12] == (u32(1001) if ncpus > 1 else b"")
    counts.update_percpu(u32(5), [u32(0)] * ncpus)
    with pytest.raises(lb.BpfError, match="values for"):
        counts.update_percpu(u32(5), [u32(0)] * (ncpus + 1))
    with pytest.raises(lb.BpfError, match="not a per-CPU map"):
        obj.map("answers").lookup_percpu(KEY)

    fd = obj.program_fd("respond")
    for port, n in ((5, 3), (6, 2)):
        for _ in range(n):
            lb.test_run(fd, bytes(20), meta=u32(port))
    lb.test_run(fd, bytes(20), meta=u32(5), repeat=4)

    def total(port: int) -> int:
        values = counts.lookup_percpu(u32(port))
        assert values is not None
        return sum(struct.unpack("<I", v)[0] for v in values)

    assert (total(5), total(6), total(0)) == (7, 2, 0)
    assert obj.map("config").lookup(u32(0)) == u64(9)


def test_test_run_results(obj: lb.BpfObject) -> None:
    fd = obj.program_fd("respond")
    obj.map("answers").update(KEY, u32(0xCAFE))
    obj.map("config").update(u32(1), u64(0xDEADBEEF))
    frame = KEY + u32(1) + bytes(4) + b"payload!" + bytes(20)

    hit = lb.test_run(fd, frame, meta=u32(3))
    assert hit.retval == XDP_TX
    assert hit.meta == u32(0x80000003)  # the program rewrote its metadata
    assert hit.data == KEY + u32(1) + u32(0xCAFE) + b"payload!" + bytes(20) + u32(0xDEADBEEF)
    assert hit.duration_ns >= 0

    miss = lb.test_run(fd, u32(1) + frame[4:])
    assert (miss.retval, miss.data, miss.meta) == (XDP_PASS, u32(1) + frame[4:], b"")

    assert lb.test_run(fd, bytes(14), meta=bytes(32)).retval == XDP_PASS  # key 0: no answer
    short = lb.test_run(obj.program_fd("count_drop"), bytes(14), meta=u32(1) + u32(2))
    assert (short.retval, short.meta, short.data) == (XDP_DROP, u32(1) + u32(2), bytes(14))

    with pytest.raises(lb.BpfError, match="multiple of 4"):
        lb.test_run(fd, frame, meta=b"\1\2")
    with pytest.raises(lb.BpfError, match="<= 32"):
        lb.test_run(fd, frame, meta=bytes(36))
    with pytest.raises(lb.BpfError, match="test_run"):
        lb.test_run(fd, b"\0" * 4)  # shorter than an Ethernet header


def test_live_frames(obj: lb.BpfObject) -> None:
    result = lb.test_run(
        obj.program_fd("count_drop"), bytes(60), repeat=10, live=True, batch_size=4
    )
    assert result.data == b"" and result.meta == b""
    assert obj.map("config").lookup(u32(2)) == u64(10)


def test_ring_buffer_delivers_records_in_order(
    obj: lb.BpfObject, caplog: pytest.LogCaptureFixture
) -> None:
    fd = obj.program_fd("respond")
    obj.map("answers").update(KEY, u32(42))
    got: list[tuple[int, ...]] = []
    rb = lb.RingBuffer(obj.map("events"), lambda rec: got.append(struct.unpack("<4I", rec)))
    assert rb.epoll_fd() >= 0
    assert rb.poll(0) == 0
    for seq in range(10):
        assert lb.test_run(fd, KEY + u32(seq) + bytes(12), meta=u32(seq % 3)).retval == XDP_TX
    assert rb.poll(100) == 10
    assert got == [(seq % 3, 0x0A0B0C0D, seq, 42) for seq in range(10)]
    assert rb.consume() == 0
    rb.close()
    rb.close()
    with pytest.raises(lb.BpfError, match="closed"):
        rb.poll(0)

    def explode(rec: bytes) -> None:
        raise ValueError("boom")

    with lb.RingBuffer(obj.map("events"), explode) as rb2, caplog.at_level(logging.ERROR):
        lb.test_run(fd, KEY + u32(99) + bytes(12))
        lb.test_run(fd, KEY + u32(100) + bytes(12))
        assert rb2.consume() == 2  # the exception is logged, not raised through C
    assert "ring buffer events: callback failed" in caplog.text
    assert "boom" in caplog.text

    with pytest.raises(lb.BpfError, match="not a ring buffer"):
        lb.RingBuffer(obj.map("answers"), got.append)


def test_verifier_failure_carries_the_log(tmp_path: Path) -> None:
    with pytest.raises(lb.BpfError) as e:
        compile_and_load(tmp_path, UNCHECKED_C, "unchecked")
    message = str(e.value)
    assert "program unchecked rejected by the verifier" in message
    assert "EACCES" in message
    assert "invalid access to packet" in message
    assert len(message.splitlines()) <= lb.VERIFIER_LOG_LINES + 1


def test_clang_failure_carries_the_compiler_message(tmp_path: Path) -> None:
    c_path = tmp_path / "broken.c"
    c_path.write_text("#include <linux/bpf.h>\nint f(void) { return not_declared; }\n")
    with pytest.raises(lb.BpfError, match="clang failed") as e:
        lb.compile_c(c_path, tmp_path / "broken.o")
    assert "use of undeclared identifier 'not_declared'" in str(e.value)
    assert not (tmp_path / "broken.o").exists()


def test_open_failure(tmp_path: Path) -> None:
    with pytest.raises(lb.BpfError, match="bpf_object__open_file.*ENOENT"):
        lb.BpfObject.load(tmp_path / "absent.o")
    (tmp_path / "junk.o").write_bytes(b"not an ELF file")
    with pytest.raises(lb.BpfError, match="bpf_object__open_file"):
        lb.BpfObject.load(tmp_path / "junk.o")


# --- attachment, in a namespace of its own ---------------------------------------------------


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=10)


def _in_netns(ns: str, fn: Callable[[], Any]) -> Any:
    """Run fn in a thread that has joined ns (setns changes the calling thread only)."""
    libc = ctypes.CDLL(None, use_errno=True)
    box: dict[str, Any] = {}

    def worker() -> None:
        try:
            fd = os.open(f"/run/netns/{ns}", os.O_RDONLY)
            try:
                if libc.setns(fd, 0x40000000) != 0:  # CLONE_NEWNET
                    raise OSError(ctypes.get_errno(), "setns")
            finally:
                os.close(fd)
            box["result"] = fn()
        except BaseException as e:  # handed to the caller
            box["error"] = e

    t = threading.Thread(target=worker)
    t.start()
    t.join(30)
    if "error" in box:
        raise box["error"]
    return box.get("result")


@pytest.fixture
def veth_ns(request: pytest.FixtureRequest) -> str:
    ns = f"xdpt-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    _ip("netns", "add", ns)
    request.addfinalizer(lambda: subprocess.run(["ip", "netns", "del", ns], check=False))
    _ip("-n", ns, "link", "add", "xa", "type", "veth", "peer", "name", "xb")
    _ip("-n", ns, "link", "set", "xa", "up")
    _ip("-n", ns, "link", "set", "xb", "up")
    return ns


def test_xdp_attach_query_replace_detach(obj_file: Path, veth_ns: str) -> None:
    with lb.BpfObject.load(obj_file) as o:
        respond, drop = o.program_fd("respond"), o.program_fd("count_drop")
        respond_id, drop_id = o.prog_info("respond")["id"], o.prog_info("count_drop")["id"]

        def scenario() -> dict[str, Any]:
            seen: dict[str, Any] = {}
            xa = socket.if_nametoindex("xa")
            xb = socket.if_nametoindex("xb")
            seen["empty"] = lb.xdp_query_id(xa, "native")
            lb.xdp_attach(xa, respond, "native")
            seen["native"] = (lb.xdp_query_id(xa, "native"), lb.xdp_query_id(xa, "skb"))
            lb.xdp_attach(xa, drop, "native", old_prog_fd=respond)
            seen["replaced"] = lb.xdp_query_id(xa, "native")
            try:
                lb.xdp_attach(xa, respond, "native", old_prog_fd=respond)  # no longer attached
            except lb.BpfError as e:
                seen["stale_replace"] = str(e)
            lb.xdp_detach(xa, "native")
            seen["detached"] = lb.xdp_query_id(xa, "native")
            lb.xdp_attach(xb, respond, "skb")
            seen["skb"] = (lb.xdp_query_id(xb, "skb"), lb.xdp_query_id(xb, "native"))
            lb.xdp_detach(xb, "skb")
            seen["skb_detached"] = lb.xdp_query_id(xb, "skb")
            try:
                lb.xdp_attach(xa, respond, "offload")
            except lb.BpfError as e:
                seen["bad_mode"] = str(e)
            return seen

        seen = _in_netns(veth_ns, scenario)
    assert seen["empty"] == 0
    assert seen["native"] == (respond_id, 0)
    assert seen["replaced"] == drop_id
    assert "bpf_xdp_attach" in seen["stale_replace"] and "EEXIST" in seen["stale_replace"]
    assert seen["detached"] == 0
    assert seen["skb"] == (respond_id, 0)
    assert seen["skb_detached"] == 0
    assert "XDP mode 'offload'" in seen["bad_mode"]


def test_missing_requirements_and_missing_library(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lb.os, "geteuid", lambda: 1000)
    monkeypatch.setattr(lb.platform, "release", lambda: "5.15.0-91-generic")
    monkeypatch.setattr(lb, "BPF_HELPERS_H", Path("/nonexistent/bpf_helpers.h"))
    missing = lb.missing_requirements()
    assert any(m.startswith("not root") for m in missing)
    assert any("apt-get install libbpf-dev" in m for m in missing)
    assert any("5.15.0-91-generic older than 5.18" in m for m in missing)

    monkeypatch.setattr(lb, "_lib", None)
    monkeypatch.setattr(lb, "LIBBPF_SONAME", "libbpf-absent.so.9")
    with pytest.raises(lb.BpfError, match=r"libbpf-absent.so.9 not found: apt-get install libbpf1"):
        lb.num_possible_cpus()
