"""p4cache.dataplane mirrors the P4 program's constants and names: check them against p4src."""

from __future__ import annotations

import re

from p4cache import dataplane as d
from p4cache.program import P4SRC, build

DEFINE = re.compile(r"^#define\s+([A-Z][A-Z0-9_]*)\s+(0x[0-9a-fA-F]+|\d+)\b", re.M)


def _p4_defines() -> dict[str, int]:
    out: dict[str, int] = {}
    for name in ("size.p4", "define.p4"):
        for m in DEFINE.finditer((P4SRC / "shared" / name).read_text()):
            out[m.group(1)] = int(m.group(2), 0)
    return out


def test_every_mirrored_constant_equals_the_p4_define() -> None:
    defines = _p4_defines()
    mirrored = [n for n in defines if hasattr(d, n)]
    assert len(mirrored) >= 30, mirrored  # the sizes, ports, op codes, statuses, stat indices
    for name in mirrored:
        assert getattr(d, name) == defines[name], name
    assert d.KEY_BITS == 8 * d.KMAX


def test_names_the_controller_uses_exist_in_the_p4info() -> None:
    p4info = build().p4info_path.read_text()
    for name in (d.TABLE_LOOKUP, d.TABLE_ALLOWLIST, d.TABLE_AGENTS, d.TABLE_L2, d.TABLE_ROUTE,
                 d.COUNTER_STATS, d.COUNTER_SLOT_HITS, d.DIGEST_HOT_KEY):
        assert f'name: "{name}"' in p4info, name


def test_chunks_cover_every_length_exactly() -> None:
    for n in range(1, d.REPLY_MAX + 1):
        sizes = d.chunk_sizes(n)
        assert sum(sizes) == n
        assert sizes == sorted(sizes, reverse=True)
    for bad in (0, d.REPLY_MAX + 1):
        try:
            d.chunk_sizes(bad)
        except ValueError:
            continue
        raise AssertionError(bad)
