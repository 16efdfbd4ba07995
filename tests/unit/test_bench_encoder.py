"""The encoder benchmark's interleaving and its summary row (no model needed)."""

from benchmarks.encoder import RuntimeRow, rotated


def test_each_runtime_goes_first_in_turn():
    names = ["torch", "onnx-int8", "onnx"]
    firsts = [rotated(names, i)[0] for i in range(6)]
    assert firsts == ["torch", "onnx-int8", "onnx", "torch", "onnx-int8", "onnx"]
    assert all(sorted(rotated(names, i)) == sorted(names) for i in range(6))


def test_the_row_reports_percentiles_rate_and_the_worst_cosine():
    row = RuntimeRow(
        "onnx-int8",
        query_ms=[float(x) for x in range(1, 101)],
        passage_s=2.0,
        passages=100,
        query_cos=[0.99, 0.995, 0.98],
        passage_cos=[0.999, 0.97],
    )
    d = row.as_dict()
    assert d["passages_per_s"] == 50.0
    assert d["query_cosine_min"] == 0.98 and d["passage_cosine_min"] == 0.97
    assert 50 <= d["query_ms_p50"] <= 51 and 95 <= d["query_ms_p95"] <= 96
    assert RuntimeRow("torch").as_dict()["passages_per_s"] == 0.0
