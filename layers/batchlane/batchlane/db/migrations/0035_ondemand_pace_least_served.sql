-- The pace's fair share becomes least-served first (issue 21; docs/decisions/0025-least-served-pace.md).
-- 0031 let every owner book the same few starts ahead (p_ahead), so owners that keep asking alternate
-- and a small job beside a flood gets half the rate. Now each owner carries its recent service (starts
-- handed to it, decayed with a time constant of p_tau_s seconds: the limiter passes 100 of the pool's
-- intervals, 10.5 s at 570 requests a minute), and only the owner(s) with the least
-- of it among those with starts booked ahead may book p_ahead; any other owner may book 1. A flooder
-- keeps one start in every (p_ahead + 1) while a newcomer asks, the newcomer the rest; two owners that
-- keep asking alike swap places as their service crosses, so over time they still share evenly; an
-- owner alone still gets every start. The schedule (ondemand_pace.next_at) and its bound are 0031's.
-- An owner's row now outlives its bookings, so its service is remembered while it waits between
-- requests; it is forgotten once nothing is ahead and its last start is 5 time constants old.
ALTER TABLE ondemand_pace_owners
    ADD COLUMN served    double precision NOT NULL DEFAULT 0,  -- starts handed out, decayed to served_at
    ADD COLUMN served_at timestamptz;

DROP FUNCTION ondemand_pace_fair(text, text, double precision, integer, integer, timestamptz);

CREATE FUNCTION ondemand_pace_fair(p_pool text, p_owner text, p_interval_s double precision, p_burst integer, p_ahead integer,
                                   p_now timestamptz DEFAULT NULL, p_tau_s double precision DEFAULT 60,
                                   OUT wait_s double precision, OUT retry_s double precision)
LANGUAGE plpgsql AS $$
DECLARE
    t_now timestamptz := coalesce(p_now, clock_timestamp());
    step interval := make_interval(secs => p_interval_s);
    start_at timestamptz;
    mine timestamptz[];
    my_served double precision;
    least_other double precision;
    cap integer;
BEGIN
    INSERT INTO ondemand_pace (pool, next_at) VALUES (p_pool, t_now - step * p_burst) ON CONFLICT (pool) DO NOTHING;
    SELECT greatest(next_at, t_now - step * p_burst) INTO start_at FROM ondemand_pace WHERE pool = p_pool FOR UPDATE;
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
    IF start_at > t_now AND cardinality(mine) >= cap THEN
        retry_s := greatest(0, extract(epoch FROM mine[1] - t_now))::double precision;
        RETURN;  -- at its cap: the next start goes to an owner below theirs, or to this one once its earliest begins
    END IF;
    UPDATE ondemand_pace SET next_at = start_at + step WHERE pool = p_pool;
    IF start_at > t_now THEN
        mine := mine || start_at;
    END IF;
    INSERT INTO ondemand_pace_owners (pool, owner_id, ahead, served, served_at) VALUES (p_pool, p_owner, mine, my_served + 1, t_now)
    ON CONFLICT (pool, owner_id) DO UPDATE SET ahead = EXCLUDED.ahead, served = EXCLUDED.served, served_at = EXCLUDED.served_at;
    wait_s := greatest(0, extract(epoch FROM start_at - t_now))::double precision;
END;
$$;
