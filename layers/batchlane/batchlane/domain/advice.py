"""What a user does next about an error or a failed page: one sentence per stable id, the same in the API,
the console and the CLI (issue 41.1), and which ids are the user's input (the CLI's exit 2)."""

from __future__ import annotations

# The file itself cannot be converted: refused before upload, by the API, or by the split (the job's error).
INPUT_ERROR_IDS = frozenset(
    {
        "PDF_EMPTY",
        "PDF_NOT_PDF",
        "PDF_CORRUPT",
        "PDF_ENCRYPTED",
        "PDF_NO_PAGES",
        "PDF_TOO_MANY_PAGES",
        "PDF_TOO_LARGE",
        "PDF_TOO_COMPLEX",
        "FOLDER_EMPTY",
        "FOLDER_NO_PDF",
        # formats beside PDF (docs/formats.md)
        "FILE_EMPTY",
        "FILE_TYPE_UNSUPPORTED",
        "DOCUMENT_CORRUPT",
        "DOCUMENT_TOO_COMPLEX",
        "DOCUMENT_TOO_MANY_PAGES",
        "IMAGE_CORRUPT",
        "IMAGE_TOO_LARGE",
        "IMAGE_TOO_MANY_PAGES",
    }
)

_NEXT_STEPS = {
    "PDF_EMPTY": "The file has no bytes: check that it was saved or downloaded completely, then convert it again.",
    "PDF_NOT_PDF": "Only PDF files are converted: export or print the document to PDF first.",
    "PDF_CORRUPT": "Open the PDF and save (or print) it as a new PDF, then convert the new file.",
    "PDF_ENCRYPTED": "Remove the password (for example: qpdf --decrypt in.pdf out.pdf), then convert the new file.",
    "PDF_NO_PAGES": "The PDF has no pages: there is nothing to convert.",
    "PDF_TOO_MANY_PAGES": "Split the PDF into parts under the page limit and convert each part.",
    "PDF_TOO_LARGE": "Split the PDF into smaller files and convert each.",
    "PDF_TOO_COMPLEX": "Print the PDF to a new PDF (that flattens its structure) and convert the new file.",
    "FILE_EMPTY": "The file has no bytes: check that it was saved or downloaded completely, then convert it again.",
    "FILE_TYPE_UNSUPPORTED": "This type is not converted: save it as PDF (or DOCX, PPTX, XLSX, HTML, EPUB, ODT, or a PNG/JPEG/WebP/TIFF picture) first.",
    "DOCUMENT_CORRUPT": "Open the document and save it again (or export it to PDF), then convert the new file.",
    "DOCUMENT_TOO_COMPLEX": "The document is past what is read safely: export it to PDF and convert that.",
    "DOCUMENT_TOO_MANY_PAGES": "Split the document into parts under the page limit and convert each part.",
    "IMAGE_CORRUPT": "Open the picture and save it again (PNG or JPEG), then convert the new file.",
    "IMAGE_TOO_LARGE": "Scale the picture down (or cut it into parts) and convert it again.",
    "IMAGE_TOO_MANY_PAGES": "Split the picture's frames into several files under the page limit and convert each.",
    "FOLDER_EMPTY": "Put the PDFs in the folder, then start the same folder job again (or retry it): it lists the folder afresh.",
    "FOLDER_NO_PDF": "Nothing the include/exclude globs select is a PDF: add PDFs or change the globs, then start it again.",
    "PAGES_FAILED": "The failed pages are listed with their reasons (batchlane jobs pages JOB); a retry converts only those pages again.",
    "UPLOAD_MISSING": "The uploaded file is gone: upload it and convert it again.",
    "BUDGET_EXCEEDED": "Your budget for this month does not cover it: wait for next month, or ask an administrator to raise it.",
    "CANCELLED": "It was cancelled: convert the file again when you want it.",
}
_SERVICE = "Not caused by your file: convert it again; if it fails again, give the operator the job id."


def is_input_error(error_id: str | None) -> bool:
    return error_id in INPUT_ERROR_IDS


def next_step(error_id: str | None) -> str:
    """One sentence: what to do about a job (or file) that ended with ``error_id``."""
    return _NEXT_STEPS.get(error_id or "", _SERVICE)


def error_object(error_id: str | None, message: str | None) -> dict[str, str] | None:
    """The one error object a job, a folder job, a file of one or a report line carries: code, message, what to do."""
    if not error_id:
        return None
    return {"code": error_id, "message": message or "", "nextStep": next_step(error_id)}


def page_next_step(retry_helps: bool) -> str:
    """What to do about one failed page, given whether a retry is likely to change it (filejob/retry.retry_cures)."""
    if retry_helps:
        return "A retry (on-demand, charged again) is likely to convert it."
    return "Refused for what the page contains: a retry most likely fails the same way and is charged again."
