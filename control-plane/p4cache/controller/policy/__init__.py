"""The promotion policy, pure (no I/O, no clock): what to cache and what to give up for it.

- :mod:`.frequency`: how hot each cached slot is (hits/s, an EMA over epochs of the switch's
  per-slot hit-counter deltas);
- :mod:`.hotness`: how hot each candidate key is (misses/s estimated from hot-key digests);
- :mod:`.slots`: which slots are free;
- :mod:`.decide`: a free slot, else evict the coldest cached key only if the candidate is
  hotter;
- :class:`PromotionPolicy` puts the four together for the controller.
"""

from .decide import Admit, Decision, Evict, Reject, choose
from .frequency import SlotFrequency
from .hotness import CandidateHotness
from .policy import PromotionPolicy
from .slots import SlotAllocator

__all__ = ["Admit", "CandidateHotness", "Decision", "Evict", "PromotionPolicy", "Reject",
           "SlotAllocator", "SlotFrequency", "choose"]
