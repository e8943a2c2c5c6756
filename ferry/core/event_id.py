"""Event ids: the name of one replication and of its snapshot folder.

``ferry-20261121t033015123z-1a2b3c4d``: lower-case (GCS needs it), sortable by time to the
millisecond, unique through a random suffix, and a valid S3/GCS folder name.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable
from datetime import datetime

from ferry.core.clock import Clock, utc_now

EVENT_ID_PATTERN = re.compile(r"^ferry-\d{8}t\d{9}z-[0-9a-f]{8}$")


def new_event_id(
    clock: Clock = utc_now, token: Callable[[], str] = lambda: secrets.token_hex(4)
) -> str:
    now: datetime = clock()
    return f"ferry-{now:%Y%m%d}t{now:%H%M%S}{now.microsecond // 1000:03d}z-{token()}"
