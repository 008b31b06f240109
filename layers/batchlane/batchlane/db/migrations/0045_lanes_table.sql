-- Issue 44.4, decision 0040: the Bedrock batch job we submit is a lane in the schema as in the code.
-- conversion_batch_jobs -> lanes; the lane's row id in batch_members and cost_ledger, batch_row_id -> lane_row_id
-- (not lane_id: that is the lane's uuid column, the Bedrock job name's key). Renames only: rows, grants,
-- foreign keys and the sequence's ownership stay as they are, and the step is atomic (one transaction, migrate.py).
ALTER TABLE conversion_batch_jobs RENAME TO lanes;
ALTER TABLE batch_members RENAME COLUMN batch_row_id TO lane_row_id;
ALTER TABLE cost_ledger RENAME COLUMN batch_row_id TO lane_row_id;
ALTER SEQUENCE conversion_batch_jobs_id_seq RENAME TO lanes_id_seq;
ALTER INDEX batch_rows_by_state RENAME TO lanes_by_state;
ALTER INDEX batch_rows_by_model RENAME TO lanes_by_model;
ALTER INDEX one_ledger_row_per_batch_job RENAME TO one_ledger_row_per_lane;

-- Constraints named after the old table or column (their names differ across PostgreSQL versions:
-- 18 names its NOT NULL constraints too), found rather than listed. A unique or primary key's index follows.
DO $$
DECLARE c record;
BEGIN
    FOR c IN SELECT conrelid::regclass AS rel, conname FROM pg_constraint
             WHERE conrelid IN ('lanes'::regclass, 'batch_members'::regclass, 'cost_ledger'::regclass)
               AND (conname LIKE 'conversion\_batch\_jobs\_%' OR conname LIKE '%batch\_row\_id%')
    LOOP
        EXECUTE format('ALTER TABLE %s RENAME CONSTRAINT %I TO %I', c.rel, c.conname,
                       replace(replace(c.conname, 'conversion_batch_jobs_', 'lanes_'), 'batch_row_id', 'lane_row_id'));
    END LOOP;
END $$;
