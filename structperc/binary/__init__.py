"""Binary perceptrons and their convergence theory.

Four estimators share one training engine (:mod:`structperc.binary._engine`):

* :class:`Perceptron` -- Rosenblatt's primal perceptron;
* :class:`DualPerceptron` -- the same in dual form, with kernels;
* :class:`MarginPerceptron` -- updates until every point has margin ``k rho``;
* :class:`LiftedPerceptron` -- converges on non-separable data by lifting
  ``x_i -> (x_i, A e_i)``, explicitly or through the Gram matrix.

:mod:`structperc.binary.bounds` computes the bounds they are tested against
(Novikoff's ``r^2 / rho^2``, the margin and lifting bounds, the hard-margin
``rho*``).  The ``structperc binary`` command lives in
:mod:`structperc.binary.cli`.

Examples
--------
>>> import numpy as np
>>> from structperc.binary import Perceptron, bounds
>>> X, y = np.eye(3), np.array([1, -1, 1])
>>> clf = Perceptron(fit_intercept=False, random_state=0).fit(X, y)
>>> r, rho, bound = bounds.novikoff(X, y, y / np.sqrt(3))
>>> clf.n_updates_, round(bound, 9)
(3, 3.0)
"""
from structperc.binary import bounds, gram, transforms
from structperc.binary._engine import ConvergenceWarning
from structperc.binary._validation import NotFittedError
from structperc.binary.dual import DualPerceptron
from structperc.binary.lifting import LiftedPerceptron
from structperc.binary.margin import MarginPerceptron
from structperc.binary.perceptron import Perceptron
from structperc.binary.transforms import homogeneous, lift

__all__ = [
    "ConvergenceWarning",
    "DualPerceptron",
    "LiftedPerceptron",
    "MarginPerceptron",
    "NotFittedError",
    "Perceptron",
    "bounds",
    "homogeneous",
    "gram",
    "lift",
    "transforms",
]
