"""The batch lane: claim → prepare → submit → wait → collect → resume (DESIGN.md "The flow")."""
