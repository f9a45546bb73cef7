"""The versioned JSON export format: its name, version and JSON Schema.

The schema ships as ``export_format.schema.json`` next to this module
(documented in ``docs/export-format.md``). A new format version gets a new
number here, and the importer keeps reading every older one.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # jsonschema loads when a file is imported, not at start-up
    import jsonschema

FORMAT_NAME = "desktop-agent-conversations"
FORMAT_VERSION = 1
SCHEMA_FILE = "export_format.schema.json"


@cache
def export_schema() -> dict[str, Any]:
    """The JSON Schema of the export format (parsed once)."""
    text = resources.files(__package__).joinpath(SCHEMA_FILE).read_text(encoding="utf-8")
    return json.loads(text)  # type: ignore[no-any-return]


@cache
def _validator(definition: str | None) -> jsonschema.protocols.Validator:
    import jsonschema

    schema = export_schema()
    if definition is not None:
        schema = {"$defs": schema["$defs"], "$ref": f"#/$defs/{definition}"}
    cls = jsonschema.validators.validator_for(export_schema())
    return cls(schema)


def export_validator() -> jsonschema.protocols.Validator:
    """A validator for whole export files."""
    return _validator(None)


def openai_file_validator() -> jsonschema.protocols.Validator:
    """A validator for plain ``{"messages": [...]}`` files."""
    return _validator("openai_messages_file")
