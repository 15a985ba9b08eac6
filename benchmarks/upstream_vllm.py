"""Loads vLLM's own files of one upstream version at run time, under the project's stubs.

``load(root)`` makes ``import vllm...`` serve, for every module, the real file under ``root``
(``<repo>/../shared/upstream/vllm-<commit>``, never copied into this repository) when the
version holds one, and else a stub of this module: vLLM's logger, ``envs`` (parsed as upstream
parses its variables), the config classes the connector reads, the parallel-state getters, the
network helpers (``get_ip`` is ``VLLM_HOST_IP`` or a fixed address; ``make_zmq_socket`` returns a
socket that keeps what is sent on it, see ``SENT``), ``KVCacheBlocks`` (the kv-cache manager is not
among the files), the request's companions (``SamplingParams``, engine enums, stats) and empty
packages in between. MoRI itself (``mori.io``) is absent, as on a machine without it: the
connector logs "MoRIIO is not available" and its scheduler side runs. Python packages the files
import that Debian's python3 lacks (``msgspec``, ``regex``) are stubbed too; ``torch`` and
``numpy`` are Debian's (python3-torch).

A version's tree that lacks modules its connector imports gets them from ``FALLBACK_STUBS`` (only
where it has no file of that name: 3c201bf2's moriio_common, moriio_engine, moriio_layout,
kv_connector.utils, ssm_conv_transfer_utils and vLLM's kv_cache_interface), and vLLM's request,
output and factory files from an older tree (``BORROWED``).

Call ``load`` once per process, before anything imports ``vllm`` (a process that already imported
another ``vllm``, such as the bridge tests' stand-in, must use a subprocess).
"""

import dataclasses
import enum
import importlib.abc
import importlib.machinery
import importlib.util
import inspect
import logging
import os
import re
import sys
import types

#: Every frame sent on a stubbed ZMQ socket, in order: (path, bytes). Cleared by the caller.
SENT = []

#: The address the stubbed get_ip() resolves when VLLM_HOST_IP is not set.
DEFAULT_HOST_IP = "10.0.0.7"


# ---------------------------------------------------------------------- stubs

def _logger(m):
    def init_logger(name):
        return logging.getLogger(name)
    m.init_logger = init_logger


def _envs(m):
    # vllm/envs.py's parsing of the variables the connector reads (module __getattr__, as upstream)
    parsers = {
        "VLLM_MORIIO_CONNECTOR_READ_MODE": lambda: os.getenv("VLLM_MORIIO_CONNECTOR_READ_MODE", "False").lower()
        in ("true", "1"),
        "VLLM_MORIIO_QP_PER_TRANSFER": lambda: int(os.getenv("VLLM_MORIIO_QP_PER_TRANSFER", "1")),
        "VLLM_MORIIO_POST_BATCH_SIZE": lambda: int(os.getenv("VLLM_MORIIO_POST_BATCH_SIZE", "-1")),
        "VLLM_MORIIO_NUM_WORKERS": lambda: int(os.getenv("VLLM_MORIIO_NUM_WORKERS", "1")),
        "VLLM_HOST_IP": lambda: os.getenv("VLLM_HOST_IP", ""),
    }

    def __getattr__(name):
        if name in parsers:
            return parsers[name]()
        raise AttributeError(name)
    m.__getattr__ = __getattr__


@dataclasses.dataclass
class KVTransferConfig:
    kv_connector: str | None = None
    engine_id: str | None = None
    kv_role: str | None = None
    kv_connector_module_path: str | None = None
    kv_connector_extra_config: dict = dataclasses.field(default_factory=dict)
    kv_buffer_device: str = "cuda"
    kv_buffer_size: float = 1e9
    kv_rank: int | None = None
    kv_parallel_size: int = 1
    kv_ip: str = "127.0.0.1"
    kv_port: int = 14579
    kv_load_failure_policy: str = "recompute"

    @property
    def is_kv_transfer_instance(self):
        return self.kv_connector is not None and self.kv_role in ("kv_producer", "kv_consumer", "kv_both")

    @property
    def is_kv_producer(self):
        return self.kv_connector is not None and self.kv_role in ("kv_producer", "kv_both")

    @property
    def is_kv_consumer(self):
        return self.kv_connector is not None and self.kv_role in ("kv_consumer", "kv_both")

    def get_from_extra_config(self, key, default):
        return self.kv_connector_extra_config.get(key, default)


@dataclasses.dataclass
class ParallelConfig:
    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    data_parallel_size: int = 1
    data_parallel_size_local: int = 1
    data_parallel_rank: int = 0
    data_parallel_rank_local: int | None = None
    rank: int = 0
    decode_context_parallel_size: int = 1


@dataclasses.dataclass
class CacheConfig:
    block_size: int = 16


@dataclasses.dataclass
class SchedulerConfig:
    disable_hybrid_kv_cache_manager: bool = False
    async_scheduling: bool = False


class _CudagraphMode(enum.Enum):
    NONE = 0
    PIECEWISE = 1
    FULL = 2

    def has_full_cudagraphs(self):
        return self is _CudagraphMode.FULL


@dataclasses.dataclass
class CompilationConfig:
    cudagraph_mode: _CudagraphMode = _CudagraphMode.PIECEWISE


@dataclasses.dataclass
class ModelConfig:
    model: str = "stub-model"
    dtype: str = "bfloat16"


@dataclasses.dataclass
class VllmConfig:
    kv_transfer_config: KVTransferConfig | None = None
    parallel_config: ParallelConfig = dataclasses.field(default_factory=ParallelConfig)
    cache_config: CacheConfig = dataclasses.field(default_factory=CacheConfig)
    scheduler_config: SchedulerConfig = dataclasses.field(default_factory=SchedulerConfig)
    compilation_config: CompilationConfig = dataclasses.field(default_factory=CompilationConfig)
    model_config: ModelConfig = dataclasses.field(default_factory=ModelConfig)
    # what the 3c201bf2 scheduler reads for its decode-tail tolerance (no speculative decoding here)
    speculative_config: object = None
    num_lookahead_tokens: int = 0

    @property
    def num_speculative_tokens(self):
        return 0


def _config(m):
    for c in (KVTransferConfig, ParallelConfig, CacheConfig, SchedulerConfig, CompilationConfig, ModelConfig,
              VllmConfig):
        setattr(m, c.__name__, c)
    m.CUDAGraphMode = _CudagraphMode
    current = [None]
    m.get_current_vllm_config = lambda: current[0] or VllmConfig()
    m.set_current_vllm_config = lambda c: current.__setitem__(0, c)
    m.get_layers_from_vllm_config = lambda *a, **k: {}


def _config_kv_transfer(m):
    m.KVTransferConfig = KVTransferConfig


def _parallel_state(m):
    m.get_tensor_model_parallel_world_size = lambda: 1
    m.get_tensor_model_parallel_rank = lambda: 0
    group = types.SimpleNamespace(rank=0, rank_in_group=0, world_size=1, local_rank=0)
    m.get_tp_group = lambda: group
    m.get_world_group = lambda: group


class _Socket:
    """A ZMQ socket that keeps every frame sent on it in ``SENT`` (the scheduler's notify frames)."""

    def __init__(self, path):
        self.path = path

    def send(self, data, *args, **kwargs):
        SENT.append((self.path, bytes(data)))

    def send_multipart(self, frames, *args, **kwargs):
        for f in frames:
            self.send(f)

    def close(self, linger=None):
        pass


def _network_utils(m):
    def get_ip():
        return os.getenv("VLLM_HOST_IP") or DEFAULT_HOST_IP

    def make_zmq_path(scheme, host, port=None):
        # vLLM brackets IPv6 hosts
        if host and ":" in str(host) and not str(host).startswith("["):
            host = f"[{host}]"
        return f"{scheme}://{host}" if port is None else f"{scheme}://{host}:{port}"

    def make_zmq_socket(ctx=None, path=None, socket_type=None, bind=None, identity=None, linger=None, **kw):
        return _Socket(path)

    m.get_ip = get_ip
    m.make_zmq_path = make_zmq_path
    m.make_zmq_socket = make_zmq_socket
    m.get_open_port = lambda: 0


def _func_utils(m):
    def supports_kw(callable_, kw_name, *, requires_kw_only=False, allow_var_kwargs=True):
        try:
            params = inspect.signature(callable_).parameters
        except (TypeError, ValueError):
            return False
        if kw_name in params:
            p = params[kw_name]
            return not requires_kw_only or p.kind == inspect.Parameter.KEYWORD_ONLY
        return allow_var_kwargs and any(p.kind == inspect.Parameter.VAR_KEYWORD for p in params.values())
    m.supports_kw = supports_kw


def _utils(m):
    def length_from_prompt_token_ids_or_embeds(prompt_token_ids, prompt_embeds):
        if prompt_token_ids is not None:
            return len(prompt_token_ids)
        if prompt_embeds is not None:
            return len(prompt_embeds)
        raise ValueError("neither prompt_token_ids nor prompt_embeds")
    m.length_from_prompt_token_ids_or_embeds = length_from_prompt_token_ids_or_embeds
    m.__path__ = []  # a package: vllm.utils.network_utils, vllm.utils.func_utils


class SamplingParams:
    """The fields of vLLM's SamplingParams the request and the connector read."""

    def __init__(self, max_tokens=16, extra_args=None, skip_reading_prefix_cache=None, structured_outputs=None):
        self.max_tokens = max_tokens
        self.extra_args = extra_args
        self.skip_reading_prefix_cache = skip_reading_prefix_cache
        self.structured_outputs = structured_outputs

    def __repr__(self):
        return f"SamplingParams(max_tokens={self.max_tokens}, extra_args={self.extra_args})"


def _sampling_params(m):
    m.SamplingParams = SamplingParams


def _pooling_params(m):
    class PoolingParams:
        skip_reading_prefix_cache = None
    m.PoolingParams = PoolingParams


def _multimodal_inputs(m):
    class MultiModalFeatureSpec:
        pass
    m.MultiModalFeatureSpec = MultiModalFeatureSpec


def _v1_engine(m):
    class FinishReason(enum.IntEnum):
        STOP = 0
        LENGTH = 1
        ABORT = 2
        ERROR = 3
        REPETITION = 4

    class EngineCoreEventType(enum.IntEnum):
        QUEUED = 1
        SCHEDULED = 2
        PREEMPTED = 3

    class EngineCoreEvent:
        @classmethod
        def new_event(cls, event_type, timestamp=None):
            e = cls()
            e.type, e.timestamp = event_type, timestamp
            return e

    class EngineCoreRequest:
        pass

    m.FinishReason, m.EngineCoreEventType, m.EngineCoreEvent, m.EngineCoreRequest = (
        FinishReason, EngineCoreEventType, EngineCoreEvent, EngineCoreRequest)


def _metrics_stats(m):
    class PrefillStats:
        def set(self, **kw):
            self.__dict__.update(kw)
    m.PrefillStats = PrefillStats


def _structured_output_request(m):
    class StructuredOutputRequest:
        @staticmethod
        def from_sampling_params(sampling_params):
            return None
    m.StructuredOutputRequest = StructuredOutputRequest


def _v1_utils(m):
    class ConstantList(list):
        pass

    def _constant_list(x):
        return x  # a view of the list (upstream's is read-only; nothing here writes through it)
    m.ConstantList = _constant_list


def _cuda_graph(m):
    class CUDAGraphStat:
        pass
    m.CUDAGraphStat = CUDAGraphStat


def _attention_backend(m):
    class AttentionBackend:
        pass

    class AttentionMetadata:
        pass
    m.AttentionBackend, m.AttentionMetadata = AttentionBackend, AttentionMetadata


def _attention_selector(m):
    def get_attn_backend(*a, **k):
        raise RuntimeError("no attention backend in the upstream loader (worker side not loaded)")
    m.get_attn_backend = get_attn_backend


def _forward_context(m):
    class ForwardContext:
        pass

    def get_forward_context():
        raise RuntimeError("no forward context in the upstream loader (worker side not loaded)")
    m.ForwardContext = ForwardContext
    m.get_forward_context = get_forward_context


def _math_utils(m):
    m.cdiv = lambda a, b: -(a // -b)


class KVCacheBlock:
    def __init__(self, block_id):
        self.block_id = block_id

    def __repr__(self):
        return f"KVCacheBlock({self.block_id})"


class KVCacheBlocks:
    """vLLM's KVCacheBlocks: one sequence of blocks per KV-cache group; get_block_ids() gives the
    ids per group (a tuple of lists), as the kv-cache manager's does."""

    def __init__(self, blocks):
        self.blocks = tuple(blocks)

    @classmethod
    def of_ids(cls, *groups):
        return cls(tuple([KVCacheBlock(b) for b in g] for g in groups))

    def get_block_ids(self, allow_none=False):
        return tuple([b.block_id for b in g] for g in self.blocks)

    def get_unhashed_block_ids(self):
        return self.get_block_ids()[0]


def _kv_cache_manager(m):
    m.KVCacheBlocks, m.KVCacheBlock = KVCacheBlocks, KVCacheBlock


def _kv_connector_base(m):
    # vllm/distributed/kv_transfer/kv_connector/base.py: the union of connector base classes
    from vllm.distributed.kv_transfer.kv_connector.v1.base import KVConnectorBase_V1
    m.KVConnectorBase = KVConnectorBase_V1
    m.KVConnectorBaseType = KVConnectorBase_V1


def _kv_connector_v1(m):
    # vllm/distributed/kv_transfer/kv_connector/v1/__init__.py re-exports the base's names
    m.__path__ = [m.__dict__["_root_path"]]
    base = importlib.import_module("vllm.distributed.kv_transfer.kv_connector.v1.base")
    for name in ("KVConnectorBase_V1", "KVConnectorRole", "SupportsHMA", "supports_hma", "KVConnectorMetadata"):
        if hasattr(base, name):
            setattr(m, name, getattr(base, name))


class _Struct:
    """msgspec.Struct: keyword (or positional) fields, ``Struct`` options taken and ignored."""

    def __init_subclass__(cls, **options):
        super().__init_subclass__()

    def __init__(self, *args, **kwargs):
        names = [n for n in getattr(type(self), "__annotations__", {})]
        for n, v in zip(names, args):
            setattr(self, n, v)
        for n, v in kwargs.items():
            setattr(self, n, v)


def _msgspec(m):
    m.Struct = _Struct
    m.msgpack = types.SimpleNamespace(Encoder=object, Decoder=object)
    m.field = lambda default=None, default_factory=None, name=None: default


def _regex(m):
    for name in dir(re):
        if not name.startswith("__"):
            setattr(m, name, getattr(re, name))


# ------------------------------------------------- stubs of modules a version's tree may lack
#
# The 3c201bf2 tree holds the connector, the base and the routing test, not the helper modules
# the connector imports (../shared/upstream/vllm-3c201bf2/SOURCES.md names them). The stubs below
# stand in for them only where the version has no file of that name (FALLBACK_STUBS): what they
# decide is written beside each one, taken from how the 3c201bf2 connector uses the name and from
# public versions of those modules at nearby commits (moriio_common at 028a39c2 and 42fa4c09; the
# protocol notes in shared/design/moriio-protocol.md sections 1-2). The helpers the seed scheduler
# shares with 3c201bf2 (port arithmetic, request-id address parsing, ReqMeta and add_new_req) are
# seed_hook_mix.py's, one copy for both differentials.

class FullAttentionSpec:
    def __init__(self, block_size=16, dcp_sharded=False):
        self.block_size, self.dcp_sharded = block_size, dcp_sharded

    def __repr__(self):
        return f"FullAttentionSpec(block_size={self.block_size})"


class SlidingWindowSpec(FullAttentionSpec):
    """Not a full-attention spec (is_full_attention_spec is False for it, as upstream's)."""

    def __init__(self, block_size=16, sliding_window=64):
        super().__init__(block_size)
        self.sliding_window = sliding_window


class MambaSpec:
    """Two states (conv and SSM), as MoRIIO's hybrid READ requires; no speculative blocks."""

    def __init__(self, block_size=16, num_speculative_blocks=0):
        self.block_size = block_size
        self.shapes = ((1, 1), (1, 1))
        self.dtypes = ("bfloat16", "bfloat16")
        self.num_speculative_blocks = num_speculative_blocks

    def __eq__(self, other):
        return isinstance(other, MambaSpec) and (self.block_size, self.num_speculative_blocks) == (
            other.block_size, other.num_speculative_blocks)

    def __hash__(self):
        return hash((self.block_size, self.num_speculative_blocks))


@dataclasses.dataclass
class KVCacheGroupSpec:
    layer_names: list
    kv_cache_spec: object
    enable_kv_transfer: bool = True


class KVCacheConfig:
    """vLLM's KVCacheConfig as the 3c201bf2 connector reads it: the groups, the ones that take part
    in KV transfer (``enable_kv_transfer``) and ``select_transfer_block_ids`` (ValueError unless one
    list per group), as vLLM's kv_cache_interface.py has them at nearby commits."""

    def __init__(self, kv_cache_groups, num_blocks=4096):
        self.kv_cache_groups = list(kv_cache_groups)
        self.num_blocks = num_blocks
        self.kv_cache_tensors = []

    @property
    def transfer_group_ids(self):
        return tuple(i for i, g in enumerate(self.kv_cache_groups) if g.enable_kv_transfer)

    @property
    def transfer_groups(self):
        return tuple(self.kv_cache_groups[i] for i in self.transfer_group_ids)

    def select_transfer_block_ids(self, block_ids):
        if len(block_ids) != len(self.kv_cache_groups):
            raise ValueError(f"Expected {len(self.kv_cache_groups)} KV cache groups, got {len(block_ids)}.")
        return tuple(block_ids[i] for i in self.transfer_group_ids)

    @classmethod
    def full_attention(cls, block_size=16):
        return cls([KVCacheGroupSpec(["layer.0"], FullAttentionSpec(block_size))])


def _kv_cache_interface(m):
    m.FullAttentionSpec, m.SlidingWindowSpec, m.MambaSpec = FullAttentionSpec, SlidingWindowSpec, MambaSpec
    m.KVCacheGroupSpec, m.KVCacheConfig = KVCacheGroupSpec, KVCacheConfig
    m.is_full_attention_spec = lambda spec: type(spec) is FullAttentionSpec


def _worker_only(module, *names):
    """Names only the worker side uses: a class that refuses to be built (the loader plays the
    scheduler role; a worker-side call fails by its name instead of doing something made up)."""
    def make(name):
        def refuse(*a, **k):
            raise RuntimeError(f"{module}.{name} is worker-side: not stubbed by the upstream loader")
        return type(name, (), {"__init__": refuse})
    return {n: make(n) for n in names}


def _moriio_common(m):
    import contextlib
    import seed_hook_mix as shm
    from vllm.distributed.kv_transfer.kv_connector.v1.base import KVConnectorMetadata
    from vllm.utils import network_utils
    from vllm.distributed import parallel_state
    # the helpers the seed's and 3c201bf2's schedulers share: one copy (seed_hook_mix.py)
    for name in ("ROLE", "MoRIIOMode", "MoRIIOConstants", "ReqMeta", "fold_local_rank", "pod_index",
                 "get_port_offset", "get_peer_zmq_from_request_id", "parse_moriio_zmq_address"):
        setattr(m, name, getattr(shm, name))
    m.ReqId = m.TransferId = m.EngineId = str
    # one role per process, as upstream's RoleManager (the scheduler sets it at construction)
    role = [shm.ROLE.NOTINIT]
    m.set_role = lambda r: role.__setitem__(0, r)
    m.get_role = lambda: role[0]

    def get_moriio_mode(kv_transfer_config):
        # Newer than 239b5ff30 the mode is the extra config's read_mode, the environment variable
        # deprecated and ignored (028a39c2 and 42fa4c09; 3c201bf2's own error message says "set
        # kv_connector_extra_config.read_mode=true"): str(value).lower().strip() in ("true", "1").
        return shm.get_moriio_mode(kv_transfer_config)
    m.get_moriio_mode = get_moriio_mode

    def resolve_host_ip(extra_config):
        # the extra config's host_ip, else vLLM's get_ip() (028a39c2 and 42fa4c09)
        return extra_config.get("host_ip") or network_utils.get_ip()
    m.resolve_host_ip = resolve_host_ip

    class MoRIIOError(Exception):
        pass

    class HandshakeError(MoRIIOError):
        pass

    class TransferError(MoRIIOError):
        pass
    m.MoRIIOError, m.HandshakeError, m.TransferError = MoRIIOError, HandshakeError, TransferError

    @dataclasses.dataclass
    class MoRIIOTransferAck:
        # Assumed: a bare transfer id (an older peer's ACK) counts as from a consumer of TP 1, so
        # get_moriio_expected_ack_count gives 1 for it. Worker side only; not compared here.
        transfer_id: str
        consumer_tp_size: int = 1
    m.MoRIIOTransferAck = MoRIIOTransferAck

    class MoRIIOConnectorMetadata(KVConnectorMetadata):
        """The metadata the scheduler hands the worker; add_new_req as the newest common resolves
        a request's peer (the request-id address first, the explicit params as fallback; every
        ReqMeta field from the params: moriio-protocol.md 2.3)."""

        def __init__(self):
            self.reqs_to_recv, self.reqs_to_save, self.reqs_to_send = {}, {}, {}
            self.transfer_id_to_request_id = {}

        add_new_req = shm.MoRIIOConnectorMetadata.add_new_req
    m.MoRIIOConnectorMetadata = MoRIIOConnectorMetadata

    # MoRIIOConfig.from_vllm_config reads these module globals when called (the routing test
    # replaces them with monkeypatch.setattr, so they are looked up at call time, not bound here)
    m.get_tensor_model_parallel_rank = parallel_state.get_tensor_model_parallel_rank
    m.get_tensor_model_parallel_world_size = parallel_state.get_tensor_model_parallel_world_size
    m.get_open_port = network_utils.get_open_port

    @dataclasses.dataclass
    class MoRIIOConfig:
        local_ip: str
        local_kv_port: int
        proxy_ip: str
        local_ping_port: int
        proxy_ping_port: int
        http_port: int
        handshake_port: int
        notify_port: int
        tp_rank: int
        dp_rank: int
        dp_size: int
        tp_size: int
        transfer_timeout: float
        defer_timeout: float
        read_mode: bool = False
        backend: str = "rdma"

        @classmethod
        def from_vllm_config(cls, vllm_config):
            # As 42fa4c09 builds it, with what 3c201bf2 changed and its routing test pins:
            # local_kv_port is 0 for backend "rdma" (mori binds and reserves its own port) and a
            # free port for "xgmi"; dp_rank is the pod-local rank (fold_local_rank of the global
            # rank by data_parallel_size_local) and the notify port is offset by it; proxy_ip and
            # proxy_ping_port are optional ("" and 0); http_port is required (KeyError).
            g = m.__dict__
            ktc = vllm_config.kv_transfer_config
            extra = ktc.kv_connector_extra_config
            pc = vllm_config.parallel_config
            tp_rank = g["get_tensor_model_parallel_rank"]()
            dp_local = g["fold_local_rank"](pc.data_parallel_rank, pc.data_parallel_size_local)
            backend = str(extra.get("backend", "rdma")).lower()
            if backend not in ("rdma", "xgmi"):
                raise ValueError(f"Invalid MoRIIO backend {backend!r} in kv_connector_extra_config; "
                                 "must be one of 'rdma' or 'xgmi'.")
            return cls(
                local_ip=g["resolve_host_ip"](extra),
                local_kv_port=0 if backend == "rdma" else g["get_open_port"](),
                proxy_ip=extra.get("proxy_ip", ""),
                local_ping_port=g["get_open_port"](),
                proxy_ping_port=int(extra.get("proxy_ping_port", 0)),
                http_port=int(extra["http_port"]),
                handshake_port=int(extra["handshake_port"]),
                notify_port=int(extra["notify_port"]) + g["get_port_offset"](dp_local, tp_rank),
                tp_rank=tp_rank, dp_rank=dp_local, dp_size=pc.data_parallel_size,
                tp_size=g["get_tensor_model_parallel_world_size"](),
                transfer_timeout=float(extra.get("transfer_timeout", shm.MoRIIOConstants.DEFAULT_TRANSFER_TIMEOUT)),
                defer_timeout=float(extra.get("defer_timeout", shm.MoRIIOConstants.DEFAULT_DEFER_TIMEOUT)),
                read_mode=g["get_moriio_mode"](ktc) == shm.MoRIIOMode.READ,
                backend=backend)
    m.MoRIIOConfig = MoRIIOConfig

    @contextlib.contextmanager
    def zmq_ctx(socket_type, addr):
        raise RuntimeError("zmq_ctx is worker-side (handshakes): not stubbed by the upstream loader")
        yield  # noqa: unreachable - a generator for contextmanager
    m.zmq_ctx = zmq_ctx
    for k, v in _worker_only("moriio_common", "MoRIIOAgentMetadata", "ReqMetaTransfer", "TransferBatchState",
                             "WriteTask").items():
        setattr(m, k, v)


def _moriio_engine(m):
    for k, v in _worker_only("moriio_engine", "MoRIIOWrapper", "MoRIIOWriter").items():
        setattr(m, k, v)


def _moriio_layout(m):
    for k, v in _worker_only("moriio_layout", "LayerTransferGeometry", "MambaOffsetTemplate").items():
        setattr(m, k, v)

    def worker_only(name):
        def f(*a, **k):
            raise RuntimeError(f"moriio_layout.{name} is worker-side: not stubbed by the upstream loader")
        return f
    for name in ("apply_mamba_offset_template", "build_layer_to_spec", "build_mamba_offset_template",
                 "compute_block_transfer_offsets", "compute_mamba_conv_split_count", "get_layer_transfer_geometry",
                 "is_mla_cache_layer", "iter_layer_registration_regions", "kda_conv_ssm"):
        setattr(m, name, worker_only(name))


def _kv_connector_utils(m):
    m.BlockIds = list[list[int]]  # one block-id list per KV-cache group

    def clip_ssm_state_blocks(block_ids, num_scratch_blocks):
        # Assumed: a mamba group's blocks are the running state followed by its speculative
        # scratch slots, and clipping drops the scratch (3c201bf2: "Scratch slots were removed by
        # split_block_groups"). The scenarios here run no speculative decoding (0 scratch slots):
        # then it is the list as it is, whichever way the real helper clips.
        if num_scratch_blocks <= 0:
            return list(block_ids)
        return list(block_ids[:-num_scratch_blocks])
    m.clip_ssm_state_blocks = clip_ssm_state_blocks


def _ssm_conv_transfer_utils(m):
    for k, v in _worker_only("ssm_conv_transfer_utils", "MambaConvSplitInfo").items():
        setattr(m, k, v)

    def derive_mamba_conv_split(*a, **k):
        raise RuntimeError("derive_mamba_conv_split is worker-side: not stubbed by the upstream loader")
    m.derive_mamba_conv_split = derive_mamba_conv_split


#: Stubs used only where the version's tree has no file of that name.
_KVC = "vllm.distributed.kv_transfer.kv_connector"
FALLBACK_STUBS = {
    _KVC + ".v1.moriio.moriio_common": _moriio_common,
    _KVC + ".v1.moriio.moriio_engine": _moriio_engine,
    _KVC + ".v1.moriio.moriio_layout": _moriio_layout,
    _KVC + ".utils": _kv_connector_utils,
    _KVC + ".v1.ssm_conv_transfer_utils": _ssm_conv_transfer_utils,
    "vllm.v1.kv_cache_interface": _kv_cache_interface,
}

#: Files a version's tree lacks that the loader serves from another version's tree: vLLM's own
#: request, scheduler-output and connector-output types and the connector factory. The 3c201bf2
#: tree holds the connector and its base only; these files of 239b5ff30 give the connector the
#: types it reads (request_id, prompt tokens, kv_transfer_params, status; scheduled requests and
#: their new block ids; finished_sending / finished_recving), fields both versions have.
BORROWED = {
    "3c201bf2": ("vllm-239b5ff30", ("vllm.v1.request", "vllm.v1.core.sched.output", "vllm.v1.outputs",
                                    _KVC + ".factory")),
}


STUBS = {
    "vllm.logger": _logger,
    "vllm.envs": _envs,
    "vllm.config": _config,
    "vllm.config.kv_transfer": _config_kv_transfer,
    "vllm.distributed.parallel_state": _parallel_state,
    "vllm.utils": _utils,
    "vllm.utils.network_utils": _network_utils,
    "vllm.utils.func_utils": _func_utils,
    "vllm.sampling_params": _sampling_params,
    "vllm.pooling_params": _pooling_params,
    "vllm.multimodal.inputs": _multimodal_inputs,
    "vllm.v1.engine": _v1_engine,
    "vllm.v1.metrics.stats": _metrics_stats,
    "vllm.v1.structured_output.request": _structured_output_request,
    "vllm.v1.utils": _v1_utils,
    "vllm.compilation.cuda_graph": _cuda_graph,
    "vllm.v1.attention.backend": _attention_backend,
    "vllm.v1.attention.selector": _attention_selector,
    "vllm.forward_context": _forward_context,
    "vllm.v1.core.kv_cache_manager": _kv_cache_manager,
    "vllm.distributed.kv_transfer.kv_connector.base": _kv_connector_base,
    "vllm.distributed.kv_transfer.kv_connector.v1": _kv_connector_v1,
    "vllm.utils.math_utils": _math_utils,
}

#: Third-party modules stubbed only when this python3 lacks them.
OPTIONAL_STUBS = {"msgspec": _msgspec, "regex": _regex}


# ---------------------------------------------------------------------- the finder

class _StubLoader(importlib.abc.Loader):
    def __init__(self, build, root_path=None):
        self.build = build
        self.root_path = root_path

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        module.__dict__["_root_path"] = self.root_path
        self.build(module)
        module.__dict__.pop("_root_path", None)


class UpstreamFinder(importlib.abc.MetaPathFinder):
    """Serves ``vllm.*`` (and the optional stubs): a real file of the version when it has one,
    else a stub, else an empty package (so that ``vllm.v1.core`` exists around the real files)."""

    def __init__(self, root, version, borrowed=None):
        self.root = root
        self.version = version
        self.borrowed = borrowed or {}  # module name -> the other tree that serves it
        self.real = []  # modules served from the upstream files
        self.stubbed = []

    def find_spec(self, name, path=None, target=None):
        if name in OPTIONAL_STUBS:
            if any(f.find_spec(name, path) for f in sys.meta_path if f is not self and hasattr(f, "find_spec")
                   and not isinstance(f, UpstreamFinder)):
                return None
            self.stubbed.append(name)
            return importlib.util.spec_from_loader(name, _StubLoader(OPTIONAL_STUBS[name]))
        if name != "vllm" and not name.startswith("vllm."):
            return None
        rel = name.split(".")
        base = os.path.join(self.root, *rel)
        if name in STUBS:
            self.stubbed.append(name)
            is_pkg = os.path.isdir(base) or name in ("vllm.utils", "vllm.config", "vllm.distributed.kv_transfer.kv_connector.v1")
            spec = importlib.util.spec_from_loader(name, _StubLoader(STUBS[name], base), is_package=is_pkg)
            if is_pkg:
                spec.submodule_search_locations = [base]
            return spec
        if os.path.isfile(base + ".py"):
            self.real.append(name)
            return importlib.util.spec_from_file_location(name, base + ".py")
        init = os.path.join(base, "__init__.py")
        if os.path.isfile(init):
            self.real.append(name)
            return importlib.util.spec_from_file_location(name, init, submodule_search_locations=[base])
        if name in self.borrowed:
            other = os.path.join(self.borrowed[name], *rel) + ".py"
            if os.path.isfile(other):
                self.real.append(name + " (from " + os.path.basename(self.borrowed[name]) + ")")
                return importlib.util.spec_from_file_location(name, other)
        if name in FALLBACK_STUBS:
            self.stubbed.append(name)
            return importlib.util.spec_from_loader(name, _StubLoader(FALLBACK_STUBS[name], base))
        # a package the version's files sit in, or one they import that this loader has no stub
        # for: an empty namespace (an import of a missing name then fails by its name)
        spec = importlib.machinery.ModuleSpec(name, _StubLoader(lambda m: self._package(m, name)), is_package=True)
        spec.submodule_search_locations = [base]
        return spec

    def _package(self, m, name):
        if name == "vllm":
            m.__version__ = self.version


def load(root, version=None):
    """Installs the finder for the upstream tree ``root`` (a ``vllm-<commit>`` directory) and
    returns it. ``version`` is what ``vllm.__version__`` says (default: a dev version whose
    local part names the directory's commit, ``0.0.0.dev0+g<commit>``, as a source install of
    that commit would)."""
    root = os.path.abspath(root)
    if not os.path.isdir(os.path.join(root, "vllm")):
        raise FileNotFoundError(f"no vllm/ under {root}")
    if any(n == "vllm" or n.startswith("vllm.") for n in sys.modules):
        raise RuntimeError("another vllm is imported in this process already: load the upstream files in a new process")
    commit = os.path.basename(root).rpartition("-")[2]
    if version is None:
        version = f"0.0.0.dev0+g{commit}"
    borrowed = {}
    if commit in BORROWED:
        other, names = BORROWED[commit]
        other_root = os.path.join(os.path.dirname(root), other)
        if not os.path.isdir(os.path.join(other_root, "vllm")):
            raise FileNotFoundError(f"{os.path.basename(root)} borrows vLLM's request and output types from "
                                    f"{other}, which is not beside it ({other_root})")
        borrowed = {n: other_root for n in names}
    here = os.path.dirname(os.path.abspath(__file__))
    if here not in sys.path:
        sys.path.insert(0, here)  # seed_hook_mix.py, the helpers the stubs share with the seed differential
    finder = UpstreamFinder(root, version, borrowed)
    sys.meta_path.insert(0, finder)
    return finder


MORIIO = "vllm.distributed.kv_transfer.kv_connector.v1.moriio.moriio_connector"
