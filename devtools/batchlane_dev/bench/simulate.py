"""simulate_1m_files: the scale model (batchlane_dev.sim, docs/scale.md) for a folder of 10^6 documents and a stream of 10^5 pages an hour.

``value`` is the modelled hours to drain a folder of 10^6 ten-page documents with the default settings;
``baseline`` the floor Bedrock's batch quotas alone set (every page in full jobs, every concurrent slot busy),
so the ratio says how far the policies are from the quota. The details carry the same folder with the
folder cap raised to its maximum, and the steady stream from 100 owners.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from batchlane_dev.bench import figure, size, wanted

NAMES = ("simulate_1m_files", "simulate_10000_files")


def figures(args: Any) -> Iterator[dict[str, Any]]:
    from batchlane.config import Settings
    from batchlane_dev.sim import AwsModel, Workload, ideal_hours, simulate

    documents = size(args, 1_000_000, 1_000_000, 10_000)
    name = "simulate_1m_files" if documents == 1_000_000 else f"simulate_{documents}_files"
    if not wanted(args, name):
        return
    lane: dict[str, Any] = {"batch_conversion_enabled": True, "batch_conversion_s3_bucket": "sim", "batch_conversion_role_arn": "arn:aws:iam::1:role/sim"}
    aws = AwsModel()
    folder = Workload(documents=documents, pages_per_document=10)
    default = simulate(folder, aws, step_s=900)
    raised = simulate(folder, aws, settings=Settings.model_validate({**lane, "batchlane_folder_max_in_flight": 10_000}), step_s=900)
    stream = simulate(
        Workload(pages_per_document=10, owners=100, folders=0, arrival_pages_per_hour=100_000, arrival_hours=size(args, 24, 24, 1)), aws, step_s=300
    )

    def brief(result: Any) -> dict[str, Any]:
        keep = ("drained", "hours_to_drain", "bedrock_jobs", "saving_pct", "binding", "peaks", "db", "wall_s", "notes")
        return {k: v for k, v in result.to_json().items() if k in keep}

    yield figure(
        name,
        default.hours_to_drain,
        "h",
        ideal_hours(folder, aws),
        baseline_is="the floor of Bedrock's batch quotas alone (full jobs, every concurrent slot busy)",
        documents=documents,
        pages=folder.documents * folder.pages_per_document,
        default_settings=brief(default),
        folder_max_in_flight_10000=brief(raised),
        stream_100000_pages_an_hour_100_owners=brief(stream),
        aws=aws.__dict__,
    )
