"""The packaged chat models in this process: the provider ``local:NAME`` (``packaged.py``).

``local:qwen2.5-coder-0.5b`` and ``local:qwen2.5-coder-1.5b`` run in this process on one of
two engines, both driven by the one decoding loop:

* ``transformers`` (the ``local`` extra): the GGUF dequantised once into safetensors in the model
  cache, linear layers quantised to int8 on load (``engines/torch.py``);
* ``llamacpp`` (optional, ``make local-llm``): the GGUF itself through llama-cpp-python
  (``engines/llamacpp.py``). Measured on a quiet 2-core machine it takes 1.5-1.6x as long per
  agent turn as transformers-int8 (its prompt evaluation, built without AVX-512, is 3x
  slower; docs/benchmarks.md), so ``local_engine=auto`` is transformers and llama.cpp is an
  explicit choice (it loads in seconds, where transformers' first load builds a cache).

In layers, each importing only those before it: ``engine`` (the ``Engine`` contract; the memory
check, the tokenizer and the threads every engine loads with), ``batch`` (the replies of
concurrent calls driven together, their passes one engine call), ``decoder`` (the decoding
loop: prefix-cache slots, the grammar, jump-forward, prompt-lookup drafts), ``engines/torch.py`` and
``engines/llamacpp.py`` (loading and the forward pass), ``engines`` (which engine runs a model,
the engines loaded in this process), ``provider`` (``LocalProvider``: the chat template, the
``Completion``). The names below are the package's public face, the one other packages and
tests import.
"""

from agentlake.llm.local.decoder import STRING_CAP, Decoder, Generation, lookup_draft
from agentlake.llm.local.engine import Engine
from agentlake.llm.local.engines import load_engine, loaded_models, unload_engines
from agentlake.llm.local.provider import LOCAL_MODULES, LocalProvider, render_chat

__all__ = [
    "LOCAL_MODULES",
    "STRING_CAP",
    "Decoder",
    "Engine",
    "Generation",
    "LocalProvider",
    "load_engine",
    "loaded_models",
    "lookup_draft",
    "render_chat",
    "unload_engines",
]
