"""Chunking: heading paths, size bound, overlap, CJK text, argument checks, verbatim chunks,
source code cut at definitions."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hybrid_es.ingest.chunking import chunk_code, chunk_document, chunk_text, estimate_tokens
from hybrid_es.ingest.documents import Document


def _sentence(prefix: str, words: int) -> str:
    return " ".join(f"{prefix}{i}" for i in range(words)) + "."


def test_estimate_tokens_counts_words_and_cjk_characters():
    assert estimate_tokens("two words") == 2
    assert estimate_tokens("酒店合约") == 4
    assert estimate_tokens("KYO-H12 合约") == 1 + 2


def test_heading_paths_follow_markdown_nesting():
    text = "\n".join(
        [
            "intro line.",
            "# Contract",
            "terms apply.",
            "## Rates",
            "april rate.",
            "### Accessible room",
            "roll-in shower.",
            "## Cancellation",
            "free until 7 days.",
            "# Annex ##",
            "annex text.",
        ]
    )
    got = [(c.heading_path, c.text) for c in chunk_text(text)]
    assert got == [
        ((), "intro line."),
        (("Contract",), "terms apply."),
        (("Contract", "Rates"), "april rate."),
        (("Contract", "Rates", "Accessible room"), "roll-in shower."),
        # A heading of the same level replaces its sibling, not the parent.
        (("Contract", "Cancellation"), "free until 7 days."),
        # Closing hashes are not part of the title.
        (("Annex",), "annex text."),
    ]


def test_chunks_are_numbered_in_order():
    text = "# A\none.\n# B\ntwo.\n# C\nthree."
    assert [c.number for c in chunk_text(text)] == [0, 1, 2]


def test_heading_without_text_yields_no_chunk():
    assert [c.heading_path for c in chunk_text("# Empty\n# Full\nbody.")] == [("Full",)]


def test_empty_text_yields_no_chunks():
    assert chunk_text("") == []
    assert chunk_text("\n\n  \n") == []


def test_short_text_is_one_chunk():
    (chunk,) = chunk_text("First sentence. Second sentence.")
    assert chunk.text == "First sentence. Second sentence."


def test_overlap_repeats_the_tail_of_the_previous_chunk():
    s1, s2, s3 = _sentence("a", 10), _sentence("b", 4), _sentence("c", 10)
    chunks = chunk_text(f"{s1} {s2} {s3}", size=16, overlap=4)
    assert [c.text for c in chunks] == [f"{s1} {s2}", f"{s2} {s3}"]


def test_without_overlap_nothing_repeats():
    s1, s2, s3 = _sentence("a", 10), _sentence("b", 4), _sentence("c", 10)
    chunks = chunk_text(f"{s1} {s2} {s3}", size=16, overlap=0)
    assert [c.text for c in chunks] == [f"{s1} {s2}", s3]


def test_chunk_with_overlap_still_respects_size():
    # The 4-token tail of chunk 0 is carried over; adding the 14-token sentence to it would make
    # 18 tokens, so the tail must be dropped (or the sentence moved) to stay within size 16.
    s1, s2, s3 = _sentence("a", 10), _sentence("b", 4), _sentence("c", 14)
    chunks = chunk_text(f"{s1} {s2} {s3}", size=16, overlap=4)
    assert [estimate_tokens(c.text) for c in chunks if estimate_tokens(c.text) > 16] == []


def test_long_sentence_is_hard_split_by_words():
    chunks = chunk_text(_sentence("w", 50), size=16, overlap=0)
    assert [estimate_tokens(c.text) for c in chunks] == [16, 16, 16, 2]
    assert " ".join(c.text for c in chunks) == _sentence("w", 50)


def test_single_unbreakable_token_may_exceed_size_with_a_real_tokenizer():
    # With a model tokenizer one word can count as many tokens; it cannot be split further.
    def chars(text: str) -> int:
        return len(text.replace(" ", ""))

    word = "x" * 40
    chunks = chunk_text(f"ab cd {word} ef", size=16, overlap=0, count=chars)
    assert word in [c.text for c in chunks]
    assert all(chars(c.text) <= 16 for c in chunks if c.text != word)


def test_cjk_text_is_chunked_by_characters():
    # One long sentence without spaces: it can only be split between characters.
    text = "无障碍双床房配有无障碍淋浴间" * 4 + "。"
    chunks = chunk_text(text, size=16, overlap=0)
    assert "".join(c.text for c in chunks) == text
    # 56 characters in pieces of 16; the full stop is not an ideograph and counts as a word.
    assert [estimate_tokens(c.text) for c in chunks] == [16, 16, 16, 56 - 3 * 16 + 1]


def test_cjk_sentences_split_at_the_full_stop():
    s1, s2 = "无障碍双床房配有无障碍淋浴间。", "从大堂到客房全程无台阶。"
    chunks = chunk_text(s1 + s2, size=16, overlap=0)
    assert [c.text for c in chunks] == [s1, s2]


def test_cjk_sentence_with_a_comma_is_still_split_by_characters():
    # A full-width comma (U+FF0C) is not a sentence end and not in the CJK ideograph ranges:
    # the text after it must still be split character by character.
    text = "酒店供应商合约\uff0c" + "无障碍双床房配有无障碍淋浴间" * 3 + "。"
    chunks = chunk_text(text, size=16, overlap=0)
    assert "".join(c.text for c in chunks) == text
    assert max(estimate_tokens(c.text) for c in chunks) <= 16


words = st.text(alphabet="abcdef", min_size=1, max_size=6)
sentences = st.lists(words, min_size=1, max_size=20).map(lambda ws: " ".join(ws) + ".")


@settings(database=None, max_examples=200)
@given(
    sentences=st.lists(sentences, min_size=1, max_size=12),
    size=st.integers(min_value=16, max_value=40),
    overlap_fraction=st.floats(min_value=0, max_value=0.49),
)
def test_no_chunk_exceeds_size_for_latin_text(sentences, size, overlap_fraction):
    overlap = min(int(size * overlap_fraction), size // 2 - 1)
    chunks = chunk_text(" ".join(sentences), size=size, overlap=overlap)
    # The estimate counts each word as one token, so every word is breakable and no chunk
    # has an excuse to be larger than size.
    assert max(estimate_tokens(c.text) for c in chunks) <= size
    # Nothing is lost: every sentence appears in some chunk.
    joined = " ".join(c.text for c in chunks)
    assert all(s in joined for s in sentences if estimate_tokens(s) <= size)


@pytest.mark.parametrize(
    ("size", "overlap"),
    [(15, 0), (0, 0), (16, 8), (16, -1), (100, 50), (100, 60)],
)
def test_invalid_size_or_overlap_is_rejected(size, overlap):
    with pytest.raises(ValueError, match="size >= 16"):
        chunk_text("text.", size=size, overlap=overlap)


@pytest.mark.parametrize(("size", "overlap"), [(16, 0), (16, 7), (100, 49)])
def test_boundary_size_and_overlap_are_accepted(size, overlap):
    assert [c.text for c in chunk_text("text.", size=size, overlap=overlap)] == ["text."]


# -- verbatim chunks ------------------------------------------------------------------------------


def _verbatim(text: str, chunks) -> bool:  # type: ignore[no-untyped-def]
    return all(text[c.start : c.start + len(c.text)] == c.text for c in chunks)


@pytest.mark.parametrize(
    "text",
    [
        "The rate is 3.5 percent, see example.com or call self.run_target() now.",
        "P < 0.05 was reported (n = 1.2e3).",
        "First paragraph, line one\nline two.\n\nSecond paragraph.",
        "中文句子。第二句。",
    ],
)
def test_a_chunk_is_a_verbatim_piece_of_the_text(text):
    chunks = chunk_text(text)
    assert _verbatim(text, chunks)
    assert [c.text for c in chunks] == [text]  # short: one chunk, nothing rewritten


def test_decimals_and_dotted_names_are_not_sentence_ends():
    text = " ".join(["Rates rose 3.5 points at example.com."] * 8)
    for chunk in chunk_text(text, size=16, overlap=4):
        assert "3. 5" not in chunk.text and "example. com" not in chunk.text


prose = st.lists(
    st.text(alphabet="ab. \n1中文。", min_size=1, max_size=30), min_size=1, max_size=20
).map("".join)


@settings(database=None, max_examples=300)
@given(text=prose, size=st.integers(min_value=16, max_value=40))
def test_chunks_are_verbatim_and_lose_no_character(text, size):
    chunks = chunk_text(text, size=size, overlap=0)
    assert _verbatim(text, chunks)
    # without overlap, the chunks hold every non-space character of the text, in order
    assert "".join("".join(c.text.split()) for c in chunks) == "".join(text.split())


# -- source code -----------------------------------------------------------------------------------

CODE = '''import os
import sys

# Settings for the run.
@dataclass
class Runner:
    """Runs targets."""

    def run(self, target):
        path = os.path.join(self.root, target.name)
        return self.run_target(path)

    def stop(self):
        self.running = False


def main():
    # Parse the arguments.
    Runner().run(sys.argv[1])
'''


def test_code_chunks_start_at_definitions_with_their_comments_and_decorators():
    chunks = chunk_code(CODE, size=20, overlap=4)
    assert _verbatim(CODE, chunks)
    # the class is cut at its second method; the imports do not fit beside it, and the function
    # after the class fits beside the class's last piece
    heads = [c.text.splitlines()[0] for c in chunks]
    assert heads == ["import os", "# Settings for the run.", "def stop(self):"]
    assert "\ndef main():" in chunks[-1].text
    # a Python comment is not a Markdown heading: it stays in the chunk
    assert "# Parse the arguments." in chunks[-1].text


def test_a_small_file_is_one_verbatim_chunk_with_its_indentation():
    (chunk,) = chunk_code(CODE, size=200, overlap=40)
    assert chunk.text == CODE.strip()


def test_a_definition_without_inner_definitions_is_packed_by_lines():
    body = "\n".join(f"    total = total + value_{i}" for i in range(30))
    text = f"def add(values):\n    total = 0\n{body}\n    return total\n"
    chunks = chunk_code(text, size=20, overlap=4)
    assert _verbatim(text, chunks)
    assert max(estimate_tokens(c.text) for c in chunks) <= 20
    # every line is in some chunk, none is cut in the middle
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    held = {ln.strip() for c in chunks for ln in c.text.splitlines()}
    assert set(lines) <= held


@settings(database=None, max_examples=200)
@given(
    names=st.lists(st.sampled_from(["alpha", "beta", "gamma"]), min_size=1, max_size=8),
    statements=st.integers(min_value=1, max_value=12),
    size=st.integers(min_value=16, max_value=60),
)
def test_code_chunks_are_verbatim_within_size_and_lose_no_line(names, statements, size):
    text = "".join(
        f"def {n}_{i}(x):\n" + "".join(f"    x = x + {j}\n" for j in range(statements)) + "\n"
        for i, n in enumerate(names)
    )
    chunks = chunk_code(text, size=size, overlap=min(4, size // 2 - 1))
    assert _verbatim(text, chunks)
    assert max(estimate_tokens(c.text) for c in chunks) <= size
    held = {ln.strip() for c in chunks for ln in c.text.splitlines()}
    assert {ln.strip() for ln in text.splitlines() if ln.strip()} <= held


def test_chunk_document_picks_the_code_chunker_for_source_files():
    code = Document(id="d", tenant="t", body=CODE, metadata={"path": "src/runner.py"})
    typed = Document(id="d", tenant="t", body=CODE, source_type="code")
    text = Document(id="d", tenant="t", body=CODE)
    assert chunk_document(code, size=24, overlap=4) == chunk_code(CODE, size=24, overlap=4)
    assert chunk_document(typed, size=24, overlap=4) == chunk_code(CODE, size=24, overlap=4)
    # as prose, "# Settings for the run." would be a heading
    assert chunk_document(text, size=24, overlap=4) == chunk_text(CODE, size=24, overlap=4)
    paths = {c.heading_path for c in chunk_text(CODE, size=24, overlap=4)}
    assert ("Settings for the run.",) in paths


def test_windows_line_endings_give_the_same_headings_and_paragraphs():
    text = "# Contract\r\nterms apply.\r\n\r\n## Rates\r\napril rate.\r\n"
    got = [(c.heading_path, c.text) for c in chunk_text(text)]
    assert got == [(("Contract",), "terms apply."), (("Contract", "Rates"), "april rate.")]
    assert _units_of("one.\r\n\r\ntwo") == ["one.", "two"]


def _units_of(text: str) -> list[str]:
    from hybrid_es.ingest.chunking import _units

    return [text[s:e] for s, e in _units(text, 0, len(text))]
