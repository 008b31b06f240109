"""EventBridge: the Bedrock batch state-change rule, the parked-job rule, and the schedules.

All from ``deployment.topology.RULES`` / ``SCHEDULES``. Every target has a retry policy
and a dead-letter queue for events EventBridge could not deliver; the functions
themselves send failed asynchronous runs to the compute construct's DLQ.
"""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from deployment import topology
from infra.config import InfraConfig
from infra.queues import dead_letter_queue


def _construct_id(name: str) -> str:
    return "".join(part.title() for part in name.split("_"))


class Events(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: InfraConfig,
        functions: dict[str, lambda_.Function],
    ) -> None:
        super().__init__(scope, construct_id)
        self.dlq = dead_letter_queue(self, "DeliveryDlq", holds="the EventBridge rule targets")
        self.rules: dict[str, events.Rule] = {}
        for rule in topology.RULES:
            self.rules[rule.name] = events.Rule(
                self,
                _construct_id(rule.name),
                description=rule.description,
                event_pattern=events.EventPattern(source=[rule.source], detail_type=[rule.detail_type]),
                targets=[self._target(functions[rule.target])],
            )
        for schedule in topology.SCHEDULES:
            minutes = config.schedules[schedule.name]
            if minutes <= 0:
                continue  # disabled by context
            self.rules[schedule.name] = events.Rule(
                self,
                _construct_id(schedule.name),
                description=schedule.description,
                schedule=events.Schedule.rate(Duration.minutes(minutes)),
                targets=[self._target(functions[schedule.target])],
            )

    def _target(self, fn: lambda_.IFunction) -> targets.LambdaFunction:
        return targets.LambdaFunction(
            fn,
            dead_letter_queue=self.dlq,
            retry_attempts=8,
            max_event_age=Duration.hours(2),
        )
