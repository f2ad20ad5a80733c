"""The one trainer interface (`structperc.train.trainer`): every trainer is ``train(data, state, options)``,
`trainer_for` picks it from the options, and the keyword faces are the same trainers bit for bit."""
from __future__ import annotations

import pytest

from structperc.features.index import FeatureIndex
from structperc.features.instances import Instances
from structperc.features.templates import parse_templates
from structperc.io.corpus import Corpus
from structperc.labels import LabelSet, transition_mask
from structperc.train.mixing import ParameterMixing, train_mixed
from structperc.train.order2 import SecondOrderPerceptron, train_perceptron_order2
from structperc.train.perceptron import Perceptron, PerceptronState, train_perceptron
from structperc.train.trainer import Mixing, Trainer, TrainOptions, Update, train, trainer_for

WORDS = [["the", "dog", "runs"], ["a", "cat", "sleeps"], ["the", "cat", "runs"], ["dogs", "run"]] * 3
TAGS = [["D", "N", "V"], ["D", "N", "V"], ["D", "N", "V"], ["N", "V"]] * 3


def _data():
    corpus = Corpus.from_sentences(WORDS, TAGS)
    labels = LabelSet(corpus.columns["tag"])
    fi = FeatureIndex(parse_templates(["w[0]", "w[-1]", "bias", "y[-1]|y[0]|w[0]"]))
    feats = fi.fit_transform(corpus)
    mask, end = transition_mask(labels.labels, "none")

    def state():
        return PerceptronState.zeros(fi.n_state_attributes, fi.n_transition_attributes, len(labels))
    return Instances(feats, labels.encode(corpus.columns["tag"])), state, mask, end


def _same(a, b):
    for x, y in ((a.sparse.values, b.sparse.values), (a.trans, b.trans), (a.cond, b.cond)):
        assert x.tobytes() == y.tobytes()


def test_the_options_choose_the_trainer():
    _, _, mask, end = _data()
    assert isinstance(trainer_for(TrainOptions(mask, end)), Perceptron)
    assert isinstance(trainer_for(TrainOptions(mask, end, order=2)), SecondOrderPerceptron)
    assert isinstance(trainer_for(TrainOptions(mask, end, mixing=Mixing(2))), ParameterMixing)
    assert isinstance(trainer_for(TrainOptions(mask, end, order=2, mixing=Mixing(2))), ParameterMixing)
    for trainer in (Perceptron(), SecondOrderPerceptron(), ParameterMixing()):
        assert isinstance(trainer, Trainer)


@pytest.mark.parametrize("update", [Update(), Update("pa", 1.0, 0.5), Update("perceptron", 2.0)])
def test_one_signature_is_the_keyword_face_bit_for_bit(update):
    data, state, mask, end = _data()
    scores: list[float] = []
    options = TrainOptions(mask, end, epochs=3, seed=4, update=update, dev_score=lambda w: scores.append(1) or 0.5)
    s1, s2 = state(), state()
    w1, e1 = train(data, s1, options)
    w2, e2 = train_perceptron(data.feats, data.y, s2, mask=mask, end=end, epochs=3, seed=4, step=update.step,
                              margin=update.margin, C=update.C, dev_score=lambda w: 0.5)
    _same(w1, w2)
    assert e1 == e2 == 1 and len(scores) == 3 and s1.c == s2.c


def test_second_order_and_mixing_through_the_interface():
    data, state, mask, end = _data()
    w, e = train(data, state(), TrainOptions(mask, end, epochs=2, seed=1, order=2))
    w2, T2, e2 = train_perceptron_order2(data.feats, data.y, state(), mask=mask, end=end, epochs=2, seed=1)
    _same(w, w2)
    assert w.order2 is not None and w.order2.tobytes() == T2.tobytes() and w2.order2 is None and e == e2
    mixed, _ = train(data, state(), TrainOptions(mask, end, epochs=2, seed=1,
                                                mixing=Mixing(2, "uniform", processes=False)))
    want, _ = train_mixed(data.feats, data.y, state(), mask=mask, end=end, epochs=2, seed=1, shards=2,
                          processes=False)
    _same(mixed, want)
    one, _ = train(data, state(), TrainOptions(mask, end, epochs=2, seed=1, mixing=Mixing(1, processes=False)))
    plain, _ = train(data, state(), TrainOptions(mask, end, epochs=2, seed=1))
    _same(one, plain)  # one shard is the plain trainer


def test_second_order_refuses_checkpoints():
    data, state, mask, end = _data()
    with pytest.raises(Exception, match="checkpoints"):
        train(data, state(), TrainOptions(mask, end, epochs=1, order=2, on_epoch_end=lambda s: None))


def test_the_reports_module_is_the_perceptrons():
    from structperc.train import perceptron, reports
    assert perceptron.EpochReport is reports.EpochReport
    assert reports.EpochReport(1, 1, 0, 0, 1, 1, 0.0).tokens_per_second == float("inf")
