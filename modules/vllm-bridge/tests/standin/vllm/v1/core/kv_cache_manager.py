"""Stand-in for vllm/v1/core/kv_cache_manager.py (tests only)."""


class KVCacheBlock:
    """One block of the pool: its id (upstream's holds more: a reference count, a hash, links)."""

    __slots__ = ("block_id",)

    def __init__(self, block_id):
        self.block_id = block_id


class KVCacheBlocks:
    """Blocks per KV-cache group, as upstream: ``blocks`` a tuple of lists of block objects (upstream's
    are the manager's own per-request lists), ``get_block_ids`` a tuple of fresh int lists built from
    each block's ``block_id`` (what it costs upstream: one Python-level pass per block). Built here
    from int lists, or from lists of block objects, taken as they are (upstream's: the manager's)."""

    def __init__(self, groups):
        self.blocks = tuple(g if type(g) is list and g and all(type(b) is KVCacheBlock for b in g)
                            else [b if type(b) is KVCacheBlock else KVCacheBlock(b) for b in g] for g in groups)

    def get_block_ids(self, allow_none=False):
        return tuple([b.block_id for b in g] for g in self.blocks)
