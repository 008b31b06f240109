-- The global on-demand limit (docs/ondemand.md): leases on numbered slots, one pool per model.
-- A worker that dies keeps its slot only until expires_at; nothing has to clean up after it.

CREATE TABLE ondemand_leases (
    pool         text NOT NULL,          -- the model id: Bedrock quotas are per model
    slot         integer NOT NULL CHECK (slot >= 0),
    holder       text NOT NULL,          -- <worker>/<uuid> of the request holding it
    acquired_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    expires_at   timestamptz NOT NULL,
    PRIMARY KEY (pool, slot)
);

-- Take a free (or expired) slot below p_limit; NULL when all are held. Two callers racing
-- for the same slot are serialised by the primary key: the loser tries the next one.
CREATE FUNCTION ondemand_acquire(p_pool text, p_holder text, p_limit integer, p_ttl_s double precision)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    candidate integer;
    taken integer;
BEGIN
    FOR candidate IN
        SELECT g FROM generate_series(0, p_limit - 1) AS g
        WHERE NOT EXISTS (SELECT 1 FROM ondemand_leases l
                          WHERE l.pool = p_pool AND l.slot = g AND l.expires_at > clock_timestamp())
        ORDER BY random()
    LOOP
        INSERT INTO ondemand_leases AS l (pool, slot, holder, acquired_at, expires_at)
        VALUES (p_pool, candidate, p_holder, clock_timestamp(), clock_timestamp() + make_interval(secs => p_ttl_s))
        ON CONFLICT (pool, slot) DO UPDATE
            SET holder = EXCLUDED.holder, acquired_at = EXCLUDED.acquired_at, expires_at = EXCLUDED.expires_at
            WHERE l.expires_at <= clock_timestamp()
        RETURNING l.slot INTO taken;
        IF taken IS NOT NULL THEN
            RETURN taken;
        END IF;
    END LOOP;
    RETURN NULL;
END;
$$;

-- Requests-per-minute pacing (GCRA / virtual scheduling): next_at is when the next request
-- may start if none are ahead. A caller starts at next_at, or up to p_burst intervals earlier
-- after an idle spell, and pushes next_at one interval on; it waits until its start.
-- In any 60 s about rpm + burst + 1 requests may start: keep that below the quota.
CREATE TABLE ondemand_pace (
    pool     text PRIMARY KEY,
    next_at  timestamptz NOT NULL
);

CREATE FUNCTION ondemand_pace_ticket(p_pool text, p_interval_s double precision, p_burst integer)
RETURNS double precision LANGUAGE sql AS $$
    INSERT INTO ondemand_pace AS p (pool, next_at)
    VALUES (p_pool, clock_timestamp() - make_interval(secs => p_interval_s * p_burst) + make_interval(secs => p_interval_s))
    ON CONFLICT (pool) DO UPDATE
        SET next_at = greatest(p.next_at, clock_timestamp() - make_interval(secs => p_interval_s * p_burst))
                      + make_interval(secs => p_interval_s)
    RETURNING greatest(0, extract(epoch FROM (p.next_at - make_interval(secs => p_interval_s) - clock_timestamp())))::double precision;
$$;
