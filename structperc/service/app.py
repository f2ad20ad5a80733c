"""The HTTP face of `structperc.service.serving`: a FastAPI app whose endpoints each make one library call.

Contract (the README's "HTTP service" section; kept stable): ``GET /health``, ``GET /models``,
``POST /tag``, ``POST /segment``, ``POST /explain``, the web page at ``/`` (``static/``), OpenAPI at ``/openapi.json``
and ``/docs``. ``/tag`` takes tokens (``"sentences"``), one whitespace-tokenized sentence a line
(``"text"``), or raw text (``"text"`` with ``"raw": true``, models with a language: its answer adds each
token's character ``offsets`` into the text). ``/explain`` takes one sentence apart (as ``/tag`` answered
it: the same labels) into the weights of its score; the page shows it for a clicked token.

Every error is ``{"error": "<one line>"}`` with a 4xx status (400 input the model cannot take or
malformed JSON, 404 unknown model or path, 413 over a limit, 422 wrong JSON types); nothing a request
sends can stop the process.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Annotated, Any, AsyncIterator, Dict, Hashable, List, Optional, Sequence, Tuple, Union, cast

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from fastapi_offline import FastAPIOffline
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr
from pydantic_core import PydanticCustomError
from starlette.exceptions import HTTPException as StarletteHTTPException

from structperc.errors import InputError
from structperc.service import serving
from structperc.service.batching import Batcher
from structperc.service.limits import BodyLimit
from structperc.version import __version__

STATIC = Path(__file__).resolve().parent / "static"
log = logging.getLogger("structperc.serve")

#: The validation error type of a string that is not valid Unicode (answered 400, not 422: `_answer_errors`).
LONE_SURROGATE = "lone_surrogate"


def _unicode(text: str) -> str:
    """``text`` if it is valid Unicode. JSON's ``"\\ud800"`` escape decodes to a lone surrogate, which no answer
    can hold (its encoding failed after the model's work: a 500); refused at once, with its place (a 400)."""
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as err:
            raise PydanticCustomError(LONE_SURROGATE, "not valid Unicode: a lone surrogate (\\u{code}) at "
                                      "character {at}", {"code": f"{ord(text[err.start]):04x}", "at": err.start}) \
                from None
    return text


#: A request's strings: valid Unicode.
Text = Annotated[StrictStr, AfterValidator(_unicode)]
Token = Union[Text, List[Text]]

RAW = ("\"text\" is raw text (\"He didn't stay. She did.\"): split into sentences and tokens the way "
       "the model's corpus is (\"did\" \"n't\"; spaCy's rule-based tokenizer for the model's language), "
       "and the answer adds \"offsets\". Models whose \"raw\" is true in GET /models only (those with "
       "a language); others answer 400 saying why. The limits on sentences and tokens apply to the "
       "split text.")
OFFSETS = ("with \"raw\": true, each token's [start, end] in \"text\", in characters (Unicode code "
           "points, as Python indexes strings): text[start:end] is the token")


class TagRequest(BaseModel):
    """``sentences`` (tokens: strings, or lists of the model's column values) or ``text`` (one
    sentence a line, tokens separated by whitespace; with ``raw``: untokenized text), the model's name
    (default: the first served), and what to add to the tags."""

    model_config = ConfigDict(extra="forbid")
    sentences: Optional[List[List[Token]]] = Field(None, examples=[[["The", "cat", "sat", "."]]])
    text: Optional[Text] = Field(None, examples=["The cat sat .\nA dog ran ."],
                                      description="one sentence a line, tokens separated by whitespace; "
                                                  "with \"raw\": true, raw text as written")
    raw: StrictBool = Field(False, description=RAW)
    model: Optional[Text] = None
    marginals: StrictBool = Field(False, description="each tag's probability and each token's distribution")
    nbest: StrictInt = Field(0, ge=0, description="the k best tag sequences of each sentence (0: off)")


class SegmentRequest(BaseModel):
    """Raw text to segment into words, line by line."""

    model_config = ConfigDict(extra="forbid")
    text: Text = Field(..., examples=["上海体育局召开会议"])
    model: Optional[Text] = None


class Span(BaseModel):
    start: int
    end: int
    type: str


class Path_(BaseModel):
    tags: List[str]
    score: float
    probability: float


class TagResponse(BaseModel):
    model: str
    tokens: List[List[str]]
    tags: List[List[str]]
    offsets: Optional[List[List[List[int]]]] = Field(None, description=OFFSETS)
    spans: Optional[List[List[Span]]] = None
    confidence: Optional[List[List[float]]] = None
    marginals: Optional[List[List[Dict[str, float]]]] = None
    nbest: Optional[List[List[Path_]]] = None


class SegmentResponse(BaseModel):
    model: str
    words: List[List[str]]


class Error(BaseModel):
    error: str


EXPLAIN = ("Why a sentence got its tags: its best path taken apart into the weights that make its score "
           "(`Tagger.explain`; `Segmenter.explain` for a segmentation model). A tagger takes one sentence "
           "as /tag answered it: ``tokens`` (token strings; for a model reading several columns, the lists "
           "of values sent to /tag, or the words alone when its other columns come from an upstream model, "
           "as en-chunk's POS from en-xpos: they are filled as /tag's raw path fills them), or ``sentences`` "
           "(the document /tag was sent) with ``sentence`` (the one to explain, default 0): models with "
           "document-level features (NER) read the sentences around it, as /tag did. The labels are "
           "/tag's tags. A segmenter takes ``text``: one line without whitespace; its characters are the "
           "tokens. ``index`` (optional): answer with that token alone. The limits of /tag apply (a "
           "segmenter's characters count as tokens). The answer: ``model``, ``tokens`` (each: ``token``, "
           "``label`` (/tag's tag), ``model_label`` (in the model's scheme), ``features`` ([name, weight] "
           "pairs that fired for the label, largest weight first), ``from`` (the previous label, "
           "``<bos>`` at the first token), ``transition`` (its weight from there: the transition weight, "
           "the ``conditioned`` [name, weight] pairs and ``second_order``), ``runner_up`` (the best other "
           "tag) and ``margin`` (how much better the best path is than the best path through it), both "
           "null when no other tag has a path), ``score`` (the path's: the features and transitions of "
           "every token plus ``end`` sum to it), ``end``, and ``sentence`` / ``index`` when given.")


class ExplainRequest(BaseModel):
    """One sentence (``tokens``, or ``sentences`` and ``sentence``) for a tagger, or ``text`` (one line)
    for a segmenter; ``index``: one token's explanation only."""

    model_config = ConfigDict(extra="forbid")
    model: Optional[Text] = None
    tokens: Optional[List[Token]] = Field(None, examples=[["The", "cat", "sat", "."]],
                                          description="one sentence, as /tag answered it")
    sentences: Optional[List[List[Token]]] = Field(None, description="the document sent to /tag")
    sentence: Optional[StrictInt] = Field(None, ge=0, description="with \"sentences\": the one to explain "
                                                                 "(default 0)")
    index: Optional[StrictInt] = Field(None, ge=0, description="answer with this token (character) alone")
    text: Optional[Text] = Field(None, description="a segmenter's: one line without whitespace")


class ExplainedToken(BaseModel):
    token: str
    label: str
    model_label: str
    features: List[Tuple[str, float]]
    from_: str = Field(..., alias="from")
    transition: float
    conditioned: List[Tuple[str, float]]
    second_order: float
    runner_up: Optional[str]
    margin: Optional[float]


class ExplainResponse(BaseModel):
    model: str
    tokens: List[ExplainedToken]
    score: float
    end: float
    sentence: Optional[int] = None
    index: Optional[int] = None


class Service:
    """The models, limits and batcher behind the endpoints."""

    def __init__(self, table: serving.ModelTable, limits: serving.Limits):
        self.table, self.limits = table, limits
        self.batcher = Batcher(self._run, max_size=max(limits.max_sentences, 256))
        # raw text is split here, off the event loop and on one thread (spaCy's tokenizer keeps a cache)
        self.splitter = ThreadPoolExecutor(max_workers=1, thread_name_prefix="structperc-split")

    def _run(self, key: Hashable, documents: Sequence[Any]) -> list[dict[str, Any]]:
        kind, name, marginals, nbest = cast(tuple, key)  # the keys `tag` and `segment` make
        served = self.table.get(name)
        if kind == "segment":
            return serving.segment_documents(served, documents)
        if kind == "explain":
            return [serving.explain_document(served, job) for job in documents]
        if kind == "raw":
            return serving.tag_raw_documents(served, documents, marginals=marginals, nbest=nbest)
        return serving.tag_documents(served, documents, marginals=marginals, nbest=nbest)

    async def tag(self, req: TagRequest) -> dict[str, Any]:
        served = self.table.get(req.model)
        if req.nbest > self.limits.max_nbest:
            raise serving.RequestError(f"nbest {req.nbest}: at most {self.limits.max_nbest}", 422)
        if req.raw:
            if req.sentences is not None or req.text is None:
                raise serving.RequestError("\"raw\": true takes \"text\" (raw text)" +
                                           (", not \"sentences\"" if req.sentences is not None else ""))
            loop = asyncio.get_running_loop()
            sentences = await loop.run_in_executor(self.splitter, serving.raw_input, served, req.text,
                                                   self.limits)
            kind = "raw"
        else:
            sentences = serving.tag_input(served, req.sentences, req.text, self.limits)
            kind = "tag"
        key = (kind, served.name, req.marginals, req.nbest)
        return await self.batcher.submit(key, sentences, len(sentences))

    async def explain(self, req: ExplainRequest) -> dict[str, Any]:
        served = self.table.get(req.model)
        job = serving.explain_input(served, tokens=req.tokens, sentences=req.sentences, sentence=req.sentence,
                                    index=req.index, text=req.text, limits=self.limits)
        return await self.batcher.submit(("explain", served.name, False, 0), job, 1)

    def close(self) -> None:
        self.batcher.close()
        self.splitter.shutdown(wait=False, cancel_futures=True)

    async def segment(self, req: SegmentRequest) -> dict[str, Any]:
        served = self.table.get(req.model, segments=True)
        lines = serving.segment_input(served, req.text, self.limits)
        return await self.batcher.submit(("segment", served.name, False, 0), lines, len(lines))


def _error(status: int, message: str, **more: Any) -> JSONResponse:
    return JSONResponse({"error": " ".join(message.split()), **more}, status_code=status)


def create_app(table: serving.ModelTable, limits: serving.Limits | None = None) -> FastAPI:
    """The app serving ``table``'s models within ``limits``."""
    limits = limits or serving.Limits()
    service = Service(table, limits)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        service.close()

    # FastAPIOffline: FastAPI serving its /docs page's Swagger UI from the package, not from a CDN
    app = FastAPIOffline(title="structperc", version=__version__, lifespan=lifespan,
                  description="Sequence tagging with the averaged structured perceptron: tag sentences, "
                              "segment Chinese text. Each request is one document.")
    app.state.service = service
    _answer_errors(app)
    _endpoints(app, service)
    if STATIC.is_dir():
        app.mount("/static", StaticFiles(directory=STATIC), name="static")

    app.add_middleware(BodyLimit, max_bytes=limits.max_body_bytes)
    return app


def _place(detail: dict) -> str:
    """Where in the body a validation error is (``sentences.0.1``): a token is ``Text | list[Text]``, and pydantic
    names the union's branch in the place (``function-after[_unicode(), str]``, ``list[…]``); the place is enough."""
    return ".".join(str(p) for p in detail.get("loc", ())
                    if p != "body" and not (isinstance(p, str) and (p == "str" or "[" in p)))


def _answer_errors(app: FastAPI) -> None:
    """Every error as ``{"error": "<one line>"}`` with its status (the contract of the module
    docstring); an unexpected one is logged and answered 500, and the server goes on."""

    @app.exception_handler(serving.RequestError)
    async def _refused(request: Request, exc: serving.RequestError) -> JSONResponse:
        return _error(exc.status, exc.reason)

    @app.exception_handler(InputError)
    async def _bad_input(request: Request, exc: InputError) -> JSONResponse:
        return _error(400, str(exc))

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        details = exc.errors()
        if any(d.get("type") == "json_invalid" for d in details):
            return _error(400, "malformed JSON: " + str(details[0].get("ctx", {}).get("error", "")))
        first = details[0] if details else {}
        unicode = next((d for d in details if d.get("type") == LONE_SURROGATE), None)
        if unicode is not None:  # input the model cannot take, not a wrong JSON type
            return _error(400, f"{_place(unicode)}: {unicode.get('msg', 'not valid Unicode')}")
        if first.get("loc") == ("body",):
            if first.get("type") == "missing":  # no body at all: not JSON
                return _error(400, "malformed JSON: the body is empty")
            if "json" not in request.headers.get("content-type", ""):
                return _error(400, "send a JSON object with Content-Type: application/json")
            if first.get("type") == "model_attributes_type":  # JSON, but a list, a string, a number
                return _error(422, "the body must be a JSON object")
        return _error(422, f"{_place(first) or 'body'}: {first.get('msg', 'invalid request')}",
                      detail=[{"loc": list(d.get("loc", ())), "msg": d.get("msg", ""), "type": d.get("type", "")}
                              for d in details[:20]])

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        message = exc.detail if isinstance(exc.detail, str) else "request refused"
        if exc.status_code == 404:
            message = f"no such path: {request.url.path}"
        return _error(exc.status_code, message)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error on %s %s", request.method, request.url.path)
        return _error(500, f"internal error ({type(exc).__name__}); the server goes on")


def _endpoints(app: FastAPI, service: Service) -> None:
    """The endpoints, each one call to ``service`` (or its model table) and the web page."""
    table = service.table
    errors: dict[int | str, dict[str, Any]] = {status: {"model": Error} for status in (400, 404, 413, 422)}

    @app.get("/health", summary="Liveness")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/models", summary="The models served: names, tasks, labels, columns, language, cards",
             description="``default`` (the model a request without ``model`` gets) and ``models``: for "
                         "each, ``name``, ``task``, ``endpoint``, ``columns``, ``labels``, ``scheme``, "
                         "``spans``, ``marginals``, ``nbest``, ``calibrated``, ``language`` (or null), "
                         "``raw`` (whether /tag takes it raw text) and ``card`` (a shipped model's: "
                         "``description``, ``language``, ``corpus``, ``licence``, ``test`` scores "
                         "{test set: {metric, score}}, ``date``, ``reads``; null for other models).")
    async def models() -> JSONResponse:
        return JSONResponse(table.describe())

    @app.post("/tag", response_model=TagResponse, responses=errors, summary="Tag sentences or raw text",
              description="Exactly one of ``sentences`` (lists of tokens) and ``text`` (one sentence a "
                          "line, tokens separated by whitespace). With ``\"raw\": true``, ``text`` is raw "
                          "text instead: " + RAW + " The answer: " + OFFSETS + ".")
    async def tag(req: TagRequest) -> JSONResponse:
        return JSONResponse(await service.tag(req))

    @app.post("/segment", response_model=SegmentResponse, responses=errors, summary="Segment text into words")
    async def segment(req: SegmentRequest) -> JSONResponse:
        return JSONResponse(await service.segment(req))

    @app.post("/explain", response_model=ExplainResponse, responses=errors,
              summary="Why a sentence got its tags: the weights of each token's label", description=EXPLAIN)
    async def explain(req: ExplainRequest) -> JSONResponse:
        return JSONResponse(await service.explain(req))

    @app.get("/", include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(STATIC / "index.html", media_type="text/html")
