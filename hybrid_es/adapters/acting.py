"""The principal a framework component acts as when no principal is bound to it: given at run
time, never saved with the component.

A component that can be saved and loaded (a Haystack document store inside a pipeline's YAML)
must carry nobody's identity: whoever loads the pipeline would act as whoever saved it. So such
a component is built without a principal and takes the caller's at run time, in one of two
ways, which need no framework::

    with acting_as(principal):            # this request's caller, for everything inside
        pipeline.run({...})

    set_principal_resolver(current_user)  # once, at start-up: called at each operation

``acting_as`` holds the principal in a context variable, so each thread and each asyncio task
sees its own (``asyncio.to_thread`` and new tasks copy the caller's context). Inside an
``acting_as`` block the block's principal wins over the resolver; a component built with a
principal of its own (in code) always acts as that one. With neither, an operation is refused
with :class:`~hybrid_es.errors.PolicyViolationError` before anything is read or written.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from hybrid_es.adapters.provenance import require_principal
from hybrid_es.errors import PolicyViolationError
from hybrid_es.models import Principal

__all__ = ["acting_as", "current_principal", "set_principal_resolver"]

_CURRENT: ContextVar[Principal | None] = ContextVar("hybrid_es_principal", default=None)
_resolver: list[Callable[[], Principal | None]] = []


@contextmanager
def acting_as(principal: Principal) -> Iterator[Principal]:
    """Every unbound component used inside the block acts as ``principal`` (checked: a
    PolicyViolationError for anything that is not a Principal)."""
    token = _CURRENT.set(require_principal(principal, "acting_as(principal)"))
    try:
        yield principal
    finally:
        _CURRENT.reset(token)


def set_principal_resolver(resolver: Callable[[], Principal | None] | None) -> None:
    """Register the application's way to find the current caller (for example from its web
    framework's request context), or remove it (None). It is asked at each operation of an
    unbound component outside an :func:`acting_as` block; returning None refuses the operation."""
    _resolver.clear()
    if resolver is not None:
        _resolver.append(resolver)


def current_principal(where: str) -> Principal:
    """The principal of the enclosing :func:`acting_as` block, else the registered resolver's.
    Raises PolicyViolationError when there is none, naming ``where`` (the operation)."""
    principal = _CURRENT.get()
    if principal is None and _resolver:
        principal = _resolver[0]()
    if principal is None:
        raise PolicyViolationError(
            f"no principal: {where} runs for a caller, and none is bound to it or given at run "
            "time",
            hint="run it inside hybrid_es.adapters.acting.acting_as(principal), or register "
            "set_principal_resolver(...) once; a saved pipeline never holds a principal",
        )
    return require_principal(principal, where)
