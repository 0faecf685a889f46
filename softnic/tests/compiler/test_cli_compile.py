"""``softnic compile`` command line: options, error reporting, exit codes, no partial output.

These tests do not need the compiler proper: they exercise what the driver decides before and
around a compile (see test_cli_compile_corpus.py for whole programs). The installed
``softnic`` entry point is run as a subprocess where the process boundary matters (exit code,
stdout/stderr); the rest calls ``main`` in-process to stay fast on a shared machine.
"""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from softnic.cli import main as softnic_main
from softnic.compiler import driver
from softnic.compiler.diagnostics import CompileError
from softnic.compiler.ir.ast import Loc
from softnic.tests.compiler.p4progs import program

SOFTNIC = shutil.which("softnic", path=str(Path(sys.executable).parent))


def run_compile(*args: str) -> tuple[int, str]:
    err = io.StringIO()
    code = driver.main(list(args), stderr=err)
    return code, err.getvalue()


def test_entry_point_is_installed() -> None:
    assert SOFTNIC is not None, "the softnic console script is not installed in the venv"


def test_top_level_help_and_version() -> None:
    out = subprocess.run([SOFTNIC, "--help"], capture_output=True, text=True, check=False)
    assert out.returncode == 0
    assert "compile" in out.stdout and "run" in out.stdout
    out = subprocess.run([SOFTNIC, "--version"], capture_output=True, text=True, check=False)
    assert out.returncode == 0 and out.stdout.startswith("softnic ")


def test_run_subcommand_is_dispatched() -> None:
    """``softnic run`` reaches softnic.runtime.cli_run (its own parser answers --help)."""
    out = subprocess.run([SOFTNIC, "run", "--help"], capture_output=True, text=True, check=False)
    assert out.returncode == 0
    assert "usage: softnic run" in out.stdout and "--grpc-server-addr" in out.stdout


def test_unknown_subcommand_and_no_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    assert softnic_main(["frobnicate"]) == 1
    assert "unknown command 'frobnicate'" in capsys.readouterr().err
    assert softnic_main([]) == 1
    assert "usage: softnic" in capsys.readouterr().err


def test_compile_help_lists_p4c_options() -> None:
    out = subprocess.run(
        [SOFTNIC, "compile", "--help"], capture_output=True, text=True, check=False
    )
    assert out.returncode == 0
    for option in ("-o", "--p4runtime-files", "-I", "-D", "--arch", "--std"):
        assert option in out.stdout


def test_compile_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert softnic_main(["compile", "--version"]) == 0
    assert "p4c-bm2-ss" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (["--arch", "psa"], "--arch psa: unsupported architecture"),
        (["--std", "p4-14"], "--std p4-14: unsupported language standard"),
        (["--p4v", "14"], "--p4v 14: unsupported language version"),
        (["--target", "tofino"], "--target tofino: unsupported target"),
        (["-D", "1BAD=2"], "-D 1BAD=2: '1BAD' is not a valid macro name"),
        (["--bogus-option"], "unrecognized arguments: --bogus-option"),
    ],
)
def test_bad_options_exit_1_with_clear_error(
    tmp_path: Path, option: list[str], message: str
) -> None:
    src = tmp_path / "prog.p4"
    src.write_text("// never compiled: the options are rejected first\n")
    out = tmp_path / "out.json"
    code, err = run_compile(str(src), "-o", str(out), *option)
    assert code == 1
    assert f"softnic compile: error: {message}" in err
    assert not out.exists()


def test_accepted_spellings_of_language_options() -> None:
    args = driver.build_parser().parse_args(
        ["p.p4", "--arch", "v1model", "--std", "p4_16", "--p4v", "16", "--target", "bmv2"]
    )
    driver.check_language(args)  # no exception


def test_missing_source_file(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    code, err = run_compile(str(tmp_path / "nope.p4"), "-o", str(out))
    assert code == 1
    assert err.strip() == f"{tmp_path / 'nope.p4'}: error: No such file or directory"
    assert not out.exists()


def test_output_directory_must_exist(tmp_path: Path) -> None:
    src = tmp_path / "prog.p4"
    src.write_text("\n")
    code, err = run_compile(str(src), "-o", str(tmp_path / "no" / "dir" / "out.json"))
    assert code == 1 and "directory does not exist" in err


def test_output_must_not_be_a_directory(tmp_path: Path) -> None:
    src = tmp_path / "prog.p4"
    # a program that compiles: p4c-bm2-ss reads the P4Runtime file names after its front end
    src.write_text(program("apply { sm.egress_spec = 1; }"))
    (tmp_path / "out.txt").mkdir()
    code, err = run_compile(
        str(src), "-o", str(tmp_path / "first.json"), "--p4runtime-files", str(tmp_path / "out.txt")
    )
    assert code == 1 and "is a directory" in err
    assert not (tmp_path / "first.json").exists()


def test_exit_code_through_process_boundary(tmp_path: Path) -> None:
    out = subprocess.run(
        [SOFTNIC, "compile", str(tmp_path / "x.p4"), "--arch", "tna"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 1
    assert out.stdout == ""
    assert "unsupported architecture" in out.stderr


def test_user_macros() -> None:
    macros = driver.parse_defines(["CACHE_SLOTS=4096", "DEBUG", "EMPTY=", "EXPR=(1+2)"])
    assert macros == {"CACHE_SLOTS": "4096", "DEBUG": "1", "EMPTY": "", "EXPR": "(1+2)"}


def test_p4runtime_outputs_planned_by_suffix_and_legacy_format(tmp_path: Path) -> None:
    args = driver.build_parser().parse_args(
        [
            "p.p4",
            "-o",
            str(tmp_path / "p.json"),
            "--p4runtime-files",
            f"{tmp_path / 'a.txt'},{tmp_path / 'c.json'},{tmp_path / 'd.bin'}",
            "--p4runtime-file",
            str(tmp_path / "legacy.p4info"),
            "--p4runtime-format",
            "text",
        ]
    )
    planned = [(o.path.name, o.fmt) for o in driver.planned_outputs(args)]
    assert planned == [("p.json", "bmv2-json"), ("legacy.p4info", "text")]
    assert [(o.path.name, o.fmt) for o in driver.p4runtime_outputs(args)] == [
        ("a.txt", "text"),
        ("c.json", "json"),
        ("d.bin", "binary"),
    ]


def test_render_error_shows_source_line_and_caret(tmp_path: Path) -> None:
    src = tmp_path / "prog.p4"
    src.write_text("control C() {\n\tapply { foo(); }\n}\n")
    err = CompileError(Loc(str(src), 2, 10), "foo: declaration not found")
    assert driver.render_error(err).splitlines() == [
        f"{src}:2:10: error: foo: declaration not found",
        "\tapply { foo(); }",
        "\t        ^",
    ]


def test_render_error_without_readable_source() -> None:
    err = CompileError(Loc("/nonexistent/x.p4", 3, 1), "boom")
    assert driver.render_error(err) == "/nonexistent/x.p4:3:1: error: boom"
    assert driver.render_error(CompileError(None, "no location")) == "error: no location"
