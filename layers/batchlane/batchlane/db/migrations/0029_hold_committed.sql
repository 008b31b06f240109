-- Issue 21.5: one spend counter per job. committed_usd is what the job's hold has given out: each
-- on-demand request reserves its worst case before it is sent (one guarded UPDATE, so concurrent
-- chunks cannot each spend the whole remainder), and the answer's real cost replaces the reservation.
-- wanted_usd: the worst case of the last request that did not fit (0 once one as large fits): the next chunk start
-- pauses the job when even that cannot be carried, instead of starting a chunk that cannot send it.
ALTER TABLE funds_holds ADD COLUMN committed_usd numeric(14, 6) NOT NULL DEFAULT 0,
                        ADD COLUMN wanted_usd numeric(14, 6) NOT NULL DEFAULT 0;
UPDATE funds_holds h SET committed_usd = COALESCE((SELECT SUM(cost_usd) FROM cost_ledger l WHERE l.job_id = h.job_id), 0);
