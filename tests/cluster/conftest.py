"""The cluster adapter's tests share one real Ray cluster (tests/ray_fixtures.py), stopped when they end."""

from tests.ray_fixtures import ray_cluster  # noqa: F401 - fixture
