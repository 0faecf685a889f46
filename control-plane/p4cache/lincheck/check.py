"""Run p4cache-lincheck (tools/lincheck) on a history and parse its verdict."""

from __future__ import annotations

import json
import subprocess
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from p4cache import paths
from p4cache.lincheck.history import Op, write_history

BINARY = "p4cache-lincheck"
ENV_BINARY = "P4CACHE_LINCHECK"  # an explicit path to the binary wins
# `make lincheck`'s output in the source checkout (None when p4cache is installed, not checked out)
BUILT = paths.built_tool(BINARY)


class LincheckError(RuntimeError):
    """The checker could not give a verdict: bad input, bad arguments, I/O, or a crash."""


class LincheckNotBuilt(LincheckError, FileNotFoundError):
    """The binary is missing."""


def find_binary() -> Path:
    """$P4CACHE_LINCHECK, else build/bin/p4cache-lincheck of this checkout, else PATH."""
    return paths.find_tool(BINARY, ENV_BINARY, "lincheck", BUILT, LincheckNotBuilt)


@dataclass(frozen=True)
class KeyResult:
    result: str  # "ok" | "illegal" | "timeout"
    operations: int
    ms: int


@dataclass(frozen=True)
class Verdict:
    """ok: linearizable. timed_out: no answer for those keys (ok is then False, exit 2).
    violations: [{"key", "ops" (could not be linearized next), "context", "state", "viz"?}]."""

    ok: bool
    keys: int
    operations: int
    dropped: int
    ms: int
    per_key: dict[str, KeyResult]
    violations: list[dict[str, Any]]
    timed_out: list[str]
    exit_code: int
    error: str | None = None  # "timeout" when the checker ran out of time
    message: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def failing_keys(self) -> list[str]:
        return [v["key"] for v in self.violations]


def _parse(out: str, code: int) -> Verdict:
    d = json.loads(out)
    return Verdict(
        ok=bool(d["ok"]),
        keys=d["keys"],
        operations=d["operations"],
        dropped=d.get("dropped", 0),
        ms=d.get("ms", 0),
        per_key={
            k: KeyResult(v["result"], v["operations"], v["ms"]) for k, v in d["per_key"].items()
        },
        violations=d["violations"],
        timed_out=d["timed_out"],
        exit_code=code,
        error=d.get("error"),
        message=d.get("message"),
        raw=d,
    )


def check_history(
    path: str | Path,
    *,
    timeout_s: float = 300.0,
    slack_s: float = 0.5,
    viz_dir: str | Path | None = None,
    jobs: int | None = None,
    binary: str | Path | None = None,
) -> Verdict:
    """Check a JSON-lines history file (timeout_s 0 = no limit). Raises LincheckError on bad
    input (exit 2, error "bad_input"/"usage"/"io") or a crash; a timeout is a Verdict with
    error "timeout"."""
    exe = Path(binary) if binary else find_binary()
    ns = 1_000_000_000
    args = [str(exe), f"--timeout={round(timeout_s * ns)}ns", f"--slack={round(slack_s * ns)}ns"]
    if viz_dir is not None:
        args.append(f"--viz={viz_dir}")
    if jobs is not None:
        args.append(f"--jobs={jobs}")
    args.append(str(path))
    proc = subprocess.run(args, capture_output=True, text=True, check=False)
    if proc.returncode not in (0, 1, 2):
        raise LincheckError(f"{exe} exited {proc.returncode}: {proc.stderr.strip()}")
    try:
        verdict = _parse(proc.stdout, proc.returncode)
    except (ValueError, KeyError) as e:
        raise LincheckError(f"{exe}: unreadable verdict ({e}): {proc.stderr.strip()}") from e
    if proc.returncode == 2 and verdict.error != "timeout":
        raise LincheckError(f"{exe}: {verdict.error}: {verdict.message}")
    return verdict


def check_ops(ops: Iterable[Op], **kwargs: Any) -> Verdict:
    """Check a history given as Op records (written to a temporary file)."""
    with tempfile.TemporaryDirectory(prefix="lincheck-") as tmp:
        path = Path(tmp) / "history.jsonl"
        write_history(ops, path)
        return check_history(path, **kwargs)
