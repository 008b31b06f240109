-- Retrying a completed job's failed pages (docs/operations.md, "Retry only what failed").
-- One row per retry: which pages, the job's state before it (so a cancelled or failed retry
-- puts the job back as it was, and the history keeps both attempts), and what it cost.
CREATE TABLE job_retries (
    id                     bigserial PRIMARY KEY,
    job_id                 uuid NOT NULL REFERENCES large_conversion_jobs (id) ON DELETE CASCADE,
    attempt                integer NOT NULL CHECK (attempt >= 1),
    status                 text NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'completed', 'failed', 'cancelled')),
    pages                  integer[] NOT NULL,
    error_ids              text[],
    previous_pages_failed  integer NOT NULL,
    previous_total_usd     numeric(14, 6) NOT NULL,
    previous_markdown_key  text,
    chunks_before          jsonb NOT NULL,
    pages_failed           integer,
    cost_usd               numeric(14, 6),
    error_message          text,
    created_at             timestamptz NOT NULL DEFAULT now(),
    finished_at            timestamptz,
    UNIQUE (job_id, attempt)
);
-- At most one retry of a job runs at a time: a second POST finds this one.
CREATE UNIQUE INDEX one_running_retry_per_job ON job_retries (job_id) WHERE status = 'running';
