-- A folder job's loop turn must not walk the folder (issue 27, point 3). Its claim takes the first queued files
-- in key order (ORDER BY source_key LIMIT): with only (folder_job_id, status) PostgreSQL read and sorted every
-- queued file a turn. Its report step reads the files finished but not yet reported: it read every finished file.
CREATE INDEX IF NOT EXISTS folder_files_queued_by_key ON folder_job_files (folder_job_id, source_key) WHERE status = 'queued';
CREATE INDEX IF NOT EXISTS folder_files_unreported ON folder_job_files (folder_job_id, source_key)
    WHERE NOT reported AND status IN ('completed', 'failed', 'skipped');
