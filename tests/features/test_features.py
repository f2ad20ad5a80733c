"""FeatureIndex: attribute ids computed by hand, sentence-edge padding, pruning, names, persistence.

How ids are made (see structperc.features.index): every atom has a vocabulary that starts with
__BOS__ = 0 and __EOS__ = 1, then values in order of first appearance; a template's key is the
mixed-radix number of its parts' codes (radix = vocabulary size); a template's attribute ids are
its offset plus the rank of the key among the template's sorted distinct keys.
"""
from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from structperc.errors import InputError
from structperc.features.index import FeatureIndex
from structperc.features.templates import parse_templates
from structperc.io.corpus import Corpus


def _fi(lines, min_count=1):
    return FeatureIndex(parse_templates(lines), min_count)


def test_hand_computed_ids_two_atoms():
    c = Corpus.from_sentences([["The", "cat"], ["the"]])
    fi = _fi(["w[0]", "lower(w[-1])|w[0]"])
    f = fi.fit_transform(c)
    # atom word:        __BOS__ 0, __EOS__ 1, The 2, cat 3, the 4        (radix 5)
    # atom lower(word): __BOS__ 0, __EOS__ 1, the 2, cat 3               (radix 4)
    # w[0]: keys 2, 3, 4 -> ranks 0, 1, 2 (offset 0)
    # lower(w[-1])|w[0]: key = lower_code * 5 + word_code
    #   The: BOS(0)*5 + The(2) = 2;  cat: the(2)*5 + cat(3) = 13;  the (2nd sentence): BOS*5 + 4 = 4
    #   sorted keys [2, 4, 13] -> ranks 0, 2, 1 -> plus offset 3 -> 3, 5, 4
    assert f.state.tolist() == [[0, 3], [1, 5], [2, 4]]
    assert f.state.dtype == np.int32
    assert f.trans.shape == (3, 0)
    assert f.sent_ptr.tolist() == [0, 2, 3]
    assert fi.vocabs == [["__BOS__", "__EOS__", "The", "cat", "the"], ["__BOS__", "__EOS__", "the", "cat"]]
    assert fi.radix == [[5], [4, 5]]
    assert [k.tolist() for k in fi.keys] == [[2, 3, 4], [2, 4, 13]]
    assert fi.n_state_attributes == 6 and fi.n_transition_attributes == 0
    assert fi.columns == ["word"]


def test_bos_eos_padding_does_not_leak_across_sentences():
    c = Corpus.from_sentences([["a", "b"], ["b"]])
    fi = _fi(["w[-1]|w[0]", "w[1]"])
    f = fi.fit_transform(c)
    # word vocab: BOS 0, EOS 1, a 2, b 3 (radix 4)
    # w[-1]|w[0]: (BOS,a)=0*4+2=2, (a,b)=2*4+3=11, (BOS,b)=0*4+3=3 (not (b,b)=15: no leak)
    #   sorted [2, 3, 11] -> ids 0, 2, 1
    # w[1]: a->b=3, b->EOS=1, b->EOS=1 (not the next sentence's token) -> sorted [1, 3] -> 1, 0, 0
    #   plus offset 3 -> 4, 3, 3
    assert f.state.tolist() == [[0, 4], [2, 3], [1, 3]]
    assert fi.attribute_name(0) == "w[-1]|w[0]=__BOS__|a"
    assert fi.attribute_name(1) == "w[-1]|w[0]=__BOS__|b"
    assert fi.attribute_name(2) == "w[-1]|w[0]=a|b"
    assert fi.attribute_name(3) == "w[1]=__EOS__"
    assert fi.attribute_name(4) == "w[1]=b"


def test_far_offsets_and_chinese():
    fi = _fi(["c[-2]", "c[2]"])
    c = Corpus.from_sentences([["北", "京", "欢"]], token_column="char")
    f = fi.fit_transform(c)
    # char vocab: BOS 0, EOS 1, 北 2, 京 3, 欢 4
    # c[-2]: BOS, BOS, 北 -> keys 0, 0, 2 -> sorted [0, 2] -> 0, 0, 1
    # c[2]: 欢, EOS, EOS -> keys 4, 1, 1 -> sorted [1, 4] -> 1, 0, 0 -> plus offset 2 -> 3, 2, 2
    assert f.state.tolist() == [[0, 3], [0, 2], [1, 2]]
    assert [fi.attribute_name(i) for i in range(4)] == ["c[-2]=__BOS__", "c[-2]=北", "c[2]=__EOS__",
                                                         "c[2]=欢"]


def test_same_and_bias():
    c = Corpus.from_sentences([["哈", "哈", "笑"]], token_column="char")
    fi = _fi(["same(c[0],c[-1])", "bias"])
    f = fi.fit_transform(c)
    # same: codes 0 no, 1 yes, 2 outside the sentence; keys: 2 (no c[-1]), 1 (哈=哈), 0 (笑≠哈)
    #   sorted [0, 1, 2] -> ids 2, 1, 0; bias: one key 0 -> id 3 for every token
    assert f.state.tolist() == [[2, 3], [1, 3], [0, 3]]
    assert [fi.attribute_name(i) for i in range(4)] == [
        "same(c[0],c[-1])=no", "same(c[0],c[-1])=yes", "same(c[0],c[-1])=none", "bias"]


def test_unseen_values_get_minus_one_at_transform():
    fi = _fi(["w[0]", "lower(w[-1])|w[0]"])
    fi.fit_transform(Corpus.from_sentences([["The", "cat"], ["the"]]))
    f = fi.transform(Corpus.from_sentences([["cat", "dog"], ["The"], ["the", "cat"]]))
    # ids from test_hand_computed_ids_two_atoms: w[0] The 0, cat 1, the 2;
    # lower|w: (BOS,The) 3, (BOS,the) 4, (the,cat) 5
    # cat at sentence start: w[0]=1, (BOS,cat) unseen -> -1; dog unseen everywhere -> -1, -1
    # the, cat: (BOS,the) 4, then (the,cat) 5
    assert f.state.tolist() == [[1, -1], [-1, -1], [0, 3], [2, 4], [1, 5]]


def test_transform_of_training_data_equals_fit_transform():
    c = Corpus.from_sentences([["a", "b", "a"], ["b", "c"]], extra={"pos": [["X", "Y", "X"], ["Y", "Z"]]})
    fi = _fi(["w[0]", "w[-1]|pos[0]", "shape(w[1])|pos[-2]", "bias", "y[-1]|y[0]|pos[0]"])
    fitted = fi.fit_transform(c)
    again = fi.transform(c)
    assert np.array_equal(fitted.state, again.state)
    assert np.array_equal(fitted.trans, again.trans)
    with pytest.raises(RuntimeError):
        fi.fit_transform(c)
    with pytest.raises(RuntimeError):
        _fi(["w[0]"]).transform(c)


def test_min_count_pruning():
    c = Corpus.from_sentences([["a", "b", "a", "c", "a", "c"]])
    fi = _fi(["w[0]", "w[-1]"], min_count=2)
    f = fi.fit_transform(c)
    # w[0]: a 3x, b 1x, c 2x -> keep a (key 2), c (key 4) -> ids a 0, c 1, b -1
    # w[-1]: BOS 1x, a 3x (before b, c, c), b 1x, c 1x -> keep only a (key 2) -> id 2
    assert f.state[:, 0].tolist() == [0, -1, 0, 1, 0, 1]
    assert f.state[:, 1].tolist() == [-1, 2, -1, 2, -1, 2]
    assert fi.n_state_attributes == 3


def test_a_templates_own_count_cuts_its_attributes_alone():
    c = Corpus.from_sentences([["a", "b", "a", "c", "a", "c"]])
    fi = _fi(["w[0]@2", "w[-1]"])
    f = fi.fit_transform(c)
    # w[0]@2: a 3x, b 1x, c 2x -> keep a, c -> ids 0, 1 (b -1)
    # w[-1], no count: BOS (key 0), a (2), b (3), a, c (4), a -> ranks 0 1 2 1 3 1, offset 2
    assert f.state[:, 0].tolist() == [0, -1, 0, 1, 0, 1]
    assert f.state[:, 1].tolist() == [2, 3, 4, 3, 5, 3]
    again = FeatureIndex.from_state(fi.templates, *fi.state_dict())
    assert [t.min_count for t in again.templates] == [2, 1]
    assert np.array_equal(again.transform(c).state, f.state)
    # the larger of the run's min_count and the template's own count holds
    f3 = _fi(["w[0]@2", "w[-1]"], min_count=3).fit_transform(c)
    assert f3.state[:, 0].tolist() == [0, -1, 0, -1, 0, -1]    # a alone is seen 3 times
    assert f3.state[:, 1].tolist() == [-1, 1, -1, 1, -1, 1]    # a (3x) alone, after w[0]'s one id
    assert _fi(["w[0]@3"]).fit_transform(c).state[:, 0].tolist() == [0, -1, 0, -1, 0, -1]


def test_min_count_can_empty_a_template():
    c = Corpus.from_sentences([["a", "b"]])
    fi = _fi(["w[0]", "bias"], min_count=2)
    f = fi.fit_transform(c)
    # w[0]: each value once -> nothing kept; bias: key 0 twice -> id 0
    assert f.state.tolist() == [[-1, 0], [-1, 0]]
    assert fi.attribute_name(0) == "bias"


def test_transition_templates_go_to_trans():
    c = Corpus.from_sentences([["a", "b"]], extra={"pos": [["DT", "NN"]]})
    fi = _fi(["w[0]", "y[-1]|y[0]|pos[0]", "pos[0]", "y[-1]|y[0]|pos[-1]|pos[0]"])
    f = fi.fit_transform(c)
    # state: w[0] a 0, b 1; pos[0] (pos vocab BOS 0, EOS 1, DT 2, NN 3) DT 2, NN 3
    assert f.state.tolist() == [[0, 2], [1, 3]]
    # trans: y|pos[0]: DT 0, NN 1; y|pos[-1]|pos[0]: (BOS,DT)=0*4+2=2, (DT,NN)=2*4+3=11 -> 2, 3
    assert f.trans.tolist() == [[0, 2], [1, 3]]
    assert fi.n_state_attributes == 4 and fi.n_transition_attributes == 4
    assert [t.name for t in fi.transition_templates] == ["y[-1]|y[0]|pos[0]", "y[-1]|y[0]|pos[-1]|pos[0]"]
    assert fi.attribute_name(3, transition=True) == "y[-1]|y[0]|pos[-1]|pos[0]=DT|NN"
    assert fi.attribute_name(0, transition=True) == "y[-1]|y[0]|pos[0]=DT"


def test_missing_column_raises_input_error():
    fi = _fi(["w[0]", "pos[0]"])
    with pytest.raises(InputError, match="unknown column 'pos'"):
        fi.fit_transform(Corpus.from_sentences([["a"]]))


def test_state_dict_round_trip_through_json():
    train = Corpus.from_sentences([["The", "cat", "sat"], ["北京", "欢迎", "你"]],
                                  extra={"pos": [["DT", "NN", "VBD"], ["NR", "VV", "PN"]]})
    lines = ["w[0]", "lower(w[-1])|w[0]", "suffix2(w[0])|pos[1]", "same(w[0],w[-1])", "bias",
             "y[-1]|y[0]|pos[0]"]
    fi = _fi(lines, min_count=1)
    fi.fit_transform(train)
    meta, arrays = fi.state_dict()
    meta = json.loads(json.dumps(meta))          # what a model file stores
    back = FeatureIndex.from_state(parse_templates(lines), meta, arrays)
    test = Corpus.from_sentences([["the", "cat", "ran"], ["北京", "你"]],
                                 extra={"pos": [["DT", "NN", "VBD"], ["NR", "PN"]]})
    a, b = fi.transform(test), back.transform(test)
    assert np.array_equal(a.state, b.state) and np.array_equal(a.trans, b.trans)
    assert (a.state >= 0).any() and (a.state < 0).any()      # both known and unknown attributes
    assert [back.attribute_name(i) for i in range(back.n_state_attributes)] == \
        [fi.attribute_name(i) for i in range(fi.n_state_attributes)]


def test_from_state_rejects_other_templates():
    fi = _fi(["w[0]"])
    fi.fit_transform(Corpus.from_sentences([["a"]]))
    meta, arrays = fi.state_dict()
    with pytest.raises(ValueError):
        FeatureIndex.from_state(parse_templates(["lower(w[0])"]), meta, arrays)


def test_prune_renumbers_densely():
    c = Corpus.from_sentences([["a", "b", "c"]])
    fi = _fi(["w[0]", "w[1]"])
    fi.fit_transform(c)
    # w[0]: keys a 2, b 3, c 4 -> ids 0, 1, 2; w[1]: keys EOS 1, b 3, c 4 -> ids 3, 4, 5
    fi.prune(np.array([True, False, True, True, False, True]), np.zeros(0, bool))
    assert fi.n_state_attributes == 4
    f = fi.transform(c)
    # kept: w[0] a -> 0, c -> 1; w[1] EOS -> 2, c -> 3 (b dropped from both)
    # tokens: a -> (0, next b dropped -1); b -> (-1, next c 3); c -> (1, EOS 2)
    assert f.state.tolist() == [[0, -1], [-1, 3], [1, 2]]


_WORDS = st.sampled_from(["a", "b", "The", "北京", "你", "naïve", "１２", "x|y"])


@settings(max_examples=80, deadline=None)
@given(st.lists(st.lists(_WORDS, min_size=1, max_size=5), min_size=1, max_size=4))
def test_attribute_names_decode_the_token_context(sents):
    """The name of each token's attribute spells out the values the template read there."""
    c = Corpus.from_sentences(sents)
    fi = _fi(["w[-1]|w[0]", "lower(w[1])"])
    f = fi.fit_transform(c)
    assert f.state.min() >= 0 and f.state.max() < fi.n_state_attributes
    t = 0
    for s in sents:
        for i, w in enumerate(s):
            prev = s[i - 1] if i > 0 else "__BOS__"
            nxt = s[i + 1].lower() if i + 1 < len(s) else "__EOS__"
            assert fi.attribute_name(int(f.state[t, 0])) == f"w[-1]|w[0]={prev}|{w}"
            assert fi.attribute_name(int(f.state[t, 1])) == f"lower(w[1])={nxt}"
            t += 1
    # equal contexts <-> equal ids
    names = [fi.attribute_name(int(i)) for i in f.state[:, 0]]
    for i in range(len(names)):
        for j in range(len(names)):
            assert (names[i] == names[j]) == (f.state[i, 0] == f.state[j, 0])
