-- The page form each model takes on this account (issue 22.1): pdf (document blocks) or image (the
-- rendered page plus its text layer). Written by `batchlane doctor --live` (through the migrate
-- function) and by the first call Bedrock refuses for its form; read by the chunk processor and
-- prepare when BATCHLANE_PAGE_FORM is auto. docs/architecture.md "The page form".
CREATE TABLE page_forms (
    model_id     text PRIMARY KEY,
    page_form    text NOT NULL CHECK (page_form IN ('pdf', 'image')),
    source       text NOT NULL CHECK (source IN ('doctor', 'refusal')),
    accepted     jsonb NOT NULL DEFAULT '{}'::jsonb,  -- doctor: {"pdf": {"onDemand": true, "batch": false}, "image": {...}}
    detail       text,
    recorded_at  timestamptz NOT NULL DEFAULT now()
);
