"""The replay package's public names are the curated ones (its purity: tests/test_package.py)."""

from __future__ import annotations

import thoughtline.replay


def test_every_exported_name_exists() -> None:
    for name in thoughtline.replay.__all__:
        assert hasattr(thoughtline.replay, name), name
    assert sorted(thoughtline.replay.__all__) == sorted(set(thoughtline.replay.__all__))
