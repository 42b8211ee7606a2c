"""near_duplicates: shingles, signatures, similarity and window dedup on small zh and en notes."""

from __future__ import annotations

import itertools
import json
import operator
import os
import random
import subprocess
import sys
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from processors import near_duplicates as nd
from processors.near_duplicates import DuplicateOf, Fingerprint, Signature, find_duplicates, similarity
from processors.structure import read_note
from tests.processors.near_dup_samples import (
    EN_NOTE,
    EN_NOTE_EDITED,
    EN_OTHER,
    ZH_NOTE,
    ZH_NOTE_EDITED,
    ZH_OTHER,
)
from tests.processors.reference import near_duplicates as ref
from tests.processors.reference.text import normalise_text

SH = ZoneInfo("Asia/Shanghai")
T0 = datetime(2026, 9, 27, 9, 0, tzinfo=SH)
PROJECT = Path(__file__).resolve().parents[2]

# The first slots of one signature, as rensa 0.5 (algorithm v2) computes them with NUM_PERM and SEED.
PINNED = (3326066334, 3325807588, 3252617030, 272611442)


def signature(text: str) -> Signature:
    """A note's signature as the parse stage computes it: in the compiled pass over the note."""
    return read_note(text).signature


def text_hash(text: str) -> str:
    return read_note(text).text_hash


def fp(key: str, text: str, minutes: int = 0) -> Fingerprint:
    return Fingerprint(key, T0 + timedelta(minutes=minutes), text_hash(text), signature(text))


def test_cjk_runs_become_character_bigrams_and_latin_runs_words() -> None:
    assert ref.shingles("KV缓存压缩 in vLLM 0.6") == {"kv", "缓存", "存压", "压缩", "in", "vllm", "0", "6"}
    # A lone CJK character between Latin words is kept as itself.
    assert ref.shingles("A 和 B") == {"a", "和", "b"}


def test_shingles_are_taken_after_normalisation() -> None:
    assert ref.shingles("**ＫＶ　Cache**（压缩）") == ref.shingles("kv cache (压缩)")


_MARKDOWNISH = st.text(
    alphabet=st.sampled_from(list("ab Z9_*`#>|~[]-=+.\n\t\u3000ＫＶ（）压缩の한éİﬁ²")), max_size=80
)


@given(_MARKDOWNISH)
def test_shingles_equal_those_of_normalise_text(text: str) -> None:
    # shingles() skips normalise_text's noise and whitespace passes: they must never change a token.
    assert ref.shingles(text) == ref._tokens(normalise_text(text))


def test_signature_is_a_json_serialisable_digest_of_num_perm_ints() -> None:
    sig = signature(ZH_NOTE)
    assert len(sig) == nd.NUM_PERM
    assert all(isinstance(v, int) and 0 <= v < 2**32 for v in sig)
    assert tuple(json.loads(json.dumps(sig))) == sig
    assert signature(ZH_NOTE) == sig


def test_signature_does_not_depend_on_the_process_hash_seed() -> None:
    # Parse workers and the window worker are different processes: signatures must compare across them.
    code = "from processors.structure import read_note; import sys; print(list(read_note(sys.argv[1]).signature))"
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run(
        [sys.executable, "-c", code, EN_NOTE],
        cwd=PROJECT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert tuple(json.loads(out.stdout)) == signature(EN_NOTE)


def test_signature_scheme_is_pinned() -> None:
    # Stored signatures are only comparable with ones from the same scheme. If this fails, rensa, the seed
    # or the shingles changed: documents already on the topics must be re-parsed to be near-deduplicated.
    assert signature(" ".join(f"token{i}" for i in range(20)))[:4] == PINNED


def test_tiny_texts_have_no_signature() -> None:
    assert signature("见上") == ()
    assert signature("TODO: read arXiv 2609.12345 tonight") == ()
    assert signature("") == ()


def test_signatures_in_batch_equal_one_by_one() -> None:
    texts = [ZH_NOTE, "见上", EN_NOTE, "", ZH_OTHER]
    assert ref.signatures(texts) == [signature(t) for t in texts]


def test_similarity_estimates_jaccard() -> None:
    a, b = ref.shingles(ZH_NOTE), ref.shingles(ZH_NOTE_EDITED)
    exact = len(a & b) / len(a | b)
    assert similarity(signature(ZH_NOTE), signature(ZH_NOTE_EDITED)) == pytest.approx(exact, abs=0.1)
    assert similarity(signature(ZH_NOTE), signature(ZH_NOTE)) == 1.0


def test_similarity_of_empty_or_mismatched_signatures_is_zero() -> None:
    assert similarity((), ()) == 0.0
    assert similarity(signature(EN_NOTE), ()) == 0.0
    assert similarity(signature(EN_NOTE), signature(EN_NOTE)[:64]) == 0.0


@pytest.mark.parametrize("original,edited", [(ZH_NOTE, ZH_NOTE_EDITED), (EN_NOTE, EN_NOTE_EDITED)])
def test_one_sentence_changed_is_a_near_duplicate_of_the_earlier(original: str, edited: str) -> None:
    dups = find_duplicates([fp("inbox/tom/b.md", edited, 30), fp("inbox/jay/a.md", original, 0)])
    assert list(dups) == ["inbox/tom/b.md"]
    dup = dups["inbox/tom/b.md"]
    assert (dup.kept, dup.kind, dup.matched) == ("inbox/jay/a.md", "near", "inbox/jay/a.md")
    assert 0.8 <= dup.similarity < 1.0


@pytest.mark.parametrize("note,other", [(ZH_NOTE, ZH_OTHER), (EN_NOTE, EN_OTHER), (ZH_NOTE, EN_NOTE)])
def test_same_template_different_content_is_not_near(note: str, other: str) -> None:
    assert find_duplicates([fp("a", note, 0), fp("b", other, 1)]) == {}


def test_exact_duplicates_by_text_hash_keep_the_earliest() -> None:
    dups = find_duplicates([fp("c", EN_NOTE, 20), fp("b", EN_NOTE, 10), fp("a", EN_OTHER, 0)])
    assert dups == {"c": DuplicateOf(kept="b", kind="exact", similarity=1.0, matched="b")}


def test_tiny_texts_are_never_near_duplicates_of_each_other() -> None:
    items = [
        fp("a", "TODO: read arXiv 2609.12345 tonight", 0),
        fp("b", "todo - read arxiv 2609.12345 tonight!", 1),  # same words, other punctuation
        fp("c", "见上", 2),
        fp("d", "见上。", 3),
    ]
    assert find_duplicates(items) == {}
    # The same tiny text twice is still an exact duplicate.
    assert find_duplicates([fp("a", "见上", 0), fp("b", "见上", 1)])["b"].kind == "exact"


def test_the_threshold_decides() -> None:
    items = [fp("a", ZH_NOTE, 0), fp("b", ZH_NOTE_EDITED, 1)]
    assert "b" in find_duplicates(items, 0.8)
    assert find_duplicates(items, 0.99) == {}
    with pytest.raises(ValueError):
        find_duplicates(items, 0.0)


def test_same_event_time_is_ordered_by_key() -> None:
    dups = find_duplicates([fp("z", EN_NOTE_EDITED, 0), fp("a", EN_NOTE, 0)])
    assert list(dups) == ["z"] and dups["z"].kept == "a"


def test_an_exact_copy_of_a_near_duplicate_points_at_the_kept_document() -> None:
    items = [fp("a", ZH_NOTE, 0), fp("b", ZH_NOTE_EDITED, 1), fp("c", ZH_NOTE_EDITED, 2)]
    dups = find_duplicates(items)
    assert dups["b"].kept == dups["c"].kept == "a"
    assert dups["c"].kind == "near" and dups["c"].matched == "b"
    assert dups["c"].similarity == dups["b"].similarity


def test_a_document_near_only_to_a_duplicate_joins_its_group() -> None:
    # b is near a; c is near b but further from a: c is listed as a duplicate of a, through b.
    b_text = ZH_NOTE_EDITED.replace("下一步值得对比一下 SGLang 的 RadixAttention 在同样负载下的表现。", "")
    c_text = b_text.replace(
        "如果结论成立，长文档摘要和代码补全这类场景的显存压力会明显下降。", "结论待复现。"
    )
    a, b, c = fp("a", ZH_NOTE, 0), fp("b", b_text, 1), fp("c", c_text, 2)
    threshold = (similarity(a.signature, c.signature) + similarity(b.signature, c.signature)) / 2
    assert similarity(a.signature, c.signature) < threshold <= similarity(b.signature, c.signature)
    assert similarity(a.signature, b.signature) >= threshold
    dups = find_duplicates([c, a, b], threshold)
    assert dups["c"].kept == "a" and dups["c"].matched == "b"
    assert dups["c"].similarity == similarity(a.signature, c.signature)


def test_the_result_does_not_depend_on_input_order() -> None:
    items = [
        fp("inbox/jay/a.md", ZH_NOTE, 0),
        fp("inbox/tom/b.md", ZH_NOTE_EDITED, 5),
        fp("inbox/tom/c.md", ZH_NOTE, 7),
        fp("inbox/spark/d.md", EN_NOTE, 3),
        fp("inbox/flyp/e.md", EN_NOTE_EDITED, 2),
        fp("inbox/jay/f.md", ZH_OTHER, 1),
        fp("inbox/jay/g.md", "见上", 4),
        fp("inbox/tom/h.md", "见上", 6),
    ]
    expected = find_duplicates(items)
    assert expected["inbox/tom/b.md"].kept == "inbox/jay/a.md"
    assert expected["inbox/tom/c.md"].kind == "exact"
    assert expected["inbox/spark/d.md"].kept == "inbox/flyp/e.md"  # earliest kept, whichever text it has
    assert expected["inbox/tom/h.md"].kept == "inbox/jay/g.md"
    assert set(expected) == {"inbox/tom/b.md", "inbox/tom/c.md", "inbox/spark/d.md", "inbox/tom/h.md"}
    for perm in itertools.islice(itertools.permutations(items), 0, 40320, 997):
        assert find_duplicates(perm) == expected


def _random_signature(rng: random.Random) -> tuple[int, ...]:
    return tuple(rng.getrandbits(32) for _ in range(nd.NUM_PERM))


def test_lsh_keeps_a_large_window_sub_quadratic(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(3)
    items = [
        Fingerprint(f"u{i}", T0 + timedelta(seconds=i), f"u{i}", _random_signature(rng)) for i in range(4000)
    ]
    # A tight cluster of 500 near-identical documents (a writer pasting the same note over and over).
    base = _random_signature(rng)
    for i in range(500):
        sig = tuple(v if rng.random() < 0.95 else rng.getrandbits(32) for v in base)
        items.append(Fingerprint(f"c{i}", T0 + timedelta(hours=2, seconds=i), f"c{i}", sig))
    calls = [0]

    def counting(a: Sequence[int], b: Sequence[int]) -> float:
        calls[0] += 1
        return sum(map(operator.eq, a, b)) / len(a)

    monkeypatch.setattr(nd, "similarity", counting)
    dups = find_duplicates(items)
    assert set(dups) == {f"c{i}" for i in range(1, 500)}
    assert all(d.kept == "c0" for d in dups.values())
    pairs = len(items) * (len(items) - 1) // 2
    assert calls[0] < 50 * len(items) < pairs // 20


def test_signatures_of_another_scheme_fall_back_to_exact_dedup() -> None:
    # e.g. documents parsed before NUM_PERM changed: never compared slot by slot with the new ones.
    old = Fingerprint("a", T0, text_hash(ZH_NOTE), signature(ZH_NOTE)[:64])
    new = fp("b", ZH_NOTE_EDITED, 1)
    copy = Fingerprint("c", T0 + timedelta(minutes=2), text_hash(ZH_NOTE), signature(ZH_NOTE)[:64])
    assert find_duplicates([old, new, copy]) == {
        "c": DuplicateOf(kept="a", kind="exact", similarity=1.0, matched="a")
    }
