"""PDF handling: ONE split that job creation, the chunk processor and the batch lane share."""

from batchlane.pdf.split import ChunkSpan, Page, PdfDocument, open_chunk, open_pdf, plan_chunks

__all__ = ["ChunkSpan", "Page", "PdfDocument", "open_chunk", "open_pdf", "plan_chunks"]
