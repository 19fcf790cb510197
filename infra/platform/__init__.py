"""What ``pulumi up`` of the platform builds: config, network, cluster, node groups, add-ons.

Needs the ``platform`` extra (``pip install 'eks-gpu-infra[platform]'``). Reads the
contract from :mod:`infra.workloads`; never imports :mod:`infra.tooling`.
"""
