-- Signed webhooks (docs/operations.md "Signed webhooks"): one row per delivery (an event of a
-- job, or a test), with what its owner sees: status, attempts, the last response code and
-- latency. The id is the receiver's idempotency key (Batchlane-Delivery header). Headers are
-- the job's callbackHeaders, kept for the POST and never shown by the API.
CREATE TABLE webhook_deliveries (
    id              uuid PRIMARY KEY,
    owner_id        text NOT NULL,
    job_id          uuid REFERENCES large_conversion_jobs (id) ON DELETE CASCADE,  -- NULL: a test delivery
    event           text NOT NULL,
    url             text NOT NULL,
    headers         jsonb NOT NULL DEFAULT '{}'::jsonb,
    payload         jsonb NOT NULL,
    status          text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'retrying', 'delivered', 'failed')),
    attempts        integer NOT NULL DEFAULT 0,
    response_code   integer,
    latency_ms      integer,
    last_error      text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    last_attempt_at timestamptz,
    delivered_at    timestamptz
);
CREATE INDEX webhook_deliveries_job ON webhook_deliveries (job_id, created_at);
CREATE INDEX webhook_deliveries_owner ON webhook_deliveries (owner_id, created_at DESC);
