"""``structperc serve``: an HTTP JSON service and a web page over loaded models (FastAPI on uvicorn,
``pip install "structperc[serve]"``). The library side is `structperc.serving`; this package is the
face: `create_app` builds the app, `run` loads the models and serves them."""
from __future__ import annotations

import os
from typing import Sequence

from structperc import serving


def run(specs: Sequence[str | os.PathLike], *, host: str = "127.0.0.1", port: int = 8000,
        limits: serving.Limits | None = None, access_log: bool = False, log_level: str = "warning") -> None:
    """Load the models of ``specs`` (``NAME=DIR`` or ``DIR``; the first is the default) once and serve
    them until interrupted."""
    try:
        import uvicorn

        from structperc.service.app import create_app
    except ImportError as exc:
        from structperc.errors import InputError

        raise InputError(f"structperc serve needs the serve extra ({exc.name} is missing): "
                         "pip install \"structperc[serve]\"") from None
    table = serving.ModelTable.load(specs)
    app = create_app(table, limits)
    config = uvicorn.Config(app, host=host, port=port, access_log=access_log, log_level=log_level)
    shown = f"[{host}]" if ":" in host else host
    ready = (f"structperc serve: {len(table.models)} model(s) on http://{shown}:{port} "
             f"({', '.join(table.models)}; default {table.default})")

    class Server(uvicorn.Server):
        async def startup(self, sockets: list | None = None) -> None:
            await super().startup(sockets)
            if self.started:  # the port is bound: say so (scripts wait for this line or /health)
                print(ready, flush=True)

    Server(config).run()
