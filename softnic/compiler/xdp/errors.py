"""The one error of the xdp back end: a construct it does not translate.

It is raised while the C is generated, never left for the verifier to find, and it subclasses
the engine's PipelineLoadError so the P4Runtime service reports it like any other bad pipeline.
"""

from __future__ import annotations

from softnic.runtime.api import PipelineLoadError

TARGET = "the xdp target"


class XdpUnsupported(PipelineLoadError):
    """``<construct> is not supported by the xdp target`` (docs/xdp.md lists the subset)."""

    def __init__(self, construct: str, where: str = "") -> None:
        self.construct = construct
        self.where = where
        prefix = f"{where}: " if where else ""
        super().__init__(f"{prefix}{construct} is not supported by {TARGET}")
