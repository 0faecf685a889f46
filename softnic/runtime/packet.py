"""Per-packet state that is not a header field.

v1model's internal flags (clone_spec, resubmit/recirculate field lists, lf_field_list) are not
fields of ``standard_metadata`` in current v1model.p4, so the engine keeps them here instead of in
the PHV. Generated code touches these attributes directly, hence ``__slots__``.
"""

from __future__ import annotations


class ParserError(Exception):
    """Raised inside generated parser states; carries the error code and the parse position."""

    def __init__(self, code: int, pos: int) -> None:
        super().__init__(code, pos)
        self.code = code
        self.pos = pos


class AssertFailed(Exception):
    """An ``assert``/``assume`` primitive failed; BMv2 aborts, softnic drops the packet."""


class StackIndexOutOfRange(AssertFailed):
    """A run-time header stack index out of the stack's range (``hs[i]`` with ``i`` computed).

    BMv2 1.15 evaluates ``dereference_header_stack`` with ``Stack::at``, i.e.
    ``std::vector::at``, whose ``std::out_of_range`` nothing catches (not even the parser, which
    catches only its own parser exceptions): the whole switch process terminates. softnic drops
    the packet instead and counts it with the assert failures, the program's doing rather than
    an engine bug. (The P4_16 spec leaves reads unspecified and writes ignored here.)
    """


class PacketCtx:
    """Flags set by primitives; class attributes are the defaults so that creating one per
    pipeline pass costs no ``__init__`` call (only written attributes land in the instance)."""

    exited = False
    clone: tuple[int, int] | None = None  # (session, field list id)
    resubmit: int | None = None  # field list id (0: none preserved)
    recirculate: int | None = None
    digests: tuple[int, ...] = ()  # learn list ids, in call order
    truncate = 0
    logs: list[str] | None = None  # log_msg output, collected only when tracing
    steps = 0  # visits of looping parse states (codegen's parser loop bound)
