"""The promotion policy, pure (no I/O, no clock): what to cache and what to give up for it.

- :mod:`.frequency`: how hot each cached slot is (hits/s, an EMA over epochs of the switch's
  per-slot hit-counter deltas);
- :mod:`.hotness`: how hot each candidate key is (misses/s estimated from hot-key digests);
- :mod:`.slots`: which slots are free;
- :mod:`.decide`: a free slot, else evict the coldest cached key only if the candidate is
  hotter;
- :mod:`.admission`: the data plane's report threshold, lowered while slots are free and
  raised as the cache fills;
- :class:`PromotionPolicy` puts the four together for the controller.
"""

from .admission import AdmissionChange, AdmissionThreshold
from .decide import Admit, Decision, Evict, Reject, choose
from .frequency import SlotFrequency
from .hotness import CandidateHotness
from .policy import PromotionPolicy
from .slots import SlotAllocator

__all__ = ["AdmissionChange", "AdmissionThreshold", "Admit", "CandidateHotness", "Decision",
           "Evict", "PromotionPolicy", "Reject", "SlotAllocator", "SlotFrequency", "choose"]
