"""The page form (issues 22.1, 42.1): one request builder, two forms; auto serves a page refused in the PDF form as
images and switches the model only on evidence of a refused form (several pages, none served as PDF), whatever the wording."""

from __future__ import annotations

import base64
import io

import pytest
from PIL import Image

from batchlane.claude import ConverterConfig, FormFallbackTransport, FormMemory, ModelAnswer, ModelCallError, build_page_request, build_pages_request
from batchlane.domain import page_form as forms
from batchlane.domain.cost import Usage
from batchlane.domain.vision import CLAUDE_MAX_LONG_EDGE_PX, PAGE_IMAGE_MAX_PIXELS, claude_scaled
from batchlane.pdf.page_image import MAX_IMAGE_BYTES
from batchlane_dev.local.pdfgen import make_pdf

MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
REFUSAL = "messages.0.content.0.type: Input tag 'document' found using 'type' does not match any of the expected tags: 'image', 'text'"


def _page(pages: int = 1) -> list[tuple[int, bytes]]:
    from batchlane.pdf.split import open_pdf, plan_chunks

    document = open_pdf(make_pdf(pages, title="page form"), max_pages=pages)
    return [(p.number, p.pdf_bytes) for p in document.pages(plan_chunks(pages, pages)[0])]


def _config(form: str) -> ConverterConfig:
    return ConverterConfig(model_id=MODEL, max_tokens=4096, temperature=0.0, page_form=form)


def test_the_image_form_sends_the_rendered_page_within_claudes_limits_and_its_text_layer():
    ((number, pdf),) = _page()
    body = build_page_request(chunk_index=0, page_number=number, pdf_bytes=pdf, config=_config(forms.IMAGE)).body()
    content = body["messages"][0]["content"]
    assert [block["type"] for block in content] == ["image", "text", "text"]
    data = base64.b64decode(content[0]["source"]["data"])
    image = Image.open(io.BytesIO(data))
    # sized for Claude (issue 42.2): within 1.15 megapixels and 1,568 px, so Claude never scales it again
    assert image.width * image.height <= PAGE_IMAGE_MAX_PIXELS and max(image.size) <= CLAUDE_MAX_LONG_EDGE_PX and len(data) <= MAX_IMAGE_BYTES
    assert claude_scaled(*image.size) == image.size and image.width * image.height > 0.99 * PAGE_IMAGE_MAX_PIXELS
    assert content[0]["source"]["media_type"] == f"image/{image.format.lower()}"
    assert content[1]["text"].startswith("The text layer of page-1:\n") and "page form" in content[1]["text"].lower()
    assert not any(block["type"] == "document" for block in content)


def test_both_forms_have_one_prompt_hash_so_a_paid_batch_answer_survives_a_form_switch():
    ((number, pdf),) = _page()
    as_pdf = build_page_request(chunk_index=0, page_number=number, pdf_bytes=pdf, config=_config(forms.PDF))
    as_image = build_page_request(chunk_index=0, page_number=number, pdf_bytes=pdf, config=_config(forms.IMAGE))
    assert as_pdf.body()["messages"][0]["content"][0]["type"] == "document"
    assert (as_pdf.record_id, as_pdf.prompt_hash) == (as_image.record_id, as_image.prompt_hash)
    changed_prompt = build_page_request(chunk_index=0, page_number=number, pdf_bytes=pdf, config=ConverterConfig(MODEL, 4096, 0.5, page_form=forms.IMAGE))
    assert changed_prompt.prompt_hash != as_image.prompt_hash  # the hash still covers what changes the answer


def test_auto_follows_the_recorded_form_and_an_explicit_setting_wins():
    assert forms.effective_form("auto", {}, MODEL) == "pdf"
    assert forms.effective_form("auto", {MODEL: "image"}, MODEL) == "image"
    assert forms.effective_form("pdf", {MODEL: "image"}, MODEL) == "pdf"
    assert forms.effective_form("auto", {"other-model": "image"}, MODEL) == "pdf"


class _Bedrock:
    """Refuses PDF document blocks (worded ``refusal``) for the pages in ``refuse`` (all when None); takes images."""

    def __init__(self, refusal: str = REFUSAL, refuse: set[int] | None = None) -> None:
        self.forms: list[str] = []
        self.refusal, self.refuse = refusal, refuse

    def send(self, request):  # type: ignore[no-untyped-def]
        self.forms.append(request.page_form)
        documents = any(block["type"] == "document" for block in request.body()["messages"][0]["content"])
        if documents and (self.refuse is None or self.refuse & set(request.page_numbers)):
            raise ModelCallError("ValidationException", self.refusal, retryable=False)
        return ModelAnswer("# page", "end_turn", Usage(10, 2), served_by="on_demand")


def _send_pages(transport: FormFallbackTransport, count: int) -> list[str]:
    pages = _page(count)
    return [transport.send(build_page_request(chunk_index=0, page_number=number, pdf_bytes=pdf, config=_config(forms.PDF))).text for number, pdf in pages]


# Issue 42.1: a refusal judged by what succeeds. Bedrock's own wording for "no documents here" is unpublished;
# this is the shape of its generic schema error, with no word "document" in it.
UNWORDED = "Malformed input request: #/messages/0/content/0: extraneous key [source] is not permitted, please reformat your input and try again."
CORRUPT = "The PDF document page-2 could not be processed: its data is corrupted."


def test_a_refusal_worded_without_document_is_served_as_images_and_switches_after_three_pages():
    recorded: list[tuple[str, str]] = []
    bedrock = _Bedrock(UNWORDED)
    transport = FormFallbackTransport(bedrock, FormMemory({MODEL: "pdf"}, lambda model, form, detail: recorded.append((model, form))))

    assert _send_pages(transport, 4) == ["# page"] * 4  # every page served, as images
    assert bedrock.forms == ["pdf", "image"] * forms.MIN_FAILED + ["image"]  # three pages of evidence, then images at once
    assert recorded == [(MODEL, "image")]  # handed on once, for the other Lambdas and the batch lane


def test_one_corrupt_page_whose_error_says_document_is_served_as_an_image_and_switches_nothing():
    recorded: list[tuple[str, str]] = []
    bedrock = _Bedrock(CORRUPT, refuse={2})
    transport = FormFallbackTransport(bedrock, FormMemory({MODEL: "pdf"}, lambda model, form, detail: recorded.append((model, form))))

    assert _send_pages(transport, 5) == ["# page"] * 5
    assert bedrock.forms == ["pdf", "pdf", "image", "pdf", "pdf", "pdf"]  # only page 2 went again, as an image
    assert recorded == []


def test_corrupt_pages_after_a_pdf_page_succeeded_never_switch_the_form():
    recorded: list[tuple[str, str]] = []
    transport = FormFallbackTransport(_Bedrock(CORRUPT, refuse={2, 3, 4, 5}), FormMemory({MODEL: "pdf"}, lambda m, f, d: recorded.append((m, f))))
    assert _send_pages(transport, 5) == ["# page"] * 5
    assert recorded == []


def test_a_page_both_forms_refuse_fails_with_its_pdf_error_and_counts_for_nothing():
    class Broken:
        def __init__(self) -> None:
            self.forms: list[str] = []

        def send(self, request):  # type: ignore[no-untyped-def]
            self.forms.append(request.page_form)
            raise ModelCallError("ValidationException", f"max_tokens: must be an integer >= 1 ({request.page_form})", retryable=False)

    ((number, pdf),) = _page()
    memory = FormMemory()
    broken = Broken()
    transport = FormFallbackTransport(broken, memory)
    with pytest.raises(ModelCallError, match=r"max_tokens.*\(pdf\)"):
        transport.send(build_page_request(chunk_index=0, page_number=number, pdf_bytes=pdf, config=_config(forms.PDF)))
    assert broken.forms == ["pdf", "image"]
    assert memory.tally(MODEL) == forms.FormTally(0, 0)
    assert not forms.worth_the_other_form("ValidationException", forms.IMAGE)  # the image form never switches back


def test_the_refusal_rule_needs_three_failures_and_no_success():
    assert not forms.FormTally(succeeded=0, failed=2).refused()
    assert forms.FormTally(succeeded=0, failed=3).refused()
    assert not forms.FormTally(succeeded=1, failed=50).refused()
    assert forms.invalid_input("ValidationException") and forms.invalid_input(400) and not forms.invalid_input(429)
    assert forms.form_of_body({"messages": [{"content": [{"type": "document"}, {"type": "text"}]}]}) == "pdf"
    assert forms.form_of_body({"messages": [{"content": [{"type": "image"}, {"type": "text"}]}]}) == "image"
    assert forms.form_of_body({"messages": [{"content": "text only"}]}) is None and forms.form_of_body(None) is None


@pytest.mark.slow  # renders 20 photo pages (a few seconds)
def test_a_group_of_photo_scans_in_the_image_form_stays_within_the_request_byte_limit():
    import random

    from batchlane.domain.limits import MAX_REQUEST_BYTES
    from batchlane.pdf.split import open_pdf, plan_chunks

    rng = random.Random(7)
    # Noise photos, the worst case for PNG and JPEG alike, stored as a scanner stores them (JPEG, one a page,
    # A4 at 110 dpi); 20 a request (BATCHLANE_MAX_DOCUMENTS_PER_REQUEST allows it). Pillow writes the PDF.
    photos = [Image.frombytes("RGB", (900, 1270), rng.randbytes(900 * 1270 * 3)) for _ in range(20)]
    buffer = io.BytesIO()
    photos[0].save(buffer, "PDF", save_all=True, append_images=photos[1:], resolution=110.0, quality=90)
    document = open_pdf(buffer.getvalue(), max_pages=20)
    pages = [(p.number, p.pdf_bytes) for p in document.pages(plan_chunks(20, 20)[0])]
    request = build_pages_request(chunk_index=0, pages=pages, config=_config(forms.IMAGE))
    assert len(request.invoke_kwargs()["body"]) <= MAX_REQUEST_BYTES
    assert all(image.width * image.height <= PAGE_IMAGE_MAX_PIXELS for image in request.images)
