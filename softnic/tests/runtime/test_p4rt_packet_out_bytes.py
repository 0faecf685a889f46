"""PacketOut metadata bytestrings as PI (simple_switch_grpc) accepts them.

PI's PacketOutMutate decodes each metadata value with ``bytestring_p4rt_to_pi``: a value shorter
than the field is zero-padded, a longer one is accepted when its extra leading bytes are zero,
and only a value that does not fit the field's bitwidth is refused (INVALID_ARGUMENT). The
p4lang/tutorials p4runtime_lib sends ``value.to_bytes(bitwidth, "big")`` - 9 bytes for a 9-bit
field - so softnic must take that form too.
"""

from __future__ import annotations

import time

from p4.v1 import p4runtime_pb2 as pb

from softnic.tests.runtime.test_p4rt import env, eth_ipv4, ready

__all__ = ["env", "ready"]


def _send(c, frame: bytes, port_value: bytes, pad_value: bytes) -> None:
    req = pb.StreamMessageRequest()
    req.packet.payload = frame
    req.packet.metadata.add(metadata_id=1, value=port_value)  # egress_port, 9 bits
    req.packet.metadata.add(metadata_id=2, value=pad_value)  # _pad, 7 bits
    c.send(req)


def _wait(emitted: list, n: int) -> None:
    deadline = time.monotonic() + 5
    while len(emitted) < n and time.monotonic() < deadline:
        time.sleep(0.01)


def test_zero_padded_metadata_longer_than_the_field_is_accepted(ready) -> None:
    _, c, emitted = ready
    frame = eth_ipv4()
    _send(c, frame, (2).to_bytes(9, "big"), (0).to_bytes(7, "big"))
    _wait(emitted, 1)
    assert emitted == [(2, frame)]
    # the same long form with a value too wide for the field is refused
    _send(c, frame, (0x200).to_bytes(9, "big"), b"\x00")  # 0x200 needs 10 bits
    err = c.next("error")
    assert err is not None and err.error.canonical_code == 3  # INVALID_ARGUMENT
    assert emitted == [(2, frame)]
