"""Stand-in for the parts of vllm.config connectors read (tests only)."""

from dataclasses import dataclass, field


@dataclass
class KVTransferConfig:
    kv_connector: str = None
    kv_role: str = None
    kv_connector_module_path: str = None
    kv_connector_extra_config: dict = field(default_factory=dict)
    engine_id: str = None


@dataclass
class ParallelConfig:
    data_parallel_rank: int = 0
    data_parallel_size: int = 1
    data_parallel_size_local: int = 1
    tensor_parallel_size: int = 1
    rank: int = 0


@dataclass
class CacheConfig:
    block_size: int = 16


@dataclass
class VllmConfig:
    kv_transfer_config: KVTransferConfig = None
    parallel_config: ParallelConfig = field(default_factory=ParallelConfig)
    cache_config: CacheConfig = field(default_factory=CacheConfig)
