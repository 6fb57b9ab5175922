"""The package layout is the pipeline: dependencies run one way, there is no import cycle, and rooms stay small.

Every ``import`` inside ``generator/`` (also those inside functions, which are cycles all the same) is read with
``ast``. Stages may import only earlier stages: errors, events, atomic, deferred, dists < spec, catalog < sizing < plan, platforms < present, estimate
< render < preview < live < api < cli < __main__. No stage imports the library API (:mod:`generator.api`) or a later stage.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "generator"
STAGES = {  # top-level part of generator -> its place in the pipeline
    "errors": 0, "events": 0, "atomic": 0, "deferred": 0, "dists": 0, "spec": 1, "catalog": 1, "sizing": 2, "plan": 3, "platforms": 3, "present": 4, "estimate": 4,
    "render": 5, "preview": 6, "live": 7, "api": 8, "cli": 9, "__main__": 10,
}
MAX_LINES = 600


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The generator modules ``name`` imports (absolute or relative, at any depth of the file)."""
    out: set[str] = set()
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")
                base = base if is_package else base[:-1]
                base = base[: len(base) - (node.level - 1)]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            targets = [module] + [f"{module}.{a.name}" for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name and target.startswith("generator."):
                out.add(target)
    return out


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {name: _imports(name, path, known) for name, path in modules.items()}


def _stage(module: str) -> str:
    """The stage of a module: its top-level part of generator, except a platform's own live operations
    (``generator.platforms.<name>.live``), which run at the live stage (they drive the engine and the cloud's APIs)
    though they live in their platform's folder."""
    parts = module.split(".")
    if len(parts) > 3 and parts[1] == "platforms" and parts[3] == "live":
        return "live"
    return parts[1] if len(parts) > 1 else ""


def _home(module: str) -> str:
    """The folder of generator a module lives in (``platforms`` for all of a platform's own modules)."""
    return module.split(".")[1] if "." in module else ""


def test_no_import_cycle_inside_generator() -> None:
    graph = _graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
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
                cycles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert not cycles, f"import cycles inside generator/: {cycles}"


def test_stages_depend_only_on_earlier_stages() -> None:
    wrong = []
    for module, imports in sorted(_graph().items()):
        if module == "generator" or _stage(module) not in STAGES:
            continue
        for target in sorted(imports):
            if _stage(target) in STAGES and STAGES[_stage(target)] > STAGES[_stage(module)]:
                wrong.append(f"{module} imports {target}")
    assert not wrong, "a stage imports a later stage or the API:\n" + "\n".join(wrong)


def test_every_module_belongs_to_a_stage() -> None:
    assert {_stage(m) for m in _modules() if m != "generator"} <= set(STAGES)


def test_modules_are_small_rooms_that_say_what_they_own() -> None:
    big = {m: n for m, p in _modules().items() if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not big, f"modules over {MAX_LINES} lines: {big}"
    silent = [m for m, p in _modules().items() if not ast.get_docstring(ast.parse(p.read_text()))]
    assert not silent, f"modules without a docstring saying what they own: {silent}"


def test_parts_have_one_name_across_planner_templates_program_and_lint() -> None:
    from generator.spec.rules import PARTS, RULES

    root = PACKAGE.parent
    planned_by = {"placement": "network"}  # plan/placement.py plans the network with the nodes' places in it
    planner_parts = ({planned_by.get(p.stem, p.stem) for p in (PACKAGE / "plan").glob("*.py")}  # the shared parts,
                     | {p.name for p in (PACKAGE / "platforms").iterdir() if p.is_dir()}) & set(PARTS)  # each own
    assert planner_parts == set(PARTS) - {"identity", "outputs"}  # identity and outputs are rendered, not planned
    from generator.platforms.registry import template_dirs

    partials = {p.name.split(".")[0] for d in (root / "templates", *template_dirs()) for p in d.glob("stack/parts/*.j2")}
    # checkpoint_policy (shared by both identities) and facts (the compute part's published cluster facts, in its own
    # file so compute edits merge easily) are pieces of a part, not parts
    # weights_policy (the base weights' read grant, shared by the node identities) and registry_policy (the ECS node
    # identity's private container registry grant) likewise
    bases = {name.removesuffix("_ecs").removesuffix("_lingjun").removesuffix("_dlc") for name in partials} - {
        "checkpoint_policy", "facts", "weights_policy", "registry_policy"}
    assert bases <= set(PARTS) and {"network", "identity", "checkpoints", "storage", "compute", "outputs"} <= bases
    assert {r.part for r in RULES.values()} <= set(PARTS) and all(r.part for r in RULES.values())
    program = (root / "stacks" / "pretrain-70b" / "__main__.py").read_text()
    sections = {line.rsplit(" ", 1)[-1] for line in program.splitlines() if line.startswith("# -----")}
    assert sections == {"network", "identity", "checkpoints", "storage", "compute", "outputs"}


# Outside generator/platforms/, a platform is reached through its declaration (base, registry) or its behaviour
# (registry.parts_for, contract), never by importing its own modules; the exceptions say why.
PLATFORM_DOORS = {"generator.platforms.base", "generator.platforms.registry", "generator.platforms.contract"}
PLATFORM_EXCEPTIONS = {  # module -> the platform module it may import, and why
}


def test_platforms_are_reached_through_their_registries() -> None:
    wrong = []
    for module, imports in sorted(_graph().items()):
        if _home(module) == "platforms":
            continue
        for target in sorted(imports):
            excepted = any(m == module and (t == target or t.startswith(f"{target}."))  # also ``from pkg import mod``
                           for m, t in PLATFORM_EXCEPTIONS)
            if _home(target) == "platforms" and target not in PLATFORM_DOORS and not excepted:
                wrong.append(f"{module} imports {target}")
    assert not wrong, "import a platform through generator.platforms.registry or .planning:\n" + "\n".join(wrong)


def _platform_names() -> set[str]:
    from generator.platforms.registry import PLATFORMS

    return set(PLATFORMS)


def _names_in(node: ast.expr, names: set[str]) -> set[str]:
    """The platform names a comparison operand spells out: a string, or strings in a tuple, list or set."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value} & names
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return set().union(*(_names_in(e, names) for e in node.elts)) if node.elts else set()
    return set()


def test_no_platform_name_is_compared_outside_the_platform_homes() -> None:
    """Code outside generator/platforms/ asks the platform (a capability or its declaration's data), never compares
    ``compute.platform`` with a name: a new platform then touches its own folder, not every branch."""
    names = _platform_names()
    wrong = []
    for module, path in sorted(_modules().items()):
        if _home(module) == "platforms":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Compare):
                found = set().union(*(_names_in(x, names) for x in (node.left, *node.comparators)))
                if found:
                    wrong.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} compares with {sorted(found)}")
    assert not wrong, ("ask platform_for(x).has(Capability.X) or the platform's declaration instead:\n"
                       + "\n".join(wrong))


def test_the_registry_and_the_declarations_import_nothing_of_the_planner() -> None:
    """One registry for declarations and behaviours: the declarations are data the plan parts ask, so importing the
    registry loads no planning module and no platform behaviour (``registry.parts_for`` imports a platform's
    behaviour on first use; the registry names ``contract.PlanParts`` for types only)."""
    import subprocess
    import sys

    code = ("import sys, generator.platforms.registry; print(' '.join(sorted(m for m in sys.modules "
            "if m.startswith('generator.'))))")
    loaded = set(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True,
                                cwd=PACKAGE.parent).stdout.split())
    assert "generator.platforms.ecs" in loaded
    declarations = {"generator.platforms", "generator.platforms.base", "generator.platforms.registry"} | {
        f"generator.platforms.{p.name}" for p in (PACKAGE / "platforms").iterdir() if (p / "__init__.py").is_file()}
    wrong = sorted(m for m in loaded if _stage(m) not in ("errors", "spec", "platforms")
                   or (_stage(m) == "platforms" and m not in declarations))
    assert not wrong, wrong
