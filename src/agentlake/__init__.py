"""agentlake: LLM agents that get better at real data work without retraining.

The package is laid out along the data's path: ``lake`` (data in, SQL, search) ->
``agents`` (tools, actions, orchestration) -> ``observe`` (record every operation) ->
``learn`` (lessons out of what was observed) -> back into ``agents``. ``llm`` and ``embed``
are services the stages call; ``gateway``, ``cli`` and ``web`` are thin doors.
"""

__version__ = "0.1.0"
