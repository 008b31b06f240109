"""The emulator's ``refuse_pages`` fault: named pages are declined, deterministically, in both vocabularies."""

from __future__ import annotations

import base64

import pytest

from batchlane_dev.local.bedrock import parse_faults
from batchlane_dev.local.bedrock.faults import Faults, answer_fault
from batchlane_dev.local.bedrock.invoke import model_answer as invoke_answer
from batchlane_dev.local.bedrock.model import request_pages
from batchlane_dev.local.pdfgen import make_pdf


def messages_body(*pages: int) -> dict:
    data = base64.b64encode(make_pdf(1)).decode()
    documents = [{"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": data}, "title": f"page-{n}"} for n in pages]
    return {
        "anthropic_version": "bedrock-2023-05-31",
        "max_tokens": 1000,
        "messages": [{"role": "user", "content": [*documents, {"type": "text", "text": "Convert these pages."}]}],
    }


def test_parse_reads_page_lists_and_rejects_nonsense() -> None:
    assert parse_faults("refuse_pages=3+7").refuse_pages == frozenset({3, 7})
    assert parse_faults("").refuse_pages == frozenset()
    for bad in ("refuse_pages=0", "refuse_pages=a", "refuse_pages=+"):
        with pytest.raises(ValueError, match="refuse_pages"):
            parse_faults(bad)


def test_request_pages_reads_converse_names_and_messages_titles() -> None:
    converse = {"messages": [{"role": "user", "content": [{"document": {"name": "page-12", "format": "pdf", "source": {"bytes": "x"}}}, {"text": "hi"}]}]}
    assert request_pages(converse) == frozenset({12})
    assert request_pages(messages_body(4, 5)) == frozenset({4, 5})


def test_a_request_holding_a_refused_page_is_declined_and_others_answer() -> None:
    faults = Faults(refuse_pages=frozenset({5}))
    assert answer_fault(faults, "seed", frozenset({4, 5})) == "content_filter"
    assert answer_fault(faults, "seed", frozenset({4, 6})) is None
    declined = invoke_answer(messages_body(4, 5), "seed", faults)
    assert declined["stop_reason"] == "refusal" and declined["content"][0]["text"] == ""
    answered = invoke_answer(messages_body(4), "seed", faults)
    assert answered["stop_reason"] == "end_turn" and answered["content"][0]["text"]
