-- Per-user budgets and caps (docs/operations.md "Budgets, caps and fair sharing").
-- A row overrides the deployment's defaults (BATCHLANE_BUDGET_USD_PER_MONTH,
-- BATCHLANE_MAX_LIVE_JOBS, BATCHLANE_MAX_LIVE_PAGES) for one owner; NULL keeps the default.
CREATE TABLE user_budgets (
    owner_id        text PRIMARY KEY,
    usd_per_month   numeric(14, 6) CHECK (usd_per_month >= 0),
    max_live_jobs   integer CHECK (max_live_jobs >= 0),
    max_live_pages  integer CHECK (max_live_pages >= 0),
    updated_by      text NOT NULL,
    updated_at      timestamptz NOT NULL DEFAULT now()
);

-- The budget check reads an owner's open holds and this month's spend at every job creation.
CREATE INDEX open_holds_by_owner ON funds_holds (owner_id) WHERE outcome IS NULL;
CREATE INDEX ledger_by_time ON cost_ledger (created_at);
