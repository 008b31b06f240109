-- Fair share of the on-demand slots by owner (issue 15; docs/operations.md "Budgets, caps and fair sharing").
-- Each lease records its owner; a request that finds no slot registers as a waiter (refreshed
-- while it polls, expiring on its own when its worker dies). An owner already holding its
-- fair share (ceil(limit / owners holding or waiting)) is refused while another owner below
-- its share waits, so the next free slot goes to that owner instead of the busiest one.
ALTER TABLE ondemand_leases ADD COLUMN owner_id text NOT NULL DEFAULT '';

CREATE TABLE ondemand_waiters (
    pool        text NOT NULL,
    holder      text NOT NULL,
    owner_id    text NOT NULL,
    since       timestamptz NOT NULL DEFAULT clock_timestamp(),
    expires_at  timestamptz NOT NULL,
    PRIMARY KEY (pool, holder)
);

CREATE FUNCTION ondemand_acquire_fair(p_pool text, p_holder text, p_owner text, p_limit integer, p_ttl_s double precision,
                                      p_wait_ttl_s double precision)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    owners integer;
    mine integer;
    fair integer;
    taken integer;
BEGIN
    -- Housekeeping that never waits (0011's lesson: no lock waits inside the limiter's calls).
    DELETE FROM ondemand_waiters WHERE ctid IN (
        SELECT ctid FROM ondemand_waiters WHERE pool = p_pool AND expires_at <= clock_timestamp() FOR UPDATE SKIP LOCKED);
    SELECT count(*) INTO owners FROM (
        SELECT owner_id FROM ondemand_leases WHERE pool = p_pool AND expires_at > clock_timestamp()
        UNION SELECT owner_id FROM ondemand_waiters WHERE pool = p_pool AND expires_at > clock_timestamp()
        UNION SELECT p_owner) o;
    SELECT count(*) INTO mine FROM ondemand_leases WHERE pool = p_pool AND owner_id = p_owner AND expires_at > clock_timestamp();
    fair := GREATEST(1, ceil(p_limit::numeric / owners)::integer);
    IF mine >= fair AND EXISTS (
        SELECT 1 FROM ondemand_waiters w WHERE w.pool = p_pool AND w.owner_id <> p_owner AND w.expires_at > clock_timestamp()
          AND (SELECT count(*) FROM ondemand_leases l
               WHERE l.pool = p_pool AND l.owner_id = w.owner_id AND l.expires_at > clock_timestamp()) < fair) THEN
        taken := NULL;  -- at its share while someone below theirs waits: let them have the next slot
    ELSE
        taken := ondemand_acquire(p_pool, p_holder, p_limit, p_ttl_s);
    END IF;
    IF taken IS NOT NULL THEN
        UPDATE ondemand_leases SET owner_id = p_owner WHERE pool = p_pool AND slot = taken AND holder = p_holder;
        DELETE FROM ondemand_waiters WHERE pool = p_pool AND holder = p_holder;
    ELSE
        INSERT INTO ondemand_waiters (pool, holder, owner_id, expires_at)
        VALUES (p_pool, p_holder, p_owner, clock_timestamp() + make_interval(secs => p_wait_ttl_s))
        ON CONFLICT (pool, holder) DO UPDATE SET expires_at = EXCLUDED.expires_at;
    END IF;
    RETURN taken;
END;
$$;
