-- A folder job's lane rights, decided once at submit from the owner's groups then (issue 40.3), and again at retry
-- and resume: whether its files may leave the half-price batch lane for on-demand (priority high, lane opt-outs, a
-- deadline the batch turnaround no longer meets). Without them a late file stays in the batch lane, "deadline missed".
-- Jobs submitted before this was recorded passed the submit rules of their day: they keep the behaviour they had.
ALTER TABLE folder_jobs ADD COLUMN priority_allowed boolean;
UPDATE folder_jobs SET priority_allowed = true;
ALTER TABLE folder_jobs ALTER COLUMN priority_allowed SET NOT NULL, ALTER COLUMN priority_allowed SET DEFAULT false;
