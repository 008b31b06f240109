-- Delete removes a member's page content from pooled lanes (issue 21, point 6): once a lane is closed
-- (no Bedrock job reads its files), the shard, prepare and output files of a member whose file was
-- deleted are removed, by the delete itself or later by the sweeper. purged_at says it was done.
ALTER TABLE batch_members ADD COLUMN purged_at timestamptz;
-- The sweeper's question: deleted files' members not yet purged (few rows: most members are never purged).
CREATE INDEX files_deleted ON files (deleted_at) WHERE deleted_at IS NOT NULL;
