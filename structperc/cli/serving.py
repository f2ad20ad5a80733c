"""``structperc serve``: one library call (`structperc.service.run`)."""
from __future__ import annotations

import click

from structperc.cli.environment import single_threaded_blas
from structperc.cli.errors import with_one_line_errors


@click.command("serve")
@click.option("--model", "models", multiple=True, metavar="[NAME=]DIR",
              help="A model to serve: a directory or a shipped model's name (en-upos; 'structperc models' "
                   "lists them). Repeat for several; the first is the default. NAME defaults to the "
                   "directory's (or shipped model's) name; requests pick a model by it. None: every "
                   "shipped model, en-upos the default.")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on (0.0.0.0: every interface; the service has no authentication).")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535))
@click.option("--max-body-bytes", default=1 << 20, show_default=True, type=click.IntRange(min=1),
              help="Largest request body (413 above).")
@click.option("--max-sentences", default=1000, show_default=True, type=click.IntRange(min=1),
              help="Most sentences in one request (413 above).")
@click.option("--max-tokens", default=1000, show_default=True, type=click.IntRange(min=1),
              help="Most tokens in one sentence (413 above).")
@click.option("--max-nbest", default=20, show_default=True, type=click.IntRange(min=1),
              help="Largest k a request may ask for with \"nbest\" (422 above).")
@click.option("--access-log", is_flag=True, help="Log every request (off: it costs throughput).")
@with_one_line_errors
def serve_command(models, host, port, max_body_bytes, max_sentences, max_tokens, max_nbest, access_log):
    """Serve models over HTTP: a JSON API (POST /tag, POST /segment, GET /models, GET /health; OpenAPI
    at /docs) and a web page at / to try them. With no --model, every shipped model is served under
    its own name (en-upos the default, if shipped). Models are loaded once; concurrent requests are
    batched. POST /tag takes raw text with "raw": true for models with a language (the shipped ones):
    the answer gives each token's character offsets. Needs the serve extra: pip install
    "structperc[serve]" (raw text also the text extra: "structperc[serve,text]").

    \b
    structperc serve
    structperc serve --model en-upos --model es-ner
    structperc serve --model chunker/
    structperc serve --model ner=models/ner-es --model pos=models/pos-en --port 8080
    curl -s localhost:8000/tag -H 'Content-Type: application/json' \\
      -d '{"model": "en-upos", "text": "Prices rose 3.5% in May. Shares fell.", "raw": true}'
    curl -s localhost:8000/tag -d '{"text": "Juan vive en Madrid ."}' -H 'Content-Type: application/json'
    """
    single_threaded_blas()
    from structperc import service
    from structperc.service.serving import Limits

    service.run(models, host=host, port=port, access_log=access_log,
                limits=Limits(max_body_bytes=max_body_bytes, max_sentences=max_sentences,
                              max_tokens=max_tokens, max_nbest=max_nbest))
