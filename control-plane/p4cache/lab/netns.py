"""Network namespaces and veth pairs, through iproute2 (needs root / CAP_NET_ADMIN).

Every name the lab creates starts with ``p4c`` and carries the creating process's pid, so a lab
left behind by a killed run is found and removed by the next one (``remove_stale``).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path

PREFIX = "p4c"
RUN_DIR = Path("/run/p4cache-lab")


class NetnsError(RuntimeError):
    pass


def run(argv: Sequence[str], ns: str | None = None, check: bool = True) -> str:
    """Run a command (inside ``ns`` when given) and return its stdout."""
    full = ["ip", "netns", "exec", ns, *argv] if ns else list(argv)
    res = subprocess.run(full, capture_output=True, text=True, check=False)
    if check and res.returncode != 0:
        raise NetnsError(f"{' '.join(full)} failed ({res.returncode}): {res.stderr.strip()}")
    return res.stdout


def exec_prefix(ns: str | None) -> list[str]:
    return ["ip", "netns", "exec", ns] if ns else []


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive flock on ``path`` (created with its folder), released on exit or when the
    holder dies."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def mgmt_lock() -> contextlib.AbstractContextManager[None]:
    """Held while a lab picks and assigns its management subnets: two labs starting at once
    must not pick the same 10.250.x.0/24 (the second route would steal the first's agents)."""
    return file_lock(RUN_DIR / "mgmt.lock")


def free_mgmt_octet(base: str = "10.250") -> int:
    """The lowest x in 1..254 such that no interface of the root namespace has an address
    in ``base``.x.0/24 (call under ``mgmt_lock`` and assign before releasing it)."""
    used = set(re.findall(re.escape(base) + r"\.(\d+)\.\d+/", run(["ip", "-4", "-o", "addr"],
                                                                     check=False)))
    for x in range(1, 255):
        if str(x) not in used:
            return x
    raise NetnsError(f"no free management subnet left in {base}.0.0/16")


def add_namespace(name: str) -> None:
    run(["ip", "netns", "add", name])
    run(["ip", "link", "set", "lo", "up"], ns=name)


def delete_namespace(name: str) -> None:
    run(["ip", "netns", "delete", name], check=False)


def namespaces() -> list[str]:
    out = run(["ip", "netns", "list"], check=False)
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def quiet_interface(ifname: str, ns: str | None = None) -> None:
    """No IPv6 chatter and no checksum offload: frames leave a veth complete, as on a wire."""
    run(["sysctl", "-qw", f"net.ipv6.conf.{ifname}.disable_ipv6=1"], ns=ns, check=False)
    run(["ethtool", "-K", ifname, "tx", "off", "rx", "off", "sg", "off", "tso", "off",
         "gso", "off", "gro", "off"], ns=ns, check=False)


def add_veth(outside: str, inside: str, ns: str | None, inside_name: str) -> None:
    """A veth pair: ``outside`` stays in the root namespace, ``inside`` moves into ``ns``
    and is renamed ``inside_name`` there."""
    run(["ip", "link", "add", outside, "type", "veth", "peer", "name", inside])
    if ns:
        run(["ip", "link", "set", inside, "netns", ns])
        run(["ip", "link", "set", inside, "name", inside_name], ns=ns)
    for ifname, where in ((outside, None), (inside_name if ns else inside, ns)):
        quiet_interface(ifname, where)
        run(["ip", "link", "set", ifname, "up"], ns=where)


def delete_link(name: str) -> None:
    run(["ip", "link", "delete", name], check=False)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


_OWNED = re.compile(rf"^{PREFIX}(\d+)")


def record_process(tag: str, pid: int, argv0: str) -> None:
    """Remember a process the lab started, for ``remove_stale`` after a crash."""
    RUN_DIR.mkdir(parents=True, exist_ok=True)
    with open(RUN_DIR / f"{tag}.pids", "a") as fh:
        fh.write(f"{pid} {Path(argv0).name}\n")


def _cmd_name(pid: int) -> str:
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return ""
    return " ".join(Path(a.decode(errors="replace")).name for a in argv if a)


def kill_recorded(tag: str) -> list[int]:
    """Kill what a lab recorded (process groups: each was started in its own session)."""
    path = RUN_DIR / f"{tag}.pids"
    killed = []
    if path.exists():
        for line in path.read_text().splitlines():
            pid_s, _, name = line.partition(" ")
            pid = int(pid_s)
            if name and name in _cmd_name(pid).split():
                try:
                    os.killpg(pid, 9)
                    killed.append(pid)
                except (ProcessLookupError, PermissionError):
                    pass
        path.unlink(missing_ok=True)
    return killed


def remove_stale() -> list[str]:
    """Delete the processes, namespaces and root links of labs whose creating process is gone."""
    removed = []
    if RUN_DIR.exists():
        for f in RUN_DIR.glob(f"{PREFIX}*.pids"):
            m = _OWNED.match(f.stem)
            if m and not _pid_alive(int(m.group(1))):
                removed += [f"pid {p}" for p in kill_recorded(f.stem)]
    for ns in namespaces():
        m = _OWNED.match(ns)
        if m and not _pid_alive(int(m.group(1))):
            delete_namespace(ns)
            removed.append(ns)
    out = run(["ip", "-o", "link", "show"], check=False)
    for line in out.splitlines():
        name = line.split(":")[1].strip().split("@")[0]
        m = _OWNED.match(name)
        if m and not _pid_alive(int(m.group(1))):
            delete_link(name)
            removed.append(name)
    return removed
