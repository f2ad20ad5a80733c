"""`structperc tag` reads long inputs in chunks; a model whose features look at neighbouring sentences
(the NER `doc` window) still tags every chunk as one pass would: the chunk's neighbours come along as
context (`structperc.predict.in_context`, `structperc.predict.tag_in_context`)."""
from __future__ import annotations

import io

from testkit import DOC_TRAIN

from structperc import Tagger
from structperc.commands import streaming
from structperc.features.gazetteer import DOC_WINDOW, document_gap


def _text() -> str:
    sents = []
    for i in range(40):
        name = "Zor" + "abcdefghijklmnopqrstuvwxyz"[i % 26] + "ano" * (1 + i // 26)
        sents += [["Víctor", name, "habló"]] + [["ya", "luego", "vino"]] * 7 + [["Ayer", name, "vino"]] \
            + [["ya", "luego", "vino"]] * 2
    return "".join("\n".join(s) + "\n\n" for s in sents)


def _tag(model, path, **options) -> str:
    out = io.StringIO()
    streaming.tag_files(model, [str(path)], out, **options)
    return out.getvalue()


def test_chunks_see_their_neighbours(tmp_path):
    words = [[w for w, _ in s] for s in DOC_TRAIN]
    tags = [[t for _, t in s] for s in DOC_TRAIN]
    Tagger(task="ner", columns=["word", "ner"], template=["?gaz[0]", "doc[0]", "bias"], epochs=5,
           seed=0).fit(words, tags).save(tmp_path / "doc")
    assert document_gap(Tagger.load(tmp_path / "doc").features_.columns) == DOC_WINDOW
    path = tmp_path / "doc.txt"
    path.write_text(_text(), encoding="utf-8")
    one_pass = _tag(tmp_path / "doc", path, sentences=10_000, marginals=True)
    for size in (1, 7, 13, 25, 400):
        assert _tag(tmp_path / "doc", path, sentences=size, marginals=True) == one_pass, size
    # the context matters here: each chunk tagged alone gives other tags
    model = Tagger.load(tmp_path / "doc")
    sents = [s.split("\n") for s in _text().strip("\n").split("\n\n")]
    alone = [t for k in range(0, len(sents), 7) for t in model.predict(sents[k:k + 7])]
    assert alone != model.predict(sents)


def test_two_stage_chunks_see_both_windows(tmp_path):
    # the tmd column summarises first-stage tags that read the doc window: context of twice the window
    words = [[w for w, _ in s] for s in DOC_TRAIN]
    tags = [[t for _, t in s] for s in DOC_TRAIN]
    Tagger(task="ner", columns=["word", "ner"], template=["?gaz[0]", "doc[0]", "w[0]", "bias"], epochs=5, seed=0,
           two_stage=True).fit(words, tags).save(tmp_path / "two")
    model = Tagger.load(tmp_path / "two")
    assert model.template_lines_[-1] == "tmd[0]" and document_gap(model.features_.columns) == 2 * DOC_WINDOW
    path = tmp_path / "doc.txt"
    path.write_text(_text(), encoding="utf-8")
    one_pass = _tag(tmp_path / "two", path, sentences=10_000)
    for size in (1, 13, 45):
        assert _tag(tmp_path / "two", path, sentences=size) == one_pass, size


def test_a_chunk_gets_the_window_around_it_from_its_neighbours_and_the_context_given():
    """`in_context` (the parts of `structperc.dask` give it the sentences before and after them): each
    chunk gets exactly the `gap` sentences either side of it, from the chunks and the context alike."""
    from itertools import accumulate
    from types import SimpleNamespace

    from structperc.io.corpus import Corpus
    from structperc.predict import in_context

    def corpus(names):
        return Corpus.from_sentences([[n] for n in names]) if names else None

    def names(c):
        return [s[0] for s in c.sentences("word")] if c is not None else []

    before, after, sizes = ["b1", "b2", "b3"], ["a1", "a2", "a3"], [1, 2, 0, 1, 3]
    flat = [f"s{i}" for i in range(sum(sizes))]
    cuts = [0, *accumulate(sizes)]
    chunks = [SimpleNamespace(corpus=corpus(flat[cuts[j]:cuts[j + 1]]) or Corpus.from_sentences([]))
              for j in range(len(sizes))]
    whole = before + flat + after
    for gap in (1, 2, 4):
        got = [(names(left), names(c.corpus), names(right))
               for left, c, right in in_context(iter(chunks), gap, corpus(before), corpus(after))]
        want = [(whole[max(0, 3 + a - gap):3 + a], flat[a:b], whole[3 + b:3 + b + gap])
                for a, b in zip(cuts[:-1], cuts[1:])]
        assert got == want, gap
    assert [(left, right) for left, _, right in in_context(chunks, 0, corpus(before), corpus(after))] == \
        [(None, None)] * len(chunks)


def test_documents_are_kept_apart_by_the_gap_after_sentences_only():
    """`apart`: `gap` empty sentences before each document that has sentences before it (none before the
    first sentences, whatever empty documents come first)."""
    from structperc.predict import apart

    s1, s2, s3 = ["a"], ["b", "c"], ["d"]
    assert apart([[s1], [], [s2, s3], []], 2) == ([s1, [], [], [], [], s2, s3, [], []], [0, 3, 5, 9])
    assert apart([[], [s1], [s2]], 1) == ([s1, [], s2], [0, 0, 2])
    assert apart([[s1], [s2]], 0) == ([s1, s2], [0, 1])
