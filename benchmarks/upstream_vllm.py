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
    m.ForwardContext = ForwardContext


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

    def __init__(self, root, version):
        self.root = root
        self.version = version
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
    if version is None:
        commit = os.path.basename(root).rpartition("-")[2]
        version = f"0.0.0.dev0+g{commit}"
    finder = UpstreamFinder(root, version)
    sys.meta_path.insert(0, finder)
    return finder


MORIIO = "vllm.distributed.kv_transfer.kv_connector.v1.moriio.moriio_connector"
