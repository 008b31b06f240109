"""`doctor --live`: which page forms the account accepts, per lane, and the form ``auto`` is to use.

The on-demand calls and the pilot batch job try both forms (live.py); this module reads their
verdicts, picks a form both lanes take (pdf first: Anthropic's documented PDF support, which also
gives the model the PDF's own text), and records it through the migrate function, the one
function inside the VPC the doctor may call (db/page_forms.py). docs/deploy.md "The page form".
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from batchlane.domain import page_form as forms
from batchlane_dev.cli.doctor.checks import error_text
from batchlane_dev.cli.doctor.results import Check, failed, passed, warned

PAGE_FORMS_CHECK = "live: page forms"


def choose(accepted: Mapping[str, Mapping[str, bool]]) -> str | None:
    """The first form (pdf, then image) both lanes accepted, or None."""
    return next((form for form in forms.FORMS if accepted.get(form, {}).get("onDemand") and accepted.get(form, {}).get("batch")), None)


def settle_page_form(target: Any, client: Callable[[str], Any], setting: str, calls: Sequence[Check], batch: Mapping[str, bool]) -> Check:
    """One check with the forms accepted per lane (``data.pageForms``), recording the choice when the setting is auto."""
    accepted = {
        # accepted only where an answer came back: on-demand, the visual call answered (and saw the picture); in
        # batch, a record of the form succeeded. Never from the mere absence of a refusal.
        form: {"onDemand": call.ok and bool(call.data.get("answered")), "batch": bool(batch.get(form))}
        for form, call in zip(forms.FORMS, calls, strict=True)
    }
    chosen = choose(accepted)
    data: dict[str, Any] = {"modelId": target.model_id, "setting": setting, "accepted": accepted, "chosen": chosen, "recorded": False}
    summary = ", ".join(f"{form}: on-demand {'yes' if a['onDemand'] else 'no'}, batch {'yes' if a['batch'] else 'no'}" for form, a in accepted.items())
    if chosen is None:
        return _with(failed(PAGE_FORMS_CHECK, f"no page form is accepted by both lanes ({summary})"), data)
    if setting in forms.FORMS and not (accepted[setting]["onDemand"] and accepted[setting]["batch"]):
        return _with(failed(PAGE_FORMS_CHECK, f"BATCHLANE_PAGE_FORM={setting} is refused here ({summary}): set {chosen} or auto"), data)
    if setting != forms.AUTO:
        return _with(passed(PAGE_FORMS_CHECK, f"{summary}; BATCHLANE_PAGE_FORM={setting}"), data)
    function = target.outputs.get("MigrateFunctionName")
    if not function:
        return _with(warned(PAGE_FORMS_CHECK, f"{summary}; auto would use {chosen}, but the stack has no migrate function to record it"), data)
    try:
        _record(client("lambda"), function, target.model_id, chosen, accepted)
    except Exception as exc:
        return _with(warned(PAGE_FORMS_CHECK, f"{summary}; recording {chosen} failed: {error_text(exc)}"), data)
    data["recorded"] = True
    return _with(passed(PAGE_FORMS_CHECK, f"{summary}; auto uses {chosen} from now on (recorded)"), data)


def _with(check: Check, data: dict[str, Any]) -> Check:
    return Check(check.name, check.ok, check.detail, check.severity, {"pageForms": data})


def _record(lambda_client: Any, function: str, model_id: str, form: str, accepted: Mapping[str, Any]) -> None:
    invoke_migrate(lambda_client, function, {"action": "record_page_form", "modelId": model_id, "pageForm": form, "accepted": accepted})


def invoke_migrate(lambda_client: Any, function: str, payload: Mapping[str, Any]) -> None:
    """One action of the migrate function (the one function inside the VPC the doctor may call); raises on its error."""
    response = lambda_client.invoke(FunctionName=function, Payload=json.dumps(payload).encode())
    body = json.loads(response["Payload"].read() or b"{}")
    if response.get("FunctionError"):
        raise RuntimeError(f"{body.get('errorType', 'Error')}: {body.get('errorMessage', '')}")
