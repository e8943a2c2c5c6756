"""Step Functions' limit on the size of what passes between states, as the emulator measures
it: a state's input or output, a task's result, a Map's result, a child execution's input."""

from __future__ import annotations

import json
from typing import Any

#: AWS's limit on a state's input or output, a task's result, a child execution's input.
MAX_PAYLOAD_BYTES = 256 * 1024


def payload_size(value: Any) -> int:
    """The size of ``value`` as Step Functions counts it: its compact JSON's UTF-8 bytes (a
    text as it is)."""
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    return len(text.encode("utf-8"))
