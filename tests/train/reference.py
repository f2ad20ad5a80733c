"""The averaged structured perceptron's epoch written the obvious way on dense numpy weights: the one
reference the compiled epochs are tested against (full labels, attribute values, partial labels)."""
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


def reference_epoch(order, sent_ptr, X, XT, y, pairs, W, U, Wt, Ut, Wc, Uc, mask, end, c, *,
                    values=None, allowed=None, partial=None):
    """One epoch of Collins' averaged perceptron; returns (mistakes, token errors, c, skipped).

    ``pairs`` (A, L) bool: the (attribute, label) weights that exist (the feature set). ``values``
    (n_tokens, K): each state attribute's value (score v·w, update ±v). ``allowed``/``partial``: the
    latent perceptron's allowed labels per token and the sentences it fills (the best agreeing path
    is the gold one; a sentence with none is skipped)."""
    L = Wt.shape[1]
    mistakes = token_errors = skipped = 0
    V = np.ones(X.shape) if values is None else values
    for s in order:
        a, b = sent_ptr[s], sent_ptr[s + 1]
        T = b - a
        if T == 0:
            c += 1
            continue
        state = np.zeros((T, L))
        trans = np.empty((T, L + 1, L))
        for t in range(T):
            for at, v in zip(X[a + t], V[a + t]):
                if at >= 0:
                    state[t] += float(v) * W[at]
            trans[t] = Wt + mask
            for at in XT[a + t]:
                if at >= 0:
                    trans[t] += Wc[at]
        path, _ = reference_viterbi(state, trans, end)
        if partial is not None and partial[s]:
            gold, score = reference_viterbi(np.where(allowed[a:b].astype(bool), state, -np.inf), trans, end)
            if score == -np.inf:
                skipped += 1
                c += 1
                continue
        else:
            gold = y[a:b]
        if (path != gold).any():
            mistakes += 1
            for t in range(T):
                g, p = gold[t], path[t]
                gp = L if t == 0 else gold[t - 1]
                pp = L if t == 0 else path[t - 1]
                token_errors += int(g != p)
                if g == p and gp == pp:
                    continue
                for label, prev, sign in ((g, gp, 1.0), (p, pp, -1.0)):
                    if g != p:
                        for at, v in zip(X[a + t], V[a + t]):
                            if at >= 0 and pairs[at, label]:
                                W[at, label] += sign * float(v)
                                U[at, label] += c * sign * float(v)
                    Wt[prev, label] += sign
                    Ut[prev, label] += c * sign
                    for at in XT[a + t]:
                        if at >= 0:
                            Wc[at, prev, label] += sign
                            Uc[at, prev, label] += c * sign
        c += 1
    return mistakes, token_errors, c, skipped
