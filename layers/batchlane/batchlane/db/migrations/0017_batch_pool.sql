-- The batch pool (issue 13): a Bedrock batch job carries chunks of many conversion jobs, and a conversion
-- job's chunks may spread over several Bedrock jobs. docs/architecture.md "The batch pool".
--
-- conversion_batch_jobs is now one row per Bedrock job (a "lane"), keyed by lane_id; job_id stays only on
-- rows written before the pool (their lane_id is their job_id, so their S3 keys and execution names hold).
ALTER TABLE conversion_batch_jobs ADD COLUMN lane_id uuid;
UPDATE conversion_batch_jobs SET lane_id = job_id;
ALTER TABLE conversion_batch_jobs ALTER COLUMN lane_id SET NOT NULL;
ALTER TABLE conversion_batch_jobs ADD CONSTRAINT conversion_batch_jobs_lane_id_key UNIQUE (lane_id);
ALTER TABLE conversion_batch_jobs ALTER COLUMN job_id DROP NOT NULL;
ALTER TABLE conversion_batch_jobs DROP CONSTRAINT IF EXISTS conversion_batch_jobs_job_id_key;
-- How many members the lane carries (for the console and the report; the link table is the truth).
ALTER TABLE conversion_batch_jobs ADD COLUMN member_count integer NOT NULL DEFAULT 1;
-- A retry batch: the lane whose failed records it sends again (ids with -r1); it is prepared by that
-- lane's collect, not by a prepare step.
ALTER TABLE conversion_batch_jobs ADD COLUMN retry_of bigint REFERENCES conversion_batch_jobs (id) ON DELETE CASCADE;
CREATE INDEX batch_rows_by_model ON conversion_batch_jobs (model_id, state);

-- The link table: which chunk of which conversion job rides in which Bedrock job.
--   packed    : in a lane that is preparing or submitted
--   collected : its lane closed; ``accepted`` of its ``records`` came back usable (results/chunk-N.json)
--   left      : its job left the lane first (cancel, process now, a lane that went stopping)
CREATE TABLE batch_members (
    batch_row_id  bigint NOT NULL REFERENCES conversion_batch_jobs (id) ON DELETE CASCADE,
    job_id        uuid NOT NULL REFERENCES large_conversion_jobs (id) ON DELETE CASCADE,
    chunk_index   integer NOT NULL,
    member_tag    text NOT NULL,          -- m<k>: the record-id prefix of this job inside the lane
    pages         integer NOT NULL,       -- the packer's upper bound on its records
    records       integer,                -- what prepare wrote (blank pages send none)
    accepted      integer,
    state         text NOT NULL DEFAULT 'packed' CHECK (state IN ('packed', 'collected', 'left')),
    PRIMARY KEY (batch_row_id, job_id, chunk_index)
);
-- A chunk rides in at most one lane at a time.
CREATE UNIQUE INDEX one_open_lane_per_chunk ON batch_members (job_id, chunk_index) WHERE state = 'packed';
CREATE INDEX batch_members_by_job ON batch_members (job_id);

INSERT INTO batch_members (batch_row_id, job_id, chunk_index, member_tag, pages, records, accepted, state)
SELECT b.id, c.job_id, c.chunk_index, 'm0', c.last_page - c.first_page + 1, NULL, NULL,
       CASE WHEN b.state = 'closed' THEN 'collected' WHEN b.state = 'stopping' THEN 'left' ELSE 'packed' END
FROM conversion_batch_jobs b JOIN chunk_jobs c ON c.job_id = b.job_id;

-- When the pool first saw the job parked (its window runs from here), and when the pool let it go
-- without (all of) its pages in a Bedrock job, with the reason: the job's lane decision.
ALTER TABLE large_conversion_jobs ADD COLUMN pooled_at timestamptz;
ALTER TABLE large_conversion_jobs ADD COLUMN pool_left_at timestamptz;
ALTER TABLE large_conversion_jobs ADD COLUMN lane_reason text;
UPDATE large_conversion_jobs j SET pooled_at = j.created_at, pool_left_at = b.closed_at, lane_reason = b.reason
FROM conversion_batch_jobs b WHERE b.job_id = j.id;
CREATE INDEX jobs_in_pool ON large_conversion_jobs (model_id, pooled_at) WHERE status = 'waiting_batch';

-- One ledger row per Bedrock job (job_id NULL: it belongs to the lane), and one share per member job
-- (source batch_share), so a job's total = its chunk rows + its shares, and nothing counts twice.
ALTER TABLE cost_ledger ALTER COLUMN job_id DROP NOT NULL;
ALTER TABLE cost_ledger DROP CONSTRAINT IF EXISTS cost_ledger_source_check;
ALTER TABLE cost_ledger ADD CONSTRAINT cost_ledger_source_check CHECK (source IN ('chunk', 'batch', 'batch_share'));
ALTER TABLE cost_ledger ADD CONSTRAINT cost_ledger_job_unless_batch CHECK (job_id IS NOT NULL OR source = 'batch');
CREATE UNIQUE INDEX one_share_per_member ON cost_ledger (batch_row_id, job_id) WHERE source = 'batch_share';
-- Rows written before the pool: the batch row stays the job's (job_id set), which is its whole share.
