"""Offline Amazon Bedrock: batch inference control plane + Converse runtime.

Used by the offline stack and the tests, never shipped in the Lambda layer. Its page
"model" is emulated (see :mod:`.model`): it reads the PDF text layer and is labelled
``EMULATED_MODEL_LABEL`` wherever it shows.

    faults = parse_faults(os.environ.get("BATCHLANE_EMULATOR_FAULTS", ""))
    emu = BedrockEmulator(s3_client_factory=..., publish_event=..., faults=faults)
    url = emu.start()   # endpoint_url for boto3 "bedrock" and "bedrock-runtime"
    ...
    emu.stop()
"""

from .emulator import BedrockEmulator
from .faults import Faults, parse_faults
from .model import EMULATED_MODEL_LABEL
from .quotas import BatchQuotas

__all__ = ["EMULATED_MODEL_LABEL", "BatchQuotas", "BedrockEmulator", "Faults", "parse_faults"]
