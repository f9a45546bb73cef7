"""One conversation for every front end: settings, options, tools, approvals, recording.

The window (``gui/``) and the REST server (``server/``) are adapters over this
package, so both apply the same rules to a conversation: the same settings
schema and defaults, the same tools, the same permission rules from
``config.json``, the same approval decisions and the same stored record.
Nothing here imports Qt or FastAPI (an import-linter contract says so).
"""
