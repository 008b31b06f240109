-- The batch records a chunk sends when they are not one per page (issue 43, describeFigures): a born-digital
-- chunk's pictures to describe. The pool counts a chunk's records by it (db/batch_rows.PgLanes.read_pool);
-- NULL, every chunk before it and every PDF or picture chunk: its pages (an upper bound: a blank page sends none).
ALTER TABLE chunk_jobs ADD COLUMN IF NOT EXISTS records integer CHECK (records IS NULL OR records >= 0);
