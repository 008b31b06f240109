-- batchlane schema, version 1. Statuses as in DESIGN.md.

CREATE TABLE files (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    owner_id     text NOT NULL,
    name         text NOT NULL,
    s3_key       text NOT NULL,
    size_bytes   bigint NOT NULL DEFAULT 0,
    status       text NOT NULL DEFAULT 'uploaded'
                 CHECK (status IN ('uploaded', 'converting', 'converted', 'failed')),
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX files_by_owner ON files (owner_id, created_at DESC);

CREATE TABLE large_conversion_jobs (
    id               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    file_id          uuid NOT NULL REFERENCES files (id) ON DELETE CASCADE,
    owner_id         text NOT NULL,
    status           text NOT NULL
                     CHECK (status IN ('pending', 'waiting_batch', 'processing', 'paused_budget',
                                       'assembling', 'completed', 'failed', 'cancelled')),
    options          jsonb NOT NULL DEFAULT '{}'::jsonb,
    model_id         text NOT NULL,
    total_pages      integer NOT NULL CHECK (total_pages >= 0),
    pages_per_chunk  integer NOT NULL CHECK (pages_per_chunk > 0),
    chunk_count      integer NOT NULL CHECK (chunk_count >= 0),
    pages_converted  integer NOT NULL DEFAULT 0,
    pages_failed     integer NOT NULL DEFAULT 0,
    pages_batch      integer NOT NULL DEFAULT 0,
    total_cost_usd   numeric(14, 6) NOT NULL DEFAULT 0,
    error_id         text,
    error_message    text,
    markdown_key     text,
    execution_name   text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    started_at       timestamptz,
    finished_at      timestamptz
);
CREATE INDEX jobs_by_status ON large_conversion_jobs (status, created_at);
CREATE INDEX jobs_by_owner ON large_conversion_jobs (owner_id, created_at DESC);
-- A file has at most one live conversion.
CREATE UNIQUE INDEX one_live_job_per_file ON large_conversion_jobs (file_id)
    WHERE status NOT IN ('completed', 'failed', 'cancelled');

CREATE TABLE chunk_jobs (
    job_id        uuid NOT NULL REFERENCES large_conversion_jobs (id) ON DELETE CASCADE,
    chunk_index   integer NOT NULL CHECK (chunk_index >= 0),
    first_page    integer NOT NULL,
    last_page     integer NOT NULL,
    status        text NOT NULL
                  CHECK (status IN ('pending', 'waiting_batch', 'processing', 'paused_budget',
                                    'assembling', 'completed', 'failed', 'cancelled')),
    worker_id     text,
    heartbeat_at  timestamptz,
    attempts      integer NOT NULL DEFAULT 0,
    pages_done    integer NOT NULL DEFAULT 0,
    pages_failed  integer NOT NULL DEFAULT 0,
    pages_batch   integer NOT NULL DEFAULT 0,
    cost_usd      numeric(14, 6) NOT NULL DEFAULT 0,
    result_key    text,
    error         text,
    updated_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (job_id, chunk_index),
    CHECK (last_page >= first_page)
);

CREATE TABLE conversion_batch_jobs (
    id                bigserial PRIMARY KEY,
    job_id            uuid NOT NULL UNIQUE REFERENCES large_conversion_jobs (id) ON DELETE CASCADE,
    state             text NOT NULL CHECK (state IN ('preparing', 'submitted', 'closed')),
    end_state         text,          -- Bedrock terminal status, or skipped / prepare_failed / ...
    reason            text,          -- why it closed early, or why the user acted
    model_id          text,
    bedrock_job_arn   text,
    bedrock_job_name  text,
    bedrock_status    text,          -- last status seen (event or sweep)
    task_tokens       text[] NOT NULL DEFAULT '{}',  -- every execution waiting on this row
    record_count      integer,
    input_bytes       bigint,
    accepted_count    integer,
    fallback_count    integer,
    manifest_key      text,
    output_uri        text,
    deadline          timestamptz,
    attempts          integer NOT NULL DEFAULT 0,
    collect_attempts  integer NOT NULL DEFAULT 0,
    cost_usd          numeric(14, 6),
    created_at        timestamptz NOT NULL DEFAULT now(),
    prepare_started_at timestamptz,
    prepared_at       timestamptz,
    submitted_at      timestamptz,
    terminal_seen_at  timestamptz,  -- first terminal status seen (event, sweep or collect)
    collect_started_at timestamptz,
    closed_at         timestamptz,
    resumed_at        timestamptz,
    updated_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX batch_rows_by_state ON conversion_batch_jobs (state, deadline);

CREATE TABLE cost_ledger (
    id             bigserial PRIMARY KEY,
    job_id         uuid NOT NULL REFERENCES large_conversion_jobs (id) ON DELETE CASCADE,
    chunk_index    integer,
    batch_row_id   bigint REFERENCES conversion_batch_jobs (id) ON DELETE CASCADE,
    source         text NOT NULL CHECK (source IN ('chunk', 'batch')),
    backend        text NOT NULL CHECK (backend IN ('on_demand', 'batch')),
    model_id       text NOT NULL,
    input_tokens   bigint NOT NULL DEFAULT 0,
    output_tokens  bigint NOT NULL DEFAULT 0,
    cost_usd       numeric(14, 6) NOT NULL DEFAULT 0,
    metadata       jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ledger_by_job ON cost_ledger (job_id);
-- The batch row is written at most once per batch job, whoever races to write it.
CREATE UNIQUE INDEX one_ledger_row_per_batch_job ON cost_ledger (batch_row_id) WHERE source = 'batch';

CREATE TABLE funds_holds (
    id           bigserial PRIMARY KEY,
    job_id       uuid NOT NULL UNIQUE REFERENCES large_conversion_jobs (id) ON DELETE CASCADE,
    owner_id     text NOT NULL,
    amount_usd   numeric(14, 6) NOT NULL,
    expires_at   timestamptz NOT NULL,
    outcome      text CHECK (outcome IN ('settled', 'released', 'cancelled')),
    settled_usd  numeric(14, 6),
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now()
);
