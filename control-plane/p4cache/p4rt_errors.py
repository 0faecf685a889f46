"""The failed updates of a P4Runtime WriteRequest, read from the error's status details
(P4Runtime spec 12.3: one p4.v1.Error per update, OK for those applied). Shared by the
controller's batched writes and the PTF suite's client."""

from __future__ import annotations

import grpc
from google.rpc import code_pb2, status_pb2
from p4.v1 import p4runtime_pb2


def write_errors(e: grpc.RpcError) -> list[tuple[int, p4runtime_pb2.Error]]:
    """(update index, its Error) for every update that was not applied. p4runtime-shell's own
    reader loops for ever on an OK detail, so a batch with some updates applied is read here."""
    out: list[tuple[int, p4runtime_pb2.Error]] = []
    for key, value in e.trailing_metadata() or ():  # type: ignore[attr-defined]
        if key != "grpc-status-details-bin":
            continue
        st = status_pb2.Status.FromString(value)
        for i, detail in enumerate(st.details):
            err = p4runtime_pb2.Error()
            if detail.Unpack(err) and err.canonical_code != code_pb2.OK:
                out.append((i, err))
    return out
