// The web page of `structperc serve`: pick a model, type text, see its tags, spans or words; click a token
// (or a segmented word) to see why it got its label (POST /explain).
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
  const rawBox = $("raw");
  const modelList = $("models");
  const modelCard = $("model-card");
  const modelDescription = $("model-description");
  const modelFacts = $("model-facts");
  const explainBox = $("explain");

  /** Tokens below this confidence get the `low` class (a subtle underline). */
  const LOW_CONFIDENCE = 0.5;
  /** The separator of a token's values for models reading more than one column (`word|POS`). */
  const VALUE_SEPARATOR = "|";
  /** How many of a label's features the explanation lists (the largest by |weight|). */
  const TOP_FEATURES = 10;
  /** The sentences either side of a clicked one sent with it to /explain: more than any model's document
   * window (NER reads 20 either side, a two-stage model 40), so its labels are the ones /tag gave. */
  const CONTEXT = 100;

  /** Model descriptions from GET /models, by name. */
  const models = new Map();
  let busy = false;
  /** Whether the user wants raw text where a model takes it (the "raw text" box; on by default). */
  let rawWanted = true;
  /** What the shown result came from: {model, data, body} (the /tag or /segment request's body). */
  let shown = null;
  /** Counts explanation requests: an answer to an earlier click than the last is dropped. */
  let explainSeq = 0;

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
    shown = null;
    clearExplanation();
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

  /** Whether the text box holds raw text for `model` (it takes raw text and the box is ticked). */
  function rawFor(model) {
    return Boolean(model.raw) && rawWanted;
  }

  /** "EWT test: accuracy 95.90" for each test score of a card. */
  function scoresOf(card) {
    return Object.entries(card.test || {}).map(([set, result]) => {
      const score = result && typeof result.score === "number" ? result.score.toFixed(2) : "?";
      return `${set}: ${(result && result.metric) || "score"} ${score}`;
    });
  }

  /** One line of a model's facts: language, corpus, licence, test scores (what its card says). */
  function factsOf(model) {
    const card = model.card || {};
    const facts = [];
    if (model.language) facts.push(`language: ${model.language}`);
    if (card.corpus) facts.push(`corpus: ${card.corpus}`);
    if (card.licence) facts.push(`licence: ${card.licence}`);
    facts.push(...scoresOf(card));
    const reads = Object.entries(card.reads || {});
    if (reads.length) facts.push(`reads ${reads.map(([c, m]) => `${c} from ${m}`).join(", ")}`);
    return facts.join(" · ");
  }

  function describe(model) {
    const parts = [];
    // a segmenter reads characters and its dictionary's columns, all made from the text itself: the
    // user types plain text, so its columns are never asked for
    if (rawFor(model)) {
      const reads = Object.entries((model.card && model.card.reads) || {});
      parts.push("Type raw text as written: it is split into sentences and tokens the way the model's " +
        "corpus is" + (reads.length ? ` (its ${reads.map(([c, m]) => `${c} predicted by ${m}`).join(", ")}).`
        : "."));
    } else if (model.endpoint === "/segment") {
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
    if (rawFor(model)) {
      return model.language === "en" ? "Raw text, e.g.\nHe didn't stay. The cat sat on the mat."
        : "Raw text, e.g.\nJuan Pérez vive en Madrid. Trabaja para la ONU.";
    }
    if (model.columns && model.columns.length > 1) {
      if (isWordPos(model)) return "One sentence per line, e.g.\nConfidence|NN in|IN the|DT pound|NN";
      const token = model.columns.join(VALUE_SEPARATOR);
      return `One sentence per line, e.g.\n${token} ${token} …`;
    }
    return "One sentence per line, e.g.\nJuan Pérez vive en Madrid .";
  }

  function showCard(model) {
    const description = model.card && model.card.description;
    const facts = factsOf(model);
    modelDescription.textContent = description || "";
    modelFacts.textContent = facts;
    modelCard.hidden = !description && !facts;
    for (const item of modelList.children) {
      item.classList.toggle("selected", item.dataset.model === model.name);
    }
  }

  function onModelChange() {
    const model = currentModel();
    if (!model) return;
    marginalsBox.disabled = !model.marginals || model.endpoint === "/segment";
    rawBox.disabled = !model.raw;
    rawBox.checked = rawFor(model);
    showCard(model);
    modelInfo.textContent = describe(model);
    textBox.placeholder = placeholderFor(model);
    textHint.textContent = model.endpoint === "/segment" ? "(one text per line, no spaces needed)"
      : rawFor(model) ? "(raw text, as you would write it)"
      : model.columns && model.columns.length > 1
        ? `(one sentence per line, tokens written ${model.columns.join(VALUE_SEPARATOR)}, separated by spaces)`
        : "(one sentence per line, tokens separated by spaces)";
    submitButton.textContent = model.endpoint === "/segment" ? "Segment" : "Tag";
  }

  /** A model in the list of served models: name, language, what its card says (or its task). */
  function modelItem(model, defaultName) {
    const item = el("li", "model");
    item.dataset.model = model.name;
    item.appendChild(el("span", "model-name", model.name));
    if (model.language) item.appendChild(el("span", "model-lang", model.language));
    const description = model.card && model.card.description;
    item.appendChild(el("span", "model-description", description || `${model.task} model`));
    if (model.name === defaultName) item.appendChild(el("span", "muted", " (default)"));
    item.title = factsOf(model);
    item.addEventListener("click", () => {  // a shortcut for the select below
      if (modelSelect.disabled || modelSelect.value === model.name) return;
      modelSelect.value = model.name;
      modelSelect.dispatchEvent(new Event("change"));
    });
    return item;
  }

  async function loadModels() {
    let data;
    try {
      const response = await fetch("models", { headers: { Accept: "application/json" } });
      data = await readJson(response);
      if (!response.ok) throw new Error(errorMessage(response, data));
    } catch (exc) {
      modelSelect.replaceChildren(el("option", null, "no models"));
      modelList.replaceChildren(el("li", "muted", "no models"));
      showError(`Could not load the models: ${exc.message}`);
      return;
    }
    modelSelect.replaceChildren();
    modelList.replaceChildren();
    for (const model of data.models || []) {
      modelList.appendChild(modelItem(model, data.default));
      models.set(model.name, model);
      const label = (model.name === model.task ? model.name : `${model.name} — ${model.task}`) +
        (model.language ? ` (${model.language})` : "") + (model.name === data.default ? " (default)" : "");
      const option = el("option", null, label);
      option.value = model.name;
      if (model.name === data.default) option.selected = true;
      modelSelect.appendChild(option);
    }
    if (!models.size) {
      modelSelect.appendChild(el("option", null, "no models"));
      modelList.appendChild(el("li", "muted", "no models"));
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
    if (rawFor(model)) {
      if (!text.trim()) throw new Error("Enter some text.");
      body.text = text;
      body.raw = true;
    } else if (model.columns && model.columns.length > 1) {
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
      render(model, data, request.body);
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

  /** A result element one can click (or focus and press Enter) to explain: sentence `s`, token `i`. */
  function explainable(node, s, i) {
    node.classList.add("explainable");
    node.dataset.s = String(s);
    node.dataset.i = String(i);
    node.tabIndex = 0;
    node.setAttribute("role", "button");
    return node;
  }

  /** One token: `<span class="tok">` holding the word (and, for POS-like tasks, its tag under it). */
  function tokenNode(word, tag, confidence, withTag, offset, s, i) {
    const node = explainable(el("span", "tok"), s, i);
    if (offset) {  // raw text: where the token is in it (characters, as the server counts them)
      node.dataset.start = String(offset[0]);
      node.dataset.end = String(offset[1]);
    }
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

  function spanSentence(s, words, tags, confidence, spans, offsets) {
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
          mark.appendChild(tokenNode(words[j], tags[j], confidence && confidence[j], false, offsets && offsets[j],
            s, j));
        }
        mark.appendChild(el("span", "span-label", span.type));
        line.appendChild(mark);
        i = Math.max(span.end, i + 1);
      } else {
        line.appendChild(tokenNode(words[i], tags[i], confidence && confidence[i], false, offsets && offsets[i],
          s, i));
        i += 1;
      }
    }
    return line;
  }

  function tagSentence(s, words, tags, confidence, offsets) {
    const line = el("div", "sentence tags");
    words.forEach((word, i) => line.appendChild(tokenNode(word, tags[i], confidence && confidence[i], true,
      offsets && offsets[i], s, i)));
    return line;
  }

  function segmentSentence(s, words) {
    const line = el("div", "sentence segmented");
    if (!words.length) line.classList.add("empty");
    words.forEach((word, i) => line.appendChild(explainable(el("span", "word", word), s, i)));
    return line;
  }

  function render(model, data, body) {
    clearResult();
    resultBox.dataset.model = data.model || model.name;
    shown = { model, data, body: body || {} };
    if (Array.isArray(data.words)) {
      data.words.forEach((words, s) => resultBox.appendChild(segmentSentence(s, words)));
      return;
    }
    const isSpans = Array.isArray(data.spans);
    (data.tokens || []).forEach((words, s) => {
      const tags = data.tags[s];
      const confidence = data.confidence ? data.confidence[s] : null;
      const offsets = data.offsets ? data.offsets[s] : null;
      resultBox.appendChild(isSpans ? spanSentence(s, words, tags, confidence, data.spans[s], offsets)
        : tagSentence(s, words, tags, confidence, offsets));
    });
  }

  // ---------------------------------------------------------------- explanations

  function clearExplanation() {
    explainSeq += 1;  // an answer still on its way is dropped
    explainBox.replaceChildren();
    explainBox.hidden = true;
    for (const node of resultBox.querySelectorAll(".explainable.chosen")) node.classList.remove("chosen");
  }

  /** A weight as the panel shows it: signed, 3 decimals. */
  function weight(value) {
    if (typeof value !== "number") return "–";
    const text = Math.abs(value).toFixed(3);
    return (value < 0 ? "−" : "+") + text;
  }

  /** Python's str.splitlines, as /segment split the text into lines. */
  function linesOf(text) {
    return text.split(/\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]/);
  }

  /** Where word `i` of segmented line `s` is: {text: its whitespace-free piece, index: its first character
   * in it (code points, as the server counts)}, or null if the words do not spell the line. */
  function segmentPlace(s, i) {
    const line = linesOf(shown.body.text || "")[s];
    const words = shown.data.words[s];
    if (line === undefined || !words) return null;
    const pieces = line.split(/\s+/).filter((p) => p.length > 0).map((p) => Array.from(p));
    let p = 0;
    let at = 0;
    for (let k = 0; k <= i; k++) {
      if (p < pieces.length && at === pieces[p].length) {
        p += 1;
        at = 0;
      }
      const chars = Array.from(words[k]);
      if (p >= pieces.length || pieces[p].slice(at, at + chars.length).join("") !== words[k]) return null;
      if (k === i) return { text: pieces[p].join(""), index: at };
      at += chars.length;
    }
    return null;
  }

  /** The /explain request for token `i` of sentence `s` of the shown result (null: cannot say). */
  function explainRequest(s, i) {
    const model = shown.model;
    if (Array.isArray(shown.data.words)) {
      const place = segmentPlace(s, i);
      return place && { model: model.name, text: place.text, index: place.index };
    }
    // the document as /tag read it: the values lists sent for a model reading several columns, else the
    // tokens /tag answered (raw text split; words whose other columns an upstream model fills)
    const sentences = Array.isArray(shown.body.sentences) ? shown.body.sentences : shown.data.tokens;
    const from = Math.max(0, s - CONTEXT);
    return { model: model.name, sentences: sentences.slice(from, s + CONTEXT + 1), sentence: s - from, index: i };
  }

  async function explainToken(node) {
    if (!shown) return;
    const s = Number(node.dataset.s);
    const i = Number(node.dataset.i);
    const body = explainRequest(s, i);
    clearExplanation();
    node.classList.add("chosen");
    explainBox.hidden = false;
    if (!body) {
      explainBox.appendChild(el("p", "explain-error", "This word cannot be placed in its line to explain it."));
      return;
    }
    explainBox.appendChild(el("p", "muted", "explaining…"));
    const seq = explainSeq;
    let data;
    let failure = null;
    try {
      const response = await fetch("explain", {
        method: "POST",
        headers: { "Content-Type": "application/json", Accept: "application/json" },
        body: JSON.stringify(body),
      });
      data = await readJson(response);
      if (!response.ok) failure = errorMessage(response, data);
    } catch (exc) {
      failure = `Could not reach the server: ${exc.message}`;
    }
    if (seq !== explainSeq) return;  // another token was clicked meanwhile, or the result changed
    explainBox.replaceChildren();
    if (failure) {
      explainBox.appendChild(el("p", "explain-error", failure));
      return;
    }
    showExplanation(data, body);
  }

  /** The panel: the token and its label, the sentence score, the transition from the previous label, the
   * runner-up and its margin, the label's largest features by |weight|. */
  function showExplanation(data, body) {
    const token = data.tokens[0];
    const head = el("div", "explain-head");
    head.appendChild(el("span", "explain-token", token.token));
    head.appendChild(el("span", "explain-arrow", "→"));
    head.appendChild(el("span", "explain-label", token.label));
    if (token.model_label !== token.label) head.appendChild(el("span", "muted", ` (model label ${token.model_label})`));
    const close = el("button", "explain-close", "×");
    close.type = "button";
    close.title = "close";
    close.setAttribute("aria-label", "close the explanation");
    close.addEventListener("click", clearExplanation);
    head.appendChild(close);
    explainBox.appendChild(head);
    if (typeof body.text === "string") {
      explainBox.appendChild(el("p", "muted explain-note",
        `character ${body.index + 1} of “${body.text}” (B/M/E/S: begins, inside, ends a word, a word alone)`));
    }

    const facts = el("dl", "explain-facts");
    const fact = (name, value, className) => {
      facts.appendChild(el("dt", null, name));
      facts.appendChild(el("dd", className, value));
    };
    let transition = `${weight(token.transition)} from ${token.from}`;
    const extra = [];
    if (token.conditioned && token.conditioned.length) extra.push(`${token.conditioned.length} conditioned`);
    if (token.second_order) extra.push(`second order ${weight(token.second_order)}`);
    if (extra.length) transition += ` (${extra.join(", ")})`;
    fact("transition", transition, "explain-transition");
    fact("runner-up", token.runner_up === null ? "none (no other label has a path)"
      : `${token.runner_up}, margin ${token.margin.toFixed(3)}`, "explain-runner-up");
    fact("sentence score", data.score.toFixed(3), "explain-score");
    explainBox.appendChild(facts);

    const features = (token.features || []).slice().sort((a, b) => Math.abs(b[1]) - Math.abs(a[1]));
    const top = features.slice(0, TOP_FEATURES);
    const total = features.reduce((sum, f) => sum + f[1], 0);
    explainBox.appendChild(el("h3", "explain-title",
      `Features for ${token.label}: ${features.length} fired, sum ${weight(total)}` +
      (features.length > top.length ? ` (the ${top.length} largest)` : "")));
    const table = el("table", "explain-features");
    for (const [name, value] of top) {
      const row = el("tr", "feature");
      row.appendChild(el("td", "feature-name", name));
      const cell = el("td", `feature-weight ${value < 0 ? "negative" : "positive"}`, weight(value));
      row.appendChild(cell);
      table.appendChild(row);
    }
    explainBox.appendChild(table);
    if (typeof explainBox.scrollIntoView === "function") explainBox.scrollIntoView({ block: "nearest" });
  }

  resultBox.addEventListener("click", (event) => {
    const node = event.target.closest(".explainable");
    if (node && resultBox.contains(node)) explainToken(node);
  });
  resultBox.addEventListener("keydown", (event) => {
    if (event.key !== "Enter" && event.key !== " ") return;
    const node = event.target.closest(".explainable");
    if (!node || !resultBox.contains(node)) return;
    event.preventDefault();
    explainToken(node);
  });

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
  rawBox.addEventListener("change", () => {
    rawWanted = rawBox.checked;
    clearError();
    onModelChange();
  });
  modelSelect.addEventListener("change", () => {
    clearError();
    clearResult();
    onModelChange();
  });

  loadModels();
})();
