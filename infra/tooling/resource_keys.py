"""How the rules name a resource: by its URN where the engine gave one, else ``"<type> <name>"``.

Type and name are not unique: a stack-root Deployment and a GpuDeployment's child Deployment
may share both, and only the URN (which carries the parent's type) tells them apart. So the
pack and the offline preview hand the rules each name as a :class:`Named`, which knows its URN.
"""

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
