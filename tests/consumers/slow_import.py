"""A consumer module whose import takes longer than its cases' deadline (a heavy client on a
loaded machine): the import must not count against the deadline once the worker is warm."""

from __future__ import annotations

import time

from harness.consumers.api import LinkInfo
from tests.consumers.functions import codec_consumer

IMPORT_S = 1.5
time.sleep(IMPORT_S)  # stands for a slow import, not for synchronisation


def consume(link: LinkInfo) -> list[bytes]:
    return list(codec_consumer(link))
