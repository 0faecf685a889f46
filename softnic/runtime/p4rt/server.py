"""``P4RuntimeServer``: the gRPC server of ``softnic run`` (BMv2's simple_switch_grpc service).

A thread-pool gRPC server hosting :class:`~softnic.runtime.p4rt.service.P4RuntimeService`. Each
StreamChannel holds a pool thread for its whole life (plus one reader thread of its own), so the
pool is sized for several controllers plus concurrent unary RPCs.

Plaintext by default, as simple_switch_grpc; :class:`ServerTLS` makes it a TLS server (and, with
``require_client_auth``, one that only accepts clients with a certificate signed by the given CA).
"""

from __future__ import annotations

from concurrent import futures
from dataclasses import dataclass

import grpc
from p4.v1 import p4runtime_pb2_grpc

from softnic.runtime.api import SwitchAPI

from .service import Emit, P4RuntimeService

MAX_MESSAGE = 256 * 1024 * 1024  # a big P4Info or BMv2 JSON must fit in one RPC


@dataclass(frozen=True)
class ServerTLS:
    """PEM material for a TLS listener (simple_switch_grpc's ``--grpc-server-ssl`` options)."""

    cert_chain: bytes
    private_key: bytes
    root_certs: bytes | None = None  # CA that client certificates must chain to
    require_client_auth: bool = False

    def credentials(self) -> grpc.ServerCredentials:
        if self.require_client_auth and self.root_certs is None:
            raise ValueError("client authentication needs the CA certificate (root_certs)")
        return grpc.ssl_server_credentials([(self.private_key, self.cert_chain)],
                                           root_certificates=self.root_certs,
                                           require_client_auth=self.require_client_auth)


class P4RuntimeServer:
    def __init__(self, switch: SwitchAPI, device_id: int = 0, cpu_port: int | None = None,
                 emit: Emit | None = None, max_workers: int = 32) -> None:
        self.service = P4RuntimeService(switch, device_id, cpu_port, emit)
        self._max_workers = max_workers
        self._server: grpc.Server | None = None

    def set_transmit(self, emit: Emit | None) -> None:
        """Where packet-out results go: ``emit(egress_port, frame)`` (e.g. ``PortSet.transmit``)."""
        self.service.emit = emit

    def start(self, addr: str, tls: ServerTLS | None = None) -> int:
        """Listen on ``addr`` ("HOST:PORT", port 0 for any), over TLS when ``tls`` is given;
        returns the bound port."""
        server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=self._max_workers,
                                       thread_name_prefix="p4rt"),
            options=[("grpc.max_receive_message_length", MAX_MESSAGE),
                     ("grpc.max_send_message_length", MAX_MESSAGE),
                     ("grpc.so_reuseport", 0)])
        p4runtime_pb2_grpc.add_P4RuntimeServicer_to_server(self.service, server)
        if tls is None:
            port = server.add_insecure_port(addr)
        else:
            port = server.add_secure_port(addr, tls.credentials())
        if port == 0:
            raise OSError(f"cannot listen on {addr}")
        server.start()
        self._server = server
        return port

    def stop(self, grace: float = 0.5) -> None:
        if self._server is not None:
            self._server.stop(grace).wait()
            self._server = None
        self.service.close()

    def wait(self) -> None:
        if self._server is not None:
            self._server.wait_for_termination()
