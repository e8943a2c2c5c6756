"""A table's failback journal: what failback decided, and the steps it has done.

Kept next to the table's baseline (``<baseline>.failback.json``); a failback killed part-way
and run again reads it and continues after the last step done.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from ferry.storage import fs

PLANNED, COPIED, RESTORED, DONE = "planned", "copied", "restored", "done"


def journal_uri(baseline_uri: str) -> str:
    return baseline_uri.removesuffix(".json") + ".failback.json"


@dataclass
class Journal:
    """One table's failback: what it decided, and the steps done."""

    failover_id: str
    home: list[list[str]]
    drop: list[list[str]]
    changes: dict[str, Any]
    original: dict[str, Any]
    steps: list[str] = field(default_factory=list)

    @classmethod
    def load(cls, uri: str) -> Journal | None:
        if not fs.exists(uri):
            return None
        return cls(**json.loads(fs.read_bytes(uri)))

    def save(self, uri: str) -> None:
        fs.write_bytes(uri, json.dumps(asdict(self)).encode())

    def did(self, step: str, uri: str) -> None:
        if step not in self.steps:
            self.steps.append(step)
            self.save(uri)
