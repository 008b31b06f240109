"""Per-model batch inference quotas the emulator enforces.

AWS sets these per model and account, so the real code reads them from configuration;
the emulator takes them as an argument so tests can shrink them (a 100-record minimum
makes every test job 100 records long otherwise).
"""

from __future__ import annotations

from dataclasses import dataclass

GB = 10**9  # AWS's quotas are decimal ("Batch inference job size (in GB)": 5 GB = 5 * 10**9 bytes)


@dataclass(frozen=True)
class BatchQuotas:
    """Defaults are AWS's documented Claude batch quotas."""

    min_records: int = 100
    max_records: int = 50_000
    max_file_bytes: int = 1 * GB
    max_job_bytes: int = 5 * GB
    max_concurrent_jobs: int = 10
