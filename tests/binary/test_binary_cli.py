"""The ``structperc binary`` command, driven through click's CliRunner."""
from __future__ import annotations

import re

import numpy as np
import pytest
from click.testing import CliRunner

from structperc.binary import LiftedPerceptron, Perceptron, bounds, homogeneous
from structperc.binary.cli import binary_command
from structperc.binary.csvdata import DataFileError, read_labelled_csv

SEPARABLE = """x1,x2,label
2.0,1.0,+1
1.0,3.0,1
-1.0,-2.0,-1
-2.0,0.5,-1
0.5,0.2,1
-0.3,-0.1,-1
"""

XOR = "1,1,1\n-1,-1,1\n1,-1,-1\n-1,1,-1\n0.9,1.1,1\n-1.1,0.9,-1\n"


def write(tmp_path, text, name="data.csv"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def invoke(*args):
    result = CliRunner().invoke(binary_command, [str(a) for a in args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result


def parsed(output):
    updates = int(re.search(r"^updates: (\d+) in (\d+) epochs", output, re.M).group(1))
    match = re.search(r"^bound: ([0-9.e+-]+) ", output, re.M)
    return updates, (float(match.group(1)) if match else None)


def test_primal_reports_updates_and_the_novikoff_bound(tmp_path):
    path = write(tmp_path, SEPARABLE)
    result = invoke("--algo", "primal", "--seed", 4, path)
    assert result.exit_code == 0, result.output
    updates, bound = parsed(result.output)
    X, y = read_labelled_csv(path).X, read_labelled_csv(path).y
    clf = Perceptron(random_state=4).fit(X, y)
    assert updates == clf.n_updates_
    best = bounds.hard_margin(homogeneous(X), y)
    assert bound == pytest.approx(bounds.novikoff_bound(bounds.radius(homogeneous(X)), best.rho),
                                  rel=1e-5)
    assert updates <= bound
    assert "Novikoff r^2/rho*^2" in result.output
    assert "6 samples, 2 features, 3 labelled +1, 3 labelled -1" in result.output


@pytest.mark.parametrize(
    "args",
    [
        ["--algo", "dual"],
        ["--algo", "dual", "--kernel", "poly:3", "--no-intercept"],
        ["--algo", "margin", "--k", "0.9"],
        ["--algo", "margin", "--k", "0.5", "--rho", "0.1", "--eta", "0.3"],
        ["--algo", "lifted"],
        ["--algo", "primal", "--no-shuffle", "--max-epochs", "50"],
    ],
)
def test_every_algorithm_stays_within_its_bound(tmp_path, args):
    result = invoke(*args, write(tmp_path, SEPARABLE))
    assert result.exit_code == 0, result.output
    updates, bound = parsed(result.output)
    assert "(converged)" in result.output
    assert bound is not None and updates <= bound


def test_xor_needs_a_kernel_or_lifting(tmp_path):
    path = write(tmp_path, XOR)
    linear = invoke("--algo", "primal", "--max-epochs", "30", path)
    assert linear.exit_code == 0
    assert "not converged" in linear.output
    assert "bound: none" in linear.output
    for args in (["--algo", "dual", "--kernel", "rbf:0.5"], ["--algo", "lifted"],
                 ["--algo", "lifted", "--kernel", "poly:2", "--rho", "0.5"]):
        result = invoke(*args, path)
        assert result.exit_code == 0, result.output
        updates, bound = parsed(result.output)
        assert "(converged)" in result.output and updates <= bound


def test_lifted_command_matches_the_estimator(tmp_path):
    path = write(tmp_path, XOR)
    result = invoke("--algo", "lifted", "--rho", "0.8", "--seed", "2", path)
    data = read_labelled_csv(path)
    points = homogeneous(data.X)
    v, _ = bounds.soft_separator(points, data.y, 0.8)
    ref = bounds.lifting(points, data.y, v, 0.8)
    clf = LiftedPerceptron(A=ref.A, random_state=2).fit(data.X, data.y)
    updates, bound = parsed(result.output)
    assert updates == clf.n_updates_
    assert bound == pytest.approx(ref.bound, rel=1e-5)


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("x,y\n1,1\n2,abc\n", 3, "non-numeric value 'abc'"),
        ("1,2,1\n3,4,-1\n5,6,2\n", 3, "label '2' is not +1 or -1"),
        ("1,2,1\n\n3,4,-1\n5,-1\n", 4, "expected 3 columns, found 2"),
        ("1,2,1\n3,nan,-1\n", 2, "non-finite value 'nan'"),
        ("1,2,1\n3,,-1\n", 2, "empty cell"),
        ("1\n", 1, "at least one feature column"),
        ("a,b,label\n", 1, "no data rows"),
        ("1,2,1\n1,x,1\n", 2, "non-numeric"),
    ],
)
def test_bad_csv_gives_a_one_line_error_naming_file_and_line(tmp_path, text, line, fragment):
    path = write(tmp_path, text)
    result = invoke(path)
    assert result.exit_code != 0
    message = result.output.strip()
    assert "\n" not in message
    assert message.startswith(f"Error: {path}:{line}: ")
    assert fragment in message


def test_binary_garbage_names_the_line(tmp_path):
    path = tmp_path / "data.csv"
    path.write_bytes(b"1,2,1\n3,4,-1\n\xff\xfe,1,1\n")
    result = invoke(path)
    assert result.exit_code != 0
    assert result.output.strip() == f"Error: {path}:3: not UTF-8 text (invalid start byte)"


def test_unreadable_file(tmp_path):
    missing = tmp_path / "missing.csv"
    result = invoke(missing)
    assert result.exit_code != 0
    assert result.output.strip().count("\n") == 0
    assert str(missing) in result.output and "No such file" in result.output
    result = invoke(tmp_path)  # a directory
    assert result.exit_code != 0 and str(tmp_path) in result.output


def test_bad_options(tmp_path):
    path = write(tmp_path, SEPARABLE)
    result = invoke("--kernel", "sigmoid", path)
    assert result.exit_code == 2 and "--kernel" in result.output
    result = invoke("--kernel", "poly:x", "--algo", "dual", path)
    assert result.exit_code == 2
    result = invoke("--algo", "primal", "--kernel", "rbf:1", path)
    assert result.exit_code == 1 and "no kernel" in result.output
    result = invoke("--eta", "-1", path)
    assert result.exit_code == 1 and "eta must be" in result.output
    result = invoke("--algo", "margin", write(tmp_path, XOR, "xor.csv"))
    assert result.exit_code == 1 and "not linearly separable" in result.output


def test_reader_returns_header_and_arrays(tmp_path):
    data = read_labelled_csv(write(tmp_path, SEPARABLE))
    assert data.header == ["x1", "x2", "label"]
    assert data.X.shape == (6, 2)
    assert data.y.tolist() == [1, 1, -1, -1, 1, -1]
    assert np.array_equal(data.X[0], [2.0, 1.0])
    with pytest.raises(DataFileError):
        read_labelled_csv(write(tmp_path, "1,2,0\n"))


@pytest.mark.parametrize("algo, option", [("primal", "--k"), ("dual", "--k"), ("lifted", "--k"), ("primal", "--rho"),
                                          ("dual", "--rho")])
def test_an_option_the_algorithm_does_not_read_is_refused(tmp_path, algo, option):
    # they were ignored: the output was that of a run without them
    result = invoke("--algo", algo, option, "0.3", write(tmp_path, SEPARABLE))
    assert result.exit_code == 2 and f"{option} is the" in result.output and f"--algo {algo} has none" in result.output
    assert invoke("--algo", "margin", "--k", "0.3", "--rho", "1", write(tmp_path, SEPARABLE)).exit_code == 0
    assert invoke("--algo", "lifted", "--rho", "1", write(tmp_path, SEPARABLE)).exit_code == 0
