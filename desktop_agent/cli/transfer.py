"""``desktop-agent export``, ``desktop-agent import`` and ``desktop-agent copy-store``.

Examples::

    desktop-agent export --list
    desktop-agent export --all -o conversations.json
    desktop-agent export 3f2a9c 77b1 -o two.json          # ids or unique id prefixes
    desktop-agent export 3f2a9c --format markdown -o chat.md
    desktop-agent import conversations.json chat-from-elsewhere.json
    DESKTOP_AGENT_DATABASE_URL=postgresql://... desktop-agent copy-store   # ids kept

Only the standard library is imported at the top, so ``desktop-agent --help``
stays fast; the store loads inside the handlers. Problems print one sentence
on stderr and exit with status 1; nothing is half-written or half-imported.

This sits with ``cli`` above the layers (not in the store) because an import is
checked by two of them: the store resets what weakens safety, and the session
layer's one settings schema removes values the app would refuse (the window's
import does the same), each reported in a sentence.
"""

from __future__ import annotations

import argparse
import datetime
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from desktop_agent.store.store import Store

EXIT_OK = 0
EXIT_ERROR = 1


class _CommandError(Exception):
    """A problem to report as one line, without a traceback."""


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the ``export`` and ``import`` subcommands."""
    export = subparsers.add_parser(
        "export",
        help="export conversations to JSON (or one to Markdown)",
        description="Export conversations to the documented JSON format (docs/export-format.md) "
        "or to Markdown for reading. API keys are never included.",
    )
    export.add_argument(
        "ids", nargs="*", metavar="ID", help="conversation ids (or unique prefixes)"
    )
    export.add_argument("--all", action="store_true", help="export every conversation")
    export.add_argument("--list", action="store_true", help="list conversations and their ids")
    export.add_argument(
        "-o",
        "--output",
        type=Path,
        help="file to write (for Markdown with several ids: a folder); default: standard output",
    )
    export.add_argument("--format", choices=("json", "markdown"), default="json")
    _add_database_option(export)
    export.set_defaults(handler=run_export)

    importer = subparsers.add_parser(
        "import",
        help="import conversations from JSON files",
        description='Import Desktop Agent exports or OpenAI-style {"messages": [...]} files as '
        "new conversations. If any file is malformed, nothing is imported.",
    )
    importer.add_argument("files", nargs="+", type=Path, metavar="FILE")
    _add_database_option(importer)
    importer.set_defaults(handler=run_import)

    copier = subparsers.add_parser(
        "copy-store",
        help="copy the data folder's conversations into a PostgreSQL database, ids kept",
        description="Copy every conversation, message, event and app setting of a SQLite "
        "conversation database into an empty PostgreSQL database (for `serve --database`), "
        "keeping every id. One transaction: all or nothing.",
    )
    copier.add_argument("--from", dest="source", type=Path, default=None, metavar="FILE",
                        help="the SQLite file (default: the data folder's)")
    copier.add_argument("--to", dest="target", default=None, metavar="URL",
                        help="postgresql://user:password@host:5432/name (default: "
                             "DESKTOP_AGENT_DATABASE_URL; prefer it, a password on the "
                             "command line is visible to other users)")
    copier.set_defaults(handler=run_copy_store)


def _add_database_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--database",
        type=Path,
        help="conversation database to use (default: the app's; see DESKTOP_AGENT_DATA_DIR)",
    )


def run_copy_store(args: argparse.Namespace) -> int:
    """Handle ``desktop-agent copy-store``."""
    import os

    from desktop_agent.store.errors import StoreError
    from desktop_agent.store.store import Store, is_database_url

    target = args.target or os.environ.get("DESKTOP_AGENT_DATABASE_URL", "").strip()
    if not target or not is_database_url(target):
        return _fail("copy-store", "give the PostgreSQL database to copy into with --to "
                     "postgresql://user:password@host:5432/name or DESKTOP_AGENT_DATABASE_URL")
    if args.source is not None and not args.source.is_file():
        return _fail("copy-store", f"there is no conversation database at {args.source}")
    try:
        with Store.open(args.source, recover=False) as source, Store.open(target) as into:
            counts = into.copy_from(source)
            sys.stdout.write(
                f"Copied {counts.conversations} conversations, {counts.messages} messages, "
                f"{counts.events} events and {counts.settings} app settings from "
                f"{source.location} into {into.location}.\n")
    except (StoreError, OSError) as exc:
        return _fail("copy-store", str(exc))
    return EXIT_OK


def _fail(command: str, message: str) -> int:
    sys.stderr.write(f"desktop-agent {command}: error: {message}\n")
    return EXIT_ERROR


def _open_store(args: argparse.Namespace) -> Store:
    from desktop_agent.store.store import Store

    return Store.open(args.database)


def run_export(args: argparse.Namespace) -> int:
    """Handle ``desktop-agent export``."""
    from desktop_agent.store.errors import StoreError

    try:
        with _open_store(args) as store:
            if args.list:
                _print_list(store)
                return EXIT_OK
            return _export(store, args)
    except (_CommandError, StoreError, OSError) as exc:
        return _fail("export", str(exc))


def _print_list(store: Store) -> None:
    conversations = store.list_conversations(limit=-1)
    if not conversations:
        sys.stdout.write("No conversations yet.\n")
    for record in conversations:
        when = datetime.datetime.fromtimestamp(record.updated_at).strftime("%Y-%m-%d %H:%M")
        sys.stdout.write(f"{record.id}  {when}  {record.title}\n")


def _resolve_ids(store: Store, wanted: list[str]) -> list[str]:
    """Full ids for the given ids or unique prefixes, in the order given."""
    all_ids = [c.id for c in store.list_conversations(limit=-1)]
    resolved = []
    for text in wanted:
        matches = [i for i in all_ids if i == text] or [i for i in all_ids if i.startswith(text)]
        if not matches:
            raise _CommandError(f"no conversation has the id {text!r} (see --list)")
        if len(matches) > 1:
            raise _CommandError(f"{text!r} matches {len(matches)} conversations; give more of it")
        resolved.append(matches[0])
    return resolved


def _export(store: Store, args: argparse.Namespace) -> int:
    if args.all and args.ids:
        raise _CommandError("give conversation ids or --all, not both")
    if not args.all and not args.ids:
        raise _CommandError("name the conversations to export, or pass --all (see --list)")
    ids = [c.id for c in store.list_conversations(limit=-1)] if args.all else None
    ids = ids if ids is not None else _resolve_ids(store, args.ids)
    if args.format == "markdown":
        return _export_markdown(store, ids, args.output)
    from desktop_agent.store.export_json import export_json_text, write_text_atomically

    text = export_json_text(store, ids)
    if args.output is None:
        sys.stdout.write(text)
    else:
        write_text_atomically(args.output, text)
        sys.stderr.write(f"Exported {len(ids)} conversation(s) to {args.output}\n")
    return EXIT_OK


def _slug(title: str) -> str:
    slug = re.sub(r"[^\w\-]+", "-", title.strip().lower()).strip("-")
    return slug[:50] or "conversation"


def _export_markdown(store: Store, ids: list[str], output: Path | None) -> int:
    from desktop_agent.store.export_json import write_text_atomically
    from desktop_agent.store.markdown_export import conversation_to_markdown

    documents = [(i, conversation_to_markdown(store, i)) for i in ids]
    if output is None:
        sys.stdout.write("\n\n".join(text for _, text in documents))
        return EXIT_OK
    if len(documents) == 1 and not output.is_dir():
        write_text_atomically(output, documents[0][1])
        sys.stderr.write(f"Exported 1 conversation to {output}\n")
        return EXIT_OK
    if not output.is_dir():
        raise _CommandError(
            f"{output} is not a folder; Markdown export of several conversations "
            "writes one file each into a folder"
        )
    for conversation_id, text in documents:
        record = store.get_conversation(conversation_id)
        title = record.title if record else "conversation"
        target = output / f"{_slug(title)}-{conversation_id[:8]}.md"
        write_text_atomically(target, text)
    sys.stderr.write(f"Exported {len(documents)} conversation(s) to {output}\n")
    return EXIT_OK


def run_import(args: argparse.Namespace) -> int:
    """Handle ``desktop-agent import``."""
    from desktop_agent.session import drop_invalid_settings
    from desktop_agent.store.errors import StoreError
    from desktop_agent.store.import_json import import_files

    resets: list[str] = []
    try:
        with _open_store(args) as store:
            records = import_files(store, args.files, report=resets)
            removed = drop_invalid_settings(store, records)
    except (StoreError, OSError) as exc:
        return _fail("import", f"{exc}. Nothing was imported.")
    for record in records:
        sys.stdout.write(f"Imported {record.title!r} as {record.id}\n")
    for note in resets:
        sys.stderr.write(f"Reset for safety: {note}\n")
    for note in removed:
        sys.stderr.write(f"Removed: {note}\n")
    sys.stderr.write(f"Imported {len(records)} conversation(s).\n")
    return EXIT_OK
