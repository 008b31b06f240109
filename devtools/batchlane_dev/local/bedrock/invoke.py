"""bedrock-runtime InvokeModel with the Anthropic Messages body: validation as Bedrock answers it.

A body that passes here is one Bedrock would accept for an Anthropic model (for the shapes
batchlane sends: text, base64 PDF document blocks and base64 image blocks). With the fault
``invoke_model_documents=refused`` a document block is refused as Bedrock's "API restrictions"
page says it may be (documents in the request body are not supported with InvokeModel). The same validator checks every
record of a batch job submitted with ``modelInvocationType: InvokeModel``.

Limits, with their sources (docs/offline.md, "InvokeModel and the two PDF modes"):
* ``anthropic_version`` must be ``bedrock-2023-05-31`` and ``max_tokens`` is required
  (Bedrock, "Anthropic Claude Messages API" request parameters).
* at most 5 documents a request (Bedrock, "API restrictions": applies to InvokeModel and Converse).
* at most 32 MB a request and 100 PDF pages a request (Anthropic, "PDF support"; Bedrock,
  "API restrictions" points to the Anthropic Messages limits).
* images: base64 JPEG, PNG, GIF or WebP, at most 3.75 MB and 8,000 px a side each, at most 20 a
  request (Bedrock, "Anthropic Claude Messages API" and Anthropic, "Vision").
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from typing import Any

from . import limits, model
from .errors import ApiError, validation
from .faults import Faults, answer_fault

ANTHROPIC_VERSION = "bedrock-2023-05-31"
MAX_DOCUMENTS = 5
MAX_REQUEST_BYTES = 32 * 1024 * 1024
MAX_PDF_PAGES = 100
MAX_IMAGES = 20
MAX_IMAGE_BYTES = 3_750_000
MAX_IMAGE_SIDE = 8000
IMAGE_MEDIA_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
# The emulator's wording for a refused document block (the shape of Anthropic's tag-mismatch errors
# as Bedrock relays them; AWS does not publish the exact text). What matters to the code: the code
# ValidationException, and that the message names the document block.
DOCUMENTS_REFUSED = (
    "{at}.type: Input tag 'document' found using 'type' does not match any of the expected tags: "
    "'image', 'text', 'tool_result', 'tool_use' (documents in the request body are not supported with InvokeModel)"
)
_TOP_LEVEL_KEYS = frozenset(
    {
        "anthropic_version",
        "anthropic_beta",
        "max_tokens",
        "messages",
        "system",
        "temperature",
        "top_p",
        "top_k",
        "stop_sequences",
        "tools",
        "tool_choice",
        "thinking",
        "metadata",
    }
)
_BLOCK_TYPES = ("text", "image", "document", "tool_use", "tool_result")


def _malformed(detail: str) -> ApiError:
    """Bedrock's wording for a body the model's schema rejects."""
    return validation(f"Malformed input request: {detail}, please reformat your input and try again.")


def parse_body(raw: bytes) -> dict[str, Any]:
    if len(raw) > MAX_REQUEST_BYTES:
        raise validation(f"Input is too long for requested model: the request is {len(raw)} bytes, over the {MAX_REQUEST_BYTES}-byte limit.")
    try:
        body = json.loads(raw)
    except ValueError:
        raise _malformed("the body is not valid JSON") from None
    if not isinstance(body, dict):
        raise _malformed("#: expected type: JSONObject")
    return body


def validate_messages(body: Any) -> None:
    """Raise ApiError(ValidationException) where Bedrock would for an Anthropic Messages body."""
    if not isinstance(body, Mapping):
        raise _malformed("#: expected type: JSONObject")
    limits.enforce(body)  # request size (local/bedrock/limits.py)
    for key in body:
        if key not in _TOP_LEVEL_KEYS:
            raise _malformed(f"#: extraneous key [{key}] is not permitted")
    if "anthropic_version" not in body:
        raise _malformed("#: required key [anthropic_version] not found")
    if body["anthropic_version"] != ANTHROPIC_VERSION:
        raise _malformed(f"#/anthropic_version: {body['anthropic_version']} is not a valid enum value")
    max_tokens = body.get("max_tokens")
    if max_tokens is None:
        raise _malformed("#: required key [max_tokens] not found")
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise _malformed("#/max_tokens: must be an integer >= 1")
    for key, low, high in (("temperature", 0, 1), ("top_p", 0, 1)):
        value = body.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high):
            raise _malformed(f"#/{key}: must be between {low} and {high}")
    system = body.get("system")
    if system is not None and not isinstance(system, (str, list)):
        raise _malformed("#/system: expected a string or a list of text blocks")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise _malformed("#: required key [messages] not found" if messages is None else "#/messages: expected minimum item count: 1")
    expected, documents, images = "user", 0, 0
    for index, message in enumerate(messages):
        where = f"#/messages/{index}"
        if not isinstance(message, Mapping) or message.get("role") not in ("user", "assistant"):
            raise _malformed(f"{where}/role: must be 'user' or 'assistant'")
        if message["role"] != expected:
            raise validation('messages: roles must alternate between "user" and "assistant", starting with "user"')
        expected = "assistant" if message["role"] == "user" else "user"
        counted = _validate_content(message.get("content"), where, message["role"])
        documents, images = documents + counted[0], images + counted[1]
    if documents > MAX_DOCUMENTS:
        raise validation(f"A request can hold at most {MAX_DOCUMENTS} documents; it holds {documents}.")
    if images > MAX_IMAGES:
        raise validation(f"A request can hold at most {MAX_IMAGES} images; it holds {images}.")


def _validate_content(content: Any, where: str, role: str) -> tuple[int, int]:
    """(documents, images) the content holds, after checking each block."""
    if isinstance(content, str):
        if not content.strip():
            raise validation(f"{where}: text content blocks must be non-empty")
        return 0, 0
    if not isinstance(content, list) or not content:
        raise _malformed(f"{where}/content: expected a string or a non-empty list of content blocks")
    documents = images = 0
    for index, block in enumerate(content):
        at = f"{where}/content/{index}"
        kind = block.get("type") if isinstance(block, Mapping) else None
        if kind not in _BLOCK_TYPES:
            raise _malformed(f"{at}/type: must be one of {', '.join(_BLOCK_TYPES)}")
        if kind == "text":
            if not isinstance(block.get("text"), str) or not block["text"].strip():
                raise validation(f"{at}: text content blocks must be non-empty")
        elif kind == "document":
            if role != "user":
                raise validation(f"{at}: documents are allowed in user messages only")
            _validate_document(block, at)
            documents += 1
        elif kind == "image":
            if role != "user":
                raise validation(f"{at}: images are allowed in user messages only")
            _validate_image(block, at)
            images += 1
        else:
            raise validation(f"{at}: the emulated model accepts text, document and image blocks only, not {kind}")
    return documents, images


def _validate_image(block: Mapping[str, Any], at: str) -> None:
    from PIL import Image, UnidentifiedImageError

    source = block.get("source")
    if not isinstance(source, Mapping):
        raise _malformed(f"{at}/source: required key [source] not found")
    if source.get("type") != "base64":
        raise validation(f"{at}/source/type: the emulator serves base64 images only")
    if source.get("media_type") not in IMAGE_MEDIA_TYPES:
        raise _malformed(f"{at}/source/media_type: must be one of {', '.join(IMAGE_MEDIA_TYPES)}")
    try:
        data = model._decode(source.get("data"))
    except model.ModelInputError as exc:
        raise _malformed(f"{at}/source/data: {exc}") from None
    if len(data) > MAX_IMAGE_BYTES:
        raise validation(f"{at}: image exceeds 3.75 MB maximum: {len(data)} bytes > {MAX_IMAGE_BYTES} bytes")
    try:
        with Image.open(io.BytesIO(data)) as image:
            width, height, fmt = image.width, image.height, (image.format or "").lower()
    except (UnidentifiedImageError, OSError):
        raise validation(f"{at}: Could not process image") from None
    if f"image/{fmt}" != source["media_type"]:
        raise validation(f"{at}: Image does not match the provided media type {source['media_type']}")
    if max(width, height) > MAX_IMAGE_SIDE:
        raise validation(f"{at}: image dimensions exceed max allowed size: {MAX_IMAGE_SIDE} pixels")


def refuse_documents(body: Mapping[str, Any], wording: str = "") -> None:
    """The fault ``invoke_model_documents=refused``: the first document block answers ValidationException
    (worded as ``document_refusal_message`` when set: AWS publishes no wording)."""
    for m, message in enumerate(body.get("messages") or []):
        content = message.get("content") if isinstance(message, Mapping) else None
        for c, block in enumerate(content if isinstance(content, list) else []):
            if isinstance(block, Mapping) and block.get("type") == "document":
                raise validation(wording or DOCUMENTS_REFUSED.format(at=f"messages.{m}.content.{c}"))


def corrupt_documents(body: Mapping[str, Any], pages: frozenset[int]) -> None:
    """The fault ``corrupt_pdf_pages``: a document block titled with one of ``pages`` answers ValidationException
    naming the document, as a PDF the model cannot parse would; an image of the same page passes."""
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, Mapping) else None
        for block in content if isinstance(content, list) else []:
            if isinstance(block, Mapping) and block.get("type") == "document" and model.request_pages({"messages": [{"content": [block]}]}) & pages:
                raise validation(f"The PDF document {block.get('title')} could not be processed: its data is corrupted (emulated fault corrupt_pdf_pages).")


def _validate_document(block: Mapping[str, Any], at: str) -> None:
    source = block.get("source")
    if not isinstance(source, Mapping):
        raise _malformed(f"{at}/source: required key [source] not found")
    if source.get("type") != "base64":
        raise validation(f"{at}/source/type: the emulator serves base64 documents only (text, content and url sources are not emulated)")
    if source.get("media_type") != "application/pdf":
        raise _malformed(f"{at}/source/media_type: must be application/pdf")
    if not isinstance(source.get("data"), str) or not source["data"]:
        raise _malformed(f"{at}/source/data: required, base64 text")
    citations = block.get("citations")
    if citations is not None and not (isinstance(citations, Mapping) and isinstance(citations.get("enabled"), bool)):
        raise _malformed(f'{at}/citations: expected {{"enabled": true|false}}')


def _check_pages(body: Mapping[str, Any]) -> None:
    pages = 0
    for message in body["messages"]:
        for block in message["content"] if isinstance(message["content"], list) else []:
            if block.get("type") == "document":
                pages += model.pdf_page_count(model._decode(block["source"]["data"]))
    if pages > MAX_PDF_PAGES:
        raise validation(f"A maximum of {MAX_PDF_PAGES} PDF pages may be provided; the request holds {pages}.")


def model_answer(body: Mapping[str, Any], seed: str, faults: Faults) -> dict[str, Any]:
    """Validate an Anthropic Messages body, draw the answer fault for ``seed``, and run the emulated model."""
    validate_messages(body)
    if faults.invoke_model_documents == "refused":
        refuse_documents(body, faults.document_refusal_message)
    if faults.corrupt_pdf_pages:
        corrupt_documents(body, faults.corrupt_pdf_pages)
    try:
        _check_pages(body)
        return model.answer_messages(body, fault=answer_fault(faults, seed, model.request_pages(body)))
    except model.ModelInputError as exc:
        raise validation(str(exc)) from exc
