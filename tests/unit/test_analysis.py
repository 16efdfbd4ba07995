"""Client-side analysis: the terms an English-stemming, CJK-bigram analyzer would produce."""

from hybrid_es.text.analysis import client_terms


def test_english_is_lowercased_stop_filtered_and_stemmed():
    assert client_terms("The Studies of running contracts") == "studi run contract"


def test_cjk_runs_become_overlapping_bigrams_and_a_lone_character_stays():
    assert client_terms("无障碍淋浴") == "无障 障碍 碍淋 淋浴"
    assert client_terms("房 rate") == "房 rate"


def test_an_ideograph_past_the_bmp_is_a_cjk_character_not_a_word():
    # extensions B to H (planes 2 and 3), where some Traditional-to-Simplified folds land
    assert client_terms("𠮷野家") == "𠮷野 野家"
    assert client_terms("𫝈 rate") == "𫝈 rate"


def test_identifiers_split_like_the_standard_tokenizer():
    assert client_terms("KYO-H12") == "kyo h12"


def test_nothing_left_is_an_empty_string():
    assert client_terms("the and of !!!") == ""
