// The web page of `structperc serve`: pick a model, type text, see its tags, spans or words.
// Plain DOM code, no framework and no build step. Every string from the user or a model is inserted with
// textContent / createElement, never as HTML, so the page cannot be made to run markup it did not write.
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);
  const form = $("form");
  const textBox = $("text");
  const modelSelect = $("model");
  const marginalsBox = $("marginals");
  const submitButton = $("submit");
  const errorBox = $("error");
  const resultBox = $("result");
  const statusLine = $("status");
  const modelInfo = $("model-info");
  const textHint = $("text-hint");

  /** Tokens below this confidence get the `low` class (a subtle underline). */
  const LOW_CONFIDENCE = 0.5;
  /** The separator of a token's values for models reading more than one column (`word|POS`). */
  const VALUE_SEPARATOR = "|";

  /** Model descriptions from GET /models, by name. */
  const models = new Map();
  let busy = false;

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function showError(message) {
    errorBox.textContent = message;
    errorBox.hidden = false;
  }

  function clearError() {
    errorBox.textContent = "";
    errorBox.hidden = true;
  }

  function clearResult() {
    resultBox.replaceChildren();
    resultBox.removeAttribute("data-model");
  }

  function currentModel() {
    return models.get(modelSelect.value) || null;
  }

  /** A stable hue per span type name, so "PER" has the same colour on every page and request. */
  function hueOf(type) {
    let h = 2166136261;
    for (let i = 0; i < type.length; i++) {
      h ^= type.charCodeAt(i);
      h = Math.imul(h, 16777619);
    }
    // murmur3's finaliser: without it, names differing in one letter (NP, PP, VP) get near hues
    h ^= h >>> 16;
    h = Math.imul(h, 0x85ebca6b);
    h ^= h >>> 13;
    h = Math.imul(h, 0xc2b2ae35);
    h ^= h >>> 16;
    // 15 hues 24° apart: near hues are hard to tell apart, and with 15 slots the CoNLL types (NP PP VP …,
    // PER LOC ORG MISC) each get their own
    return ((h >>> 0) % 15) * 24;
  }

  // ---------------------------------------------------------------- models

  function describe(model) {
    const parts = [];
    // a segmenter reads characters and its dictionary's columns, all made from the text itself: the
    // user types plain text, so its columns are never asked for
    if (model.endpoint === "/segment") {
      parts.push("This model segments plain text into words (unspaced Chinese, one text per line): " +
        "type the text as it is, no spaces or columns needed.");
    } else if (model.columns && model.columns.length > 1) {
      const example = model.columns.join(VALUE_SEPARATOR);
      parts.push(`This model reads ${model.columns.length} values per token (${model.columns.join(", ")}): ` +
        `write each token as ${example}${isWordPos(model) ? ", e.g. Confidence|NN in|IN the|DT pound|NN" : ""}.`);
    } else {
      parts.push(`Task: ${model.task}.`);
    }
    if (model.labels && model.labels.length && model.endpoint !== "/segment") {
      // span tasks: the span types (NP, PER …) say more than their B-/I- tags
      const names = model.spans ? spanTypes(model.labels) : model.labels;
      const shown = names.slice(0, 16).join(" ");
      parts.push(`${model.spans ? "Span types" : "Tags"}: ${shown}${names.length > 16 ? " …" : ""}`);
    }
    if (model.endpoint !== "/segment") {
      if (!model.marginals) parts.push("(no confidence available)");
      // the same note `structperc tag --marginals` prints for a model with no fitted temperature
      else if (model.calibrated === false) {
        parts.push("(confidences not calibrated: temperature 1, not fitted; run structperc calibrate)");
      }
    }
    return parts.join(" ");
  }

  function spanTypes(labels) {
    const types = new Set();
    for (const label of labels) {
      const match = /^[BIESLU]-(.+)$/.exec(label);
      if (match) types.add(match[1]);
    }
    return [...types].sort();
  }

  function isWordPos(model) {
    return model.columns.length === 2 && model.columns[0] === "word" && model.columns[1] === "pos";
  }

  function placeholderFor(model) {
    if (model.endpoint === "/segment") return "上海体育局召开会议";
    if (model.columns && model.columns.length > 1) {
      if (isWordPos(model)) return "One sentence per line, e.g.\nConfidence|NN in|IN the|DT pound|NN";
      const token = model.columns.join(VALUE_SEPARATOR);
      return `One sentence per line, e.g.\n${token} ${token} …`;
    }
    return "One sentence per line, e.g.\nJuan Pérez vive en Madrid .";
  }

  function onModelChange() {
    const model = currentModel();
    if (!model) return;
    marginalsBox.disabled = !model.marginals || model.endpoint === "/segment";
    modelInfo.textContent = describe(model);
    textBox.placeholder = placeholderFor(model);
    textHint.textContent = model.endpoint === "/segment" ? "(one text per line, no spaces needed)"
      : model.columns && model.columns.length > 1
        ? `(one sentence per line, tokens written ${model.columns.join(VALUE_SEPARATOR)}, separated by spaces)`
        : "(one sentence per line, tokens separated by spaces)";
    submitButton.textContent = model.endpoint === "/segment" ? "Segment" : "Tag";
  }

  async function loadModels() {
    let data;
    try {
      const response = await fetch("models", { headers: { Accept: "application/json" } });
      data = await readJson(response);
      if (!response.ok) throw new Error(errorMessage(response, data));
    } catch (exc) {
      modelSelect.replaceChildren(el("option", null, "no models"));
      showError(`Could not load the models: ${exc.message}`);
      return;
    }
    modelSelect.replaceChildren();
    for (const model of data.models || []) {
      models.set(model.name, model);
      const label = (model.name === model.task ? model.name : `${model.name} — ${model.task}`) +
        (model.name === data.default ? " (default)" : "");
      const option = el("option", null, label);
      option.value = model.name;
      if (model.name === data.default) option.selected = true;
      modelSelect.appendChild(option);
    }
    if (!models.size) {
      modelSelect.appendChild(el("option", null, "no models"));
      showError("The server has no models.");
      return;
    }
    modelSelect.disabled = false;
    submitButton.disabled = false;
    onModelChange();
  }

  // ---------------------------------------------------------------- requests

  async function readJson(response) {
    const text = await response.text();
    try {
      return JSON.parse(text);
    } catch (_) {
      return { error: text.trim() || `${response.status} ${response.statusText}` };
    }
  }

  function errorMessage(response, data) {
    if (data && typeof data.error === "string" && data.error) return data.error;
    return `HTTP ${response.status} ${response.statusText}`;
  }

  /** The lines of the text box that hold tokens (blank lines are skipped, as the server does). */
  function sentencesOf(text) {
    return text.split(/\r?\n/).map((line) => line.trim()).filter((line) => line.length > 0)
      .map((line) => line.split(/\s+/));
  }

  /** `sentences` for a model reading several columns, or throws an Error naming the bad token. */
  function multiColumnSentences(text, columns) {
    const lines = text.split(/\r?\n/);
    const sentences = [];
    lines.forEach((line, lineIndex) => {
      const words = line.trim() ? line.trim().split(/\s+/) : [];
      if (!words.length) return;
      sentences.push(words.map((token, tokenIndex) => {
        const values = token.split(VALUE_SEPARATOR);
        const where = `line ${lineIndex + 1}, token ${tokenIndex + 1} "${token}"`;
        if (values.length !== columns.length) {
          throw new Error(`${where}: expected ${columns.length} values (${columns.join(VALUE_SEPARATOR)}) ` +
            `joined by "${VALUE_SEPARATOR}", found ${values.length}`);
        }
        if (values.some((v) => v === "")) throw new Error(`${where}: a value is empty`);
        return values;
      }));
    });
    return sentences;
  }

  function buildRequest(model, text) {
    if (model.endpoint === "/segment") {
      return { path: "segment", body: { model: model.name, text } };
    }
    const body = { model: model.name };
    if (model.columns && model.columns.length > 1) {
      body.sentences = multiColumnSentences(text, model.columns);
      if (!body.sentences.length) throw new Error("Enter some text: one sentence per line.");
    } else {
      if (!sentencesOf(text).length) throw new Error("Enter some text: one sentence per line.");
      body.text = text;
    }
    if (model.marginals && marginalsBox.checked) body.marginals = true;
    return { path: "tag", body };
  }

  async function submit() {
    if (busy) return;
    const model = currentModel();
    if (!model) {
      showError("No model is loaded.");
      return;
    }
    clearError();
    clearResult();
    const text = textBox.value;
    if (!text.trim()) {
      showError("Enter some text: one sentence per line.");
      return;
    }
    let request;
    try {
      request = buildRequest(model, text);
    } catch (exc) {
      showError(exc.message);
      return;
    }
    busy = true;
    submitButton.disabled = true;
    statusLine.textContent = model.endpoint === "/segment" ? "segmenting…" : "tagging…";
    try {
      const response = await fetch(request.path, {
        method: "POST",
        headers: { "Content-Type": "application/json", Accept: "application/json" },
        body: JSON.stringify(request.body),
      });
      const data = await readJson(response);
      if (!response.ok) {
        showError(errorMessage(response, data));
        return;
      }
      render(model, data);
    } catch (exc) {
      showError(`Could not reach the server: ${exc.message}`);
    } finally {
      busy = false;
      submitButton.disabled = false;
      statusLine.textContent = "";
    }
  }

  // ---------------------------------------------------------------- rendering

  function tokenTitle(tag, confidence) {
    if (typeof confidence === "number") return `${tag} · ${confidence.toFixed(2)}`;
    return tag;
  }

  /** One token: `<span class="tok">` holding the word (and, for POS-like tasks, its tag under it). */
  function tokenNode(word, tag, confidence, withTag) {
    const node = el("span", "tok");
    if (withTag) {
      node.appendChild(el("span", "word", word));
      node.appendChild(el("span", "tag", tag));
    } else {
      node.textContent = word;
    }
    node.title = tokenTitle(tag, confidence);
    node.dataset.tag = tag;
    if (typeof confidence === "number") {
      node.dataset.confidence = String(confidence);
      if (confidence < LOW_CONFIDENCE) node.classList.add("low");
    }
    return node;
  }

  function spanSentence(words, tags, confidence, spans) {
    const line = el("div", "sentence spans");
    const starts = new Map();
    for (const span of spans || []) starts.set(span.start, span);
    let i = 0;
    while (i < words.length) {
      if (line.childNodes.length) line.appendChild(document.createTextNode(" "));
      const span = starts.get(i);
      if (span && span.end > i) {
        const mark = el("mark", "span");
        mark.dataset.type = span.type;
        mark.style.setProperty("--hue", String(hueOf(span.type)));
        for (let j = i; j < Math.min(span.end, words.length); j++) {
          if (j > i) mark.appendChild(document.createTextNode(" "));
          mark.appendChild(tokenNode(words[j], tags[j], confidence && confidence[j], false));
        }
        mark.appendChild(el("span", "span-label", span.type));
        line.appendChild(mark);
        i = Math.max(span.end, i + 1);
      } else {
        line.appendChild(tokenNode(words[i], tags[i], confidence && confidence[i], false));
        i += 1;
      }
    }
    return line;
  }

  function tagSentence(words, tags, confidence) {
    const line = el("div", "sentence tags");
    words.forEach((word, i) => line.appendChild(tokenNode(word, tags[i], confidence && confidence[i], true)));
    return line;
  }

  function segmentSentence(words) {
    const line = el("div", "sentence segmented");
    if (!words.length) line.classList.add("empty");
    for (const word of words) line.appendChild(el("span", "word", word));
    return line;
  }

  function render(model, data) {
    clearResult();
    resultBox.dataset.model = data.model || model.name;
    if (Array.isArray(data.words)) {
      data.words.forEach((words) => resultBox.appendChild(segmentSentence(words)));
      return;
    }
    const isSpans = Array.isArray(data.spans);
    (data.tokens || []).forEach((words, s) => {
      const tags = data.tags[s];
      const confidence = data.confidence ? data.confidence[s] : null;
      resultBox.appendChild(isSpans ? spanSentence(words, tags, confidence, data.spans[s])
        : tagSentence(words, tags, confidence));
    });
  }

  // ---------------------------------------------------------------- wiring

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    submit();
  });
  textBox.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      submit();
    }
  });
  modelSelect.addEventListener("change", () => {
    clearError();
    clearResult();
    onModelChange();
  });

  loadModels();
})();
