-- `jobs list` (issue 24.9): a file's folder job, found from the file (the listing marks folder files' jobs).
CREATE INDEX IF NOT EXISTS folder_files_by_file ON folder_job_files (file_id) WHERE file_id IS NOT NULL;
