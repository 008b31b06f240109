-- Asynchronous job creation (docs/architecture.md, "Asynchronous job creation"): the API
-- records the job as 'splitting' and answers at once; the intake workflow's split function
-- downloads and splits the upload, writes the chunk rows and moves the job on to pending
-- or waiting_batch (or failed with the PDF's error id). Chunks never are 'splitting': they
-- are written by the split. A splitting job is live (one_live_job_per_file holds it).
ALTER TABLE large_conversion_jobs DROP CONSTRAINT large_conversion_jobs_status_check;
ALTER TABLE large_conversion_jobs ADD CONSTRAINT large_conversion_jobs_status_check
    CHECK (status IN ('splitting', 'pending', 'waiting_batch', 'processing', 'paused_budget',
                      'assembling', 'completed', 'failed', 'cancelled'));
