"""How much of a page's own text layer an answer holds, and the re-ask when it is too little.

Coverage is the share of the text layer's words (lower-cased, with repeats) that appear
in the answer. Markdown syntax adds words, never removes them, so a faithful answer
scores near 1; a model that skipped half the page scores near 0.5. Pages with fewer
than ``min_words`` words in their text layer (scans, figures) are not judged: the text
layer says nothing useful about them.

The re-ask is on-demand only (its prompt holds the first answer, so no batch record
could have been prepared for it) and happens at most once per page.
"""

from __future__ import annotations

import io
import re
from collections import Counter
from dataclasses import dataclass

from pypdf import PdfReader

from batchlane.claude.request import ConverterConfig, PageRequest
from batchlane.domain.records import record_id

_WORD = re.compile(r"\w+", re.UNICODE)

REASK_INSTRUCTION = (
    "Convert this PDF page to Markdown. A first conversion, below between the <first_answer> tags, "
    "left out part of the page's text. Convert the WHOLE page again, every piece of text in reading order, "
    "and output only the Markdown of the page.\n\n<first_answer>\n{first}\n</first_answer>"
)


def text_layer(pdf_bytes: bytes) -> str:
    """The text layer of a one-page PDF ("" when it has none or cannot be read)."""
    try:
        return PdfReader(io.BytesIO(pdf_bytes)).pages[0].extract_text() or ""
    except Exception:  # an unreadable text layer only means no coverage check and a default estimate
        return ""


def words(text: str) -> Counter[str]:
    return Counter(w.lower() for w in _WORD.findall(text))


@dataclass(frozen=True)
class CoverageRule:
    threshold: float = 0.6  # 0 disables the re-ask
    min_words: int = 20

    @property
    def enabled(self) -> bool:
        """False with the threshold at 0: callers then need no text layer at all."""
        return self.threshold > 0

    def coverage(self, answer: str, layer: str) -> float | None:
        """Share of the layer's words found in the answer; None when the page is not judged."""
        if not self.enabled:
            return None
        expected = words(layer)
        total = sum(expected.values())
        if total < self.min_words:
            return None
        found = words(answer)
        return sum(min(count, found[w]) for w, count in expected.items()) / total

    def too_low(self, answer: str, layer: str) -> bool:
        value = self.coverage(answer, layer)
        return value is not None and value < self.threshold


def build_reask_request(*, chunk_index: int, page_number: int, pdf_bytes: bytes, config: ConverterConfig, first_answer: str) -> PageRequest:
    """The re-ask: the same Messages body as the page request (one builder), with the first answer in its instruction."""
    return PageRequest(
        record_id=f"{record_id(chunk_index, page_number)}-reask",
        model_id=config.model_id,
        system=config.system,
        text=REASK_INSTRUCTION.format(first=first_answer.strip() or "(empty)"),
        max_tokens=config.max_tokens,
        temperature=config.temperature,
        documents=((f"page-{page_number}", pdf_bytes),),
        page_numbers=(page_number,),
    )
