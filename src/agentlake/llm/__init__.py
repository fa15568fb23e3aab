"""agentlake's LLM layer: providers, budgets, recovery, structured output, breakers, accounting.

Everything other packages need is re-exported here::

    from agentlake.llm import generate, generate_structured, ScriptedProvider, register_scripted

Model strings carry the provider: ``ollama:MODEL``, ``ollama-cloud:MODEL``, ``openai:MODEL``, ``scripted:NAME``,
``function:NAME``, ``llamacpp:PATH``, ``local:NAME`` (the packaged chat models, in process). The extension point is ``provider.Provider``; every call is
accounted through ``accounting.add_recorder``. This package does not store records (the
observer does) nor build prompts for agents (the agents package does).
"""

from agentlake.llm.accounting import CallRecord, add_recorder, call_tags
from agentlake.llm.budget import BudgetEstimate, ContextOverflowError, assert_context_budget
from agentlake.llm.fakes import (
    FunctionProvider,
    ScriptedProvider,
    register_scripted,
    reset_llm_state,
    unregister_scripted,
)
from agentlake.llm.generate import Attempt, ContinuableResult, generate, generate_continuable
from agentlake.llm.jsonparse import JSONParseError, parse_json_tolerant
from agentlake.llm.packaged import default_model
from agentlake.llm.provider import (
    Capabilities,
    CircuitOpenError,
    Completion,
    GenerateOptions,
    Message,
    ModelServerUnreachable,
    Provider,
    ProviderConnectionError,
    ProviderError,
    ProviderHTTPError,
    ProviderTimeoutError,
    Usage,
    get_provider,
    register_provider,
)
from agentlake.llm.structured import (
    StructuredOutputError,
    StructuredResult,
    generate_json,
    generate_structured,
)

__all__ = [
    "Attempt",
    "BudgetEstimate",
    "CallRecord",
    "Capabilities",
    "CircuitOpenError",
    "Completion",
    "ContextOverflowError",
    "ContinuableResult",
    "FunctionProvider",
    "GenerateOptions",
    "JSONParseError",
    "Message",
    "ModelServerUnreachable",
    "Provider",
    "ProviderConnectionError",
    "ProviderError",
    "ProviderHTTPError",
    "ProviderTimeoutError",
    "ScriptedProvider",
    "StructuredOutputError",
    "StructuredResult",
    "Usage",
    "add_recorder",
    "assert_context_budget",
    "call_tags",
    "default_model",
    "generate",
    "generate_continuable",
    "generate_json",
    "generate_structured",
    "get_provider",
    "parse_json_tolerant",
    "register_provider",
    "register_scripted",
    "reset_llm_state",
    "unregister_scripted",
]
