"""P4Runtime gRPC service of ``softnic run``, the stand-in for BMv2's simple_switch_grpc."""

from .server import P4RuntimeServer, ServerTLS

__all__ = ["P4RuntimeServer", "ServerTLS"]
