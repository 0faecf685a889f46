"""A small typed ctypes binding over Debian's libbpf.so.1 (libbpf 1.1).

What the XDP execution engine needs and nothing more: compile a C file with clang, open and load
the eBPF object (libbpf parses the ELF and the BTF-declared maps), read and write its maps, run a
program on a frame with BPF_PROG_TEST_RUN, attach it to an interface and read ring buffers.

Importing this module never fails: libbpf is loaded on first use, and every function declares
its argtypes/restype once, when the library is loaded. libbpf 1.x returns -errno (or NULL with
errno set); every failure is raised as :class:`BpfError` with the errno text.
"""

from __future__ import annotations

import collections
import ctypes
import errno
import logging
import os
import platform
import re
import shutil
import subprocess
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from types import TracebackType
from typing import Any

log = logging.getLogger(__name__)

MIN_KERNEL = (5, 18)  # bpf_xdp_load_bytes/store_bytes, BPF_F_TEST_XDP_LIVE_FRAMES
LIBBPF_SONAME = "libbpf.so.1"
BPF_HELPERS_H = Path("/usr/include/bpf/bpf_helpers.h")

# bpf_map_update_elem flags
BPF_ANY = 0
BPF_NOEXIST = 1
BPF_EXIST = 2

# enum bpf_map_type (linux/bpf.h)
BPF_MAP_TYPE_HASH = 1
BPF_MAP_TYPE_ARRAY = 2
BPF_MAP_TYPE_PERCPU_HASH = 5
BPF_MAP_TYPE_PERCPU_ARRAY = 6
BPF_MAP_TYPE_LRU_HASH = 9
BPF_MAP_TYPE_LRU_PERCPU_HASH = 10
BPF_MAP_TYPE_RINGBUF = 27
PERCPU_MAP_TYPES = frozenset(
    {BPF_MAP_TYPE_PERCPU_HASH, BPF_MAP_TYPE_PERCPU_ARRAY, BPF_MAP_TYPE_LRU_PERCPU_HASH}
)

BPF_F_TEST_XDP_LIVE_FRAMES = 1 << 1

# linux/if_link.h
XDP_FLAGS_UPDATE_IF_NOEXIST = 1 << 0
XDP_FLAGS_SKB_MODE = 1 << 1
XDP_FLAGS_DRV_MODE = 1 << 2
XDP_FLAGS_HW_MODE = 1 << 3
XDP_FLAGS_REPLACE = 1 << 4
_XDP_MODES = {"native": XDP_FLAGS_DRV_MODE, "skb": XDP_FLAGS_SKB_MODE}

# enum xdp_action
XDP_ACTIONS = {0: "XDP_ABORTED", 1: "XDP_DROP", 2: "XDP_PASS", 3: "XDP_TX", 4: "XDP_REDIRECT"}

TEST_RUN_DATA_OUT = 8192
XDP_META_MAX = 32
VERIFIER_LOG_LINES = 80
CLANG_ERROR_LINES = 60
CLANG_FLAGS = (
    "-O2",
    "-g",
    "-target",
    "bpf",
    "-Wall",
    "-Wno-unused-function",
    "-Wno-unused-variable",
    "-Wno-unused-label",
)


class BpfError(Exception):
    """A libbpf, kernel or clang operation failed; the message says which and why."""


def _errno_error(what: str, err: int) -> BpfError:
    err = abs(err)
    name = errno.errorcode.get(err, str(err))
    return BpfError(f"{what}: {os.strerror(err)} ({name})")


# --- C structures (layouts checked against libbpf 1.1 / linux 6.1 uapi headers) ---------------


class BpfTestRunOpts(ctypes.Structure):
    """struct bpf_test_run_opts (bpf/bpf.h, libbpf 1.1): 80 bytes."""

    _fields_ = [
        ("sz", ctypes.c_size_t),
        ("data_in", ctypes.c_void_p),
        ("data_out", ctypes.c_void_p),
        ("data_size_in", ctypes.c_uint32),
        ("data_size_out", ctypes.c_uint32),
        ("ctx_in", ctypes.c_void_p),
        ("ctx_out", ctypes.c_void_p),
        ("ctx_size_in", ctypes.c_uint32),
        ("ctx_size_out", ctypes.c_uint32),
        ("retval", ctypes.c_uint32),
        ("repeat", ctypes.c_int),
        ("duration", ctypes.c_uint32),
        ("flags", ctypes.c_uint32),
        ("cpu", ctypes.c_uint32),
        ("batch_size", ctypes.c_uint32),
    ]


class XdpMd(ctypes.Structure):
    """struct xdp_md (linux/bpf.h): the XDP context as BPF_PROG_TEST_RUN takes it."""

    _fields_ = [
        ("data", ctypes.c_uint32),
        ("data_end", ctypes.c_uint32),
        ("data_meta", ctypes.c_uint32),
        ("ingress_ifindex", ctypes.c_uint32),
        ("rx_queue_index", ctypes.c_uint32),
        ("egress_ifindex", ctypes.c_uint32),
    ]


class BpfXdpAttachOpts(ctypes.Structure):
    """struct bpf_xdp_attach_opts (bpf/libbpf.h): 16 bytes (size_t :0 pads to 8)."""

    _fields_ = [("sz", ctypes.c_size_t), ("old_prog_fd", ctypes.c_int), ("_pad", ctypes.c_int)]


class BpfProgInfo(ctypes.Structure):
    """struct bpf_prog_info (linux/bpf.h, through attach_btf_id): 232 bytes, aligned(8)."""

    _fields_ = [
        ("type", ctypes.c_uint32),
        ("id", ctypes.c_uint32),
        ("tag", ctypes.c_uint8 * 8),
        ("jited_prog_len", ctypes.c_uint32),
        ("xlated_prog_len", ctypes.c_uint32),
        ("jited_prog_insns", ctypes.c_uint64),
        ("xlated_prog_insns", ctypes.c_uint64),
        ("load_time", ctypes.c_uint64),
        ("created_by_uid", ctypes.c_uint32),
        ("nr_map_ids", ctypes.c_uint32),
        ("map_ids", ctypes.c_uint64),
        ("name", ctypes.c_char * 16),
        ("ifindex", ctypes.c_uint32),
        ("gpl_compatible", ctypes.c_uint32, 1),
        ("_pad0", ctypes.c_uint32, 31),
        ("netns_dev", ctypes.c_uint64),
        ("netns_ino", ctypes.c_uint64),
        ("nr_jited_ksyms", ctypes.c_uint32),
        ("nr_jited_func_lens", ctypes.c_uint32),
        ("jited_ksyms", ctypes.c_uint64),
        ("jited_func_lens", ctypes.c_uint64),
        ("btf_id", ctypes.c_uint32),
        ("func_info_rec_size", ctypes.c_uint32),
        ("func_info", ctypes.c_uint64),
        ("nr_func_info", ctypes.c_uint32),
        ("nr_line_info", ctypes.c_uint32),
        ("line_info", ctypes.c_uint64),
        ("jited_line_info", ctypes.c_uint64),
        ("nr_jited_line_info", ctypes.c_uint32),
        ("line_info_rec_size", ctypes.c_uint32),
        ("jited_line_info_rec_size", ctypes.c_uint32),
        ("nr_prog_tags", ctypes.c_uint32),
        ("prog_tags", ctypes.c_uint64),
        ("run_time_ns", ctypes.c_uint64),
        ("run_cnt", ctypes.c_uint64),
        ("recursion_misses", ctypes.c_uint64),
        ("verified_insns", ctypes.c_uint32),
        ("attach_btf_obj_id", ctypes.c_uint32),
        ("attach_btf_id", ctypes.c_uint32),
        ("_pad1", ctypes.c_uint32),
    ]


assert ctypes.sizeof(ctypes.c_void_p) != 8 or ctypes.sizeof(BpfTestRunOpts) == 80
assert ctypes.sizeof(BpfProgInfo) == 232
assert BpfProgInfo.verified_insns.offset == 216

# int (*libbpf_print_fn_t)(enum libbpf_print_level, const char *fmt, va_list ap)
_PRINT_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)
# int (*ring_buffer_sample_fn)(void *ctx, void *data, size_t size)
_SAMPLE_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)

_vp = ctypes.c_void_p
_int = ctypes.c_int
_u32 = ctypes.c_uint32
_SIGNATURES: dict[str, tuple[Any, list[Any]]] = {
    "libbpf_set_print": (_vp, [_PRINT_FN]),
    "libbpf_num_possible_cpus": (_int, []),
    "bpf_object__open_file": (_vp, [ctypes.c_char_p, _vp]),
    "bpf_object__load": (_int, [_vp]),
    "bpf_object__close": (None, [_vp]),
    "bpf_object__next_program": (_vp, [_vp, _vp]),
    "bpf_object__next_map": (_vp, [_vp, _vp]),
    "bpf_object__find_program_by_name": (_vp, [_vp, ctypes.c_char_p]),
    "bpf_object__find_map_by_name": (_vp, [_vp, ctypes.c_char_p]),
    "bpf_program__name": (ctypes.c_char_p, [_vp]),
    "bpf_program__fd": (_int, [_vp]),
    "bpf_program__set_log_buf": (_int, [_vp, ctypes.c_char_p, ctypes.c_size_t]),
    "bpf_program__set_log_level": (_int, [_vp, _u32]),
    "bpf_map__name": (ctypes.c_char_p, [_vp]),
    "bpf_map__fd": (_int, [_vp]),
    "bpf_map__type": (_int, [_vp]),
    "bpf_map__key_size": (_u32, [_vp]),
    "bpf_map__value_size": (_u32, [_vp]),
    "bpf_map__max_entries": (_u32, [_vp]),
    "bpf_map_lookup_elem": (_int, [_int, _vp, _vp]),
    "bpf_map_update_elem": (_int, [_int, _vp, _vp, ctypes.c_uint64]),
    "bpf_map_delete_elem": (_int, [_int, _vp]),
    "bpf_map_get_next_key": (_int, [_int, _vp, _vp]),
    "bpf_obj_get_info_by_fd": (_int, [_int, _vp, ctypes.POINTER(_u32)]),
    "bpf_prog_test_run_opts": (_int, [_int, ctypes.POINTER(BpfTestRunOpts)]),
    "bpf_prog_get_fd_by_id": (_int, [_u32]),
    "bpf_xdp_attach": (_int, [_int, _int, _u32, ctypes.POINTER(BpfXdpAttachOpts)]),
    "bpf_xdp_detach": (_int, [_int, _u32, ctypes.POINTER(BpfXdpAttachOpts)]),
    "bpf_xdp_query_id": (_int, [_int, _int, ctypes.POINTER(_u32)]),
    "ring_buffer__new": (_vp, [_int, _SAMPLE_FN, _vp, _vp]),
    "ring_buffer__free": (None, [_vp]),
    "ring_buffer__poll": (_int, [_vp, _int]),
    "ring_buffer__consume": (_int, [_vp]),
    "ring_buffer__epoll_fd": (_int, [_vp]),
}

# libbpf's own messages (warnings only), kept so a load failure that is not a verifier failure
# (BTF, map creation, relocation) can say what libbpf said. Nothing is printed.
_LIBBPF_WARN = 0
_FAILED_PROG = re.compile(r"prog '([^']+)': failed to load")
_libbpf_messages: collections.deque[str] = collections.deque(maxlen=40)
_lib_lock = threading.Lock()
_lib: ctypes.CDLL | None = None
_print_cb: Any = None  # the C callback object passed to libbpf_set_print: must stay alive


def _make_print_callback() -> Any:
    vsnprintf = None
    # va_list is passed as a pointer on x86-64 (array type) and aarch64 (large struct by
    # reference), so libc's vsnprintf can format libbpf's message; elsewhere only the format.
    if platform.machine() in ("x86_64", "aarch64"):
        try:
            libc = ctypes.CDLL(None)
            vsnprintf = libc.vsnprintf
            vsnprintf.restype = ctypes.c_int
            vsnprintf.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p, _vp]
        except (OSError, AttributeError):
            vsnprintf = None

    def on_print(level: int, fmt: bytes | None, args: int | None) -> int:
        try:
            if level != _LIBBPF_WARN or fmt is None:
                return 0
            if vsnprintf is not None:
                buf = ctypes.create_string_buffer(4096)
                vsnprintf(buf, len(buf), fmt, args)
                text = buf.value.decode(errors="replace")
            else:
                text = fmt.decode(errors="replace")
            if "PROG LOAD LOG" not in text:
                _libbpf_messages.extend(line for line in text.splitlines() if line.strip())
        except Exception:  # never let an exception into C
            pass
        return 0

    return _PRINT_FN(on_print)


def _load_library() -> ctypes.CDLL:
    """Load libbpf.so.1 once, declare every function used, silence libbpf's printing."""
    global _lib, _print_cb
    with _lib_lock:
        if _lib is not None:
            return _lib
        try:
            lib = ctypes.CDLL(LIBBPF_SONAME, use_errno=True)
        except OSError as e:
            raise BpfError(f"{LIBBPF_SONAME} not found: apt-get install libbpf1 ({e})") from e
        for name, (restype, argtypes) in _SIGNATURES.items():
            try:
                fn = getattr(lib, name)
            except AttributeError as e:
                raise BpfError(f"{LIBBPF_SONAME} has no {name}: libbpf >= 1.0 needed") from e
            fn.restype = restype
            fn.argtypes = argtypes
        _print_cb = _make_print_callback()
        lib.libbpf_set_print(_print_cb)
        _lib = lib
        return lib


def _call(what: str, fn: Any, *args: Any) -> int:
    """Call a libbpf function returning int; a negative result raises BpfError(-errno)."""
    ret = fn(*args)
    if ret < 0:
        raise _errno_error(what, -ret)
    return int(ret)


# --- requirements and compilation -------------------------------------------------------------


def _kernel_version() -> tuple[int, int] | None:
    parts = platform.release().split(".")
    try:
        return int(parts[0]), int("".join(c for c in parts[1] if c.isdigit()) or "0")
    except (IndexError, ValueError):
        return None


def missing_requirements() -> list[str]:
    """What is missing to use XDP here (empty when nothing is)."""
    missing = []
    if os.geteuid() != 0:
        missing.append("not root (loading and attaching eBPF programs needs euid 0)")
    try:
        _load_library()
    except BpfError as e:
        missing.append(str(e))
    if shutil.which("clang") is None:
        missing.append("clang not on PATH: apt-get install clang")
    if not BPF_HELPERS_H.is_file():
        missing.append(f"{BPF_HELPERS_H} missing: apt-get install libbpf-dev")
    kernel = _kernel_version()
    if kernel is None or kernel < MIN_KERNEL:
        want = ".".join(map(str, MIN_KERNEL))
        missing.append(
            f"kernel {platform.release()} older than {want} "
            "(bpf_xdp_load_bytes/store_bytes, XDP live-frame test runs)"
        )
    return missing


@lru_cache(maxsize=1)
def _multiarch_include() -> str:
    """/usr/include/<multiarch> (asm/types.h lives there on Debian)."""
    for cmd in (["gcc", "-print-multiarch"], ["dpkg-architecture", "-qDEB_HOST_MULTIARCH"]):
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=10, check=True)
        except (OSError, subprocess.SubprocessError):
            continue
        triplet = out.stdout.strip()
        if triplet:
            return f"/usr/include/{triplet}"
    return f"/usr/include/{platform.machine()}-linux-gnu"


def compile_c(c_path: Path, obj_path: Path) -> None:
    """Compile an eBPF C file with clang into an object libbpf can load."""
    clang = shutil.which("clang")
    if clang is None:
        raise BpfError("clang not on PATH: apt-get install clang")
    cmd = [clang, *CLANG_FLAGS, f"-I{_multiarch_include()}", "-c", str(c_path), "-o", str(obj_path)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired as e:
        raise BpfError(f"clang timed out compiling {c_path}") from e
    if proc.returncode != 0:
        lines = (proc.stderr or proc.stdout).rstrip().splitlines()
        tail = "\n".join(lines[-CLANG_ERROR_LINES:])
        raise BpfError(f"clang failed compiling {c_path} (exit {proc.returncode}):\n{tail}")


# --- objects, programs, maps ------------------------------------------------------------------


def num_possible_cpus() -> int:
    """Number of possible CPUs (the per-CPU map value count)."""
    lib = _load_library()
    return _call("libbpf_num_possible_cpus", lib.libbpf_num_possible_cpus)


def _round8(n: int) -> int:
    return (n + 7) & ~7


class BpfMap:
    """One map of a loaded object, addressed by its fd (valid while the object is open)."""

    def __init__(
        self, name: str, fd: int, type: int, key_size: int, value_size: int, max_entries: int
    ) -> None:
        self.name = name
        self.fd = fd
        self.type = type
        self.key_size = key_size
        self.value_size = value_size
        self.max_entries = max_entries
        self.percpu = type in PERCPU_MAP_TYPES
        self._lib = _load_library()
        self._ncpus = num_possible_cpus() if self.percpu else 1

    def __repr__(self) -> str:
        return (
            f"BpfMap({self.name!r}, fd={self.fd}, type={self.type}, key_size={self.key_size}, "
            f"value_size={self.value_size}, max_entries={self.max_entries})"
        )

    @property
    def buffer_size(self) -> int:
        """Bytes of a lookup/update value (all CPUs, each padded to 8, for per-CPU maps)."""
        return _round8(self.value_size) * self._ncpus if self.percpu else self.value_size

    def _key(self, key: bytes) -> ctypes.Array[ctypes.c_char]:
        if len(key) != self.key_size:
            raise BpfError(f"map {self.name}: key is {len(key)} bytes, map wants {self.key_size}")
        return ctypes.create_string_buffer(bytes(key), max(len(key), 1))

    def lookup(self, key: bytes) -> bytes | None:
        """The value at key (per-CPU: every CPU's value, padded to 8), None when absent."""
        k = self._key(key)
        out = ctypes.create_string_buffer(max(self.buffer_size, 1))
        ret = self._lib.bpf_map_lookup_elem(self.fd, k, out)
        if ret == -errno.ENOENT:
            return None
        if ret < 0:
            raise _errno_error(f"map {self.name}: lookup", -ret)
        return out.raw[: self.buffer_size]

    def lookup_percpu(self, key: bytes) -> list[bytes] | None:
        """One unpadded value per possible CPU, None when the key is absent."""
        self._need_percpu()
        raw = self.lookup(key)
        if raw is None:
            return None
        stride = _round8(self.value_size)
        return [raw[i * stride : i * stride + self.value_size] for i in range(self._ncpus)]

    def update(self, key: bytes, value: bytes, flags: int = BPF_ANY) -> None:
        """Write value at key (per-CPU: every CPU's value, each padded to 8 bytes)."""
        k = self._key(key)
        if len(value) != self.buffer_size:
            raise BpfError(
                f"map {self.name}: value is {len(value)} bytes, map wants {self.buffer_size}"
            )
        v = ctypes.create_string_buffer(bytes(value), max(len(value), 1))
        ret = self._lib.bpf_map_update_elem(self.fd, k, v, flags)
        if ret < 0:
            raise _errno_error(f"map {self.name}: update", -ret)

    def update_percpu(self, key: bytes, values: list[bytes], flags: int = BPF_ANY) -> None:
        """Write one value per possible CPU (each value_size bytes) at key."""
        self._need_percpu()
        if len(values) != self._ncpus:
            raise BpfError(f"map {self.name}: {len(values)} values for {self._ncpus} CPUs")
        pad = _round8(self.value_size) - self.value_size
        for v in values:
            if len(v) != self.value_size:
                raise BpfError(
                    f"map {self.name}: value is {len(v)} bytes, map wants {self.value_size}"
                )
        self.update(key, b"".join(bytes(v) + b"\0" * pad for v in values), flags)

    def delete(self, key: bytes) -> bool:
        """Delete key; False when it was not there."""
        ret = self._lib.bpf_map_delete_elem(self.fd, self._key(key))
        if ret == -errno.ENOENT:
            return False
        if ret < 0:
            raise _errno_error(f"map {self.name}: delete", -ret)
        return True

    def keys(self) -> Iterator[bytes]:
        """Every key, in the kernel's iteration order (bpf_map_get_next_key)."""
        cur: ctypes.Array[ctypes.c_char] | None = None
        nxt = ctypes.create_string_buffer(max(self.key_size, 1))
        while True:
            ret = self._lib.bpf_map_get_next_key(self.fd, cur, nxt)
            if ret == -errno.ENOENT:
                return
            if ret < 0:
                raise _errno_error(f"map {self.name}: get_next_key", -ret)
            key = nxt.raw[: self.key_size]
            yield key
            cur = ctypes.create_string_buffer(key, max(self.key_size, 1))

    def _need_percpu(self) -> None:
        if not self.percpu:
            raise BpfError(f"map {self.name} (type {self.type}) is not a per-CPU map")


class BpfObject:
    """A loaded eBPF object file: its programs and maps. Close it (or use `with`)."""

    def __init__(self, handle: int, path: Path) -> None:
        self._lib = _load_library()
        self._obj: int | None = handle
        self.path = path
        self._maps: dict[str, BpfMap] = {}

    @classmethod
    def load(cls, obj_path: Path, log_size: int = 16 << 20) -> BpfObject:
        """Open and load obj_path; a verifier rejection raises with the log's last lines."""
        lib = _load_library()
        obj_path = Path(obj_path)
        _libbpf_messages.clear()
        handle = lib.bpf_object__open_file(str(obj_path).encode(), None)
        if not handle:
            err = ctypes.get_errno() or errno.EINVAL
            raise _with_libbpf_messages(_errno_error(f"bpf_object__open_file {obj_path}", err))
        obj = cls(handle, obj_path)
        # One log buffer for every program, at log level 0: libbpf loads without a log, and
        # only when a load fails retries it at level 1 into this buffer (a log level set up
        # front would fail a verbose but valid program with ENOSPC once the log fills).
        log_buf = ctypes.create_string_buffer(log_size)
        progs = obj._programs()
        for prog in progs:
            _call("bpf_program__set_log_buf", lib.bpf_program__set_log_buf, prog, log_buf, log_size)
        ret = lib.bpf_object__load(handle)
        if ret < 0:
            # libbpf closes every program fd when the load fails; its warning names the program.
            failed = next(
                (m.group(1) for m in map(_FAILED_PROG.search, _libbpf_messages) if m), None
            )
            verifier_log = log_buf.value.decode(errors="replace")
            obj.close()
            what = f"loading {obj_path}"
            if verifier_log.strip():
                prog = f"program {failed}" if failed else "a program"
                error = _errno_error(f"{what}: {prog} rejected by the verifier", -ret)
                lines = verifier_log.rstrip().splitlines()
                if len(verifier_log) >= log_size - 1:  # the kernel kept the log's end only
                    lines = ["(verifier log over log_size; its end follows)", *lines[1:]]
                tail = "\n".join(lines[-VERIFIER_LOG_LINES:])
                raise BpfError(f"{error}\n{tail}")
            raise _with_libbpf_messages(_errno_error(what, -ret))
        return obj

    def _handle(self) -> int:
        if self._obj is None:
            raise BpfError(f"bpf object {self.path} is closed")
        return self._obj

    def _programs(self) -> list[int]:
        progs, prog = [], None
        while True:
            prog = self._lib.bpf_object__next_program(self._handle(), prog)
            if not prog:
                return progs
            progs.append(prog)

    def program_names(self) -> list[str]:
        """Names of the object's programs (the C function names)."""
        return [self._lib.bpf_program__name(p).decode() for p in self._programs()]

    def program_fd(self, name: str) -> int:
        """The fd of the loaded program called name."""
        prog = self._lib.bpf_object__find_program_by_name(self._handle(), name.encode())
        if not prog:
            raise BpfError(f"{self.path}: no program {name!r} (has {self.program_names()})")
        return _call(f"program {name}: fd", self._lib.bpf_program__fd, prog)

    def map_names(self) -> list[str]:
        """Names of the object's maps, internal ones (.bss, .data, .rodata) included."""
        names, m = [], None
        while True:
            m = self._lib.bpf_object__next_map(self._handle(), m)
            if not m:
                return names
            names.append(self._lib.bpf_map__name(m).decode())

    def map(self, name: str) -> BpfMap:
        """The map called name."""
        if name in self._maps:
            return self._maps[name]
        lib = self._lib
        m = lib.bpf_object__find_map_by_name(self._handle(), name.encode())
        if not m:
            raise BpfError(f"{self.path}: no map {name!r} (has {self.map_names()})")
        bpf_map = BpfMap(
            name=name,
            fd=_call(f"map {name}: fd", lib.bpf_map__fd, m),
            type=lib.bpf_map__type(m),
            key_size=lib.bpf_map__key_size(m),
            value_size=lib.bpf_map__value_size(m),
            max_entries=lib.bpf_map__max_entries(m),
        )
        self._maps[name] = bpf_map
        return bpf_map

    def prog_info(self, name: str) -> dict[str, int]:
        """The loaded program's id, xlated_insns, jited_bytes and verified_insns."""
        fd = self.program_fd(name)
        info = BpfProgInfo()
        size = ctypes.c_uint32(ctypes.sizeof(info))
        _call(
            f"program {name}: bpf_obj_get_info_by_fd",
            self._lib.bpf_obj_get_info_by_fd,
            fd,
            ctypes.byref(info),
            ctypes.byref(size),
        )
        return {
            "id": info.id,
            "xlated_insns": info.xlated_prog_len // 8,
            "jited_bytes": info.jited_prog_len,
            "verified_insns": info.verified_insns,
        }

    def close(self) -> None:
        """Unload the object (its programs and maps go with their last fd). Idempotent."""
        if self._obj is not None:
            self._lib.bpf_object__close(self._obj)
            self._obj = None
            self._maps.clear()

    def __enter__(self) -> BpfObject:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass


def _with_libbpf_messages(error: BpfError) -> BpfError:
    if not _libbpf_messages:
        return error
    return BpfError(f"{error}\nlibbpf said:\n" + "\n".join(_libbpf_messages))


# --- BPF_PROG_TEST_RUN --------------------------------------------------------------------------


@dataclass(frozen=True)
class TestRunResult:
    """What one BPF_PROG_TEST_RUN returned: XDP action, output frame and metadata, time."""

    __test__ = False  # not a pytest test class

    retval: int
    data: bytes
    meta: bytes
    duration_ns: int


def test_run(
    prog_fd: int,
    data: bytes,
    meta: bytes = b"",
    repeat: int = 1,
    *,
    live: bool = False,
    batch_size: int = 0,
    flags: int = 0,
    ingress_ifindex: int = 0,
) -> TestRunResult:
    """Run an XDP program on meta + data with BPF_PROG_TEST_RUN.

    live=True sets BPF_F_TEST_XDP_LIVE_FRAMES: the frames really go where the program sends
    them (XDP_TX / XDP_REDIRECT, XDP_PASS up the stack), and no output frame comes back.
    ``flags`` are further BPF_F_TEST_* flags, OR-ed in. ``ingress_ifindex`` is the context's
    receiving interface (0: none); the kernel resolves it in the caller's network namespace,
    and live frames then arrive on that interface's queue 0.
    """
    lib = _load_library()
    if len(meta) % 4 or len(meta) > XDP_META_MAX:
        raise BpfError(f"test_run: metadata is {len(meta)} bytes; needs a multiple of 4, <= 32")
    if repeat < 1:
        raise BpfError(f"test_run: repeat is {repeat}, needs >= 1")
    frame = ctypes.create_string_buffer(bytes(meta) + bytes(data), max(len(meta) + len(data), 1))
    ctx_in = XdpMd(data=len(meta), data_end=len(meta) + len(data),
                   ingress_ifindex=ingress_ifindex)
    ctx_out = XdpMd()
    # room for what the program may add (a frame grows by at most a page of tailroom)
    out_size = max(TEST_RUN_DATA_OUT, len(meta) + len(data) + 4096)
    out = ctypes.create_string_buffer(out_size)
    opts = BpfTestRunOpts(
        sz=ctypes.sizeof(BpfTestRunOpts),
        data_in=ctypes.cast(frame, ctypes.c_void_p),
        data_size_in=len(meta) + len(data),
        ctx_in=ctypes.cast(ctypes.pointer(ctx_in), ctypes.c_void_p),
        ctx_size_in=ctypes.sizeof(XdpMd),
        repeat=repeat,
        flags=flags,
    )
    if live:
        opts.flags |= BPF_F_TEST_XDP_LIVE_FRAMES
        opts.batch_size = batch_size
    else:
        if batch_size:
            raise BpfError("test_run: batch_size needs live=True")
        opts.data_out = ctypes.cast(out, ctypes.c_void_p)
        opts.data_size_out = out_size
        opts.ctx_out = ctypes.cast(ctypes.pointer(ctx_out), ctypes.c_void_p)
        opts.ctx_size_out = ctypes.sizeof(XdpMd)
    ret = lib.bpf_prog_test_run_opts(prog_fd, ctypes.byref(opts))
    if ret < 0:
        if ret == -errno.ENOSPC:
            raise _errno_error(f"test_run: output frame over {out_size} bytes", -ret)
        raise _errno_error(f"test_run (prog fd {prog_fd}, {len(data)}-byte frame)", -ret)
    if live:
        return TestRunResult(opts.retval, b"", b"", opts.duration)
    size = min(opts.data_size_out, out_size)
    raw = out.raw[:size]
    meta_len = min(ctx_out.data, size)
    return TestRunResult(opts.retval, raw[meta_len:], raw[:meta_len], opts.duration)


test_run.__test__ = False  # type: ignore[attr-defined]  # not a pytest test when imported


def prog_get_fd_by_id(prog_id: int) -> int:
    """A new fd of the loaded program with id ``prog_id`` (e.g. the one attached to an
    interface, ``xdp_query_id``); the caller closes it with ``os.close``."""
    lib = _load_library()
    return _call(f"bpf_prog_get_fd_by_id ({prog_id})", lib.bpf_prog_get_fd_by_id, prog_id)


# --- XDP attachment -------------------------------------------------------------------------------


def _mode_flags(mode: str) -> int:
    try:
        return _XDP_MODES[mode]
    except KeyError:
        raise BpfError(f"XDP mode {mode!r}: use one of {sorted(_XDP_MODES)}") from None


def xdp_attach(
    ifindex: int, prog_fd: int, mode: str = "native", old_prog_fd: int | None = None
) -> None:
    """Attach prog_fd to ifindex; with old_prog_fd, only if that program is the one attached."""
    lib = _load_library()
    flags = _mode_flags(mode)
    opts = BpfXdpAttachOpts(sz=ctypes.sizeof(BpfXdpAttachOpts))
    if old_prog_fd is not None:
        flags |= XDP_FLAGS_REPLACE
        opts.old_prog_fd = old_prog_fd
    _call(
        f"bpf_xdp_attach (ifindex {ifindex}, {mode})",
        lib.bpf_xdp_attach,
        ifindex,
        prog_fd,
        flags,
        ctypes.byref(opts),
    )


def xdp_detach(ifindex: int, mode: str = "native") -> None:
    """Detach whatever XDP program is attached to ifindex in mode."""
    lib = _load_library()
    _call(
        f"bpf_xdp_detach (ifindex {ifindex}, {mode})",
        lib.bpf_xdp_detach,
        ifindex,
        _mode_flags(mode),
        None,
    )


def xdp_query_id(ifindex: int, mode: str = "native") -> int:
    """The id of the XDP program attached to ifindex in mode, 0 when none."""
    lib = _load_library()
    prog_id = ctypes.c_uint32(0)
    _call(
        f"bpf_xdp_query_id (ifindex {ifindex}, {mode})",
        lib.bpf_xdp_query_id,
        ifindex,
        _mode_flags(mode),
        ctypes.byref(prog_id),
    )
    return prog_id.value


# --- ring buffers ---------------------------------------------------------------------------------


class RingBuffer:
    """Reads a BPF_MAP_TYPE_RINGBUF map; each record goes to callback as bytes."""

    def __init__(self, map_: BpfMap, callback: Callable[[bytes], None]) -> None:
        self._lib = _load_library()
        if map_.type != BPF_MAP_TYPE_RINGBUF:
            raise BpfError(f"map {map_.name} (type {map_.type}) is not a ring buffer")
        self.map = map_
        self._callback = callback

        def on_sample(_ctx: int | None, data: int | None, size: int) -> int:
            try:
                callback(ctypes.string_at(data, size) if size else b"")
            except Exception:
                log.exception("ring buffer %s: callback failed", map_.name)
            return 0

        self._sample_cb = _SAMPLE_FN(on_sample)  # kept alive as long as the ring buffer
        rb = self._lib.ring_buffer__new(map_.fd, self._sample_cb, None, None)
        if not rb:
            raise _errno_error(f"ring_buffer__new (map {map_.name})", ctypes.get_errno())
        self._rb: int | None = rb

    def _handle(self) -> int:
        if self._rb is None:
            raise BpfError(f"ring buffer {self.map.name} is closed")
        return self._rb

    def poll(self, timeout_ms: int) -> int:
        """Wait up to timeout_ms for records and deliver them; the number delivered."""
        ret = self._lib.ring_buffer__poll(self._handle(), timeout_ms)
        if ret == -errno.EINTR:
            return 0
        if ret < 0:
            raise _errno_error(f"ring buffer {self.map.name}: poll", -ret)
        return int(ret)

    def consume(self) -> int:
        """Deliver every record available now, without waiting; the number delivered."""
        return _call(
            f"ring buffer {self.map.name}: consume", self._lib.ring_buffer__consume, self._handle()
        )

    def epoll_fd(self) -> int:
        """An epoll fd that is readable when records are waiting."""
        return _call(
            f"ring buffer {self.map.name}: epoll_fd",
            self._lib.ring_buffer__epoll_fd,
            self._handle(),
        )

    def close(self) -> None:
        """Free the ring buffer. Idempotent."""
        if self._rb is not None:
            self._lib.ring_buffer__free(self._rb)
            self._rb = None

    def __enter__(self) -> RingBuffer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass
