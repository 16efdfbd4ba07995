"""Script folding for matching (text.folding): Traditional Chinese as Simplified, full-width
forms as ASCII, everything else exactly as written; and the BM25 leg built on the folded form."""

from __future__ import annotations

import json
import string
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hybrid_es.ingest.documents import Document
from hybrid_es.ingest.plan import build_chunk_records
from hybrid_es.retrieval.queries import matching_text, sparse_query
from hybrid_es.text.analysis import ANALYSIS_VERSION, client_terms
from hybrid_es.text.folding import FOLD_VERSION, fold_for_matching
from tests.conftest import examples

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
POLICY = {"term": {"tenant": "demo-A"}}
_FULL_WIDTH_PUNCTUATION = str.maketrans("\uff08\uff09\uff0c\uff1a", "(),:")


def _full_width(text: str) -> str:
    """``text``'s ASCII in its full-width forms (U+FF01 to U+FF5E)."""
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)


def _fixture(name: str) -> dict[str, dict[str, object]]:
    lines = (FIXTURES / name).read_text(encoding="utf-8").splitlines()
    return {r["id"]: r for r in map(json.loads, lines) if r.get("lang") == "zh"}


@pytest.mark.parametrize(
    ("traditional", "simplified"),
    [
        ("無障礙淋浴間的價格", "无障碍淋浴间的价格"),
        ("頭髮", "头发"),  # one-to-many: 髮 and 發 both fold to 发
        ("發展", "发展"),
        ("乾燥", "干燥"),  # phrase conversion: 乾 is 干 here ...
        ("乾隆", "乾隆"),  # ... and stays in the emperor's name
        ("臺灣", "台湾"),  # Taiwan's variant characters
        ("裡面", "里面"),
        ("雙牀房", "双床房"),  # OpenCC's standard form (牀) and Taiwan's (床) alike
        ("雙床房", "双床房"),
        ("價格爲", "价格为"),
        ("價格為", "价格为"),
    ],
)
def test_traditional_folds_to_simplified(traditional, simplified):
    assert fold_for_matching(traditional) == simplified


def test_simplified_text_is_unchanged_but_for_full_width_punctuation():
    text = "酒店供应商合约 KYO-H12、2026 年度。2026 年 4 月无障碍双床房的价格为每晚 31,500 日元。"
    assert fold_for_matching(text) == text
    assert fold_for_matching(_full_width("合约(2026 年度),含早餐:")) == "合约(2026 年度),含早餐:"


def test_the_travel_fixture_in_either_script_folds_to_the_same_text():
    simplified = _fixture("travel.jsonl")
    traditional = _fixture("travel-zh-hant.jsonl")
    assert len(traditional) == 2
    for tid, t in traditional.items():
        s = simplified[tid.removesuffix("-hant")]
        assert t["body"] != s["body"]  # really Traditional
        for f in ("title", "body"):
            folded = fold_for_matching(str(s[f]))
            assert fold_for_matching(str(t[f])) == folded
            assert folded == str(s[f]).translate(_FULL_WIDTH_PUNCTUATION)


def test_mixed_chinese_english_and_ids_keep_english_and_ids_exactly():
    text = (
        "Contract KYO-H12 (PROP-KYO-12): 無障礙淋浴間 roll-in shower, JPY 31,500/night; "
        "self.run_target"
    )
    assert fold_for_matching(text) == (
        "Contract KYO-H12 (PROP-KYO-12): 无障碍淋浴间 roll-in shower, JPY 31,500/night; "
        "self.run_target"
    )


def test_full_width_forms_fold_like_lucenes_cjk_width():
    assert fold_for_matching(_full_width("KYO-H12") + " 房價") == "KYO-H12 房价"
    assert fold_for_matching("ｶﾞｲﾄﾞ") == "ガイド"  # half-width katakana, sound mark merged


def test_characters_outside_the_tables_are_kept():
    for text in (
        "𠮷野家",
        "한국어 문장",
        "ひらがな カタカナ",
        "emoji 🙂 ✓",
        "〇〇々",
        "Ωμέγα ßtraße",
    ):
        assert fold_for_matching(text) == text


def test_no_printable_ascii_or_latin_1_character_changes():
    text = string.printable + "".join(chr(c) for c in range(0xA0, 0x250))
    assert fold_for_matching(text + "發") == text + "发"


@settings(database=None, max_examples=examples(200), deadline=None)
@given(st.text(max_size=200))
def test_only_han_and_width_forms_change(text):
    # Without its Han and width forms a text is returned exactly as it is.
    kept = "".join(c for c in text if not _foldable(c))
    assert fold_for_matching(kept) == kept
    # With Han (and no width form, whose ASCII results would be indistinguishable from text
    # that was ASCII already), every other character survives, in order.
    no_width = "".join(c for c in text if not 0xFF01 <= ord(c) <= 0xFF9F)
    folded = fold_for_matching(no_width)
    assert [c for c in folded if not _foldable(c)] == [c for c in no_width if not _foldable(c)]
    # A width form's fold is never itself a width form (one pass is enough).
    assert not any(0xFF01 <= ord(c) <= 0xFF5E for c in fold_for_matching(text))


def _foldable(c: str) -> bool:
    o = ord(c)
    return (
        0x3400 <= o <= 0x4DBF
        or 0x4E00 <= o <= 0x9FFF
        or 0xF900 <= o <= 0xFAFF
        or 0x20000 <= o <= 0x3FFFF
        or 0xFF01 <= o <= 0xFF9F
    )


@settings(database=None, max_examples=examples(200), deadline=None)
@given(st.text(max_size=100).map(lambda t: t + "無障礙"))
def test_folding_is_total_and_keeps_a_folded_text_folded(text):
    once = fold_for_matching(text)
    assert isinstance(once, str)
    assert fold_for_matching(once) == once


def test_the_analysis_version_names_the_fold_and_the_converter_release():
    assert FOLD_VERSION.startswith("width+t2s-opencc-") and FOLD_VERSION in ANALYSIS_VERSION
    assert "missing" not in FOLD_VERSION


def test_client_terms_of_folded_text_are_bigrams_of_simplified():
    assert client_terms(fold_for_matching("無障礙淋浴")) == "无障 障碍 碍淋 淋浴"


# --- the BM25 leg --------------------------------------------------------------------------


def test_a_traditional_question_gets_the_body_of_its_simplified_twin():
    traditional = sparse_query("KYO-H12 四月 無障礙淋浴間 房價", POLICY)
    simplified = sparse_query("KYO-H12 四月 无障碍淋浴间 房价", POLICY)
    assert traditional == simplified
    text = traditional["bool"]["should"][0]["multi_match"]
    assert text["query"] == "KYO-H12 四月 无障碍淋浴间 房价"
    assert text["fields"] == ["search_folded", "search_folded.cjk", "title_folded^0.5"]


def test_a_full_width_identifier_in_the_question_matches_the_id_fields():
    should = sparse_query(_full_width("KYO-H12") + " 房價", POLICY)["bool"]["should"]
    assert {"terms": {"contract_ids": ["KYO-H12"], "boost": 5.0}} in should


def test_the_cut_is_counted_on_the_folded_question():
    # 64 half-width katakana pairs with sound marks: 128 characters that fold to 64
    text = "ｶﾞ" * 64
    assert matching_text(text, 64) == "ガ" * 64
    assert matching_text("無障礙" * 30, 4) == "无障碍无"


def test_stored_text_stays_as_written_and_the_matched_copies_are_folded():
    raw = _fixture("travel-zh-hant.jsonl")["D1-current-contract-zh-hant"]
    doc = Document.model_validate(raw)
    simplified = _fixture("travel.jsonl")["D1-current-contract-zh"]
    (rec,) = build_chunk_records(doc, now=_now(), embedding_model="m")
    assert rec["title"] == raw["title"] and rec["raw_chunk_text"] == raw["body"]
    assert "價格" in rec["search_payload"]
    assert rec["title_folded"] == fold_for_matching(str(simplified["title"]))
    assert rec["search_folded"] == fold_for_matching(rec["search_payload"])
    assert fold_for_matching(str(simplified["body"])) in rec["search_folded"]
    assert rec["search_terms"] == client_terms(rec["search_folded"])
    assert rec["analysis_version"] == ANALYSIS_VERSION


def _now():  # type: ignore[no-untyped-def]
    from datetime import UTC, datetime

    return datetime(2026, 4, 1, tzinfo=UTC)
