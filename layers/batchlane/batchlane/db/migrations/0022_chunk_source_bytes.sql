-- The size of each chunk's source PDF, written by the split (issue 22, point 2): the packer estimates a
-- lane's input bytes from it, so a lane stays under Bedrock's "Batch inference job size" quota.
-- NULL for chunks split before this column: the packer counts their records only, as before.
ALTER TABLE chunk_jobs ADD COLUMN IF NOT EXISTS source_bytes bigint CHECK (source_bytes >= 0);
