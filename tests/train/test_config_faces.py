"""Every training option's rule is declared once (`structperc.train.options`) and says the same words from
every face: each bad combination below is fed to every face that can express it — the command line
(``structperc train``), `structperc.commands.train`, `Tagger.fit`, `Segmenter.fit`, the sklearn face's
`StructuredPerceptron.fit` and `structperc.ensemble.train_seed_average` — and each must refuse it with
the same one-line message, the case's text. The command line's own parsing (click's types and ranges)
is kept: where click refuses a value first, the command line is checked for click's refusal instead."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import pytest
from click.testing import CliRunner
from testkit import CWS_TRAIN, TOY, conll_text

from structperc import commands
from structperc.cli import main
from structperc.ensemble import train_seed_average
from structperc.errors import InputError
from structperc.segmenter import Segmenter
from structperc.sklearn import StructuredPerceptron
from structperc.tagger import Tagger
from structperc.train import options

COLUMNS = ["word", "pos", "chunk"]
TEMPLATE = ["w[0]", "pos[0]"]


@dataclass
class Case:
    """A bad combination: its message, and how each face that can express it is given it. ``cli``: the
    flags after ``structperc train --train F --model M``; ``click``: the command line refuses the value
    while parsing it (its own message, status 2). The other faces take keyword arguments: ``tagger`` and
    ``segmenter`` (constructor, fit), the others one dict."""

    id: str
    message: str
    cli: list[str] | None = None
    click: bool = False
    commands: dict[str, Any] | None = None
    tagger: tuple[dict[str, Any], dict[str, Any]] | None = None
    segmenter: tuple[dict[str, Any], dict[str, Any]] | None = None
    sklearn: dict[str, Any] | None = None
    seed_average: dict[str, Any] | None = None


CASES = [
    Case("bad epochs", "epochs (max_iterations in StructuredPerceptron) must be a positive integer, got 0",
         cli=["--epochs", "0"], click=True, commands={"epochs": 0}, tagger=({"epochs": 0}, {}),
         segmenter=({"epochs": 0}, {}), sklearn={"max_iterations": 0}, seed_average={"epochs": 0}),
    Case("negative seed", "seed (random_state in StructuredPerceptron) must be a non-negative integer, got -1",
         cli=["--seed", "-1"], click=True, commands={"seed": -1}, tagger=({"seed": -1}, {}),
         segmenter=({"seed": -1}, {}), sklearn={"random_state": -1}),
    Case("unknown feature set", "feature_set (--feature-set) must be one of all, observed, got 'some'",
         cli=["--feature-set", "some"], click=True, commands={"feature_set": "some"},
         tagger=({"feature_set": "some"}, {}), segmenter=({"feature_set": "some"}, {}),
         seed_average={"feature_set": "some"}),
    Case("order 3", "order must be 1 or 2 (the Markov order of the transitions), got 3",
         cli=["--order", "3"], click=True, commands={"order": 3}, tagger=({"order": 3}, {}),
         seed_average={"order": 3}),
    Case("unknown step", "step must be one of perceptron, pa, got 'sgd'", cli=["--step", "sgd"], click=True,
         commands={"step": "sgd"}, tagger=({"step": "sgd"}, {}), segmenter=({"step": "sgd"}, {}),
         seed_average={"step": "sgd"}),
    Case("negative margin", "margin must be a finite number >= 0, got -1.0", cli=["--margin", "-1"], click=True,
         commands={"margin": -1.0}, tagger=({"margin": -1.0}, {}), segmenter=({"margin": -1.0}, {})),
    Case("order 2 with a margin", "second-order transitions (order=2, --order 2) train with the default update "
         "only: leave out margin (--margin) and step (--step)", cli=["--order", "2", "--margin", "1"],
         commands={"order": 2, "margin": 1.0}, tagger=({"order": 2, "margin": 1.0}, {}),
         seed_average={"order": 2, "margin": 1.0}),
    Case("order 2 with workers", "second-order transitions (order=2, --order 2) train on one worker: leave out "
         "workers (--workers) and dask (--dask)", cli=["--order", "2", "--workers", "2"],
         commands={"order": 2, "workers": 2}, tagger=({"order": 2}, {"workers": 2})),
    Case("order 2 with checkpoints", "second-order transitions (order=2, --order 2) do not save or resume "
         "checkpoints: leave out checkpoint_dir (--checkpoint-dir) and resume (--resume)",
         cli=["--order", "2", "--checkpoint-dir", "CKPT"], commands={"order": 2, "checkpoint_dir": "CKPT"},
         tagger=({"order": 2}, {"checkpoint_dir": "CKPT"})),
    Case("dev with dev_split", "dev (--dev) and dev_split (--dev-split) both choose the number of epochs: give one "
         "of them, not both", cli=["--dev", "TRAIN", "--dev-split", "0.1"],
         commands={"dev_path": "TRAIN", "dev_split": 0.1}, tagger=({"dev_split": 0.1}, {"dev": "TRAIN"}),
         segmenter=({"dev_split": 0.5}, {"dev": CWS_TRAIN})),
    Case("dev_split 1.0", "dev_split (--dev-split) must be in [0, 1), got 1.0", cli=["--dev-split", "1.0"],
         click=True, commands={"dev_split": 1.0}, tagger=({"dev_split": 1.0}, {}),
         segmenter=({"dev_split": 1.0}, {}), seed_average={"dev_split": 1.0}),
    Case("dask without workers", "dask (--dask) trains by parameter mixing: give the number of shards with workers "
         "(--workers N, N > 1)", cli=["--dask", "local:2"], commands={"dask": "local:2"},
         tagger=({}, {"dask": "local:2"}), segmenter=({}, {"dask": "local:2"})),
    Case("workers 0", "workers must be a positive integer, got 0", cli=["--workers", "0"], click=True,
         commands={"workers": 0}, tagger=({}, {"workers": 0}), segmenter=({}, {"workers": 0})),
    Case("unknown mixing", "mixing must be one of uniform, mistakes, got 'median'",
         cli=["--mixing", "median", "--workers", "2"], click=True, commands={"workers": 2, "mixing": "median"},
         tagger=({}, {"workers": 2, "mixing": "median"}), segmenter=({}, {"workers": 2, "mixing": "median"})),
    Case("init-model with workers", "continued training (init_model, --init-model) runs on one worker: leave out "
         "workers (--workers) and dask (--dask)", cli=["--init-model", "NO-MODEL", "--workers", "2"],
         commands={"init_model": "NO-MODEL", "workers": 2}),
    Case("two-stage with checkpoints", "two-stage training (two_stage, --two-stage) does not save or resume "
         "checkpoints: leave out checkpoint_dir (--checkpoint-dir) and resume (--resume)",
         cli=["--two-stage", "--checkpoint-dir", "CKPT"], commands={"two_stage": True, "checkpoint_dir": "CKPT"},
         tagger=({"two_stage": True}, {"checkpoint_dir": "CKPT"})),
    Case("repeated seeds", "seeds must be at least one non-negative integer, all distinct, got [1, 1]",
         cli=["--seeds", "1,1"], commands={"seeds": [1, 1]}, seed_average={"seeds": [1, 1]}),
    Case("seed averaging with a dev file and workers", "seed averaging (seeds, --seeds) trains every member on one "
         "process for the same epochs (--epochs, or the first seed's pick on --dev-split), a new tagger from the "
         "first seed: leave out dev (--dev), workers (--workers)", cli=["--seeds", "0,1", "--dev", "TRAIN",
                                                                       "--workers", "2"],
         commands={"seeds": [0, 1], "dev_path": "TRAIN", "workers": 2}),
    Case("span task with scheme bmes", "span tasks need a span scheme (data: 'bmes', model: 'iobes'; known: iob1, "
         "iob2, iobes, bilou)", cli=["--scheme", "bmes"], commands={"scheme": "bmes"},
         tagger=({"scheme": "bmes"}, {}), seed_average={"scheme": "bmes"}),
    Case("segmenter in iobes", "a segmentation model (scheme 'bmes') learns in one of the encodings bmes, bmes6, "
         "not 'iobes' (data: 'bmes')", cli=["--task", "cws", "--encoding", "iobes"],
         commands={"task": "cws", "encoding": "iobes"}, segmenter=({"encoding": "iobes"}, {})),
    Case("lexicon for a tagger", "--lexicon is for --task cws (lexicon: a Segmenter's user dictionary)",
         cli=["--lexicon", "TRAIN"], commands={"lexicon": "TRAIN"}),
    Case("order 2 for a segmenter", "--order 2 (order=2) is for taggers, not for word segmentation (--task cws)",
         cli=["--task", "cws", "--order", "2"], commands={"task": "cws", "order": 2}),
    Case("order 2 continued", "continued training (init_model, --init-model; partial_fit) is not available for "
         "second-order transitions (order=2, --order 2): train a new model",
         cli=["--init-model", "NO-MODEL", "--order", "2"], commands={"init_model": "NO-MODEL", "order": 2}),
    Case("two stages for a segmenter", "--two-stage (two_stage) is for taggers, not for word segmentation (--task "
         "cws)", cli=["--task", "cws", "--two-stage"], commands={"task": "cws", "two_stage": True}),
    Case("columns for a segmenter", "word segmentation (--task cws) reads segmented text, words separated by "
         "spaces, and makes its own columns and tags: leave out columns (--columns), scheme (--scheme)",
         cli=["--task", "cws", "--columns", "word,pos", "--scheme", "iob2"],
         commands={"task": "cws", "columns": ["word", "pos"], "scheme": "iob2"}),
    Case("seeds for a segmenter", "seed averaging (seeds, --seeds) is for taggers, not for word segmentation "
         "(--task cws)", cli=["--task", "cws", "--seeds", "0,1"], commands={"task": "cws", "seeds": [0, 1]}),
    Case("add-labels without init-model", "--add-labels (add_labels) is for continued training (--init-model, "
         "init_model; partial_fit): a new model learns every tag of its data", cli=["--add-labels"],
         commands={"add_labels": True}),
    Case("read-on-workers without dask", "--read-on-workers trains a new tagger on a Dask cluster "
         "(read_on_workers): give --dask and --workers N (N > 1), and no --init-model, --task cws, --lexicon, "
         "--clusters or --lang", cli=["--read-on-workers"], commands={"read_on_workers": True}),
    Case("a language without resources", "lang (--lang) 'fr': no language resources; tagging (chunk, pos, ner) "
         "has resources for de, el, en, es, nl", cli=["--lang", "fr"], commands={"lang": "fr"},
         tagger=({"lang": "fr"}, {})),
    Case("a language without words for cws", "lang (--lang) 'en' has clusters, lemmas, probabilities but nothing "
         "word segmentation (--task cws) reads (words): its languages are zh", cli=["--task", "cws", "--lang", "en"],
         commands={"task": "cws", "lang": "en"}, segmenter=({"lang": "en"}, {})),
    Case("lang with clusters", "lang (--lang) and clusters (--clusters) both give the word clusters: give one of "
         "them", cli=["--lang", "en", "--clusters", "TRAIN"], commands={"lang": "en", "clusters": "TRAIN"},
         tagger=({"lang": "en"}, {"clusters": "TRAIN"})),
    Case("init-model with settings the model keeps", "continued training (init_model, --init-model) keeps the "
         "model's own settings (columns, template, scheme, seed, training options): leave out columns (--columns), "
         "dev_split (--dev-split)", cli=["--init-model", "NO-MODEL", "--columns", "word,pos,chunk", "--dev-split",
                                         "0.1"],
         commands={"init_model": "NO-MODEL", "columns": COLUMNS, "dev_split": 0.1}),
    Case("read-on-workers with dev_split", "dev_split (--dev-split) needs the whole training corpus in one place: "
         "not with the input read by the Dask workers (--read-on-workers)",
         cli=["--read-on-workers", "--dask", "local:2", "--workers", "2", "--dev-split", "0.1"],
         commands={"read_on_workers": True, "dask": "local:2", "workers": 2, "dev_split": 0.1}),
]


@pytest.fixture
def files(tmp_path):
    """Paths of the tiny corpora and of a checkpoint folder, by the placeholders the cases use."""
    train = tmp_path / "train.txt"
    train.write_text(conll_text(TOY), encoding="utf-8")
    return {"TRAIN": str(train), "CKPT": str(tmp_path / "ckpt"), "NO-MODEL": str(tmp_path / "no-model")}


def _placed(value: Any, files: dict[str, str]) -> Any:
    if isinstance(value, dict):
        return {k: _placed(v, files) for k, v in value.items()}
    if isinstance(value, list):
        return [_placed(v, files) for v in value]
    return files.get(value, value) if isinstance(value, str) else value


def _refusal(call: Callable[[], Any]) -> str:
    """The message of the `InputError` that ``call`` raises (its one line)."""
    with pytest.raises(InputError) as info:
        call()
    text = str(info.value)
    assert "\n" not in text
    return text


def _cli(case: Case, files: dict[str, str], tmp_path) -> str:
    """What ``structperc train`` says: its one ``Error:`` line (status 1, or 2 for a usage error)."""
    args = ["train", "--train", files["TRAIN"], "--model", str(tmp_path / "m"), "-q", *_placed(case.cli, files)]
    if "--task" not in args and "--init-model" not in args:
        args += ["--columns", ",".join(COLUMNS), "--template", files["TEMPLATE"]]
    result = CliRunner().invoke(main, args)
    assert result.exit_code in (1, 2) and "Traceback" not in result.output, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error")]
    assert len(errors) == 1, result.output
    return errors[0]


#: Every face: how it is given a case's arguments (None: the case cannot be said there).
FACES: dict[str, Callable[[Case, dict[str, str]], Callable[[], Any] | None]] = {
    "commands.train": lambda case, files: None if case.commands is None else (lambda: commands.train(
        files["TRAIN"], files["MODEL"], **{**({} if "task" in case.commands or "init_model" in case.commands
                                              else {"columns": COLUMNS, "template": TEMPLATE}),
                                           **_placed(case.commands, files)})),
    "Tagger": lambda case, files: None if case.tagger is None else (lambda: Tagger(
        columns=COLUMNS, template=TEMPLATE, **{"epochs": 1, **case.tagger[0]}).fit(
        files["TRAIN"], **_placed(case.tagger[1], files))),
    "Segmenter": lambda case, files: None if case.segmenter is None else (lambda: Segmenter(
        **{"epochs": 1, **case.segmenter[0]}).fit(CWS_TRAIN, **_placed(case.segmenter[1], files))),
    "StructuredPerceptron": lambda case, files: None if case.sklearn is None else (
        lambda: StructuredPerceptron(**case.sklearn).fit([[{"w": "a"}]], [["O"]])),
    "train_seed_average": lambda case, files: None if case.seed_average is None else (lambda: train_seed_average(
        files["TRAIN"], **{"seeds": (0, 1), "columns": COLUMNS, "template": TEMPLATE, "epochs": 1,
                           **case.seed_average})),
}


def _check_case(case: Case, files: dict[str, str], tmp_path) -> list[str]:
    """Feed ``case`` to every face that can say it; assert the same message from each. The faces tried."""
    tried = []
    for face, given in FACES.items():
        call = given(case, files)
        if call is not None:
            assert _refusal(call) == case.message, face
            tried.append(face)
    if case.cli is not None:
        line = _cli(case, files, tmp_path)
        if case.click:  # click's parsing refuses the value first: its own message, naming the flag
            assert line.startswith("Error: Invalid value for '") and case.cli[0] in line, line
        else:
            assert line == f"Error: {case.message}", line
        tried.append("cli")
    return tried


@pytest.fixture
def placed(files, tmp_path):
    template = tmp_path / "template.txt"
    template.write_text("\n".join(TEMPLATE) + "\n", encoding="utf-8")
    return {**files, "TEMPLATE": str(template), "MODEL": str(tmp_path / "model")}


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_one_message_from_every_face(case, placed, tmp_path):
    tried = _check_case(case, placed, tmp_path)
    assert tried  # every case is said by one face at least
    assert not (tmp_path / "m").exists() and not (tmp_path / "model").exists()  # refused before any work


def test_the_table_is_wide():
    """At least 12 cases, most of them said by several faces, and every face tried by some case."""
    assert len(CASES) >= 12
    faces = [[f for f, given in FACES.items() if given(c, {"TRAIN": "", "MODEL": ""}) is not None]
             + (["cli"] if c.cli is not None else []) for c in CASES]
    assert sum(len(f) > 1 for f in faces) >= 12
    assert set(FACES) | {"cli"} == {f for fs in faces for f in fs}


def test_a_planted_wrong_message_fails(placed, tmp_path, monkeypatch):
    """The check above can fail: a rule's message changed (for every face at once), or one face saying
    something else, is caught."""
    case = next(c for c in CASES if c.id == "dev with dev_split")
    rules = tuple(options.Rule(r.name, r.refuses, "planted wrong message", r.usage, r.face)
                  if r.name == "dev_and_dev_split" else r for r in options.RULES)
    with monkeypatch.context() as patch:
        patch.setattr(options, "RULES", rules)
        with pytest.raises(AssertionError):
            _check_case(case, placed, tmp_path)

    def other_words(*args: Any, **kwargs: Any) -> None:
        raise InputError("--dev and --dev-split: not both")
    with monkeypatch.context() as patch:
        patch.setattr(Segmenter, "fit", other_words)
        with pytest.raises(AssertionError):
            _check_case(case, placed, tmp_path)
    _check_case(case, placed, tmp_path)  # and as it is, it passes


def test_usage_errors_keep_status_2(placed, tmp_path):
    """Flags of another trainer are usage errors on the command line (status 2, as click's parsing);
    the other rules are the command's errors (status 1)."""
    args = ["train", "--train", placed["TRAIN"], "--model", str(tmp_path / "m"), "-q"]
    assert CliRunner().invoke(main, args + ["--lexicon", placed["TRAIN"]]).exit_code == 2
    assert CliRunner().invoke(main, args + ["--add-labels"]).exit_code == 1


def test_every_face_defaults_as_the_options_table():
    """An option's default lives in `options.OPTIONS` (`Option.default`: what ``--init-model`` treats as "not
    given"); the command line, `Tagger` and `Segmenter` spell theirs in their signatures and must agree."""
    import inspect

    from structperc.cli.training import train

    cli = {p.name: p.default for p in train.params}
    checked = 0
    for name, default in options.DEFAULTS.items():
        for face in (Tagger, Segmenter):
            param = inspect.signature(face.__init__).parameters.get(name)
            if param is not None:
                assert param.default == default, (face.__name__, name)
                checked += 1
        if cli.get(name) is not None:  # None: "not given", the run uses the default
            assert cli[name] == default, ("--" + name, cli[name], default)
            checked += 1
    assert checked >= 20 and {"seed", "min_count", "dev_split", "feature_set", "step", "margin", "C"} <= set(
        options.DEFAULTS)



def test_seeds_on_the_command_line_train_the_library_s_seed_average(files, tmp_path):
    """``structperc train --seeds 0,1`` saves `train_seed_average`'s model: the members' mean, its seeds in the
    provenance and in ``info``."""
    from structperc.model.info import format_info, model_info

    model = tmp_path / "avg"
    result = CliRunner().invoke(main, ["train", "--train", files["TRAIN"], "--model", str(model), "-q",
                                       "--columns", ",".join(COLUMNS), "--epochs", "2", "--seeds", "0,1"])
    assert result.exit_code == 0, result.output
    saved = Tagger.load(model)
    expected = train_seed_average(files["TRAIN"], seeds=[0, 1], columns=COLUMNS, epochs=2)
    assert saved.provenance_["seeds"] == [0, 1]
    assert (saved.weights_.state == expected.weights_.state).all()
    assert "the mean weights of seeds 0, 1" in format_info(model_info(model))
    shown = CliRunner().invoke(main, ["train", "--train", files["TRAIN"], "--model", str(tmp_path / "shown"),
                                      "--columns", ",".join(COLUMNS), "--epochs", "2", "--seeds", "0,1"])
    lines = shown.output.splitlines()  # every member's epochs are reported, then what was saved
    assert [line.split()[:2] for line in lines if line.startswith("epoch ")] == [["epoch", "1/2"], ["epoch", "2/2"]] * 2
    assert "the mean weights of seeds 0, 1" in lines[-1] and lines[-1].startswith("saved ")
