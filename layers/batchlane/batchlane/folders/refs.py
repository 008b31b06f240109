"""The events the folder-job functions take."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class FolderRef(BaseModel):
    model_config = ConfigDict(extra="ignore")
    jobId: str = Field(pattern=r"^fj-[0-9a-f]{24}$")


class FolderEnd(FolderRef):
    failed: bool = False
    error: dict[str, Any] | None = None
