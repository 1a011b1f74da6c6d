"""Schema of data/catalog-import.yaml: how the cloud catalog snapshot maps onto KB offers."""

from __future__ import annotations

from datetime import date
from typing import Annotated

from pydantic import Field, model_validator

from engine.models.kb import EntityId, Name, Strict, Text


class Override(Strict):
    """Corrects the GPU (or count) of matching rows, or skips them, with a reason."""

    cloud: Name
    instance_type: Name | None = Field(None, description="regular expression for the whole instance type")
    accelerator: Name | None = None
    gpu: EntityId | None = None
    gpu_count: Annotated[int, Field(ge=1)] | None = None
    skip: bool = False
    reason: Text

    @model_validator(mode="after")
    def _does_something(self) -> Override:
        if not self.skip and self.gpu is None and self.gpu_count is None:
            raise ValueError("an override sets `gpu`, `gpu_count` or `skip: true`")
        if self.instance_type is None and self.accelerator is None:
            raise ValueError("an override matches on `instance_type` or `accelerator`")
        return self


class ImportConfig(Strict):
    as_of: date
    as_of_note: Text
    names: dict[Name, EntityId] = Field(default_factory=dict)
    overrides: list[Override] = Field(default_factory=list)
    skip_clouds: dict[Name, Text] = Field(default_factory=dict)
    manual_offers: Name | None = None
