"""The emulator's one clock: the calibrated batch pace and the scale this machine sustains (issue 10, point 13)."""

from __future__ import annotations

import functools

import pytest

from batchlane_dev.local.bedrock.clock import BATCH_RECORDS_PER_HOUR, EMULATOR_RECORD_COST_S, MAX_AUTO_SCALE, auto_time_scale, scale_for_job
from batchlane_dev.local.bedrock.faults import parse_faults


def test_a_job_spends_its_records_at_the_calibrated_pace_unless_job_hours_fixes_it():
    calibrated = parse_faults("")
    assert calibrated.in_progress_s(9600) == pytest.approx(9600 / BATCH_RECORDS_PER_HOUR * 3600)
    assert calibrated.in_progress_s(50_000) < 24 * 3600, "a maximal job fits AWS's default 24 h timeout"
    assert parse_faults("job_hours=0.5").in_progress_s(9600) == 1800


def test_auto_scale_keeps_the_emulator_inside_the_time_the_pace_gives_it():
    faults = parse_faults("record_cost_ms=60,time_scale=auto,records_per_hour=100")  # order does not matter
    assert faults.time_scale == auto_time_scale(100, 60)
    real_per_record = 3600 / (faults.records_per_hour * faults.time_scale)
    assert 0.060 <= real_per_record * 0.5 + 1e-9, "the record's cost uses at most half of its real-time slot"
    assert parse_faults("time_scale=auto,records_per_hour=1").time_scale == MAX_AUTO_SCALE


def test_stopping_lasts_what_the_fault_says():
    assert parse_faults("").stopping_s == 30
    assert parse_faults("stopping_s=7200").stopping_s == 7200
    with pytest.raises(ValueError, match="stopping_s"):
        parse_faults("stopping_s=-1")


def test_a_known_job_gets_the_fastest_clock_that_keeps_it_near_its_calibrated_time():
    for records in (60, 650, 9600, 50_000):
        scale = scale_for_job(records)
        machine_emulated_s = records * EMULATOR_RECORD_COST_S * scale  # how long the emulator takes, on the clock
        calibrated_s = records * 3600 / BATCH_RECORDS_PER_HOUR
        assert machine_emulated_s <= max(calibrated_s + 0.1 * 24 * 3600, calibrated_s / 0.5) + 1e-6, records
    assert scale_for_job(650) > 8 * scale_for_job(9600), "a small demo is not slowed by a big one's clock"
    assert scale_for_job(60) == MAX_AUTO_SCALE


def _slow_model(pdf: bytes, *, visual: bool = False, seen_path: str) -> str:
    """A model whose page costs 25 ms; it runs in the demo's bounded child (so: module level, bound to its file
    with functools.partial), and tells the test which pages it saw through ``seen_path`` (an argument: the child
    comes from a forkserver started before the test, so it does not see the test's environment)."""
    import io
    import time

    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(pdf))
    assert len(reader.pages) == 1 and visual, "one page a record, read as a batch record is (visual)"
    with open(seen_path, "a") as seen:
        seen.write(" ".join(reader.pages[0].extract_text().split()) + "\n")
    time.sleep(0.025)
    return ""


def test_a_users_own_pdf_sizes_the_demo_clock_by_what_its_pages_cost_the_emulator(tmp_path):
    """`batchlane demo --pdf`: the emulator's model is timed on pages spread over the document (first and last
    included), one page a PDF, in the bounded child, and the clock is sized with that cost: a document whose pages
    cost 25 ms runs on a slower clock than the calibrated 10 ms allows (the PGF manual at the generated pages' ×726
    fell hours behind)."""
    from batchlane_dev.local import demo
    from batchlane_dev.local.pdfgen import make_pdf

    seen_file = tmp_path / "seen.txt"
    data = make_pdf(40)
    cost = demo.sampled_record_cost_ms(data, model=functools.partial(_slow_model, seen_path=str(seen_file)))
    seen = seen_file.read_text().splitlines()
    assert cost is not None and cost >= 25 * demo.SAMPLE_HEADROOM
    assert len(seen) == demo.SAMPLE_PAGES and "page 1 of 40" in seen[0] and "page 40 of 40" in seen[-1], seen
    assert float(demo._job_scale(40, "", cost).split("=")[1]) < float(demo._job_scale(40, "", None).split("=")[1])
    assert demo.sampled_record_cost_ms(b"%PDF-1.4 not really") is None
