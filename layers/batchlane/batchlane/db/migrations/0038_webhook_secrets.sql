-- A webhook signing secret per owner (issue 40.4, docs/operations.md "Signed webhooks"; decision
-- docs/decisions/0033-webhook-secret-per-owner.md): each version KMS-encrypted with the owner in its encryption
-- context, so a row copied to another owner does not decrypt. The newest version signs; the one before it signs too
-- for the grace period after a rotation. webhook_signing holds when per-owner signing began: for
-- BATCHLANE_WEBHOOK_MIGRATION_DAYS from then, deliveries carry the deployment's signature beside the owner's.
CREATE TABLE webhook_secrets (
    owner_id    text NOT NULL,
    version     integer NOT NULL CHECK (version >= 1),
    ciphertext  bytea NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (owner_id, version)
);

CREATE TABLE webhook_signing (
    id               boolean PRIMARY KEY DEFAULT true CHECK (id),
    per_owner_since  timestamptz NOT NULL DEFAULT now()
);
INSERT INTO webhook_signing DEFAULT VALUES;
