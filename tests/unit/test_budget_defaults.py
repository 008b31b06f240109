"""The deployment's defaults admit the largest job they allow (issue 21.5): `batchlane demo --pages 10000`
was refused BUDGET_EXCEEDED by the default budget; and a refusal names the limit and how to raise it."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from batchlane.config import Settings
from batchlane.domain.budget import Limits, Standing, check_hold, check_new_job, check_worst_case
from batchlane.domain.cost import PriceTable
from batchlane.domain.errors import BudgetExceeded, LimitReached
from batchlane.filejob.budget import worst_case_survey_usage
from batchlane.pdf.survey import PageSurvey, survey_pdf
from batchlane_dev.local.pdfgen import make_pdf

SAMPLE_PAGES = 200  # the demo's pages repeat: a 200-page sample scales to 10,000 exactly (blank every 25th)


def _defaults() -> tuple[Settings, Limits]:
    settings = Settings()
    limits = Limits(Decimal(str(settings.batchlane_budget_usd_per_month)), settings.batchlane_max_live_jobs, settings.batchlane_max_live_pages)
    return settings, limits


def test_the_default_budget_admits_the_demo_at_the_page_limit(tmp_path: Path) -> None:
    settings, limits = _defaults()
    path = tmp_path / "demo.pdf"
    path.write_bytes(make_pdf(SAMPLE_PAGES, blank_every=25))  # what `batchlane demo --pages N` converts
    sample = survey_pdf(path, max_pages=SAMPLE_PAGES)
    scale = settings.batchlane_max_pages // SAMPLE_PAGES
    largest = PageSurvey(sample.pages * scale, sample.blank * scale, sample.text_chars_nonblank * scale, sample.scans * scale, sample.inspected)
    hold = PriceTable(settings.batchlane_prices).cost(settings.batchlane_model_id, worst_case_survey_usage(largest, settings))

    check_worst_case(limits, Standing(Decimal(0), 0, 0), estimate_usd=hold, worst_usd=hold, hold_usd=Decimal(0), pages=largest.pages)  # admitted


def test_a_refusal_names_the_limit_and_how_to_raise_it() -> None:
    limits = Limits(Decimal("10"), max_live_jobs=2, max_live_pages=100)
    with pytest.raises(BudgetExceeded) as budget:
        check_worst_case(limits, Standing(Decimal(0), 0, 0), estimate_usd=Decimal("3"), worst_usd=Decimal("25"), hold_usd=Decimal("2"), pages=10)
    assert "could cost up to 25.00 USD at worst" in str(budget.value) and "only 10.00 USD of this month's budget is left" in str(budget.value)
    assert "batchlane budget --set-for USER --usd-per-month" in str(budget.value) and "usdPerMonth" in str(budget.value)
    with pytest.raises(LimitReached) as pages:
        check_hold(limits, Standing(Decimal(0), 0, 90), hold_usd=Decimal("1"), pages=20)
    assert "maxLivePages" in str(pages.value) and "--max-live-pages" in str(pages.value)
    with pytest.raises(LimitReached) as jobs:
        check_new_job(limits, Standing(Decimal(0), 2, 0))
    assert "maxLiveJobs" in str(jobs.value) and "--max-live-jobs" in str(jobs.value)
