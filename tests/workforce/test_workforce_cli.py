"""``agentlake data generate``: into the lake (refusing to overwrite) or to files."""

from __future__ import annotations

from pathlib import Path

from agentlake.lake import Lake


def test_generate_into_the_lake_then_refuse_then_replace(cli) -> None:
    code, out, _ = cli("data", "generate", "--workers", "300", "--seed", "2")
    assert code == 0
    assert "workers" in out
    assert "300" in out
    code, _, err = cli("data", "generate", "--workers", "100")
    assert code == 2
    assert "already exist; pass --replace" in err
    with Lake.open(read_only=True) as lake:
        assert lake.dataset("workers").row_count == 300
    code, _, _ = cli("data", "generate", "--workers", "100", "--replace")
    assert code == 0
    with Lake.open(read_only=True) as lake:
        assert lake.dataset("workers").row_count == 100
        assert lake.query("SELECT count(*) FROM placements p ANTI JOIN workers w USING (worker_id)").rows == [
            [0]
        ]


def test_generate_files_then_ingest_them(tmp_path: Path, cli) -> None:
    out_dir = tmp_path / "sample"
    code, out, _ = cli("data", "generate", "--workers", "200", "--out", str(out_dir), "--format", "csv")
    assert code == 0
    assert sorted(p.name for p in out_dir.iterdir()) == ["clients.csv", "placements.csv", "workers.csv"]
    code, out, _ = cli("ingest", str(out_dir / "workers.csv"), "--dataset", "workers", "--key", "worker_id")
    assert code == 0
    assert "(0 -> 200 rows)" in out


def test_bom_header_csv(tmp_path: Path, cli) -> None:
    path = tmp_path / "bom.csv"
    path.write_bytes("\ufeffid,name\n1,a\n".encode())
    assert cli("ingest", str(path), "-d", "items")[0] == 0
    code, _, err = cli("ingest", str(path), "-d", "items", "--mode", "upsert", "--key", "id")
    assert code == 0, err
    with Lake.open(read_only=True) as lake:
        assert lake.dataset("items").columns == [("id", "BIGINT"), ("name", "VARCHAR")]
