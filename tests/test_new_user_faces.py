"""Issue 28, the faces a user meets outside the HTTP service (tests/service/test_new_user_service.py has
those): a saved spaCy pipeline loads from anywhere (item 7); a segmentation model refuses to be a
`Tagger` and names the segmenter's way (item 8); a Hugging Face dataset with no hub to reach fails at
once in one line (item 11); probabilities of a model with no fitted temperature say so once, naming
``structperc calibrate`` (item 14)."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest
from testkit import CWS_TRAIN, TOY, conll_text

from structperc import Tagger
from structperc.errors import InputError, UncalibratedWarning
from structperc.segmenter import Segmenter

# (word, ner), IOB2
NER = [[("Juan", "B-PER"), ("vive", "O"), ("en", "O"), ("Madrid", "B-LOC"), (".", "O")],
       [("María", "B-PER"), ("ama", "O"), ("Lima", "B-LOC")],
       [("Pedro", "B-PER"), ("visita", "O"), ("Madrid", "B-LOC"), (".", "O")]]
NER_X = [[w for w, _ in s] for s in NER]
NER_Y = [[t for _, t in s] for s in NER]
TOY_X = [[(w, p) for w, p, _ in s] for s in TOY]
TOY_Y = [[c for _, _, c in s] for s in TOY]


def command() -> list[str]:
    exe = shutil.which("structperc") or str(Path(sys.executable).with_name("structperc"))
    return [exe] if Path(exe).exists() else [sys.executable, "-m", "structperc"]


def one_error_line(proc: subprocess.CompletedProcess, *contains: str) -> str:
    """Exit status 1 and exactly one line on standard error, ``Error: ...`` holding ``contains``."""
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr + proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), proc.stderr
    for part in contains:
        assert part in lines[0], lines[0]
    return lines[0]


# ------------------------------------------------------------------------------ item 7: spaCy
def test_saved_spacy_pipeline_loads_from_anywhere_once_the_model_folder_is_gone(tmp_path, monkeypatch):
    spacy = pytest.importorskip("spacy", reason="spaCy is not installed (pip install \"structperc[spacy]\")")
    build, elsewhere = tmp_path / "build", tmp_path / "elsewhere"
    build.mkdir()
    elsewhere.mkdir()
    monkeypatch.chdir(build)
    # models saved under relative paths, and pipelines whose configs name them so
    Tagger(task="ner", columns=["word", "ner"], epochs=5, seed=0).fit(NER_X, NER_Y).save("ner-model")
    Segmenter(epochs=5, seed=0).fit(CWS_TRAIN).save("cws-model")
    nlp = spacy.blank("xx")
    nlp.add_pipe("structperc", config={"model": "ner-model"})
    zh = spacy.blank("zh", config={"nlp": {"tokenizer": {"@tokenizers": "structperc.Tokenizer.v1",
                                                         "model": "cws-model"}}})
    text, zh_text = "María vive en Madrid .", "上海体育局召开会议"
    ents = [(e.start, e.end, e.label_) for e in nlp(text).ents]
    words = [t.text for t in zh(zh_text)]
    assert ents and len(words) > 1
    nlp.to_disk(tmp_path / "pipe")
    zh.to_disk(tmp_path / "zh-pipe")
    assert nlp.config["components"]["structperc"]["model"] == "ner-model"  # the config is as given

    shutil.rmtree(build / "ner-model")
    shutil.rmtree(build / "cws-model")
    monkeypatch.chdir(elsewhere)
    loaded = spacy.load(tmp_path / "pipe")
    assert [(e.start, e.end, e.label_) for e in loaded(text).ents] == ents
    loaded_zh = spacy.load(tmp_path / "zh-pipe")
    assert [t.text for t in loaded_zh(zh_text)] == words
    # a loaded pipeline saved again still carries its model
    loaded.to_disk(tmp_path / "again")
    assert [(e.start, e.end, e.label_) for e in spacy.load(tmp_path / "again")(text).ents] == ents
    # a live pipeline is not fooled by its own listing: a component made again reads its config's path
    loaded.remove_pipe("structperc")
    # (a bare word that is no path here may be a shipped model's name: the message says it is neither)
    with pytest.raises(InputError, match="not a path here and not a shipped model's name"):
        loaded.add_pipe("structperc", config={"model": "ner-model"})


# ------------------------------------------------------------------ item 8: a segmenter as a tagger
def test_a_segmentation_model_is_not_a_tagger_and_says_what_to_use(tmp_path):
    Segmenter(epochs=3, seed=0).fit(CWS_TRAIN).save(tmp_path / "cws")
    with pytest.raises(InputError) as info:
        Tagger.load(tmp_path / "cws")
    message = str(info.value)
    assert "Segmenter.load" in message and "structperc segment" in message and "\n" not in message
    assert str(tmp_path / "cws") in message
    assert Segmenter.load(tmp_path / "cws").segment("上海体育局召开会议")  # the way it names works
    proc = subprocess.run(command() + ["tag", "--model", str(tmp_path / "cws")], input="上海 体育局\n",
                          capture_output=True, text=True, timeout=120)
    one_error_line(proc, "structperc segment")


# ----------------------------------------------------------- item 11: a dataset hub out of reach
def _hub_answers() -> bool:
    from urllib.parse import urlsplit

    from huggingface_hub import constants

    url = urlsplit(constants.ENDPOINT)
    try:
        socket.create_connection((url.hostname, url.port or 443), timeout=3).close()
        return True
    except OSError:
        return False


def test_a_hub_dataset_with_no_network_fails_at_once():
    """This machine has no network: the hub client alone retries for about 25 s."""
    if _hub_answers():
        pytest.skip("the Hugging Face Hub answers here; this test is about a machine without network")
    import datasets  # noqa: F401  (its import, seconds on a busy machine, is not what is timed)

    from structperc.io import hf

    start = time.monotonic()
    with pytest.raises(InputError, match="cannot be reached") as info:
        hf.load("hf:structperc-tests/no-such-dataset")
    assert time.monotonic() - start < 5
    assert "\n" not in str(info.value) and "not in the local cache" in str(info.value)


def test_train_on_a_hub_dataset_the_hub_cannot_serve_is_one_quick_error_line(tmp_path):
    """The hub at a loopback port nobody listens on (the same failure wherever the test runs), an empty
    cache: one ``Error:`` line, well before the hub client's own retries (1+2+4+8+8 s) would end."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items()
           if k not in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE")}
    env.update(HF_ENDPOINT=f"http://127.0.0.1:{port}", HF_HOME=str(tmp_path / "hf-home"))
    start = time.monotonic()
    proc = subprocess.run(command() + ["train", "--train", "hf:conll2003", "--model", str(tmp_path / "m")],
                          capture_output=True, text=True, timeout=120, env=env)
    elapsed = time.monotonic() - start
    one_error_line(proc, "cannot load dataset 'conll2003'", "cannot be reached", "127.0.0.1")
    assert elapsed < 15, elapsed  # the process's start-up (imports) included
    assert not (tmp_path / "m").exists()


# ----------------------------------------------------- item 14: probabilities of uncalibrated models
def uncalibrated(seen) -> list:
    return [w for w in seen if issubclass(w.category, UncalibratedWarning)]


@pytest.fixture
def toy_tagger_uncalibrated():
    return Tagger(task="chunk", columns=["word", "pos", "chunk"], epochs=3, seed=0).fit(TOY_X, TOY_Y)


def test_python_probabilities_of_an_uncalibrated_model_warn_once_per_model(toy_tagger_uncalibrated, tmp_path):
    tagger = toy_tagger_uncalibrated
    assert tagger.calibration_ is None
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        tagger.predict(TOY_X)
        tagger.evaluate(TOY_X, TOY_Y)  # a score reports its temperature itself
        assert not uncalibrated(seen)
        tagger.predict_marginals(TOY_X)
        tagger.predict_nbest(TOY_X, k=2)
        tagger.predict_proba_sequence(TOY_X)
        tagger.predict_marginals(TOY_X)
    found = uncalibrated(seen)
    assert len(found) == 1, [str(w.message) for w in found]
    message = str(found[0].message)
    assert "structperc calibrate" in message and "not calibrated" in message and "\n" not in message
    assert issubclass(found[0].category, UserWarning)
    assert found[0].filename == __file__  # the user's line, not the package's
    # another model (loaded again): said once again
    tagger.save(tmp_path / "m")
    other = Tagger.load(tmp_path / "m")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        other.predict_nbest(TOY_X, k=3)
        other.predict_marginals(TOY_X)
    assert len(uncalibrated(seen)) == 1
    # calibrated: nothing to say
    other.calibrate(TOY_X, TOY_Y)
    other.save(tmp_path / "calibrated")
    calibrated = Tagger.load(tmp_path / "calibrated")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        calibrated.predict_marginals(TOY_X)
        calibrated.predict_nbest(TOY_X, k=2)
    assert not uncalibrated(seen)


def test_the_sklearn_face_is_told_how_it_calibrates():
    """The warning sent sklearn users to `structperc calibrate`, which refuses their models (attribute dicts, not
    columns), and to `Tagger.calibrate`, which they do not have: their way is held-out data given to fit."""
    pytest.importorskip("sklearn")
    from structperc.sklearn import StructuredPerceptron

    sp = StructuredPerceptron(max_iterations=2).fit([[{"w": "a"}, {"w": "b"}]], [["B-X", "O"]])
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        sp.predict_marginals([[{"w": "a"}]])
    (found,) = uncalibrated(seen)
    assert "X_dev=..., y_dev=..." in str(found.message) and "structperc calibrate" not in str(found.message)


def test_spacy_confidences_of_an_uncalibrated_model_warn_once(tmp_path):
    spacy = pytest.importorskip("spacy", reason="spaCy is not installed (pip install \"structperc[spacy]\")")
    Tagger(task="ner", columns=["word", "ner"], epochs=5, seed=0).fit(NER_X, NER_Y).save(tmp_path / "ner")
    nlp = spacy.blank("xx")
    nlp.add_pipe("structperc", config={"model": str(tmp_path / "ner"), "marginals": True})
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        list(nlp.pipe(["Juan vive en Lima .", "María ama Madrid"], batch_size=1))
        nlp("Pedro vive en Lima")
    found = uncalibrated(seen)
    assert len(found) == 1 and "structperc calibrate" in str(found[0].message)


def test_cli_probabilities_of_an_uncalibrated_model_say_so_once_on_stderr(toy_tagger_uncalibrated, tmp_path):
    toy_tagger_uncalibrated.save(tmp_path / "m")
    data = tmp_path / "toy.conll"
    data.write_text(conll_text([[(w, p) for w, p, _ in s] for s in TOY]) * 3, encoding="utf-8")
    tag = command() + ["tag", "--model", str(tmp_path / "m")]

    def run(*args: str) -> subprocess.CompletedProcess:
        proc = subprocess.run(tag + list(args), capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        return proc

    plain = run(str(data))
    assert plain.stderr == ""
    for options in (["--marginals"], ["--nbest", "2"]):
        proc = run(*options, str(data), str(data))  # two files: tagged in two passes, said once
        lines = proc.stderr.splitlines()
        assert len(lines) == 1, proc.stderr
        assert lines[0].startswith("Warning: this chunk model is not calibrated"), lines[0]
        assert "structperc calibrate" in lines[0] and "Warning" not in proc.stdout
        said = lines[0]
    marginals = run("--marginals", str(data)).stdout
    assert [line.split()[:3] for line in marginals.splitlines()] == [line.split() for line in plain.stdout.splitlines()]
    # on Dask: said once, by the client, not by each worker
    pytest.importorskip("distributed", reason="--dask needs structperc[dask]")
    on_dask = run("--marginals", "--dask", "local:2", str(data), str(data))
    assert on_dask.stdout == marginals * 2
    assert [line for line in on_dask.stderr.splitlines() if "not calibrated" in line] == [said]
    # eval reports the temperature itself; calibrate fits it; then there is nothing to say
    gold = tmp_path / "gold.conll"
    gold.write_text(conll_text(TOY), encoding="utf-8")
    for step in ("eval", "calibrate"):
        proc = subprocess.run(command() + [step, "--model", str(tmp_path / "m"), str(gold)],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0 and "Warning" not in proc.stderr, proc.stderr
    assert run("--marginals", str(data)).stderr == ""
