"""Stand-in for vllm.distributed.parallel_state (tests only): the TP rank of this process."""

_TP_RANK = 0


def get_tensor_model_parallel_rank():
    return _TP_RANK


def set_tensor_model_parallel_rank(rank):  # test helper, not upstream
    global _TP_RANK
    _TP_RANK = rank
