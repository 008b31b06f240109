-- The pace shared fairly by owner (issue 21; docs/operations.md "Budgets, caps and fair sharing").
-- ondemand_pace_ticket (0003) hands out start times first come, first served: an owner holding
-- many slots books the schedule many intervals ahead, and another owner's request starts behind
-- all of them. A start time, once handed out, is slept on by its request and cannot be taken
-- back, so fairness has to be decided when it is handed out: each owner may hold at most
-- p_ahead start times in the future. An owner at that cap is refused (retry_s: when its earliest
-- booked start begins) and the next start goes to whoever asks while below theirs: owners that
-- keep asking alternate, a newcomer's first request starts behind at most p_ahead starts of each
-- other owner, and an owner alone still gets every start (it books the next one when its earliest
-- begins, p_ahead intervals ahead of need). Starts free right now (the burst after an idle spell)
-- book nothing ahead and are never refused.
-- The real schedule is the same row as 0003's (ondemand_pace.next_at, GCRA): every start handed
-- out by either function pushes it one interval on, so the pool's rate is the same bound as
-- before (in any 60 s about rpm + burst + 1 starts), whoever asks.
-- One call per attempt; it locks the pool's row first, then that pool's owner rows, always in that
-- order (0003's function locks only the pool's row), so concurrent calls queue but never deadlock.
-- p_now: the clock, for tests (NULL: clock_timestamp()).
CREATE TABLE ondemand_pace_owners (
    pool      text NOT NULL,
    owner_id  text NOT NULL,
    ahead     timestamptz[] NOT NULL DEFAULT '{}',  -- the owner's start times handed out and not begun, oldest first
    PRIMARY KEY (pool, owner_id)
);

CREATE FUNCTION ondemand_pace_fair(p_pool text, p_owner text, p_interval_s double precision, p_burst integer, p_ahead integer,
                                   p_now timestamptz DEFAULT NULL, OUT wait_s double precision, OUT retry_s double precision)
LANGUAGE plpgsql AS $$
DECLARE
    t_now timestamptz := coalesce(p_now, clock_timestamp());
    step interval := make_interval(secs => p_interval_s);
    start_at timestamptz;
    mine timestamptz[];
BEGIN
    INSERT INTO ondemand_pace (pool, next_at) VALUES (p_pool, t_now - step * p_burst) ON CONFLICT (pool) DO NOTHING;
    SELECT greatest(next_at, t_now - step * p_burst) INTO start_at FROM ondemand_pace WHERE pool = p_pool FOR UPDATE;
    -- An owner with nothing ahead is as good as absent: forget it (the row lock above serialises this).
    DELETE FROM ondemand_pace_owners
    WHERE pool = p_pool AND owner_id <> p_owner AND coalesce(ahead[cardinality(ahead)], '-infinity') <= t_now;
    SELECT ARRAY(SELECT s FROM unnest(o.ahead) AS s WHERE s > t_now ORDER BY s) INTO mine
    FROM ondemand_pace_owners o WHERE o.pool = p_pool AND o.owner_id = p_owner;
    mine := coalesce(mine, '{}');
    IF start_at > t_now AND cardinality(mine) >= p_ahead THEN
        retry_s := greatest(0, extract(epoch FROM mine[1] - t_now))::double precision;
        RETURN;  -- at its cap: the next start goes to an owner below theirs, or to this one once its earliest begins
    END IF;
    UPDATE ondemand_pace SET next_at = start_at + step WHERE pool = p_pool;
    IF start_at > t_now THEN
        mine := mine || start_at;
    END IF;
    INSERT INTO ondemand_pace_owners (pool, owner_id, ahead) VALUES (p_pool, p_owner, mine)
    ON CONFLICT (pool, owner_id) DO UPDATE SET ahead = EXCLUDED.ahead;
    wait_s := greatest(0, extract(epoch FROM start_at - t_now))::double precision;
END;
$$;
