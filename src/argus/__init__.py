"""Argus: a multi-tenant control plane for verl RL post-training on a shared Ray cluster."""

__version__ = "0.1.0"
