"""Calls into the engine with its exceptions mapped to P4Runtime canonical codes.

The engine raises the ``softnic.runtime.api`` error classes; the client must see them as the
codes the spec names (ALREADY_EXISTS for a duplicate insert, NOT_FOUND for a missing entry, ...).
Anything else the engine raises is a bug on our side and becomes INTERNAL with its message, so a
bad request can never take the server down.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

import grpc

from softnic.runtime.api import AlreadyExists, InvalidArgument, NotFound, SwitchError

from .errors import P4RTError

log = logging.getLogger("softnic.p4rt")


@contextlib.contextmanager
def engine_errors(what: str) -> Iterator[None]:
    try:
        yield
    except P4RTError:
        raise
    except AlreadyExists as e:
        raise P4RTError(grpc.StatusCode.ALREADY_EXISTS, f"{what}: {e}") from None
    except NotFound as e:
        raise P4RTError(grpc.StatusCode.NOT_FOUND, f"{what}: {e}") from None
    except InvalidArgument as e:
        raise P4RTError(grpc.StatusCode.INVALID_ARGUMENT, f"{what}: {e}") from None
    except IndexError as e:
        raise P4RTError(grpc.StatusCode.OUT_OF_RANGE, f"{what}: {e}") from None
    except SwitchError as e:
        raise P4RTError(grpc.StatusCode.INVALID_ARGUMENT, f"{what}: {e}") from None
    except Exception as e:  # an engine bug: report it, keep serving
        log.exception("engine failure during %s", what)
        raise P4RTError(grpc.StatusCode.INTERNAL, f"{what}: internal error: {e}") from None
