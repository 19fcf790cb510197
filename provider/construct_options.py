"""Every resource option a YAML, TypeScript or Go stack gives a component reaches the component."""

from typing import Any

import pulumi
import pulumi.provider
from pulumi.provider import server
from pulumi.runtime import proto

_SDK_SERVICER = server.ProviderServicer
"""The SDK's own servicer, captured before :func:`serve` puts :class:`Servicer` in its place."""


class Servicer(_SDK_SERVICER):
    """The SDK's servicer, reading the three options its ``_construct_options`` leaves out."""

    @staticmethod
    def _construct_options(request: proto.ConstructRequest) -> pulumi.ResourceOptions:
        opts = _SDK_SERVICER._construct_options(request)
        timeouts = request.customTimeouts
        if timeouts.create or timeouts.update or timeouts.delete:
            opts.custom_timeouts = pulumi.CustomTimeouts(
                create=timeouts.create or None,
                update=timeouts.update or None,
                delete=timeouts.delete or None,
            )
        if request.additionalSecretOutputs:
            opts.additional_secret_outputs = list(request.additionalSecretOutputs)
        if request.deleteBeforeReplace:
            opts.delete_before_replace = True
        return opts


def serve(provider: Any, args: list[str]) -> None:
    """Serve ``provider`` as ``pulumi.provider.main`` does, with :class:`Servicer` answering Construct."""
    if not callable(getattr(_SDK_SERVICER, "_construct_options", None)):  # a private name (decision 0030)
        raise RuntimeError(
            "pulumi's ProviderServicer has no _construct_options: this pulumi release changed how Construct "
            "reads resource options; pin pulumi to a release the package's tests passed on (bin/check-newest-pulumi)"
        )
    server.ProviderServicer = Servicer
    pulumi.provider.main(provider, args)
