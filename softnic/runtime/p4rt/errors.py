"""Errors raised inside the P4Runtime service, each carrying the gRPC canonical code to report.

The service code raises :class:`P4RTError` anywhere below the RPC handlers; the handlers turn it
into either the RPC status (Read, pipeline RPCs) or one ``p4.v1.Error`` of a Write batch. Keeping
the code next to the message is what lets a deep helper (a bytestring decoder, say) decide that
the client gets INVALID_ARGUMENT rather than a generic failure.
"""

from __future__ import annotations

import grpc


class P4RTError(Exception):
    """A request the service refuses, with the canonical code the client should see."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def invalid(message: str) -> P4RTError:
    return P4RTError(grpc.StatusCode.INVALID_ARGUMENT, message)


def not_found(message: str) -> P4RTError:
    return P4RTError(grpc.StatusCode.NOT_FOUND, message)


def already_exists(message: str) -> P4RTError:
    return P4RTError(grpc.StatusCode.ALREADY_EXISTS, message)


def out_of_range(message: str) -> P4RTError:
    return P4RTError(grpc.StatusCode.OUT_OF_RANGE, message)


def unimplemented(message: str) -> P4RTError:
    return P4RTError(grpc.StatusCode.UNIMPLEMENTED, message)


def failed_precondition(message: str) -> P4RTError:
    return P4RTError(grpc.StatusCode.FAILED_PRECONDITION, message)


def permission_denied(message: str) -> P4RTError:
    return P4RTError(grpc.StatusCode.PERMISSION_DENIED, message)
