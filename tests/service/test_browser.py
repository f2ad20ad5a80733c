"""The web page of `structperc serve`, driven in headless Chromium: what the page shows must be what the
JSON API answers for the same input (spans, tags, words, confidences), and bad input must end in a
readable error on the page rather than a broken one. Needs Debian's chromium and chromedriver (CI
installs them); the tests skip, naming the missing binary, where they are absent."""
from __future__ import annotations

from pathlib import Path

import pytest

webdriver = pytest.importorskip("selenium.webdriver", reason="the browser tests need selenium (the test extra)")

from selenium.common.exceptions import TimeoutException  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support import expected_conditions as EC  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
WAIT = 20  # seconds; an upper bound for explicit waits, never a sleep
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """One headless Chromium for the module (starting one costs about a second)."""
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.exists()]
    if missing:
        pytest.skip(f"the browser tests need {' and '.join(missing)} (apt-get install chromium chromium-driver)")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic",
                "--no-first-run", "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--window-size=1200,900",
                f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def page(browser, server):
    """The page freshly loaded from the session's server, its model list filled in."""
    browser.get(server.url + "/")
    WebDriverWait(browser, WAIT).until(EC.element_to_be_clickable((By.ID, "submit")))
    return browser


def wait(driver, condition):
    return WebDriverWait(driver, WAIT).until(condition)


def run(driver, model: str | None, text: str, *, ctrl_enter: bool = False) -> None:
    """Pick ``model`` (None: keep the default), type ``text`` and submit it."""
    if model is not None:
        Select(driver.find_element(By.ID, "model")).select_by_value(model)
    box = driver.find_element(By.ID, "text")
    box.clear()
    if text:
        box.send_keys(text)
    if ctrl_enter:
        box.send_keys(Keys.CONTROL, Keys.ENTER)
    else:
        driver.find_element(By.ID, "submit").click()


def wait_for(driver, css: str) -> list:
    """The result elements matching ``css`` once there are some; fails with the page's error, if any."""
    def ready(d):
        found = d.find_elements(By.CSS_SELECTOR, css)
        if found:
            return found
        if d.find_element(By.ID, "error").is_displayed():
            return "error"
        return False
    try:
        found = wait(driver, ready)
    except TimeoutException:  # pragma: no cover - the message is the point
        raise AssertionError(f"no {css!r} on the page after {WAIT} s") from None
    if found == "error":
        raise AssertionError(f"the page shows an error instead of {css!r}: {page_error(driver)!r}")
    return found


def page_error(driver) -> str:
    return driver.find_element(By.ID, "error").text


def wait_for_error(driver) -> str:
    wait(driver, lambda d: d.find_element(By.ID, "error").is_displayed() and page_error(d))
    return page_error(driver)


def shown_spans(driver) -> list[tuple[int, str, str]]:
    """(sentence index, type, the span's words) of every span on the page."""
    out = []
    for s, sentence in enumerate(driver.find_elements(By.CSS_SELECTOR, "#result .sentence")):
        for mark in sentence.find_elements(By.CSS_SELECTOR, "mark.span"):
            words = [t.text for t in mark.find_elements(By.CSS_SELECTOR, ".tok")]
            label = mark.find_element(By.CSS_SELECTOR, ".span-label").text
            assert label == mark.get_attribute("data-type")
            out.append((s, mark.get_attribute("data-type"), " ".join(words)))
    return out


def api_spans(response: dict) -> list[tuple[int, str, str]]:
    return [(s, span["type"], " ".join(tokens[span["start"]:span["end"]]))
            for s, (tokens, spans) in enumerate(zip(response["tokens"], response["spans"])) for span in spans]


def api(server, path: str, body: dict) -> dict:
    status, response = server.request("POST", path, body)
    assert status == 200, response
    return response


def test_ner_spans_are_the_servers(page, server, tmp_path):
    text = "Juan Pérez vive en Madrid ."
    run(page, "ner", text)
    wait_for(page, "#result mark.span")
    shown = shown_spans(page)
    expected = api_spans(api(server, "/tag", {"model": "ner", "text": text}))
    assert shown == expected
    assert (0, "PER", "Juan Pérez") in shown and (0, "LOC", "Madrid") in shown
    # the words outside spans are on the page too, in order
    words = [t.text for t in page.find_elements(By.CSS_SELECTOR, "#result .tok")]
    assert words == text.split()
    # one colour per type: the two types get different backgrounds
    colours = {m.get_attribute("data-type"): m.value_of_css_property("background-color")
               for m in page.find_elements(By.CSS_SELECTOR, "#result mark.span")}
    assert colours["PER"] != colours["LOC"]
    shot = tmp_path / "ner.png"
    assert page.save_screenshot(str(shot))
    assert shot.read_bytes()[:8] == PNG_MAGIC


def test_pos_tags_under_words_with_confidence(page, server):
    text = "The cat sat on the mat .\nPrices rose sharply ."
    assert page.find_element(By.ID, "marginals").is_selected()  # checked by default
    run(page, "pos", text)
    wait_for(page, "#result .tok .tag")
    response = api(server, "/tag", {"model": "pos", "text": text, "marginals": True})
    sentences = page.find_elements(By.CSS_SELECTOR, "#result .sentence")
    assert len(sentences) == 2
    for s, sentence in enumerate(sentences):
        toks = sentence.find_elements(By.CSS_SELECTOR, ".tok")
        assert [t.find_element(By.CSS_SELECTOR, ".word").text for t in toks] == response["tokens"][s]
        assert [t.find_element(By.CSS_SELECTOR, ".tag").text for t in toks] == response["tags"][s]
        for tok, tag, p in zip(toks, response["tags"][s], response["confidence"][s]):
            assert tok.get_attribute("title") == f"{tag} · {p:.2f}"
            assert ("low" in tok.get_attribute("class").split()) == (p < 0.5)
    # confidence off: the title names the tag alone
    first = page.find_element(By.CSS_SELECTOR, "#result .tok")
    page.find_element(By.ID, "marginals").click()
    run(page, None, text)
    wait(page, EC.staleness_of(first))
    toks = wait_for(page, "#result .tok")
    assert [t.get_attribute("title") for t in toks[:7]] == response["tags"][0]


def test_cws_words_are_the_servers(page, server):
    text = "上海体育局召开会议"
    run(page, "cws", text, ctrl_enter=True)  # Ctrl+Enter submits too
    wait_for(page, "#result .segmented .word")
    shown = [[w.text for w in line.find_elements(By.CSS_SELECTOR, ".word")]
             for line in page.find_elements(By.CSS_SELECTOR, "#result .sentence")]
    assert shown == api(server, "/segment", {"model": "cws", "text": text})["words"]
    assert len(shown[0]) > 1  # boundaries found, not the whole line as one word


def test_two_column_model_takes_word_bar_pos(page, server):
    # the default model is the chunker, which reads word and pos: the page says so
    assert Select(page.find_element(By.ID, "model")).first_selected_option.get_attribute("value") == "chunk"
    assert "word|pos" in page.find_element(By.ID, "model-info").text
    run(page, None, "Confidence|NN in|IN the|DT pound|NN")
    wait_for(page, "#result mark.span")
    sentence = [["Confidence", "NN"], ["in", "IN"], ["the", "DT"], ["pound", "NN"]]
    expected = api_spans(api(server, "/tag", {"model": "chunk", "sentences": [sentence]}))
    assert shown_spans(page) == expected and expected
    # a token without its POS is refused on the page, before any request
    run(page, None, "Confidence|NN in the|DT")
    message = wait_for_error(page)
    assert '"in"' in message and "expected 2 values" in message
    assert page.find_elements(By.CSS_SELECTOR, "#result *") == []


def test_empty_text_shows_an_error_and_the_page_still_works(page):
    run(page, "pos", "")
    assert "Enter some text" in wait_for_error(page)
    run(page, "pos", "The cat sat .")
    wait_for(page, "#result .tok .tag")
    assert not page.find_element(By.ID, "error").is_displayed()


def test_server_errors_are_shown(page, server):
    long_sentence = " ".join(["word"] * (server.limits["max_tokens"] + 1))
    status, response = server.request("POST", "/tag", {"model": "pos", "text": long_sentence})
    assert status == 413
    run(page, "pos", long_sentence)
    assert wait_for_error(page) == response["error"]
    assert page.find_elements(By.CSS_SELECTOR, "#result *") == []


def test_model_strings_are_text_not_markup(page, server):
    text = '<b>bold</b> <img src=x onerror="document.title=1"> .'
    run(page, "pos", text)
    wait_for(page, "#result .tok .tag")
    words = [w.text for w in page.find_elements(By.CSS_SELECTOR, "#result .tok .word")]
    assert words == text.split()
    assert page.find_elements(By.CSS_SELECTOR, "#result b, #result img") == []
    assert page.title == "structperc"


def test_models_are_listed_with_their_task(page, server):
    status, models = server.request("GET", "/models")
    assert status == 200
    options = Select(page.find_element(By.ID, "model")).options
    assert [o.get_attribute("value") for o in options] == [m["name"] for m in models["models"]]
    for option, model in zip(options, models["models"]):
        assert model["task"] in option.text
    # a model without marginals disables the confidence box; one with them enables it
    for model in models["models"]:
        Select(page.find_element(By.ID, "model")).select_by_value(model["name"])
        assert page.find_element(By.ID, "marginals").is_enabled() == (model["marginals"]
                                                                      and model["endpoint"] != "/segment")
    footer = {a.get_attribute("href") for a in page.find_elements(By.CSS_SELECTOR, "footer a")}
    assert footer == {server.url + "/docs", server.url + "/models"}
    assert page.find_element(By.TAG_NAME, "h1").text == "structperc"


# ------------------------------------------------------------------------------------- the shipped models
def test_page_lists_the_shipped_models_and_tags_raw_text(browser, shipped_server):
    """`structperc serve` with no --model: the page lists every shipped model with its card's description
    and language, and takes raw text by default for a model with a language."""
    status, models = shipped_server.request("GET", "/models")
    assert status == 200, models
    browser.get(shipped_server.url + "/")
    wait(browser, EC.element_to_be_clickable((By.ID, "submit")))
    items = browser.find_elements(By.CSS_SELECTOR, "#models li.model")
    assert [i.get_attribute("data-model") for i in items] == [m["name"] for m in models["models"]]
    for item, model in zip(items, models["models"]):
        assert model["card"]["description"] in item.text
        assert item.find_element(By.CSS_SELECTOR, ".model-lang").text == model["language"]
    chosen = models["default"]
    model = {m["name"]: m for m in models["models"]}[chosen]
    if not model["raw"]:
        pytest.skip(f"the default shipped model {chosen!r} takes no raw text")
    assert model["card"]["description"] in browser.find_element(By.ID, "model-description").text
    assert "licence" in browser.find_element(By.ID, "model-facts").text
    raw_box = browser.find_element(By.ID, "raw")
    assert raw_box.is_enabled() and raw_box.is_selected()  # raw text by default
    text = "He didn't stay.\nThe cat sat on the mat." if model["language"] == "en" else "Juan vive en Madrid."
    run(browser, None, text)
    toks = wait_for(browser, "#result .tok")
    expected = api(shipped_server, "/tag", {"model": chosen, "text": text, "raw": True})
    sentences = browser.find_elements(By.CSS_SELECTOR, "#result .sentence")
    assert len(sentences) == len(expected["tokens"])
    shown = [[(t.find_element(By.CSS_SELECTOR, ".word").text if not model["spans"] else t.text)
              for t in s.find_elements(By.CSS_SELECTOR, ".tok")] for s in sentences]
    assert shown == expected["tokens"]
    assert [t.get_attribute("data-tag") for t in toks] == [tag for s in expected["tags"] for tag in s]
    places = [[int(t.get_attribute("data-start")), int(t.get_attribute("data-end"))] for t in toks]
    assert places == [p for s in expected["offsets"] for p in s]
    if model["language"] == "en":
        assert shown[0][:3] == ["He", "did", "n't"]
    # unticked, the same model takes one tokenized sentence a line again
    raw_box.click()
    assert "separated by spaces" in browser.find_element(By.ID, "text-hint").text
    first = toks[0]
    run(browser, None, "He did n't stay .")
    wait(browser, EC.staleness_of(first))
    toks = wait_for(browser, "#result .tok")
    assert [t.get_attribute("data-start") for t in toks] == [None] * 5


def test_page_sends_chinese_to_segment(browser, shipped_server):
    status, models = shipped_server.request("GET", "/models")
    segmenters = [m["name"] for m in models["models"] if m["endpoint"] == "/segment"]
    if not segmenters:
        pytest.skip("no shipped segmentation model (zh-seg) in this install")
    browser.get(shipped_server.url + "/")
    wait(browser, EC.element_to_be_clickable((By.ID, "submit")))
    # the list of models picks one too
    browser.find_element(By.CSS_SELECTOR, f"#models li[data-model='{segmenters[0]}']").click()
    assert Select(browser.find_element(By.ID, "model")).first_selected_option.get_attribute("value") == segmenters[0]
    assert not browser.find_element(By.ID, "raw").is_enabled()
    text = "上海体育局召开会议"
    run(browser, None, text)
    shown = [[w.text for w in line.find_elements(By.CSS_SELECTOR, ".word")]
             for line in wait_for(browser, "#result .sentence.segmented")]
    assert shown == api(shipped_server, "/segment", {"model": segmenters[0], "text": text})["words"]


# ------------------------------------------------------------------------------------- explanations
def explain_panel(driver):
    """The explanation panel once it shows a label; fails with the panel's error, if any."""
    def ready(d):
        panel = d.find_element(By.ID, "explain")
        if not panel.is_displayed():
            return False
        if panel.find_elements(By.CSS_SELECTOR, ".explain-label"):
            return panel
        errors = panel.find_elements(By.CSS_SELECTOR, ".explain-error")
        return "error: " + errors[0].text if errors else False
    try:
        found = wait(driver, ready)
    except TimeoutException:  # pragma: no cover - the message is the point
        raise AssertionError(f"no explanation on the page after {WAIT} s") from None
    assert not isinstance(found, str), found
    return found


def click_and_explain(driver, node, before=None):
    """Click ``node`` and return the panel once it explains it (``before``: the panel's previous label)."""
    node.click()
    if before is not None:
        wait(driver, EC.staleness_of(before))
    return explain_panel(driver)


def shown_features(panel) -> list[tuple[str, str]]:
    return [(row.find_element(By.CSS_SELECTOR, ".feature-name").text,
             row.find_element(By.CSS_SELECTOR, ".feature-weight").text)
            for row in panel.find_elements(By.CSS_SELECTOR, ".explain-features tr.feature")]


def test_clicking_a_token_shows_its_explanation(page, server):
    text = "The cat sat on the mat .\nPrices rose sharply ."
    run(page, "pos", text)
    wait_for(page, "#result .tok .tag")
    assert not page.find_element(By.ID, "explain").is_displayed()
    sentences = page.find_elements(By.CSS_SELECTOR, "#result .sentence")
    tok = sentences[1].find_elements(By.CSS_SELECTOR, ".tok")[1]  # "rose"
    panel = click_and_explain(page, tok)
    expected = api(server, "/explain", {"model": "pos", "sentences": [line.split() for line in text.splitlines()],
                                        "sentence": 1, "index": 1})["tokens"][0]
    assert panel.find_element(By.CSS_SELECTOR, ".explain-token").text == "rose"
    assert panel.find_element(By.CSS_SELECTOR, ".explain-label").text == tok.get_attribute("data-tag") \
        == expected["label"]
    # the label's features, the largest by |weight| first, at most 10, as the API gives them
    top = sorted(expected["features"], key=lambda f: -abs(f[1]))[:10]
    features = shown_features(panel)
    assert features and len(features) == len(top)
    assert [name for name, _ in features] == [name for name, _ in top]
    assert features[0][1].lstrip("+−") == f"{abs(top[0][1]):.3f}"
    assert expected["from"] in panel.find_element(By.CSS_SELECTOR, ".explain-transition").text
    runner_up = panel.find_element(By.CSS_SELECTOR, ".explain-runner-up").text
    if expected["runner_up"] is not None:
        assert expected["runner_up"] in runner_up and f"{expected['margin']:.3f}" in runner_up
    assert panel.find_element(By.CSS_SELECTOR, ".explain-score").text == \
        f"{api(server, '/explain', {'model': 'pos', 'tokens': text.splitlines()[1].split()})['score']:.3f}"
    assert "chosen" in tok.get_attribute("class").split()
    # another token, by keyboard: the panel follows
    first = sentences[0].find_elements(By.CSS_SELECTOR, ".tok")[0]
    label = panel.find_element(By.CSS_SELECTOR, ".explain-label")
    first.send_keys(Keys.ENTER)
    wait(page, EC.staleness_of(label))
    panel = explain_panel(page)
    assert panel.find_element(By.CSS_SELECTOR, ".explain-token").text == "The"
    assert panel.find_element(By.CSS_SELECTOR, ".explain-label").text == first.get_attribute("data-tag")
    assert "<bos>" in panel.find_element(By.CSS_SELECTOR, ".explain-transition").text
    # closed, and gone with a new result
    panel.find_element(By.CSS_SELECTOR, ".explain-close").click()
    assert not page.find_element(By.ID, "explain").is_displayed()
    click_and_explain(page, first)
    run(page, None, text)
    wait(page, EC.staleness_of(first))
    assert not page.find_element(By.ID, "explain").is_displayed()


def test_span_and_two_column_tokens_are_explained(page, server):
    run(page, "ner", "Juan Pérez vive en Madrid .")
    wait_for(page, "#result mark.span")
    madrid = [t for t in page.find_elements(By.CSS_SELECTOR, "#result .tok") if t.text == "Madrid"][0]
    panel = click_and_explain(page, madrid)
    assert panel.find_element(By.CSS_SELECTOR, ".explain-label").text == madrid.get_attribute("data-tag") == "B-LOC"
    assert shown_features(panel)
    # the chunker reads word|pos: the page sends the values it sent to /tag
    label = panel.find_element(By.CSS_SELECTOR, ".explain-label")
    run(page, "chunk", "Confidence|NN in|IN the|DT pound|NN")
    wait(page, EC.staleness_of(label))
    pound = wait_for(page, "#result .tok")[3]
    panel = click_and_explain(page, pound)
    assert panel.find_element(By.CSS_SELECTOR, ".explain-token").text == "pound"
    assert panel.find_element(By.CSS_SELECTOR, ".explain-label").text == pound.get_attribute("data-tag")
    assert any("pos" in name or "NN" in name for name, _ in shown_features(panel))


def test_segmented_word_is_explained_by_its_first_character(page, server):
    text = "上海体育局召开会议\n北京 欢迎你"
    run(page, "cws", text)
    lines = wait_for(page, "#result .sentence.segmented")
    words = lines[1].find_elements(By.CSS_SELECTOR, ".word")
    assert [w.text for w in words] == api(server, "/segment", {"model": "cws", "text": text})["words"][1]
    word = words[-1]  # in the piece after the space
    panel = click_and_explain(page, word)
    assert panel.find_element(By.CSS_SELECTOR, ".explain-token").text == word.text[0]
    assert panel.find_element(By.CSS_SELECTOR, ".explain-label").text == ("S" if len(word.text) == 1 else "B")
    assert shown_features(panel)


def test_shipped_raw_text_token_is_explained(browser, shipped_server):
    """A token of the second sentence of raw text: its explanation's label is the tag the page shows
    (en-chunk: POS from en-xpos; NER: in its document's context)."""
    status, models = shipped_server.request("GET", "/models")
    raw = [m for m in models["models"] if m["raw"] and m["name"] in ("en-chunk", "es-ner")]
    if not raw:
        pytest.skip("neither en-chunk nor es-ner (taking raw text) is shipped in this install")
    model = raw[0]
    text = ("He didn't stay. The cat sat on the mat in Paris." if model["name"] == "en-chunk"
            else "Ayer habló Víctor Castaño en Madrid. Lo de Castaño fue grande.")
    browser.get(shipped_server.url + "/")
    wait(browser, EC.element_to_be_clickable((By.ID, "submit")))
    run(browser, model["name"], text)
    wait_for(browser, "#result .tok")
    toks = browser.find_elements(By.CSS_SELECTOR, "#result .sentence")[1].find_elements(By.CSS_SELECTOR, ".tok")
    panel = None
    for tok in toks[:3]:
        before = panel.find_element(By.CSS_SELECTOR, ".explain-label") if panel is not None else None
        panel = click_and_explain(browser, tok, before)
        assert panel.find_element(By.CSS_SELECTOR, ".explain-token").text == tok.text  # span models: the word
        assert panel.find_element(By.CSS_SELECTOR, ".explain-label").text == tok.get_attribute("data-tag")
        assert shown_features(panel)
