"""Exact identifiers found in free text (matched against keyword fields, not BM25)."""

from __future__ import annotations

import pytest

from hybrid_es.text.identifiers import MAX_IDS, extract_identifiers


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("KYO-H12", ["KYO-H12"]),
        ("JPN-2026-0417", ["JPN-2026-0417"]),
        ("INV_0042", ["INV_0042"]),
        # Letters and digits in one token of 3+ characters.
        ("room H12", ["H12"]),
        ("an A320 flight", ["A320"]),
    ],
)
def test_identifier_forms(text, expected):
    assert extract_identifiers(text) == expected


def test_lowercase_identifier_is_found_and_keeps_its_case():
    # The keyword fields lowercase through their normalizer, so the original case is fine.
    assert extract_identifiers("rate for kyo-h12 please") == ["kyo-h12"]


def test_the_seed_question():
    assert extract_identifiers("KYO-H12 April roll-in shower rate") == ["KYO-H12"]


@pytest.mark.parametrize(
    "text",
    [
        "what is the April rate for a roll-in shower room",
        # Joined words without a digit are ordinary hyphenated words.
        "roll-in step-free check-in",
        # A year alone is all digits: no letter+digit mix and no joined form.
        "2026",
        "rates in 2026 and 2027",
        # Too short for the mixed form.
        "A3 B2",
        "",
    ],
)
def test_no_identifiers(text):
    assert extract_identifiers(text) == []


def test_joined_form_with_a_digit_counts_even_without_letters():
    # Documented: joined groups with at least one digit. An ISO date is such a form.
    assert extract_identifiers("stay from 2026-04-10") == ["2026-04-10"]


def test_part_of_a_hyphenated_identifier_is_not_extracted_alone():
    # Otherwise "H12" alone would be boosted and match every record with room code H12.
    assert extract_identifiers("KYO-H12") == ["KYO-H12"]
    assert "H12" not in extract_identifiers("contract KYO-H12 room")


@pytest.mark.parametrize("text", ["KYO/H12", "KYO.H12"])
def test_part_of_a_slash_or_dot_joined_identifier_is_not_extracted_alone(text):
    # Same rule as for "-": "/" and "." are documented joiners too, so "H12" inside
    # "KYO/H12" is part of one identifier, not a second one.
    assert extract_identifiers(text) == [text]


def test_trailing_punctuation_is_not_part_of_the_identifier():
    assert extract_identifiers("Is it KYO-H12? Or (JPN-2026-0417).") == ["KYO-H12", "JPN-2026-0417"]


def test_order_of_first_appearance():
    assert extract_identifiers("JPN-2026-0417 under KYO-H12, room H12") == [
        "JPN-2026-0417",
        "KYO-H12",
        "H12",
    ]


def test_duplicates_removed_case_insensitively_first_spelling_kept():
    assert extract_identifiers("kyo-h12 KYO-H12 Kyo-H12 and H12 h12") == ["kyo-h12", "H12"]


def test_overlong_token_is_ignored():
    # 65 characters: longer than any real identifier, more likely a hash or a pasted blob.
    blob = "A1-" + "x" * 62
    assert len(blob) == 65
    assert extract_identifiers(blob) == []
    assert extract_identifiers(blob[:64]) == [blob[:64]]


def test_at_most_max_ids():
    text = " ".join(f"ID-{n}" for n in range(MAX_IDS + 5))
    found = extract_identifiers(text)
    assert found == [f"ID-{n}" for n in range(MAX_IDS)]
    assert MAX_IDS == 20
