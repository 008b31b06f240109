"""The deployment description: functions, state machines, rules, schedules and grants (never in the Lambda layer).

Read by the CDK app (infra/), the offline stack (batchlane_dev.local) and the tests; what the running
code needs of it (event names, the owner tag, the chunk retry counts) is ``batchlane.contract``.
"""
