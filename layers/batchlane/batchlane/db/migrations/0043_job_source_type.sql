-- What a job's file is (issue 43; docs/formats.md): pdf, an image type (png, jpeg, webp, tiff: wrapped as a PDF of a
-- page per frame at the split, sent in the image page form) or a born-digital type (docx, pptx, xlsx, html, epub, odt:
-- converted at the split with no model call, its pages completed by the chunk processor at $0). Rows before it were PDFs.
ALTER TABLE large_conversion_jobs ADD COLUMN IF NOT EXISTS source_type text NOT NULL DEFAULT 'pdf';
