"""The scale model (issue 27, point 3) runs the real policies: what binds moves when the operator changes a setting."""

from __future__ import annotations

import json

from click.testing import CliRunner

from batchlane_dev.cli.main import main
from batchlane_dev.sim import AwsModel, Workload, simulate


def test_a_folder_drains_every_page_and_the_folder_cap_binds_until_raised():
    folder = Workload(documents=2_000, pages_per_document=10)
    default = simulate(folder, step_s=900)
    assert default.drained and default.pages_batch + default.pages_on_demand == default.pages == 20_000
    assert default.binding["admission"] == "folder_max_in_flight"
    assert 0 < default.cost_usd < default.all_on_demand_usd
    runner = CliRunner()
    done = runner.invoke(main, ["simulate", "--documents", "2000", "--set", "BATCHLANE_FOLDER_MAX_IN_FLIGHT=10000", "--step-s", "900", "--json"])
    assert done.exit_code == 0, done.output
    raised = json.loads(done.output)
    assert raised["drained"] and raised["binding"]["admission"] == "none"
    assert raised["hoursToDrain"] < default.hours_to_drain / 10
    summary = runner.invoke(main, ["simulate", "--documents", "2000", "--step-s", "900"])
    assert summary.exit_code == 0 and "binding  admission folder_max_in_flight" in summary.output, summary.output


def test_a_steady_stream_meets_the_concurrent_batch_job_quota_and_a_raise_lifts_it():
    stream = Workload(pages_per_document=10, owners=100, folders=0, arrival_pages_per_hour=20_000, arrival_hours=1)
    tight = simulate(stream, AwsModel(batch_concurrent_jobs=1), step_s=300)
    assert tight.drained and tight.binding["pool"] == "batch_concurrent_jobs"
    assert tight.pages_batch + tight.pages_on_demand == tight.pages
    loose = simulate(stream, AwsModel(batch_concurrent_jobs=50), step_s=300)
    assert loose.binding["pool"] != "batch_concurrent_jobs" and loose.hours_to_drain < tight.hours_to_drain
