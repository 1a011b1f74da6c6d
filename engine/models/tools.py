"""The MCP tools' own inputs and outputs (api/mcp_server.py), for what no HTTP body already shapes:
the rule `explain_rule` is asked about, and the model catalog `list_models` answers with. `recommend`
and `compare` take and give the bodies of POST /recommend and POST /compare unchanged."""

from __future__ import annotations

from pydantic import BaseModel, Field

from engine.models.kb import Model
from engine.models.request import RequestModel


class RuleQuestion(RequestModel):
    """Input of `explain_rule`: which rule."""

    rule_id: str = Field(
        min_length=1,
        max_length=96,
        description="a rule id, as an answer's trace[].rule and rejected[].rule name it, "
        "e.g. keep-memory-headroom",
    )


class ModelQuery(RequestModel):
    """Input of `list_models`: every model, or those matching a text."""

    contains: str | None = Field(
        None,
        max_length=96,
        description="only the models whose id, name or one of whose other names contains this text, "
        "case aside (e.g. llama)",
    )


class ModelSummary(BaseModel):
    """One model of the catalog, as `workload.model` may name it."""

    id: str = Field(description="KB model id: what workload.model takes")
    name: str = Field(description="display name")
    params_b: float = Field(description="published total parameters, billions")
    aliases: list[str] = Field(
        description="other names workload.model also takes: Hugging Face repo ids, short names"
    )

    @classmethod
    def of(cls, model: Model) -> ModelSummary:
        return cls(id=model.id, name=model.name, params_b=model.params_b, aliases=list(model.aliases))


class ModelCatalog(BaseModel):
    """Output of `list_models` (an object, as MCP's structured content must be through 2025-11-25)."""

    models: list[ModelSummary] = Field(description="the models, in id order")
