"""Options and fixtures of the bad-input tests (property tests and the datagram fuzz).

Sizes and seeds: ``--fuzz-n`` / ``P4CACHE_FUZZ_N`` (datagrams of the fuzz run, default 5000),
``--fuzz-seed`` / ``P4CACHE_FUZZ_SEED`` (default 1123), ``P4CACHE_PROPERTY_EXAMPLES`` (examples per
hypothesis test, default 150), ``P4CACHE_P4_JSON`` (test another BMv2 JSON than the build of
p4src/), ``P4CACHE_ORACLE_STRICT=1`` (the model accepts none of the known deviations).
``make fuzz N=100000`` runs the big fuzz.
"""

from __future__ import annotations

import os

import pytest

DEFAULT_FUZZ_N = 5000
DEFAULT_FUZZ_SEED = 1123


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("p4cache bad-input tests")
    group.addoption("--fuzz-n", type=int, default=None,
                    help="datagrams in the fuzz run "
                         f"(env P4CACHE_FUZZ_N, default {DEFAULT_FUZZ_N})")
    group.addoption("--fuzz-seed", type=int, default=None,
                    help="seed of the fuzz run "
                         f"(env P4CACHE_FUZZ_SEED, default {DEFAULT_FUZZ_SEED})")


def _setting(config: pytest.Config, opt: str, env: str, default: int) -> int:
    value = config.getoption(opt, default=None)
    if value is None:
        value = int(os.environ.get(env, default))
    return value


@pytest.fixture(scope="session")
def fuzz_n(pytestconfig: pytest.Config) -> int:
    return _setting(pytestconfig, "--fuzz-n", "P4CACHE_FUZZ_N", DEFAULT_FUZZ_N)


@pytest.fixture(scope="session")
def fuzz_seed(pytestconfig: pytest.Config) -> int:
    return _setting(pytestconfig, "--fuzz-seed", "P4CACHE_FUZZ_SEED", DEFAULT_FUZZ_SEED)


@pytest.fixture(scope="module")
def rig():
    """The pipeline, loaded once per module, with its model: known deviations of the data plane
    accepted, unless ``P4CACHE_ORACLE_STRICT=1`` (then every rule is enforced)."""
    import cache_oracle
    from cache_rig import Rig
    strict = os.environ.get("P4CACHE_ORACLE_STRICT", "") not in ("", "0")
    return Rig(frozenset() if strict else cache_oracle.KNOWN_DEVIATIONS)
