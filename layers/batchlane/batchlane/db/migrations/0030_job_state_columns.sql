-- Issue 23.3: the job's own state leaves the user's options JSON for typed columns; options keep only
-- what the user asked for. batch_primed: a lane's accepted answers wait for its chunks (chunk.py primes
-- from them); batch_cost_usd: what the job's lanes cost (total = chunk costs + this); pause_settled: the
-- paused run's last step ran (its owner may resume); budget_resumes: how often it was resumed at its hold;
-- process_now: go on-demand (a folder's priority high, or process now while splitting); max_pages: a
-- folder policy's page limit (NULL: the deployment's); retry_attempt, retry_pages: the retry of failed pages
-- now running on the job (NULL when none; its history is job_retries).
ALTER TABLE large_conversion_jobs
    ADD COLUMN batch_primed boolean NOT NULL DEFAULT false,
    ADD COLUMN batch_cost_usd numeric(14, 6) NOT NULL DEFAULT 0,
    ADD COLUMN pause_settled boolean NOT NULL DEFAULT false,
    ADD COLUMN budget_resumes integer NOT NULL DEFAULT 0,
    ADD COLUMN process_now boolean NOT NULL DEFAULT false,
    ADD COLUMN max_pages integer CHECK (max_pages IS NULL OR max_pages > 0),
    ADD COLUMN retry_attempt integer,
    ADD COLUMN retry_pages integer[],
    ADD CONSTRAINT retry_scope_whole CHECK ((retry_attempt IS NULL) = (retry_pages IS NULL));

-- the data move: existing jobs keep their state, their options lose the underscore keys (the bulk opt-in
-- ``_batchLane``, the user's, is kept under its camelCase name ``batchLane``)
UPDATE large_conversion_jobs SET
    batch_primed = COALESCE((options->>'_batchPrimed')::boolean, false),
    batch_cost_usd = COALESCE((options->>'_batchCostUsd')::numeric, 0),
    pause_settled = COALESCE((options->>'_pauseSettled')::boolean, false),
    budget_resumes = COALESCE((options->>'_budgetResumes')::integer, 0),
    process_now = COALESCE((options->>'_processNow')::boolean, false),
    max_pages = (options->>'_maxPages')::integer,
    retry_attempt = (options->'_retry'->>'attempt')::integer,
    retry_pages = CASE WHEN options ? '_retry' THEN ARRAY(SELECT p::integer FROM jsonb_array_elements_text(options->'_retry'->'pages') p) END,
    options = (options - '_batchPrimed' - '_batchCostUsd' - '_pauseSettled' - '_budgetResumes' - '_processNow' - '_maxPages' - '_retry' - '_batchLane')
              || CASE WHEN options ? '_batchLane' THEN jsonb_build_object('batchLane', options->'_batchLane') ELSE '{}'::jsonb END
WHERE options ?| ARRAY['_batchPrimed', '_batchCostUsd', '_pauseSettled', '_budgetResumes', '_processNow', '_maxPages', '_retry', '_batchLane'];
