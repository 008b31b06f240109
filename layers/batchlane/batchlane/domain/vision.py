"""How Claude sizes an image and counts its tokens, written once: the size a page image is rendered to
(pdf/page_image.py), what a budget holds for it (domain/budget.py) and what the offline emulator bills.

Anthropic, "Vision" (docs.claude.com/en/docs/build-with-claude/vision, read 2026-12-06): an image whose long
edge is over 1,568 px, or that is over about 1,600 tokens, is first scaled down, aspect ratio kept, until it
is within both; the largest sizes not scaled are listed per aspect ratio (1:1 1092×1092, 3:4 951×1268, 2:3
896×1344, 9:16 819×1456, 1:2 784×1568); it recommends sending no more than 1.15 megapixels (within 1,568 px
both ways), since a larger image only adds time to the first token; an image costs about width × height / 750
tokens. Numbers and why: docs/decisions/0007-page-forms.md.
"""

from __future__ import annotations

import math

CLAUDE_MAX_LONG_EDGE_PX = 1568
# Claude's pixel threshold: the page-shaped (3:4) size Anthropic lists as not scaled, 951 × 1268 = 1,205,868 px,
# which is "1.15 megapixels" read as 1.15 × 2**20 (1,205,862) to within 6 px.
CLAUDE_MAX_IMAGE_PIXELS = 951 * 1268
IMAGE_TOKEN_PIXELS = 750  # an image costs about width × height / 750 tokens
# What batchlane renders a page to: Anthropic's recommendation (at most 1.15 megapixels, read as 1,150,000 px),
# below Claude's threshold however "mega" is read, so Claude never scales a page image again.
PAGE_IMAGE_MAX_PIXELS = 1_150_000


def fit_within(width: int, height: int, *, max_long_edge: int, max_pixels: int) -> tuple[int, int]:
    """``width`` × ``height`` scaled down (aspect ratio kept, whole pixels, never up) to at most
    ``max_long_edge`` on its long edge and ``max_pixels`` in area."""
    if width <= 0 or height <= 0:
        return max(width, 0), max(height, 0)
    factor = min(1.0, max_long_edge / max(width, height), math.sqrt(max_pixels / (width * height)))
    if factor >= 1.0:
        return width, height
    return max(1, math.floor(width * factor)), max(1, math.floor(height * factor))


def claude_scaled(width: int, height: int) -> tuple[int, int]:
    """The size Claude reads an image at: as sent when within its limits, else scaled down to them."""
    return fit_within(width, height, max_long_edge=CLAUDE_MAX_LONG_EDGE_PX, max_pixels=CLAUDE_MAX_IMAGE_PIXELS)


def image_tokens(width: int, height: int) -> int:
    """The input tokens of an image of ``width`` × ``height`` px as Claude counts them: after its own scaling."""
    scaled_width, scaled_height = claude_scaled(width, height)
    return math.ceil(scaled_width * scaled_height / IMAGE_TOKEN_PIXELS)


# The most one image can cost (Claude scales anything larger down to this) and what a page image costs at most.
CLAUDE_MAX_IMAGE_TOKENS = math.ceil(CLAUDE_MAX_IMAGE_PIXELS / IMAGE_TOKEN_PIXELS)  # 1,608
PAGE_IMAGE_MAX_TOKENS = math.ceil(PAGE_IMAGE_MAX_PIXELS / IMAGE_TOKEN_PIXELS)  # 1,534


def page_image_size(width_pt: float, height_pt: float) -> tuple[int, int]:
    """The pixel size a page of ``width_pt`` × ``height_pt`` points is rendered to: as large as fits within
    1,568 px on its long edge and :data:`PAGE_IMAGE_MAX_PIXELS` (an A4 page: 901 × 1,275 px, 1,532 tokens)."""
    width_pt, height_pt = max(width_pt, 1.0), max(height_pt, 1.0)
    long_edge = max(width_pt, height_pt)
    # Start from the long edge at its limit, then let fit_within take the area down.
    width = max(1, math.floor(width_pt * CLAUDE_MAX_LONG_EDGE_PX / long_edge))
    height = max(1, math.floor(height_pt * CLAUDE_MAX_LONG_EDGE_PX / long_edge))
    return fit_within(width, height, max_long_edge=CLAUDE_MAX_LONG_EDGE_PX, max_pixels=PAGE_IMAGE_MAX_PIXELS)
