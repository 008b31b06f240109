"""`doctor --live`: does the account serve the model at Bedrock's Flex tier? One small InvokeModel with
``serviceTier: flex``; the answer is recorded through the migrate function (db/service_tiers.py), as the
page form is. A ValidationException means no; a throttle settles nothing. docs/deploy.md "Service tiers"."""

from __future__ import annotations

from typing import Any

from batchlane.domain import service_tier as tiers
from batchlane_dev.cli.doctor.checks import error_text
from batchlane_dev.cli.doctor.page_forms import invoke_migrate
from batchlane_dev.cli.doctor.results import Check, passed, warned

SERVICE_TIERS_CHECK = "live: service tier flex"


def probe_flex(target: Any, client: Any, config: Any, prices: Any) -> Check:
    """One check with ``data.serviceTiers``: whether flex was accepted, whether Flex is on for the model, and why."""
    from batchlane.aws.bedrock_runtime import BedrockRuntime
    from batchlane.claude import ModelCallError, OnDemandTransport, build_page_request
    from batchlane.pdf.split import open_pdf, plan_chunks
    from batchlane_dev.local.pdfgen import make_pdf

    document = open_pdf(make_pdf(1, title="batchlane doctor flex probe"), max_pages=1)
    page = next(iter(document.pages(plan_chunks(1, 1)[0])))
    request = build_page_request(chunk_index=0, page_number=1, pdf_bytes=page.pdf_bytes, config=config).with_tier(tiers.FLEX)
    accepted: bool | None
    try:
        OnDemandTransport(BedrockRuntime(lambda seconds: client("bedrock-runtime"))).send(request)
        accepted, detail = True, "accepted"
    except ModelCallError as exc:
        accepted = False if exc.code == "ValidationException" else None
        detail = f"{exc.code}: {exc.message[:200]}"
    verdict = tiers.flex_for_model(config.model_id, probe=accepted, rate_configured=prices.flex_rate(config.model_id) is not None)
    data: dict[str, Any] = {
        "modelId": config.model_id,
        "flex": {"accepted": accepted, "detail": detail},
        "documented": tiers.documented(config.model_id),
        "flexRateConfigured": prices.flex_rate(config.model_id) is not None,
        "flexOn": verdict.on,
        "why": verdict.why,
        "sources": list(tiers.FLEX_SOURCES),
        "recorded": False,
    }
    if accepted is None:
        return _with(warned(SERVICE_TIERS_CHECK, f"{config.model_id}: the flex probe settled nothing ({detail}); run it again"), data)
    function = target.outputs.get("MigrateFunctionName")
    summary = f"{config.model_id}: flex {'accepted' if accepted else 'refused'}; Flex lane {'on' if verdict.on else 'off'} ({verdict.why})"
    if not function:
        return _with(warned(SERVICE_TIERS_CHECK, f"{summary}, but the stack has no migrate function to record it"), data)
    try:
        payload = {"action": "record_service_tier", "modelId": config.model_id, "serviceTier": tiers.FLEX, "accepted": accepted, "detail": detail}
        invoke_migrate(client("lambda"), function, payload)
    except Exception as exc:
        return _with(warned(SERVICE_TIERS_CHECK, f"{summary}; recording it failed: {error_text(exc)}"), data)
    data["recorded"] = True
    return _with(passed(SERVICE_TIERS_CHECK, f"{summary} (recorded)"), data)


def _with(check: Check, data: dict[str, Any]) -> Check:
    return Check(check.name, check.ok, check.detail, check.severity, {"serviceTiers": data})
