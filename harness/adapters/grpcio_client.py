"""grpcio: a server-streaming call on ``grpc.insecure_channel``, with raw bytes in and out
(``unary_stream(path)`` without serializers: each response is the message bytes, without the
5-byte prefix). A failed call raises ``grpc.RpcError``."""

from __future__ import annotations

from collections.abc import Iterator

import grpc

from harness.consumers.api import LinkInfo

#: the share of the case deadline given to the call as its gRPC deadline
CALL_SHARE = 0.8


def consume(link: LinkInfo) -> Iterator[bytes]:
    options = [("grpc.max_receive_message_length", link.max_message_bytes)]
    with grpc.insecure_channel(f"{link.host}:{link.port}", options=options) as channel:
        call: grpc.UnaryStreamMultiCallable[bytes, bytes] = channel.unary_stream(link.path)
        # grpcio has no read timeout, only a deadline for the whole call: most of the case's
        # time, so a stalled stream ends in grpcio's own DEADLINE_EXCEEDED (what an
        # application sees), not in the harness stopping the function at the case deadline
        yield from call(b"", timeout=link.deadline_s * CALL_SHARE)
