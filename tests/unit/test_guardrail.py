"""The guardrail on generated headers, table-driven: each row is a header, the document it must be
checked against, and the expected verdict (None: accepted; otherwise a piece of the refusal)."""

# ruff: noqa: RUF001  (the full-width punctuation of Chinese text is part of what is tested)

from __future__ import annotations

import pytest

from hybrid_es.ingest.guardrail import STOP_WORDS, check_header, novel_terms

EN = (
    "Supplier contract KYO-H12 between the Kyoto Garden Hotel and ACME Travel. The April 2026 "
    "rate is JPY 31,500 per night for 1000 rooms; occupancy reached 42.1%. ACME's Kyoto-based "
    "team manages bookings. Cancellation is free until 7 days before arrival."
)
ZH = (
    "京都花园酒店与东方旅行社签订的供应合同KYO-H12。2026年四月份双人房价格为每晚31,500日元，"
    "包含早餐。入住前7天可免费取消。酒店位于京都市。"
)
JA = "ヒルトン・ホテル京都との供給契約KYO-H12。四月の料金は一泊31,500円。京都市のホテル。"

CASES = [
    # English: names wherever they stand.
    ("Globex owns this hotel contract.", EN, "introduces globex"),
    ("The hotel contract (Globex) sets the April rate.", EN, "introduces globex"),
    ("Context: Hilton manages the Kyoto Garden Hotel.", EN, "introduces hilton"),
    ("Bookings: handled by Hilton staff.", EN, "introduces hilton"),
    ('The "Globex" contract sets the April rate.', EN, "introduces globex"),
    ("The \u201cGlobex\u201d contract sets the April rate.", EN, "introduces globex"),
    ("From Globex Corp's contract KYO-H12.", EN, "introduces globex, corp"),
    ("Marriott's April rate is JPY 31,500.", EN, "introduces marriott"),
    ("A Hilton-managed hotel in the contract.", EN, "introduces hilton-managed"),
    # English: acronyms, identifiers, code names, numbers.
    ("NASA inspected the Kyoto Garden Hotel.", EN, "introduces nasa"),
    ("ACME USA manages bookings.", EN, "introduces usa"),
    ("Part of contract KYO-H99.", EN, "introduces kyo-h99"),
    ("The BookingEngine manages bookings.", EN, "introduces bookingengine"),
    ("The April rate is JPY 35,000.", EN, "introduces 35,000"),
    ("Occupancy reached 42%.", EN, "introduces 42 "),
    ("In 2027 the rate rises.", EN, "introduces 2027"),
    ("The cost was 409.06 dollars.", "The cost was 1,409.06 dollars.", "introduces 409.06"),
    # English: what the document says passes, whatever its case and form.
    ("This chunk describes the April rate of contract KYO-H12.", EN, None),
    ("Describes the JPY 31,500 April rate at the Kyoto Garden Hotel.", EN, None),
    ("Cancellation is free until 7 days before arrival.", EN, None),
    ("Context: the Kyoto Garden Hotel contract KYO-H12.", EN, None),
    ("Summary: (ACME Travel) bookings are free to cancel.", EN, None),
    ("The ACME team manages bookings.", EN, None),
    ("ACME's Kyoto-based team manages bookings.", EN, None),
    ("ACME\u2019s rates for the Kyoto Garden Hotels.", EN, None),
    ("There are 1,000 rooms.", EN, None),
    ("There are 1000 rooms at JPY 31500.", EN, None),
    ("Occupancy reached 42.1%.", EN, None),
    ("Rates, e.g. the April rate, are in JPY.", EN, None),
    ("Levels of 3-diphosphoglycerate.", "Levels of 2,3-diphosphoglycerate fell.", None),
    ("Its April rate applies to 1000 rooms.", EN, None),
    # Chinese: names before a suffix, quoted text, identifiers and numbers.
    ("本段出自希尔顿酒店的供应合同。", ZH, "introduces 自希尔顿酒店"),
    ("该合同由环球公司签订。", ZH, "introduces 环球公司"),
    ("酒店位于大阪市。", ZH, "introduces 大阪市"),
    ("该合同规定了「无限期取消」条款。", ZH, "introduces 无限期取消"),
    ("价格为每晚35,000日元。", ZH, "introduces 35,000"),
    ("合同KYO-H99规定了价格。", ZH, "introduces kyo-h99"),
    ("入住前10天可免费取消。", ZH, "introduces 10"),
    ("Globex公司的供应合同。", ZH, "introduces globex"),
    ("本段介绍了该合同的价格条款。", ZH, None),
    ("本段出自京都花园酒店的供应合同。", ZH, None),
    ("这家酒店的价格为每晚31500日元。", ZH, None),
    ("「免费取消」适用于入住前7天。", ZH, None),
    ("市场价格与该合同无关。", ZH, None),
    (
        "本段出自京都花园酒店与东方旅行社签订的供应合同KYO-H12，介绍了该合同中四月份双人房的"
        "价格和早餐安排，并说明入住前7天可以免费取消；这家酒店位于京都市，价格为每晚31,500日元。",
        ZH,
        None,
    ),
    # Japanese: katakana names and suffixes.
    ("ヒルトンホテルの四月の料金。", JA, None),
    ("本セクションは四月の料金を説明する。", JA, None),
    ("マリオットホテルの四月の料金。", JA, "introduces マリオットホテル (absent"),
    ("この契約は大阪市のホテルに関する。", JA, "introduces 大阪市"),
]


@pytest.mark.parametrize(("header", "document", "expected"), CASES)
def test_guardrail_table(header: str, document: str, expected: str | None) -> None:
    reason = check_header(header, document)
    if expected is None:
        assert reason is None, reason
    else:
        assert reason is not None and expected in reason + " ", reason
        assert reason.endswith("(absent from the document)")


def test_the_table_covers_both_verdicts_in_english_and_cjk() -> None:
    refused = [c for c in CASES if c[2] is not None]
    accepted = [c for c in CASES if c[2] is None]
    assert len(CASES) >= 30 and len(refused) >= 10 and len(accepted) >= 10
    assert {EN, ZH, JA} <= {doc for _, doc, _ in refused} & {doc for _, doc, _ in accepted}


def test_stop_words_are_never_names_but_their_capitals_are_checked() -> None:
    # None of these is in the document: capitalised they are ordinary, in capitals an acronym.
    for word in sorted(STOP_WORDS):
        assert novel_terms(f"{word.capitalize()} rates.", "rates") == [], word
    assert novel_terms("IT rates.", "rates") == ["it"]
    assert all(w == w.lower() and " " not in w for w in STOP_WORDS)


def test_novel_terms_are_reported_once_in_header_order() -> None:
    header = "Globex and Hilton: Globex owns KYO-H99 and 希尔顿酒店。"
    assert novel_terms(header, "contract KYO-H12") == ["globex", "hilton", "kyo-h99", "希尔顿酒店"]


def test_allowed_terms_count_as_the_document() -> None:
    assert check_header("Part of Globex.md.", "rates", allowed=["Globex.md"]) is None
    assert check_header("From 京都花园酒店.", "rates", allowed=["京都花园酒店"]) is None
