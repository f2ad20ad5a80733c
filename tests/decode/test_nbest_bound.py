"""The k-best lists' cost and bound (issue 28, item 6): the compiled list Viterbi's work grows linearly
in k (a deterministic count of its heap operations, not a timing), its lists stay those of brute
force and of the numpy twin for k far beyond the labels (ties included), and every face refuses a k
above `structperc.decode.nbest.MAX_K` in one line; `predict.k_best` converts all paths at once to the
same tags as one path at a time; a streaming face's chunks shrink for large k with the same output."""
from __future__ import annotations

import io
import warnings

import numpy as np
import pytest
from test_marginals import featurize
from test_nbest import _VALUES, COLUMNS, NEG, ranking
from test_nbest_kernels import AOT, KERNELS, kernel_inputs, run_kernel
from testkit import SAMPLE_TEST, SAMPLE_TRAIN, assert_clean_error, first_sentences, run

from structperc import predict
from structperc.decode import nbest as nbest_module
from structperc.decode.marginals import path_log_probs
from structperc.decode.nbest import MAX_K, check_k, nbest, nbest_batch, nbest_chunk
from structperc.decode.nbest_kernels import nbest_corpus, nbest_counted
from structperc.errors import InputError
from structperc.features.instances import data_tags


def lattice(T=28, L=40, seed=0):
    """One sentence of T tokens over L labels: float32 scores, a third of the transitions forbidden."""
    rng = np.random.default_rng(seed)
    states = [rng.normal(scale=2, size=(T, L)).astype(np.float32)]
    trans = rng.normal(size=(L + 1, L)).astype(np.float32)
    trans[rng.random(trans.shape) < 0.3] = NEG
    return kernel_inputs(states, trans, np.zeros(L))


def work(args, k):
    """The kernel's operation count for k paths, and its lists."""
    n, L = int(args[2][-1]), args[6].shape[1]
    ids = np.empty((k, n), dtype=np.int32)
    scores = np.empty((len(args[2]) - 1, k))
    count = np.zeros(1, dtype=np.int64)
    nbest_counted(*args, np.zeros((0, L), dtype=np.bool_), np.int64(k), ids, scores, count)
    return int(count[0]), ids, scores


def test_work_grows_linearly_in_k():
    """28 tokens, 40 labels: the heap operations are at most T·L² (every cell's first candidates) plus
    2T + 1 per path of the list (a final-heap step and one push and pop per position); four times
    the paths cost less than eight times the work (merging full lists of k in every cell: k²)."""
    T, L = 28, 40
    args = lattice(T, L)
    counts = {}
    for k in (500, 2000, 8000):
        counts[k], ids, scores = work(args, k)
        assert counts[k] <= T * L * L + (2 * T + 1) * k, (k, counts[k])
        assert (scores[0] > NEG).all() and (scores[0, :-1] >= scores[0, 1:]).all()
        assert len({tuple(p) for p in ids.tolist()}) == k                   # k distinct paths
    assert counts[8000] < 8 * counts[2000] and counts[2000] < 8 * counts[500]
    assert counts[8000] - counts[2000] < 6 * (counts[2000] - counts[500])  # linear beyond the first entries


def test_large_k_equals_the_numpy_twin():
    """k = 2,000 on a 12-token, 40-label sentence: the lazy kernel's list equals the numpy twin's (full
    lists in every cell), bit for bit; the AOT build, when current, equals the JIT."""
    args = lattice(12, 40, seed=1)
    _, ids, scores = work(args, 2000)
    state = args[5].reshape(12, 40)[None]
    paths, best = nbest_batch(state, args[6], args[8], None, 2000)
    np.testing.assert_array_equal(ids, paths[0])
    np.testing.assert_array_equal(scores, best)
    if AOT is not None:
        aot_ids, aot_scores = run_kernel(AOT, args, 2000)
        np.testing.assert_array_equal(aot_ids, ids)
        np.testing.assert_array_equal(aot_scores, scores)


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("shared", [True, False])
def test_every_path_of_a_long_sentence_in_brute_force_order(kernel, shared):
    """3 labels, 8 tokens, dyadic scores (many exact ties), forbidden moves and labels: k past every
    path (6,561) lists them all in brute force's order, ties included; k = 700 its prefix."""
    rng = np.random.default_rng(7 if shared else 8)
    L, T = 3, 8
    states = [rng.choice(_VALUES, (T, L))]
    if shared:
        trans = rng.choice(_VALUES, (L + 1, L))
        trans[rng.random(trans.shape) < 0.1] = NEG
    else:
        trans = [rng.choice(_VALUES, (T, L + 1, L))]
        trans[0][rng.random(trans[0].shape) < 0.1] = NEG
    end = rng.choice(_VALUES, L)
    allowed = rng.random((T, L)) < 0.9
    allowed[:, 0] = True
    P, sc = ranking(np.where(allowed, states[0], NEG), trans if shared else trans[0], end)
    args = kernel_inputs(states, trans, end)
    for k in (700, L ** T + 5):
        ids, scores = run_kernel(kernel, args, k, allowed)
        m = min(k, len(sc))
        np.testing.assert_array_equal(ids[:m], P[:m])
        np.testing.assert_array_equal(scores[0, :m], sc[:m])
        assert (ids[m:] == -1).all() and (scores[0, m:] == NEG).all()


# ------------------------------------------------------------------------------ the bound
def test_check_k_and_the_chunk_of_a_streaming_face():
    assert check_k(MAX_K) == MAX_K
    with pytest.raises(InputError, match=f"--nbest {MAX_K + 1}: at most {MAX_K}"):
        check_k(MAX_K + 1, "--nbest")
    with pytest.raises(InputError, match="at least 1"):
        check_k(0)
    assert nbest_chunk(0, 20_000) == 20_000 and nbest_chunk(5, 20_000) == 20_000
    assert nbest_chunk(1000, 20_000) == nbest_module.PATHS_PER_CHUNK // 1000
    assert nbest_chunk(MAX_K, 20_000) >= 1 and nbest_chunk(3, 1) == 1
    with pytest.raises(InputError, match="--nbest"):
        nbest_chunk(MAX_K + 1, 20_000)


def test_the_decoder_refuses_k_above_the_bound(toy_tagger):
    from testkit import TOY
    feats = featurize(toy_tagger, [[t[:2] for t in s] for s in TOY])
    with pytest.raises(InputError, match=f"at most {MAX_K}"):
        nbest(toy_tagger.weights_, feats, MAX_K + 1)
    with pytest.raises(InputError, match=f"at most {MAX_K}"):
        nbest_batch(np.zeros((1, 2, 2)), np.zeros((3, 2)), np.zeros(2), None, MAX_K + 1)
    with pytest.raises(InputError, match=f"at most {MAX_K}"):
        toy_tagger.predict_nbest([[t[:2] for t in TOY[0]]], k=MAX_K + 1)


def test_the_service_limit_is_the_same_bound():
    from structperc.service.serving import Limits

    assert Limits(max_nbest=MAX_K).max_nbest == MAX_K
    with pytest.raises(InputError, match=f"max-nbest {MAX_K + 1}: at most {MAX_K}"):
        Limits(max_nbest=MAX_K + 1)


def test_the_command_line_refuses_in_one_line(tmp_path):
    """Before any work: not even the model is read."""
    r = run("tag", "--model", tmp_path / "no-model", "--nbest", MAX_K + 1, input="a\n\n")
    assert_clean_error(r, f"--nbest {MAX_K + 1}", f"at most {MAX_K}")
    pytest.importorskip("fastapi")
    r = run("serve", "--model", tmp_path / "no-model", "--max-nbest", MAX_K + 1)
    assert_clean_error(r, f"max-nbest {MAX_K + 1}", f"at most {MAX_K}")


# ------------------------------------------------------------------------------ the faces
@pytest.fixture(scope="module")
def chunker():
    from structperc import Tagger
    return Tagger.train(str(SAMPLE_TRAIN), columns=COLUMNS, epochs=2, seed=0)


def test_k_best_converts_every_path_as_one_path_at_a_time(chunker):
    """The model's IOBES labels read as the data's IOB2 tags (a conversion per sentence): all paths
    converted in one call give each path's own conversion, under an allowed mask; an empty sentence
    has its one empty path."""
    model = chunker.model_
    assert model.task.model_scheme != model.task.scheme
    feats = featurize(chunker, str(SAMPLE_TEST))
    ptr = feats.sent_ptr
    from structperc.features.index import Features
    gapped = Features(feats.state, feats.trans, np.concatenate([ptr[:3], ptr[2:]]))   # sentence 2 empty
    n, L = int(ptr[-1]), model.weights.n_labels
    mask = np.ones((n, L), dtype=bool)
    mask[ptr[4]:ptr[5], 1::2] = False                                                  # sentence 5: fewer
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lists = predict.k_best(model, gapped, 7, mask)
        tau = model.temperature
        result = nbest(model.weights, gapped, 7, allowed=mask)
        best = path_log_probs(model.weights, gapped, result.ids[0], tau, allowed=mask)
    sp = gapped.sent_ptr
    assert len(lists) == len(sp) - 1 and lists[2] == [([], 0.0, pytest.approx(1.0))]
    for s, paths in enumerate(lists):
        a, b = int(sp[s]), int(sp[s + 1])
        expected = []
        for r in range(7):
            score = float(result.scores[s, r])
            if score == NEG:
                break
            tags = data_tags(result.ids[r, a:b], np.array([0, b - a]), model.labels, model.task)
            gap = (score - float(result.scores[s, 0])) / tau
            expected.append((tags, score, float(np.exp(best[s] + min(gap, 0.0)))))
        assert paths == expected


def test_streaming_chunks_shrink_for_large_k(chunker, tmp_path, monkeypatch):
    """With 6 paths a chunk, --nbest 3 tags two sentences at a time: the same JSON lines as one chunk."""
    from structperc.commands import streaming

    model = tmp_path / "chunker"
    chunker.save(model)
    text = first_sentences(SAMPLE_TEST, 9, drop_last_column=True)
    sizes: list[int] = []
    tag_in_context = predict.tag_in_context

    def recording(model, core, *args, **kwargs):
        sizes.append(len(core))
        return tag_in_context(model, core, *args, **kwargs)

    def tagged(paths_per_chunk):
        monkeypatch.setattr(nbest_module, "PATHS_PER_CHUNK", paths_per_chunk)
        out = io.StringIO()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            streaming.tag_files(model, [io.StringIO(text)], out, nbest=3)
        return out.getvalue()

    monkeypatch.setattr(predict.documents, "tag_in_context", recording)
    whole = tagged(10 ** 9)
    assert sizes == [9]
    sizes.clear()
    assert tagged(6) == whole
    assert sizes == [2, 2, 2, 2, 1]


def test_the_kernel_is_the_counted_one():
    """`nbest_corpus` is `nbest_counted` with the count thrown away: the same lists."""
    args = lattice(10, 12, seed=3)
    _, ids, scores = work(args, 300)
    got = run_kernel(nbest_corpus, args, 300)
    np.testing.assert_array_equal(got[0], ids)
    np.testing.assert_array_equal(got[1], scores)
