"""Where each PHV slot lives in the generated program's state: ``st->f[]``, 64-bit words.

The engine's :class:`~softnic.runtime.loader.Layout` numbers slots (fields, validity bits,
stack indices, hidden standard_metadata fields). Here every slot gets one word, or
``ceil(width / 64)`` words (least significant word first) when it is wider than 64 bits. The
elements of a header stack are placed back to back, so element ``i`` of a stack is
``base + i * stride``: a run-time stack index becomes one bounds-checked multiply-add instead of
a switch over the elements. Signed fields are stored as their two's-complement bit pattern,
masked to their width, and sign-extended when read.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from softnic.runtime.loader import HeaderInfo, Layout

WORD_BITS = 64


def limbs(width: int) -> int:
    """Words needed for a value of ``width`` bits (at least one)."""
    return max(1, (width + WORD_BITS - 1) // WORD_BITS)


@dataclass
class StackWords:
    name: str
    base: int  # word of element 0's first field
    stride: int  # words per element
    size: int
    next_word: int  # the stack's next index
    index: int = 0  # the stack's number: st->hw[index] is its high-water mark


@dataclass
class Words:
    lay: Layout
    word: list[int] = field(default_factory=list)  # slot -> first word
    total: int = 0
    stacks: dict[str, StackWords] = field(default_factory=dict)
    # Stack elements come first, words [0, stack_end); stack_end is a multiple of 8. A packet
    # resets words [stack_end, total) whole, and of each stack only the elements below its
    # high-water mark (the elements this packet may have written): a 255-element stack of
    # bytes costs nothing on packets that never reach it.
    stack_end: int = 0
    element_of: dict[str, tuple[str, int]] = field(default_factory=dict)  # header -> (stack, i)

    def of(self, slot: int) -> int:
        return self.word[slot]

    def nlimbs(self, slot: int) -> int:
        return limbs(self.lay.widths[slot])

    def header_words(self, h: HeaderInfo) -> int:
        return sum(self.nlimbs(s) for s in range(h.base, h.base + h.span))


def build_words(lay: Layout) -> Words:
    w = Words(lay, [-1] * len(lay.widths))
    nxt = 0

    def place(slot: int) -> None:
        nonlocal nxt
        if w.word[slot] < 0:
            w.word[slot] = nxt
            nxt += limbs(lay.widths[slot])

    for st in lay.stacks.values():
        hs = [lay.headers[n] for n in st.headers]
        start = nxt
        for h in hs:
            for s in range(h.base, h.base + h.span):
                place(s)
        stride = (nxt - start) // len(hs)
        w.stacks[st.name] = StackWords(st.name, start, stride, len(hs), -1, len(w.stacks))
        for i, h in enumerate(hs):
            w.element_of[h.name] = (st.name, i)
    nxt = (nxt + 7) // 8 * 8
    w.stack_end = nxt
    for s in range(len(lay.widths)):
        place(s)
    for st in lay.stacks.values():
        w.stacks[st.name].next_word = w.word[st.next_slot]
    w.total = nxt
    return w
