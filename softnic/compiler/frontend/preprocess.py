"""Run the C preprocessor on a P4 source file, the way p4c does.

p4c hands every program to the system ``cpp`` (``#include``, ``#define``, ``#if``), so a drop-in
must too: programs rely on exactly that behaviour. softnic's own ``core.p4``/``v1model.p4``
(``softnic/p4include``) are always on the include path, after the user's ``-I`` directories.

cpp in ISO mode collapses runs of blanks inside a line, which would shift the columns of error
messages. We therefore run it with ``-C`` (keep comments) and, for every output line that is the
original line up to whitespace (no macro was expanded in it), put back the original line. Lines
changed by macro expansion keep cpp's text; their columns are then only approximate, as in p4c.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from importlib import resources
from pathlib import Path

from softnic.compiler.diagnostics import CompileError
from softnic.compiler.ir.ast import Loc

# softnic's core.p4 and v1model.p4: package data of ``softnic`` (pyproject.toml), found through
# the import system so an installed (non-editable) softnic finds them too.
P4INCLUDE_DIR = str(resources.files("softnic").joinpath("p4include"))

# Macros p4c-bm2-ss predefines; programs test them to pick target-specific code.
PREDEFINED: dict[str, str] = {
    "__TARGET_BMV2__": "1",
    "__p4c__": "1",
    "__p4c_major__": "1",
    "__p4c_minor__": "2",
    "__p4c_patchlevel__": "4",
    "__p4c_version__": '"1.2.4"',
}

_MARKER_RE = re.compile(r'^#\s*(\d+)\s+"((?:[^"\\]|\\.)*)"')
_CPP_DIAG_RE = re.compile(
    r"^(?P<file>[^:\n]+):(?P<line>\d+):(?:(?P<col>\d+):)?\s*(?:fatal )?error:\s*(?P<msg>.*)$"
)


def find_cpp() -> str:
    cpp = shutil.which("cpp")
    if cpp is None:
        raise CompileError(
            None,
            "the C preprocessor 'cpp' was not found on PATH; install it with: apt-get install cpp",
        )
    return cpp


def cpp_command(path: str, include_dirs: list[str], defines: dict[str, str | None]) -> list[str]:
    cmd = [find_cpp(), "-C", "-undef", "-nostdinc", "-x", "assembler-with-cpp"]
    for name, value in {**PREDEFINED, **defines}.items():
        cmd.append(f"-D{name}" if value is None else f"-D{name}={value}")
    for inc in [*include_dirs, P4INCLUDE_DIR]:
        cmd.append(f"-I{inc}")
    cmd.append(path)
    return cmd


def _diagnostic(stderr: str, path: str) -> CompileError:
    """Turn cpp's first error message into a CompileError with its file:line:col."""
    for line in stderr.splitlines():
        m = _CPP_DIAG_RE.match(line)
        if m:
            col = int(m.group("col")) if m.group("col") else 1
            return CompileError(Loc(m.group("file"), int(m.group("line")), col), m.group("msg"))
    msg = stderr.strip().splitlines()[0] if stderr.strip() else "C preprocessor failed"
    return CompileError(Loc(path, 1, 1), msg)


def _squash(s: str) -> str:
    return " ".join(s.split())


def restore_columns(output: str) -> str:
    """Replace cpp output lines by the original source lines they came from, when equal up to
    whitespace, so that token columns match the file the user wrote."""
    cache: dict[str, list[str] | None] = {}

    def source_lines(name: str) -> list[str] | None:
        if name not in cache:
            try:
                cache[name] = Path(name).read_text(errors="replace").splitlines()
            except OSError:
                cache[name] = None
        return cache[name]

    out: list[str] = []
    cur_file: str | None = None
    cur_line = 0
    for text in output.split("\n"):
        m = _MARKER_RE.match(text)
        if m:
            cur_file = m.group(2)
            cur_line = int(m.group(1))
            out.append(text)
            continue
        if cur_file is not None:
            lines = source_lines(cur_file)
            if lines is not None and 1 <= cur_line <= len(lines):
                orig = lines[cur_line - 1]
                same = _squash(orig) == _squash(text)
                if orig != text and same and not orig.lstrip().startswith("#"):
                    text = orig
        out.append(text)
        cur_line += 1
    return "\n".join(out)


def preprocess(
    path: str, include_dirs: list[str] | None = None, defines: dict[str, str | None] | None = None
) -> str:
    """Preprocessed text of ``path``, with ``# line "file"`` markers for the lexer."""
    if not os.path.isfile(path):
        raise CompileError(None, f"{path}: No such file or directory")
    cmd = cpp_command(path, include_dirs or [], defines or {})
    proc = subprocess.run(cmd, capture_output=True, check=False)
    if proc.returncode != 0:
        raise _diagnostic(proc.stderr.decode("utf-8", errors="replace"), path)
    return restore_columns(decode_output(proc.stdout, path))


def decode_output(data: bytes, path: str) -> str:
    """cpp's output as text. P4 source is UTF-8; a byte sequence that is not is reported at its
    place in the file that holds it (found through cpp's line markers), not as a crash."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    cur_file, cur_line = path, 1
    for raw in data.split(b"\n"):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            col = len(raw[: e.start].decode("utf-8", errors="replace")) + 1
            raise CompileError(
                Loc(cur_file, cur_line, col),
                f"invalid UTF-8 byte 0x{raw[e.start]:02x}: unexpected character",
            ) from None
        m = _MARKER_RE.match(text)
        if m:
            cur_file, cur_line = m.group(2), int(m.group(1))
        else:
            cur_line += 1
    raise CompileError(Loc(path, 1, 1), "invalid UTF-8 in source")  # not reached in practice
