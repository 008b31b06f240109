"""`batchlane doctor --live --quality`: how well the deployment reads pages, measured on pages whose facts we know.

A small sample (three pages built here with reportlab at run time, so nothing of anyone else's is shipped) goes
through both lanes on the operator's own account, in the page form the doctor chose: on-demand (one InvokeModel a
page, the converter's own request and transport) and in one batch job (the sample repeated to the account's
minimum record count). Each answer is scored against the page's facts, kind by kind: its sentences present, its
running head and folio absent, its two columns in reading order, its table's cells in their rows and columns, its
equation. Offline the model is the emulator, which reads the text layer: the score is labelled as the emulator's,
never Claude's. docs/deploy.md "Quality probe".
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import orjson

from batchlane import keys
from batchlane.aws.bedrock_runtime import BedrockRuntime
from batchlane.aws.s3 import S3Store
from batchlane.claude import ConverterConfig, ModelCallError, OnDemandTransport, build_page_request
from batchlane.claude.transports import answer_from_messages
from batchlane.domain.cost import PriceTable, Usage
from batchlane.domain.records import member_tag, pooled_record_id
from batchlane_dev.cli.doctor.checks import error_text
from batchlane_dev.cli.doctor.live import PilotPlan, run_batch_job
from batchlane_dev.cli.doctor.results import Check, failed, passed, warned

QUALITY_CHECK = "live: quality"
KINDS = ("text", "furniture", "order", "table", "equation")
PASS_RATE = Decimal("0.8")  # below this for any fact kind, the check warns (on the real model)

RUNNING_HEAD = "Harbour Survey Annual Report"
RUNNING_CHAPTER = "Chapter 2: Tides and Berths"
PAGES = 3


@dataclass(frozen=True)
class Fact:
    """One thing a good answer for a page shows. ``kind``: text (``expect[0]`` is in it), furniture (``expect[0]``
    is NOT in it), order (``expect`` appear in this order), table (each ``expect`` row, cells joined by ``|``, is a
    row of one Markdown table, cells in order), equation (``expect[0]``, normalized, is in it)."""

    kind: str
    page: int
    expect: tuple[str, ...]


@dataclass(frozen=True)
class SamplePage:
    number: int
    pdf: bytes
    facts: tuple[Fact, ...]


_P1 = (
    "The harbour master measured the spring tides at the north quay every morning in March.",
    "High water arrived forty minutes later than the almanac predicted on most days.",
    "Small craft were moved to the inner basin whenever the wind turned to the east.",
)
_LEFT = ("Dredging of the east channel began in April and ended in June.", "The spoil was carried out to sea on a flat barge.")
_RIGHT = ("Depths were sounded again in July by the survey launch.", "Every berth now takes a vessel of seven metres draught.")
_TABLE = (("Berth", "Length (m)", "Depth (m)"), ("North", "120", "9.5"), ("East", "85", "7.2"), ("South", "140", "11.0"))
_P3 = ("The quay walls were checked with the classic right-angle rule below.", "No wall leaned more than the tolerance allowed.")
EQUATION = "a^2+b^2=c^2"


def _folio(number: int) -> str:
    return f"Page {number} of {PAGES}"


def sample_pages() -> list[SamplePage]:
    """The three sample pages and their facts (reportlab, invariant: the same bytes every run)."""
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas
    from reportlab.platypus import Table, TableStyle

    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=A4, invariant=True)
    width, height = A4

    def furniture(number: int) -> None:
        pdf.setFont("Helvetica", 9)
        pdf.drawString(56, height - 40, RUNNING_HEAD)
        pdf.drawRightString(width - 56, height - 40, RUNNING_CHAPTER)
        pdf.drawCentredString(width / 2, 36, _folio(number))
        pdf.setFont("Helvetica", 11)

    def lines(x: float, y: float, sentences: Iterable[str], step: float = 18) -> float:
        for sentence in sentences:
            pdf.drawString(x, y, sentence)
            y -= step
        return y

    furniture(1)
    pdf.setFont("Helvetica-Bold", 16)
    pdf.drawString(56, height - 100, "2 Tides and Moorings")
    pdf.setFont("Helvetica", 11)
    lines(56, height - 140, _P1, step=24)
    pdf.showPage()

    furniture(2)
    column = (width - 112 - 24) / 2
    for x, sentences in ((56, _LEFT), (56 + column + 24, _RIGHT)):
        y = height - 100
        for sentence in sentences:  # each sentence wrapped to its column
            words, line = sentence.split(), ""
            for word in words:
                if pdf.stringWidth(f"{line} {word}".strip(), "Helvetica", 11) > column:
                    pdf.drawString(x, y, line)
                    y, line = y - 15, word
                else:
                    line = f"{line} {word}".strip()
            pdf.drawString(x, y, line)
            y -= 24
    table = Table([list(row) for row in _TABLE], colWidths=[110, 90, 90])
    table.setStyle(TableStyle([("GRID", (0, 0), (-1, -1), 0.5, "black"), ("FONTNAME", (0, 0), (-1, 0), "Helvetica-Bold")]))
    table.wrapOn(pdf, width, height)
    table.drawOn(pdf, 56, height - 420)
    pdf.showPage()

    furniture(3)
    pdf.setFont("Helvetica", 11)
    pdf.drawString(56, height - 100, _P3[0])
    pdf.setFont("Helvetica", 14)
    pdf.drawCentredString(width / 2, height - 150, "a\u00b2 + b\u00b2 = c\u00b2")
    pdf.setFont("Helvetica", 11)
    pdf.drawString(56, height - 200, _P3[1])
    pdf.showPage()
    pdf.save()

    from batchlane.pdf.split import open_pdf, plan_chunks

    document = open_pdf(buffer.getvalue(), max_pages=PAGES)
    pdfs = {p.number: p.pdf_bytes for p in document.pages(plan_chunks(PAGES, PAGES)[0])}
    furniture_facts = [f for n in range(1, PAGES + 1) for f in (Fact("furniture", n, (RUNNING_HEAD,)), Fact("furniture", n, (_folio(n),)))]
    facts: dict[int, list[Fact]] = {n: [f for f in furniture_facts if f.page == n] for n in range(1, PAGES + 1)}
    facts[1] += [Fact("text", 1, (s,)) for s in _P1] + [Fact("order", 1, _P1)]
    facts[2] += [Fact("text", 2, (s,)) for s in (*_LEFT, *_RIGHT)] + [Fact("order", 2, (*_LEFT, *_RIGHT)), Fact("table", 2, tuple("|".join(r) for r in _TABLE))]
    facts[3] += [Fact("text", 3, (s,)) for s in _P3] + [Fact("equation", 3, (EQUATION,))]
    return [SamplePage(n, pdfs[n], tuple(facts[n])) for n in range(1, PAGES + 1)]


# -- the scorer -----------------------------------------------------------------------------------------------
_MARKUP = re.compile(r"[*_`#>]+")
_SPACE = re.compile(r"\s+")


def plain(text: str) -> str:
    """Text as compared: Markdown emphasis, heading and quote marks dropped, case and spacing folded."""
    return _SPACE.sub(" ", _MARKUP.sub("", text)).strip().lower()


def _equation_form(text: str) -> str:
    """An equation as compared: LaTeX or Unicode, spacing and grouping dropped (``$a^{2} + b^2$`` and ``a² + b²`` agree)."""
    text = text.replace("\u00b2", "^2").replace("\u00b3", "^3").replace("\u2212", "-")
    text = re.sub(r"\\(left|right|displaystyle|,|;|!|quad)", "", text)
    return re.sub(r"[\s${}]+", "", text).lower()


def table_rows(markdown: str) -> list[list[str]]:
    """Every Markdown table row in the answer (separator rows left out), its cells compared as plain text."""
    rows = []
    for line in markdown.splitlines():
        line = line.strip()
        if not (line.startswith("|") and line.endswith("|") and len(line) > 1):
            continue
        cells = [plain(cell) for cell in line[1:-1].split("|")]
        if all(re.fullmatch(r":?-{2,}:?", c.replace(" ", "")) for c in cells if c) and any(cells):
            continue
        rows.append(cells)
    return rows


def holds(fact: Fact, markdown: str) -> bool:
    """Whether ``markdown`` (the answer for the fact's page) shows the fact."""
    text = plain(markdown)
    if fact.kind == "text":
        return plain(fact.expect[0]) in text
    if fact.kind == "furniture":
        return plain(fact.expect[0]) not in text
    if fact.kind == "order":
        places = [text.find(plain(s)) for s in fact.expect]
        return all(p >= 0 for p in places) and places == sorted(places)
    if fact.kind == "table":
        rows = table_rows(markdown)
        wanted = [[plain(c) for c in row.split("|")] for row in fact.expect]
        return all(row in rows for row in wanted)
    if fact.kind == "equation":
        return _equation_form(fact.expect[0]) in _equation_form(markdown)
    raise ValueError(f"unknown fact kind {fact.kind!r}")


@dataclass
class Score:
    """Facts passed and checked, per kind, over every answer scored."""

    passed: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    total: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))

    def add(self, page: SamplePage, markdown: str | None) -> None:
        """One answer for ``page`` (None: no answer came back, every fact of the page fails)."""
        for fact in page.facts:
            self.total[fact.kind] += 1
            self.passed[fact.kind] += int(markdown is not None and holds(fact, markdown))

    def rate(self, kind: str) -> Decimal:
        return (Decimal(self.passed[kind]) / self.total[kind]).quantize(Decimal("0.01")) if self.total[kind] else Decimal(0)

    def to_json(self) -> dict[str, Any]:
        return {kind: {"passed": self.passed[kind], "total": self.total[kind], "passRate": str(self.rate(kind))} for kind in KINDS}

    def line(self) -> str:
        return ", ".join(f"{kind} {self.passed[kind]}/{self.total[kind]}" for kind in KINDS)


# -- the two lanes ----------------------------------------------------------------------------------------------
@dataclass
class LaneResult:
    score: Score
    usage: Usage
    batch: bool
    note: str = ""

    def cost(self, prices: PriceTable, model_id: str) -> Decimal | None:
        try:
            return prices.cost(model_id, self.usage, batch=self.batch)
        except KeyError:
            return None


def on_demand_lane(runtime_client: Any, config: ConverterConfig, pages: list[SamplePage]) -> LaneResult:
    """Each sample page once through the on-demand path's own request builder and transport."""
    transport = OnDemandTransport(BedrockRuntime(lambda seconds: runtime_client))
    score, usage, errors = Score(), Usage(), []
    for page in pages:
        request = build_page_request(chunk_index=0, page_number=page.number, pdf_bytes=page.pdf, config=config)
        try:
            answer = transport.send(request)
        except ModelCallError as exc:
            errors.append(f"page {page.number}: {exc.code}")
            score.add(page, None)
            continue
        usage = usage + answer.usage
        score.add(page, answer.text)
    return LaneResult(score, usage, batch=False, note="; ".join(errors))


def batch_lane(bedrock: Any, s3: Any, plan: PilotPlan, pages: list[SamplePage]) -> LaneResult:
    """The sample repeated to ``plan.records`` records in one batch job (the account's minimum), each answer scored."""
    requests, page_of = [], {}
    for i in range(max(plan.records, len(pages))):
        page = pages[i % len(pages)]
        request = build_page_request(chunk_index=i // 50, page_number=i + 1, pdf_bytes=page.pdf, config=plan.config)
        requests.append(request)
        page_of[pooled_record_id(member_tag(0), request.record_id)] = page
    store = S3Store(s3, plan.bucket)
    run = run_batch_job(bedrock, store, plan, requests, f"{keys.BATCH_PREFIX}doctor-quality-{plan.stamp}/", component="doctor-quality")
    answers: dict[str, str] = {}
    usage = Usage()
    for key in run.output_keys:
        for line in store.iter_lines(key):
            if not line.strip():
                continue
            record = orjson.loads(line)
            output = record.get("modelOutput")
            if isinstance(output, dict) and record.get("recordId") in page_of:
                answer = answer_from_messages(output, served_by="batch")
                answers[record["recordId"]] = answer.text
                usage = usage + answer.usage
    score = Score()
    for record_id, page in page_of.items():
        score.add(page, answers.get(record_id))
    note = f"{run.job['status']} in {run.elapsed_s:.0f} s, {len(answers)}/{len(requests)} records answered"
    if run.stopped_late:
        note = f"stopped after {plan.timeout_s / 60:.0f} min (records it processed are billed), {len(answers)}/{len(requests)} answered"
    return LaneResult(score, usage, batch=True, note=note)


def _money(value: Decimal | None) -> str:
    return "unknown (no price for the model)" if value is None else f"${value}"


def run_quality(runtime_client: Any, bedrock: Any, s3: Any, plan: PilotPlan, *, emulated_by: str | None) -> Check:
    """Both lanes on the sample; one check with the pass rate per fact kind and the cost of each lane.

    ``emulated_by``: the emulator's label when the target is the offline stack (the score is then said to be
    the emulator's, not Claude's, and never warns)."""
    try:
        pages = sample_pages()
        lanes = {"onDemand": on_demand_lane(runtime_client, plan.config, pages), "batch": batch_lane(bedrock, s3, plan, pages)}
    except Exception as exc:
        return failed(QUALITY_CHECK, f"{plan.model_id}: {error_text(exc)}")
    scored_by = f"{emulated_by}: the emulator's score, not Claude's" if emulated_by else f"{plan.model_id} ({plan.config.page_form} form)"
    costs = {name: lane.cost(plan.prices, plan.model_id) for name, lane in lanes.items()}
    total = None if None in costs.values() else sum((c for c in costs.values() if c is not None), Decimal(0))
    data = {
        "quality": {
            "scoredBy": scored_by,
            "emulated": emulated_by is not None,
            "modelId": plan.model_id,
            "pageForm": plan.config.page_form,
            "samplePages": len(pages),
            "lanes": {
                name: {"byKind": lane.score.to_json(), "costUsd": None if costs[name] is None else str(costs[name]), "note": lane.note}
                for name, lane in lanes.items()
            },
            "costUsd": None if total is None else str(total),
        }
    }
    detail = (
        f"scored by {scored_by}; on-demand: {lanes['onDemand'].score.line()}, {_money(costs['onDemand'])}"
        f"{' (' + lanes['onDemand'].note + ')' if lanes['onDemand'].note else ''}; "
        f"batch: {lanes['batch'].score.line()}, {_money(costs['batch'])} ({lanes['batch'].note}); cost {_money(total)}"
    )
    weak = [f"{name} {kind} {lane.score.rate(kind)}" for name, lane in lanes.items() for kind in KINDS if lane.score.rate(kind) < PASS_RATE]
    result = passed(QUALITY_CHECK, detail) if emulated_by or not weak else warned(QUALITY_CHECK, f"{detail}; below {PASS_RATE}: {', '.join(weak)}")
    return Check(result.name, result.ok, result.detail, result.severity, data)
