-- Folder jobs deliver webhooks too (issue 12): a delivery belongs to a conversion job (job_id),
-- a folder job (folder_job_id, an fj- id) or neither (a test delivery).
ALTER TABLE webhook_deliveries ADD COLUMN folder_job_id text REFERENCES folder_jobs (id) ON DELETE CASCADE;
CREATE INDEX webhook_deliveries_folder_job ON webhook_deliveries (folder_job_id, created_at) WHERE folder_job_id IS NOT NULL;
