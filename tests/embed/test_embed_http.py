"""The HTTP embedders against a real model server on 127.0.0.1 (a stand-in for Ollama and an
OpenAI-compatible server that answers deterministic vectors): wire formats, auth, retries and
the errors a user sees."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from agentlake.embed import get_embedder
from agentlake.embed.http import OllamaEmbedder, OpenAIEmbedder
from agentlake.errors import RunError, UnavailableError, UserError
from agentlake.settings import load_settings

DIM = 16


def fake_vector(text: str) -> list[float]:
    """Deterministic, unnormalised: the client must normalise."""
    digest = hashlib.sha256(text.encode()).digest()
    return [float(b) - 100.0 for b in digest[:DIM]]


class ModelServer:
    """Records requests; ``fail_next`` statuses are answered before serving normally."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict, dict]] = []
        self.fail_next: list[int] = []
        self.known_models = {"nomic-embed-text", "text-embedding-3-small"}
        self.api_key: str | None = None
        self.drop_one = False


@pytest.fixture
def server() -> Iterator[tuple[ModelServer, str]]:
    state = ModelServer()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def _reply(self, status: int, payload: object) -> None:
            body = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:  # http.server's naming
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state.requests.append((self.path, body, dict(self.headers)))
            if state.fail_next:
                self._reply(state.fail_next.pop(0), {"error": "busy"})
                return
            texts = body.get("input", [])
            vectors = [fake_vector(text) for text in texts]
            if state.drop_one:
                vectors = vectors[:-1]
            if self.path == "/api/embed":
                if body.get("model") not in state.known_models:
                    self._reply(
                        404, {"error": f"model '{body.get('model')}' not found, try pulling it first"}
                    )
                    return
                self._reply(200, {"model": body["model"], "embeddings": vectors})
            elif self.path == "/v1/embeddings":
                if state.api_key and self.headers.get("Authorization") != f"Bearer {state.api_key}":
                    self._reply(401, {"error": {"message": "invalid api key"}})
                    return
                data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
                self._reply(200, {"object": "list", "data": list(reversed(data)), "model": body["model"]})
            else:
                self._reply(404, {"error": "no such route"})

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield state, f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def expected(texts: list[str]) -> np.ndarray:
    raw = np.array([fake_vector(t) for t in texts], dtype=np.float32)
    return raw / np.linalg.norm(raw, axis=1, keepdims=True)


def test_ollama_embedder_from_settings(
    server: tuple[ModelServer, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    state, url = server
    monkeypatch.setenv("OLLAMA_HOST", url)
    embedder = get_embedder("ollama:nomic-embed-text")
    assert embedder.name == "ollama:nomic-embed-text"
    texts = ["welder", "nurse", "forklift operator"]
    vectors = embedder.embed(texts)
    assert vectors.dtype == np.float32
    assert vectors.shape == (3, DIM)
    np.testing.assert_allclose(vectors, expected(texts), rtol=1e-6)
    assert embedder.dimension == DIM
    path, body, _ = state.requests[0]
    assert path == "/api/embed"
    assert body["model"] == "nomic-embed-text"
    assert body["input"] == texts


def test_ollama_tag_with_colon_and_unknown_model(
    server: tuple[ModelServer, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    state, url = server
    monkeypatch.setenv("OLLAMA_HOST", url)
    state.known_models.add("qwen3-embedding:0.6b")
    assert get_embedder("ollama:qwen3-embedding:0.6b").embed(["x"]).shape == (1, DIM)
    with pytest.raises(UserError, match="ollama pull mxbai"):
        get_embedder("ollama:mxbai").embed(["x"])


@pytest.mark.parametrize("form", ["{host}:{port}", "http://{host}:{port}/", "0.0.0.0:{port}"])
def test_server_addresses_in_the_forms_ollama_host_takes(
    server: tuple[ModelServer, str], monkeypatch: pytest.MonkeyPatch, form: str
) -> None:
    state, url = server
    host, port = url.removeprefix("http://").split(":")
    monkeypatch.setenv("OLLAMA_HOST", form.format(host=host, port=port))
    monkeypatch.setenv("OPENAI_BASE_URL", form.format(host=host, port=port).rstrip("/") + "/v1")
    assert get_embedder("ollama:nomic-embed-text").embed(["a"]).shape == (1, DIM)
    assert get_embedder("openai:text-embedding-3-small").embed(["a"]).shape == (1, DIM)
    assert [path for path, _, _ in state.requests] == ["/api/embed", "/v1/embeddings"]


def test_openai_embedder_orders_by_index_and_sends_key(
    server: tuple[ModelServer, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    state, url = server
    state.api_key = "sk-test-0123456789abcdef"
    monkeypatch.setenv("OPENAI_BASE_URL", f"{url}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", state.api_key)
    embedder = get_embedder("openai:text-embedding-3-small")
    texts = [f"text {i}" for i in range(5)]
    np.testing.assert_allclose(embedder.embed(texts), expected(texts), rtol=1e-6)
    assert state.requests[0][0] == "/v1/embeddings"
    assert state.requests[0][1]["encoding_format"] == "float"


def test_openai_wrong_key_is_a_user_error(server: tuple[ModelServer, str]) -> None:
    state, url = server
    state.api_key = "right-key-0123456789"
    embedder = OpenAIEmbedder("m", base_url=f"{url}/v1", api_key="wrong-key", max_retries=0)
    with pytest.raises(UserError, match="credentials"):
        embedder.embed(["x"])


def test_openai_needs_a_server_or_key() -> None:
    with pytest.raises(UserError, match="OPENAI_BASE_URL"):
        get_embedder("openai:text-embedding-3-small", load_settings())


def test_retries_5xx_then_succeeds(server: tuple[ModelServer, str]) -> None:
    state, url = server
    state.fail_next = [503, 500]
    embedder = OllamaEmbedder("nomic-embed-text", host=url, max_retries=2)
    assert embedder.embed(["a", "b"]).shape == (2, DIM)
    assert len(state.requests) == 3


def test_gives_up_after_retries_with_the_status(server: tuple[ModelServer, str]) -> None:
    state, url = server
    state.fail_next = [503, 503]
    embedder = OllamaEmbedder("nomic-embed-text", host=url, max_retries=1)
    with pytest.raises(RunError, match="503"):
        embedder.embed(["a"])


def test_wrong_vector_count_is_a_run_error(server: tuple[ModelServer, str]) -> None:
    state, url = server
    state.drop_one = True
    with pytest.raises(RunError, match="1 vectors for 2 texts"):
        OllamaEmbedder("nomic-embed-text", host=url, max_retries=0).embed(["a", "b"])


def test_large_inputs_are_split_into_requests(server: tuple[ModelServer, str]) -> None:
    state, url = server
    texts = [f"t{i}" for i in range(600)]
    vectors = OllamaEmbedder("nomic-embed-text", host=url).embed(texts)
    assert vectors.shape == (600, DIM)
    assert [len(body["input"]) for _, body, _ in state.requests] == [256, 256, 88]
    np.testing.assert_allclose(vectors[-3:], expected(texts[-3:]), rtol=1e-6)


def test_unreachable_server_is_unavailable() -> None:
    embedder = OllamaEmbedder("nomic-embed-text", host="http://127.0.0.1:9", max_retries=0, timeout_s=2)
    with pytest.raises(UnavailableError, match="cannot reach Ollama"):
        embedder.embed(["x"])


def test_a_backend_missing_its_wire_format_fails_when_built_not_when_called() -> None:
    from agentlake.embed.http import _HttpEmbedder, ollama_request

    class HalfDone(_HttpEmbedder):  # a third party's backend that forgot to read replies
        def _body(self, texts):  # type: ignore[no-untyped-def]
            return ollama_request("m", texts)

    with pytest.raises(TypeError, match="_vectors"):
        HalfDone(timeout_s=1, max_retries=0)
    for backend in (
        OllamaEmbedder("nomic-embed-text", host="http://127.0.0.1:9"),
        OpenAIEmbedder("text-embedding-3-small", base_url="http://127.0.0.1:9/v1"),
    ):
        backend.close()
