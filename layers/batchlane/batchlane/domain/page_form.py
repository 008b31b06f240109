"""Which form a page is sent in: the PDF page as a document block, or its rendered image plus its text layer.

The two vendors' pages disagree on PDF documents in InvokeModel (docs/architecture.md "The page
form"), so the form is a setting (``pdf`` | ``image`` | ``auto``); ``auto`` follows what the doctor
or the evidence of earlier calls recorded for the model, and starts with ``pdf`` when nothing is recorded.

AWS publishes no wording for a refused form: a refusal is judged by what succeeds, never by words in an
error (decision 0007). A PDF-form request that fails as invalid input, whatever its message says, is
evidence against the form; the form is refused for the model only when at least ``MIN_FAILED`` such
requests failed and none in that form succeeded, so one corrupt page (whatever its error mentions) never
switches a model, and a refusal worded any way is still caught.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

PDF = "pdf"
IMAGE = "image"
AUTO = "auto"
FORMS = (PDF, IMAGE)
SETTINGS = (PDF, IMAGE, AUTO)

# Requests of one form that must fail as invalid input, with none of that form succeeding, before the form
# counts as refused: three pages (or page groups) of the same chunk or lane, not one bad page.
MIN_FAILED = 3


def other(form: str) -> str:
    return IMAGE if form == PDF else PDF


def effective_form(setting: str, recorded: Mapping[str, str], model_id: str) -> str:
    """The form to send for ``model_id``: the setting when it names one, else what was recorded (pdf when nothing was)."""
    if setting in FORMS:
        return setting
    return recorded.get(model_id, PDF) if recorded.get(model_id) in FORMS else PDF


def invalid_input(code: object) -> bool:
    """The request itself was refused: ``ValidationException`` on-demand (Bedrock's error for input it will not
    take), errorCode 400 in a batch record. What the message says is not read."""
    return str(code) in ("ValidationException", "400")


def worth_the_other_form(code: object, form: str) -> bool:
    """A failed PDF-form call to try again as images: any invalid-input error. The image form is documented on
    both sides, so an image-form failure is about something else (size, body) and never tries pdf."""
    return form == PDF and invalid_input(code)


@dataclass
class FormTally:
    """What one form's requests did for a model, in one scope (a chunk's calls, a lane's records, a doctor run)."""

    succeeded: int = 0  # the model answered (whatever the answer's verdict)
    failed: int = 0  # refused as invalid input (on-demand: and then answered in the other form)

    def refused(self) -> bool:
        """The form is refused here: at least MIN_FAILED requests failed as invalid input and none succeeded."""
        return self.failed >= MIN_FAILED and self.succeeded == 0


def form_of_body(body: Any) -> str | None:
    """The page form of an Anthropic Messages body (a batch record's ``modelInput``): pdf when it holds a
    document block, image when it holds an image block, None when it is neither or unreadable."""
    if not isinstance(body, Mapping):
        return None
    kinds: set[Any] = set()
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, Mapping) else None
        if isinstance(content, list):
            kinds.update(block.get("type") for block in content if isinstance(block, Mapping))
    if "document" in kinds:
        return PDF
    return IMAGE if "image" in kinds else None
