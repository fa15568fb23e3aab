"""Orders in words at the gateway's doors (issue 35): ``POST /fill`` and the MCP ``fill`` tool of a
real `agentlake serve` process, whose reading model is a fake Ollama server on 127.0.0.1 (the
reader's replies decided by a function of the order it is sent). Each door answers a readable
order with the reading, and an order that lacks what it needs with the question back."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from gateway_support import running_server

from agentlake.llm import FunctionProvider
from agentlake.llm.fakeserver import serve_fake_ollama
from agentlake.workforce.order_words import OrderParts

pytestmark = pytest.mark.slow

WRITE = {"X-API-Key": "words-write-key-1"}
KEYS = "words-write-key-1:write"
NOW = "2026-04-22T10:00:00"
WORDS = "need two welders near Cleveland OH tomorrow morning, reliable folks with structural experience"
NO_COUNT = "welders near Cleveland OH tomorrow morning"
UNKNOWN_ROLE = "2 crane operators near Cleveland OH tomorrow"
# What the reader writes down for each order (a good reader; the domain checks it all the same).
READINGS = {
    WORDS: OrderParts(
        role="welders", count=2, city="Cleveland", state="OH", day="tomorrow", part_of_day="morning",
        wishes=["reliable folks", "structural experience"],
    ),
    NO_COUNT: OrderParts(role="welders", city="Cleveland", state="OH", day="tomorrow", part_of_day="morning"),
    UNKNOWN_ROLE: OrderParts(role="crane operators", count=2, city="Cleveland", state="OH", day="tomorrow"),
}  # fmt: skip


def reads(messages: list[Any], options: Any) -> str:
    order = next(text for text in READINGS if text in messages[-1].content)
    return READINGS[order].model_dump_json()


@pytest.fixture(scope="module")
def server(lake_template: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`agentlake serve` over a copy of the gateway lake, reading orders with the fake reader."""
    work = tmp_path_factory.mktemp("order-words")
    data_dir = work / "data"
    shutil.copytree(lake_template, data_dir)
    with serve_fake_ollama(FunctionProvider(reads, "reader")) as ollama:
        with running_server(
            data_dir,
            work / "serve.log",
            AGENTLAKE_API_KEYS=KEYS,
            OLLAMA_HOST=ollama,
            AGENTLAKE_EXECUTOR_MODEL="ollama:reader",
        ) as (url, _):
            yield url


def post_fill(server: str, order: str) -> httpx.Response:
    return httpx.post(f"{server}/fill", json={"order": order, "now": NOW}, headers=WRITE, timeout=120)


# --- POST /fill ------------------------------------------------------------------------------------


def test_post_fill_reads_words_into_the_order(server: str) -> None:
    order = post_fill(server, WORDS).json()["order"]
    assert (order["count"], order["role"], order["city"], order["state"]) == (2, "Welder", "Cleveland", "OH")


def test_post_fill_counts_tomorrow_from_the_given_now(server: str) -> None:
    assert post_fill(server, WORDS).json()["order"]["shift_start"] == "2026-04-23T08:00:00"


def test_post_fill_keeps_the_wishes(server: str) -> None:
    assert post_fill(server, WORDS).json()["order"]["wishes"] == ["reliable folks", "structural experience"]


def test_post_fill_says_who_read_the_order(server: str) -> None:
    assert post_fill(server, WORDS).json()["reading"]["source"] == "ollama:reader"


def test_post_fill_without_a_count_is_a_400(server: str) -> None:
    assert post_fill(server, NO_COUNT).status_code == 400


def test_post_fill_without_a_count_asks_how_many(server: str) -> None:
    detail = post_fill(server, NO_COUNT).json()["detail"]
    assert detail.startswith("How many workers? The order names no number.")


def test_post_fill_without_a_count_names_what_is_missing(server: str) -> None:
    reading = post_fill(server, NO_COUNT).json()["error"]["details"]["reading"]
    assert reading["missing"] == ["count"]


def test_post_fill_offers_the_nearest_roles(server: str) -> None:
    reading = post_fill(server, UNKNOWN_ROLE).json()["error"]["details"]["reading"]
    assert reading["roles_offered"] == ["CNC Machinist", "Machine Operator", "Industrial Painter"]


# --- the MCP fill tool, through the official client over streamable HTTP ----------------------------


def call_fill(server: str, order: str) -> Any:
    async def run() -> Any:
        import httpx2
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client

        async with httpx2.AsyncClient(headers=WRITE, timeout=120) as http:
            async with Client(streamable_http_client(f"{server}/mcp", http_client=http)) as client:
                return await client.call_tool("fill", {"order": order, "now": NOW})

    return anyio.run(run)


def test_the_mcp_tool_reads_words_into_the_order(server: str) -> None:
    result = call_fill(server, WORDS)
    assert (result.is_error, result.structured_content["order"]["role"]) == (False, "Welder")


def test_the_mcp_tool_fills_as_post_fill_does(server: str) -> None:
    rest = post_fill(server, WORDS).json()
    assert call_fill(server, WORDS).structured_content["order"] == rest["order"]


def test_the_mcp_tool_without_a_count_is_an_error(server: str) -> None:
    assert call_fill(server, NO_COUNT).is_error


def test_the_mcp_tool_without_a_count_asks_how_many(server: str) -> None:
    text = call_fill(server, NO_COUNT).content[0].text
    assert text.startswith("How many workers? The order names no number.")
