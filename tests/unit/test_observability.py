"""Metrics offline: many handlers share one process and metrics are off, so nothing may pile up or print."""

from __future__ import annotations

import json
import warnings

import pytest

from batchlane.observability import metrics
from tests.interpreter import in_a_fresh_interpreter


@metrics.log_metrics
def _handler(event: dict, context: object) -> None:
    for _ in range(event["values"]):
        metrics.add_metric(name="PagesConverted", unit="Count", value=1)


def test_with_metrics_off_a_handler_prints_nothing_and_warns_of_nothing(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # Powertools' "No application metrics to publish" would raise here
        for _ in range(3):
            _handler({"values": 150}, None)  # 150 values: Powertools alone prints the set at 100
        _handler({"values": 0}, None)
    assert capsys.readouterr().out == ""
    assert metrics.provider.metric_set == {}


def test_with_metrics_on_each_invocation_prints_its_own_values_once(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    _handler({"values": 3}, None)
    _handler({"values": 2}, None)
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["PagesConverted"] for line in lines] == [[1.0] * 3, [1.0] * 2]
    assert lines[0]["_aws"]["CloudWatchMetrics"][0]["Namespace"] == "Batchlane"


def test_the_pdf_modules_make_no_tracer_so_a_bounded_childs_fork_server_stays_light() -> None:
    """pdf.bounded's fork server (one per Lambda environment, started at its first bounded PDF operation)
    preloads batchlane.pdf.survey and .fit, which import this module for its logger: making a Tracer there
    imported the X-Ray SDK and botocore, ~0.3 s of CPU of the ~1 s that server took to start."""
    in_a_fresh_interpreter(
        "import sys, batchlane.pdf.survey, batchlane.pdf.fit\n"
        "assert 'aws_xray_sdk' not in sys.modules and 'botocore.client' not in sys.modules, 'the tracer was made'\n"
        "import batchlane.observability as o\n"
        "assert o.tracer is o.tracer and 'aws_xray_sdk' in sys.modules  # made on first use, once"
    )


def test_a_name_the_module_does_not_have_is_still_an_attribute_error() -> None:
    import batchlane.observability as observability

    with pytest.raises(AttributeError, match="no attribute 'tracr'"):
        observability.tracr
