"""The figures of the searches-per-core benchmark (``benchmarks.per_core``): CPU per
search on each side, the machine's limit and the share of it achieved, written as formulas."""

from __future__ import annotations

import pytest

from benchmarks.per_core import (
    Window,
    area,
    client_ms_per_search,
    client_split,
    engine_ms_per_search,
    grouped_costs,
    idle_rate,
    level_row,
    limit_per_s,
    node_cpu_ms,
    rows_table,
    top_functions,
)


def window(**kw: object) -> Window:
    base: dict[str, object] = {
        "clients": 2,
        "seconds": 10.0,
        "latencies_ms": (100.0, 200.0, 300.0, 400.0),
        "client_cpu_s": 0.08,
        "engine_cpu_ms": 140.0,
        "engine_idle_ms_per_s": 2.0,
    }
    return Window(**{**base, **kw})  # type: ignore[arg-type]


def test_node_cpu_sums_every_node_and_tolerates_missing_figures() -> None:
    stats = {
        "nodes": {
            "a": {"process": {"cpu": {"total_in_millis": 1500}}},
            "b": {"process": {"cpu": {"total_in_millis": 250}}},
            "c": {"process": {}},
        }
    }
    assert node_cpu_ms(stats) == 1500 + 250
    assert node_cpu_ms({}) == 0


def test_idle_rate_is_ms_per_second_never_negative() -> None:
    assert idle_rate(300.0, 3.0) == 100.0
    assert idle_rate(-5.0, 3.0) == 0.0
    assert idle_rate(10.0, 0.0) == 0.0


def test_cpu_per_search_subtracts_the_engine_background() -> None:
    w = window()
    assert client_ms_per_search(w) == pytest.approx(0.08 * 1000 / 4)
    assert engine_ms_per_search(w) == pytest.approx((140.0 - 2.0 * 10.0) / 4)
    # A background larger than the delta (another load stopped meanwhile) is no negative cost.
    assert engine_ms_per_search(window(engine_idle_ms_per_s=50.0)) == 0.0


def test_no_search_costs_nothing() -> None:
    w = window(latencies_ms=())
    assert client_ms_per_search(w) == 0.0 and engine_ms_per_search(w) == 0.0
    row = level_row(w, cores=2)
    assert row["searches/s"] == 0.0 and row["limit/s"] == pytest.approx(0.0)
    assert row["achieved %"] == 0.0


def test_limit_is_cores_times_1000_over_the_cpu_of_one_search() -> None:
    assert limit_per_s(2, 20.0, 30.0) == pytest.approx(2 * 1000 / (20.0 + 30.0))
    assert limit_per_s(8, 0.0, 0.0) == 0.0


def test_level_row_reports_the_share_of_the_limit() -> None:
    row = level_row(window(model_calls=2, load_1m=11.04, errors=1), cores=2)
    client, engine = 0.08 * 1000 / 4, (140.0 - 20.0) / 4
    limit = 2 * 1000 / (client + engine)
    assert row["searches"] == 4
    assert row["searches/s"] == pytest.approx(4 / 10.0)
    assert row["client CPU-ms"] == pytest.approx(client)
    assert row["engine CPU-ms"] == pytest.approx(engine)
    assert row["limit/s"] == pytest.approx(round(limit, 1))
    assert row["achieved %"] == pytest.approx(round(100 * 0.4 / limit, 1))
    assert row["p50 ms"] == 250.0  # linear between the closest ranks
    assert row["queries/model call"] == 2.0
    assert row["load 1m"] == 11.0 and row["errors"] == 1


def test_client_split_takes_the_embedding_out_of_the_search() -> None:
    split = client_split([10.0, 14.0], [4.0, 2.0])
    assert split == {"search": 12.0, "embed": 3.0, "rest": 9.0, "embed share %": 25.0}
    assert client_split([], [])["embed share %"] == 0.0
    assert client_split([1.0], [3.0])["rest"] == 0.0


@pytest.mark.parametrize(
    ("filename", "function", "expected"),
    [
        ("/v/lib/python3.11/site-packages/urllib3/connection.py", "request", "urllib3"),
        ("/work/main/hybrid_es/retrieval/fusion.py", "linear", "hybrid_es/retrieval/fusion.py"),
        ("/usr/lib/python3.11/json/encoder.py", "iterencode", "json/encoder.py"),
        ("<frozen os>", "__getitem__", "<frozen os>"),
        ("~", "<method 'recv_into' of '_socket.socket' objects>", "<method 'recv_into'"),
    ],
)
def test_area_groups_by_package(filename: str, function: str, expected: str) -> None:
    assert area(filename, function).startswith(expected)


def test_grouped_costs_and_top_functions_per_search() -> None:
    stats = {
        ("/x/site-packages/urllib3/a.py", 1, "f"): (10, 10, 0.010, 0.02, {}),
        ("/x/site-packages/urllib3/b.py", 2, "g"): (30, 30, 0.030, 0.03, {}),
        ("/w/hybrid_es/retrieval/fusion.py", 3, "linear"): (5, 5, 0.020, 0.02, {}),
        ("~", 0, "<built-in method math.fsum>"): (90, 90, 0.001, 0.001, {}),
    }
    areas = grouped_costs(stats, searches=10, top=2)
    assert areas == [
        {"area": "urllib3", "ms/search": 4.0, "calls/search": 4.0},
        {"area": "hybrid_es/retrieval/fusion.py", "ms/search": 2.0, "calls/search": 0.5},
    ]
    funcs = top_functions(stats, searches=10, top=4)
    assert funcs[0] == {"function": "urllib3:2(g)", "ms/search": 3.0, "calls/search": 3.0}
    assert funcs[-1]["function"] == "<built-in method math.fsum>"


def test_rows_table_is_markdown() -> None:
    assert rows_table([]) == ""
    assert rows_table([{"a": 1, "b": "x"}]) == "| a | b |\n|---|---|\n| 1 | x |"
