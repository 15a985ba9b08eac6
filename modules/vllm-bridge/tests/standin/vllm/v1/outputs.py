"""Stand-in for vllm/v1/outputs.py (tests only)."""

from dataclasses import dataclass, field


@dataclass
class KVConnectorOutput:
    finished_sending: set = None
    finished_recving: set = None
    kv_connector_stats: object = None
    kv_cache_events: object = None
    kv_connector_worker_meta: object = None
    invalid_block_ids: set = field(default_factory=set)
    expected_finished_count: int = 0
