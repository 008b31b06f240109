"""The emulated account's model catalog: GetFoundationModel, GetFoundationModelAvailability, GetInferenceProfile.

Only the Claude models batchlane configures are listed, under the ids, names and
cross-region profiles AWS uses (us., eu., apac., global.); anything else answers
ResourceNotFoundException, as an id that does not exist in the region does on AWS. The
``modelName`` is also what the per-model Service Quotas names end with (see
:mod:`.service_quotas`).
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import ApiError

PROFILE_GEOGRAPHIES = ("us", "eu", "apac", "global")


@dataclass(frozen=True)
class EmulatedModel:
    model_id: str
    name: str  # modelName as GetFoundationModel answers it


MODELS: tuple[EmulatedModel, ...] = (
    EmulatedModel("anthropic.claude-sonnet-4-5-20250929-v1:0", "Claude Sonnet 4.5"),
    EmulatedModel("anthropic.claude-haiku-4-5-20251001-v1:0", "Claude Haiku 4.5"),
)
_BY_ID = {m.model_id: m for m in MODELS}


def base_model(model_or_profile_id: str) -> EmulatedModel | None:
    """The foundation model behind a model id or a cross-region profile id (None when unknown)."""
    geo, _, rest = model_or_profile_id.partition(".")
    if geo in PROFILE_GEOGRAPHIES and rest in _BY_ID:
        return _BY_ID[rest]
    return _BY_ID.get(model_or_profile_id.rsplit("/", 1)[-1])


class ModelCatalog:
    def __init__(self, *, account_id: str, region: str) -> None:
        self._account_id, self._region = account_id, region

    def _model(self, identifier: str) -> EmulatedModel:
        model = _BY_ID.get(identifier.rsplit("/", 1)[-1])
        if model is None:
            raise ApiError("ResourceNotFoundException", f"The model {identifier} is not found.")
        return model

    def foundation_model(self, identifier: str) -> dict[str, object]:
        model = self._model(identifier)
        return {
            "modelDetails": {
                "modelArn": f"arn:aws:bedrock:{self._region}::foundation-model/{model.model_id}",
                "modelId": model.model_id,
                "modelName": model.name,
                "providerName": "Anthropic",
                "inputModalities": ["TEXT", "IMAGE"],
                "outputModalities": ["TEXT"],
                "responseStreamingSupported": True,
                "customizationsSupported": [],
                "inferenceTypesSupported": ["INFERENCE_PROFILE"],
                "modelLifecycle": {"status": "ACTIVE"},
            }
        }

    def availability(self, model_id: str) -> dict[str, object]:
        model = self._model(model_id)
        return {
            "modelId": model.model_id,
            "agreementAvailability": {"status": "AVAILABLE"},
            "authorizationStatus": "AUTHORIZED",
            "entitlementAvailability": "AVAILABLE",
            "regionAvailability": "AVAILABLE",
        }

    def inference_profile(self, identifier: str) -> dict[str, object]:
        profile_id = identifier.rsplit("/", 1)[-1]
        geo, _, rest = profile_id.partition(".")
        model = _BY_ID.get(rest) if geo in PROFILE_GEOGRAPHIES else None
        if model is None:
            raise ApiError("ResourceNotFoundException", f"The inference profile {identifier} is not found.")
        return {
            "inferenceProfileName": f"{geo.upper()} {model.name}",
            "description": f"Routes requests to {model.name} in the {geo} geography.",
            "inferenceProfileArn": f"arn:aws:bedrock:{self._region}:{self._account_id}:inference-profile/{profile_id}",
            "inferenceProfileId": profile_id,
            "models": [{"modelArn": f"arn:aws:bedrock:{self._region}::foundation-model/{model.model_id}"}],
            "status": "ACTIVE",
            "type": "SYSTEM_DEFINED",
        }
