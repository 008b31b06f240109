"""Signed webhooks and public job events (docs/operations.md "Signed webhooks", "Public events").

A job state change is published once on the bus (:mod:`.events`); the ``webhook_dispatch``
function turns it into the job's subscribed deliveries (:mod:`.dispatch`); each delivery is
one ``webhook_delivery`` execution whose ``webhook_deliver`` task POSTs it, signed
(:mod:`.signing`, :mod:`.deliver`), retried by the state machine's ladder.
"""
