"""Tooling around both: the offline mock engine, manifests, the preview and the policy rules."""
