"""Alarms and the dashboard.

Custom metrics come from the handlers through Powertools (namespace ``Batchlane``,
default dimension ``service=batchlane``):

* ``BatchRecordsAccepted`` / ``BatchRecordsFallback`` / ``BatchFallbackShare`` (percent)
  and ``BatchSavingUsd`` — emitted by assemble once per primed job (batch-served pages at the on-demand price, less the batch bill);
* ``JobsByState`` (dimension ``State``) and ``JobsWaitingPastDeadline`` — emitted by
  batch_sweeper on each run;
* ``BatchBillEstimated`` — a stopped or abandoned Bedrock job billed from its output records
  because its manifest.json.out was missing or unreadable (batch/billing.py).

Alarms: failed / timed-out / aborted executions of each state machine, any message in a
DLQ, the lane's fallback share over the threshold (records that fell back to on-demand
÷ all records, over 6 hours), any job waiting past its deadline, and any batch bill estimated
without Bedrock's manifest.
"""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from infra.compute import METRICS_NAMESPACE, SERVICE_NAME
from infra.config import InfraConfig

JOB_STATES = (
    "splitting",
    "pending",
    "waiting_batch",
    "processing",
    "paused_budget",
    "assembling",
    "completed",
    "failed",
    "cancelled",
)
SERVICE_DIMENSION = {"service": SERVICE_NAME}


def app_metric(name: str, statistic: str = "Sum", period: Duration = Duration.minutes(5), **dims: str) -> cw.Metric:
    return cw.Metric(
        namespace=METRICS_NAMESPACE,
        metric_name=name,
        dimensions_map={**SERVICE_DIMENSION, **dims},
        statistic=statistic,
        period=period,
    )


class Monitoring(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: InfraConfig,
        machines: dict[str, sfn.StateMachine],
        queues: dict[str, sqs.IQueue],
        fallback_threshold_percent: float,
    ) -> None:
        super().__init__(scope, construct_id)
        self.alarms: list[cw.Alarm] = []

        for name, machine in machines.items():
            failed = cw.MathExpression(
                expression="failed + timedout + aborted",
                using_metrics={
                    "failed": machine.metric_failed(period=Duration.minutes(5), statistic="Sum"),
                    "timedout": machine.metric_timed_out(period=Duration.minutes(5), statistic="Sum"),
                    "aborted": machine.metric_aborted(period=Duration.minutes(5), statistic="Sum"),
                },
                label=f"{name} executions failed",
                period=Duration.minutes(5),
            )
            self._alarm(f"{name}-executions-failed", failed, 1, f"A {name} execution failed, timed out or was aborted.")

        for name, queue in queues.items():
            depth = queue.metric_approximate_number_of_messages_visible(period=Duration.minutes(5), statistic="Maximum")
            self._alarm(f"{name}-dlq-not-empty", depth, 1, f"Messages are waiting in the {name} dead-letter queue.")

        share_period = Duration.hours(6)
        accepted = app_metric("BatchRecordsAccepted", period=share_period)
        fallback = app_metric("BatchRecordsFallback", period=share_period)
        fallback_share = cw.MathExpression(
            expression="IF(accepted + fallback > 0, 100 * fallback / (accepted + fallback), 0)",
            using_metrics={"accepted": accepted, "fallback": fallback},
            label="Batch lane fallback share (%)",
            period=share_period,
        )
        self._alarm(
            "batch-fallback-share-high",
            fallback_share,
            fallback_threshold_percent,
            f"More than {fallback_threshold_percent:g}% of batch records fell back to on-demand (the saving is eroding).",
            comparison=cw.ComparisonOperator.GREATER_THAN_THRESHOLD,
        )
        waiting = app_metric("JobsWaitingPastDeadline", statistic="Maximum", period=Duration.minutes(15))
        self._alarm("jobs-waiting-past-deadline", waiting, 1, "A job is still waiting for the batch lane past its deadline.")
        estimated = app_metric("BatchBillEstimated", period=Duration.hours(1))
        self._alarm(
            "batch-bill-estimated",
            estimated,
            1,
            "A Bedrock batch job was billed from its output records: its manifest.json.out was missing or unreadable (check the ledger rows marked estimated).",
        )

        if config.alarm_topic_arn:
            topic = sns.Topic.from_topic_arn(self, "AlarmTopic", config.alarm_topic_arn)
            for alarm in self.alarms:
                alarm.add_alarm_action(cw_actions.SnsAction(topic))
                alarm.add_ok_action(cw_actions.SnsAction(topic))

        self.dashboard = cw.Dashboard(self, "Dashboard", dashboard_name=f"{config.stack_name}-batchlane")
        self.dashboard.add_widgets(
            cw.GraphWidget(
                title="Jobs by state",
                left=[app_metric("JobsByState", "Maximum", Duration.minutes(15), State=s).with_(label=s) for s in JOB_STATES],
                width=12,
            ),
            cw.GraphWidget(
                title="Batch records: accepted vs fallback",
                left=[
                    accepted.with_(label="accepted", period=Duration.hours(1)),
                    fallback.with_(label="fallback", period=Duration.hours(1)),
                ],
                right=[fallback_share],
                width=12,
            ),
        )
        self.dashboard.add_widgets(
            cw.GraphWidget(
                title="Realised saving (USD)",
                left=[app_metric("BatchSavingUsd", period=Duration.days(1)).with_(label="saving per day")],
                width=8,
            ),
            cw.SingleValueWidget(
                title="Saving, last 30 days (USD)",
                metrics=[app_metric("BatchSavingUsd", period=Duration.days(30))],
                width=4,
            ),
            cw.GraphWidget(
                title="Executions",
                left=[m.metric_succeeded(label=f"{n} succeeded") for n, m in machines.items()]
                + [m.metric_failed(label=f"{n} failed") for n, m in machines.items()],
                width=12,
            ),
        )
        self.dashboard.add_widgets(cw.AlarmStatusWidget(title="Alarms", alarms=self.alarms, width=24))

    def _alarm(
        self,
        name: str,
        metric: cw.IMetric,
        threshold: float,
        description: str,
        comparison: cw.ComparisonOperator = cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
    ) -> None:
        construct_id = "".join(part.title() for part in name.replace("_", "-").split("-"))
        self.alarms.append(
            cw.Alarm(
                self,
                construct_id,
                metric=metric,
                threshold=threshold,
                evaluation_periods=1,
                comparison_operator=comparison,
                treat_missing_data=cw.TreatMissingData.NOT_BREACHING,
                alarm_description=description,
            )
        )
