"""Single-page, image-only PDFs as scanners and ImageMagick write them (issue 38.5), and a blank one: what the
money tests and `make bench` money_paths convert.

ImageMagick (Debian's ``convert``) draws an A4 page of text at 150 dpi and writes it as the raster a scanner
leaves: 8-bit grayscale, CMYK JPEG, bilevel CCITT G4 (fax) TIFF, LZW TIFF; img2pdf (Debian) wraps the first three
into PDFs without re-encoding (FlateDecode gray, DCTDecode CMYK, CCITTFaxDecode). Debian's ImageMagick policy
refuses to write PDF itself, so the LZW and ASCII85 ones are assembled with pypdf around ImageMagick's own streams:
the LZW TIFF's single strip as an ``/LZWDecode`` image (TIFF and PDF share the LZW code, early change on), and the
grayscale image's Flate stream wrapped in ASCII85 (``/ASCII85Decode /FlateDecode``). The blank page is reportlab's.
"""

from __future__ import annotations

import base64
import io
import shutil
import subprocess
from pathlib import Path
from typing import Any

from PIL import Image
from PIL.TiffImagePlugin import TiffImageFile
from pypdf import PdfReader, PdfWriter
from pypdf.generic import ArrayObject, DecodedStreamObject, DictionaryObject, NameObject, NullObject, NumberObject, RectangleObject, StreamObject

WIDTH, HEIGHT = 1240, 1754  # A4 at 150 dpi
LINES = [
    "Scanned invoice 4711",
    "Delivered: 12 boxes of paper, 3 toner cartridges",
    "Total due: 212.50 EUR by the end of the month",
    "Thank you for your business",
]
SCANS = ("gray", "cmyk", "fax", "lzw", "ascii85")


def tools_present() -> bool:
    return shutil.which("convert") is not None and shutil.which("img2pdf") is not None


def _run(*args: str) -> None:
    subprocess.run(args, check=True, capture_output=True, timeout=60)


def build(folder: Path) -> dict[str, Path]:
    """``<kind>.pdf`` for each of SCANS, and ``blank.pdf``, in ``folder``; their paths by name."""
    folder.mkdir(parents=True, exist_ok=True)
    work = folder / ".raster"
    work.mkdir(exist_ok=True)
    page = work / "page.png"
    draw = [arg for i, line in enumerate(LINES) for arg in ("-draw", f"text 120,{220 + 90 * i} '{line}'")]
    _run("convert", "-size", f"{WIDTH}x{HEIGHT}", "xc:white", "-fill", "black", "-pointsize", "44", *draw, "-draw", "rectangle 120,700 1100,1300", str(page))
    _run("convert", str(page), "-colorspace", "Gray", "-depth", "8", str(work / "gray.png"))
    _run("convert", str(page), "-colorspace", "CMYK", "-quality", "85", str(work / "cmyk.jpg"))
    _run("convert", str(page), "-monochrome", "-compress", "Group4", str(work / "fax.tif"))
    _run("convert", str(page), "-colorspace", "Gray", "-depth", "8", "-compress", "LZW", "-define", f"tiff:rows-per-strip={HEIGHT}", str(work / "lzw.tif"))
    out = {}
    for kind, source in (("gray", "gray.png"), ("cmyk", "cmyk.jpg"), ("fax", "fax.tif")):
        out[kind] = folder / f"{kind}.pdf"
        _run("img2pdf", "--pagesize", "A4", str(work / source), "-o", str(out[kind]))
    out["lzw"] = folder / "lzw.pdf"
    out["lzw"].write_bytes(_lzw_pdf(work / "lzw.tif"))
    out["ascii85"] = folder / "ascii85.pdf"
    out["ascii85"].write_bytes(_ascii85_pdf(out["gray"]))
    out["blank"] = folder / "blank.pdf"
    out["blank"].write_bytes(_blank_pdf())
    shutil.rmtree(work)
    return out


def _image_page(stream: StreamObject, width: int, height: int) -> bytes:
    """One A4 page drawing ``stream`` (an image XObject) over the whole page."""
    writer = PdfWriter()
    pdf_page = writer.add_blank_page(595.28, 841.89)
    image = writer._add_object(stream)
    pdf_page[NameObject("/Resources")] = DictionaryObject({NameObject("/XObject"): DictionaryObject({NameObject("/Im0"): image})})
    content = DecodedStreamObject()
    content.set_data(b"q 595.28 0 0 841.89 0 0 cm /Im0 Do Q")
    pdf_page[NameObject("/Contents")] = writer._add_object(content)
    pdf_page[NameObject("/MediaBox")] = RectangleObject([0, 0, 595.28, 841.89])
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def _image_stream(
    data: bytes, width: int, height: int, filters: list[str], parms: list[dict[str, int] | None], colour: str = "/DeviceGray", bits: int = 8
) -> StreamObject:
    """An image XObject over ``data`` as encoded by ``filters`` (in decoding order), each with its decode parameters."""
    stream = StreamObject()
    stream._data = data
    stream.update(
        {
            NameObject("/Type"): NameObject("/XObject"),
            NameObject("/Subtype"): NameObject("/Image"),
            NameObject("/Width"): NumberObject(width),
            NameObject("/Height"): NumberObject(height),
            NameObject("/ColorSpace"): NameObject(colour),
            NameObject("/BitsPerComponent"): NumberObject(bits),
            NameObject("/Filter"): ArrayObject([NameObject(f) for f in filters]) if len(filters) > 1 else NameObject(filters[0]),
            NameObject("/Length"): NumberObject(len(data)),
        }
    )
    decode = [DictionaryObject({NameObject(k): NumberObject(v) for k, v in p.items()}) if p else NullObject() for p in parms]
    if any(parms):
        stream[NameObject("/DecodeParms")] = ArrayObject(decode) if len(decode) > 1 else decode[0]
    return stream


def _lzw_pdf(tiff: Path) -> bytes:
    """The TIFF's one LZW strip, as ImageMagick encoded it, as a PDF image."""
    with Image.open(tiff) as image:
        assert isinstance(image, TiffImageFile) and image.info.get("compression") == "tiff_lzw", image.info
        tags = image.tag_v2
        (offset,), (length,) = tags[273], tags[279]  # StripOffsets, StripByteCounts: one strip
        predictor = int(tags.get(317, 1))  # 2: TIFF's horizontal differencing, which PDF's LZWDecode takes too
        width, height = image.size
    data = tiff.read_bytes()[offset : offset + length]
    parms = {"/Predictor": predictor, "/Colors": 1, "/BitsPerComponent": 8, "/Columns": width} if predictor > 1 else None
    return _image_page(_image_stream(data, width, height, ["/LZWDecode"], [parms]), width, height)


def _ascii85_pdf(gray_pdf: Path) -> bytes:
    """img2pdf's Flate-compressed gray image, its bytes wrapped in ASCII85 as well."""
    reader = PdfReader(gray_pdf)
    resources: Any = reader.pages[0]["/Resources"]
    image = next(iter(resources["/XObject"].values())).get_object()
    width, height = int(image["/Width"]), int(image["/Height"])
    raw = image._data  # still Flate-encoded (with img2pdf's PNG predictor)
    flate = {k: int(v) for k, v in image["/DecodeParms"].items()} if "/DecodeParms" in image else None
    encoded = base64.a85encode(raw, adobe=True)[2:]  # PDF's ASCII85Decode takes the data and the ~> end marker
    return _image_page(_image_stream(encoded, width, height, ["/ASCII85Decode", "/FlateDecode"], [None, flate]), width, height)


def merged(paths: list[Path]) -> bytes:
    """The pages of ``paths`` in one PDF (a scanned document of several pages)."""
    writer = PdfWriter()
    for path in paths:
        for page in PdfReader(path).pages:
            writer.add_page(page)
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def _blank_pdf() -> bytes:
    from reportlab.pdfgen import canvas

    buffer = io.BytesIO()
    page = canvas.Canvas(buffer, pagesize=(595.28, 841.89), invariant=True)
    page.showPage()
    page.save()
    return buffer.getvalue()
