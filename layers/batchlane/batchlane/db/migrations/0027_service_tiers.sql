-- The Bedrock service tiers each model takes on this account (issue 22.10): written by
-- `batchlane doctor --live` (one InvokeModel at serviceTier flex, recorded through the migrate
-- function's record_service_tier action, as page_forms is by record_page_form); read by the chunk
-- processor, which sends work at Flex only where the probe accepted it and a Flex rate is configured.
-- docs/architecture.md "Service tiers".
CREATE TABLE service_tiers (
    model_id     text NOT NULL,
    tier         text NOT NULL CHECK (tier IN ('priority', 'default', 'flex', 'reserved')),
    accepted     boolean NOT NULL,
    source       text NOT NULL CHECK (source IN ('doctor')),
    detail       text,
    recorded_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (model_id, tier)
);
