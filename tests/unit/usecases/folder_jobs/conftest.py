"""Folder jobs driven on the fakes: the folder buckets of a test and the services that see them as the granted folder
bucket ``folders`` (folder_fakes.on_folders), for every module here."""

from __future__ import annotations

import pytest
from folder_fakes import MemoryBuckets, on_folders

from batchlane.ports import Services


@pytest.fixture
def buckets() -> MemoryBuckets:
    return MemoryBuckets()


@pytest.fixture
def svc(svc_on_fakes: Services, buckets: MemoryBuckets) -> Services:
    return on_folders(svc_on_fakes, buckets)
