"""Fake Ollama and OpenAI-compatible servers over real HTTP on 127.0.0.1, driven by a
``ScriptedProvider`` or ``FunctionProvider`` (shipped for every test suite that needs a model)::

    provider = ScriptedProvider("qwen3:4b")
    provider.enqueue('{"sql": "SELECT * FROM t WHERE a = 1', finish_reason="length")  # truncated JSON
    provider.enqueue(' AND b = 2"}')                                                  # its continuation
    provider.enqueue(error=429, retry_after=1)                                        # 429 + Retry-After
    provider.enqueue("late", delay_s=5)                                               # slower than a timeout
    provider.enqueue(error=ConnectionResetError())                                    # connection dropped
    with serve_fake_ollama(provider) as url:                                          # http://127.0.0.1:PORT
        monkeypatch.setenv("OLLAMA_HOST", url)
        ...

Each request is handed to ``provider.complete`` (its body is appended to
``provider.raw_requests``, its ``Authorization`` header or ``None`` to
``provider.raw_authorizations``); an HTTP status error becomes that status (with Retry-After), any
other exception from the provider drops the connection without an answer. The Ollama fake
also serves ``/api/show`` (the provider's context window and thinking capability),
``/api/tags``, ``/api/ps`` (models called so far count as loaded) and ``/api/version``; the
OpenAI fake serves ``/v1/models`` and checks the bearer key when given one. Standard library
``ThreadingHTTPServer`` with keep-alive, so clients pool connections as against a real server.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from agentlake.errors import UserError
from agentlake.llm.provider import Completion, GenerateOptions, Message, ProviderHTTPError

Route = Callable[["_Handler", dict[str, Any]], tuple[int, Any, dict[str, str]]]


class _Drop(Exception):
    """Close the connection without answering (a scripted connection failure)."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, like real model servers
    # Headers and body are separate writes; with Nagle on, the client's delayed ACK adds ~40 ms
    # to every keep-alive response.
    disable_nagle_algorithm = True
    server: _FakeHTTPServer

    def log_message(self, format: str, *args: Any) -> None:  # quiet test output
        return

    def _dispatch(self, method: str) -> None:
        path = self.path.split("?", 1)[0].rstrip("/") or "/"
        route = self.server.routes.get((method, path))
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            self._send(400, {"error": "request body is not JSON"})
            return
        if route is None:
            self._send(404, {"error": f"no route {method} {path}"})
            return
        try:
            status, payload, headers = route(self, body if isinstance(body, dict) else {})
        except _Drop:
            self.close_connection = True
            try:
                self.connection.shutdown(2)
            except OSError:
                pass
            return
        self._send(status, payload, headers)

    def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header(
                "Content-Type", "application/json" if not isinstance(payload, bytes) else "text/plain"
            )
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except OSError:  # the client gave up (a timeout test): nothing to answer
            self.close_connection = True

    def do_GET(self) -> None:  # http.server's naming
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")


class _FakeHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, routes: dict[tuple[str, str], Route]) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.routes = routes


@contextmanager
def _serve(routes: dict[tuple[str, str], Route]) -> Iterator[int]:
    server = _FakeHTTPServer(routes)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def _complete(
    provider: Any, handler: _Handler, body: dict, messages: list[Message], options: GenerateOptions
) -> Completion:
    recorded = getattr(provider, "raw_requests", None)
    if isinstance(recorded, list):
        recorded.append(body)
    authorizations = getattr(provider, "raw_authorizations", None)
    if isinstance(authorizations, list):
        authorizations.append(handler.headers.get("Authorization"))
    try:
        return provider.complete(messages, options)
    except ProviderHTTPError:
        raise
    except Exception as exc:
        raise _Drop() from exc


def _error_headers(exc: ProviderHTTPError) -> dict[str, str]:
    return {"Retry-After": f"{exc.retry_after:g}"} if exc.retry_after is not None else {}


def _messages(body: dict) -> list[Message]:
    raw = body.get("messages")
    if not isinstance(raw, list):
        raise ValueError("'messages' must be a list")
    return [Message(role=m["role"], content=m.get("content") or "") for m in raw]


def _model_names(provider: Any, models: Sequence[str] | None) -> list[str]:
    return list(models) if models else [provider.model]


def _require_provider(provider: Any) -> None:
    """Raise ``UserError`` unless ``provider`` can drive a fake server."""
    if not hasattr(provider, "complete") or not hasattr(provider, "capabilities"):
        raise UserError(
            f"a fake server needs a ScriptedProvider or FunctionProvider, got {type(provider).__name__}"
        )


@contextmanager
def serve_fake_ollama(
    provider: Any, *, models: Sequence[str] | None = None, api_key: str | None = None
) -> Iterator[str]:
    """Serve ``provider`` as an Ollama server on 127.0.0.1:<free port>; yields its base URL.

    ``models``: the model names it has (others answer 404 "not found"); default: any name is
    served and ``provider.model`` is the one listed. ``api_key``: every ``/api/`` route
    requires ``Authorization: Bearer <api_key>`` (401 otherwise), as a hosted Ollama does.
    """
    _require_provider(provider)
    loaded: list[str] = []

    def known(name: str) -> bool:
        return not models or name in models

    def chat(handler: _Handler, body: dict) -> tuple[int, Any, dict[str, str]]:
        name = str(body.get("model", ""))
        if not known(name):
            return 404, {"error": f"model '{name}' not found"}, {}
        try:
            model_options = body.get("options") or {}
            fmt = body.get("format")
            num_predict = int(model_options.get("num_predict") or 1024)  # -1/-2 mean "unbounded" in Ollama
            options = GenerateOptions(
                max_tokens=num_predict if num_predict > 0 else 1024,
                temperature=model_options.get("temperature"),
                stop=model_options.get("stop"),
                think=body.get("think"),
                schema_=fmt if isinstance(fmt, dict) else ({} if fmt == "json" else None),
            )
            messages = _messages(body)
        except (ValueError, KeyError, TypeError) as exc:
            return 400, {"error": f"bad request: {exc}"}, {}
        started = time.perf_counter_ns()
        try:
            completion = _complete(provider, handler, body, messages, options)
        except ProviderHTTPError as exc:
            return exc.status, {"error": exc.body or exc.message}, _error_headers(exc)
        if name not in loaded:
            loaded.append(name)
        message: dict[str, Any] = {"role": "assistant", "content": completion.text}
        if completion.thinking:
            message["thinking"] = completion.thinking
        return (
            200,
            {
                "model": name,
                "created_at": datetime.now(UTC).isoformat(),
                "message": message,
                "done": True,
                "done_reason": completion.finish_reason,
                "total_duration": time.perf_counter_ns() - started,
                "prompt_eval_count": completion.usage.input_tokens,
                "eval_count": completion.usage.output_tokens,
            },
            {},
        )

    def show(handler: _Handler, body: dict) -> tuple[int, Any, dict[str, str]]:
        name = str(body.get("model") or body.get("name") or "")
        if not known(name):
            return 404, {"error": f"model '{name}' not found"}, {}
        capabilities = provider.capabilities
        words = ["completion"] + (["thinking"] if capabilities.supports_thinking else [])
        return (
            200,
            {
                "details": {"family": "fake", "parameter_size": "0B", "quantization_level": "none"},
                "model_info": {
                    "general.architecture": "fake",
                    "fake.context_length": capabilities.context_window,
                },
                "capabilities": words,
            },
            {},
        )

    def tags(handler: _Handler, body: dict) -> tuple[int, Any, dict[str, str]]:
        return (
            200,
            {"models": [{"name": n, "model": n, "size": 0} for n in _model_names(provider, models)]},
            {},
        )

    def ps(handler: _Handler, body: dict) -> tuple[int, Any, dict[str, str]]:
        return 200, {"models": [{"name": n, "model": n, "size": 0} for n in loaded]}, {}

    def version(handler: _Handler, body: dict) -> tuple[int, Any, dict[str, str]]:
        return 200, {"version": "0.0.0-agentlake-fake"}, {}

    def root(handler: _Handler, body: dict) -> tuple[int, Any, dict[str, str]]:
        return 200, b"Ollama is running", {}

    routes: dict[tuple[str, str], Route] = {
        ("POST", "/api/chat"): chat,
        ("POST", "/api/show"): show,
        ("GET", "/api/tags"): tags,
        ("GET", "/api/ps"): ps,
        ("GET", "/api/version"): version,
        ("GET", "/"): root,
    }
    if api_key is not None:

        def guarded(route: Route) -> Route:
            def check(handler: _Handler, body: dict) -> tuple[int, Any, dict[str, str]]:
                if handler.headers.get("Authorization") != f"Bearer {api_key}":
                    return 401, {"error": "unauthorized"}, {}
                return route(handler, body)

            return check

        routes = {
            key: guarded(route) if key[1].startswith("/api/") else route for key, route in routes.items()
        }
    with _serve(routes) as port:
        yield f"http://127.0.0.1:{port}"


@contextmanager
def serve_fake_openai(
    provider: Any,
    *,
    api_key: str | None = None,
    models: Sequence[str] | None = None,
    cards: Mapping[str, Mapping[str, Any]] | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> Iterator[str]:
    """Serve ``provider`` as an OpenAI-compatible server on 127.0.0.1:<free port>; yields its
    base URL, ending in ``/v1``.

    ``api_key``: require ``Authorization: Bearer <api_key>`` (401 otherwise). ``models``: the
    model ids it has (others answer 404); default: any id is served. ``cards``: fields a
    model's ``/v1/models`` entry carries beside its id (vLLM's ``max_model_len``, llama.cpp's
    ``meta``, OpenRouter's ``supported_parameters``...). ``metadata``: more GET routes, path to
    the JSON they answer (llama.cpp's ``/props``, LM Studio's ``/api/v0/models/ID``).
    """
    _require_provider(provider)
    counter = iter(range(1, 1 << 62))

    def authorised(handler: _Handler) -> bool:
        return api_key is None or handler.headers.get("Authorization") == f"Bearer {api_key}"

    unauthorised: tuple[int, Any, dict[str, str]] = (
        401,
        {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}},
        {},
    )

    def chat(handler: _Handler, body: dict) -> tuple[int, Any, dict[str, str]]:
        if not authorised(handler):
            return unauthorised
        name = str(body.get("model", ""))
        if models and name not in models:
            return (
                404,
                {"error": {"message": f"The model `{name}` does not exist", "type": "invalid_request_error"}},
                {},
            )
        try:
            response_format = body.get("response_format") or {}
            schema = None
            if response_format.get("type") == "json_schema":
                schema = (response_format.get("json_schema") or {}).get("schema") or {}
            elif response_format.get("type") == "json_object":
                schema = {}
            kwargs = body.get("chat_template_kwargs") or {}
            stop = body.get("stop")
            options = GenerateOptions(
                max_tokens=int(body.get("max_completion_tokens") or body.get("max_tokens") or 1024),
                temperature=body.get("temperature"),
                stop=[stop] if isinstance(stop, str) else stop,
                think=kwargs.get("enable_thinking"),
                schema_=schema,
            )
            messages = _messages(body)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            return 400, {"error": {"message": f"bad request: {exc}", "type": "invalid_request_error"}}, {}
        try:
            completion = _complete(provider, handler, body, messages, options)
        except ProviderHTTPError as exc:
            return (
                exc.status,
                {"error": {"message": exc.body or exc.message, "type": "server_error"}},
                _error_headers(exc),
            )
        message: dict[str, Any] = {"role": "assistant", "content": completion.text}
        if completion.thinking:
            message["reasoning_content"] = completion.thinking
        usage = completion.usage
        return (
            200,
            {
                "id": f"chatcmpl-fake-{next(counter)}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": name,
                "choices": [{"index": 0, "message": message, "finish_reason": completion.finish_reason}],
                "usage": {
                    "prompt_tokens": usage.input_tokens,
                    "completion_tokens": usage.output_tokens,
                    "total_tokens": usage.input_tokens + usage.output_tokens,
                    "completion_tokens_details": {"reasoning_tokens": usage.thinking_tokens},
                },
            },
            {},
        )

    def list_models(handler: _Handler, body: dict) -> tuple[int, Any, dict[str, str]]:
        if not authorised(handler):
            return unauthorised
        data = [
            {
                "id": n,
                "object": "model",
                "created": 0,
                "owned_by": "agentlake-fake",
                **(cards or {}).get(n, {}),
            }
            for n in _model_names(provider, models)
        ]
        return 200, {"object": "list", "data": data}, {}

    def answer(document: Any) -> Route:
        def route(handler: _Handler, body: dict) -> tuple[int, Any, dict[str, str]]:
            return (200, document, {}) if authorised(handler) else unauthorised

        return route

    routes: dict[tuple[str, str], Route] = {
        ("POST", "/v1/chat/completions"): chat,
        ("GET", "/v1/models"): list_models,
        **{("GET", path.rstrip("/")): answer(document) for path, document in (metadata or {}).items()},
    }
    with _serve(routes) as port:
        yield f"http://127.0.0.1:{port}/v1"
