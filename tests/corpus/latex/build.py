"""Build the LaTeX documents of the corpus with Debian's texlive (pdflatex, run twice for page references).

usage: python build.py [OUT_DIR]   (default: the folder above, tests/corpus/)
The PDFs are committed, so tests and CI need no texlive; run this again only to change a document.
SOURCE_DATE_EPOCH pins the dates pdflatex writes, so a rebuild with the same texlive gives the same text.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import unicodedata
from pathlib import Path

HERE = Path(__file__).resolve().parent
DOCUMENTS = ("book-headings", "twocolumn-paper", "longtable-report")


def unicode_rows() -> str:
    """A row per Latin letter of ASCII and Latin-1: code point, the letter, its category, its name."""
    rows = []
    for code in range(0x41, 0x100):
        char = chr(code)
        if not char.isalpha():
            continue
        name = unicodedata.name(char, "").replace("&", "and")
        rows.append(f"U+{code:04X} & {char} & {unicodedata.category(char)} & {name.title()} \\\\")
    return "\n".join(rows) + "\n"


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else HERE.parent
    env = {**os.environ, "SOURCE_DATE_EPOCH": "1767225600", "FORCE_SOURCE_DATE": "1"}
    with tempfile.TemporaryDirectory() as work:
        for name in DOCUMENTS:
            shutil.copy(HERE / f"{name}.tex", work)
        (Path(work) / "unicode-rows.tex").write_text(unicode_rows(), encoding="utf-8")
        for name in DOCUMENTS:
            for _ in range(2):
                subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", f"{name}.tex"], cwd=work, env=env, check=True, capture_output=True)
            shutil.copy(Path(work) / f"{name}.pdf", out / f"{name}.pdf")
            print(out / f"{name}.pdf")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
