"""The shared TLS context reads the CA certificates at its first handshake, and always does.

A window talking to LM Studio or llama.cpp on ``http://127.0.0.1`` never needs
them (~1.3 MB resident in an idle window); a connection over TLS must never be
made without them.
"""

from __future__ import annotations

import asyncio
import datetime
import ssl
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from tier_policy import require_module

from desktop_agent.core.wire.model_client import new_openai_client
from desktop_agent.core.wire.tls_context import deferred_ca_context, tls_context
from desktop_agent.testing import ScriptedServer

pytestmark = pytest.mark.timeout(60)


def _self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for ``localhost`` that no system trusts, and its key."""
    require_module("cryptography")  # the test extra's (the postgres engine's cipher)
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
                   .public_key(key.public_key()).serial_number(1)
                   .not_valid_before(now - datetime.timedelta(hours=1))
                   .not_valid_after(now + datetime.timedelta(hours=1))
                   .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]),
                                  critical=False)
                   .sign(key, hashes.SHA256()))
    cert_file, key_file = folder / "cert.pem", folder / "key.pem"
    cert_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_file, key_file


async def test_a_tls_connection_loads_them_and_checks_the_server_against_them(
        tmp_path: Path) -> None:
    cert_file, key_file = _self_signed(tmp_path)
    serving = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    serving.load_cert_chain(cert_file, key_file)

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0, ssl=serving)
    port = server.sockets[0].getsockname()[1]
    context = deferred_ca_context()
    try:
        assert not context.certificates_loaded
        assert context.cert_store_stats()["x509_ca"] == 0
        with pytest.raises(ssl.SSLCertVerificationError, match=r"self.signed"):
            await asyncio.open_connection("127.0.0.1", port, ssl=context,
                                          server_hostname="localhost")
        assert context.certificates_loaded  # read for the handshake, which then checked
        trusting = deferred_ca_context()
        trusting.load_verify_locations(cert_file)  # the same context, told to trust it
        _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=trusting,
                                                  server_hostname="localhost")
        writer.close()
    finally:
        server.close()
        await server.wait_closed()


def test_it_is_what_the_standard_library_makes_for_a_client() -> None:
    standard, deferred = ssl.create_default_context(), deferred_ca_context()
    deferred.load_certificates()
    for attribute in ("protocol", "verify_mode", "check_hostname", "options",
                      "verify_flags", "minimum_version", "maximum_version"):
        assert getattr(deferred, attribute) == getattr(standard, attribute), attribute
    assert deferred.cert_store_stats() == standard.cert_store_stats()


async def test_a_client_for_an_https_server_loads_them_when_made() -> None:
    client = new_openai_client("https://models.example.invalid/v1")
    try:
        assert tls_context().certificates_loaded  # not on its first request
    finally:
        await client.close()


def test_talking_to_a_local_http_server_leaves_them_unread(server: ScriptedServer) -> None:
    # A new interpreter, as a window starts: the search lists the server's models and
    # the context its client shares has read no certificate.
    code = textwrap.dedent(f"""
        import asyncio
        from desktop_agent.core.servers.discovery import discover_servers
        from desktop_agent.core.wire.connection_pool import ConnectionPool
        from desktop_agent.core.wire.tls_context import tls_context

        async def main():
            pool = ConnectionPool()
            found = await discover_servers(extra_urls=({server.base_url!r},), known=(),
                                           pool=pool)
            await pool.aclose()
            print([m.id for s in found for m in s.models],
                  tls_context().cert_store_stats()["x509_ca"])

        asyncio.run(main())
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("] ")[-1].strip() == "0", result.stdout
    assert server.models[0] in result.stdout
