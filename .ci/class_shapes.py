"""Fail on a class that grew past its size and on any mixin, naming each.

Usage: ``python .ci/class_shapes.py [PACKAGE_DIR]`` (default: ``desktop_agent``).

Why: a class that grows gets parts, not mixins (STYLE.md). ``Store`` and
``ConversationSession`` are each one thin object composed of parts with one
job, their public methods forwarded once; a mixin instead splits one object's
state over several classes that each read attributes only the others set, so
none can be read, tested or moved alone. This script keeps both from coming
back. It reads the source with :mod:`ast` and runs nothing.

The rules:

1. **Size.** No class under ``desktop_agent/session/`` is longer than 400
   lines (from its first decorator to its last line, nested classes counted
   on their own as well). Grow a part instead.
2. **No mixin anywhere in the package.** A class is a mixin when it is named
   ``...Mixin``, or when another class of the package inherits from it and it
   cannot stand on its own, i.e. it leans on the class that mixes it in for
   state or behaviour. It leans so when:

   a. its body declares members it never provides: a bare annotation
      (``_store: Store``) that no method of it assigns, in a class that is not
      a dataclass (where an annotation is a field), or any definition under
      ``if TYPE_CHECKING:`` (stubs of what the host has); or
   b. one of its methods reads ``self.name`` where ``name`` is defined
      neither by it nor by its bases in the package (as a method, a class
      attribute, a nested class or an assignment to ``self.name`` in any
      method), and every base it has is a class of the package or
      ``object``/``Generic``/``ABC`` (so nothing outside could provide it).

   A base class that declares what its subclasses supply (an abstract method,
   a class attribute) is not a mixin; a class whose other bases come from
   outside the package (Qt, pydantic, an exception) is not judged by (b),
   since those bases define attributes this script cannot see.

Exit status: 0 when every class keeps the rules, 1 otherwise, 2 when the
package cannot be found.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

SIZE_LIMITS = {"desktop_agent/session": 400}
"""Folder (relative to the repository) -> the longest class allowed in it, in lines."""

NEUTRAL_BASES = {"object", "Generic", "ABC"}
"""Bases that give a class no attributes of their own to lean on."""


@dataclass
class ClassInfo:
    """One class of the package, as the rules need it."""

    module: str
    path: Path  # as shown: relative to the folder holding the package
    node: ast.ClassDef
    imports: dict[str, str]  # local name -> dotted name it was imported as
    bases: list[str] = field(default_factory=list)  # dotted names, project classes resolved
    defined: set[str] = field(default_factory=set)
    declared_only: set[str] = field(default_factory=set)
    read: dict[str, int] = field(default_factory=dict)  # self.name -> first line read

    @property
    def dotted(self) -> str:
        return f"{self.module}.{self.node.name}"

    @property
    def where(self) -> str:
        return f"{self.path}:{self.node.lineno} {self.node.name}"


def module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_imports(tree: ast.Module, module: str, is_package: bool) -> dict[str, str]:
    """Local names bound by the module's imports (TYPE_CHECKING ones too), as dotted names."""
    names: dict[str, str] = {}
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                names[alias.asname or alias.name.partition(".")[0]] = \
                    alias.name if alias.asname else alias.name.partition(".")[0]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                names[alias.asname or alias.name] = f"{base}.{alias.name}"
    return names


def dotted(expr: ast.expr) -> str | None:
    """``a.b.C`` for a name or an attribute chain; the subscript's value for ``Generic[T]``."""
    if isinstance(expr, ast.Subscript):
        return dotted(expr.value)
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute):
        inner = dotted(expr.value)
        return f"{inner}.{expr.attr}" if inner else None
    return None


def is_dataclass(node: ast.ClassDef) -> bool:
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        name = dotted(target) or ""
        if name.rpartition(".")[2] in ("dataclass", "define", "frozen"):
            return True
    return False


def is_type_checking(test: ast.expr) -> bool:
    return (dotted(test) or "").rpartition(".")[2] == "TYPE_CHECKING"


def self_name(function: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    """The name of a method's instance argument (None for static and class methods)."""
    for decorator in function.decorator_list:
        if (dotted(decorator) or "") in ("staticmethod", "classmethod"):
            return None
    arguments = [*function.args.posonlyargs, *function.args.args]
    return arguments[0].arg if arguments else None


def assigned_targets(node: ast.AST) -> Iterator[ast.expr]:
    if isinstance(node, ast.Assign):
        for target in node.targets:
            yield from unpacked(target)
    elif isinstance(node, ast.AnnAssign | ast.AugAssign | ast.For | ast.AsyncFor):
        yield from unpacked(node.target)
    elif isinstance(node, ast.withitem) and node.optional_vars is not None:
        yield from unpacked(node.optional_vars)


def unpacked(target: ast.expr) -> Iterator[ast.expr]:
    if isinstance(target, ast.Tuple | ast.List):
        for element in target.elts:
            yield from unpacked(element)
    elif isinstance(target, ast.Starred):
        yield from unpacked(target.value)
    else:
        yield target


def describe(info: ClassInfo) -> None:
    """Fill what the class defines, only declares, and reads from ``self``."""
    dataclass_fields = is_dataclass(info.node)
    body: list[tuple[ast.stmt, bool]] = [(s, False) for s in info.node.body]
    while body:
        statement, stub = body.pop()
        if isinstance(statement, ast.If) and is_type_checking(statement.test):
            body += [(s, True) for s in statement.body]
            body += [(s, stub) for s in statement.orelse]
            continue
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            (info.declared_only if stub else info.defined).add(statement.name)
            if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef) and not stub:
                describe_method(info, statement)
        elif isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
            name = statement.target.id
            provided = statement.value is not None or dataclass_fields
            (info.defined if provided and not stub else info.declared_only).add(name)
        elif isinstance(statement, ast.Assign):
            for target in assigned_targets(statement):
                if isinstance(target, ast.Name):
                    (info.declared_only if stub else info.defined).add(target.id)
    info.declared_only -= info.defined


def describe_method(info: ClassInfo,
                    function: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
    me = self_name(function)
    if me is None:
        return
    for node in ast.walk(function):
        for target in assigned_targets(node):
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                    and target.value.id == me:
                info.defined.add(target.attr)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and node.value.id == me and isinstance(node.ctx, ast.Load) \
                and not node.attr.startswith("__"):
            info.read.setdefault(node.attr, node.lineno)


def collect(root: Path) -> list[ClassInfo]:
    classes: list[ClassInfo] = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        module = module_name(path, root)
        imports = module_imports(tree, module, path.name == "__init__.py")
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                info = ClassInfo(module, path.relative_to(root.parent), node, imports)
                describe(info)
                classes.append(info)
    by_name = {info.dotted: info for info in classes}
    for info in classes:
        for base in info.node.bases:
            name = dotted(base)
            if name is None:
                info.bases.append("?")
                continue
            head, _, rest = name.partition(".")
            if head in info.imports:
                name = info.imports[head] + (f".{rest}" if rest else "")
            elif f"{info.module}.{name}" in by_name:
                name = f"{info.module}.{name}"
            info.bases.append(name)
    return classes


def too_long(classes: list[ClassInfo]) -> Iterator[str]:
    for info in classes:
        where = info.path.as_posix()
        for folder, limit in SIZE_LIMITS.items():
            if not where.startswith(folder + "/"):
                continue
            first = min([info.node.lineno, *(d.lineno for d in info.node.decorator_list)])
            length = (info.node.end_lineno or info.node.lineno) - first + 1
            if length > limit:
                yield (f"{info.where}: {length} lines, over the {limit} allowed in {folder}/; "
                       "give it parts (see desktop_agent/store/store.py)")


def mixins(classes: list[ClassInfo]) -> Iterator[str]:
    by_name = {info.dotted: info for info in classes}
    inherited = {base for info in classes for base in info.bases if base in by_name}

    def provided(info: ClassInfo, seen: frozenset[str] = frozenset()) -> set[str] | None:
        """Names ``info`` and its project bases define; None when a base is from outside."""
        names = set(info.defined)
        for base in info.bases:
            if base in by_name and base not in seen:
                more = provided(by_name[base], seen | {info.dotted})
                if more is None:
                    return None
                names |= more
            elif base.rpartition(".")[2] not in NEUTRAL_BASES:
                return None
        return names

    for info in classes:
        if info.node.name.endswith("Mixin"):
            yield f"{info.where}: named as a mixin; make it a part the class holds"
            continue
        if info.dotted not in inherited:
            continue
        users = sorted(i.node.name for i in classes if info.dotted in i.bases)
        if info.declared_only:
            yield (f"{info.where}: declares {', '.join(sorted(info.declared_only))} for the "
                   f"class that mixes it in ({', '.join(users)}); give it what it needs instead")
            continue
        names = provided(info)
        if names is None:
            continue
        missing = sorted(set(info.read) - names)
        if missing:
            reads = ", ".join(f"self.{n} (line {info.read[n]})" for n in missing)
            yield (f"{info.where}: reads {reads}, which only the class that mixes it in "
                   f"({', '.join(users)}) provides; give it what it needs instead")


def main(argv: list[str]) -> int:
    root = Path(argv[1] if len(argv) > 1 else "desktop_agent").resolve()
    if not (root / "__init__.py").is_file():
        sys.stderr.write(f"class shapes: no package at {root}\n")
        return 2
    classes = collect(root)
    problems = [*too_long(classes), *mixins(classes)]
    if problems:
        sys.stdout.write("\n".join(problems) + "\n")
        return 1
    sys.stdout.write(f"class shapes: {len(classes)} classes in {root.name}, "
                     "none too long, no mixin\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
