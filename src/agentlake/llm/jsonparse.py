"""Tolerant JSON out of model replies, and telling a truncated reply from a broken one.

:func:`parse_json_tolerant` strips what models wrap around JSON (``<think>`` blocks, code
fences, prose before and after) and fixes only the cheap, unambiguous mistakes (trailing
commas, comments, Python's ``True``/``False``/``None``, single quotes, bare keys, raw newlines
inside strings, a stray ``)`` from a function-call habit: never valid outside a string). It never completes a truncated reply: that raises :class:`JSONParseError`
with ``incomplete=True`` so the caller can continue the generation instead. Whatever the input,
it raises nothing but :class:`JSONParseError`.

:func:`scan_json` classifies a reply as complete, incomplete (a cut-off prefix), invalid or
absent, which is what ``generate_continuable`` needs. Repairing a truncated reply (the
json-repair library) is ``generate_continuable``'s flagged last resort, not this module's job.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

from agentlake.errors import RunError

# Reasoning models think before they answer: only blocks that lead the text are thinking.
_LEADING_THINK = re.compile(r"\A\s*(?:<think>.*?</think>\s*)+", re.DOTALL | re.IGNORECASE)
_OPEN_THINK = re.compile(r"\A\s*<think>", re.IGNORECASE)
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\n?(.*?)(?:```|\Z)", re.DOTALL)
_OPENER = re.compile(r"[{\[]")
_WORD_START = re.compile(r"[A-Za-z_$]")
_WORD = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_PY_LITERALS = {"True": "true", "False": "false", "None": "null"}
_JSON_WORDS = {"true", "false", "null", "NaN", "Infinity"}
MAX_CANDIDATES = 8


class JSONParseError(RunError):
    """No JSON could be read from a reply. ``incomplete``: the reply is a cut-off prefix of
    JSON (continue the generation); ``text`` is the input (capped)."""

    def __init__(self, message: str, *, text: str = "", incomplete: bool = False) -> None:
        super().__init__(message)
        self.text = text[:2000]
        self.incomplete = incomplete


@dataclass(frozen=True)
class JsonScan:
    """Whether the JSON of a reply is whole (``value`` holds it when complete)."""

    state: Literal["complete", "incomplete", "invalid", "absent"]
    value: Any = None


def strip_thinking(text: str) -> str:
    """Remove the ``<think>...</think>`` blocks that lead ``text`` (and an unclosed one, which
    runs to the end: the model was cut off while thinking).

    Only leading blocks: the same tag further on is part of the answer (a JSON string may hold
    ``"<think>"``), and stripping it there would corrupt the answer.
    """
    if not _OPEN_THINK.match(text):
        return text
    text = _LEADING_THINK.sub("", text, count=1)
    return "" if _OPEN_THINK.match(text) else text


def _balanced_end(text: str, start: int) -> int:
    """Index just past the bracket closing ``text[start]``, or -1 if the text ends first."""
    depth = 0
    in_string: str | None = None
    escaped = False
    for index in range(start, len(text)):
        char = text[index]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == in_string:
                in_string = None
        elif char in "\"'":
            # A single quote inside prose-like JSON is usually an apostrophe; only treat it as a
            # string delimiter where a JSON value or key may start.
            if char == '"' or _single_quote_opens(text, index):
                in_string = char
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
            if depth == 0:
                return index + 1
    return -1


def _single_quote_opens(text: str, index: int) -> bool:
    before = text[:index].rstrip()
    return bool(before) and before[-1] in "{[,:"


def _spans(text: str) -> tuple[list[tuple[int, int]], bool]:
    """Top-level ``{...}``/``[...]`` spans, in order, and whether the text ends inside one.

    Only top-level: a balanced ``[1, 2]`` inside a cut-off ``{"items": [1, 2], ...`` must never
    pass for the reply's JSON.
    """
    spans: list[tuple[int, int]] = []
    position = 0
    while len(spans) < MAX_CANDIDATES:
        match = _OPENER.search(text, position)
        if match is None:
            return spans, False
        end = _balanced_end(text, match.start())
        if end == -1:
            return spans, True
        spans.append((match.start(), end))
        position = end
    return spans, False


def _fix_cheap(text: str) -> str:
    """One pass outside strings: drop comments, trailing commas and stray ``)``, quote bare
    keys, map Python literals, turn single-quoted strings into JSON strings."""
    out: list[str] = []
    index, length = 0, len(text)
    while index < length:
        char = text[index]
        if char == '"':
            end = index + 1
            while end < length and text[end] != '"':
                end += 2 if text[end] == "\\" else 1
            out.append(text[index : end + 1])
            index = end + 1
        elif char == "'" and _single_quote_opens(text, index):
            end = index + 1
            chunk: list[str] = []
            while end < length and text[end] != "'":
                if text[end] == "\\" and end + 1 < length:
                    chunk.append(text[end : end + 2] if text[end + 1] != "'" else "'")
                    end += 2
                    continue
                chunk.append('\\"' if text[end] == '"' else text[end])
                end += 1
            out.append('"' + "".join(chunk) + '"')
            index = end + 1
        elif char == "/" and text.startswith("//", index):
            newline = text.find("\n", index)
            index = length if newline == -1 else newline
        elif char == "/" and text.startswith("/*", index):
            close = text.find("*/", index + 2)
            index = length if close == -1 else close + 2
        elif char == ")":
            index += 1  # "...})": a closing parenthesis is never JSON outside a string
        elif char == ",":
            rest = index + 1
            while rest < length and text[rest] in " \t\r\n":
                rest += 1
            if rest < length and text[rest] in "}]":
                index += 1  # trailing comma
            else:
                out.append(char)
                index += 1
        elif _WORD_START.match(char) and (
            index == 0 or not (text[index - 1].isalnum() or text[index - 1] in "_$.")
        ):
            match = _WORD.match(text, index)
            word = match.group(0) if match else char
            after = index + len(word)
            rest = after
            while rest < length and text[rest] in " \t\r\n":
                rest += 1
            if rest < length and text[rest] == ":" and word not in _JSON_WORDS:
                out.append(json.dumps(word))
            else:
                out.append(_PY_LITERALS.get(word, word))
            index = after
        else:
            out.append(char)
            index += 1
    return "".join(out)


def _loads(text: str) -> Any:
    # strict=False accepts raw control characters (newlines, tabs) inside strings, a common and
    # unambiguous model mistake.
    return json.loads(text, strict=False)


def _try_parse(candidate: str) -> tuple[bool, Any, str]:
    try:
        return True, _loads(candidate), ""
    except (ValueError, RecursionError) as exc:
        first_error = str(exc)
    try:
        return True, _loads(_fix_cheap(candidate)), ""
    except (ValueError, RecursionError):
        return False, None, first_error


def _unwrap(text: str) -> str:
    return strip_thinking(text.lstrip("\ufeff")).strip()


def _parse_candidates(body: str) -> tuple[bool, Any, str, bool]:
    """Try the whole text, each fenced block, then each top-level balanced span, each with the
    cheap fixes as a fallback; the first that parses wins. Also says whether the text ends
    inside an unclosed span (a cut-off reply)."""
    candidates: list[str] = [body]
    for match in _FENCE.finditer(body):
        inner = match.group(2).strip()
        if inner:
            candidates.append(inner)
    spans, truncated = _spans(body)
    candidates.extend(body[start:end] for start, end in spans)
    first_error = ""
    seen: set[str] = set()
    for candidate in candidates:
        if candidate in seen:
            continue
        seen.add(candidate)
        ok, value, error = _try_parse(candidate)
        if ok:
            return True, value, "", truncated
        first_error = first_error or error
    return False, None, first_error, truncated


def parse_json_tolerant(text: str) -> Any:
    """The JSON value in a model reply.

    Tries, in order: the whole text; each fenced code block; each top-level balanced
    ``{...}``/``[...]`` span; each of those again after the cheap fixes. Raises
    :class:`JSONParseError` (``incomplete=True`` when the JSON is cut off) and nothing else.
    """
    if not isinstance(text, str):
        raise JSONParseError(f"expected the reply text as a string, got {type(text).__name__}")
    body = _unwrap(text)
    if not body:
        raise JSONParseError("the reply is empty: no JSON in it", text=text)
    ok, value, error, truncated = _parse_candidates(body)
    if ok:
        return value
    if truncated:
        raise JSONParseError(
            "the reply's JSON is cut off before its end (truncated)", text=text, incomplete=True
        )
    if _OPENER.search(body) is None:
        raise JSONParseError(f"no JSON object or array in the reply: {body[:120]!r}", text=text)
    raise JSONParseError(f"the reply's JSON is invalid: {error}", text=text)


def scan_json(text: str) -> JsonScan:
    """Classify the JSON in ``text`` (after thinking blocks, fences and leading prose).

    ``complete``: a JSON value parses (``value`` holds it); ``incomplete``: the text ends inside
    an unclosed ``{``/``[`` (a cut-off reply); ``invalid``: balanced but not parseable even
    after the cheap fixes; ``absent``: no JSON in it at all.
    """
    if not isinstance(text, str):
        return JsonScan("absent")
    body = _unwrap(text)
    if not body:
        return JsonScan("absent")
    ok, value, _, truncated = _parse_candidates(body)
    if ok:
        return JsonScan("complete", value)
    if truncated:
        return JsonScan("incomplete")
    if _OPENER.search(body) is None:
        return JsonScan("absent")
    return JsonScan("invalid")
