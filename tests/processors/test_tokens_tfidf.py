import math
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from processors.terms import term_counts, term_parts
from processors.tfidf import TfIdf, cosine, heaviest
from processors.tokens import (
    CJK,
    is_index_term,
    merge_terms,
    normalise,
    terms,
    token_counts,
)


def test_chinese_becomes_overlapping_bigrams_and_latin_words_stay_whole() -> None:
    assert terms("推理引擎 vLLM") == ["推理", "理引", "引擎", "vllm"]


def test_stopwords_urls_and_bare_numbers_are_not_terms() -> None:
    assert terms("the KV cache of https://arxiv.org/abs/2609.23130 in 2026") == ["kv", "cache"]


def test_identical_texts_have_cosine_one_and_disjoint_texts_zero() -> None:
    docs = [term_counts("KV cache 压缩"), term_counts("agent 评测 框架")]
    model = TfIdf(docs)
    a, b = model.vector(docs[0]), model.vector(docs[1])
    assert round(cosine(a, a), 6) == 1.0
    assert cosine(a, b) == 0.0


def _one_pass(text: str) -> list[tuple[str, int]]:
    """Index-term counts of a text the plain way, in the order a single pass finds them."""
    counts = token_counts(normalise(re.sub(r"https?://\S+", " ", text)))
    return [(t, c) for t, c in counts.items() if is_index_term(t)]


_PIECES = [
    "KV 缓存压缩", "长上下文推理", "키-값 캐시", "vLLM", "the", "and", "0.6", "3.8×", "ＫＶ　Ｃａｃｈｅ", "ﬁne",
    "e\u0301", "\u0301", "①", "½", "Σ", "σς", "İ", "https://arxiv.org/abs/2509.08315", "http://x.org/a\tb",
    "ｈｔｔｐ：／／ｘ", " ", "\n", "\r\n", "\r", "\u2028", "\t", "-", "_", "，", "a", "I",
]  # fmt: skip
_texts = st.lists(st.sampled_from(_PIECES) | st.text(max_size=6), max_size=30).map("".join)


@settings(max_examples=300, deadline=None)
@given(st.lists(_texts, max_size=6))
def test_the_counts_of_joined_texts_are_their_parts_merged_in_the_same_order(parts: list[str]) -> None:
    # Clusters are vectorised from their units' counts: a different count or order would move a cosine's last
    # bit and could change which increments a briefing chooses.
    merged = merge_terms(term_parts(p) for p in parts)
    assert list(merged.items()) == _one_pass("\n".join(parts))
    assert [list(term_counts(p).items()) for p in parts] == [_one_pass(p) for p in parts]


def _plain_vector(corpus: list[dict[str, int]], counts: dict[str, int]) -> dict[str, float]:
    """The TF-IDF vector as first written: one comprehension per step, the smoothed idf of the corpus."""
    n = len(corpus)

    def idf(term: str) -> float:
        df = sum(term in c for c in corpus)
        return math.log((n + 1) / (df + 1)) + 1.0 if df else math.log(n + 1) + 1.0

    raw = {t: (1.0 + math.log(c)) * idf(t) for t, c in counts.items() if c > 0}
    norm = math.sqrt(sum(v * v for v in raw.values()))
    return {t: v / norm for t, v in raw.items()} if norm > 0 else {}


_terms = st.sampled_from(["kv", "cache", "推理", "缓存", "vllm", "attention", "캐시", "spec", "decode", "x"])
_counts = st.dictionaries(_terms | st.text(min_size=1, max_size=3), st.integers(-1, 300), max_size=40)


@settings(max_examples=300, deadline=None)
@given(st.lists(_counts, min_size=1, max_size=5), _counts, st.integers(1, 8))
def test_vectors_cosines_and_cuts_are_the_plain_arithmetic_to_the_last_bit(
    corpus: list[dict[str, int]], counts: dict[str, int], top: int
) -> None:
    # Bit for bit, not approximately: a cosine one ulp away can cross a threshold and move an increment.
    model = TfIdf(corpus)
    vec, plain = model.vector(counts), _plain_vector(corpus, counts)
    assert list(vec.items()) == list(plain.items())
    other = _plain_vector(corpus, corpus[0])
    small, big = (other, vec) if len(vec) > len(other) else (vec, other)
    assert cosine(vec, other) == sum(v * big.get(t, 0.0) for t, v in small.items())
    # Ties among the heaviest keep their order: `kv` and `cache` of equal weight stay as the text had them.
    cut = sorted(vec.items(), key=lambda kv: -kv[1])[:top]
    norm = math.sqrt(sum(v * v for _, v in cut))
    expected = dict(vec) if len(vec) <= top else {t: v / norm for t, v in cut} if norm > 0 else {}
    assert list(heaviest(vec, top).items()) == list(expected.items())


def _plain_terms(text: str) -> list[str]:
    """`terms` as first written: every token matched, then sorted into CJK runs and words."""
    out: list[str] = []
    for m in re.finditer(rf"[{CJK}]+|[^\W_{CJK}]+", normalise(re.sub(r"https?://\S+", " ", text))):
        tok = m.group(0)
        if re.fullmatch(f"[{CJK}]+", tok):
            out.extend([tok] if len(tok) < 2 else (tok[i : i + 2] for i in range(len(tok) - 1)))
        elif is_index_term(tok):
            out.append(tok)
    return out


@settings(max_examples=300, deadline=None)
@given(_texts)
def test_the_terms_of_a_title_or_keyword_are_those_of_the_plain_tokeniser(text: str) -> None:
    # Keywords, titles and placement's stems all start here: another term would move a score or a section.
    assert terms(text) == _plain_terms(text)
