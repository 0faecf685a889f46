"""Processes of a running system: started detached, found again by pid and name, killed by
process group."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from softnic import netns


def spawn(argv: list[str], log: Path, ns: str | None = None) -> subprocess.Popen:
    """Start ``argv`` (inside namespace ``ns`` when given) in its own session, output appended
    to ``log``; its pid is also its process group."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as fh:
        return subprocess.Popen([*netns.exec_prefix(ns), *argv], stdout=fh,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)


def cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [a.decode(errors="replace") for a in raw.split(b"\0") if a]


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


def alive(pid: int, name: str | None = None) -> bool:
    """``pid`` runs (not a zombie) and, when ``name`` is given, has it as a word of its command
    line (``softnic``, ``memcached``, ...: guards against a reused pid)."""
    if pid <= 0 or _zombie(pid):
        return False
    if name is None:
        return True
    words = {Path(a).name for a in cmdline(pid)}
    return name in words


def kill_group(pid: int, timeout: float = 3.0) -> None:
    """SIGTERM the process group ``pid`` leads, SIGKILL whatever is left after ``timeout``."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pid, sig)
        except (ProcessLookupError, PermissionError):
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                return
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not alive(pid):
                _reap(pid)
                return
            time.sleep(0.05)
    _reap(pid)


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def find(pred: Callable[[list[str]], bool]) -> list[int]:
    """Pids whose command line satisfies ``pred(argv) -> bool``."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit() and int(d.name) != os.getpid():
            argv = cmdline(int(d.name))
            if argv and pred(argv):
                out.append(int(d.name))
    return out
