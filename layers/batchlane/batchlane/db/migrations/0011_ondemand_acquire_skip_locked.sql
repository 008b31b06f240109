-- ondemand_acquire without deadlocks (issue 16, found by the offline stack's worker processes).
-- The first version tried slots with INSERT ... ON CONFLICT DO UPDATE ... WHERE expired: a
-- conflicting row is LOCKED even when the WHERE is false, and kept locked until the statement
-- ends, so two Lambdas trying the same held slots in different (random) orders waited for
-- each other: "deadlock detected" (40P01), and the chunk failed. Offline it never showed while
-- every Lambda shared one process and one limiter connection; on AWS each has its own.
-- Now a call never waits while holding a lock: an absent slot is inserted (DO NOTHING when
-- another call got there first), an expired one is taken only if nobody holds its row
-- (SKIP LOCKED), and a live lease is never touched.
CREATE OR REPLACE FUNCTION ondemand_acquire(p_pool text, p_holder text, p_limit integer, p_ttl_s double precision)
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
        INSERT INTO ondemand_leases (pool, slot, holder, acquired_at, expires_at)
        VALUES (p_pool, candidate, p_holder, clock_timestamp(), clock_timestamp() + make_interval(secs => p_ttl_s))
        ON CONFLICT (pool, slot) DO NOTHING
        RETURNING slot INTO taken;
        IF taken IS NOT NULL THEN
            RETURN taken;
        END IF;
        UPDATE ondemand_leases AS l
           SET holder = p_holder, acquired_at = clock_timestamp(), expires_at = clock_timestamp() + make_interval(secs => p_ttl_s)
         WHERE l.pool = p_pool AND l.slot = candidate
           AND l.ctid = (SELECT e.ctid FROM ondemand_leases e
                         WHERE e.pool = p_pool AND e.slot = candidate AND e.expires_at <= clock_timestamp()
                         FOR UPDATE SKIP LOCKED)
        RETURNING l.slot INTO taken;
        IF taken IS NOT NULL THEN
            RETURN taken;
        END IF;
    END LOOP;
    RETURN NULL;
END;
$$;
