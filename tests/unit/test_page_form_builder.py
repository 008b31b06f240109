"""The page form (issue 22.1): one request builder, two forms; auto switches on a refused document block and keeps to it."""

from __future__ import annotations

import base64
import io

import pytest
from PIL import Image

from batchlane.converter import ConverterConfig, FormFallbackTransport, FormMemory, ModelAnswer, ModelCallError, build_page_request, build_pages_request
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
    """Refuses PDF document blocks as the Bedrock 'API restrictions' page says it may; takes images."""

    def __init__(self) -> None:
        self.forms: list[str] = []

    def send(self, request):  # type: ignore[no-untyped-def]
        self.forms.append(request.page_form)
        if any(block["type"] == "document" for block in request.body()["messages"][0]["content"]):
            raise ModelCallError("ValidationException", REFUSAL, retryable=False)
        return ModelAnswer("# page", "end_turn", Usage(10, 2), served_by="on_demand")


def test_a_refused_pdf_page_is_sent_again_as_an_image_and_later_pages_go_as_images_at_once():
    recorded: list[tuple[str, str]] = []
    bedrock = _Bedrock()
    transport = FormFallbackTransport(bedrock, FormMemory({MODEL: "pdf"}, lambda model, form, detail: recorded.append((model, form))))
    pages = _page(3)
    first = build_page_request(chunk_index=0, page_number=1, pdf_bytes=pages[0][1], config=_config(forms.PDF))
    assert transport.send(first).text == "# page"
    group = build_pages_request(chunk_index=0, pages=pages[1:], config=_config(forms.PDF))
    assert transport.send(group).text == "# page"
    assert bedrock.forms == ["pdf", "image", "image"]  # one refusal, then image from then on
    assert recorded == [(MODEL, "image")]  # handed on for the other Lambdas and the batch lane


def test_a_validation_error_about_something_else_is_not_a_form_refusal():
    class Broken:
        def send(self, request):  # type: ignore[no-untyped-def]
            raise ModelCallError("ValidationException", "max_tokens: must be an integer >= 1", retryable=False)

    ((number, pdf),) = _page()
    transport = FormFallbackTransport(Broken(), FormMemory())
    with pytest.raises(ModelCallError, match="max_tokens"):
        transport.send(build_page_request(chunk_index=0, page_number=number, pdf_bytes=pdf, config=_config(forms.PDF)))
    assert not forms.is_form_refusal("ValidationException", REFUSAL, forms.IMAGE)  # the image form never switches back


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
