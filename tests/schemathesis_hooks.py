"""Schemathesis hooks for this API, used by tests/test_schemathesis.py and by the schemathesis CLI:

    SCHEMATHESIS_HOOKS=tests.schemathesis_hooks schemathesis run URL/openapi.json --checks all ...

Everything a request must satisfy that JSON Schema can state, the OpenAPI document states (types,
ranges, `required`, `not`, `anyOf`, and for `hf_config` the keys each kind of model needs, with
`if`/`then`: engine/models/hf_config_schema.py), so a client generating requests from the document
needs no hook for it (tests/test_schemathesis_hookless.py runs without these). What is left relates
two values of one request, which no JSON Schema keyword can do (draft 2020-12 compares a value with
constants only: `maximum`, `multipleOf`, `const`); each is a 422 naming the field (tests/test_api.py
asks each) and stated in the field's description:

- `workload.active_params_b` <= the total: the request's `params_b`, its hf_config's count, or its KB
  model's (a MoE token cannot use more parameters than the model has);
- `params_b` beside a KB MoE model is at least the model's active parameters, which the engine uses;
- `architecture.n_heads` is a multiple of `n_kv_heads`, and an hf_config's `num_attention_heads` of
  `num_key_value_heads` (grouped-query attention shares each key/value head among n_heads / n_kv_heads
  query heads; Ainslie et al. 2023, arXiv 2305.13245, Sec. 2);
- without `head_dim`, `hidden_size` is a multiple of the heads (head_dim = hidden_size / heads);
- the parameters an architecture's given sizes imply at the least are at most twice the model's count
  (engine/planning/architecture.py, MAX_PARAMS_RATIO);
- an hf_config's `num_experts_per_tok` is at most its experts, and the model it describes has at most
  100T parameters (the most a request may size);
- `constraints.gpu_count` <= `max_gpus`.

A body that breaks one is valid by the document, so the positive_data_acceptance check (ST202) would
count its 422 as a failure. Each positive case is therefore brought within these rules before it is
sent, changing one number (or, for a size too large for any allowed count, leaving the architecture
out or standing a small config in): the generator is told the rules rather than the check being
dropped. Negative cases are left as generated. `POST /compare` takes the same request under `request`,
brought within the same rules.
"""

from __future__ import annotations

from typing import Any

import schemathesis

from tests.relational_rules import body_within_rules, within_relational_rules

__all__ = ["map_case", "within_relational_rules"]


@schemathesis.hook
def map_case(context: Any, case: Any) -> Any:
    if case.meta is None or case.meta.generation.mode.is_positive:
        case.body = body_within_rules(case.operation.path, case.body)
    return case
