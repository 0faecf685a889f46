"""truncate: BMv2 keeps the smallest length of all calls in a pass (Packet::truncate)."""

from __future__ import annotations

from pathlib import Path

import pytest

from softnic.tests.compiler.engine_run import program, run_src

BODY = """
control I(inout headers_t h, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        truncate((bit<32>)%s);
        truncate((bit<32>)%s);
    }
}
"""


@pytest.mark.parametrize("first,second,kept", [(6, 9, 6), (9, 6, 6), (5, 5, 5), (7, 64, 7)])
def test_the_smallest_truncate_length_wins(tmp_path: Path, first: int, second: int,
                                           kept: int) -> None:
    data = bytes(range(4)) + bytes(range(100, 120))  # h.d (4 bytes) then 20 payload bytes
    out = run_src(tmp_path, program(BODY % (first, second)), data)
    assert out == data[:kept]
