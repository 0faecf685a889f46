"""Where p4cache's files are: the one place that knows the repository's and the wheel's layouts.

Data files (the P4 program ``p4src/`` with its includes, the default topology
``topo/topology.json``) live under a *data root* laid out as the repository is. It is, in order:

1. ``$P4CACHE_DATA_DIR``, when set (a directory holding ``p4src/`` and ``topo/``);
2. the installed package data, ``p4cache/data/`` next to this file (a wheel or ``pip install ./``:
   setup.py maps the repository's ``p4src/`` and ``topo/`` there);
3. the source checkout this module runs from (an editable install, or ``PYTHONPATH``).

Build output (compiled programs) goes to ``$P4CACHE_BUILD_DIR``, else the checkout's ``build/``,
else ``$XDG_CACHE_HOME/p4cache/build`` (``~/.cache/p4cache/build``). Benchmark results and plots go
to the checkout's ``bench/results/`` and ``docs/``, else to ``./p4cache-bench/``.

Only the standard library is imported here: the host agent's install has nothing else.
"""

from __future__ import annotations

import functools
import os
import shutil
from pathlib import Path

DATA_ENV = "P4CACHE_DATA_DIR"
BUILD_ENV = "P4CACHE_BUILD_DIR"
_HERE = Path(__file__).resolve()
_PACKAGE_DATA = _HERE.parent / "data"
_MAIN_P4 = Path("p4src", "v1model", "p4cache.p4")


@functools.cache
def checkout() -> Path | None:
    """The repository this module runs from, or None when it is installed (wheel, site-packages).

    A directory is the checkout when its ``control-plane/p4cache/paths.py`` is this very file, so a
    virtualenv inside a checkout does not make an installed copy think it runs from the sources.
    """
    for d in _HERE.parents:
        mine = d / "control-plane" / "p4cache" / _HERE.name
        if mine.is_file() and mine.resolve() == _HERE:
            return d
    return None


def data_root() -> Path:
    """The directory holding ``p4src/`` and ``topo/`` (see the module's docstring for the order)."""
    explicit = os.environ.get(DATA_ENV)
    if explicit:
        root = Path(explicit)
        if not (root / _MAIN_P4).is_file():
            raise FileNotFoundError(f"${DATA_ENV}={explicit} has no {_MAIN_P4}")
        return root
    if (_PACKAGE_DATA / _MAIN_P4).is_file():
        return _PACKAGE_DATA
    src = checkout()
    if src is not None and (src / _MAIN_P4).is_file():
        return src
    raise FileNotFoundError(
        f"p4cache's data files are missing: no {_PACKAGE_DATA / _MAIN_P4} (installed package) "
        f"and no source checkout; reinstall p4cache or set ${DATA_ENV}")


def p4src() -> Path:
    """The cache's P4 sources (``p4src/``: ``shared/`` and ``v1model/``)."""
    return data_root() / "p4src"


def main_p4() -> Path:
    """The program's top file, ``p4src/v1model/p4cache.p4``."""
    return data_root() / _MAIN_P4


def default_topology() -> Path:
    """``topo/topology.json``, the topology ``p4cache up`` uses unless told otherwise."""
    return data_root() / "topo" / "topology.json"


def build_dir() -> Path:
    """Where compiled programs are kept (``p4cache.program``, the controller's own compiles)."""
    explicit = os.environ.get(BUILD_ENV)
    if explicit:
        return Path(explicit)
    src = checkout()
    if src is not None:
        return src / "build"
    cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(cache) / "p4cache" / "build"


def built_tool(name: str) -> Path | None:
    """Where ``make setup`` puts the Go tool ``name`` (``p4cache-lincheck``, ``p4cache-loadgen``)
    in the checkout, ``build/bin/<name>``; None when installed (``find_tool`` then looks on
    PATH)."""
    src = checkout()
    return None if src is None else src / "build" / "bin" / name


def find_tool(name: str, env: str, make_target: str, built: Path | None,
              missing: type[Exception]) -> Path:
    """``$env`` when set, else ``built`` (see ``built_tool``), else ``name`` on PATH; raises
    ``missing`` saying how to build it."""
    explicit = os.environ.get(env)
    if explicit:
        if not os.access(explicit, os.X_OK):
            raise missing(f"${env}={explicit} is not an executable")
        return Path(explicit)
    if built is not None and os.access(built, os.X_OK):
        return built
    found = shutil.which(name)
    if found:
        return Path(found)
    if built is None:
        raise missing(f"{name} not found on PATH (nor ${env}): build it from tools/ in a "
                      f"p4cache checkout (`make {make_target}`)")
    raise missing(f"{name} not found in {built.parent} nor on PATH: run `make setup` "
                  f"(or `make {make_target}`) in {checkout()}")


def bench_results() -> Path:
    """Default directory for the benchmarks' JSON results."""
    src = checkout()
    return Path("p4cache-bench") if src is None else src / "bench" / "results"


def bench_plots() -> Path:
    """Default directory for the benchmarks' plots (the docs' pictures in a checkout)."""
    src = checkout()
    return Path("p4cache-bench") if src is None else src / "docs"
