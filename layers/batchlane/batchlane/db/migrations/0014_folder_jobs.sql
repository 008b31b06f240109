-- Folder jobs (docs/architecture.md "Folder jobs"): a spec over a folder of the user's bucket,
-- enumerated page by page (continuation token checkpointed here), each file converted by the
-- ordinary single-file job. The id is derived from the normalised spec (fj-<24 hex>).
CREATE TABLE folder_jobs (
    id                  text PRIMARY KEY CHECK (id ~ '^fj-[0-9a-f]{24}$'),
    owner_id            text NOT NULL,
    name                text,
    spec                jsonb NOT NULL,
    status              text NOT NULL DEFAULT 'enumerating'
                        CHECK (status IN ('enumerating', 'processing', 'completed', 'completed_with_failures', 'cancelled', 'error')),
    error_id            text,
    error_message       text,
    input_bucket        text NOT NULL,
    input_prefix        text NOT NULL,
    output_bucket       text NOT NULL,
    output_prefix       text NOT NULL,
    continuation_token  text,             -- ListObjectsV2 checkpoint: the next page to list
    enumeration_done    boolean NOT NULL DEFAULT false,
    objects_listed      bigint NOT NULL DEFAULT 0,
    excluded_count      bigint NOT NULL DEFAULT 0,
    run                 integer NOT NULL DEFAULT 1 CHECK (run >= 1),  -- folder-<id>-<run>: a resume, retry or hand-over is a new run
    turns               integer NOT NULL DEFAULT 0,  -- loop turns of the current run (a run hands over before Step Functions' history limit)
    report_parts        integer NOT NULL DEFAULT 0,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    enumerated_at       timestamptz,
    finished_at         timestamptz
);
CREATE INDEX folder_jobs_by_owner ON folder_jobs (owner_id, created_at DESC);

CREATE TABLE folder_job_files (
    folder_job_id      text NOT NULL REFERENCES folder_jobs (id) ON DELETE CASCADE,
    source_key         text NOT NULL,
    status             text NOT NULL DEFAULT 'queued'
                       CHECK (status IN ('queued', 'processing', 'completed', 'failed', 'skipped')),
    output_key         text,
    size_bytes         bigint NOT NULL DEFAULT 0,
    file_id            uuid REFERENCES files (id) ON DELETE SET NULL,
    conversion_job_id  uuid REFERENCES large_conversion_jobs (id) ON DELETE SET NULL,
    pages              integer NOT NULL DEFAULT 0,
    pages_failed       integer NOT NULL DEFAULT 0,
    failed_pages       integer[] NOT NULL DEFAULT '{}',
    attempts           integer NOT NULL DEFAULT 0,
    error_id           text,
    error_message      text,
    lane               text,
    cost_usd           numeric(14, 6) NOT NULL DEFAULT 0,
    reported           boolean NOT NULL DEFAULT false,  -- its report line is in the bucket
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now(),
    started_at         timestamptz,
    finished_at        timestamptz,
    PRIMARY KEY (folder_job_id, source_key)
);
CREATE INDEX folder_files_by_status ON folder_job_files (folder_job_id, status);
CREATE INDEX folder_files_by_output ON folder_job_files (folder_job_id, output_key);

-- A folder file is read from the user's bucket where it lies (no copy): NULL = the deployment's bucket.
ALTER TABLE files ADD COLUMN source_bucket text;
