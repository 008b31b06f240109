-- Chunk work admitted per owner (issue 21): a row per chunk invocation running now, and a row per owner
-- whose chunk was refused lately (so the owners holding slots see a smaller share). conversion/admission.py.
CREATE TABLE chunk_admissions (
    job_id uuid NOT NULL,
    chunk_index integer NOT NULL,
    owner_id text NOT NULL,
    admitted_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,  -- past the chunk processor's timeout: a killed invocation frees its slot
    PRIMARY KEY (job_id, chunk_index)
);
CREATE INDEX chunk_admissions_by_owner ON chunk_admissions (owner_id);

CREATE TABLE chunk_admission_waiters (
    owner_id text PRIMARY KEY,
    expires_at timestamptz NOT NULL
);
