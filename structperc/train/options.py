"""Every training option and its rules, declared once (scikit-learn's ``_parameter_constraints`` is the
model): `OPTIONS` gives each option its Python name, its command-line flag, its name on the sklearn face
(`structperc.sklearn.StructuredPerceptron`) and the values it takes; `RULES` the combinations no run can
use. `validate` checks a set of options against both and raises `OptionError` (an `InputError`) with the
rule's one message, whichever face the options came from: ``structperc train``, `structperc.commands.train`,
`Tagger`, `Segmenter`, the sklearn face or `structperc.ensemble.train_seed_average`. A message names an
option in every spelling that differs (`Option.label`: ``dev_split (--dev-split)``), so one text serves
every face. Rules about the data (too few sentences, tags a model does not know) stay with the data."""
from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Integral
from typing import Any, Callable, Mapping

from structperc.errors import InputError
from structperc.features.ambiguity import COLUMNS as AMBIGUITY_COLUMNS
from structperc.features.clusters import DEFAULT_COLUMNS as CLUSTER_COLUMNS
from structperc.features.gazetteer import BASE_COLUMNS as GAZ_BASE
from structperc.features.gazetteer import EXTRA_COLUMNS as GAZ_EXTRA
from structperc.features.gazetteer import STAGE_COLUMN
from structperc.features.instances import template_columns
from structperc.features.resources.language import lang_problem
from structperc.features.stacking import reads_stage_column
from structperc.labels import SCHEMES
from structperc.labels.bmes6 import BMES6
from structperc.model.state_weights import FEATURE_SETS
from structperc.train.mixing import MIXINGS
from structperc.train.perceptron import STEPS

#: The faces whose options have names of their own: "python" (`Tagger`, `Segmenter`, `commands.train`,
#: seed averaging; the command line's flags map onto these names) and "sklearn" (`StructuredPerceptron`).
PYTHON, SKLEARN = "python", "sklearn"
#: The schemes a segmentation model (BMES data) may learn in: BMES itself or the 6-tag set.
WORD_ENCODINGS = ("bmes", BMES6)
#: The sklearn face's ``encoding`` values (None: IOBES for span labels, else the labels' own scheme).
SKLEARN_ENCODINGS = (None, "iobes", "iob2")


class OptionError(InputError):
    """A set of options that `validate` refuses: ``rule`` names the option or rule (a key of `OPTIONS` or
    `RULES`); ``usage``: the command line reports it as a usage error (status 2, as click's own parsing)."""

    def __init__(self, message: str, rule: str, usage: bool = False):
        super().__init__(message)
        self.rule, self.usage = rule, usage


# ------------------------------------------------------------------------------------ constraints
@dataclass(frozen=True)
class Integer:
    """An integer (not a bool) of at least ``low``."""

    low: int

    def ok(self, value: Any) -> bool:
        return isinstance(value, Integral) and not isinstance(value, bool) and int(value) >= self.low

    @property
    def expects(self) -> str:
        return {0: "a non-negative integer", 1: "a positive integer"}.get(self.low, f"an integer >= {self.low}")


@dataclass(frozen=True)
class Number:
    """A finite number in ``[low, high)`` (``low_open``: ``(low, high)``); anything `float` reads."""

    low: float
    high: float = math.inf
    low_open: bool = False
    expects: str = ""

    def ok(self, value: Any) -> bool:
        try:
            x = float(value)
        except (TypeError, ValueError):
            return False
        return math.isfinite(x) and (x > self.low if self.low_open else x >= self.low) and x < self.high


@dataclass(frozen=True)
class OneOf:
    """One of ``values`` (a bool only where ``values`` holds bools)."""

    values: tuple
    expects: str = ""

    def ok(self, value: Any) -> bool:
        if isinstance(value, bool) and not any(isinstance(v, bool) for v in self.values):
            return False
        try:
            return value in self.values
        except TypeError:
            return False


@dataclass(frozen=True)
class Seeds:
    """Seed averaging's seeds: at least one non-negative integer, all distinct."""

    expects: str = "at least one non-negative integer, all distinct"

    def ok(self, value: Any) -> bool:
        seeds = list(value)
        return bool(seeds) and all(Integer(0).ok(s) for s in seeds) and len(set(seeds)) == len(seeds)


#: The encodings a voting model's members learn in (`structperc.labels.voting`).
VOTE_ENCODINGS = ("iob1", "iob2", "iobes")


@dataclass(frozen=True)
class Encodings:
    """A vote's other members: at least one encoding of `VOTE_ENCODINGS`, all distinct (a string is one name)."""

    expects: str = f"at least one of {', '.join(VOTE_ENCODINGS)}, all distinct (e.g. iob2,iob1)"

    def ok(self, value: Any) -> bool:
        if isinstance(value, str):
            return False
        try:
            names = list(value)
        except TypeError:
            return False
        return bool(names) and all(n in VOTE_ENCODINGS for n in names) and len(set(names)) == len(names)


def _choices(values: tuple) -> str:
    return "one of " + ", ".join(map(str, values))


@dataclass(frozen=True)
class Option:
    """One training option: its Python name (None: the sklearn face's alone), its command-line flag (None:
    not on the command line), its sklearn face name (None: not there), and the values it takes (None:
    checked by the task preset or by the rules). ``none``: None means "the default" and is accepted.
    ``default``: the value a run uses when the option is not given (None: the task preset, the model or the
    data decides), the command line's default and `Tagger`'s (a test holds the faces to it)."""

    name: str | None
    flag: str | None = None
    sklearn: str | None = None
    values: Integer | Number | OneOf | Seeds | Encodings | None = None
    none: bool = True
    default: Any = None

    def key(self, face: str) -> str | None:
        return self.sklearn if face == SKLEARN else self.name

    @property
    def label(self) -> str:
        """The option in every spelling that differs: ``dev_split (--dev-split)``, ``epochs (max_iterations
        in StructuredPerceptron)``."""
        name = self.name or self.sklearn or ""
        others = [self.flag] if self.flag and self.flag != f"--{name}" else []
        if self.sklearn and self.sklearn != name:
            others.append(f"{self.sklearn} in StructuredPerceptron")
        return f"{name} ({', '.join(others)})" if others else name

    def message(self, value: Any) -> str:
        assert self.values is not None
        return f"{self.label} must be {self.values.expects}, got {value!r}"


_OPTIONS = (
    Option("epochs", "--epochs", "max_iterations", Integer(1)),
    Option("min_count", "--min-count", None, Integer(1), default=1),
    Option("folds", None, None, Integer(1), default=10),
    Option("seed", "--seed", "random_state", Integer(0), none=False, default=0),
    Option("feature_set", "--feature-set", None, OneOf(FEATURE_SETS, _choices(FEATURE_SETS)), default="all"),
    Option("step", "--step", None, OneOf(STEPS, _choices(STEPS)), default="perceptron"),
    Option("margin", "--margin", None, Number(0.0, expects="a finite number >= 0"), default=0.0),
    Option("C", "--pa-c", None, Number(0.0, low_open=True, expects="a finite number > 0 (the passive-aggressive "
                                                                  "step's bound)"), default=1.0),
    Option("order", "--order", None, OneOf((1, 2), "1 or 2 (the Markov order of the transitions)"), default=1),
    Option("dev_split", "--dev-split", None, Number(0.0, 1.0, expects="in [0, 1)"), none=False, default=0.0),
    Option("workers", "--workers", None, Integer(1), default=1),
    Option("mixing", "--mixing", None, OneOf(MIXINGS, _choices(MIXINGS))),
    Option("seeds", "--seeds", None, Seeds()),
    Option("seed_average"),  # a seed-averaging run whose seeds are checked already (`Tagger.fit(seeds=…)`)
    Option("cws_command"),  # `structperc train --task cws` (`commands.train`): a Segmenter from segmented text
    Option("vote", "--vote", None, Encodings()),
    # declared for their labels; their values are the task preset's, the rules' or a path's
    Option("task", "--task"), Option("scheme", "--scheme"), Option("encoding", "--encoding"),
    Option("columns", "--columns"), Option("tag_column", "--tag-column"), Option("template", "--template"),
    Option("dev", "--dev"), Option("two_stage", "--two-stage", default=False),
    Option("tag_dictionary", "--tag-dictionary", default=False),
    Option("lexicon", "--lexicon"), Option("raw", "--raw"), Option("clusters", "--clusters"), Option("lang", "--lang"),
    Option("checkpoint_dir", "--checkpoint-dir"), Option("resume", "--resume"),
    Option("keep_checkpoint", "--keep-checkpoint"), Option("init_model", "--init-model"),
    Option("add_labels", "--add-labels"), Option("dask", "--dask"), Option("read_on_workers", "--read-on-workers"),
    # the sklearn face's own
    Option(None, None, "algorithm", OneOf((None, "ap"), "'ap' (StructuredPerceptron trains the averaged "
                                                        "perceptron, not a CRF; None: 'ap')")),
    Option(None, None, "all_possible_states", OneOf((None, True, False), "True, False or None")),
    Option(None, None, "all_possible_transitions", OneOf((None, True, False), "True, False or None")),
    Option(None, None, "constrained", OneOf((None, True, False), "True, False or None")),
    Option(None, None, "scheme", OneOf(("auto", *SCHEMES), _choices(("auto", *SCHEMES)))),
    Option(None, None, "encoding", OneOf(SKLEARN_ENCODINGS, _choices(SKLEARN_ENCODINGS))),
)
#: Every option by its Python name (the sklearn face's own by ``sklearn:NAME``).
OPTIONS: dict[str, Option] = {o.name or f"sklearn:{o.sklearn}": o for o in _OPTIONS}
#: The value of each option that has one when it is not given (`Option.default`).
DEFAULTS: dict[str, Any] = {o.name: o.default for o in _OPTIONS if o.name and o.default is not None}


def label(name: str) -> str:
    """`Option.label` of the option called ``name``."""
    return OPTIONS[name].label


def spelled(name: str, sep: str = " (") -> str:
    """The option called ``name`` and its flag, for the rules' messages: ``workers (--workers)``, or with
    ``sep=", "`` (inside parentheses) ``workers, --workers``."""
    flag = OPTIONS[name].flag
    if not flag:
        return name
    return f"{name}{sep}{flag})" if sep == " (" else f"{name}{sep}{flag}"


# ------------------------------------------------------------------------------------------ rules
@dataclass
class Given:
    """What a rule reads: the options (by their face's names), and where known the `Task` they make,
    the template lines and the training data."""

    options: Mapping[str, Any]
    task: Any = None
    lines: list[str] | None = None
    data: Any = None

    def get(self, name: str, default: Any = None) -> Any:
        value = self.options.get(name)
        return default if value is None else value

    @property
    def two_stage(self) -> bool:
        return bool(self.get("two_stage")) or (self.lines is not None and reads_stage_column(self.lines))

    @property
    def workers(self) -> int:
        return int(self.get("workers", 1))

    @property
    def checkpoints(self) -> bool:
        return self.get("checkpoint_dir") is not None or self.get("resume") is not None

    @property
    def averages(self) -> bool:
        """Whether the run averages members of several seeds (`structperc.ensemble`)."""
        return self.get("seeds") is not None or bool(self.get("seed_average"))

    @property
    def segmenter(self) -> bool:
        """Whether the run trains a word segmenter (``task="cws"`` through `commands.train`, or `Segmenter`)."""
        return self.get("task") == "cws" or bool(self.get("segmenter"))


@dataclass(frozen=True)
class Rule:
    """A combination of options no run can use: ``refuses(given)`` is true (or names what is wrong, for a
    ``message`` that is a function of it) when it holds. ``usage``: see `OptionError`."""

    name: str
    refuses: Callable[[Given], Any]
    message: str | Callable[[Given, Any], str]
    usage: bool = False
    face: str = PYTHON

    def text(self, given: Given, found: Any) -> str:
        return self.message if isinstance(self.message, str) else self.message(given, found)


def _whole_corpus(g: Given) -> str | None:
    """The first option that needs the whole training corpus in one place, when the workers read it."""
    for name in ("dev_split", "tag_dictionary", "lexicon", "two_stage"):
        if g.get(name) and (name != "two_stage" or g.two_stage):
            return label(name)
    if g.get("feature_set", "all") != "all":
        return f"{label('feature_set')} {g.get('feature_set')}"
    return None


#: What a saved model fixes: continued training (`Tagger.partial_fit`) keeps the model's own, so a value given
#: with ``--init-model`` would be ignored (not given: None or the option's `Option.default`).
_MODEL_SETTINGS = ("columns", "tag_column", "template", "scheme", "encoding", "dev_split", "min_count", "seed",
                   "feature_set", "step", "margin", "C", "tag_dictionary")


def _model_settings(g: Given) -> list[str]:
    """The options given with ``init_model`` that the continued model would not use (its own are kept)."""
    if not g.get("init_model"):
        return []
    return [spelled(name) for name in _MODEL_SETTINGS if g.get(name) not in (None, OPTIONS[name].default)]


#: Columns of dictionaries learnt from the training data (their jackknife needs every sentence at once).
LEARNT_COLUMNS = frozenset({*AMBIGUITY_COLUMNS, *CLUSTER_COLUMNS, *GAZ_BASE, *GAZ_EXTRA, STAGE_COLUMN})
_ORDER2 = "second-order transitions (order=2, --order 2)"
_LEAVE_CHECKPOINTS = f"leave out {spelled('checkpoint_dir')} and {spelled('resume')}"

RULES: tuple[Rule, ...] = (
    # flags of another trainer: the command line reports them as usage errors, before any work
    Rule("lexicon_for_cws", lambda g: g.get("lexicon") and not g.segmenter,
         "--lexicon is for --task cws (lexicon: a Segmenter's user dictionary)", usage=True),
    Rule("raw_for_cws", lambda g: g.get("raw") and not g.segmenter,
         "--raw is for --task cws (raw: a Segmenter's unsegmented text)", usage=True),
    # `Segmenter` has no ``order`` parameter, so ``--task cws`` would drop it; a Segmenter whose parameters
    # hold one (a subclass) trains second-order transitions like a tagger
    Rule("order2_not_cws", lambda g: g.get("order", 1) == 2 and g.get("task") == "cws" and not g.get("segmenter"),
         "--order 2 (order=2) is for taggers, not for word segmentation (--task cws)", usage=True),
    Rule("order2_new_tagger", lambda g: g.get("order", 1) == 2 and g.get("init_model"),
         f"continued training (init_model, --init-model; partial_fit) is not available for {_ORDER2}: train a new "
         "model"),
    Rule("two_stage_not_cws", lambda g: g.two_stage and g.segmenter,
         "--two-stage (two_stage) is for taggers, not for word segmentation (--task cws)", usage=True),
    Rule("two_stage_new_tagger", lambda g: g.two_stage and g.get("init_model"),
         "--two-stage is for training a new tagger (two_stage): a two-stage model does not continue training "
         "(init_model, --init-model; partial_fit): train it again on all the data", usage=True),
    Rule("seed_average_not_cws", lambda g: g.averages and g.segmenter,
         "seed averaging (seeds, --seeds) is for taggers, not for word segmentation (--task cws)", usage=True),
    Rule("vote_spans", lambda g: g.get("vote") and (g.segmenter or (g.task is not None and g.task.metric != "span")),
         f"{spelled('vote')} is for span tasks (chunks, entities): its members vote on spans", usage=True),
    Rule("vote_other_encodings", lambda g: g.get("vote") and g.task is not None
         and g.task.model_scheme in list(g.get("vote")),
         lambda g, found: f"{spelled('vote')} lists the other members' encodings: the model's own "
                          f"({g.task.model_scheme!r}, --encoding) is the first member already", usage=True),
    Rule("vote_new_tagger", lambda g: g.get("vote") and [spelled(name) for name, given in (
        ("init_model", g.get("init_model")), ("checkpoint_dir", g.checkpoints),
        ("read_on_workers", g.get("read_on_workers"))) if given],
         lambda g, found: f"a voting model ({spelled('vote', ', ')}) is trained anew, each member from the start: "
                          f"leave out {', '.join(found)}", usage=True),
    Rule("order2_update", lambda g: g.get("order", 1) == 2 and (
        float(g.get("margin", 0.0)) != 0.0 or g.get("step", "perceptron") != "perceptron"),
         f"{_ORDER2} train with the default update only: leave out {spelled('margin')} and {spelled('step')}"),
    Rule("task_scheme", lambda g: g.task is not None and _scheme_error(g.task), lambda g, found: found),
    Rule("task_columns", lambda g: g.task is not None and _columns_error(g.task, g.data), lambda g, found: found),
    Rule("dev_and_dev_split", lambda g: g.get("dev") and g.get("dev_split"),
         f"{spelled('dev')} and {spelled('dev_split')} both choose the number of epochs: give one of them, not both"),
    Rule("dask_needs_workers", lambda g: g.get("dask") is not None and g.workers < 2,
         f"{spelled('dask')} trains by parameter mixing: give the number of shards with workers "
         "(--workers N, N > 1)"),
    Rule("order2_one_worker", lambda g: g.get("order", 1) == 2 and g.workers > 1,
         f"{_ORDER2} train on one worker: leave out {spelled('workers')} and {spelled('dask')}"),
    Rule("order2_checkpoints", lambda g: g.get("order", 1) == 2 and g.checkpoints,
         f"{_ORDER2} do not save or resume checkpoints: {_LEAVE_CHECKPOINTS}"),
    Rule("two_stage_checkpoints", lambda g: g.two_stage and g.checkpoints,
         f"two-stage training ({spelled('two_stage', ', ')}) does not save or resume checkpoints: "
         f"{_LEAVE_CHECKPOINTS}"),
    Rule("keep_checkpoint_needs_dir", lambda g: g.get("keep_checkpoint") and g.get("checkpoint_dir") is None,
         "--keep-checkpoint keeps the checkpoint of --checkpoint-dir: give --checkpoint-dir"),
    Rule("add_labels_needs_init_model", lambda g: g.get("add_labels") and not g.get("init_model"),
         "--add-labels (add_labels) is for continued training (--init-model, init_model; partial_fit): a new "
         "model learns every tag of its data"),
    Rule("clusters_new_tagger", lambda g: g.get("clusters") is not None and (g.segmenter or g.get("init_model")),
         f"{spelled('clusters')} is for training a new tagger (not --init-model, not --task cws)"),
    Rule("lang_resources", lambda g: g.get("lang") is not None and lang_problem(g.get("lang"), g.segmenter),
         lambda g, found: found),
    Rule("lang_or_clusters", lambda g: g.get("lang") is not None and g.get("clusters") is not None,
         f"{spelled('lang')} and {spelled('clusters')} both give the word clusters: give one of them"),
    Rule("lang_new_model", lambda g: g.get("lang") is not None and g.get("init_model"),
         f"{spelled('lang')} is for training a new model: continued training ({spelled('init_model', ', ')}) "
         "keeps the resources the model was trained with"),
    Rule("init_model_keeps_settings", _model_settings,
         lambda g, found: f"continued training ({spelled('init_model', ', ')}) keeps the model's own settings "
                          f"(columns, template, scheme, seed, training options): leave out {', '.join(found)}",
         usage=True),
    Rule("init_model_one_worker", lambda g: g.get("init_model") and (g.workers != 1 or g.get("dask") is not None),
         f"continued training ({spelled('init_model', ', ')}) runs on one worker: leave out "
         f"{spelled('workers')} and {spelled('dask')}"),
    Rule("read_on_workers_scope", lambda g: g.get("read_on_workers") and (
        g.get("dask") is None or g.workers < 2 or g.get("init_model") or g.segmenter or g.get("lexicon")
        or g.get("clusters") is not None or g.get("lang") is not None),
         "--read-on-workers trains a new tagger on a Dask cluster (read_on_workers): give --dask and --workers N "
         "(N > 1), and no --init-model, --task cws, --lexicon, --clusters or --lang"),
    Rule("read_on_workers_whole_corpus", lambda g: g.get("read_on_workers") and _whole_corpus(g),
         lambda g, found: f"{found} needs the whole training corpus in one place: not with the input read by "
                          "the Dask workers (--read-on-workers)"),
    Rule("read_on_workers_dictionaries", lambda g: g.get("read_on_workers") and g.lines is not None
         and sorted(template_columns(g.lines) & LEARNT_COLUMNS),
         lambda g, found: f"the templates read learnt dictionary columns ({', '.join(found)}), whose jackknife "
                          "needs the whole training corpus in one place: not with the input read by the Dask "
                          "workers (--read-on-workers)"),
    Rule("seed_average_alone", lambda g: g.averages and [spelled(name) for name, given in (
        ("dev", g.get("dev")), ("init_model", g.get("init_model")),
        ("workers", g.get("workers", 1) != 1), ("dask", g.get("dask")), ("checkpoint_dir", g.checkpoints),
        ("seed", g.get("seed", 0) != 0 and g.get("seeds") is not None)) if given],
         lambda g, found: "seed averaging (seeds, --seeds) trains every member on one process for the same epochs "
                          "(--epochs, or the first seed's pick on --dev-split), a new tagger from the first seed: "
                          f"leave out {', '.join(found)}", usage=True),
    # after what a segmenter cannot do at all: it reads segmented text (words between spaces), makes its own
    # columns and tags
    Rule("cws_reads_words", lambda g: g.get("cws_command") and [
        spelled(name) for name in ("columns", "tag_column", "scheme") if g.get(name) is not None],
         lambda g, found: f"word segmentation (--task cws) reads segmented text, words separated by spaces, and "
                          f"makes its own columns and tags: leave out {', '.join(found)}", usage=True),
    # the sklearn face's own, once the labels' scheme is known (``resolved``: "auto" read on the labels)
    Rule("sklearn_encoding_needs_spans", lambda g: g.get("encoding") is not None and g.get("resolved") is not None
         and not g.get("span"),
         lambda g, found: f"encoding={g.get('encoding')!r} needs span labels (scheme 'iob1', 'iob2' or 'iobes'; "
                          f"these labels are scheme {g.get('resolved')!r})", face=SKLEARN),
    Rule("sklearn_constrained_needs_scheme", lambda g: g.get("constrained") and g.get("resolved") == "none",
         lambda g, found: "constrained=True needs a tag scheme (scheme='iob2', 'iobes', …" + (
             "; these labels are not IOB2-shaped)" if g.get("scheme") == "auto" else ")"), face=SKLEARN),
)


def _scheme_error(task: Any) -> str | None:
    """What is wrong with the task's scheme (``scheme``) and the one its model learns in (``encoding``)."""
    from structperc.labels.schemes import SPAN_SCHEMES

    if task.metric == "span" and (task.scheme not in SPAN_SCHEMES or task.model_scheme not in ("iob1", "iob2",
                                                                                                 "iobes")):
        return (f"span tasks need a span scheme (data: {task.scheme!r}, model: {task.model_scheme!r}; known: "
                f"{', '.join(SPAN_SCHEMES)})")
    if task.scheme == "bmes" and task.model_scheme not in WORD_ENCODINGS:
        return (f"a segmentation model (scheme 'bmes') learns in one of the encodings {', '.join(WORD_ENCODINGS)}, "
                f"not {task.model_scheme!r} (data: {task.scheme!r})")
    if task.model_scheme in WORD_ENCODINGS and task.scheme != "bmes":
        return f"encoding {task.model_scheme!r} is for segmentation data in the 'bmes' scheme, not {task.scheme!r}"
    return None


def _columns_error(task: Any, data: Any) -> str | None:
    """What is wrong with the task's columns (``columns``, ``tag_column``)."""
    named = [c for c in task.columns if c != "_"]
    twice = sorted({c for c in named if named.count(c) > 1})
    if twice:
        return (f"columns name {', '.join(map(repr, twice))} twice ({','.join(task.columns)}): give each column a "
                "name of its own ('_' skips one)")
    if task.tag_column not in task.columns:
        return f"tag column {task.tag_column!r} is not among the columns {list(task.columns)}"
    return None


def validate(options: Mapping[str, Any], *, task: Any = None, lines: list[str] | None = None, data: Any = None,
             face: str = PYTHON) -> None:
    """Refuse ``options`` (named as ``face`` names them; None: the default) that no run could use: each
    option's values (`OPTIONS`), then each combination (`RULES`), the first that fails raising `OptionError`
    with its one message. ``task`` (the `Task` the options make), ``lines`` (the template) and ``data``
    (the training input) let the rules about them run too; a face calls `validate` again as it learns them."""
    for option in _OPTIONS:
        key = option.key(face)
        if key is None or key not in options or option.values is None:
            continue
        value = options[key]
        if (value is None and option.none) or option.values.ok(value):
            continue
        raise OptionError(option.message(value), option.name or key)
    given = Given(options, task, lines, data)
    for rule in RULES:
        if rule.face != face:
            continue
        found = rule.refuses(given)
        if found:
            raise OptionError(rule.text(given, found), rule.name, rule.usage)
