"""How the rules name a resource: by its URN where the engine gave one, else ``"<type> <name>"``."""

from __future__ import annotations


class Named(str):
    """A resource's name (shown as the name) that also carries the resource's URN."""

    urn: str

    def __new__(cls, name: str, urn: str) -> Named:
        named = super().__new__(cls, name)
        named.urn = urn
        return named


def resource_key(resource_type: str, name: str) -> str:
    """The resource's URN if ``name`` is :class:`Named`, else ``"<type> <name>"`` (tests, plain triples)."""
    return getattr(name, "urn", "") or f"{resource_type} {name}"
