"""``structperc train``: train a tagger or a segmenter and save it (one library call:
`structperc.commands.train`), with progress on standard error."""
from __future__ import annotations

import sys

import click

from structperc.cli.environment import single_threaded_blas


def _columns(value: str | None) -> list[str] | None:
    return [c.strip() for c in value.split(",")] if value else None


def _progress(epochs: int, quiet: bool):
    """Progress on standard error: one line per epoch (epoch, mistakes, dev score, seconds,
    tokens/s) that stays, and on a terminal a live bar for the epoch under way."""
    if quiet:
        return None, None
    if not sys.stderr.isatty():
        return (lambda report: click.echo(str(report), err=True)), None
    current = {"epoch": 1, "epochs": epochs}

    def bar(done: int, total: int) -> None:
        filled = 30 * done // max(total, 1)
        sys.stderr.write(f"\r\x1b[2Kepoch {current['epoch']}/{current['epochs']} "
                         f"[{'#' * filled}{'.' * (30 - filled)}] {done:,}/{total:,} sentences")
        sys.stderr.flush()

    def line(report) -> None:
        sys.stderr.write("\r\x1b[2K")  # the bar's line becomes the epoch's line
        click.echo(str(report), err=True)
        current.update(epoch=report.epoch % report.epochs + 1, epochs=report.epochs)
    return line, bar


@click.command("train")
@click.option("--train", "train_path", required=True, metavar="FILE",
              help="Training corpus: CoNLL columns (.gz ok) or CoNLL-U (.conllu).")
@click.option("--dev", "dev_path", metavar="FILE", help="Held-out corpus: keep the epoch that scores best on it.")
@click.option("--dev-split", type=click.FloatRange(0.0, 1.0, max_open=True), default=0.0, show_default=True,
              help="Hold out this fraction of --train to pick the number of epochs, then retrain on all "
                   "of it (use instead of --dev to keep the test set unseen).")
@click.option("--model", "model_path", required=True, metavar="DIR", help="Where to save the model.")
@click.option("--task", type=click.Choice(["chunk", "ner", "pos", "cws"]),
              help="Preset of columns, template, label scheme and metric [default: chunk, or with "
                   "--init-model the model's own task].")
@click.option("--columns", help="Column names, left to right, e.g. word,pos,chunk ('_' skips one).")
@click.option("--tag-column", help="Column to predict [default: the last named column].")
@click.option("--template", help="Template preset (crfsuite, chunk, …) or a file with one template per line.")
@click.option("--epochs", type=click.IntRange(min=1), help="Passes over the training data [default: task's].")
@click.option("--min-count", type=click.IntRange(min=1), default=1, show_default=True,
              help="Drop attributes seen fewer times in training (a template ending in @N, e.g. "
                   "lower(w[0])|clu6[1]@3, has a count of its own).")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="Seed of the per-epoch shuffling and the dictionary folds (a non-negative integer).")
@click.option("--feature-set", type=click.Choice(["all", "observed"]), default="all", show_default=True,
              help="State weights for every (attribute, label) pair, or only for the pairs seen in "
                   "training (CRFsuite's feature set: far less memory, smaller model).")
@click.option("--scheme", type=click.Choice(["none", "iob1", "iob2", "iobes", "bilou", "bmes"]),
              help="Tag scheme of the data [default: task's].")
@click.option("--constrained/--unconstrained", default=None,
              help="Forbid transitions the scheme does not allow [default: on for span tasks].")
@click.option("--encoding", type=click.Choice(["iob1", "iob2", "iobes", "bmes", "bmes6"]),
              help="Scheme the model learns in; output keeps the data's scheme. Span tasks: iob1, iob2 or iobes "
                   "[default: iobes]. --task cws: bmes, or bmes6, the 6-tag set B B2 B3 M E S of Zhao et al. 2006 "
                   "(the 2nd and 3rd characters of a word get tags of their own) [default: bmes].")
@click.option("--lexicon", metavar="FILE",
              help="cws: extra dictionary words, one per line (training words are always used).")
@click.option("--raw", metavar="FILE",
              help="cws: unsegmented text, one sentence per line, added to the accessor variety statistics "
                   "of templates reading av* columns (the training text is always used).")
@click.option("--checkpoint-dir", metavar="DIR",
              help="Save the trainer state after every epoch to DIR (atomically; the latest epoch's only), "
                   "to --resume a run that stopped. Removed once the model is saved, unless --keep-checkpoint.")
@click.option("--resume", metavar="DIR",
              help="Continue the run whose checkpoint is in DIR (--epochs: at least the checkpoint's).")
@click.option("--keep-checkpoint", is_flag=True,
              help="Keep the checkpoint in --checkpoint-dir after the model is saved (by default it is removed).")
@click.option("--init-model", metavar="DIR",
              help="Continue training this saved model on --train (new attributes are added; tags the "
                   "model does not know are refused, unless --add-labels). The model keeps its own columns, "
                   "template, scheme, seed and training options: only --epochs and --dev apply.")
@click.option("--add-labels", is_flag=True,
              help="With --init-model: add the tags of --train that the model does not know as new labels "
                   "(from zero weights), growing its tag set.")
@click.option("--tokens-column", default="tokens", show_default=True,
              help="Token column when --train is a dataset (datasets directory, .jsonl, .parquet, hf:NAME).")
@click.option("--tags-column", help="Tag column of a dataset [default: the task's tag column].")
@click.option("--tag-dictionary", is_flag=True, default=None,
              help="Learn the tags seen with each frequent word and decode only among them (POS: faster).")
@click.option("--unknown-tag", default="?", show_default=True, metavar="TAG",
              help="A training tag meaning 'unknown' (partial labels: the best path agreeing with the "
                   "known tags fills it in).")
@click.option("--plot", metavar="FILE.png",
              help="Write the learning curve (dev score and training mistakes per epoch); needs matplotlib.")
@click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True, metavar="N",
              help="Train on N shards of the data at once, one process each (iterative parameter mixing, "
                   "McDonald et al. 2010). N > 1 gives a different model from N = 1, but the same model "
                   "again for the same N and --seed; its checkpoints resume with the same N.")
@click.option("--step", type=click.Choice(["perceptron", "pa"]), default=None,
              help="The update: the perceptron's step of 1, or passive-aggressive steps (PA-I, Crammer et al. "
                   "2006: the smallest step that fixes the mistake, at most --pa-c) [default: perceptron].")
@click.option("--margin", type=click.FloatRange(min=0.0), default=None,
              help="Train with this margin per wrong tag (cost-augmented decoding: the structured margin "
                   "perceptron) [default: 0].")
@click.option("--pa-c", "C", type=click.FloatRange(min=0.0, min_open=True), default=None,
              help="The largest passive-aggressive step (with --step pa) [default: 1].")
@click.option("--order", type=click.IntRange(1, 2), default=None,
              help="Markov order of the transitions: 2 adds (y[-2], y[-1], y[0]) transitions, decoded by a Viterbi "
                   "over label pairs. Opt-in: it paid on NER in our study (esp.testa +0.4 F1, mean of 5 seeds) at "
                   "twice the seconds per epoch (x1.2 for the whole command), and not on chunking, POS or cws. "
                   "One worker; no --margin/--step pa, marginals, k-best or calibration [default: 1].")
@click.option("--two-stage", "two_stage", is_flag=True, default=None,
              help="Train a first-stage tagger as well, and give the model the column tmd: the majority type the "
                   "first stage predicts for the other occurrences of each word within 20 sentences (Krishnan & "
                   "Manning 2006). Opt-in for NER: +0.65 F1 on esp.testa, +0.46 on ned.testa in our study (5 seeds), "
                   "training x1.7-1.8, tagging x1.2-1.4. Templates reading tmd turn it on too.")
@click.option("--clusters", "clusters", metavar="FILE",
              help="Word clusters ('structperc clusters', or wcluster's paths file) for templates reading "
                   "clu4, clu6, clu10, clu20 or clu (cluster-path prefixes); saved in the model.")
@click.option("--lang", "lang", metavar="CODE", default=None,
              help="Add what the field already learnt for language CODE from unlabelled text, carried inside the "
                   "model (tagging needs no extra package): Brown clusters for tagging (en, es, de; with --task "
                   "pos also how each word's capitalisation compares with its other case in the word "
                   "frequencies (en, es, de, el) and, for en, WordNet's parts of speech), jieba's dictionary words "
                   "for --task cws (zh). A language whose resources the task's preset does not read (Dutch's "
                   "lemma tables; Greek's frequencies but for --task pos) is refused in one line unless --template "
                   "reads lpos/frq/cap; other languages are refused. Needs pip install \"structperc[resources]\" "
                   "to train.")
@click.option("--dask", metavar="ADDRESS", default=None,
              help="With --workers N: run the N shards' epochs on a Dask cluster (a scheduler address such as "
                   "tcp://host:8786, or local:K for K worker processes here); the same model as without it. "
                   "Needs pip install \"structperc[dask]\".")
@click.option("--read-on-workers", is_flag=True,
              help="With --dask and --workers N: the Dask workers read --train themselves, N byte ranges of it "
                   "cut at blank lines, and featurize their own range; the driver reads only --dev. The file "
                   "must be readable at the same path on every worker. Not for learnt dictionaries "
                   "(the cws, pos and ner presets), --dev-split or --tag-dictionary.")
@click.option("--mixing", type=click.Choice(["uniform", "mistakes"]), default=None,
              help="With --workers N > 1: mix the shards' weights uniformly, or weighted by each shard's "
                   "mistakes in the epoch [default: uniform].")
@click.option("--seeds", metavar="S1,S2,…", default=None, callback=lambda ctx, param, value: _seeds(value),
              help="Seed averaging: train one model per seed on the same features and keep the mean of their weights "
                   "(the first seed fixes what --seed fixes; --epochs, or the epochs the first seed picks on "
                   "--dev-split, for every member). Opt-in: +0.2 F1 on CoNLL-2000's held-out tenth with --lang en "
                   "(3 seeds), for three times the training time and twice the memory; with --order 2 and "
                   "--two-stage each stage is averaged. Taggers on one process.")
@click.option("--vote", metavar="E1,E2,…", default=None, callback=lambda ctx, param, value: _encodings(value),
              help="Span tasks: train one more member per encoding listed (iob2, iob1, iobes; not the model's own "
                   "--encoding), each as the model is trained, for as many epochs; tagging keeps the spans most "
                   "members predict (Kudo & Matsumoto 2001). Opt-in: esp.testa +0.65 F1 with --vote iob2,iob1 "
                   "(3 seeds, --lang es --order 2 --two-stage), for twice the training time, tagging time and model "
                   "size. No forced or allowed tags, --nbest or explain; probabilities are the first member's.")
@click.option("-q", "--quiet", is_flag=True, help="No progress output.")
def train(train_path, dev_path, dev_split, model_path, task, columns, tag_column, template, epochs,
          min_count, seed, feature_set, scheme, constrained, encoding, lexicon, raw, checkpoint_dir, resume, init_model,
          add_labels, tokens_column, tags_column, tag_dictionary, unknown_tag, plot, workers, step, margin, C, order,
          two_stage, clusters, lang, dask, read_on_workers, mixing, keep_checkpoint, seeds, vote, quiet):
    """Train a tagger (or, with --task cws, a word segmenter) and save it to --model."""
    single_threaded_blas()
    from structperc import commands
    from structperc.features.task import get_task
    from structperc.train.options import OptionError

    # click parses each flag; the rules about their values and combinations are `commands.train`'s
    # (`structperc.train.options`, the same for every face)
    callback, progress = _progress(epochs or get_task(task or "chunk").epochs, quiet)
    try:
        model, path = commands.train(train_path, model_path, task=task, dev_path=dev_path, init_model=init_model,
                             lexicon=lexicon, tokens_column=tokens_column, tags_column=tags_column,
                             callback=callback, progress=progress, checkpoint_dir=checkpoint_dir, resume=resume,
                             plot=plot, workers=workers, mixing=mixing, clusters=clusters,
                             keep_checkpoint=keep_checkpoint, dask=dask, read_on_workers=read_on_workers,
                             add_labels=add_labels, template=template, columns=_columns(columns),
                             tag_column=tag_column, scheme=scheme, constrained=constrained, encoding=encoding,
                             epochs=epochs, min_count=min_count, seed=seed, dev_split=dev_split,
                             feature_set=feature_set, tag_dictionary=tag_dictionary, unknown_tag=unknown_tag,
                             step=step, margin=margin, C=C, order=order, two_stage=two_stage, raw=raw,
                             lang=lang, seeds=seeds, vote=vote)
    except OptionError as exc:
        if exc.usage:  # a flag of another trainer: a usage error, as click's own parsing reports one
            raise click.UsageError(exc.reason) from None
        raise
    if not quiet:
        extra = f", best epoch {model.best_epoch_}" if (dev_path or dev_split) else ""
        if seeds and len(seeds) > 1:  # each member's epochs were reported above, one run after the other
            extra += f", the mean weights of seeds {', '.join(map(str, seeds))}"
        if vote:
            extra += f", voting with members learning {', '.join(vote)}"
        c = getattr(model, "calibration_", None)
        if c:
            extra += (f", temperature {c['temperature']:.3g}: held-out ECE {c['ece'][0]:.4f} -> "
                      f"{c['ece'][1]:.4f}")
        click.echo(f"saved {path} ({len(model.labels_)} labels, "
                   f"{model.features_.n_state_attributes:,} attributes{extra})", err=True)


def _encodings(value: str | None) -> list[str] | None:
    """``--vote iob2,iob1`` as a list of names (their rules: `structperc.train.options`)."""
    return None if value is None else [v.strip() for v in value.split(",")]


def _seeds(value: str | None) -> list[int] | None:
    """``--seeds 0,1,2`` as a list of integers (their rules: `structperc.train.options`)."""
    if value is None:
        return None
    try:
        return [int(v) for v in value.split(",")]
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a comma-separated list of integers (e.g. 0,1,2)") from None
