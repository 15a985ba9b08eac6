"""Stand-in for vllm/v1/request.py (tests only): the fields connectors read."""

import enum


class RequestStatus(enum.IntEnum):
    WAITING = enum.auto()
    WAITING_FOR_REMOTE_KVS = enum.auto()
    RUNNING = enum.auto()
    PREEMPTED = enum.auto()
    FINISHED_STOPPED = enum.auto()
    FINISHED_LENGTH_CAPPED = enum.auto()
    FINISHED_ABORTED = enum.auto()
    FINISHED_IGNORED = enum.auto()
    FINISHED_ERROR = enum.auto()


class SamplingParams:
    def __init__(self, extra_args=None):
        self.extra_args = extra_args


class Request:
    def __init__(self, request_id, prompt_token_ids, kv_transfer_params=None, max_tokens=16):
        self.request_id = request_id
        self.prompt_token_ids = list(prompt_token_ids)
        self.num_prompt_tokens = len(self.prompt_token_ids)
        self.kv_transfer_params = kv_transfer_params
        # vLLM's Request takes its kv_transfer_params from here: the same dict
        self.sampling_params = SamplingParams(
            None if kv_transfer_params is None else {"kv_transfer_params": kv_transfer_params})
        self.status = RequestStatus.WAITING
        self.num_computed_tokens = 0
        self.max_tokens = max_tokens
