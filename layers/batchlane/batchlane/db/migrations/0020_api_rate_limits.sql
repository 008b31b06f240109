-- Per-user rate limit on the API (issue 21.2; docs/operations.md "API rate limits").
-- One token bucket per caller (Cognito sub): `tokens` as of `refilled_at`, refilled at the
-- deployment's rate up to its burst. api_take_tokens refills and takes in one statement under
-- the row's lock, so 20 API instances serving one user share one bucket and never over-admit.
CREATE TABLE api_rate_buckets (
    owner_id     text PRIMARY KEY,
    tokens       double precision NOT NULL,
    refilled_at  timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- Take p_cost tokens from p_owner's bucket. Returns 0 when admitted, else the seconds until
-- enough tokens have refilled (the Retry-After), leaving the bucket as it was.
CREATE FUNCTION api_take_tokens(p_owner text, p_cost double precision, p_rate double precision, p_burst double precision)
RETURNS double precision LANGUAGE plpgsql AS $$
DECLARE
    now_ts timestamptz := clock_timestamp();
    have double precision;
BEGIN
    INSERT INTO api_rate_buckets (owner_id, tokens, refilled_at) VALUES (p_owner, p_burst, now_ts)
        ON CONFLICT (owner_id) DO NOTHING;
    SELECT LEAST(p_burst, tokens + GREATEST(0, extract(epoch FROM now_ts - refilled_at)) * p_rate) INTO have
        FROM api_rate_buckets WHERE owner_id = p_owner FOR UPDATE;
    IF have >= p_cost THEN
        UPDATE api_rate_buckets SET tokens = have - p_cost, refilled_at = now_ts WHERE owner_id = p_owner;
        RETURN 0;
    END IF;
    UPDATE api_rate_buckets SET tokens = have, refilled_at = now_ts WHERE owner_id = p_owner;
    RETURN CASE WHEN p_rate > 0 THEN (p_cost - have) / p_rate ELSE 3600 END;
END;
$$;

-- A folder file refused at its split because its owner's live-page cap was full waits with its
-- page count (issue 21.5): it is claimed again only once that many pages are free, instead of being
-- re-downloaded and re-surveyed every turn while the cap stays full.
ALTER TABLE folder_job_files ADD COLUMN waits_for_pages integer;
