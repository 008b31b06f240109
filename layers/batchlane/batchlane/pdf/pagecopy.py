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
that references another page, a reference this scanner cannot be sure of, any error at all) gives
``None``: the caller then copies the page with pdfium, as before. No pdfium call.

Bounded like the content scanner (docs/architecture.md, "Hostile PDFs"), by counts rather than a clock, so
a page is cut the same way in every lane and every run: the table is read in one pass of C-speed matches
(at most :data:`MAX_OBJECTS` objects), a dictionary is scanned once per chunk and only up to
:data:`MAX_HEAD_BYTES`, and a page's objects are found by one walk over them (each object entered once a
page, each reference looked at once), so a page costs time in proportion to the bytes it is made of, and
the memory kept per chunk is in proportion to the references in the chunk (each object's deduplicated).
"""

from __future__ import annotations

import hashlib
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
# An object's text before its stream data, literal strings blanked: tokens only, each ending at a delimiter
# (so there is one way to read it: atomic groups, linear whatever the input).
_END = rb"(?![^\s/\[\]()<>{}%])"
_TOKENS = re.compile(
    rb"[0-9]+ 0 obj(?>\s*+(?>/[^\s/\[\]()<>{}%]*+|[+-]?(?>[0-9]++\.?[0-9]*+|\.[0-9]++)"
    + _END
    + rb"|<<|>>|\[|\]|<[0-9A-Fa-f\s]*+>|(?>true|false|null|R)"
    + _END
    + rb"))*+\s*+(?:endobj\s*+)?"
)
_PAGE_TYPE = re.compile(rb"/Type\s*/Page" + _END)
_LENGTH = re.compile(rb"/Length\s+([0-9]{1,12})(?![0-9]|\s+[0-9]+\s+R)")
_END_STREAM = re.compile(rb"(?:\r\n|\r|\n)?endstream[\s]+endobj")
_INHERITABLE = frozenset({b"/Resources", b"/MediaBox", b"/CropBox", b"/Rotate"})
# A 50-page chunk of a real book has ~7,000 objects; past this pdfium copies (and the table is not kept).
MAX_OBJECTS = 250_000
# An object's dictionary (its text before any stream data) a real book's largest is a few KB (a CID
# font's widths); past this the object is not scanned and its page goes through pdfium.
MAX_HEAD_BYTES = 1 << 20
# The objects reachable from one of a page's own references (a font, an annotation) are kept for the
# chunk's other pages when there are at most this many; the chunk keeps at most _MAX_KEPT of them in all.
_SMALL_CLOSURE = 32
_MAX_KEPT = 1_000_000


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
        self._closures: dict[int, frozenset[int] | None] = {}  # None: more than _SMALL_CLOSURE objects
        self._kept = 0  # members of the closures kept
        self._forbidden = frozenset({root, pages_ref, *kids})
        self._pieces: dict[int, tuple[memoryview, int, bytes]] = {}  # see _piece: each object digested once a chunk
        self.steps = 0  # objects entered and references followed: the work done, for the bounds' tests

    @classmethod
    def parse(cls, data: bytes) -> ChunkObjects | None:
        try:
            return cls._parse(data)
        except Exception:  # NotOurs, or whatever a damaged file makes the parsing raise: pdfium copies
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
            if count > MAX_OBJECTS - len(offsets):
                raise NotOurs("too many objects")
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
        if 0 in offsets:
            raise NotOurs("object 0 in use")
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
        if objects._root == pages_refs[0] or objects._root in kids or pages_refs[0] in kids:
            raise NotOurs("the catalog, the tree and the pages are not distinct objects")
        for kid in kids:
            names = objects._names(kid)
            if b"/Kids" in names or not {b"/MediaBox", b"/Resources"} <= names or not _a_page(objects._head(kid)):
                raise NotOurs("not a flat page tree")
        return cls(data, header, objects._root, pages_refs[0], list(kids), spans)

    def _head(self, number: int) -> bytes:
        """The object's text up to its stream data, literal strings blanked."""
        start, end = self._spans[number]
        data = self._data
        limit = min(end, start + MAX_HEAD_BYTES + 16)
        keyword = data.find(b"stream", start, limit)
        while keyword >= 0 and not (data[keyword - 1] in _DELIMITED and data[keyword + 6 : keyword + 7] in (b"\r", b"\n")):
            keyword = data.find(b"stream", keyword + 6, limit)  # the word inside a name or a string: not the keyword
        if keyword < 0 and end - start > MAX_HEAD_BYTES:
            raise NotOurs("dictionary too large to scan")
        head = data[start : keyword if keyword >= 0 else end]  # the stream's data is never scanned
        if b"(" in head:
            head = _LITERAL.sub(b"()", head)
            head = head.replace(b"()", b"  ")
        if _NOT_OURS.search(head):
            raise NotOurs("syntax")  # a string as pdfium never writes one, a comment, a stream keyword inside a string
        # Copied as it is, so it must at least hold together: its brackets balanced, its stream as long as it
        # says (a page object is read closely, by _a_page; any other is copied as the chunk has it).
        if head.count(b"<<") != head.count(b">>") or head.count(b"[") != head.count(b"]"):  # a hex string holds neither
            raise NotOurs("unbalanced")
        if keyword >= 0:
            length = _LENGTH.search(head)
            if length is None:
                raise NotOurs("stream length not direct")
            data_start = keyword + 6 + (2 if data[keyword + 6 : keyword + 8] == b"\r\n" else 1)
            data_end = data_start + int(length.group(1))
            if not _END_STREAM.match(data, data_end) or data_end > end:
                raise NotOurs("stream length")
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
            # Each object once, and only objects there are (a reference to none is null, PDF 32000-1, 7.3.10),
            # as the table's own numbers: what is kept is in proportion to the chunk's distinct references.
            spans = self._spans
            refs = self._refs[number] = tuple({spans_key: None for spans_key in (int(ref) for ref, _ in found) if spans_key in spans})
        return refs

    def _closure(self, number: int) -> frozenset[int] | None:
        """``number`` and every object reachable from it, pages and the page tree included but not followed,
        when that is at most :data:`_SMALL_CLOSURE` objects (a font, an annotation: shared by a chunk's pages,
        so found once); None for a larger one, which the page's own walk covers. At most _SMALL_CLOSURE + 1
        objects entered per object per chunk, whatever the answer."""
        if number in self._closures:
            return self._closures[number]
        seen = {number}
        wanted = [number]
        forbidden, spans = self._forbidden, self._spans
        closure: frozenset[int] | None = None
        while wanted:
            current = wanted.pop()
            self.steps += 1
            if current in forbidden or current not in spans:
                continue  # a page or the tree: not followed
            for ref in self._scan(current):
                if ref not in seen:
                    seen.add(ref)
                    if len(seen) > _SMALL_CLOSURE:
                        break
                    wanted.append(ref)
            if len(seen) > _SMALL_CLOSURE:
                break
        else:
            closure = frozenset(seen)
        if closure is None or self._kept + len(closure) <= _MAX_KEPT:
            self._closures[number] = closure
            self._kept += len(closure or ())
        return closure

    def _page_objects(self, page: int, refs: tuple[int, ...]) -> set[int]:
        """The page and every object it reaches, in one walk: an object is entered once, a small closure
        (:meth:`_closure`) is added whole, so the work is in proportion to the objects and references of
        the page's own PDF, however its references overlap."""
        seen = {page}
        wanted = [ref for ref in refs if ref != self._pages and ref != page]
        forbidden, known, closures = self._forbidden, self._refs, self._closures
        steps = 0
        while wanted:
            current = wanted.pop()
            steps += 1
            if current in seen:
                continue
            found = known.get(current)
            if found is None:
                found = self._scan(current)
            if not found or current in forbidden:  # most objects of a page (a link, a stream): nothing to follow
                seen.add(current)
                continue
            closure = closures[current] if current in closures else self._closure(current)
            if closure is not None:
                seen |= closure
                steps += len(closure)
                continue
            seen.add(current)
            wanted.extend(ref for ref in found if ref not in seen)
        self.steps += steps
        return seen

    def _piece(self, number: int) -> tuple[memoryview, int, bytes]:
        """Object ``number`` as copied into a page: its bytes, their length, its number and digest (for the /ID)."""
        start, end = self._spans[number]
        piece = self._view[start:end]
        kept = self._pieces[number] = (piece, end - start, b"%d " % number + hashlib.blake2b(piece, digest_size=16).digest())
        return kept

    def page_pdf(self, index: int) -> bytes | None:
        """Page ``index`` (0-based in the chunk) as a one-page PDF, or None where pdfium must copy it."""
        try:
            return self._page_pdf(self.kids[index])
        except Exception:  # NotOurs, or anything a damaged chunk makes the walk raise: pdfium copies the page
            return None

    def _page_pdf(self, page: int) -> bytes:
        refs = self._scan(page)
        if refs.count(self._pages) != 1:
            raise NotOurs("page without its parent, or with the tree elsewhere")
        seen = self._page_objects(page, refs)
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
        # The file /ID (PDF 32000-1, 14.4): a digest of what the file is made of (the header, the numbers of
        # its catalog, tree and page, each object's number and bytes), so the same page is the same bytes in
        # every lane and run. Each object is digested once per chunk, not once per page it is copied into.
        identity = [b"%s %d %d %d" % (self._header, root, tree, page)]
        pieces = self._pieces
        for number in sorted(seen):
            piece = pieces.get(number) or self._piece(number)
            offsets[number] = size
            parts.append(piece[0])
            size += piece[1]
            identity.append(piece[2])
        file_id = hashlib.blake2b(b"".join(identity), digest_size=16).hexdigest().upper().encode()
        parts.append(_xref(offsets))
        parts.append(
            b"trailer\r\n<<\r\n/Root %d 0 R\r\n/Size %d/ID[<%s><%s>]>>\r\nstartxref\r\n%d\r\n%%%%EOF\r\n" % (root, max(offsets) + 1, file_id, file_id, size)
        )
        return b"".join(parts)


_TOKEN = re.compile(rb"/[^\s/\[\]()<>{}%]*|<<|>>|\[|\]|<[0-9A-Fa-f\s]*>|[^\s/\[\]()<>{}%]+")
_MAX_DEPTH = 32


def _a_page(head: bytes) -> bool:
    """A page object's text (strings blanked) reads as one dictionary of /Type /Page: every key a name with
    a value, every container closed. Only page objects are read this closely (one a page, once a chunk):
    the cut is a page only if its page object is one; any other object is copied as the chunk has it."""
    if _TOKENS.fullmatch(head) is None:  # only tokens a reader knows
        return False
    tokens = _TOKEN.findall(head)
    if len(tokens) < 5 or tokens[1:3] != [b"0", b"obj"] or tokens[3] != b"<<" or _PAGE_TYPE.search(head) is None:
        return False
    end = tokens.index(b"endobj") if b"endobj" in tokens else len(tokens)
    stack: list[list[bytes]] = []  # each open container's values so far (an array's, or a dictionary's keys and values)
    kinds: list[bytes] = []
    for index in range(3, end):
        token = tokens[index]
        if token in (b"<<", b"["):
            if len(stack) >= _MAX_DEPTH:
                return False
            stack.append([])
            kinds.append(token)
            continue
        if token in (b">>", b"]"):
            if not stack or kinds.pop() != (b"<<" if token == b">>" else b"["):
                return False
            values = stack.pop()
            if token == b">>" and (len(values) % 2 or any(not key.startswith(b"/") for key in values[::2])):
                return False
            token = b"<<>>"  # the closed container is one value of its parent
            if not stack:
                return index == end - 1  # the page's dictionary is the whole object
        if not stack:
            return False
        if token == b"R":  # "N 0 R" is one value
            values = stack[-1]
            if len(values) < 2 or not values[-1].isdigit() or not values[-2].isdigit():
                return False
            del values[-2:]
        stack[-1].append(token)
    return False


def _xref(offsets: dict[int, int]) -> bytes:
    """A classic xref table of object 0 (free) and these objects only: one subsection per run of consecutive numbers."""
    numbers = sorted(offsets)
    lines = [b"xref\r\n"]
    first = 0  # the current run's first object number (object 0, free, leads the first run)
    entries = [b"0000000000 65535 f\r\n"]
    previous = 0
    for number in numbers:
        if number != previous + 1:
            lines.append(b"%d %d\r\n" % (first, len(entries)))
            lines.extend(entries)
            first, entries = number, []
        entries.append(b"%010d 00000 n\r\n" % offsets[number])
        previous = number
    lines.append(b"%d %d\r\n" % (first, len(entries)))
    lines.extend(entries)
    return b"".join(lines)
