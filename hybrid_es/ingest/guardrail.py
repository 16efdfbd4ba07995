"""The guardrail on generated context headers (seed 002): a header may situate a chunk only with
what its parent document says. A header that introduces a named entity, identifier or number that
the document does not contain is rejected, and the caller falls back to the extractive header.

Both texts are NFKC-normalised first (full-width letters and digits read as ASCII ones, half-width
katakana as full-width ones). What is checked (a "candidate"), wherever it stands in the header: a
sentence's first word, after ``(``, a quote or a colon included.

- Latin-script tokens, checked as whole words, case-insensitively:

  - every token with a digit (``KYO-H12``, ``Q3``, ``2025``, ``42.1``, ``31,500``);
  - every capitalised token (``Globex``, ``Hilton``, ``Zürich``), except the words of
    :data:`STOP_WORDS`: ordinary words that English capitalises at a sentence start or after a
    label (``This``, ``The``, ``Context:``, ``Describes``), which are never names;
  - every all-capitals token of two letters or more (``ACME``, ``JPY``; a stop word written in
    capitals is checked too: ``IT`` may be a department);
  - code names: CamelCase, snake_case, dotted (``differential.rs``; not ``e.g.``, whose parts
    are single letters) and ``::`` paths, whatever their case.

- CJK text (Chinese, Japanese) has no capitals, so names are found by shape:

  a. a katakana run of two characters or more (``ヒルトン``, ``ヒルトン・ホテル``), except the
     few of :data:`KATAKANA_STOP_WORDS` (``チャンク``, ``セクション``: the header's own words),
     must occur in the document;
  b. a name ending in an organisation, place or person suffix of :data:`CJK_NAME_SUFFIXES`
     (``公司``, ``酒店``, ``银行``, ``市``, ``株式会社``, ``先生`` ...): the name is the two to
     four CJK characters before the suffix, cut after the last function character among them
     (hiragana, or one of :data:`CJK_FUNCTION_CHARS` such as 的, 该, 由, 这, 家); fewer than
     two characters left is no name (``该酒店``, ``这家公司``). Where the name starts is a
     guess, so it passes when the document has the suffix after the name's last two characters
     or more (``出自希尔顿酒店`` needs ``尔顿酒店``, ``希尔顿酒店`` or ``自希尔顿酒店``). A
     one-character suffix (``市``, ``省``, ``区``, ``国``, ``県``) ends a name only at the end
     of the run or before a particle of :data:`CJK_NAME_FOLLOWERS`, so ``市场`` (market) and
     ``国家`` are no names;
  c. text in CJK quotation or title marks (``「」``, ``『』``, ``《》``, and ``“”`` around text
     with a CJK character; English quotes are checked word by word) must occur in the document.

  Whitespace and ``・`` are ignored in these comparisons. Digits inside CJK text are Latin tokens
  (``第3条`` checks ``3``). Anything else in CJK text, such as the paraphrase
  本段介绍了该合同的价格条款, is not checked.

A Latin candidate passes when the document or one of the ``allowed`` terms (its title, path)
contains it: in any case; a possessive or a plural of it, or it of a plural (``Hilton's``,
``Hiltons``); a hyphenated or slashed name without digits when each of its checked parts does
(``Kyoto-based``; an identifier is one whole: ``KYO-H99`` is not ``KYO`` and ``H99``); a number
with or without thousands separators (``1,000`` is ``1000``), but not as part of another number
(``42`` is not in ``42.1``; a term that is more than a number may be part of a longer one:
``3-diphosphoglycerate`` is in ``2,3-diphosphoglycerate``).

Known limits: a name written in lower case (``globex``), a one-character CJK name before a
suffix (``美国``), CJK names without a suffix (``北京``), numbers in words (``三千``) and Korean
text (but for its digits) are not checked, and an invented CJK name that ends like one in the
document passes (``北京花园酒店`` where the document names ``京都花园酒店``). Ordinary CJK
compounds with a suffix that the document does not use (``五星级酒店``) are refused: a refusal
only costs the LLM header, as the extractive one replaces it. Pure.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

_QUOTE = "\u2019"  # a typographic apostrophe, as in ACME\u2019s

# Han (with 々〆〇 and the radicals), kana (with ー and ・) and Hangul: scripts without spaces
# or capitals, which the Latin rules must not glue to a neighbouring word.
_CJK = (
    "\u2e80-\u2fdf\u3005-\u3007\u3040-\u30ff\u31f0-\u31ff"
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
)
_W = rf"[^\W{_CJK}]"  # a word character of any other script
_TOKEN = re.compile(rf"[$€£¥]?{_W}(?:{_W}|[.\-:/'{_QUOTE}&]|,(?=\d))*{_W}|[$€£¥]?{_W}")
_CAMEL = re.compile(r"[a-z][A-Z]|[A-Z]{2,}[a-z]")
_CJK_RUN = re.compile(r"[\u3005-\u3007\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_KATAKANA_RUN = re.compile(r"[\u30a1-\u30fa\u30fb\u30fc]+")
_CJK_QUOTED = re.compile(
    r"「([^」]+)」|『([^』]+)』|《([^》]+)》|“([^”]*[\u3040-\u30ff\u4e00-\u9fff][^”]*)”"
)
_NUMBER = re.compile(r"\d[\d.,]*")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_IGNORED_IN_CJK = re.compile(r"[\s\u30fb]+")

MAX_HEADER_CHARS = 1200
"""A longer answer is not a succinct context (the prompt asks for 50 to 100 tokens)."""

# fmt: off
STOP_WORDS = frozenset({
    # Articles, determiners and pronouns.
    "a", "an", "the", "this", "that", "these", "those", "it", "its", "they", "their", "them", "we",
    "our", "you", "your", "he", "his", "she", "her", "i", "each", "every", "all", "both", "some",
    "any", "no", "not", "other", "another", "such",
    # Prepositions.
    "in", "on", "at", "for", "from", "to", "of", "by", "with", "about", "under", "over", "after",
    "before", "during", "between", "within", "without", "into", "through", "per", "as", "via",
    "across", "among", "along", "against", "upon",
    # Conjunctions and sentence adverbs.
    "and", "or", "but", "if", "when", "where", "which", "what", "who", "whom", "whose", "how",
    "why", "while", "although", "because", "since", "so", "then", "also", "however", "thus",
    "there", "here", "following", "regarding", "according", "additionally", "specifically",
    # What a context header talks about, and the verbs it opens with.
    "chunk", "document", "section", "context", "summary", "part", "overview", "details", "note",
    "text", "passage", "excerpt", "paragraph", "page", "describes", "explains", "covers", "lists",
    "discusses", "defines", "contains", "specifies", "outlines", "concerns", "situated", "located",
    # The labels of the extractive header (hybrid_es.ingest.contextual), so that it passes too.
    "file", "identifiers", "names", "dates", "valid", "source",
})
# fmt: on
"""Words that a capital letter does not make a name: English capitalises them at a sentence start
or after a label (``Context: ...``). Only their capitalised form is exempt (``This``, ``It``); in
capitals they are checked like any acronym. Kept small on purpose: every word here is one a
header could use as a name without being checked."""

# fmt: off
KATAKANA_STOP_WORDS = frozenset({
    "チャンク", "セクション", "ドキュメント", "テキスト", "コンテキスト",
    "ページ", "パート", "サマリー",
})
# fmt: on
"""Katakana loanwords a Japanese header uses about itself (chunk, section, document, text,
context, page, part, summary): never names. Any other katakana word must be in the document."""

# fmt: off
CJK_NAME_SUFFIXES = (
    # Chinese: organisations, places, people.
    "公司", "集团", "酒店", "饭店", "宾馆", "银行", "大学", "学院", "医院", "政府", "委员会",
    "协会", "市", "省", "县", "区", "国", "先生", "女士", "小姐",
    # Japanese.
    "株式会社", "会社", "ホテル", "旅館", "銀行", "病院", "県", "様", "氏",
)
# fmt: on
"""What ends a CJK name of an organisation, place or person (rule b of the module docstring)."""

CJK_FUNCTION_CHARS = frozenset(
    "的了在是和与及或由对向从为于被将把给跟同以"  # particles, conjunctions, prepositions
    "其该本此这那各每某之并而也就所等"  # demonstratives and adverbs
    "个位家一"  # measure words: 一家酒店, 这个公司
)
"""Chinese function characters (particles, prepositions, demonstratives, measure words): a name
before a suffix starts after the last of them (由希尔顿酒店 names 希尔顿酒店; 这家酒店 names
nothing). Hiragana counts as one too (Japanese particles)."""

CJK_NAME_FOLLOWERS = frozenset("的和与及或是为等之也")
"""After a one-character suffix (``市``, ``国``), what shows that the name ends there: one of
these particles, any hiragana, or the end of the run. Anything else makes the suffix the start of
another word (``市场``, ``国家``, ``节省了``)."""

_ONE_CHAR_SUFFIXES = frozenset(s for s in CJK_NAME_SUFFIXES if len(s) == 1)
_SUFFIXES_LONGEST_FIRST = sorted(CJK_NAME_SUFFIXES, key=len, reverse=True)
_NAME_WINDOW = 4


def _normal(token: str) -> str:
    token = re.sub(rf"['{_QUOTE}]s$", "", token)
    return token.strip(f".,;:!?'{_QUOTE}\"()[]{{}}$€£¥").lower()


def _hiragana(c: str) -> bool:
    return "\u3041" <= c <= "\u309f"


def _checked_word(bare: str) -> bool:
    """Whether a Latin-script token (currency sign removed) is a candidate (see the module
    docstring)."""
    if any(c.isdigit() for c in bare):
        return True
    stem = bare.strip(".")
    dotted = "." in stem and any(len(part) > 1 for part in stem.split("."))
    if _CAMEL.search(bare) or "_" in bare or "::" in bare or dotted:
        return True
    if len(bare) > 1 and bare.isupper():
        return True
    return bare[:1].isupper() and _normal(bare) not in STOP_WORDS


def _latin_candidates(header: str) -> list[tuple[int, str, str]]:
    """(offset, normal form, token as written) of each Latin-script candidate."""
    out: list[tuple[int, str, str]] = []
    for m in _TOKEN.finditer(header):
        bare = m.group(0).lstrip("$€£¥")
        word = _normal(bare)
        if word and _checked_word(bare):
            out.append((m.start(), word, bare))
    return out


def _suffix_names(run: str) -> list[tuple[int, str, tuple[str, ...]]]:
    """Rule b: for each suffix in ``run`` that ends a name, (offset in ``run``, the name with its
    suffix, the forms of it that pass: its last two to four characters with the suffix)."""
    out: list[tuple[int, str, tuple[str, ...]]] = []
    i = 0
    while i < len(run):
        suffix = next((s for s in _SUFFIXES_LONGEST_FIRST if run.startswith(s, i)), None)
        if suffix is None:
            i += 1
            continue
        end = i + len(suffix)
        ends_name = (
            suffix not in _ONE_CHAR_SUFFIXES
            or end == len(run)
            or run[end] in CJK_NAME_FOLLOWERS
            or _hiragana(run[end])
        )
        window = run[max(0, i - _NAME_WINDOW) : i]
        cut = max(
            (k for k, c in enumerate(window) if c in CJK_FUNCTION_CHARS or _hiragana(c)),
            default=-1,
        )
        name = window[cut + 1 :]
        if ends_name and len(name) >= 2:
            # Where the name starts is a guess (出自希尔顿酒店: 自 is no function character), so
            # any two-character tail or longer that the document has with the suffix will do.
            tails = tuple(name[-k:] + suffix for k in range(2, len(name) + 1))
            out.append((i - len(name), name + suffix, tails))
        i = end
    return out


def _cjk_candidates(header: str) -> list[tuple[int, str, tuple[str, ...]]]:
    """(offset, the candidate as written, the forms of it that pass) by rules a, b and c."""
    out: list[tuple[int, str, tuple[str, ...]]] = []
    katakana = list(_KATAKANA_RUN.finditer(header))
    for m in katakana:
        word = m.group(0).replace("\u30fb", "")
        if len(word) >= 2 and word.strip("\u30fc") and word not in KATAKANA_STOP_WORDS:
            out.append((m.start(), word, (word,)))
    for m in _CJK_RUN.finditer(header):
        for k, name, tails in _suffix_names(m.group(0)):
            start = m.start() + k
            # マリオットホテル is one katakana word, already checked whole by rule a.
            if not any(r.start() <= start and start + len(name) <= r.end() for r in katakana):
                out.append((start, name, tails))
    for m in _CJK_QUOTED.finditer(header):
        quoted = next(g for g in m.groups() if g is not None).strip()
        if quoted:
            out.append((m.start(), quoted, (quoted,)))
    return out


def _found(word: str, text: str) -> bool:
    # A Latin word must not run on into another Latin word (CJK neighbours are fine: 在Globex的),
    # nor a number into another number (42 is not in 42.1, nor 1 in 3,1). A term that is more
    # than a number may be part of a longer one (3-diphosphoglycerate of 2,3-diphosphoglycerate).
    guard = _NUMBER.fullmatch(word) is not None
    left, right = (r"(?<!\d[.,])", r"(?![.,]\d)") if guard else ("", "")
    return bool(re.search(rf"(?<!{_W}){left}{re.escape(word)}(?!{_W}){right}", text))


def _present_word(word: str, written: str, text: str, plain_numbers: str) -> bool:
    """Whether the Latin candidate ``word`` (``written`` in the header) is in ``text``; see the
    module docstring for the forms that count."""
    if _found(word, text):
        return True
    digits = any(c.isdigit() for c in word)
    if digits and _found(_THOUSANDS.sub("", word), plain_numbers):
        return True
    # A possessive or plural of a name is the name, and so is the name of a plural ("1990s").
    forms = [word + "s", word + "es"]
    forms += [word[: -len(end)] for end in ("s", "es") if word.endswith(end) and len(word) > 2]
    if any(_found(form, text) for form in forms):
        return True
    # "Kyoto-based" is about Kyoto; but an identifier is one whole (KYO-H99 is not KYO and H99).
    parts = [p for p in re.split(r"[-/]", written) if p]
    return (
        not digits
        and len(parts) > 1
        and all(
            _present_word(_normal(p), p, text, plain_numbers)
            for p in parts
            if _normal(p) and _checked_word(p)
        )
    )


def _squeeze(text: str) -> str:
    return _IGNORED_IN_CJK.sub("", text)


def novel_terms(header: str, document: str, *, allowed: Iterable[str] = ()) -> list[str]:
    """The candidates of ``header`` (see the module docstring) that neither ``document`` nor
    ``allowed`` contains, in the order they appear, each once: Latin-script ones lower-cased
    without possessive or punctuation, CJK ones as written.

    >>> novel_terms("This chunk is from ACME Corp's Q3 2025 filing.", "ACME Corp, Q3 2025 report")
    []
    >>> novel_terms("Globex owns contract KYO-H99 (Hilton).", "the contract for KYO-H12")
    ['globex', 'kyo-h99', 'hilton']
    >>> novel_terms("该合同由希尔顿酒店签订。", "京都花园酒店的供应合同")
    ['希尔顿酒店']
    """
    header = unicodedata.normalize("NFKC", header)
    text = unicodedata.normalize("NFKC", "\n".join([document, *allowed])).lower()
    plain_numbers = _THOUSANDS.sub("", text)
    squeezed = _squeeze(text)
    # By offset, so that the refusal names the terms in the order the header uses them.
    found: list[tuple[int, str, str, tuple[str, ...]]] = [
        (pos, word, written, ()) for pos, word, written in _latin_candidates(header)
    ]
    found += [(pos, word, "", forms) for pos, word, forms in _cjk_candidates(header)]
    seen: set[str] = set()
    novel: list[str] = []
    for _, word, written, forms in sorted(found, key=lambda f: f[0]):
        if word in seen:
            continue
        seen.add(word)
        present = (
            _present_word(word, written, text, plain_numbers)
            if written
            else any(_squeeze(form).lower() in squeezed for form in forms)
        )
        if not present:
            novel.append(word)
    return novel


def check_header(header: str, document: str, *, allowed: Iterable[str] = ()) -> str | None:
    """None when ``header`` may be used; otherwise why it is rejected (for the ingest report):
    empty, over :data:`MAX_HEADER_CHARS`, or introducing terms (:func:`novel_terms`, the first
    five named)."""
    if not header.strip():
        return "empty header"
    if len(header) > MAX_HEADER_CHARS:
        return f"header of {len(header)} characters (limit {MAX_HEADER_CHARS})"
    novel = novel_terms(header, document, allowed=allowed)
    if novel:
        return f"introduces {', '.join(novel[:5])} (absent from the document)"
    return None
