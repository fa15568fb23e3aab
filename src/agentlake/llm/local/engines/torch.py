"""The transformers engine of ``local:`` models: no compiler needed, the installed CPU torch.

Loading a Q4_K_M GGUF with transformers dequantises every tensor (30-50 s on 2 cores), so it
is done once: the weights are saved as safetensors (bfloat16) in the model cache with their
config and tokenizer, under a manifest of sha256s, and later loads memory-map that file
(seconds). A cache whose files no longer match their manifest is rebuilt from the verified
GGUF. On load the linear layers are quantised to int8 (``local_torch_dtype=int8``, the
default): decoding on this CPU is bound by reading the weights, and int8 reads half of what
bfloat16 does (docs/benchmarks.md has the figures for both). The forward pass keeps each KV
cache in a buffer that grows in place (``growing_cache``) and, for several new tokens, folds
the query heads of grouped-query attention onto their shared key/value heads
(``grouped_sdpa``) instead of copying the cache per head. The passes of several sequences
decoding at once run as one ragged pass (``evaluate_batch``): their tokens are concatenated
into one row of the batch, so every linear layer (the projections, the MLP, the head) reads
its weights once for all of them, while rotary positions and attention stay per sequence,
each against its own KV-cache slot (``ragged_attention``). This module owns loading and the
forward pass; the decoding loop is ``decoder.Decoder``.
"""

from __future__ import annotations

import inspect
import json
import logging
import os
import shutil
import tempfile
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentlake.checksum import file_sha256
from agentlake.errors import RunError, UserError, require_extra
from agentlake.llm.local.decoder import CACHE_SLOTS, Decoder
from agentlake.llm.local.engine import (
    Pass,
    check_memory,
    kv_bytes_per_token,
    load_tokenizer,
    progress_printer,
    threads,
)
from agentlake.llm.packaged import (
    GGUFInfo,
    PackagedModel,
    cache_dir,
    remember_verified,
    verify_file,
)

if TYPE_CHECKING:
    from agentlake.settings import Settings

log = logging.getLogger("agentlake.llm")
MANIFEST = "manifest.json"
FORMAT = 1  # bump when the layout of the weights cache changes


def weights_dir(packaged: PackagedModel, settings: Settings) -> Path:
    return cache_dir(settings) / f"{packaged.name}-transformers-bf16"


def _import_torch() -> tuple[Any, Any]:
    require_extra("local", "the transformers engine of local: models", "torch", "transformers", "accelerate")
    import torch
    import transformers

    return torch, transformers


def _manifest_ok(directory: Path, packaged: PackagedModel) -> bool:
    """The cache holds what the manifest lists, built from this GGUF, each file unchanged."""
    try:
        manifest = json.loads((directory / MANIFEST).read_text("utf-8"))
    except (OSError, ValueError):
        return False
    if (
        not isinstance(manifest, dict)
        or manifest.get("gguf_sha256") != packaged.sha256
        or manifest.get("format") != FORMAT
    ):
        return False
    try:
        for name, (size, sha256) in manifest["files"].items():
            verify_file(directory / name, int(size), str(sha256), what="weights cache", fix="rebuilt")
    except (UserError, KeyError, TypeError, ValueError) as exc:
        log.warning("rebuilding the weights cache %s: %s", directory, getattr(exc, "message", exc))
        return False
    return True


def _dequantise(packaged: PackagedModel, gguf: Path, directory: Path) -> None:
    """Dequantise ``gguf`` with transformers and save it as the weights cache, atomically."""
    torch, transformers = _import_torch()
    from safetensors.torch import save_model

    show = progress_printer(f"local:{packaged.name}")
    show(f"dequantising the GGUF once into {directory} (30-60 s; later loads take seconds)")
    try:
        model = transformers.AutoModelForCausalLM.from_pretrained(
            str(gguf.parent), gguf_file=gguf.name, dtype=torch.bfloat16
        )
    except (OSError, ValueError, RuntimeError, KeyError) as exc:
        raise RunError(f"transformers cannot load {gguf}: {exc}") from exc
    directory.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=directory.parent, prefix=f".{directory.name}."))
    try:
        save_model(model, str(staging / "model.safetensors"))
        config = model.config.to_dict()
        config.pop("quantization_config", None)  # the saved weights are plain bfloat16
        (staging / "config.json").write_text(json.dumps(config, indent=1), "utf-8")
        files = {}
        for path in sorted(staging.iterdir()):
            if path.is_file():
                files[path.name] = (path.stat().st_size, file_sha256(path))
        manifest = {
            "format": FORMAT,
            "gguf_sha256": packaged.sha256,
            "transformers": transformers.__version__,
            "files": files,
        }
        (staging / MANIFEST).write_text(json.dumps(manifest, indent=1), "utf-8")
        if directory.exists():
            shutil.rmtree(directory)
        os.replace(staging, directory)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    for name, (_, sha256) in files.items():
        remember_verified(directory / name, sha256)
    show("weights cache written")


ATTENTION = "agentlake_sdpa"


def grouped_sdpa(
    module: Any,
    query: Any,
    key: Any,
    value: Any,
    attention_mask: Any,
    dropout: float = 0.0,
    scaling: float | None = None,
    is_causal: bool | None = None,
    **kwargs: Any,
) -> tuple[Any, None]:
    """transformers' sdpa attention, but for several new tokens over a cache with grouped-query
    attention (a verified draft, a prompt's new tail) the query heads that share a key/value head
    are folded into one longer query, with the mask repeated for each, where transformers
    copies the keys and values of the whole cache once per query head (``repeat_kv``): for the
    0.5B over a 2k-token cache, 7 copies of every layer's cache on each pass. One new token,
    or no mask, is transformers' own path (it folds a single token the same way). A ragged
    pass (``TorchEngine.evaluate_batch``) hands its sequences' places as ``ragged``."""
    import torch
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    ragged = kwargs.pop("ragged", None)
    if ragged is not None:
        return ragged_attention(module, query, key, value, ragged, dropout=dropout, scaling=scaling)
    groups = getattr(module, "num_key_value_groups", 1)
    batch, heads, length, dim = query.shape
    if (
        groups == 1
        or length == 1
        or attention_mask is None
        or attention_mask.shape[1] != 1
        or kwargs.get("position_bias") is not None
    ):
        return sdpa_attention_forward(
            module,
            query,
            key,
            value,
            attention_mask,
            dropout=dropout,
            scaling=scaling,
            is_causal=is_causal,
            **kwargs,
        )
    query = query.reshape(batch, heads // groups, groups * length, dim)
    mask_batch, _, _, width = attention_mask.shape
    mask = attention_mask[:, :, None].expand(mask_batch, 1, groups, length, width)
    out = torch.nn.functional.scaled_dot_product_attention(
        query,
        key,
        value,
        attn_mask=mask.reshape(mask_batch, 1, groups * length, width),
        dropout_p=dropout,
        scale=scaling,
    )
    return out.reshape(batch, heads, length, dim).transpose(1, 2).contiguous(), None


def ragged_attention(
    module: Any, query: Any, key: Any, value: Any, ragged: Sequence[tuple[Any, int, int]], **kwargs: Any
) -> tuple[Any, None]:
    """Attention of a ragged pass: for each sequence, given as ``(cache, start, length)`` (its
    KV cache and its place among the pass's tokens), its new keys and values are appended to
    its cache and its queries attend to that cache, causally among themselves; the outputs
    are concatenated in the pass's order, as transformers' attention returns them."""
    import torch

    outputs = []
    for cache, start, length in ragged:
        end = start + length
        keys, values = cache.layers[module.layer_idx].update(key[:, :, start:end], value[:, :, start:end])
        mask = None
        if length > 1:
            held = keys.shape[-2] - length
            mask = torch.arange(held + length)[None, :] <= (held + torch.arange(length))[:, None]
            mask = mask[None, None]
        out, _ = grouped_sdpa(module, query[:, :, start:end], keys, values, mask, **kwargs)
        outputs.append(out)
    return torch.cat(outputs, dim=1), None


def register_attention(transformers: Any) -> None:
    """Make ``grouped_sdpa`` loadable as ``attn_implementation=ATTENTION``, with the masks
    transformers makes for its own sdpa (a name without a mask function gets no mask at all)."""
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS

    transformers.AttentionInterface.register(ATTENTION, grouped_sdpa)
    transformers.AttentionMaskInterface.register(ATTENTION, ALL_MASK_ATTENTION_FUNCTIONS["sdpa"])


def growing_cache(transformers: Any, config: Any) -> Any:
    """A ``DynamicCache`` whose layers keep their keys and values in buffers with room to grow
    (``GrowingLayer``), where transformers' own layer concatenates the whole cache with the new
    tokens on every pass: for the 0.5B at 2k tokens, 48 MB copied per generated token."""
    base = transformers.cache_utils.DynamicLayer

    class GrowingLayer(base):  # type: ignore[misc, valid-type]
        """Keys and values as views of a buffer that doubles when full (amortised one copy)."""

        def update(self, key_states: Any, value_states: Any, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
            import torch

            if not self.is_initialized:
                self.lazy_initialization(key_states, value_states)
                self.buffers = None
            held = self.get_seq_length()
            needed = held + key_states.shape[-2]
            if self.buffers is None or needed > self.buffers[0].shape[-2]:
                room = max(needed, 2 * held, 256)
                grown = []
                layer: Any = self  # its keys and values are the base layer's, set by lazy_initialization
                held_tensors = (layer.keys, layer.values)
                for old, new in zip(held_tensors, (key_states, value_states), strict=True):
                    buffer = torch.empty(
                        *new.shape[:-2], room, new.shape[-1], dtype=new.dtype, device=new.device
                    )
                    if held:
                        buffer[..., :held, :] = old
                    grown.append(buffer)
                self.buffers = tuple(grown)
            keys, values = self.buffers
            keys[..., held:needed, :] = key_states
            values[..., held:needed, :] = value_states
            self.keys, self.values = keys[..., :needed, :], values[..., :needed, :]
            return self.keys, self.values

        def reset(self) -> None:
            self.buffers = None
            super().reset()

    cache = transformers.DynamicCache(config=config)
    cache.layers = [GrowingLayer() if type(layer) is base else layer for layer in cache.layers]
    return cache


def _to_int8(model: Any, torch: Any) -> None:
    """Quantise every linear layer to int8 (dynamic, as ``torch.ao.quantization.quantize_dynamic``
    does), one layer at a time from bfloat16, then the rest of the model to float32: at most one
    layer is ever in float32 beside the others, where converting the whole model first held a
    float32 copy of it (the 1.5B peaked at 10.9 GB)."""
    from torch.ao.nn.quantized.dynamic import Linear as DynamicLinear
    from torch.ao.quantization import default_dynamic_qconfig

    with warnings.catch_warnings():  # torch 2.13 marks its quantised tensors deprecated (still supported)
        warnings.simplefilter("ignore")
        for parent in list(model.modules()):
            for name, child in list(parent.named_children()):
                if type(child) is torch.nn.Linear:
                    layer = torch.nn.Linear(
                        child.in_features, child.out_features, bias=child.bias is not None
                    )
                    layer.weight = torch.nn.Parameter(child.weight.detach().float(), requires_grad=False)
                    if child.bias is not None:
                        layer.bias = torch.nn.Parameter(child.bias.detach().float(), requires_grad=False)
                    layer.qconfig = default_dynamic_qconfig
                    setattr(parent, name, DynamicLinear.from_float(layer))
    model.float()


class TorchEngine:
    """A packaged model on transformers + the CPU torch (see the module docstring)."""

    name = "transformers"
    verifies_drafts = True

    def __init__(
        self,
        packaged: PackagedModel,
        gguf: Path,
        info: GGUFInfo,
        settings: Settings,
        *,
        window: int,
        slots: int,
    ) -> None:
        torch, transformers = _import_torch()
        self.mode = settings.local_torch_dtype
        directory = weights_dir(packaged, settings)
        cached = _manifest_ok(directory, packaged)
        # Peak while loading: bfloat16 weights plus their int8 copies as they are made (bfloat16
        # alone otherwise), or while dequantising transformers' own float32 pass; then the KV
        # caches (float32 under int8, bfloat16 otherwise).
        element = 4 if self.mode == "int8" else 2
        peak = info.parameters * (4 if not cached else 3 if self.mode == "int8" else 2)
        check_memory(
            f"local:{packaged.name} on transformers",
            peak + slots * window * kv_bytes_per_token(info, element),
        )
        torch.set_num_threads(threads(settings))
        register_attention(transformers)
        if not cached:
            _dequantise(packaged, gguf, directory)
        try:
            # bfloat16 on load in either mode: int8 converts one layer at a time (``_to_int8``).
            model = transformers.AutoModelForCausalLM.from_pretrained(
                str(directory), dtype=torch.bfloat16, attn_implementation=ATTENTION
            )
            self.tokenizer = load_tokenizer(packaged, gguf, settings)
        except (OSError, ValueError, RuntimeError) as exc:
            raise RunError(f"transformers cannot load the weights cache {directory}: {exc}") from exc
        model.eval()
        if self.mode == "int8":
            _to_int8(model, torch)
        self._start(model, self.tokenizer, slots)

    def _start(self, model: Any, tokenizer: Any, slots: int) -> None:
        _, transformers = _import_torch()
        self.model = model
        self.tokenizer = tokenizer
        self.vocab_size = int(model.config.vocab_size)
        self._transformers = transformers
        self.caches = [growing_cache(transformers, model.config) for _ in range(slots)]
        # transformers 5.24 renamed forward's ``past_key_values`` to ``cache`` (the old name warns
        # and goes in 5.40); the range in pyproject.toml admits both, so ask the signature.
        self.cache_arg = (
            "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
        )
        self.decoder = Decoder(self, slots)

    @classmethod
    def from_model(cls, model: Any, tokenizer: Any, slots: int = CACHE_SLOTS) -> TorchEngine:
        """An engine over a model already built (loaded with ``attn_implementation=ATTENTION``
        after ``register_attention``): what tests run on a small random-weights Qwen2."""
        engine = cls.__new__(cls)
        engine.mode = "given"
        engine._start(model, tokenizer, slots)
        return engine

    def add_slot(self) -> int:
        self.caches.append(growing_cache(self._transformers, self.model.config))
        return len(self.caches) - 1

    def copy_prefix(self, source: int, target: int, length: int) -> bool:
        """Slot ``target`` holds slot ``source``'s first ``length`` tokens: their keys and
        values copied (megabytes), where evaluating them again takes seconds. Under inference
        mode, as the passes that made the target's buffers: torch refuses to write into those
        tensors outside it (inference mode is per thread, and any thread may copy)."""
        import torch

        origin, cache = self.caches[source], self.caches[target]
        held = cache.get_seq_length()
        if held:
            cache.crop(-held)
        with torch.inference_mode():
            for theirs, ours in zip(origin.layers, cache.layers, strict=True):
                ours.update(theirs.keys[..., :length, :], theirs.values[..., :length, :])
        return True

    def tokenize(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def evaluate(self, slot: int, keep: int, tokens: Sequence[int], rows: int = 1) -> Any:
        import torch

        cache = self.caches[slot]
        held = cache.get_seq_length()
        if held > keep:
            cache.crop(keep - held)
        with torch.inference_mode():
            out = self.model(
                input_ids=torch.tensor([list(tokens)]),
                use_cache=True,
                **{self.cache_arg: cache},
                logits_to_keep=rows,
            )
        return out.logits[0, -1].float() if rows == 1 else out.logits[0, -rows:].float()

    def evaluate_batch(self, passes: Sequence[Pass]) -> list[Any]:
        """The passes of several sequences as one ragged forward pass (the module docstring):
        the model's own layers, embeddings and head, its attention per sequence. What each
        sequence gets equals ``evaluate`` in exact arithmetic; under int8 the activations of a
        pass share one quantisation scale, so a near tie can go the other way, as it can
        between a cached prefix and none."""
        import torch

        ids: list[int] = []
        positions: list[int] = []
        ragged = []
        picked: list[int] = []
        for one in passes:
            cache = self.caches[one.slot]
            held = cache.get_seq_length()
            if held > one.keep:
                cache.crop(one.keep - held)
            start, length = len(ids), len(one.tokens)
            ids.extend(one.tokens)
            positions.extend(range(one.keep, one.keep + length))
            ragged.append((cache, start, length))
            picked.extend(range(start + length - one.rows, start + length))
        inner = self.model.model
        with torch.inference_mode():
            hidden = inner.embed_tokens(torch.tensor([ids]))
            position_ids = torch.tensor([positions])
            rotary = inner.rotary_emb(hidden, position_ids)
            for layer in inner.layers[: self.model.config.num_hidden_layers]:
                hidden = layer(
                    hidden,
                    attention_mask=None,
                    position_ids=position_ids,
                    position_embeddings=rotary,
                    ragged=ragged,
                )
            logits = self.model.lm_head(inner.norm(hidden[:, picked]))[0].float()
        out, at = [], 0
        for one in passes:
            rows = logits[at : at + one.rows]
            out.append(rows[0] if one.rows == 1 else rows)
            at += one.rows
        return out
