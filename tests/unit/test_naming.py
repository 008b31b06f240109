"""One JSON convention (issue 24.4): camelCase names, the deprecated snake_case ones beside them, data left alone."""

from __future__ import annotations

from batchlane.naming import with_legacy_fields


def test_field_names_turn_camel_case_and_keep_the_old_name_while_data_keys_stay_as_they_are():
    answer = {
        "eta_seconds": 3,
        "files": {"to_convert": 2, "failing": {"folders/my_docs/old_scan.pdf": "PDF_NOT_PDF"}, "by_type": {".pdf": 2}},
        "spec": {"output": {"on_existing": "skip"}, "options": {"_batchLane": True, "page_form": "x"}},
    }
    out = with_legacy_fields(answer)
    assert out["etaSeconds"] == out["eta_seconds"] == 3
    assert out["files"]["toConvert"] == 2
    assert out["files"]["failing"] == {"folders/my_docs/old_scan.pdf": "PDF_NOT_PDF"}  # an object key is not a field name
    assert out["spec"]["output"]["onExisting"] == "skip"
    assert out["spec"]["options"] == {"_batchLane": True, "page_form": "x"}  # the user's own options, untouched
