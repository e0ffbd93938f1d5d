"""No two modules of the app import each other, directly or round a loop, not even through an
import inside a function: a loop that closes only at run time is one a newcomer cannot see, and
one that breaks the day someone moves that import to the top. Tasks import their service inside
the task; services queue tasks by name (refunds_admin/jobs) and never import them."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "refunds_admin"


def _module_name(path):
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules():
    return {_module_name(p): p for p in PACKAGE.rglob("*.py") if "migrations" not in p.parts}


def _imports(path, name, known):
    """The app's modules `path` imports, at any depth (function-local imports too)."""
    is_package = path.name == "__init__.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in known:
                    yield alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name if is_package else name.rsplit(".", 1)[0]
                for _ in range(node.level - 1):
                    base = base.rsplit(".", 1)[0]
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            for alias in node.names:
                # `from package import module` imports the module; otherwise the module itself.
                sub = f"{target}.{alias.name}"
                if sub in known:
                    yield sub
                elif target in known:
                    yield target


def _graph():
    modules = _modules()
    return {
        name: {m for m in _imports(path, name, modules) if m != name}
        for name, path in modules.items()
    }


def _cycles(graph):
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_module_of_the_app_imports_itself_round_a_loop():
    assert _cycles(_graph()) == []


def test_the_scan_sees_function_local_imports_and_would_find_a_loop():
    graph = _graph()
    # The posting task imports its service inside the function: the scan sees it.
    assert "refunds_admin.proposals.batches" in graph["refunds_admin.proposals.tasks"]
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
