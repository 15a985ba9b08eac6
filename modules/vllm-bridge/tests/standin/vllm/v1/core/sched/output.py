"""Stand-in for vllm/v1/core/sched/output.py (tests only)."""

from dataclasses import dataclass, field


@dataclass
class NewRequestData:
    req_id: str
    prompt_token_ids: list
    sampling_params: object
    block_ids: tuple  # one list per KV-cache group
    num_computed_tokens: int


@dataclass
class CachedRequestData:
    req_ids: list = field(default_factory=list)
    resumed_from_preemption: list = field(default_factory=list)
    new_token_ids: list = field(default_factory=list)
    new_block_ids: list = field(default_factory=list)  # per request: tuple of per-group lists, or None
    num_computed_tokens: list = field(default_factory=list)


@dataclass
class SchedulerOutput:
    scheduled_new_reqs: list = field(default_factory=list)
    scheduled_cached_reqs: CachedRequestData = field(default_factory=CachedRequestData)
    num_scheduled_tokens: dict = field(default_factory=dict)
    total_num_scheduled_tokens: int = 0
    finished_req_ids: set = field(default_factory=set)
    preempted_req_ids: set = None
    kv_connector_metadata: object = None
