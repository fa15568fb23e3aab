"""The agents' operating manual: how an agent using agentlake's tools should work.

Owns the text only: ``RULES`` (the seed's AGENT_INSTRUCTIONS.md in agentlake's terms, one line
each), ``INSTRUCTIONS`` (what the MCP server sends every client at initialize: the lake, the
tools and the rules) and ``MANUAL`` (the rules with why and how, served as the MCP resource
``agentlake://manual`` and quoted in ``docs/agents.md``, which a test keeps equal). Where a rule
can be backed by a tool's behaviour, the tool says it too (the ``sql`` tool's description starts
with "structured question: SQL first"); the tools' code lives in ``agents/tools.py`` and
``gateway/mcp_server.py``, not here.
"""

from __future__ import annotations

MANUAL_URI = "agentlake://manual"

RULES = (
    "Never make a fact up: every number, name and id in your answer comes from a tool result "
    "you got in this conversation; when the tools found nothing, say so.",
    "Structured question (a count, a sum, an average, an exact filter): SQL first, with the `sql` "
    "tool (one read-only SELECT), or `ask` for a written answer.",
    "Matching text (who fits a description, which notes mention something): hybrid search "
    "(`hybrid_search`, `search`, `match`), narrowed by a SQL WHERE fragment when the question "
    "also has exact conditions.",
    "Give feedback on every `ask` answer you checked (`feedback`: right, or wrong with the "
    "expected value): the witness learns from it and the next alike question gets the lesson.",
    "Before a complex task (a fill, a multi-step analysis), check the lessons (`lessons`, or the "
    "agentlake://lessons resource) for what earlier runs learned about it.",
    "When a task you were given lessons for ends, record how it ended (`log_outcome`), so those "
    "lessons are measured.",
)

INSTRUCTIONS = (
    "agentlake: operational data (workers, clients, placements, and any dataset the user "
    "ingested) in a DuckDB lakehouse, and lessons learned from earlier agent runs. Use `sql` for "
    "counts and exact filters (one read-only SELECT), `match`/`search`/`hybrid_search` for "
    "free-text questions (optionally narrowed by a SQL WHERE fragment), `find_workers` to "
    "shortlist a role near a city, `get_worker` and `worker_profile` for one worker, `ask` for a "
    "written answer with cited sources, and `lessons` (or the agentlake://lessons resources) for "
    "what earlier runs learned.\n\nRules:\n"
    + "\n".join(f"- {rule}" for rule in RULES)
    + f"\n\nThe full manual, with the why of each rule: {MANUAL_URI}\n"
)

_WHY = (
    "A model that answers from memory invents plausible workers, counts and ids. The tools read "
    'the lake; `ask` cites the source of each claim and says "I could not answer this from the '
    'data" when no query or search ran.',
    "SQL is exact and checked: the guard lets one read-only SELECT through, under a timeout and "
    "row caps. A search ranks by similarity and cannot count: `ask` sends a counting question "
    "that chose search back to SQL.",
    "A vector index ranks text by meaning and keywords; SQL's `LIKE` misses synonyms. The WHERE "
    "fragment runs first, so exact conditions are never left to the ranking.",
    "Feedback is the signal the learner trusts: a right answer becomes a playbook (a worked "
    "example for alike questions), a wrong one with the expected value a checked correction. "
    "Nothing is learned from an answer nobody judged.",
    "Lessons hold what clients rejected and which queries were right. The staffing agents are "
    "given them automatically; an outside agent must ask.",
    "A lesson's confidence moves with measured outcomes of the runs it was given to, never with "
    "a model's opinion; an outcome nobody records measures nothing.",
)

MANUAL = (
    "# The agents' manual\n\n"
    "How an agent using agentlake's tools (over MCP, the HTTP API or the CLI) should work. The "
    "MCP server sends the rules to every client at initialize and serves this text as "
    f"`{MANUAL_URI}`.\n\n"
    + "\n".join(
        f"{number}. **{rule}**\n   {why}\n"
        for number, (rule, why) in enumerate(zip(RULES, _WHY, strict=True), 1)
    )
)
