-- The pace's burst kept for owners with little recent service (issue 21; docs/decisions/0026-pace-burst-reserve.md).
-- Until now a flood spent the burst (the starts the schedule lets begin at once after a quiet spell) and
-- kept it spent: a newcomer's first requests waited their turn on the schedule while, alone, they would
-- all have started at once. Now an owner whose recent service (0035's decayed count) has reached p_busy
-- begins each start p_reserve intervals after its slot. The slots are handed out as before, one per
-- interval, so a busy owner's rate is unchanged (it pays p_reserve intervals once, when it becomes
-- busy); the schedule then runs p_reserve intervals behind the clock, and those are starts an owner below
-- p_busy takes at once. Every start still begins no earlier than its slot and at most p_burst intervals
-- after it could have (p_reserve is capped at p_burst), so the pool's bound (at most the burst + 1 plus one
-- per interval in any window) is 0031's. Without p_busy (NULL, the default) nothing changes.
DROP FUNCTION ondemand_pace_fair(text, text, double precision, integer, integer, timestamptz, double precision);

CREATE FUNCTION ondemand_pace_fair(p_pool text, p_owner text, p_interval_s double precision, p_burst integer, p_ahead integer,
                                   p_now timestamptz DEFAULT NULL, p_tau_s double precision DEFAULT 60,
                                   p_reserve integer DEFAULT 0, p_busy double precision DEFAULT NULL,
                                   OUT wait_s double precision, OUT retry_s double precision)
LANGUAGE plpgsql AS $$
DECLARE
    t_now timestamptz := coalesce(p_now, clock_timestamp());
    step interval := make_interval(secs => p_interval_s);
    slot timestamptz;
    begin_at timestamptz;
    mine timestamptz[];
    my_served double precision;
    least_other double precision;
    cap integer;
BEGIN
    INSERT INTO ondemand_pace (pool, next_at) VALUES (p_pool, t_now - step * p_burst) ON CONFLICT (pool) DO NOTHING;
    SELECT greatest(next_at, t_now - step * p_burst) INTO slot FROM ondemand_pace WHERE pool = p_pool FOR UPDATE;
    -- An owner with nothing ahead and no recent service is as good as absent: forget it (the row lock above serialises this).
    DELETE FROM ondemand_pace_owners
    WHERE pool = p_pool AND owner_id <> p_owner AND coalesce(ahead[cardinality(ahead)], '-infinity') <= t_now
      AND coalesce(served_at, '-infinity') <= t_now - make_interval(secs => 5 * p_tau_s);
    SELECT ARRAY(SELECT s FROM unnest(o.ahead) AS s WHERE s > t_now ORDER BY s),
           o.served * exp(-greatest(0, extract(epoch FROM t_now - coalesce(o.served_at, t_now)))::double precision / p_tau_s)
    INTO mine, my_served
    FROM ondemand_pace_owners o WHERE o.pool = p_pool AND o.owner_id = p_owner;
    mine := coalesce(mine, '{}');
    my_served := coalesce(my_served, 0);
    -- The least service among the other owners contending now (a start booked ahead).
    SELECT min(o.served * exp(-greatest(0, extract(epoch FROM t_now - coalesce(o.served_at, t_now)))::double precision / p_tau_s))
    INTO least_other
    FROM ondemand_pace_owners o
    WHERE o.pool = p_pool AND o.owner_id <> p_owner AND coalesce(o.ahead[cardinality(o.ahead)], '-infinity') > t_now;
    cap := CASE WHEN least_other IS NULL OR my_served <= least_other THEN p_ahead ELSE 1 END;
    -- A busy owner begins p_reserve intervals after its slot: the burst it leaves is for the others.
    begin_at := CASE WHEN p_busy IS NOT NULL AND my_served >= p_busy THEN slot + step * least(greatest(p_reserve, 0), p_burst) ELSE slot END;
    IF begin_at > t_now AND cardinality(mine) >= cap THEN
        retry_s := greatest(0, extract(epoch FROM mine[1] - t_now))::double precision;
        RETURN;  -- at its cap: the next start goes to an owner below theirs, or to this one once its earliest begins
    END IF;
    UPDATE ondemand_pace SET next_at = slot + step WHERE pool = p_pool;
    IF begin_at > t_now THEN
        mine := mine || begin_at;
    END IF;
    INSERT INTO ondemand_pace_owners (pool, owner_id, ahead, served, served_at) VALUES (p_pool, p_owner, mine, my_served + 1, t_now)
    ON CONFLICT (pool, owner_id) DO UPDATE SET ahead = EXCLUDED.ahead, served = EXCLUDED.served, served_at = EXCLUDED.served_at;
    wait_s := greatest(0, extract(epoch FROM begin_at - t_now))::double precision;
END;
$$;
