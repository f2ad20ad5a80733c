#!/usr/bin/env python
"""Seed averaging (`structperc.ensemble.train_seed_average`) on held-out chunking.

    python scripts/studies/study_seed_average.py                 # seeds 0,1,2; the chunk preset's epochs
    python scripts/studies/study_seed_average.py --lang en --seeds 3,4,5   # with the language resources
    python scripts/studies/study_seed_average.py --lang en --margin 0.5    # members of the margin perceptron
    python scripts/studies/study_seed_average.py --lang en --order 2 --lemmas   # second order, the lexicon's classes
    python scripts/studies/study_seed_average.py --lang en --order 2 --lemmas --xpos  # and the en-xpos column
    python scripts/studies/study_seed_average.py --lang en --xpos-as-pos --epochs 3  # as the shipped en-chunk trains

Protocol (nothing is chosen on a test file): CoNLL-2000 train.txt split as ``--dev-split 0.1`` splits it
(the seeded tenth held out, the same permutation as `structperc.train.run.fit`'s); each seed's tagger and the
average of their weights are trained on the other nine tenths for the preset's fixed number of epochs,
and span F1 is scored on the held-out tenth. Prints each member, their mean, and the average's F1 with
its training cost (one fit per member). ``--lemmas`` adds the lexicon's parts of speech at −1, 0, +1 and
``--xpos`` a second POS column, the shipped ``en-xpos`` model's tags (`study_lang_probes.with_xpos`), read as
`study_lang_probes.XPOS_LINES` (both with ``--lang en``'s cluster window, the template then written out);
``--xpos-as-pos`` reads en-xpos's tags in place of the corpus's POS column (the shipped ``en-chunk``'s training data,
`scripts/build_models.py`), ``--epochs`` fixes the epochs (en-chunk's held-out tenth picks 3).
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from heldout import split

CONLL = Path(__file__).resolve().parents[2].parent / "shared" / "corpora" / "conll2000"


def write_split(path: Path, fraction: float, seed: int, out: Path) -> tuple[Path, Path]:
    """The kept and held-out sentences of ``path`` (as ``dev_split`` cuts them: `heldout.split`), as files."""
    kept, held = split(path.read_text(encoding="utf-8").strip().split("\n\n"), seed, fraction)
    files = []
    for name, sents in (("kept.txt", kept), ("held.txt", held)):
        f = out / name
        f.write_text("\n\n".join(sents) + "\n\n", encoding="utf-8")
        files.append(f)
    return files[0], files[1]


def main() -> None:
    from structperc import Tagger
    from structperc.ensemble import train_seed_average

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--split-seed", type=int, default=0, help="seed of the held-out tenth")
    ap.add_argument("--lang", help="train with the language's resources (--lang)")
    ap.add_argument("--margin", type=float, default=0.0, help="the structured margin perceptron's margin (--margin)")
    ap.add_argument("--order", type=int, default=1, help="the Markov order of the transitions (--order)")
    ap.add_argument("--lemmas", action="store_true", help="add the lexicon's parts of speech (lpos) at -1, 0, +1")
    ap.add_argument("--xpos", action="store_true", help="add the shipped en-xpos model's tags as a second POS column")
    ap.add_argument("--xpos-as-pos", action="store_true",
                    help="read the shipped en-xpos model's tags as the POS column (as en-chunk is trained)")
    ap.add_argument("--epochs", type=int, help="epochs of every fit (default: the chunk preset's)")
    args = ap.parse_args()
    if args.xpos and args.xpos_as_pos:
        ap.error("--xpos adds en-xpos's tags beside the corpus's; --xpos-as-pos reads them in its place: one of them")
    seeds = [int(s) for s in args.seeds.split(",")]
    params: dict = dict(task="chunk", columns=["word", "pos", "chunk"], margin=args.margin,
                        **({"lang": args.lang} if args.lang else {}), **({"order": 2} if args.order == 2 else {}),
                        **({"epochs": args.epochs} if args.epochs else {}))
    if args.lemmas or args.xpos:
        from study_lang_probes import CLUSTER_WINDOW, LEMMA_LINES, XPOS_LINES, preset

        params["template"] = preset("chunk") + CLUSTER_WINDOW + (XPOS_LINES if args.xpos else []) + (
            LEMMA_LINES if args.lemmas else [])
    with tempfile.TemporaryDirectory() as tmp:
        source = CONLL / "train.txt"
        if args.xpos or args.xpos_as_pos:
            from study_lang_probes import with_xpos

            source = with_xpos(source, Path(tmp) / "train.xpos.txt")
            params["columns"] = ["word", "pos", "xp", "chunk"] if args.xpos else ["word", "_", "pos", "chunk"]
        kept, held = write_split(source, 0.1, args.split_seed, Path(tmp))
        singles = []
        for s in seeds:
            started = time.perf_counter()
            f1 = Tagger(seed=s, **params).fit(str(kept)).score(str(held))
            singles.append(f1)
            print(f"seed {s}: held-out F1 {100 * f1:.2f}  ({time.perf_counter() - started:.1f} s)", flush=True)
        started = time.perf_counter()
        avg = train_seed_average(str(kept), seeds=seeds, **params).score(str(held))
        seconds = time.perf_counter() - started
    mean = statistics.mean(singles)
    print(f"members' mean {100 * mean:.2f}; average of {len(seeds)} seeds {100 * avg:.2f} "
          f"(Δ {100 * (avg - mean):+.2f}; {seconds:.1f} s for {len(seeds)} fits)")


if __name__ == "__main__":
    main()
