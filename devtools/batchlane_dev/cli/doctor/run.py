"""Runs the checks in order against one target; later checks use what earlier ones found."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from decimal import Decimal
from typing import Any

from batchlane_dev.cli.doctor import checks as c
from batchlane_dev.cli.doctor.concurrency import check_lambda_concurrency
from batchlane_dev.cli.doctor.live import PilotPlan, check_visual_call, run_pilot
from batchlane_dev.cli.doctor.page_forms import settle_page_form
from batchlane_dev.cli.doctor.quotas import compare, read_batch_quotas
from batchlane_dev.cli.doctor.results import Check, failed, warned
from batchlane_dev.cli.doctor.service_tiers import probe_flex
from batchlane_dev.cli.doctor.target import Target

ClientFactory = Callable[[str], Any]


def run_doctor(
    target: Target,
    client: ClientFactory,
    *,
    region: str | None,
    live: bool = False,
    quality: bool = False,
    pilot_timeout_s: float = 2 * 3600,
    poll_s: float = 30.0,
) -> list[Check]:
    results: list[Check] = []
    missing = target.missing_outputs()
    if missing:
        results.append(failed("stack outputs", f"{target.name} lacks outputs {', '.join(missing)}: redeploy with this version of batchlane"))
    credentials, account_id = c.check_credentials(client("sts"))
    results.append(credentials)
    if account_id is None:
        return results
    outputs = target.outputs
    results.append(c.check_region(region, outputs.get("Region")))
    models = []
    for model_id in target.model_ids:
        check, info = c.check_model(client("bedrock"), model_id)
        results.append(check)
        if info is not None:
            models.append(info)
    if outputs.get("ServiceRoleArn"):
        results.extend(
            c.check_service_role(
                client("iam"), outputs["ServiceRoleArn"], account_id=account_id, region=region or "", bucket=outputs.get("BucketName", ""), models=models
            )
        )
    if outputs.get("BucketName"):
        results.extend(c.check_bucket(client("s3"), outputs["BucketName"], offline=target.offline))
    if outputs.get("BatchEventRuleName"):
        results.append(c.check_event_rule(client("events"), outputs["BatchEventRuleName"]))
    if outputs.get("MigrateFunctionName"):
        results.extend(c.check_database(client("lambda"), outputs["MigrateFunctionName"]))
    results.extend(check_lambda_concurrency(client("lambda"), target))
    lane_model = next((m for m in models if m.configured_id == target.model_id), None)
    min_records = target.setting("BATCH_CONVERSION_MIN_RECORDS", 100)
    if lane_model is not None:
        try:
            quotas = read_batch_quotas(client("service-quotas"), lane_model.name)
            results.extend(compare(target, quotas))
            min_records = int(quotas.values.get("min_records", min_records))
        except Exception as exc:
            results.append(warned("quotas", f"Service Quotas for bedrock: {c.error_text(exc)}"))
    if live:
        results.extend(_live(target, client, lane_model is not None, min_records, pilot_timeout_s, poll_s, quality=quality))
    return results


def _live(target: Target, client: ClientFactory, model_ok: bool, min_records: int, timeout_s: float, poll_s: float, *, quality: bool = False) -> list[Check]:
    from batchlane.claude import ConverterConfig
    from batchlane.config import reload_settings
    from batchlane.domain import page_form as forms
    from batchlane.domain.cost import PriceTable

    if not model_ok:
        return [failed("live", f"skipped: model {target.model_id} is not usable (see above)")]
    settings = reload_settings()
    config = ConverterConfig.from_settings(settings, {"modelId": target.model_id})
    prices = PriceTable(settings.batchlane_prices)
    results = [check_visual_call(client("bedrock-runtime"), replace(config, page_form=form), prices) for form in forms.FORMS]
    plan = PilotPlan(
        bucket=target.outputs["BucketName"],
        role_arn=target.outputs["ServiceRoleArn"],
        model_id=target.model_id,
        records=max(len(forms.FORMS), min_records),
        config=config,
        page_forms=forms.FORMS,
        prices=prices,
        timeout_s=timeout_s,
        poll_s=poll_s,
    )
    results.append(run_pilot(client("bedrock"), client("s3"), plan))
    results.append(settle_page_form(target, client, target.lane.get("BATCHLANE_PAGE_FORM", settings.batchlane_page_form), results[: len(forms.FORMS)], plan.accepted_forms))
    # The Flex probe, in the form the page-form check chose (image when none: documented on both sides).
    chosen = results[-1].data.get("pageForms", {}).get("chosen") or forms.IMAGE
    discount = target.lane.get("BATCHLANE_FLEX_DISCOUNT") or settings.batchlane_flex_discount
    flex_prices = PriceTable(settings.batchlane_prices, flex_discount=Decimal(str(discount)) if discount not in (None, "") else None)
    results.append(probe_flex(target, client, replace(config, page_form=chosen), flex_prices))
    if quality:  # the sample through both lanes in the chosen form (docs/deploy.md "Quality probe")
        from batchlane_dev.cli.doctor.quality import run_quality

        emulated_by = None
        if target.offline:
            from batchlane_dev.local.bedrock.model import EMULATED_MODEL_LABEL

            emulated_by = EMULATED_MODEL_LABEL
        quality_plan = replace(plan, config=replace(config, page_form=chosen), records=max(3, min_records), page_forms=())
        results.append(run_quality(client("bedrock-runtime"), client("bedrock"), client("s3"), quality_plan, emulated_by=emulated_by))
    return results
