"""topology.py, functions/ and statemachines/ must agree: neither CDK nor the offline stack may drift."""

import json
import re

from batchlane.filejob.chunk import MAX_CHUNK_ATTEMPTS, MAX_CHUNK_CONTINUATIONS
from deployment.topology import FUNCTIONS, FUNCTIONS_DIR, RULES, SCHEDULES, STATE_MACHINES, handler_path, load_definition


def test_every_function_folder_is_in_the_topology_and_back():
    folders = {p.name for p in FUNCTIONS_DIR.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))}
    assert folders == {spec.name for spec in FUNCTIONS}
    for spec in FUNCTIONS:
        assert "def handler(" in handler_path(spec.name).read_text(), spec.name


def test_state_machine_placeholders_are_exactly_the_declared_substitutions():
    for spec in STATE_MACHINES:
        text = load_definition(spec)  # the shared blocks and counts written in
        used = set(re.findall(r"\$\{([A-Za-z0-9_]+)\}", text))
        declared = {f"{fn}_arn" for fn in spec.functions} | set(spec.settings)
        assert used == declared, spec.name
        substituted = text
        for key in declared:
            substituted = substituted.replace("${" + key + "}", "1" if key in spec.settings else "arn:aws:lambda:us-east-1:1:function:x")
        definition = json.loads(substituted)
        assert definition["StartAt"] in definition["States"]


def test_rules_and_schedules_target_known_functions():
    names = {spec.name for spec in FUNCTIONS}
    assert all(rule.target in names for rule in RULES)
    assert all(schedule.target in names for schedule in SCHEDULES)


def test_the_chunk_retry_limits_match_the_processor_constants():
    assert STATE_MACHINES[0].name == "conversion"
    definition = json.loads(re.sub(r"\$\{[A-Za-z0-9_]+\}", "1", load_definition(STATE_MACHINES[0])))
    task = definition["States"]["ProcessChunks"]["ItemProcessor"]["States"]["ProcessChunk"]
    retries = {tuple(r["ErrorEquals"]): r for r in task["Retry"]}
    assert retries[("ChunkRetryLater",)]["MaxAttempts"] + 1 == MAX_CHUNK_ATTEMPTS == 3
    assert retries[("ChunkContinue",)]["MaxAttempts"] == MAX_CHUNK_CONTINUATIONS == 20
    order = [r["ErrorEquals"][0] for r in task["Retry"]]
    assert order[:2] == ["Lambda.TooManyRequestsException", "ChunkContinue"]  # matched before the generic retriers (a throttle first: issue 21)
    # The file takes both counts from topology.py, never a number typed twice.
    raw = STATE_MACHINES[0].path.read_text()
    assert '"MaxAttempts": ${chunk_retry_later_max_attempts}' in raw and '"MaxAttempts": ${chunk_continue_max_attempts}' in raw
