"""Issue 28 on the HTTP service and its page (items 8, 11, 14): empty input is refused by one rule,
a busy port is one ``Error:`` line, a segmentation model is offered plain text on the page, and the
probabilities of a model with no fitted temperature are said to be uncalibrated (once in the server's
log, and on the page)."""
from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest
from servicekit import LIMITS

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
WAIT = 20


# ------------------------------------------------------------------------- item 11: empty input
@pytest.mark.parametrize("body", [{"model": "pos", "sentences": [[]]}, {"sentences": [[]]},
                                  {"model": "pos", "sentences": [["The", "cat"], []]},
                                  {"model": "chunk", "sentences": [[["The", "DT"]], [], [["cat", "NN"]]]}],
                         ids=["one empty sentence", "default model", "an empty one after a sentence",
                              "between two sentences, two columns"])
def test_a_sentence_with_no_tokens_is_empty_input(server, body):
    status, answer = server.request("POST", "/tag", {**body, "marginals": True})
    assert status == 400, answer
    assert isinstance(answer, dict) and answer["error"].startswith("empty input") and "no tokens" in answer["error"]


def test_empty_input_is_one_rule_in_the_library(service_models):
    from structperc.service import serving

    table = serving.ModelTable.load([f"pos={service_models['pos']}"])
    pos = table.get("pos")
    limits = serving.Limits(**LIMITS)
    for sentences, text in (([], None), (None, " \n\t"), ([[]], None), ([["a"], []], None)):
        with pytest.raises(serving.RequestError, match="^empty input") as info:
            serving.tag_input(pos, sentences, text, limits)
        assert info.value.status == 400
    assert serving.tag_input(pos, None, "a b\n\nc", limits) == [["a", "b"], ["c"]]  # blank lines part sentences


# ---------------------------------------------------------------------- item 11: a busy port
def test_serve_on_a_port_in_use_is_one_error_line(service_models):
    pytest.importorskip("uvicorn", reason="the service needs the serve extra: pip install -e '.[serve]'")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = subprocess.run([sys.executable, "-m", "structperc", "serve", "--model", str(service_models["pos"]),
                               "--host", "127.0.0.1", "--port", str(port)],
                              capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr and "ERROR" not in proc.stderr and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"Error: cannot listen on 127.0.0.1:{port}: "), proc.stderr
    assert "--port" in lines[0]


# ----------------------------------------------------------- item 14: uncalibrated probabilities
def test_uncalibrated_marginals_are_said_once_in_the_server_log(server):
    status, models = server.request("GET", "/models")
    assert status == 200 and {m["name"]: m for m in models["models"]}["ner"]["calibrated"] is False
    for body in ({"model": "ner", "text": "Juan vive en Madrid .", "marginals": True},
                 {"model": "ner", "text": "María vive en Ginebra .", "nbest": 2},
                 {"model": "ner", "sentences": [["Pedro", "García"]], "marginals": True}):
        status, answer = server.request("POST", "/tag", body)
        assert status == 200, answer
    log = server.log.read_text(encoding="utf-8").splitlines()
    said = [line for line in log if line.startswith("Warning: this ner model is not calibrated")]
    assert len(said) == 1, log
    assert "structperc calibrate" in said[0]


# ---------------------------------------------------------------------------------- the page
@pytest.fixture(scope="module")
def page(tmp_path_factory, server):
    webdriver = pytest.importorskip("selenium.webdriver", reason="the browser tests need selenium (test extra)")
    from selenium.webdriver.chrome.service import Service

    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.exists()]
    if missing:
        pytest.skip(f"the browser tests need {' and '.join(missing)} (apt-get install chromium chromium-driver)")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--no-first-run", "--disable-background-networking", "--window-size=1200,900",
                f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def open_page(driver, server, model: str):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import Select, WebDriverWait

    driver.get(server.url + "/")
    WebDriverWait(driver, WAIT).until(EC.element_to_be_clickable((By.ID, "submit")))
    Select(driver.find_element(By.ID, "model")).select_by_value(model)
    return driver.find_element(By.ID, "model-info").text


def test_page_offers_plain_text_to_a_segmenter_and_segments_it(page, server):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    info = open_page(page, server, "cws")
    status, models = server.request("GET", "/models")
    assert len({m["name"]: m for m in models["models"]}["cws"]["columns"]) > 1  # what it reads inside
    assert "plain text" in info and "|" not in info, info
    box = page.find_element(By.ID, "text")
    assert "|" not in box.get_attribute("placeholder")
    assert "no spaces needed" in page.find_element(By.ID, "text-hint").text
    text = "上海体育局召开会议\n北京欢迎你"
    box.send_keys(text)
    page.find_element(By.ID, "submit").click()
    lines = WebDriverWait(page, WAIT).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, "#result .sentence.segmented")
        or (d.find_element(By.ID, "error").is_displayed() and d.find_element(By.ID, "error").text))
    assert not isinstance(lines, str), lines
    shown = [[w.text for w in line.find_elements(By.CSS_SELECTOR, ".word")] for line in lines]
    status, answer = server.request("POST", "/segment", {"model": "cws", "text": text})
    assert status == 200 and shown == answer["words"] and len(shown[0]) > 1


def test_page_says_when_confidences_are_not_calibrated(page, server):
    info = open_page(page, server, "ner")
    assert "not calibrated" in info and "structperc calibrate" in info, info
    assert "not calibrated" not in open_page(page, server, "cws")  # no confidences there at all
