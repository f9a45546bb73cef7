#!/usr/bin/env bash
# Lint and types, as CI runs them (.ci/run calls this after installing the test extra):
#   ruff          style, bugbear, async, blind excepts, tidy imports, complexity ratchet
#   lint-imports  the layer contracts in pyproject.toml ([tool.importlinter]):
#                 gui | server -> session -> store | core; no Qt/FastAPI below the front ends
#   import cycles .ci/import_cycles.py: no two modules of desktop_agent import each other,
#                 directly or round a loop (grimp's graph, TYPE_CHECKING imports included)
#   layer arrows  .ci/layer_arrows.py: no module of a lower layer of a `layers` contract with
#                 containers (core/'s wings, session/'s and gui/'s parts) imports a higher one
#   class shapes  .ci/class_shapes.py: no class in session/ over 400 lines, no mixin in
#                 desktop_agent (composition over mixins; the rules are in its docstring)
#   mypy          --strict on every package ([tool.mypy]; the few relaxations are listed there)
#   docs          mkdocs build --strict: every page in the nav, no broken link or anchor, the
#                 SDK reference resolved from the docstrings (built in a temporary folder)
set -euo pipefail
cd "$(dirname "$0")/.."
# Analyse this checkout, not a copy installed into site-packages.
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
status=0
echo "-- ruff"; ruff check desktop_agent tests bench examples || status=1
echo "-- import contracts"; lint-imports || status=1
echo "-- import cycles"; python .ci/import_cycles.py desktop_agent || status=1
echo "-- layer arrows"; python .ci/layer_arrows.py || status=1
echo "-- class shapes"; python .ci/class_shapes.py desktop_agent || status=1
echo "-- mypy --strict"; mypy desktop_agent || status=1
echo "-- docs"; site=$(mktemp -d)
# Not --quiet: it hides warnings from --strict's count (two broken anchors passed so).
if ! NO_MKDOCS_2_WARNING=1 mkdocs build --strict --site-dir "$site" > "$site.log" 2>&1; then
    grep -v '^INFO' "$site.log"; status=1
fi
rm -f "$site.log"
rm -rf "$site"
exit $status
