"""Issue 42.7: the quality probe's scorer (`batchlane doctor --live --quality`) passes a good answer for each sample
page and fails planted wrong ones: a running head left in, two table cells swapped, a missing sentence, the
columns read across, a wrong equation. The sample pages are built at run time and hold what their facts say."""

from __future__ import annotations

import io

import pytest
from pypdf import PdfReader

from batchlane_dev.cli.doctor.quality import KINDS, RUNNING_HEAD, Score, holds, plain, sample_pages

PAGES = {page.number: page for page in sample_pages()}

GOOD = {
    1: """# 2 Tides and Moorings

The harbour master measured the spring tides at the north quay every morning in March. High water arrived
forty minutes later than the almanac predicted on most days. Small craft were moved to the inner basin
whenever the wind turned to the east.""",
    2: """Dredging of the east channel began in April and ended in June.

The spoil was carried out to sea on a flat barge.

Depths were sounded again in July by the survey launch.

Every berth now takes a vessel of seven metres draught.

| Berth | Length (m) | Depth (m) |
|:------|-----------:|----------:|
| North | 120 | 9.5 |
| East | 85 | 7.2 |
| South | 140 | 11.0 |""",
    3: """The quay walls were checked with the classic right-angle rule below.

$$a^{2} + b^{2} = c^{2}$$

No wall leaned more than the tolerance allowed.""",
}


def _failing(number: int, markdown: str) -> list[tuple[str, tuple[str, ...]]]:
    return [(f.kind, f.expect) for f in PAGES[number].facts if not holds(f, markdown)]


def test_a_good_answer_for_every_sample_page_passes_every_fact_of_every_kind():
    score = Score()
    for number, markdown in GOOD.items():
        assert _failing(number, markdown) == [], number
        score.add(PAGES[number], markdown)
    assert all(score.total[kind] > 0 and score.passed[kind] == score.total[kind] for kind in KINDS), score.to_json()
    assert score.to_json()["table"] == {"passed": 1, "total": 1, "passRate": "1.00"}


def test_a_running_head_left_in_fails_the_furniture_fact_only():
    answer = f"{RUNNING_HEAD}\n\n{GOOD[1]}"
    assert _failing(1, answer) == [("furniture", (RUNNING_HEAD,))]
    assert [k for k, _ in _failing(3, GOOD[3] + "\n\nPage 3 of 3")] == ["furniture"]  # the folio too


def test_two_table_cells_swapped_fail_the_table_fact():
    swapped = GOOD[2].replace("| North | 120 | 9.5 |", "| North | 9.5 | 120 |")
    assert [k for k, _ in _failing(2, swapped)] == ["table"]
    across_rows = GOOD[2].replace("| East | 85 | 7.2 |", "| East | 140 | 7.2 |").replace("| South | 140 | 11.0 |", "| South | 85 | 11.0 |")
    assert [k for k, _ in _failing(2, across_rows)] == ["table"]
    as_prose = GOOD[2].split("| Berth")[0] + "Berth Length (m) Depth (m) North 120 9.5 East 85 7.2 South 140 11.0"
    assert [k for k, _ in _failing(2, as_prose)] == ["table"]  # the cells present, but no table


def test_a_missing_sentence_fails_its_text_fact_and_the_order_it_belongs_to():
    missing = GOOD[1].replace("High water arrived\nforty minutes later than the almanac predicted on most days. ", "")
    assert sorted(k for k, _ in _failing(1, missing)) == ["order", "text"]


def test_columns_read_across_fail_the_reading_order():
    across = "\n\n".join(
        [
            "Dredging of the east channel began in April and ended in June.",
            "Depths were sounded again in July by the survey launch.",
            "The spoil was carried out to sea on a flat barge.",
            "Every berth now takes a vessel of seven metres draught.",
            GOOD[2].split("\n\n", 4)[4],
        ]
    )
    assert [k for k, _ in _failing(2, across)] == ["order"]


@pytest.mark.parametrize("equation", ["a² + b² = c²", "$a^2+b^2=c^2$", r"\[ a^{2} + b^{2} = c^{2} \]"])
def test_the_equation_is_recognised_in_unicode_or_latex_and_a_wrong_one_fails(equation):
    assert _failing(3, GOOD[3].replace("$$a^{2} + b^{2} = c^{2}$$", equation)) == []
    assert [k for k, _ in _failing(3, GOOD[3].replace("c^{2}", "c^{3}"))] == ["equation"]


def test_no_answer_fails_every_fact_of_its_page():
    score = Score()
    score.add(PAGES[2], None)
    assert sum(score.passed.values()) == 0 and sum(score.total.values()) == len(PAGES[2].facts)


def test_the_sample_pages_hold_what_their_facts_say():
    """Each page's text layer has its sentences and its furniture (so a fact can be passed and failed), in order."""
    for page in PAGES.values():
        (pdf_page,) = PdfReader(io.BytesIO(page.pdf)).pages
        layer = plain(pdf_page.extract_text())
        for fact in page.facts:
            if fact.kind in ("text", "furniture"):
                assert plain(fact.expect[0]) in layer, (page.number, fact)
    assert sample_pages()[0].pdf == PAGES[1].pdf  # the same bytes every run (reportlab invariant)
