"""The deployed stack gives `batchlane doctor` the outputs it reads (the offline stack publishes the same keys)."""

from __future__ import annotations

import json

from infra_testlib import Synth

from batchlane_dev.cli.doctor.target import REQUIRED_OUTPUTS


def test_outputs_give_the_doctor_what_it_checks(synth: Synth) -> None:
    outputs = synth.template["Outputs"]
    assert set(REQUIRED_OUTPUTS) <= set(outputs)
    lane = json.loads(outputs["LaneSettings"]["Value"])
    assert lane["BATCHLANE_MODEL_ID"] in lane["BATCHLANE_MODEL_IDS"].split(",")
    for key in ("BATCH_CONVERSION_MIN_RECORDS", "BATCH_CONVERSION_MAX_RECORDS", "BATCH_CONVERSION_MAX_CONCURRENT_JOBS", "BATCH_CONVERSION_MAX_FILE_MB"):
        assert int(lane[key]) > 0
    assert "BATCHLANE_PRICES" not in lane
