"""One-page PDFs cut from a chunk PDF by copying its objects' bytes: no parse of the page, no re-encode.

pdfium's ``import_pages`` + ``save`` cost ~4 ms of CPU a page on a real book (each page's fonts and
resources are parsed, cloned and written again for every one-page PDF). The chunk PDFs job creation
stores are written by pdfium (:meth:`batchlane.pdf.split.PdfDocument.chunk_pdf`): one classic xref
table, every object ``N 0 obj ... endobj`` at the offset the table gives, a flat page tree whose pages
carry their own ``/MediaBox`` and ``/Resources``, strings with their parentheses escaped. Over such a
file a page's PDF is the page object, everything it references (found by scanning each object's
dictionary, never its stream data), the chunk's catalog and page tree numbers re-used for a one-page
catalog and tree, and an xref table of only the objects written: the objects keep their numbers and
their bytes, so nothing in them is rewritten. docs/decisions/0024-page-copy-by-object-bytes.md.

Anything else (another writer's syntax, an incremental update, encryption, inherited attributes, a page
that references another page, a reference this scanner cannot be sure of) gives ``None``: the caller
then copies the page with pdfium, as before. Pure Python, linear in the chunk's size, no pdfium call.
"""

from __future__ import annotations

import re

# A literal string as pdfium writes it: every parenthesis inside escaped, no raw line break. What is
# left of a dictionary once they are blanked holds no parenthesis and no comment, or the file is not read here.
_LITERAL = re.compile(rb"\((?:[^()\\\r\n]|\\.)*\)", re.S)
_NOT_OURS = re.compile(rb"[()%]")
# A reference: two integers and R, after a delimiter or a space (never the tail of a name such as /F1).
_REF = re.compile(rb"(?<![^\s\[\]<>{}])([0-9]+)\s+([0-9]+)\s+R(?![^\s/\[\]()<>{}%])")
_NAME = re.compile(rb"/[^\s/\[\]()<>{}%]*")
_REF_HINT = re.compile(rb"\sR")  # no reference without it: most objects are skipped at C speed
_DELIMITED = frozenset(b" \t\r\n\f\x00>")  # what may come before the stream keyword (PDF 32000-1, 7.3.8.1)
_OBJ_HEADER = re.compile(rb"([0-9]+) 0 obj\b")
_XREF_SECTION = re.compile(rb"([0-9]+) ([0-9]+)[ ]?\r?\n")
_XREF_ENTRY = re.compile(rb"([0-9]{10}) ([0-9]{5}) ([nf])(?: \r| \n|\r\n)")
_TRAILER = re.compile(rb"trailer\s*<<(.*?)>>\s*startxref\s*([0-9]+)\s*%%EOF\s*$", re.S)
_INHERITABLE = frozenset({b"/Resources", b"/MediaBox", b"/CropBox", b"/Rotate"})


class NotOurs(Exception):
    """The file is not laid out as this copier expects."""


class ChunkObjects:
    """The object table of one pdfium-written chunk PDF. Build with :meth:`parse`."""

    def __init__(self, data: bytes, header: bytes, root: int, pages_ref: int, kids: list[int], spans: dict[int, tuple[int, int]]) -> None:
        self._data = data
        self._view = memoryview(data)  # pages are joined from slices of it: no copy per object
        self._header = header
        self._root = root
        self._pages = pages_ref
        self.kids = kids
        self._spans = spans  # object number -> (start, end) of "N 0 obj ... endobj<eol>"
        self._refs: dict[int, tuple[int, ...]] = {}
        self._reach: dict[int, frozenset[int]] = {}
        self._forbidden = frozenset({root, pages_ref, *kids})

    @classmethod
    def parse(cls, data: bytes) -> ChunkObjects | None:
        try:
            return cls._parse(data)
        except (NotOurs, ValueError, IndexError, KeyError):
            return None

    @classmethod
    def _parse(cls, data: bytes) -> ChunkObjects:
        eol = data.find(b"\n", 0, 64)
        if not data.startswith(b"%PDF-1.") or eol < 0:
            raise NotOurs("header")
        second = data.find(b"\n", eol + 1, eol + 64)  # the binary-marker comment line pdfium writes
        header = data[: second + 1] if second > 0 and data[eol + 1 : eol + 2] == b"%" else data[: eol + 1]
        trailer = _TRAILER.search(data, max(0, len(data) - 4096))
        if trailer is None:
            raise NotOurs("trailer")
        fields = trailer.group(1)
        if b"/Prev" in fields or b"/Encrypt" in fields or b"/XRefStm" in fields:
            raise NotOurs("incremental or encrypted")
        root_match = re.search(rb"/Root\s+([0-9]+)\s+0\s+R", fields)
        if root_match is None:
            raise NotOurs("root")
        xref = int(trailer.group(2))
        if data[xref : xref + 4] != b"xref":
            raise NotOurs("no xref table")
        offsets: dict[int, int] = {}
        position = xref + 4
        while data[position : position + 1] in (b"\r", b"\n"):
            position += 1
        while True:
            section = _XREF_SECTION.match(data, position)
            if section is None:
                break
            first, count = int(section.group(1)), int(section.group(2))
            position = section.end()
            for number in range(first, first + count):
                entry = _XREF_ENTRY.match(data, position)
                if entry is None:
                    raise NotOurs("xref entry")
                position = entry.end()
                if entry.group(3) == b"n":
                    if entry.group(2) != b"00000":
                        raise NotOurs("generation")
                    offsets[number] = int(entry.group(1))
        if not data.startswith(b"trailer", position):
            raise NotOurs("xref table end")
        ordered = sorted(offsets.items(), key=lambda item: item[1])
        spans: dict[int, tuple[int, int]] = {}
        for (number, start), (_, end) in zip(ordered, [*ordered[1:], (None, xref)], strict=True):
            header_match = _OBJ_HEADER.match(data, start)
            if header_match is None or int(header_match.group(1)) != number or not data[start:end].rstrip().endswith(b"endobj"):
                raise NotOurs("object bounds")
            spans[number] = (start, end)
        objects = cls(data, header, int(root_match.group(1)), 0, [], spans)
        pages_refs = [ref for ref in objects._scan(objects._root) if b"/Kids" in objects._names(ref)]
        if len(pages_refs) != 1:
            raise NotOurs("page tree root")
        if objects._names(pages_refs[0]) & _INHERITABLE:
            raise NotOurs("inherited page attributes")
        kids = objects._scan(pages_refs[0])
        for kid in kids:
            names = objects._names(kid)
            if b"/Kids" in names or not {b"/MediaBox", b"/Resources"} <= names:
                raise NotOurs("not a flat page tree")
        return cls(data, header, objects._root, pages_refs[0], list(kids), spans)

    def _head(self, number: int) -> bytes:
        """The object's text up to its stream data, literal strings blanked."""
        start, end = self._spans[number]
        data = self._data
        keyword = data.find(b"stream", start, end)
        while keyword >= 0 and not (data[keyword - 1] in _DELIMITED and data[keyword + 6 : keyword + 7] in (b"\r", b"\n")):
            keyword = data.find(b"stream", keyword + 6, end)  # the word inside a name or a string: not the keyword
        head = data[start : keyword if keyword >= 0 else end]  # the stream's data is never scanned
        if b"(" in head:
            head = _LITERAL.sub(b"()", head)
            head = head.replace(b"()", b"  ")
        if _NOT_OURS.search(head):
            raise NotOurs("syntax")  # a string as pdfium never writes one, a comment, a stream keyword inside a string
        return head

    def _names(self, number: int) -> set[bytes]:
        return set(_NAME.findall(self._head(number)))

    def _scan(self, number: int) -> tuple[int, ...]:
        """The objects ``number`` references (in its dictionary or array, never in stream data)."""
        refs = self._refs.get(number)
        if refs is None:
            head = self._head(number)
            found = _REF.findall(head) if _REF_HINT.search(head) else []
            if any(generation != b"0" for _, generation in found):
                raise NotOurs("generation")
            refs = self._refs[number] = tuple(int(ref) for ref, _ in found)
        return refs

    def _reachable(self, number: int) -> frozenset[int]:
        """``number`` and every object reachable from it, pages and the page tree included but not followed
        (a page may not pull in another). Kept per chunk: the pages of a chunk share their fonts and resources."""
        reach = self._reach.get(number)
        if reach is None:
            seen = {number}
            wanted = [number]
            known, forbidden, spans = self._refs, self._forbidden, self._spans
            while wanted:
                current = wanted.pop()
                if current in forbidden or current not in spans:
                    continue  # a page or the tree: not followed; a reference to no object is null (PDF 32000-1, 7.3.10)
                for ref in known.get(current) or self._scan(current):
                    if ref not in seen:
                        seen.add(ref)
                        wanted.append(ref)
            reach = self._reach[number] = frozenset(seen)
        return reach

    def page_pdf(self, index: int) -> bytes | None:
        """Page ``index`` (0-based in the chunk) as a one-page PDF, or None where pdfium must copy it."""
        try:
            return self._page_pdf(self.kids[index])
        except (NotOurs, KeyError, IndexError):
            return None

    def _page_pdf(self, page: int) -> bytes:
        refs = self._scan(page)
        if refs.count(self._pages) != 1:
            raise NotOurs("page without its parent, or with the tree elsewhere")
        seen = {page}.union(*(self._reachable(ref) for ref in refs if ref != self._pages and ref != page))
        if not seen.isdisjoint(self._forbidden - {page}):
            raise NotOurs("references another page or the document")
        root, tree = self._root, self._pages
        parts: list[bytes | memoryview] = [self._header]
        offsets: dict[int, int] = {}
        size = len(self._header)
        for number, body in (
            (root, b"%d 0 obj\r\n<</Pages %d 0 R /Type/Catalog>>\r\nendobj\r\n" % (root, tree)),
            (tree, b"%d 0 obj\r\n<</Count 1/Kids[ %d 0 R ]/Type/Pages>>\r\nendobj\r\n" % (tree, page)),
        ):
            offsets[number] = size
            parts.append(body)
            size += len(body)
        for number in sorted(seen & self._spans.keys()):
            start, end = self._spans[number]
            offsets[number] = size
            parts.append(self._view[start:end])
            size += end - start
        parts.append(_xref(offsets))
        parts.append(
            b"trailer\r\n<<\r\n/Root %d 0 R\r\n/Size %d/ID[<%s><%s>]>>\r\nstartxref\r\n%d\r\n%%%%EOF\r\n" % (root, max(offsets) + 1, b"0" * 32, b"0" * 32, size)
        )
        return b"".join(parts)


def _xref(offsets: dict[int, int]) -> bytes:
    """A classic xref table of object 0 (free) and these objects only: one subsection per run of consecutive numbers."""
    entries = [(0, b"0000000000 65535 f\r\n"), *((number, b"%010d 00000 n\r\n" % offsets[number]) for number in sorted(offsets))]
    runs: list[list[tuple[int, bytes]]] = []
    for entry in entries:
        if runs and runs[-1][-1][0] + 1 == entry[0]:
            runs[-1].append(entry)
        else:
            runs.append([entry])
    lines = [b"xref\r\n"]
    for run in runs:
        lines.append(b"%d %d\r\n" % (run[0][0], len(run)))
        lines.extend(line for _, line in run)
    return b"".join(lines)
