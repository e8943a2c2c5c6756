"""``ferry doctor``'s answer to one check: a finding, printed as one line."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

OK, FAILED, SKIPPED = "ok", "failed", "skipped"


@dataclass(frozen=True)
class Finding:
    """One check: what, its outcome, what was found, and what to do when it failed."""

    check: str
    status: str
    detail: str
    fix: str | None = None

    def line(self) -> str:
        mark = {OK: "✓", FAILED: "✗", SKIPPED: "–"}[self.status]
        text = f"{mark} {self.check}: {self.detail}"
        return f"{text} → {self.fix}" if self.fix and self.status == FAILED else text

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
