"""The averaged structured perceptron's epoch written the obvious way on dense numpy weights: the one
reference the compiled epochs are tested against (full labels, attribute values, partial labels, the
margin perceptron and passive-aggressive steps)."""
from __future__ import annotations

import numpy as np


def reference_viterbi(state, trans, end):
    """Plain Viterbi: ``trans`` is (T or 1, L + 1, L); ties go to the lowest label (np.argmax).
    Returns the path and its score."""
    T, L = state.shape

    def tr(t):
        return trans[t if trans.shape[0] == T else 0]
    delta = np.empty((T, L))
    back = np.zeros((T, L), np.int64)
    delta[0] = state[0] + tr(0)[L]
    for t in range(1, T):
        cand = delta[t - 1][:, None] + tr(t)[:L]
        back[t] = np.argmax(cand, axis=0)
        delta[t] = cand[back[t], np.arange(L)] + state[t]
    path = np.empty(T, np.int64)
    path[-1] = np.argmax(delta[-1] + end)
    for t in range(T - 1, 0, -1):
        path[t - 1] = back[t, path[t]]
    return path, float((delta[-1] + end)[path[-1]])


def _store(A, index, value):
    """``A[index] += value`` computed in float64 and stored in ``A``'s dtype (as compiled code does
    for float32 weights; numpy would compute a float32 array plus a Python float in float32)."""
    A[index] = A.dtype.type(float(A[index]) + value)


def reference_pa_step(state, trans, end, gold, path, X, XT, V, pairs, a, margin, C):
    """PA-I's τ = min(C, ℓ / ‖Δφ‖²), ℓ = s(ŷ) − s(y) + margin·Hamming (ŷ cost-augmented, so ``state``
    already holds the cost and the difference includes it) or + √Hamming when the margin is 0;
    ‖Δφ‖² sums each feature's signed occurrences before squaring (features keyed in the compiled
    layout's order: state pairs, then transitions, then conditioned transitions)."""
    T, L = state.shape
    A = pairs.shape[0]

    def tr(t):
        return trans[t if trans.shape[0] == T else 0]
    d, h = 0.0, 0
    occurrences: dict[int, list[float]] = {}
    for t in range(T):
        g, p = int(gold[t]), int(path[t])
        gp = L if t == 0 else int(gold[t - 1])
        pp = L if t == 0 else int(path[t - 1])
        if g != p:
            h += 1
            d += state[t, p] - state[t, g]
            for at, v in zip(X[a + t], V[a + t]):
                if at >= 0:
                    for label, sign in ((g, 1.0), (p, -1.0)):
                        if pairs[at, label]:
                            occurrences.setdefault(int(at) * L + label, []).append(sign * float(v))
        if g != p or gp != pp:
            d += tr(t)[pp, p] - tr(t)[gp, g]
            for label, prev, sign in ((g, gp, 1.0), (p, pp, -1.0)):
                occurrences.setdefault(A * L + prev * L + label, []).append(sign)
            for at in XT[a + t]:
                if at >= 0:
                    for label, prev, sign in ((g, gp, 1.0), (p, pp, -1.0)):
                        key = A * L + (L + 1) * L + (int(at) * (L + 1) + prev) * L + label
                        occurrences.setdefault(key, []).append(sign)
    d += end[path[-1]] - end[gold[-1]]
    loss = d if margin != 0 else d + np.sqrt(h)
    if not loss < np.inf:
        return C
    if loss <= 0:
        return 0.0
    norm2 = 0.0
    for key in sorted(occurrences):
        acc = 0.0
        for v in occurrences[key]:
            acc += v
        norm2 += acc * acc
    if norm2 <= 0:
        return C
    return min(C, loss / norm2)


def reference_lattice(X, XT, V, W, Wt, Wc, mask, a, b):
    """The state scores (T, L) and per-token transition scores (T, L + 1, L) of tokens ``a:b``, in
    float64: Σ value·W over the state attributes, and Wt + mask + Σ Wc over the conditioned ones."""
    T, L = b - a, Wt.shape[1]
    state = np.zeros((T, L))
    trans = np.empty((T, L + 1, L))
    for t in range(T):
        for at, v in zip(X[a + t], V[a + t]):
            if at >= 0:
                state[t] += float(v) * W[at].astype(np.float64)
        trans[t] = Wt + mask
        for at in XT[a + t]:
            if at >= 0:
                trans[t] += Wc[at]
    return state, trans


def random_sentences(rng, n_sent: int, L: int, A: int, AT: int, K: int, KT: int, max_len: int = 7):
    """Random sentences for the epoch tests: offsets (lengths 0 … max_len - 1, empty sentences
    included), state and conditioned-transition ids (-1: none) and gold labels."""
    lengths = rng.integers(0, max_len, n_sent)
    sent_ptr = np.zeros(n_sent + 1, np.int64)
    np.cumsum(lengths, out=sent_ptr[1:])
    n = int(sent_ptr[-1])
    X = rng.integers(-1, A, (n, K)).astype(np.int32)
    XT = rng.integers(-1, AT, (n, KT)).astype(np.int32)
    y = rng.integers(0, L, n).astype(np.int32)
    return sent_ptr, X, XT, y


def dense_pairs(fs, A: int, L: int) -> np.ndarray:
    """The feature set ``fs`` as a dense (A, L) bool mask: the (attribute, label) weights that exist
    (the ``pairs`` of `reference_epoch`)."""
    rows = np.repeat(np.arange(A), np.diff(fs.ptr))
    active = fs.active.astype(bool) if len(fs.active) else np.ones(len(rows), bool)
    pairs = np.zeros((A, L), bool)
    pairs[rows[active], fs.labels[active]] = True
    return pairs


def dense_weights(fs, A: int, L: int, values: np.ndarray, dtype=np.float64) -> np.ndarray:
    """The compiled epoch's weights (or sums) over the feature set ``fs`` as a dense (A, L) array, to
    compare with `reference_epoch`'s."""
    out = np.zeros((A, L), dtype)
    out[np.repeat(np.arange(A), np.diff(fs.ptr)), fs.labels] = values
    return out


def epoch_problem(draw, max_labels: int, max_attributes: int):
    """A random epoch problem for the hypothesis tests of the compiled epochs (``draw`` of an
    ``st.composite``): sentence offsets (empty sentences included), state and conditioned-transition
    ids (-1: none), gold labels, a transition mask that keeps label 0 and the gold paths allowed, and
    (A, AT, L, feature-set kind, a seeded generator)."""
    from hypothesis import strategies as st

    L = draw(st.integers(1, max_labels))
    n_sent = draw(st.integers(1, 6))     # shorter and longer than the prefetch pipeline
    K = draw(st.integers(1, 3))
    KT = draw(st.sampled_from([0, 0, 1]))
    A = draw(st.integers(1, max_attributes))
    AT = 3
    kind = draw(st.sampled_from(["all", "observed"]))
    constrained = draw(st.booleans())
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    sent_ptr, X, XT, y = random_sentences(rng, n_sent, L, A, AT, K, KT)
    mask = np.zeros((L + 1, L))
    if constrained:
        mask[rng.random((L + 1, L)) < 0.2] = -np.inf
        mask[:, 0] = 0.0                 # label 0 always reachable: every sentence has a path
        for s in range(n_sent):          # gold paths stay allowed (as a scheme's data would be)
            for t in range(sent_ptr[s], sent_ptr[s + 1]):
                mask[L if t == sent_ptr[s] else y[t - 1], y[t]] = 0.0
    return sent_ptr, X, XT, y, mask, A, AT, L, kind, rng


def reference_epoch(order, sent_ptr, X, XT, y, pairs, W, U, Wt, Ut, Wc, Uc, mask, end, c, *,
                    values=None, allowed=None, partial=None, margin=0.0, step="perceptron", C=1.0):
    """One epoch of Collins' averaged perceptron; returns (mistakes, token errors, c, skipped).

    ``pairs`` (A, L) bool: the (attribute, label) weights that exist (the feature set). ``values``
    (n_tokens, K): each state attribute's value (score v·w, update ±v). ``allowed``/``partial``: the
    latent perceptron's allowed labels per token and the sentences it fills (the best agreeing path
    is the gold one; a sentence with none is skipped). ``margin``: Viterbi on the scores plus
    ``margin`` for every non-gold label (cost-augmented decoding); ``step="pa"``: updates of size
    `reference_pa_step` instead of 1. Weights may be float32 (stored as the compiled epoch stores
    them) or float64."""
    L = Wt.shape[1]
    mistakes = token_errors = skipped = 0
    V = np.ones(X.shape) if values is None else values
    for s in order:
        a, b = sent_ptr[s], sent_ptr[s + 1]
        T = b - a
        if T == 0:
            c += 1
            continue
        state, trans = reference_lattice(X, XT, V, W, Wt, Wc, mask, a, b)
        if partial is not None and partial[s]:
            gold, score = reference_viterbi(np.where(allowed[a:b].astype(bool), state, -np.inf), trans, end)
            if score == -np.inf:
                skipped += 1
                c += 1
                continue
        else:
            gold = y[a:b]
        if margin:
            for t in range(T):
                for label in range(L):
                    if label != gold[t]:
                        state[t, label] += margin
        path, _ = reference_viterbi(state, trans, end)
        wrong = bool((path != gold).any())
        tau = 1.0
        if wrong and step == "pa":
            tau = reference_pa_step(state, trans, end, gold, path, X, XT, V, pairs, a, margin, C)
            wrong = tau > 0  # passive: no loss, no mistake
        if wrong:
            mistakes += 1
            for t in range(T):
                g, p = gold[t], path[t]
                gp = L if t == 0 else gold[t - 1]
                pp = L if t == 0 else path[t - 1]
                token_errors += int(g != p)
                if g == p and gp == pp:
                    continue
                for label, prev, sign in ((g, gp, tau), (p, pp, -tau)):
                    if g != p:
                        for at, v in zip(X[a + t], V[a + t]):
                            if at >= 0 and pairs[at, label]:
                                dv = sign * float(v)
                                _store(W, (at, label), dv)
                                _store(U, (at, label), c * dv)
                    _store(Wt, (prev, label), sign)
                    _store(Ut, (prev, label), c * sign)
                    for at in XT[a + t]:
                        if at >= 0:
                            _store(Wc, (at, prev, label), sign)
                            _store(Uc, (at, prev, label), c * sign)
        c += 1
    return mistakes, token_errors, c, skipped
