"""The ``structperc binary`` command (registered by ``structperc.cli``).

A thin layer: parse the options, read the CSV (:mod:`.csvdata`), call
:func:`structperc.binary.experiment.run_experiment`, print.  Every bad input
becomes a one-line ``click.ClickException`` naming the file and, where there
is one, the line.
"""
from __future__ import annotations

from pathlib import Path

import click
import numpy as np
from click.core import ParameterSource

from structperc.binary.csvdata import DataFileError, read_labelled_csv
from structperc.binary.experiment import ALGORITHMS, ExperimentResult, run_experiment
from structperc.binary.gram import parse_kernel_spec

_NAMES = {
    "primal": "primal perceptron",
    "dual": "dual perceptron",
    "margin": "margin perceptron",
    "lifted": "lifted perceptron (implicit)",
}


def _format(result: ExperimentResult, path: Path, X: np.ndarray, y: np.ndarray, *,
            kernel: str, eta: float, seed: int, intercept: bool, shuffle: bool) -> str:
    n_pos = int((y > 0).sum())
    status = "converged" if result.converged else "not converged: max-epochs reached"
    details = ", ".join(f"{name} = {value:.6g}" for name, value in result.quantities.items())
    if result.bound is None:
        bound_line = f"bound: none ({result.note})"
    else:
        bound_line = f"bound: {result.bound:.6g} ({result.bound_name}; {details})"
    lines = [
        f"data: {path}: {X.shape[0]} samples, {X.shape[1]} features, "
        f"{n_pos} labelled +1, {X.shape[0] - n_pos} labelled -1",
        f"algorithm: {_NAMES[result.algorithm]}, kernel {kernel}, eta {eta:g}, seed {seed}, "
        f"intercept {'on' if intercept else 'off'}, shuffle {'on' if shuffle else 'off'}",
        f"updates: {result.n_updates} in {result.n_epochs} epochs ({status})",
        bound_line,
    ]
    if result.bound is not None and result.note:
        lines.append(f"note: {result.note}")
    return "\n".join(lines)


@click.command("binary")
@click.argument("csv_path", metavar="CSV", type=click.Path(path_type=Path))
@click.option("--algo", type=click.Choice(ALGORITHMS), default="primal", show_default=True,
              help="Which perceptron to train.")
@click.option("--kernel", default="linear", show_default=True,
              help="linear, poly:DEGREE or rbf:GAMMA (dual and lifted only).")
@click.option("--eta", type=float, default=1.0, show_default=True, help="Step size (> 0).")
@click.option("--k", "k", type=float, default=0.5, show_default=True,
              help="Margin fraction in (0, 1) for --algo margin.")
@click.option("--rho", type=float, default=None,
              help="Reference margin (margin: default rho*; lifted: default best on a grid).")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seed of the epoch permutations.")
@click.option("--max-epochs", type=int, default=1000, show_default=True,
              help="Give up after this many epochs.")
@click.option("--intercept/--no-intercept", default=True, show_default=True,
              help="Learn a bias (homogeneous form (x, 1)).")
@click.option("--shuffle/--no-shuffle", default=True, show_default=True,
              help="Visit a fresh random permutation every epoch.")
def binary_command(csv_path: Path, algo: str, kernel: str, eta: float, k: float,
                   rho: float | None, seed: int, max_epochs: int, intercept: bool,
                   shuffle: bool) -> None:
    """Train a binary perceptron on CSV and print its updates beside the bound that applies.

    CSV holds one point per line, the last column the label (+1 or -1); a
    header line (no numeric cell) is optional.  The bound is Novikoff's
    r^2/rho*^2 for primal and dual (when the data is separable), the margin
    bound 4r^2/((1-k)^2 rho^2) for margin, and (r+delta)^2/rho^2 for lifted.
    """
    given = click.get_current_context().get_parameter_source
    if algo != "margin" and given("k") is not ParameterSource.DEFAULT:
        raise click.UsageError(f"--k is the margin fraction of --algo margin; --algo {algo} has none")
    if algo not in ("margin", "lifted") and given("rho") is not ParameterSource.DEFAULT:
        raise click.UsageError(f"--rho is the reference margin of --algo margin and lifted; --algo {algo} has none")
    try:
        kernel_args = parse_kernel_spec(kernel)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--kernel") from None
    try:
        data = read_labelled_csv(csv_path)
    except DataFileError as exc:
        raise click.ClickException(str(exc)) from None
    try:
        result = run_experiment(data.X, data.y, algorithm=algo, eta=eta, k=k, rho=rho,
                                fit_intercept=intercept, shuffle=shuffle, max_epochs=max_epochs,
                                random_state=seed, **kernel_args)  # type: ignore[arg-type]
    except ValueError as exc:
        raise click.ClickException(f"{csv_path}: {exc}") from None
    click.echo(_format(result, csv_path, data.X, data.y, kernel=kernel, eta=eta, seed=seed,
                       intercept=intercept, shuffle=shuffle))


__all__ = ["binary_command"]
