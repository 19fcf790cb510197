"""What ``pulumi up`` of the platform builds: config, network, cluster, node groups, add-ons."""
