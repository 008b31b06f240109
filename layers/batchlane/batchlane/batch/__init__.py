"""The batch lane: claim → prepare → submit → wait → collect → resume (docs/architecture.md "The life of a job")."""
