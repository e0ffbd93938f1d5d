"""No two modules of the app import each other, directly or round a loop, at any depth: a loop
that only closes through an import inside a function still ties the two modules together (each
needs the other to work, and the order they load in decides whether it does).

The graph is read from the source with `ast` (so function-local imports count), over every
module of refunds_admin except migrations.
"""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "refunds_admin"
ROOT = PACKAGE.parent


def _module_name(path):
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules():
    return {
        _module_name(p): p for p in sorted(PACKAGE.rglob("*.py")) if "migrations" not in p.parts
    }


def _imports(name, path, modules):
    """The app's modules that `name` imports, at any depth of its source."""
    is_package = path.name == "__init__.py"
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                package = name if is_package else name.rpartition(".")[0]
                for _ in range(node.level - 1):
                    package = package.rpartition(".")[0]
                base = f"{package}.{node.module}" if node.module else package
            else:
                base = node.module or ""
            # `from a import b` imports the module a.b when there is one, else a name of a.
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                for alias in node.names
            ]
        else:
            continue
        for target in targets:
            if target in modules and target != name:
                yield target


def import_graph():
    modules = _modules()
    return {name: sorted(set(_imports(name, path, modules))) for name, path in modules.items()}


def cycles(graph):
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def test_it_finds_a_loop_closed_by_an_import_inside_a_function(tmp_path):
    # The check must be able to fail: an import inside a function is an edge, and a loop of
    # edges is found.
    source = tmp_path / "services.py"
    source.write_text("def kick():\n    from .tasks import run\n    from . import models\n")
    modules = {"app.services": source, "app.tasks": None, "app.models": None}
    assert sorted(_imports("app.services", source, modules)) == ["app.models", "app.tasks"]
    graph = {"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"]}
    assert cycles(graph) == [["a", "b", "c"]]
    assert "refunds_admin.ledger.posting" in import_graph()["refunds_admin.ledger.tasks"]


# No loop is left: services queue tasks by name (refunds_admin/jobs/runtime.py), and each task
# imports its service inside the task function, never the other way round.
def test_no_module_of_the_app_imports_itself_round_a_loop():
    assert cycles(import_graph()) == []
