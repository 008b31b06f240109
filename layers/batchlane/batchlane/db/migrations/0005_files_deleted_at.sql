-- Deleting a file hides it (and deletes the upload) but keeps its rows: the jobs, the
-- cost ledger and the funds holds are the accounting of money already spent, and a
-- stopped Bedrock batch job of a cancelled conversion is still collected and billed
-- after the user deleted the file. The API treats a deleted file as not found.
ALTER TABLE files ADD COLUMN deleted_at timestamptz;
DROP INDEX IF EXISTS files_by_owner;
CREATE INDEX files_by_owner ON files (owner_id, created_at DESC) WHERE deleted_at IS NULL;
