"""The events a token profile's producer may send besides its answer, by name: what a fault
injects to play a service that fails or keeps alive in the middle of a stream (pure).

Each event is built as that API writes it: Anthropic's ``error`` (``overloaded_error``) and
``ping``; the Responses API's ``error``, ``response.failed`` and ``response.incomplete``
(``max_output_tokens``), numbered with the ``sequence_number`` due where they go, so that a
consumer sees the event and not a gap; the chat-completions in-band ``error`` chunk.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from reference_impl.events import Message
from reference_impl.payload import token_frames as tf

_OVERLOADED: Final = {"type": "overloaded_error", "message": "Overloaded"}
_FAILED: Final = {"code": "server_error", "message": "The server had an error"}


def _response(status: str, **extra: object) -> dict[str, object]:
    return {"id": "resp_tearline", "object": "response", "status": status, "output": [], **extra}


Builder = Callable[[int], Message]

#: profile -> event name -> the event, given the sequence number due where it goes
CATALOGUE: Final[dict[str, dict[str, Builder]]] = {
    "anthropic": {
        "error": lambda _n: tf.event({"type": "error", "error": dict(_OVERLOADED)}),
        "ping": lambda _n: tf.event({"type": "ping"}),
    },
    "openai-responses": {
        "error": lambda n: tf.event(
            {"type": "error", **_FAILED, "param": None, "sequence_number": n}
        ),
        "response.failed": lambda n: tf.event(
            {
                "type": "response.failed",
                "response": _response("failed", error=dict(_FAILED)),
                "sequence_number": n,
            }
        ),
        "response.incomplete": lambda n: tf.event(
            {
                "type": "response.incomplete",
                "response": _response(
                    "incomplete", incomplete_details={"reason": "max_output_tokens"}
                ),
                "sequence_number": n,
            }
        ),
    },
    "openai": {
        "error": lambda _n: tf.encode(
            {"error": {"message": "upstream died", "type": "server_error"}}
        ),
    },
}

#: every event name some profile has
EVENT_NAMES: Final = tuple(sorted({name for events in CATALOGUE.values() for name in events}))


def injected_event(profile: str, name: str, sequence_number: int) -> Message:
    """Event ``name`` of ``profile``; ``KeyError`` if the profile has no such event."""
    return CATALOGUE[profile][name](sequence_number)


def events_of(profile: str) -> tuple[str, ...]:
    return tuple(CATALOGUE.get(profile, {}))
