-- A batch row the lane gave up on while its Bedrock job was still running: the job was
-- told to stop, its conversion job went on-demand, and the row waits here for the
-- terminal status (event or sweeper) before billing from manifest.json.out, which
-- Bedrock writes only then (issue 10, point 9).
ALTER TABLE conversion_batch_jobs DROP CONSTRAINT IF EXISTS conversion_batch_jobs_state_check;
ALTER TABLE conversion_batch_jobs ADD CONSTRAINT conversion_batch_jobs_state_check
    CHECK (state IN ('preparing', 'submitted', 'stopping', 'closed'));
