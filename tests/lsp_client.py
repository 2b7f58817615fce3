"""`planc lsp` driven as an editor drives it: the installed command started as a process of its own,
spoken to in JSON-RPC over its standard input and output by pygls's own LanguageClient.

The client runs on an asyncio loop in a thread of its own, so a test is plain sequential code:

    with LspSession(tmp_path) as lsp:
        uri = lsp.open(tmp_path / "a.plan", "search(query: x)")
        [diagnostic] = lsp.diagnostics(uri)      # the diagnostics published for version 1
        lsp.request("text_document_hover", types.HoverParams(...))

A test waits for what the server sends (the diagnostics of a given version, a response), never for
a while; every wait is bounded by HANG_GUARD_S, a guard against a hung server, not a claim about
speed. What the server writes to standard error goes to a file, shown when a test fails.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from cli import HANG_GUARD_S, planc_executable
from lsprotocol import types
from pygls.lsp.client import LanguageClient
from pygls.uris import from_fs_path


class _Client(LanguageClient):
    returncode: int | None = None

    async def server_exit(self, server: asyncio.subprocess.Process) -> None:
        self.returncode = server.returncode  # pygls's hook, called once the process has ended


class LspSession:
    def __init__(self, folder: Path, capabilities: types.ClientCapabilities | None = None) -> None:
        self.folder = folder
        self.stderr = folder / "lsp-stderr.txt"
        self.published: dict[str, list[types.PublishDiagnosticsParams]] = {}
        self.shown: list[types.ShowMessageParams] = []  # window/showMessage
        self.versions: dict[str, int] = {}
        self.arrived = threading.Condition()
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.client = _Client("planc-tests", "1")
        # (pygls marks a handler with attributes, which a bound method cannot take: hence the lambdas)
        self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)(lambda params: self._on_published(params))
        self.client.feature(types.WINDOW_SHOW_MESSAGE)(lambda params: self._on_shown(params))
        self.client.feature(types.WINDOW_LOG_MESSAGE)(lambda params: None)
        # pygls pipes the server's standard error and never reads it: a shell sends it to a file
        # instead, then becomes `planc lsp` (exec), so the process is the server itself.
        self._run(self.client.start_io("/bin/sh", "-c", 'exec "$0" lsp 2>"$1"', planc_executable(), str(self.stderr), cwd=folder))
        self.initialized = self._run(
            self.client.initialize_async(
                types.InitializeParams(
                    capabilities=capabilities or types.ClientCapabilities(), root_uri=from_fs_path(str(folder))
                )
            )
        )
        self.notify("initialized", types.InitializedParams())

    # --- the exchange

    def _run(self, coroutine):
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout=HANG_GUARD_S)

    def notify(self, method: str, params) -> None:
        """Send a notification (`text_document_did_open`, ...) from the client's own loop, as its
        writer is not safe to use from another thread."""

        async def send():
            getattr(self.client, method)(params)

        self._run(send())

    def request(self, method: str, params):
        """A request (`text_document_hover`, ...) and its result."""
        return self._run(getattr(self.client, f"{method}_async")(params))

    def _on_published(self, params: types.PublishDiagnosticsParams) -> None:
        with self.arrived:
            self.published.setdefault(params.uri, []).append(params)
            self.arrived.notify_all()

    def _on_shown(self, params: types.ShowMessageParams) -> None:
        with self.arrived:
            self.shown.append(params)
            self.arrived.notify_all()

    # --- documents

    def open(self, path: Path, text: str) -> str:
        uri = from_fs_path(str(path))
        self.versions[uri] = 1
        with self.arrived:  # opened again: what was published before is of another text
            self.published.pop(uri, None)
        self.notify(
            "text_document_did_open",
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(uri=uri, language_id="planc", version=1, text=text)
            ),
        )
        return uri

    def change(self, uri: str, text: str, range: types.Range | None = None) -> int:
        """Replace the document's text (or only `range` of it) and return its new version."""
        version = self.versions[uri] = self.versions[uri] + 1
        change = (
            types.TextDocumentContentChangeWholeDocument(text=text)
            if range is None
            else types.TextDocumentContentChangePartial(range=range, text=text)
        )
        self.notify(
            "text_document_did_change",
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version), content_changes=[change]
            ),
        )
        return version

    def diagnostics(self, uri: str, version: int | None = None) -> list[types.Diagnostic]:
        """The diagnostics published for `uri` at `version` (its latest by default), once they arrive."""
        wanted = self.versions[uri] if version is None else version
        with self.arrived:
            found = self.arrived.wait_for(
                lambda: any(p.version == wanted for p in self.published.get(uri, [])), timeout=HANG_GUARD_S
            )
            assert found, f"no diagnostics for {uri} version {wanted}; server stderr:\n{self.server_errors()}"
            return list([p for p in self.published[uri] if p.version == wanted][-1].diagnostics)

    def wait_shown(self, containing: str) -> types.ShowMessageParams:
        """The first window/showMessage whose text has `containing`, once it arrives."""

        def matching():
            return [params for params in self.shown if containing in params.message]

        with self.arrived:
            assert self.arrived.wait_for(matching, timeout=HANG_GUARD_S), f"no window/showMessage with {containing!r}"
            return matching()[0]

    def server_errors(self) -> str:
        return self.stderr.read_text(encoding="utf-8") if self.stderr.exists() else ""

    # --- the end

    def close(self) -> int:
        """`shutdown`, `exit`, and the server's exit code."""
        self._run(self.client.shutdown_async(None))
        self.notify("exit", None)
        self._run(self.client.stop())  # waits for the process to end, and for server_exit
        return self.client.returncode

    def __enter__(self) -> LspSession:
        return self

    def __exit__(self, *exc) -> None:
        try:
            if not self.client.stopped:
                self.close()
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(timeout=HANG_GUARD_S)
