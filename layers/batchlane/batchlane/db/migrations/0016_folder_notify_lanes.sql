-- Folder jobs deliver webhooks too (issue 12): a delivery belongs to a conversion job (job_id),
-- a folder job (folder_job_id, an fj- id) or neither (a test delivery).
ALTER TABLE webhook_deliveries ADD COLUMN folder_job_id text REFERENCES folder_jobs (id) ON DELETE CASCADE;
CREATE INDEX webhook_deliveries_folder_job ON webhook_deliveries (folder_job_id, created_at) WHERE folder_job_id IS NOT NULL;

-- Why a folder file took its lane (report.jsonl "lane_reason"): priority_high or deadline, set when its
-- conversion starts; NULL means the deployment's batch-lane rule decided (the report names that rule's reason).
ALTER TABLE folder_job_files ADD COLUMN lane_reason text;
