"""Size limits a page request must respect, defined once (sources in docs/architecture.md, "Pages too large for one request").

* ``MAX_PAGE_BYTES``: one page's PDF, RAW bytes (before base64). Amazon Bedrock, "API restrictions":
  up to 5 documents a request, each no more than 4.5 MB. AWS lifts that cap for PDFs sent to Claude 4
  and later, but it still holds for older models and in Converse, and a page never needs more: Claude
  sees each PDF page as an image of about 1,568 px on its long edge (Anthropic, "PDF support" / "Vision").
* ``MAX_REQUEST_BYTES``: the whole request as sent, ENCODED: the InvokeModel body is JSON with each
  PDF base64-encoded inside (4/3 of its raw size), and the limits are on that payload. Amazon Bedrock,
  "Anthropic Claude Messages API: Request and Response": at most 20 MB a request (Anthropic's own API:
  32 MB, "PDF support"); the smaller one is used. A batch record's modelInput is the same body.
"""

from __future__ import annotations

MAX_PAGE_BYTES = 4_500_000
MAX_REQUEST_BYTES = 20_000_000
# What a request carries besides its documents (system prompt, instruction, JSON keys), rounded up.
REQUEST_OVERHEAD_BYTES = 64_000


def encoded_size(raw_bytes: int) -> int:
    """Bytes that ``raw_bytes`` take once base64-encoded (with padding), as they travel in the JSON body."""
    return 4 * ((raw_bytes + 2) // 3)


PAGE_TOO_LARGE = "PAGE_TOO_LARGE"  # the failed-page reason when a page cannot be brought under MAX_PAGE_BYTES

# A page whose content streams inflate past this is never sent nor parsed further (blank check, text layer,
# render): it fails PAGE_TOO_COMPLEX, the other pages convert. The densest real pages (vector maps, CAD
# plates) are a few MB; 30 MB of drawing operators in a 59 KB file made pdfium hold ~540 MB (issue 21).
MAX_PAGE_CONTENT_BYTES = 16 * 1024 * 1024
PAGE_TOO_COMPLEX = "PAGE_TOO_COMPLEX"
