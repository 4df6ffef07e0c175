"""A consumer program over TLS with no CA of its own (for the TLS tests): it checks that the
run CA's file came as its first argument (``{ca_file}``), in ``TEARLINE_CA_FILE`` and in every
trust-store variable, then runs the command that follows it, a client that trusts whatever
the default trust store holds (``tearline consume --tls``): Python's ssl finds the run CA
through ``SSL_CERT_FILE``, as other OpenSSL clients do. A broken contract exits 3 with the
values on standard error, and no report."""

from __future__ import annotations

import os
import sys

VARIABLES = (
    "TEARLINE_CA_FILE",
    "SSL_CERT_FILE",
    "REQUESTS_CA_BUNDLE",
    "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH",
)


def main() -> None:
    ca_file, command = sys.argv[1], sys.argv[2:]
    given = {name: os.environ.get(name) for name in VARIABLES}
    if not os.path.isfile(ca_file) or set(given.values()) != {ca_file}:
        print(f"contract broken: {ca_file!r} {given}", file=sys.stderr)
        sys.exit(3)
    os.execv(command[0], command)


if __name__ == "__main__":
    main()
