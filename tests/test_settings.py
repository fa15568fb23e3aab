from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

import agentlake
from agentlake.cli.main import app
from agentlake.errors import UserError
from agentlake.settings import Settings, configuration_markdown, load_settings

ROOT = Path(__file__).resolve().parents[1]


def test_precedence_arguments_then_env_then_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "agentlake.toml"
    config.write_text("sql_max_rows = 7\nsql_timeout_s = 3.5\nduckdb_threads = 1\n")
    monkeypatch.setenv("AGENTLAKE_CONFIG", str(config))
    monkeypatch.setenv("AGENTLAKE_SQL_TIMEOUT_S", "4.5")
    settings = load_settings(duckdb_threads=2)
    assert settings.sql_max_rows == 7  # file
    assert settings.sql_timeout_s == 4.5  # env beats file
    assert settings.duckdb_threads == 2  # argument beats both


def test_ecosystem_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8000/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    settings = load_settings()
    assert settings.openai_base_url == "http://127.0.0.1:8000/v1"
    assert settings.openai_api_key is not None
    assert settings.openai_api_key.get_secret_value() == "sk-test"


def test_bad_value_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTLAKE_SQL_MAX_ROWS", "lots")
    with pytest.raises(UserError, match="AGENTLAKE_SQL_MAX_ROWS"):
        load_settings()


def test_api_keys_parse_and_reject_unknown_scope() -> None:
    assert load_settings(api_keys="k1:read, k2:admin").api_key_scopes == {"k1": "read", "k2": "admin"}
    with pytest.raises(UserError, match="KEY:SCOPE"):
        load_settings(api_keys="k1:superuser")


def test_api_keys_may_name_who_holds_them() -> None:
    settings = load_settings(api_keys="k1:read:alice, k:2:write:bob.smith, k3:admin, k4:read:write")
    assert settings.api_key_scopes == {"k1": "read", "k:2": "write", "k3": "admin", "k4:read": "write"}
    assert settings.api_key_names == {"k1": "alice", "k:2": "bob.smith"}
    with pytest.raises(UserError, match="KEY:SCOPE:NAME"):
        load_settings(api_keys="k1:read:bad name")


def test_every_setting_is_documented() -> None:
    for name, field in Settings.model_fields.items():
        assert field.description, f"setting {name} has no help text"
    assert (ROOT / "docs" / "configuration.md").read_text() == configuration_markdown(), (
        "docs/configuration.md is stale: run `agentlake config docs > docs/configuration.md`"
    )


def _cells(row: str) -> list[str]:
    """The cells of a Markdown table row as GitHub splits it: at every "|" not escaped."""
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", row.strip())[1:-1]]


def test_every_row_of_the_configuration_table_has_the_header_s_cells() -> None:
    lines = (ROOT / "docs" / "configuration.md").read_text().splitlines()
    table = [line for line in lines if line.startswith("|")]
    header, rule, rows = _cells(table[0]), table[1], table[2:]
    assert header == ["name", "variable", "type", "default", "help"]
    assert len(_cells(rule)) == len(header)
    assert len(rows) == len(Settings.model_fields)
    wrong = [row for row in rows if len(_cells(row)) != len(header)]
    assert not wrong, f"{len(wrong)} rows do not have {len(header)} cells, e.g. {wrong[0][:120]}"
    types = {_cells(row)[0].strip("`"): _cells(row)[2] for row in rows}
    assert types["database_url"] == "SecretStr \\| None"


def test_cli_help_and_version() -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    assert "config" in result.output
    assert f"agentlake {agentlake.__version__}\n" == runner.invoke(app, ["--version"]).output


def test_the_lesson_extractor_may_be_a_plugins_and_the_registry_names_the_known_ones() -> None:
    from agentlake.learn import get_extractor

    settings = load_settings(learn_extractor="from-a-plugin")
    with pytest.raises(
        UserError, match="unknown lesson extractor 'from-a-plugin'; known: heuristic, induction, llm"
    ):
        get_extractor(settings=settings)
    with pytest.raises(UserError, match="AGENTLAKE_LEARN_EXTRACTOR"):
        load_settings(learn_extractor="two words")


def test_config_show_as_json_has_each_setting_with_secrets_hidden(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("AGENTLAKE_API_KEYS", "sk-very-secret-0123:admin")
    result = CliRunner().invoke(app, ["config", "show", "--format", "json"])
    shown = json.loads(result.output)
    assert (shown["data_dir"], shown["api_keys"]) == (str(tmp_path / "data"), "**********")


def test_config_show_as_csv_is_one_row_per_setting() -> None:
    result = CliRunner().invoke(app, ["config", "show", "-f", "csv"])
    rows = list(csv.reader(result.output.splitlines()))
    assert (rows[0], len(rows) - 1) == (["setting", "value"], len(Settings.model_fields))


def test_a_bad_log_level_names_its_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTLAKE_LOG_LEVEL", "chatty")
    with pytest.raises(UserError, match="AGENTLAKE_LOG_LEVEL"):
        load_settings()


def test_log_level_is_read_in_any_case(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTLAKE_LOG_LEVEL", "info")
    assert load_settings().log_level == "INFO"
