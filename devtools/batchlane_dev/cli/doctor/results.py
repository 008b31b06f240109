"""What every doctor check returns: a named verdict with one line of detail.

Each check is a plain function over boto3 clients (AWS's or the offline stack's);
:func:`batchlane_dev.cli.doctor.run.run_doctor` runs them in order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal


@dataclass(frozen=True)
class Check:
    """One verdict. ``severity`` says how bad a failed check is; any failure makes the exit non-zero."""

    name: str
    ok: bool
    detail: str
    severity: Literal["error", "warning"] = "error"
    data: dict[str, Any] = field(default_factory=dict)  # machine-readable findings, e.g. the page forms (camelCase)

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"name": self.name, "ok": self.ok, "detail": self.detail, "severity": None if self.ok else self.severity}
        if self.data:
            out["data"] = self.data
        return out


def passed(name: str, detail: str) -> Check:
    return Check(name, True, detail)


def failed(name: str, detail: str) -> Check:
    return Check(name, False, detail, "error")


def warned(name: str, detail: str) -> Check:
    return Check(name, False, detail, "warning")
