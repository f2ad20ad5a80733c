"""``structperc serve``: an HTTP JSON service and a web page over loaded models (FastAPI on uvicorn,
``pip install "structperc[serve]"``). The library side is `structperc.service.serving`; this package is the
face: `create_app` builds the app, `run` loads the models and serves them."""
from __future__ import annotations

import errno
import os
import socket
from typing import Any, Sequence

from structperc.errors import InputError
from structperc.service import serving


def run(specs: Sequence[str | os.PathLike], *, host: str = "127.0.0.1", port: int = 8000,
        limits: serving.Limits | None = None, access_log: bool = False, log_level: str = "warning") -> None:
    """Load the models of ``specs`` (``NAME=DIR`` or ``DIR``, DIR a path or a shipped model's name; the
    first is the default; none: every shipped model, `serving.ModelTable.all_shipped`) once and serve
    them until interrupted."""
    try:
        import uvicorn

        from structperc.service.app import create_app
    except ImportError as exc:
        raise InputError(f"structperc serve needs the serve extra ({exc.name} is missing): "
                         "pip install \"structperc[serve]\"") from None
    table = serving.ModelTable.load(specs) if specs else serving.ModelTable.all_shipped()
    check_address(host, port)  # before uvicorn, whose failure to bind is a logged line and exit 3
    app = create_app(table, limits)
    config = uvicorn.Config(app, host=host, port=port, access_log=access_log, log_level=log_level)
    shown = f"[{host}]" if ":" in host else host

    class Server(uvicorn.Server):
        async def startup(self, sockets: list | None = None) -> None:
            await super().startup(sockets)
            if self.started:  # the port is bound: say so (scripts wait for this line or /health)
                print(f"structperc serve: {len(table.models)} model(s) on http://{shown}:{bound_port(self, port)} "
                      f"({', '.join(table.models)}; default {table.default})", flush=True)

    Server(config).run()


def bound_port(server: Any, asked: int) -> int:
    """The port a started uvicorn server listens on: the one asked for, or the one the system chose for port 0."""
    for listening in getattr(server, "servers", ()):
        for sock in getattr(listening, "sockets", ()) or ():
            return int(sock.getsockname()[1])
    return asked


def check_address(host: str, port: int) -> None:
    """Refuse, with one `InputError` line, an address the service could not listen on (the port taken
    by another process, a host name that does not resolve or is not this machine's): bind every
    address ``host`` resolves to as the server will (``SO_REUSEADDR``, as asyncio does), then let go."""
    shown = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    try:
        found = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except OSError as exc:
        raise InputError(f"cannot listen on {shown}: {exc.strerror or exc} (--host)") from None
    for family, kind, proto, _, address in found:
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                probe.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                probe.bind(address)
            except OSError as exc:
                hint = (": another process listens there; stop it or pick another --port"
                        if exc.errno == errno.EADDRINUSE else "")
                raise InputError(f"cannot listen on {shown}: {exc.strerror or exc}{hint}") from None
