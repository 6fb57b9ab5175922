"""Answering a repeated resource at its constructor: an unchanged node row costs a digest, not the SDK's work.

:class:`generator.preview.memo.Memo` answers a registration whose key it knows, but by then the SDK has run the
resource's constructor: ``ResourceOptions.merge``, the args object with its ~100 properties, the checks of every
argument and ``Resource.__init__``. For a cluster whose rows are mostly unchanged that is most of a run. The rendered
program builds its nodes from a data table (``NODES``: one row per node, the same constructor calls with different
rank data), so the same constructor call with the same arguments recurs run after run, and the constructor is where
the memo can answer it.

Once a resource type has been registered for real (the first of each type always is), :class:`Rows` wraps its class's
``__init__`` for the rest of the run. A later call with keyword arguments only and no options gets a *row key*: the
SHA-256 of the run's salt, the type, the class, the name and the memo's digest of the arguments exactly as the
program passed them (:meth:`Memo._walk`: an ``Output`` digests by its origin). When an earlier graph holds that key
(``row::TYPE::NAME`` in its keys) the constructor does not run: the object gets the attributes ``Resource.__init__``
gives a resource without options (copied from the second resource of the class, built for real), is added to the
root stack's children, and is answered as a memo hit (urn and id resolved, other outputs unread: a read repeats the
run registering the type for real). Any other call runs the SDK's constructor, and its row key is recorded unless
the construction logged something (a deprecated argument's warning is part of the graph; a hit would drop it).

The arguments fix everything the constructor does with them: the SDK's translation and checks are a pure function
of the arguments, the name and the SDK's version (in the salt), so a hit is the resource the constructor would have
registered. ``tests/test_rows.py`` compares runs answered at the constructor with full runs byte for byte.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

ROW_PREFIX = "row::"  # a graph's keys: "row::TYPE::NAME" -> row key, beside "TYPE::NAME" -> registration key


class Rows:
    """The constructor wrappers of one run (installed by :meth:`watch`, removed by :meth:`restore`)."""

    def __init__(self, memo: Any, log_mark: Callable[[], int] | None = None) -> None:
        self.memo = memo
        self.log_mark = log_mark or (lambda: 0)
        self.hits = 0
        # constructions so far and the last one's (resource, row key if recorded, answered), for row calls
        # (generator/preview/calls.py)
        self.made = 0
        self.last: tuple[Any, str | None, bool] = (None, None, False)
        self._originals: dict[type, Any] = {}
        self._types: dict[type, str] = {}
        # class -> (attributes Resource.__init__ gives a resource without options, its property names)
        self._templates: dict[type, tuple[dict[str, Any], tuple[str, ...]]] = {}
        self._root: Any = None  # the root stack resource, once read

    def watch(self, cls: type, ty: str) -> None:
        """Answer later constructions of ``cls`` (registered as ``ty``) from the memo."""
        if cls in self._originals or "__init__" not in cls.__dict__:
            return
        original = cls.__dict__["__init__"]
        rows = self

        def __init__(res: Any, resource_name: str, *args: Any, **kwargs: Any) -> None:
            rows.construct(cls, original, res, resource_name, args, kwargs)

        self._originals[cls] = original
        self._types[cls] = ty
        cls.__init__ = __init__  # type: ignore[misc]

    def restore(self) -> None:
        for cls, original in self._originals.items():
            cls.__init__ = original  # type: ignore[misc]
        self._originals.clear()

    def construct(
        self, cls: type, original: Any, res: Any, name: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> None:
        """One construction: answered from the memo when its row key is known, else the SDK's constructor."""
        ty = self._types[cls]
        self.made += 1
        self.last = (res, None, False)
        key = self._key(cls, ty, name, args, kwargs)
        memo = self.memo
        template = self._templates.get(cls)
        hit = memo.known.get(key) if key is not None else None
        if (
            hit is not None
            and template is not None
            and ty not in memo.skip_types
            and hit.type == ty
            and hit.name == name
        ):
            self._answer(res, ty, name, template, hit)
            memo.keys[ROW_PREFIX + ty + "::" + name] = key
            self.last = (res, key, True)
            return
        before = self.log_mark()
        original(res, name, *args, **kwargs)
        if key is None or self.log_mark() != before:
            return
        memo.keys[ROW_PREFIX + ty + "::" + name] = key
        self.last = (res, key, False)
        if template is None and not res.__dict__.get("_transformations"):
            self._templates[cls] = _template(res, memo.prop_names.get(ty))

    def _key(
        self, cls: type, ty: str, name: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> str | None:
        """The row key of a call with keyword arguments only and no options, or None."""
        memo = self.memo
        if (
            not memo.salt
            or args
            or type(name) is not str
            or kwargs.get("opts") is not None
            or "args" in kwargs
        ):
            return None
        try:
            digest = memo._digest(kwargs)
        except memo.undigestable:
            return None
        h = hashlib.sha256()
        for part in ("row", memo.salt, ty, f"{cls.__module__}.{cls.__qualname__}", name, digest):
            data = part.encode()
            h.update(len(data).to_bytes(8, "big") + data)
        return h.hexdigest()

    def _answer(
        self, res: Any, ty: str, name: str, template: tuple[dict[str, Any], tuple[str, ...]], hit: Any
    ) -> None:
        """What the SDK's constructor and a memo hit give ``res``, without the constructor."""
        base, props = template
        d = res.__dict__
        d.update(base)
        d["_name"] = name
        d["_aliases"] = []
        d["_childResources"] = set()
        d["_transformations"] = []
        root = self._root
        if root is None:
            from pulumi.runtime.settings import get_root_resource

            root = self._root = get_root_resource()  # the run's Stack, made before the program's first line
        if root is not None:
            root._childResources.add(res)
        self.memo._answer(res, ty, name, props, hit)
        self.memo.reused.append(hit)
        self.hits += 1


def _template(res: Any, props: tuple[str, ...] | None) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The attributes of ``res`` that are not outputs (what ``Resource.__init__`` set), and its property names."""
    names = props or ()
    skip = {"urn", "id", *names}
    return {k: v for k, v in res.__dict__.items() if k not in skip}, names


__all__ = ["ROW_PREFIX", "Rows"]
