# The type stubs (__init__.pyi) name the same parameters, in the same order, as the compiled
# bindings: editors and type checkers read the stubs, so a parameter the binding gained and the
# stub lacks is invisible to users (and a stale one fails only at run time).
import ast
import inspect
import pathlib

import tensortune as tt

STUB = pathlib.Path(tt.__file__).with_name("__init__.pyi")


def binding_parameters(obj):
    """Parameter names from pybind11's signature line, `name(a: int, *, b: str = 'x') -> T`."""
    doc = (getattr(obj, "__doc__", None) or "").lstrip()
    head = doc.splitlines()[0] if doc else ""
    if "(" not in head or head.startswith(obj.__name__ + "(*args, **kwargs)"):
        return None  # overloaded or not a pybind11 function
    inner, depth, parts, current = head[head.index("(") + 1:], 0, [], ""
    for ch in inner:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0:
                break
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    parts.append(current)
    names = [p.split(":")[0].split("=")[0].strip() for p in parts]
    # Variadic parameters compare by kind only (`**kwargs` here, `**named` in a stub).
    names = ["**" if n.startswith("**") else "*args" if n.startswith("*") and n != "*" else n
             for n in names]
    return [n for n in names if n and n not in ("self", "*")]


def stub_parameters(node):
    a = node.args
    names = [x.arg for x in a.posonlyargs + a.args]
    names += ["*args"] if a.vararg else []
    names += [x.arg for x in a.kwonlyargs]
    names += ["**"] if a.kwarg else []
    return [n for n in names if n != "self"]


def stub_functions():
    tree = ast.parse(STUB.read_text())
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            yield node.name, getattr(tt, node.name, None), node
        elif isinstance(node, ast.ClassDef):
            cls = getattr(tt, node.name, None)
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and not item.decorator_list:
                    yield f"{node.name}.{item.name}", getattr(cls, item.name, None), item


def test_every_stubbed_function_names_the_bindings_parameters():
    checked = 0
    for name, obj, node in stub_functions():
        assert obj is not None, f"{name} is in __init__.pyi but not in the module"
        if inspect.isfunction(obj) or node.name.startswith("__"):
            continue  # Python code (its own signature) and special methods
        want = binding_parameters(obj)
        if want is None:
            continue
        assert stub_parameters(node) == want, f"{name}: stub {stub_parameters(node)}, binding {want}"
        checked += 1
    assert checked >= 10  # the parser found the bindings' signatures
