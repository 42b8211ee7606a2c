from processors.tfidf import TfIdf, combine, cosine
from processors.tokens import term_counts, terms


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
    assert round(cosine(combine([(1.0, a), (1.0, a)]), a), 6) == 1.0
