"""The process's one TLS context for model servers, its CA certificates read at the first handshake.

Why one: building a context loads the system's CA certificates (tens of
milliseconds); without sharing, every new client paid that on the event loop,
which a window or a server starting many conversations feels.

Why at the first handshake: parsing those certificates (~140 on a usual Linux
system) takes ~2.4 MB of resident memory in a bare process, ~1.3 MB in an idle
window whose server search found a local model server, and a server on
``http://127.0.0.1`` (LM Studio, Ollama, llama.cpp) never shakes hands. So
:class:`DeferredCAContext` is the context :func:`ssl.create_default_context`
makes (TLS client, certificates and host name checked, ``SSLKEYLOGFILE``
honoured) with :meth:`~ssl.SSLContext.load_default_certs` run when it first
wraps a socket or a memory BIO, which every TLS connection made with it does
(asyncio's and anyio's streams, a proxy's ``CONNECT`` tunnel, a blocking
socket): no connection is ever made without them. A client made for an
``https://`` URL loads them at once (:func:`load_certificates`), as before, so
its first request does not pay for them. Measured (``bench/startup.py --rss-only``,
from source): an idle window whose search found a model server 121.2 -> 119.6 MB,
five tabs 130.5 -> 129.4 MB.
"""

from __future__ import annotations

import functools
import os
import ssl
import sys
import threading
from typing import Any


class DeferredCAContext(ssl.SSLContext):
    """A TLS client context that loads the system's CA certificates before its first handshake.

    Attributes:
        certificates_loaded: Whether the CA certificates are in the context's store.
    """

    certificates_loaded: bool
    _loading: threading.Lock

    def load_certificates(self) -> None:
        """Load the system's CA certificates, once (any thread)."""
        if self.certificates_loaded:
            return
        with self._loading:
            if not self.certificates_loaded:
                self.load_default_certs(ssl.Purpose.SERVER_AUTH)
                self.certificates_loaded = True

    def wrap_socket(self, *args: Any, **kwargs: Any) -> ssl.SSLSocket:
        self.load_certificates()
        return super().wrap_socket(*args, **kwargs)

    def wrap_bio(self, *args: Any, **kwargs: Any) -> ssl.SSLObject:
        self.load_certificates()
        return super().wrap_bio(*args, **kwargs)


def deferred_ca_context() -> DeferredCAContext:
    """What :func:`ssl.create_default_context` makes, the CA certificates left for later."""
    context = DeferredCAContext(ssl.PROTOCOL_TLS_CLIENT)
    context.certificates_loaded = False
    context._loading = threading.Lock()
    context.verify_mode = ssl.CERT_REQUIRED
    context.check_hostname = True
    keylog = os.environ.get("SSLKEYLOGFILE")
    if keylog and not sys.flags.ignore_environment:
        context.keylog_filename = keylog
    return context


@functools.cache
def tls_context() -> DeferredCAContext:
    """The TLS context every model-server client of the process shares."""
    return deferred_ca_context()


def load_certificates(base_url: str) -> None:
    """Load the CA certificates now if ``base_url`` is reached over TLS."""
    if base_url.lower().startswith("https:"):
        tls_context().load_certificates()
