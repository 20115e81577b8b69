"""Base class of every model that crosses a process boundary (editor, disk, MCP servers)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class WireModel(BaseModel):
    """Immutable pydantic model with camelCase names on the wire and snake_case in Python."""

    model_config = ConfigDict(frozen=True, alias_generator=to_camel, populate_by_name=True)

    def to_wire(self) -> dict[str, Any]:
        """The JSON-ready dict: camelCase keys, unset optional fields left out."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)
