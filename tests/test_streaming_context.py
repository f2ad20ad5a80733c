"""`structperc tag` reads long inputs in chunks; a model whose features look at neighbouring sentences
(the NER `doc` window) still tags every chunk as one pass would: the chunk's neighbours come along as
context (`structperc.streaming._in_context`, `structperc.inference.tag_in_context`)."""
from __future__ import annotations

import io

from testkit import DOC_TRAIN

from structperc import Tagger, streaming
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
