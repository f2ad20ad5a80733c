"""Temperature calibration of the perceptron's scores on the tagging lattice.

The averaged perceptron is trained to rank paths, not to give likelihoods: exp(score) normalised over
the lattice is a distribution, but its sharpness is arbitrary (it grows with the number of updates).
Temperature scaling (Guo, Pleiss, Sun & Weinberger 2017, "On calibration of modern neural networks",
section 4.2; Platt 1999 with one parameter) fixes that with one number τ: p(y) ∝ exp(s(y) / τ). τ
keeps every ranking (Viterbi and k-best are unchanged) and is fitted on held-out data by minimising
the negative log-likelihood of the gold tags under the token marginals, a smooth 1-D problem solved
by bounded Brent search on log τ (`scipy.optimize.minimize_scalar`).

The objective is the *token* NLL, −Σ_t log p(y_t = gold_t), because the confidence structperc reports
is the token marginal of the predicted tag; the path NLL (the CRF likelihood) would calibrate whole-path
probabilities instead and is dominated by long sentences.
"""
from __future__ import annotations

import math

import numpy as np

from structperc.decode.marginals import marginals
from structperc.features.index import Features
from structperc.model.weights import Weights

#: Search range of τ. Averaged-perceptron scores are sums of a few dozen weights of order one, so
#: sensible temperatures lie in [0.1, 100]; the range leaves a decade either side.
BOUNDS = (0.1, 1e4)
#: Floor of a gold tag's probability in the NLL: a tag the model forbids (probability 0) counts as
#: this, so one impossible token cannot make every temperature infinitely bad.
FLOOR = 1e-12


def token_nll(weights: Weights, feats: Features, gold: np.ndarray, temperature: float,
              allowed: np.ndarray | None = None) -> float:
    """Mean −log p(y_t = gold_t) over the tokens whose gold label id is ≥ 0 (−1: a tag the model
    does not know, left out)."""
    return nll_of(marginals(weights, feats, temperature, allowed=allowed)[0], gold)


def nll_of(probs: np.ndarray, gold: np.ndarray) -> float:
    """Mean −log ``probs[t, gold_t]`` over the tokens whose gold label id is ≥ 0 (token marginals
    already computed: a report that also needs the confidences computes them once)."""
    known = np.flatnonzero(gold >= 0)
    if not len(known):
        return 0.0
    p = probs[known, gold[known]]
    return float(-np.log(np.maximum(p, FLOOR)).mean())


def fit_temperature(weights: Weights, feats: Features, gold: np.ndarray,
                    allowed: np.ndarray | None = None,
                    bounds: tuple[float, float] = BOUNDS) -> float:
    """The τ in ``bounds`` minimising `token_nll` on held-out tokens with gold label ids ``gold``
    (int, shape (n_tokens,), −1 where unknown)."""
    weights.check_first_order("calibrated temperatures")
    from scipy.optimize import minimize_scalar

    gold = np.asarray(gold)
    if gold.shape != (int(feats.sent_ptr[-1]),):
        raise ValueError(f"gold has shape {gold.shape}; the data has {int(feats.sent_ptr[-1])} tokens")
    if not (gold >= 0).any():
        return 1.0
    lo, hi = math.log(bounds[0]), math.log(bounds[1])
    result = minimize_scalar(lambda u: token_nll(weights, feats, gold, math.exp(u), allowed),
                             bounds=(lo, hi), method="bounded", options={"xatol": 1e-3})
    return float(math.exp(result.x))
