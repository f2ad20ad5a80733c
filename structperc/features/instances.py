"""Corpus + templates + task -> attribute index, instances and label ids, and back from label ids to
tags: the one path from data to what the trainer and the decoder see, used by fitting, continued
training, seed ensembles (and, later, distributed shards).
"""
from __future__ import annotations

import functools
import hashlib
import warnings
from dataclasses import dataclass

import numpy as np

from structperc.errors import InputError, StructpercWarning
from structperc.features.dictionary import ColumnDictionary
from structperc.features.gazetteer import STAGE_COLUMN
from structperc.features.index import FeatureIndex, Features
from structperc.features.sharding import fit_transform_parallel
from structperc.features.task import Task
from structperc.features.templates import optional_columns_dropped, parse_template, parse_templates
from structperc.io.corpus import Corpus
from structperc.labels import LabelSet, bmes6
from structperc.labels.partial import corpus_allowed, partial_labels
from structperc.labels.schemes import SCHEME_LETTERS, convert_flat, foreign_tags, ids_to_iob2


@dataclass
class Instances:
    """Training instances as the trainer sees them: integer arrays only.

    Attributes
    ----------
    feats : Features
        Attribute ids per token.
    y : array of int32, shape (n_tokens,)
        Gold label ids (in the model's scheme). In a sentence with unknown tags, a label its
        ``allowed`` row admits (the trainer fills these sentences itself).
    allowed : array of bool, shape (n_tokens, L), or None
        The labels each token may take when some tags are unknown (partial-label training, see
        `structperc.labels.partial`); None when every tag is known. Rows of fully labelled
        sentences are one-hot at ``y``.
    """

    feats: Features
    y: np.ndarray
    allowed: np.ndarray | None = None

    @property
    def partial(self) -> bool:
        """Whether some tags are unknown."""
        return self.allowed is not None

    @property
    def n_sentences(self) -> int:
        return len(self.feats.sent_ptr) - 1

    @property
    def n_tokens(self) -> int:
        return int(self.feats.sent_ptr[-1])


def _converts(task: Task) -> bool:
    """Whether the model learns in another scheme than the data's: span tasks in IOBES (by default),
    segmentation in the 6-tag set (`structperc.labels.bmes6`, with ``encoding="bmes6"``)."""
    return task.model_scheme != task.scheme and (task.metric == "span" or task.model_scheme == bmes6.BMES6)


def model_tags(corpus: Corpus, task: Task) -> list[str]:
    """The gold tags of ``corpus`` in the scheme the model learns in (span tasks: IOBES by default)."""
    tags = corpus.columns[task.tag_column]
    if not _converts(task):
        return tags
    if task.model_scheme == bmes6.BMES6:
        return bmes6.from_bmes(*corpus.factorize(task.tag_column), corpus.sent_ptr)
    return convert_flat(tags, corpus.sent_ptr, task.scheme, task.model_scheme)


def hidden_tags(corpus: Corpus, task: Task, unknown: str | None) -> np.ndarray | None:
    """Which tokens of ``corpus`` have an unknown tag (the ``unknown`` marker in the tag column),
    bool (n_tokens,); None when none has (or ``unknown`` is None: no marker)."""
    tags = corpus.columns[task.tag_column]
    if unknown is None or unknown not in tags:
        return None
    return np.fromiter((t == unknown for t in tags), dtype=bool, count=len(tags))


def complete_sentences(corpus: Corpus, task: Task, unknown: str | None) -> np.ndarray | None:
    """Indices of the sentences of ``corpus`` whose tags are all known; None when all are."""
    hidden = hidden_tags(corpus, task, unknown)
    if hidden is None:
        return None
    sent_of = np.repeat(np.arange(len(corpus)), np.diff(corpus.sent_ptr))
    return np.setdiff1d(np.arange(len(corpus)), sent_of[hidden])


def _labels_and_ids(corpus: Corpus, task: Task, tags: list[str], unknown: str | None,
                    base: list[str] | None = None) -> tuple[LabelSet, np.ndarray, np.ndarray | None]:
    """The label set (grown from ``base`` when given), the gold ids and the allowed sets.

    Without unknown tags this is exactly the fully labelled path (the same label set and ids, no
    allowed sets): partial-label support must not change a fully labelled model by a bit.
    """
    hidden = hidden_tags(corpus, task, unknown)
    if hidden is None:
        label_set = LabelSet((base or []) + tags)
        return label_set, label_set.encode(tags), None
    assert unknown is not None
    known = [t for t, h in zip(tags, hidden.tolist()) if not h]
    if not known and not base:
        raise InputError(f"every tag is unknown ({unknown!r}): nothing to learn the labels from",
                         corpus.source)
    model_scheme, data_scheme = _schemes(task)
    label_set = LabelSet((base or []) + partial_labels(known, model_scheme, data_scheme))
    y = label_set.encode([label_set.labels[0] if h else t for t, h in zip(tags, hidden.tolist())])
    allowed = corpus_allowed(corpus.columns[task.tag_column], corpus.sent_ptr, label_set.labels,
                             model_scheme, data_scheme, unknown, y)
    # a label each row admits (the first one), so that y stays a valid id everywhere
    free = ~allowed[np.arange(len(y)), y]
    y[free] = np.argmax(allowed[free], axis=1)
    return label_set, y, allowed


def _schemes(task: Task) -> tuple[str, str]:
    """(model scheme, data scheme): the pair `model_tags` converts between (the same when none)."""
    if _converts(task):
        return task.model_scheme, task.scheme
    return task.scheme, task.scheme


def data_tags(ids: np.ndarray, sent_ptr: np.ndarray, labels: list[str], task: Task) -> list[str]:
    """Predicted label ids as tags of the data's scheme (flat, in corpus order)."""
    if task.model_scheme == bmes6.BMES6 and task.scheme == "bmes":  # a table lookup per id: B2, B3 -> M
        return np.array(bmes6.to_bmes_table(labels), dtype=object)[np.asarray(ids, dtype=np.int64)].tolist()
    if task.metric == "span" and task.model_scheme != task.scheme:
        if task.scheme == "iob2":
            fast = ids_to_iob2(ids, sent_ptr, labels, task.model_scheme)  # vectorized on ids
            if fast is not None:
                return fast
        return convert_flat(LabelSet(labels).decode(ids), sent_ptr, task.model_scheme, task.scheme)
    return LabelSet(labels).decode(ids)


def check_tags_match(corpus: Corpus, labels: list[str], task: Task) -> None:
    """Refuse gold tags that share nothing with a model's labels: data of another task (chunk tags
    given to an NER model score 0 and would mix two tag sets into one model)."""
    def kinds(values: set[str]) -> set[str]:
        if task.metric == "span":  # compare entity types: the data's scheme may differ from the model's
            return {v[2:] for v in values if len(v) > 2 and v[1] in "-_"}
        return values - {"O"}
    data, model = kinds(set(corpus.factorize(task.tag_column)[0])), kinds(set(labels))
    if data and model and not data & model:
        raise InputError(f"its {task.tag_column!r} tags ({_few(data)}) are none of this {task.name!r} "
                         f"model's ({_few(model)}): data of another task or tag set", corpus.source)


def check_known_tags(corpus: Corpus, labels: list[str], task: Task, unknown: str | None = None) -> None:
    """Refuse, for continued training, gold tags a model does not know (unless it is to add labels):
    data of another task (`check_tags_match`'s message), or a tag set grown by some tags; span tasks
    compare entity types, as the data's scheme may differ from the model's. ``unknown`` (the
    partial-label marker) is no tag."""
    check_tags_match(corpus, labels, task)
    new = set(corpus.factorize(task.tag_column)[0]) - {unknown} - set(labels)
    shown = _few(set(labels), 10)
    types = sorted({t for t in map(_type, labels) if t is not None})
    if task.metric == "span" and types:  # a span tag is known when its type is (tags without one: as they are)
        new = {t for t in new if _type(t) is None or _type(t) not in types}
        # the model's tags as the data's scheme writes them (the model may learn in another)
        shown = f"{'/'.join(p + '-' for p in _PREFIXES.get(task.scheme, 'BI'))} of {_few(set(types), 12)}" + \
            "".join(f", and {label}" for label in sorted(label for label in labels if _type(label) is None))
    if new:
        raise InputError(f"its {task.tag_column!r} tags include {len(new)} that this {task.name!r} model does not "
                         f"know ({_few(new)}); the model's tags are {shown}. To add them (from zero weights), "
                         "continue with --add-labels (add_labels=True)", corpus.source)


#: The prefixes of each span scheme's tags (for messages).
_PREFIXES = {"iob1": "IB", "iob2": "BI", "iobes": "BIES", "bilou": "BILU"}


def _type(tag: str) -> str | None:
    """The type of a span tag (``LOC`` of ``B-LOC``), None for a tag without one (``O``)."""
    return tag[2:] if len(tag) > 2 and tag[1] in "-_" else None


def _few(values: set[str], n: int = 6) -> str:
    shown = sorted(values)
    return ", ".join(shown[:n]) + (f", … ({len(shown)})" if len(shown) > n else "")


def split_tags(flat: list[str], ptr: np.ndarray) -> list[list[str]]:
    """A flat tag list cut into sentences at ``ptr``."""
    p = ptr.tolist()
    return [flat[p[i]:p[i + 1]] for i in range(len(p) - 1)]


def with_dictionary(corpus: Corpus, dictionary: ColumnDictionary | None,
                    template_lines: list[str]) -> Corpus:
    """``corpus`` with the dictionary's columns, when there is one and the templates read them."""
    if dictionary is None or not set(dictionary.columns) & template_columns(template_lines):
        return corpus
    return dictionary.annotate(corpus)


def template_columns(template_lines: list[str]) -> set[str]:
    """Columns that templates read, optional (``?``) ones included."""
    return set(_columns_read(tuple(template_lines)))


@functools.lru_cache(maxsize=64)
def _columns_read(template_lines: tuple[str, ...]) -> frozenset[str]:
    """`template_columns`, parsed once per template (a model asks at every call: 0.2 ms of a one-sentence
    `predict`); a failed parse raises again at every call, as it is not cached."""
    lines = [line.strip().lstrip("?") for line in template_lines]
    return frozenset(p.atom.column for t in parse_templates(lines) for p in t.parts)


def columns_to_read(task: Task, template_lines: list[str], *, gold: bool,
                    dictionary: ColumnDictionary | None = None) -> set[str] | None:
    """The columns of an input a model needs (a file may have many more: CoNLL-U has ten): those its
    templates read, less those a learnt ``dictionary`` writes and the first stage's column (training
    and a two-stage model's first stage write it), plus the tokens, and the gold tags when scoring.
    None when the templates do not parse (reading every column lets the usual error surface where it
    always did)."""
    try:
        reads = template_columns(template_lines) - set(dictionary.columns if dictionary else ()) - {STAGE_COLUMN}
    except (InputError, ValueError):
        return None
    return reads | {task.token_column} | ({task.tag_column} if gold else set())


def check_span_tags(corpus: Corpus, task: Task, unknown: str | None = None) -> None:
    """Refuse gold tags a span task's scheme does not write (``garbage`` in an IOB2 chunk column) beside tags it
    does, naming the first one's line when the corpus knows its sentences' lines. Tags none of which is a span tag
    (``DT``, ``NN`` given to the default ``chunk`` task) are plain labels, learnt as they are."""
    if task.metric != "span" or task.scheme not in SCHEME_LETTERS:
        return
    distinct, codes = corpus.factorize(task.tag_column)
    bad = foreign_tags(distinct, task.scheme, unknown)
    if not bad or len(bad) == sum(t not in ("O", unknown) for t in distinct):
        return  # all span tags; or none is (plain labels under the default task: they are learnt as they are)
    where = corpus.where(int(np.flatnonzero(codes == distinct.index(bad[0]))[0]))
    more = f" (and {len(bad) - 1} more: {', '.join(map(repr, bad[1:4]))}{', …' if len(bad) > 4 else ''})" \
        if len(bad) > 1 else ""
    raise InputError(f"tag {bad[0]!r} is not an {task.scheme} tag{more}: a span tag is O or "
                     f"{'/'.join(SCHEME_LETTERS[task.scheme])}-TYPE (--scheme names the data's scheme)", where)


def warn_unread(given: list[str], kept: list[str], reads: set[str], task: Task) -> None:
    """Warn when optional template lines were left out for a column the data lacks while a column the user named
    is read by nothing: most likely one column under two names (``--columns word,POS,chunk`` for the preset's
    ``pos``), which would otherwise train a weaker model without a word."""
    named = [c for c in task.columns if c not in ("_", task.tag_column, task.token_column) and c not in reads]
    left_out = sorted({p.atom.column for line in set(given) - set(kept) if line.strip().startswith("?")
                       for p in parse_template(line.strip()[1:]).parts} - reads)
    if named and left_out:
        warnings.warn(f"column(s) {', '.join(named)} are read by no template line, and the lines reading "
                      f"{', '.join(left_out)} were left out (the data has no such column): is a column named "
                      "otherwise in --columns?", StructpercWarning, stacklevel=2)


def check_reads(reads: set[str], columns: set[str], task: Task, source: str | None) -> None:
    """Refuse templates that read the gold tags (a model would learn them from themselves: near-perfect scores
    on gold-tagged files, nothing on untagged text) or a column the data lacks. ``columns``: those the data
    gives; the message names the task's input columns (a corpus holds only the columns read)."""
    if task.tag_column in reads:
        raise InputError(f"the template reads the tag column {task.tag_column!r}, the gold tags the model is to "
                         f"predict (columns: {', '.join(c for c in task.columns if c != '_')}; is a column named "
                         "wrongly in --columns?)", source)
    missing = sorted(reads - columns)
    if missing:
        named = [c for c in task.columns if c != "_" and c != task.tag_column] or sorted(columns)
        raise InputError(f"the template reads column(s) {', '.join(missing)} that the data lacks "
                         f"(its columns: {', '.join(named)})", source)


#: The feature indexes and attribute ids made so far for the runs of one vote (`training_instances`'s
#: ``shared``), by `features_key`.
SharedFeatures = dict[str, tuple[FeatureIndex, Features]]


def training_instances(corpus: Corpus, task: Task, template_lines: list[str],
                       min_count: int, unknown: str | None = None, workers: int = 1,
                       shared: SharedFeatures | None = None) \
        -> tuple[FeatureIndex, list[str], LabelSet, Instances]:
    """Fit the attribute index and the label set on ``corpus``; ``workers`` > 1 fits the index on
    that many threads (`structperc.features.sharding`: the same index and ids).

    Returns the index, the template lines it uses (optional ones whose column the data lacks are
    dropped), the label set and the instances. Tags equal to ``unknown`` are unknown (not labels):
    the instances then carry each token's allowed labels (partial-label training).

    ``shared`` (a dict kept across the runs of one vote, `structperc.train.run.fit`): runs of the same
    lines and cut-off over the same columns (`features_key`) get one index and one set of attribute ids, the
    same objects; only their labels (each member's encoding) are made again.
    """
    lines = optional_columns_dropped(template_lines, set(corpus.columns))
    templates = parse_templates(lines)
    reads = {p.atom.column for t in templates for p in t.parts}
    check_reads(reads, set(corpus.columns), task, corpus.source)
    warn_unread(template_lines, lines, reads, task)
    if corpus.n_tokens == 0:
        raise InputError("no tokens to train on (every sentence is empty)", corpus.source)
    check_span_tags(corpus, task, unknown)
    tags = model_tags(corpus, task)
    label_set, y, allowed = _labels_and_ids(corpus, task, tags, unknown)
    del tags
    key = "" if shared is None else features_key(corpus, lines, min_count, reads)
    if shared is not None and key in shared:
        index, feats = shared[key]
        return index, lines, label_set, Instances(feats, y, allowed)
    index = FeatureIndex(templates, min_count)
    feats = fit_transform_parallel(index, corpus, workers)
    if index.n_state_attributes + index.n_transition_attributes == 0:
        raise InputError(f"no attributes left to learn from: min_count={min_count} keeps none of them"
                         if min_count > 1 else "the templates give no attribute on this data",
                         corpus.source)
    if shared is not None:
        shared[key] = (index, feats)
    return index, lines, label_set, Instances(feats, y, allowed)


def features_key(corpus: Corpus, lines: list[str], min_count: int, reads: set[str]) -> str:
    """A digest of what the attributes of ``lines`` over ``corpus`` depend on: the lines, the cut-off, the
    sentence bounds and every column the lines read (``reads``: its distinct values and codes)."""
    h = hashlib.sha256()
    h.update("\n".join(lines).encode("utf-8", "surrogatepass"))
    h.update(str(min_count).encode())
    h.update(corpus.sent_ptr.tobytes())
    for column in sorted(reads):
        distinct, codes = corpus.factorize(column)
        h.update(column.encode("utf-8", "surrogatepass") + b"\x00")
        h.update("\x00".join(distinct).encode("utf-8", "surrogatepass") + b"\x01")
        h.update(np.ascontiguousarray(codes).tobytes())
    return h.hexdigest()


def extended_instances(corpus: Corpus, task: Task, index: FeatureIndex, labels: list[str],
                       unknown: str | None = None) -> tuple[LabelSet, Instances, np.ndarray, np.ndarray]:
    """Grow a fitted index and label set with new data (continued training).

    Returns the grown label set, the new data's instances (with allowed labels when some tags are
    ``unknown``), and the new ids of the old state and transition attributes.
    """
    tags = model_tags(corpus, task)
    label_set, y, allowed = _labels_and_ids(corpus, task, tags, unknown, base=labels)
    feats, state_map, trans_map = index.extend(corpus)
    return label_set, Instances(feats, y, allowed), state_map, trans_map


def corpus_digest(corpus: Corpus) -> str:
    """A digest of every column of a corpus (checkpoints resume only on the same data)."""
    h = hashlib.sha256()
    h.update(corpus.sent_ptr.tobytes())
    for name in sorted(corpus.columns):
        h.update(name.encode())
        h.update("\x00".join(corpus.columns[name]).encode("utf-8", "surrogatepass"))
    return h.hexdigest()
