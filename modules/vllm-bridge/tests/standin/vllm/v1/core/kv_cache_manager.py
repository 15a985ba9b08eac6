"""Stand-in for vllm/v1/core/kv_cache_manager.py (tests only)."""


class KVCacheBlocks:
    """Blocks per KV-cache group; ``get_block_ids`` returns a tuple of int lists, as upstream."""

    def __init__(self, groups):
        self._groups = tuple(list(g) for g in groups)

    def get_block_ids(self, allow_none=False):
        return tuple(list(g) for g in self._groups)
