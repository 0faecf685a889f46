"""The distribution as a user gets it (docs/packaging.md).

A wheel is built from a copy of the tracked sources (so setuptools' own build/ never lands in the
repository's build/, which holds compiled P4 programs), with the dev venv's setuptools and no
network. Then:
- the wheel holds the P4 program with its includes, the default topology and softnic's includes;
- installed with no extra into a fresh virtualenv (``--no-index``: the base install must need
  nothing), it is the host agent's install: ``p4cache-agent --help`` works, every module of
  p4cache_agent imports, and none of the heavy packages is installed or loaded;
- the other commands say which extra they need, in one line;
- installed (not editable) beside the dev venv's third-party packages, p4cache.program finds its
  P4 sources in the package data and compiles them with the installed softnic.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from p4cache.paths import checkout

REPO = checkout()
HEAVY = ("mininet", "matplotlib", "ptf", "p4runtime_sh", "grpc", "scapy", "google", "p4", "rich")

pytestmark = pytest.mark.skipif(REPO is None or shutil.which("git") is None,
                                reason="needs the source checkout and git")


def _run(cmd: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=600,
                          **kw)  # type: ignore[call-overload]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    assert REPO is not None
    tmp = tmp_path_factory.mktemp("packaging")
    src = tmp / "src"
    listed = _run(["git", "-C", str(REPO), "ls-files", "-z"])
    assert listed.returncode == 0, listed.stderr
    for name in filter(None, listed.stdout.split("\0")):
        path = REPO / name
        if path.is_file():   # listed but deleted in the working tree: left out
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, src / name)
    built = _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                  "--no-index", "-w", str(tmp / "dist"), str(src)])
    assert built.returncode == 0, built.stdout + built.stderr
    (whl,) = (tmp / "dist").glob("p4cache-*.whl")
    return whl


@pytest.fixture(scope="module")
def agent_venv(wheel: Path) -> Path:
    venv = wheel.parent.parent / "venv"
    made = _run([sys.executable, "-m", "venv", str(venv)])
    assert made.returncode == 0, made.stderr
    inst = _run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-index",
                 str(wheel)])
    assert inst.returncode == 0, inst.stdout + inst.stderr
    return venv


def test_wheel_ships_the_p4_program_and_the_topology(wheel: Path) -> None:
    assert REPO is not None
    names = set(zipfile.ZipFile(wheel).namelist())
    p4src = sorted(p.relative_to(REPO).as_posix() for p in (REPO / "p4src").rglob("*.p4"))
    assert p4src and "p4src/v1model/include/control/slot_store.p4" in p4src
    missing = [p for p in p4src if f"p4cache/data/{p}" not in names]
    assert not missing, missing
    assert "p4cache/data/topo/topology.json" in names
    assert {"softnic/p4include/core.p4", "softnic/p4include/v1model.p4",
            "p4cache_bench/p4/l3.p4", "p4cache_bench/p4/stateful.p4"} <= names
    # the tests are not shipped; the four packages are
    assert not [n for n in names if "/tests/" in n or n.startswith("tests/")]
    tops = {n.split("/")[0] for n in names if not n.endswith(".dist-info") and "/" in n}
    assert {"softnic", "p4cache", "p4cache_agent", "p4cache_bench"} <= tops
    assert not tops & {"bench", "p4src", "topo", "control-plane", "host"}


def test_base_install_is_the_agent_and_nothing_else(agent_venv: Path) -> None:
    py = str(agent_venv / "bin" / "python")
    listed = _run([py, "-m", "pip", "list", "--format=json"])
    assert listed.returncode == 0, listed.stderr
    installed = {d["name"].lower() for d in json.loads(listed.stdout)}
    assert installed <= {"p4cache", "pip", "setuptools"}, installed

    helped = _run([str(agent_venv / "bin" / "p4cache-agent"), "--help"], cwd=agent_venv)
    assert helped.returncode == 0, helped.stderr
    assert "--switch" in helped.stdout

    # every module of the agent, its CLI parser, and what they pull in
    probe = (
        "import importlib, json, pkgutil, sys\n"
        "import p4cache_agent\n"
        "for m in pkgutil.walk_packages(p4cache_agent.__path__, 'p4cache_agent.'):\n"
        "    importlib.import_module(m.name)\n"
        "from p4cache_agent import cli\n"
        "cli.parser()\n"
        "print(json.dumps({'modules': sorted(sys.modules),\n"
        "                  'agent': p4cache_agent.__file__}))\n"
    )
    ran = _run([py, "-c", probe], cwd=agent_venv)
    assert ran.returncode == 0, ran.stderr
    out = json.loads(ran.stdout)
    assert out["agent"].startswith(str(agent_venv)), out["agent"]
    loaded = {m.split(".")[0] for m in out["modules"]}
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))
    assert "p4cache_agent.gate.policy" in out["modules"]
    assert "p4cache.agent_protocol" in out["modules"] and "p4cache.dataplane" in out["modules"]


@pytest.mark.parametrize(("command", "args", "extra"), [
    ("p4cache-bench", ["dataplane", "--help"], "bench"),
    ("p4cache-controller", ["--help"], "controller"),
    ("p4cache", ["--help"], "lab"),
    ("softnic", ["compile", "--help"], "softnic"),
])
def test_a_missing_extra_is_named_in_one_line(agent_venv: Path, command: str, args: list[str],
                                              extra: str) -> None:
    res = _run([str(agent_venv / "bin" / command), *args], cwd=agent_venv)
    assert res.returncode == 1, res.stdout + res.stderr
    assert res.stderr.count("\n") == 1 and "Traceback" not in res.stderr, res.stderr
    assert res.stderr.startswith(f"{command} needs the [{extra}] extra"), res.stderr
    assert f"pip install 'p4cache[{extra}]'" in res.stderr


def test_installed_package_compiles_the_program(wheel: Path, tmp_path: Path) -> None:
    """Not editable: the wheel unpacked into a directory put first on PYTHONPATH, the dev venv's
    protobuf/p4runtime for softnic compile; no checkout anywhere on the path."""
    target = tmp_path / "site"
    inst = _run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                 "--target", str(target), str(wheel)])
    assert inst.returncode == 0, inst.stdout + inst.stderr
    probe = (
        "import json\n"
        "from pathlib import Path\n"
        "from p4cache import paths, program\n"
        "import softnic\n"
        "prog = program.build(out_dir=Path('out').resolve())\n"
        "print(json.dumps({'checkout': str(paths.checkout()), 'data': str(paths.data_root()),\n"
        "                  'softnic': softnic.__file__, 'json': str(prog.json_path),\n"
        "                  'topology': str(paths.default_topology())}))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(target)}
    env.pop("P4CACHE_DATA_DIR", None)
    ran = _run([sys.executable, "-c", probe], cwd=tmp_path, env=env)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    out = json.loads(ran.stdout)
    assert out["checkout"] == "None"
    assert out["data"] == str(target / "p4cache" / "data")
    assert out["softnic"].startswith(str(target))
    assert Path(out["topology"]).is_file()
    compiled = json.loads(Path(out["json"]).read_text())
    assert compiled["pipelines"], "an empty BMv2 JSON"
