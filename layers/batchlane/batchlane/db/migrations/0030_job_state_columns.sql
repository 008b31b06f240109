-- Issue 23.3: the job's own state leaves the user's options JSON for typed columns; options keep only
-- what the user asked for. batch_primed: a lane's accepted answers wait for its chunks (chunk.py primes
-- from them); batch_cost_usd: what the job's lanes cost (total = chunk costs + this); pause_settled: the
-- paused run's last step ran (its owner may resume); budget_resumes: how often it was resumed at its hold;
-- process_now: go on-demand (a folder's priority high, or process now while splitting); max_pages: a
-- folder policy's page limit (NULL: the deployment's).
ALTER TABLE large_conversion_jobs
    ADD COLUMN batch_primed boolean NOT NULL DEFAULT false,
    ADD COLUMN batch_cost_usd numeric(14, 6) NOT NULL DEFAULT 0,
    ADD COLUMN pause_settled boolean NOT NULL DEFAULT false,
    ADD COLUMN budget_resumes integer NOT NULL DEFAULT 0,
    ADD COLUMN process_now boolean NOT NULL DEFAULT false,
    ADD COLUMN max_pages integer CHECK (max_pages IS NULL OR max_pages > 0);

-- the data move: existing jobs keep their state, their options lose the underscore keys
UPDATE large_conversion_jobs SET
    batch_primed = COALESCE((options->>'_batchPrimed')::boolean, false),
    batch_cost_usd = COALESCE((options->>'_batchCostUsd')::numeric, 0),
    pause_settled = COALESCE((options->>'_pauseSettled')::boolean, false),
    budget_resumes = COALESCE((options->>'_budgetResumes')::integer, 0),
    process_now = COALESCE((options->>'_processNow')::boolean, false),
    max_pages = (options->>'_maxPages')::integer,
    options = options - '_batchPrimed' - '_batchCostUsd' - '_pauseSettled' - '_budgetResumes' - '_processNow' - '_maxPages'
WHERE options ?| ARRAY['_batchPrimed', '_batchCostUsd', '_pauseSettled', '_budgetResumes', '_processNow', '_maxPages'];
