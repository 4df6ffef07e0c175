"""``tearline record``: one exchange with a producer, through the proxy, into a recording file.

The consumer making the request is the reference one (the link given by ``--framing``,
``--payload`` and ``--profile``, the request by curl's options), your program (``--consumer``, as
``tearline run`` starts it) or your Python function (``--consumer-function``, as ``tearline run``
calls it). The recording (docs/recording-format.md) keeps the request and the payload settings,
and can be played back as a scenario's producer: ``link: {producer: {replay: FILE}}``.
``--pcap`` also writes the exchange as a capture.

Exit 0 once the file is written; 1 when what the service sent is no stream of the link (an
error status, another protocol, nothing at all; ``--allow-status`` records it anyway); 2 with
one line when there is nothing to record or an option is wrong.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from functools import partial
from pathlib import Path

from harness.cli.linkargs import PAYLOADS, add_http_body_argument, add_request_arguments
from harness.cli.types import bounded_float, readable_file, upstream
from harness.config.limits import MAX_DURATION_MS
from reference_impl.framing import FRAMING_NAMES
from reference_impl.payload import tokens
from reference_impl.report import ConsumerReport, accepted_total

EXIT_REFUSED = 1
EXIT_BAD_INPUT = 2
DEFAULT_DEADLINE_MS = 30_000.0


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "record", help="record one exchange with a producer, to replay it as a scenario's producer"
    )
    parser.add_argument(
        "--upstream",
        type=upstream,
        required=True,
        metavar="HOST:PORT",
        help="the producer: HOST:PORT, or https://HOST:PORT to speak TLS to it",
    )
    parser.add_argument(
        "--upstream-ca",
        type=readable_file,
        default=None,
        metavar="FILE",
        help="with an https upstream: trust the CAs in this PEM file instead of the system's",
    )
    parser.add_argument(
        "--upstream-insecure",
        action="store_true",
        help="with an https upstream: do not verify its certificate",
    )
    parser.add_argument("--framing", choices=FRAMING_NAMES, required=True)
    parser.add_argument("--payload", choices=PAYLOADS, default="envelope")
    parser.add_argument(
        "--profile",
        choices=tokens.PROFILES,
        default="openai",
        help="tokens payload: the producer's profile (how the reference consumer reads it)",
    )
    add_http_body_argument(parser)
    consumer = parser.add_mutually_exclusive_group()
    consumer.add_argument(
        "--consumer",
        default=None,
        metavar="COMMAND",
        help="your consumer program makes the request instead of the reference consumer "
        "({host}, {port}, ... as in tearline run; docs/consumer-contract.md)",
    )
    consumer.add_argument(
        "--consumer-function",
        default=None,
        metavar="MODULE:FUNCTION",
        help="your consumer function makes the request instead (docs/python-consumers.md)",
    )
    parser.add_argument(
        "--deadline-ms",
        type=bounded_float(0, MAX_DURATION_MS),
        default=DEFAULT_DEADLINE_MS,
        metavar="MS",
        help="stop recording after this long (default 30000); what passed until then is kept",
    )
    parser.add_argument(
        "--allow-status",
        action="store_true",
        help="record it even when the service answers with an error status or sends no stream "
        "of the link (a recording of the failure, to replay it on purpose)",
    )
    parser.add_argument("-o", "--output", required=True, metavar="FILE", help="the recording")
    add_request_arguments(parser)
    parser.add_argument(
        "--pcap", default=None, metavar="FILE", help="also write the exchange as a pcap file"
    )


def _fail(message: str) -> int:
    print(f"tearline record: {' '.join(message.split())}", file=sys.stderr)
    return EXIT_BAD_INPUT


def _write(path: str, data: bytes) -> None:
    """All of ``data`` or nothing at ``path`` (an interrupted run leaves no half file)."""
    partial = f"{path}.partial"
    Path(partial).write_bytes(data)
    os.replace(partial, path)


def record(args: argparse.Namespace) -> int:
    import trio  # noqa: PLC0415 - the proxy and the consumer only when recording

    from harness.cli.scenario import request_of_args  # noqa: PLC0415
    from harness.errors import FieldError, HarnessError, RefusedError  # noqa: PLC0415
    from harness.record.format import dumps  # noqa: PLC0415
    from harness.running.recorder import record as record_exchange  # noqa: PLC0415
    from harness.scenario.model import (  # noqa: PLC0415
        ConsumerConfig,
        FramingConfig,
        Link,
        ProducerConfig,
        RequestConfig,
        TokensConfig,
    )
    from reference_impl.framing import FramingName  # noqa: PLC0415
    from reference_impl.payload import PayloadName  # noqa: PLC0415

    command = None if args.consumer is None else tuple(shlex.split(args.consumer))
    if command == ():
        return _fail("--consumer: an empty command")
    if args.consumer_function is not None:
        from harness.workers.worker import locate  # noqa: PLC0415 - only when used

        if problem := locate(args.consumer_function):
            return _fail(f"--consumer-function: {problem}")
    try:
        producer = ProducerConfig(
            upstream=args.upstream,
            upstream_ca=args.upstream_ca,
            upstream_insecure=args.upstream_insecure,
        )
    except FieldError as err:  # --upstream-ca without https://, say
        return _fail(f"--{str(err.path[0]).replace('_', '-')}: {err.message}")
    try:
        link = Link(
            FramingName(args.framing),
            PayloadName(args.payload),
            tokens=TokensConfig(profile=args.profile) if args.payload == "tokens" else None,
            framing_options=FramingConfig(sse_body=args.sse_body),
            request=request_of_args(args) or RequestConfig(),
            producer=producer,
            consumer=ConsumerConfig(command=command, function=args.consumer_function),
        )
        deadline_s = args.deadline_ms / 1000
        allow = args.allow_status
        recorded = trio.run(partial(record_exchange, allow_refused=allow), link, deadline_s)
    except RefusedError as err:
        print(
            f"tearline record: {err.text}; nothing written (--allow-status keeps it)",
            file=sys.stderr,
        )
        return EXIT_REFUSED
    except HarnessError as err:
        return _fail(err.text)
    recording = recorded.recording
    try:
        _write(args.output, dumps(recording))
        if args.pcap is not None:
            from harness.artifacts.capture import write_recording_pcap  # noqa: PLC0415 - scapy

            write_recording_pcap(recording, args.pcap)
    except OSError as err:
        return _fail(f"cannot write {err.filename}: {err.strerror or err}")
    reads = recording.reads("producer")
    end = recording.end_of("producer")
    verdict = _verdict(recorded.report) if recorded.report else f"none ({recorded.problem})"
    print(
        f"recorded {args.output}: {len(recording.sent('consumer'))} request bytes, "
        f"{len(recording.sent('producer'))} producer bytes in {len(reads)} reads, "
        f"producer end {'open' if end is None else end.how}; consumer verdict {verdict}"
    )
    if recorded.ignored:
        print(f"  {recorded.ignored} later connection(s) not recorded (only the first is)")
    if args.pcap is not None:
        print(f"  pcap: {args.pcap}")
    return 0


def _verdict(report: ConsumerReport) -> str:
    """The consumer's verdict with what explains it: completeness, its error and detail."""
    text = f"{report.verdict} (complete={report.complete}, {accepted_total(report)} accepted"
    if report.error_code and report.error_code != report.verdict:
        text += f", error {report.error_code}"
    if report.detail:
        text += f": {report.detail[:200]}"
    return text + ")"
