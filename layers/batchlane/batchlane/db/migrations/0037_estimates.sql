-- Dry runs as asynchronous estimates (issue 40, docs/operations.md "Estimates"): the API records the request and
-- answers 202; the estimate worker (functions/estimate, in its own bounded process) writes its progress and result.
-- A row lives a day; the API answers a running one older than the worker's bound as failed (ESTIMATE_LOST).
CREATE TABLE estimates (
    id             uuid PRIMARY KEY,
    owner_id       text NOT NULL,
    kind           text NOT NULL CHECK (kind IN ('file', 'folder')),
    status         text NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'completed', 'failed')),
    request        jsonb NOT NULL,
    progress       jsonb NOT NULL DEFAULT '{}'::jsonb,
    result         jsonb,
    error_id       text,
    error_message  text,
    created_at     timestamptz NOT NULL DEFAULT now(),
    finished_at    timestamptz
);
-- An owner's running estimates (the cap), and the day-old rows a new estimate removes.
CREATE INDEX estimates_owner_created ON estimates (owner_id, created_at);
