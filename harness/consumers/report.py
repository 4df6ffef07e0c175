"""A consumer function's outcome as the consumer report the judge reads (pure).

- Returned normally: ``verdict: COMPLETE``, ``complete: true``: the application saw a normal
  end of the stream. A client library cannot say more (it does not know the seeds' verdicts),
  so no seed verdict is claimed.
- Raised: ``verdict`` and ``error_code`` ``RAISED:<ExceptionType>`` (the class name),
  ``complete: false``, ``detail`` the exception as ``module.Type: text`` (bounded).
- Either way ``accepted`` lists every message handed on before the end, in order, with the
  connection it came on; ``connections`` has one summary per connection those name (at least
  one), as far as the function can know them.
- A programming error (TypeError ...), a value that is not a message, or an exception that is
  no failure (SystemExit ...): no report, and a diagnosis of its own.
"""

from __future__ import annotations

from harness.consumers.outcome import CallOutcome, Ending, bounded_text
from reference_impl.report import Accepted, ConnectionSummary, ConsumerReport

COMPLETE = "COMPLETE"
RAISED_PREFIX = "RAISED:"


def raised_code(error_type: str) -> str:
    return f"{RAISED_PREFIX}{error_type}"


def _connections(accepted: tuple[Accepted, ...], end: str) -> tuple[ConnectionSummary, ...]:
    count = max((a.connection for a in accepted), default=1)
    last = ConnectionSummary(end, "", None if end == "stream-end" else "raised", 0, 0)
    earlier = ConnectionSummary("error", "", None, 0, 0)
    return (*([earlier] * (count - 1)), last)


def _exception(outcome: CallOutcome) -> str:
    module = outcome.error_module
    qualified = (
        outcome.error_type if module in ("builtins", "") else f"{module}.{outcome.error_type}"
    )
    return f"{qualified}: {outcome.text}" if outcome.text else qualified


def report_of(outcome: CallOutcome) -> tuple[ConsumerReport | None, str]:
    """(report, '') or (None, why there is none)."""
    accepted = outcome.accepted
    count = f"after {len(accepted) + sum(p.count for p in outcome.accepted_past)} message(s)"
    if outcome.ending is Ending.RETURNED:
        detail = f"returned normally {count}"
        return ConsumerReport(
            COMPLETE,
            True,
            None,
            accepted=accepted,
            accepted_past=outcome.accepted_past,
            connections=_connections(accepted, "stream-end"),
            detail=detail,
        ), ""
    if outcome.ending is Ending.RAISED:
        code = raised_code(outcome.error_type)
        detail = bounded_text(f"raised {_exception(outcome)} ({count})")
        return ConsumerReport(
            code,
            False,
            code,
            accepted=accepted,
            accepted_past=outcome.accepted_past,
            connections=_connections(accepted, "error"),
            detail=detail,
        ), ""
    return None, problem_text(outcome)


def problem_text(outcome: CallOutcome) -> str:
    """The diagnosis of an outcome that has no report."""
    where = f" at {outcome.where}" if outcome.where else ""
    if outcome.ending is Ending.BAD_RETURN:
        return f"consumer function {outcome.text}"
    if outcome.ending is Ending.PROGRAMMING_ERROR:
        return (
            f"consumer function raised {_exception(outcome)}{where}: a programming error in "
            "the function or its client, not a stream failure"
        )
    return f"consumer function raised {_exception(outcome)}{where}, which is no stream failure"
