"""Which packages the p4cache distribution holds, and from which folders (the rest of the
metadata, extras and package data are in pyproject.toml; docs/packaging.md says why).

Four top-level packages, each under its own source folder, and the data the installed code
reads at run time. ``p4src/`` (the P4 program) and ``topo/`` (the default topology) are not
Python packages; they ship inside p4cache as ``p4cache/data/p4src`` and ``p4cache/data/topo``,
laid out as in the repository, so p4cache.paths finds them the same way in a wheel and in a
checkout. pyproject's ``packages.find`` cannot map a folder to a package name it does not have,
hence this file.
"""

from __future__ import annotations

from pathlib import Path

from setuptools import find_namespace_packages, setup

# source folder -> the top-level package it holds
SOURCES = {
    ".": "softnic",
    "control-plane": "p4cache",
    "host": "p4cache_agent",
    "bench": "p4cache_bench",
}
# repository data folder -> the package it is installed as (files: package-data in pyproject)
DATA = {
    "p4src": "p4cache.data.p4src",
    "topo": "p4cache.data.topo",
}


def packages() -> dict[str, str]:
    """Every package of the distribution -> its folder."""
    found: dict[str, str] = {}
    for folder, top in SOURCES.items():
        for name in find_namespace_packages(folder, include=[top, f"{top}.*"],
                                            exclude=[f"{top}.tests", f"{top}.tests.*"]):
            if "__pycache__" not in name:
                found[name] = Path(folder, *name.split(".")).as_posix()
    found.update({package: folder for folder, package in DATA.items()})
    return found


PACKAGES = packages()
# setuptools' own scratch space (build/lib, build/bdist.*) is kept out of build/, which holds the
# compiled P4 programs and the lincheck binary (p4cache.paths.build_dir).
setup(packages=sorted(PACKAGES), package_dir=PACKAGES,
      options={"build": {"build_base": ".setuptools-build"}})
