-- A chunk is never splitting, assembling or paused_budget (those are the job's statuses; no
-- code ever moved a chunk there): the CHECK lists only what batchlane.domain.status allows.
ALTER TABLE chunk_jobs DROP CONSTRAINT IF EXISTS chunk_jobs_status_check;
ALTER TABLE chunk_jobs ADD CONSTRAINT chunk_jobs_status_check
    CHECK (status IN ('pending', 'waiting_batch', 'processing', 'completed', 'failed', 'cancelled'));
