"""Which form a page is sent in: the PDF page as a document block, or its rendered image plus its text layer.

The two vendors' pages disagree on PDF documents in InvokeModel (docs/architecture.md "The page
form"), so the form is a setting (``pdf`` | ``image`` | ``auto``); ``auto`` follows what the doctor
or a refused call recorded for the model, and starts with ``pdf`` when nothing is recorded.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

PDF = "pdf"
IMAGE = "image"
AUTO = "auto"
FORMS = (PDF, IMAGE)
SETTINGS = (PDF, IMAGE, AUTO)

# What Bedrock says when it will not take a document block in this API ("API restrictions":
# documents in the request body are not supported with InvokeModel). Matched loosely: the
# wording is AWS's and may change; the code is always ValidationException.
_DOCUMENT_REFUSAL = re.compile(r"document", re.IGNORECASE)


def other(form: str) -> str:
    return IMAGE if form == PDF else PDF


def effective_form(setting: str, recorded: Mapping[str, str], model_id: str) -> str:
    """The form to send for ``model_id``: the setting when it names one, else what was recorded (pdf when nothing was)."""
    if setting in FORMS:
        return setting
    return recorded.get(model_id, PDF) if recorded.get(model_id) in FORMS else PDF


def is_form_refusal(code: str, message: str, form: str) -> bool:
    """A call refused for its page form: a ValidationException about documents, for a PDF-form request.

    The image form is documented on both sides; a ValidationException on it is about something
    else (size, body), so it never switches back.
    """
    return form == PDF and code == "ValidationException" and bool(_DOCUMENT_REFUSAL.search(message or ""))
