"""The HTTP face of `structperc.service.serving`: a FastAPI app whose endpoints each make one library call.

Contract (the README's "HTTP service" section; kept stable): ``GET /health``, ``GET /models``,
``POST /tag``, ``POST /segment``, the web page at ``/`` (``static/``), OpenAPI at ``/openapi.json``
and ``/docs``. Every error is ``{"error": "<one line>"}`` with a 4xx status (400 input the model
cannot take or malformed JSON, 404 unknown model or path, 413 over a limit, 422 wrong JSON types);
nothing a request sends can stop the process.
"""
from __future__ import annotations

import contextlib
import logging
from pathlib import Path
from typing import Any, AsyncIterator, Dict, Hashable, List, Optional, Sequence, Union, cast

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from fastapi_offline import FastAPIOffline
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr
from starlette.exceptions import HTTPException as StarletteHTTPException

from structperc.errors import InputError
from structperc.service import serving
from structperc.service.batching import Batcher
from structperc.service.limits import BodyLimit
from structperc.version import __version__

STATIC = Path(__file__).resolve().parent / "static"
log = logging.getLogger("structperc.serve")

Token = Union[StrictStr, List[StrictStr]]


class TagRequest(BaseModel):
    """``sentences`` (tokens: strings, or lists of the model's column values) or ``text`` (one
    sentence a line), the model's name (default: the first served), and what to add to the tags."""

    model_config = ConfigDict(extra="forbid")
    sentences: Optional[List[List[Token]]] = Field(None, examples=[[["The", "cat", "sat", "."]]])
    text: Optional[StrictStr] = Field(None, examples=["The cat sat .\nA dog ran ."])
    model: Optional[StrictStr] = None
    marginals: StrictBool = Field(False, description="each tag's probability and each token's distribution")
    nbest: StrictInt = Field(0, ge=0, description="the k best tag sequences of each sentence (0: off)")


class SegmentRequest(BaseModel):
    """Raw text to segment into words, line by line."""

    model_config = ConfigDict(extra="forbid")
    text: StrictStr = Field(..., examples=["上海体育局召开会议"])
    model: Optional[StrictStr] = None


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
    spans: Optional[List[List[Span]]] = None
    confidence: Optional[List[List[float]]] = None
    marginals: Optional[List[List[Dict[str, float]]]] = None
    nbest: Optional[List[List[Path_]]] = None


class SegmentResponse(BaseModel):
    model: str
    words: List[List[str]]


class Error(BaseModel):
    error: str


class Service:
    """The models, limits and batcher behind the endpoints."""

    def __init__(self, table: serving.ModelTable, limits: serving.Limits):
        self.table, self.limits = table, limits
        self.batcher = Batcher(self._run, max_size=max(limits.max_sentences, 256))

    def _run(self, key: Hashable, documents: Sequence[Any]) -> list[dict[str, Any]]:
        kind, name, marginals, nbest = cast(tuple, key)  # the keys `tag` and `segment` make
        served = self.table.get(name)
        if kind == "segment":
            return serving.segment_documents(served, documents)
        return serving.tag_documents(served, documents, marginals=marginals, nbest=nbest)

    async def tag(self, req: TagRequest) -> dict[str, Any]:
        served = self.table.get(req.model)
        if req.nbest > self.limits.max_nbest:
            raise serving.RequestError(f"nbest {req.nbest}: at most {self.limits.max_nbest}", 422)
        sentences = serving.tag_input(served, req.sentences, req.text, self.limits)
        key = ("tag", served.name, req.marginals, req.nbest)
        return await self.batcher.submit(key, sentences, len(sentences))

    async def segment(self, req: SegmentRequest) -> dict[str, Any]:
        served = self.table.get(req.model)
        lines = serving.segment_input(served, req.text)
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
        service.batcher.close()

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
        if first.get("loc") == ("body",):
            if first.get("type") == "missing":  # no body at all: not JSON
                return _error(400, "malformed JSON: the body is empty")
            if "json" not in request.headers.get("content-type", ""):
                return _error(400, "send a JSON object with Content-Type: application/json")
            if first.get("type") == "model_attributes_type":  # JSON, but a list, a string, a number
                return _error(422, "the body must be a JSON object")
        # a token is str | list[str]: pydantic names the union's branch last; the place is enough
        where = ".".join(str(p) for p in first.get("loc", ()) if p not in ("body", "str", "list[str]"))
        return _error(422, f"{where or 'body'}: {first.get('msg', 'invalid request')}",
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

    @app.get("/models", summary="The models served: names, tasks, labels, columns")
    async def models() -> JSONResponse:
        return JSONResponse(table.describe())

    @app.post("/tag", response_model=TagResponse, responses=errors, summary="Tag sentences")
    async def tag(req: TagRequest) -> JSONResponse:
        return JSONResponse(await service.tag(req))

    @app.post("/segment", response_model=SegmentResponse, responses=errors, summary="Segment text into words")
    async def segment(req: SegmentRequest) -> JSONResponse:
        return JSONResponse(await service.segment(req))

    @app.get("/", include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(STATIC / "index.html", media_type="text/html")
