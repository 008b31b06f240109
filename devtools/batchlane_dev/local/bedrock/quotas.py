"""Per-model batch inference quotas the emulator enforces.

AWS sets these per model and account, so the real code reads them from configuration;
the emulator takes them as an argument so tests can shrink them (a 100-record minimum
makes every test job 100 records long otherwise).
"""

from __future__ import annotations

from dataclasses import dataclass

GIB = 1024**3


@dataclass(frozen=True)
class BatchQuotas:
    """Defaults are AWS's documented Claude batch quotas."""

    min_records: int = 100
    max_records: int = 50_000
    max_file_bytes: int = 1 * GIB
    max_job_bytes: int = 5 * GIB
    max_concurrent_jobs: int = 10
