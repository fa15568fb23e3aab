"""Ingest reads files the way users expect: null markers, numbers, booleans, dates in the
formats people write, never a guessed day/month order, a schema that says why a column is
text, and appends that keep the dataset's types or refuse with one line and write nothing."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from agentlake.errors import UserError
from agentlake.lake import Lake


@pytest.fixture
def lake():
    with Lake.open() as opened:
        yield opened


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def column_type(lake: Lake, dataset: str, column: str) -> str:
    """The column's type as the lake's SQL sees it."""
    return lake.query(f'SELECT typeof("{column}") FROM {dataset} LIMIT 1').rows[0][0]


def values(lake: Lake, dataset: str, column: str) -> list:
    return [row[0] for row in lake.query(f'SELECT "{column}" FROM {dataset} ORDER BY id').rows]


def notes(result) -> dict[str, str]:
    return {column.name: column.note for column in result.columns}


# --- nulls, numbers, booleans ---------------------------------------------------------------

R_EXPORT = 'id,score,count,active,name\n1,0.5,3,TRUE,"a"\n2,NA,NA,NA,NA\n3,1.5,NA,FALSE,"c"\n'


@pytest.fixture
def r_export(lake: Lake, tmp_path: Path):
    return lake.ingest(write(tmp_path / "r.csv", R_EXPORT), "items")


@pytest.mark.parametrize(
    ("column", "dtype"),
    [("score", "DOUBLE"), ("count", "BIGINT"), ("active", "BOOLEAN"), ("name", "VARCHAR")],
)
def test_an_r_export_with_na_keeps_its_column_types(lake: Lake, r_export, column: str, dtype: str) -> None:
    assert column_type(lake, "items", column) == dtype


def test_na_becomes_null(lake: Lake, r_export) -> None:
    assert lake.query("SELECT score, count, active, name FROM items WHERE id = 2").rows == [
        [None, None, None, None]
    ]


def test_numbers_and_booleans_keep_their_values(lake: Lake, r_export) -> None:
    assert lake.query("SELECT score, active FROM items WHERE id IN (1, 3) ORDER BY id").rows == [
        [0.5, True],
        [1.5, False],
    ]


@pytest.mark.parametrize("marker", ["NA", "N/A", "null", "NULL", "NaN", ""])
def test_every_default_marker_is_a_missing_number(lake: Lake, tmp_path: Path, marker: str) -> None:
    lake.ingest(write(tmp_path / "m.csv", f"id,n\n1,2.5\n2,{marker}\n"), "items")
    assert column_type(lake, "items", "n") == "DOUBLE"
    assert values(lake, "items", "n") == [2.5, None]


def test_nan_is_missing_so_aggregates_work(lake: Lake, tmp_path: Path) -> None:
    lake.ingest(write(tmp_path / "m.csv", "id,n\n1,2.0\n2,NaN\n3,4.0\n"), "items")
    assert lake.query("SELECT avg(n) FROM items").rows == [[3.0]]


def test_zero_and_one_stay_numbers(lake: Lake, tmp_path: Path) -> None:
    lake.ingest(write(tmp_path / "b.csv", "id,flag\n1,0\n2,1\n"), "items")
    assert column_type(lake, "items", "flag") == "BIGINT"


def test_a_custom_null_marker(lake: Lake, tmp_path: Path) -> None:
    path = write(tmp_path / "dash.csv", "id,n\n1,7\n2,-\n")
    lake.ingest(path, "plain")
    lake.ingest(path, "items", nulls=["-"])
    assert column_type(lake, "plain", "n") == "VARCHAR"  # without the marker '-' is a value
    assert column_type(lake, "items", "n") == "BIGINT"
    assert values(lake, "items", "n") == [7, None]


@pytest.mark.parametrize("marker", ["", "  "])
def test_an_empty_null_marker_is_refused_and_nothing_is_written(
    lake: Lake, tmp_path: Path, marker: str
) -> None:
    with pytest.raises(UserError, match="--null needs a value"):
        lake.ingest(write(tmp_path / "m.csv", "id,n\n1,7\n"), "items", nulls=[marker])
    assert lake.datasets() == []


# --- dates and timestamps -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("2012-01-01", "2012-02-13"),
        ("2012/01/01", "2012/02/13"),
        ("Jan 1 2012", "Feb 13 2012"),
        ('"January 1, 2012"', '"February 13, 2012"'),
        ("01-Jan-2012", "13-Feb-2012"),
    ],
)
def test_text_dates_become_dates(lake: Lake, tmp_path: Path, first: str, second: str) -> None:
    lake.ingest(write(tmp_path / "d.csv", f"id,d\n1,{first}\n2,NA\n3,{second}\n"), "items")
    assert column_type(lake, "items", "d") == "DATE"
    assert values(lake, "items", "d") == [dt.date(2012, 1, 1), None, dt.date(2012, 2, 13)]


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("2012-01-01T10:00:00", "2012-02-13T18:30:00"),
        ("2012-01-01 10:00:00", "2012-02-13 18:30:00"),
        ("2012-01-01 10:00", "2012-02-13 18:30"),
        ("2012/01/01 10:00", "2012/02/13 18:30:00"),
    ],
)
def test_timestamps_become_timestamps(lake: Lake, tmp_path: Path, first: str, second: str) -> None:
    lake.ingest(write(tmp_path / "t.csv", f"id,t\n1,{first}\n2,{second}\n"), "items")
    assert column_type(lake, "items", "t") == "TIMESTAMP"
    assert values(lake, "items", "t") == [dt.datetime(2012, 1, 1, 10, 0), dt.datetime(2012, 2, 13, 18, 30)]


def test_dates_and_timestamps_in_one_column_are_timestamps(lake: Lake, tmp_path: Path) -> None:
    lake.ingest(write(tmp_path / "t.csv", "id,t\n1,2012-01-01\n2,2012-02-13 18:30:00\n"), "items")
    assert values(lake, "items", "t") == [dt.datetime(2012, 1, 1), dt.datetime(2012, 2, 13, 18, 30)]


def test_fractional_seconds_are_kept(lake: Lake, tmp_path: Path) -> None:
    lake.ingest(write(tmp_path / "t.csv", "id,t\n1,2012-02-13T18:30:00.5\n"), "items")
    assert values(lake, "items", "t") == [dt.datetime(2012, 2, 13, 18, 30, 0, 500000)]


def test_timestamps_with_an_offset_keep_the_instant(lake: Lake, tmp_path: Path) -> None:
    lake.ingest(
        write(tmp_path / "t.csv", "id,t\n1,2012-01-01T10:00:00+02:00\n2,2012-01-01T10:00:00Z\n"), "items"
    )
    assert column_type(lake, "items", "t") == "TIMESTAMP WITH TIME ZONE"
    assert lake.query("SELECT epoch(t) FROM items ORDER BY id").rows == [[1325404800.0], [1325412000.0]]


AMBIGUOUS = "id,d\n1,03/04/2012\n2,05/06/2012\n"


def test_ambiguous_day_month_dates_stay_text(lake: Lake, tmp_path: Path) -> None:
    lake.ingest(write(tmp_path / "a.csv", AMBIGUOUS), "items")
    assert column_type(lake, "items", "d") == "VARCHAR"
    assert values(lake, "items", "d") == ["03/04/2012", "05/06/2012"]


def test_the_schema_says_why_ambiguous_dates_stay_text(lake: Lake, tmp_path: Path) -> None:
    result = lake.ingest(write(tmp_path / "a.csv", AMBIGUOUS), "items")
    assert notes(result)["d"] == "ambiguous dates: day/month order unknown, e.g. '03/04/2012'"


@pytest.mark.parametrize(
    ("settling", "expected", "order"),
    [
        ("13/04/2012", dt.date(2012, 4, 3), "day/month/year"),
        ("04/13/2012", dt.date(2012, 3, 4), "month/day/year"),
    ],
)
def test_one_value_settles_the_day_month_order(
    lake: Lake, tmp_path: Path, settling: str, expected: dt.date, order: str
) -> None:
    result = lake.ingest(write(tmp_path / "a.csv", f"id,d\n1,03/04/2012\n2,{settling}\n"), "items")
    assert values(lake, "items", "d")[0] == expected
    assert notes(result)["d"] == f"dates read {order}, as '{settling}' shows"


def test_a_two_digit_year_is_not_read_as_the_first_century(lake: Lake, tmp_path: Path) -> None:
    lake.ingest(write(tmp_path / "y.csv", "id,d\n1,12-01-01\n2,13-05-20\n"), "items")
    assert column_type(lake, "items", "d") == "VARCHAR"


# --- why a column is text -------------------------------------------------------------------


def test_a_mixed_column_stays_text_and_says_how_mixed(lake: Lake, tmp_path: Path) -> None:
    result = lake.ingest(write(tmp_path / "m.csv", "id,n\n1,12\n2,n/a (broken)\n3,14\n4,15\n"), "items")
    assert column_type(lake, "items", "n") == "VARCHAR"
    assert notes(result)["n"] == "mixed values: 1 of 4 are not numbers, e.g. 'n/a (broken)'"


def test_mixed_dates_say_how_mixed(lake: Lake, tmp_path: Path) -> None:
    result = lake.ingest(write(tmp_path / "m.csv", "id,d\n1,2012-01-01\n2,soon\n3,2012-01-03\n"), "items")
    assert notes(result)["d"] == "mixed values: 1 of 3 are not dates, e.g. 'soon'"


def test_leading_zeros_stay_and_say_so(lake: Lake, tmp_path: Path) -> None:
    result = lake.ingest(write(tmp_path / "z.csv", "id,zip\n1,04412\n2,44120\n"), "items")
    assert values(lake, "items", "zip") == ["04412", "44120"]
    assert notes(result)["zip"] == "numbers with leading zeros, e.g. '04412': kept as text so the zeros stay"


def test_plain_text_has_no_note(lake: Lake, tmp_path: Path) -> None:
    result = lake.ingest(write(tmp_path / "t.csv", "id,name\n1,Ann\n2,Bo\n"), "items")
    assert notes(result) == {"id": "", "name": ""}


def test_a_column_of_only_markers_says_it_has_no_values(lake: Lake, tmp_path: Path) -> None:
    result = lake.ingest(write(tmp_path / "e.csv", "id,gone\n1,NA\n2,\n"), "items")
    assert notes(result)["gone"] == "no values: every field is empty or a null marker"


def late_rows(tmp_path: Path, last: str) -> Path:
    """More rows than DuckDB's sniffer samples (20,480), the last one unlike the rest."""
    lines = [f"{i},{i}" for i in range(1, 30_001)]
    return write(tmp_path / "late.csv", "id,n\n" + "\n".join(lines) + f"\n30001,{last}\n")


def test_a_late_text_value_makes_the_column_text_not_an_error(lake: Lake, tmp_path: Path) -> None:
    result = lake.ingest(late_rows(tmp_path, "lots"), "items")
    assert notes(result)["n"] == "mixed values: 1 of 30001 are not numbers, e.g. 'lots'"


def test_a_late_decimal_makes_the_column_double(lake: Lake, tmp_path: Path) -> None:
    lake.ingest(late_rows(tmp_path, "1.5"), "items")
    assert lake.query("SELECT typeof(n), max(n) FROM items GROUP BY ALL").rows == [["DOUBLE", 30000.0]]


def test_json_text_gets_the_same_reading(lake: Lake, tmp_path: Path) -> None:
    lines = ['{"id": 1, "d": "Jan 1 2012", "s": "NA"}', '{"id": 2, "d": "Feb 13 2012", "s": "x"}']
    lake.ingest(write(tmp_path / "j.jsonl", "\n".join(lines) + "\n"), "items")
    assert column_type(lake, "items", "d") == "DATE"
    assert values(lake, "items", "s") == [None, "x"]


# --- appends keep the dataset's types -------------------------------------------------------

BASE = "id,d,code,n\n1,2012-01-01,007,1.5\n"


@pytest.fixture
def typed(lake: Lake, tmp_path: Path) -> Lake:
    """Dataset 'items' keyed by id: id BIGINT, d DATE, code VARCHAR (leading zeros), n DOUBLE."""
    lake.ingest(write(tmp_path / "base.csv", BASE), "items", key="id")
    return lake


def test_an_append_keeps_the_types(typed: Lake, tmp_path: Path) -> None:
    typed.ingest(write(tmp_path / "more.csv", "id,d,code,n\n2,Jan 5 2013,12,NA\n"), "items")
    assert typed.dataset("items").columns == [
        ("id", "BIGINT"),
        ("d", "DATE"),
        ("code", "VARCHAR"),
        ("n", "DOUBLE"),
    ]


def test_an_append_reads_values_into_the_types(typed: Lake, tmp_path: Path) -> None:
    typed.ingest(write(tmp_path / "more.csv", "id,d,code,n\n2,Jan 5 2013,12,NA\n"), "items")
    assert typed.query("SELECT * FROM items WHERE id = 2").rows == [[2, dt.date(2013, 1, 5), "12", None]]


def test_a_text_column_keeps_the_text_as_written(typed: Lake, tmp_path: Path) -> None:
    # '1.50' read as a number would come back as '1.5'; a date-like code would become a date
    typed.ingest(
        write(tmp_path / "more.csv", "id,d,code,n\n2,2013-01-05,1.50,1\n3,2013-01-06,2013-01-06,2\n"), "items"
    )
    assert values(typed, "items", "code") == ["007", "1.50", "2013-01-06"]


def test_an_upsert_keeps_the_types(typed: Lake, tmp_path: Path) -> None:
    typed.ingest(
        write(tmp_path / "up.csv", "id,d,code,n\n1,Feb 2 2014,8,NA\n"), "items", mode="upsert", key="id"
    )
    assert typed.query("SELECT * FROM items").rows == [[1, dt.date(2014, 2, 2), "8", None]]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            "id,d,code,n\n2,2012-01-01,1,1\n4.5,2012-01-01,1,1\n",
            "id is BIGINT in items but the input has VARCHAR values such as '4.5'",
        ),
        (
            "id,d,code,n\n2,2012-01-01,1,1\nabc,2012-01-01,1,1\n",
            "id is BIGINT in items but the input has VARCHAR values such as 'abc'",
        ),
        (
            "id,d,code,n\n2,03/04/2012,1,1\n",
            "d is DATE in items but the input has VARCHAR values such as '03/04/2012' (ambiguous dates",
        ),
        (
            "id,d,code,n\n2,2012-01-01 10:00,1,1\n",
            "d is DATE in items but the input has TIMESTAMP values such as 2012-01-01 10:00:00",
        ),
        (
            "id,d,code,n\n2,2012-01-01,1,1\n3,2012-01-01,1,lots\n",
            "line 3: column n has 'lots', which is not a DOUBLE",
        ),
    ],
)
def test_a_value_that_does_not_fit_the_dataset_is_refused_and_nothing_is_written(
    typed: Lake, tmp_path: Path, content: str, message: str
) -> None:
    with pytest.raises(UserError) as refused:
        typed.ingest(write(tmp_path / "bad.csv", content), "items")
    assert message in refused.value.message
    assert len(refused.value.message.splitlines()) == 1
    assert typed.query("SELECT id FROM items").rows == [[1]]
    assert len(typed.dataset("items").history) == 1


def test_an_upsert_that_does_not_fit_writes_nothing(typed: Lake, tmp_path: Path) -> None:
    with pytest.raises(
        UserError, match="id is BIGINT in items but the input has VARCHAR values such as '1.5'"
    ):
        typed.ingest(
            write(tmp_path / "up.csv", "id,d,code,n\n1.5,2012-01-01,1,1\n"), "items", mode="upsert", key="id"
        )
    assert typed.query("SELECT * FROM items").rows == [[1, dt.date(2012, 1, 1), "007", 1.5]]


# --- the CLI prints the schema --------------------------------------------------------------

MESSY = (
    "id,score,joined,amb,mixed,code\n"
    "1,0.5,2012-01-01,03/04/2012,12,04412\n"
    "2,NA,Jan 2 2012,05/06/2012,n/a (broken),-\n"
    "3,?,January 3 2012,NA,14,44120\n"
)


@pytest.fixture
def messy(tmp_path: Path) -> Path:
    return write(tmp_path / "messy.csv", MESSY)


def schema_rows(out: str) -> dict[str, list[str]]:
    """The schema table's rows as {column: [type, why]}."""
    rows = {}
    for line in out.splitlines():
        line = line.strip()
        if not (line.startswith("│") and line.endswith("│")):
            continue
        cells = [cell.strip() for cell in line[1:-1].split("│")]
        if len(cells) == 3 and cells[0]:
            rows[cells[0]] = cells[1:]
    return rows


def test_the_cli_prints_the_schema_with_why(cli, messy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    code, out, _ = cli("ingest", str(messy), "-d", "items", "--null", "?", "--null", "-")
    assert code == 0
    assert schema_rows(out) == {
        "id": ["BIGINT", ""],
        "score": ["DOUBLE", ""],
        "joined": ["DATE", ""],
        "amb": ["VARCHAR", "ambiguous dates: day/month order unknown, e.g. '03/04/2012'"],
        "mixed": ["VARCHAR", "mixed values: 1 of 3 are not numbers, e.g. 'n/a (broken)'"],
        "code": ["VARCHAR", "numbers with leading zeros, e.g. '04412': kept as text so the zeros stay"],
    }


def test_the_cli_prints_the_schema_as_json(cli, messy: Path) -> None:
    code, out, _ = cli("ingest", str(messy), "-d", "items", "--null", "?", "--format", "json")
    assert code == 0
    result = json.loads(out)
    assert (result["rows_after"], result["columns"][1]) == (
        3,
        {"name": "score", "type": "DOUBLE", "note": ""},
    )


def test_the_cli_without_the_marker_keeps_the_column_text(cli, messy: Path) -> None:
    code, out, _ = cli("ingest", str(messy), "-d", "items", "--format", "json")
    assert code == 0
    assert json.loads(out)["columns"][1] == {
        "name": "score",
        "type": "VARCHAR",
        "note": "mixed values: 1 of 2 are not numbers, e.g. '?'",
    }


@pytest.mark.parametrize(
    ("name", "content", "extra", "message"),
    [
        ("empty.csv", "", [], "is empty; nothing to ingest"),
        ("header.csv", "id,score\n", [], "has no data rows"),
        ("ok.csv", "id,score\n1,2\n", ["--null", ""], "--null needs a value"),
    ],
)
def test_bad_input_exits_2_with_one_line_and_writes_nothing(
    cli, tmp_path: Path, name: str, content: str, extra: list[str], message: str
) -> None:
    code, _, err = cli("ingest", str(write(tmp_path / name, content)), "-d", "items", *extra)
    assert code == 2
    assert message in err
    assert len(err.strip().splitlines()) == 1
    assert cli("datasets", "--format", "json").out.strip() == "[]"
