"""The README's vLLM configuration, loaded as an operator's engine loads it, at an upstream version.

Run as a program (a process of its own: it imports the upstream ``vllm``, not the tests' stand-in)::

    python3 readme_config_upstream.py UPSTREAM_DIR OUT_DIR README...

For every ``--kv-transfer-config '...'`` of the READMEs that names the recorder
(``kv_connector_module_path`` ``kvledger_vllm``), it builds the scheduler-role connector through
the version's own ``KVConnectorFactory.create_connector`` over its real ``MoRIIOConnector`` (the
loader of benchmarks/upstream_vllm.py), with ``record_to`` moved under OUT_DIR and the hybrid KV
cache manager as vLLM sets it for a configured connector (off unless the command line enables
it). Then one request goes through it as vLLM's scheduler calls the hooks (``on_new_request``,
``get_num_new_matched_tokens``, ``update_state_after_alloc``, ``build_connector_meta``, the finish
through ``request_finished_all_groups`` when the connector is ``SupportsHMA`` and
``request_finished`` otherwise, as ``Scheduler._connector_finished`` does), and the same request
through a bare ``MoRIIOConnector`` built by the same factory. Prints one JSON object per
configuration: the class the factory built, the answers of both, the notify frames, and the error
if a hook raised.
"""

import importlib
import json
import os
import re
import shlex
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", "..", ".."))


def readme_configs(paths):
    """(readme, line number, the JSON, the rest of the command line) of every recorder configuration."""
    out = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if "--kv-transfer-config" not in line:
                    continue
                try:
                    words = shlex.split(line.strip())
                except ValueError:
                    continue
                for i, w in enumerate(words[:-1]):
                    if w == "--kv-transfer-config":
                        try:
                            cfg = json.loads(words[i + 1])
                        except ValueError:
                            continue
                        if cfg.get("kv_connector_module_path") == "kvledger_vllm":
                            out.append((os.path.relpath(path, REPO), n, cfg, words))
    return out


def drive(connector, up, role, rid, params, groups=1):
    """One request through the scheduler hooks, in vLLM's order, with ``groups`` KV-cache groups'
    block ids in every hook; returns the answers."""
    from vllm.distributed.kv_transfer.kv_connector.v1.base import SupportsHMA
    from vllm.sampling_params import SamplingParams
    from vllm.v1.core.sched.output import CachedRequestData, NewRequestData, SchedulerOutput
    from vllm.v1.outputs import KVConnectorOutput
    from vllm.v1.request import Request, RequestStatus
    producer = role == "kv_producer"
    req = Request(rid, list(range(40)), SamplingParams(max_tokens=1 if producer else 4,
                                                       extra_args={"kv_transfer_params": dict(params)}), None,
                  arrival_time=0.0)
    answers = {"hma": isinstance(connector, SupportsHMA)}
    connector.on_new_request(req)
    answers["matched"] = list(connector.get_num_new_matched_tokens(req, 0))
    blocks = up.KVCacheBlocks.of_ids(*([1 + 3 * g, 2 + 3 * g, 3 + 3 * g] for g in range(groups)))
    connector.update_state_after_alloc(req, blocks, answers["matched"][0])
    new = [] if answers["matched"][1] else [NewRequestData.from_request(req, blocks.get_block_ids())]
    meta = connector.build_connector_meta(SchedulerOutput(
        scheduled_new_reqs=new, scheduled_cached_reqs=CachedRequestData.make_empty(), num_scheduled_tokens={},
        total_num_scheduled_tokens=0, scheduled_spec_decode_tokens={}, scheduled_encoder_inputs={},
        num_common_prefix_blocks=[0], finished_req_ids=set(), free_encoder_mm_hashes=[]))
    answers["reqs_to_save"] = sorted(getattr(meta, "reqs_to_save", {}) or {})
    req.status = RequestStatus.FINISHED_LENGTH_CAPPED
    block_ids = blocks.get_block_ids()
    if isinstance(connector, SupportsHMA):
        answers["finish_entry"] = "request_finished_all_groups"
        delay, kv = connector.request_finished_all_groups(req, block_ids)
    else:
        answers["finish_entry"] = "request_finished"
        delay, kv = connector.request_finished(req, block_ids[0])
    answers["finished"] = [delay, kv]
    connector.update_connector_output(KVConnectorOutput(finished_sending={rid} if delay else None))
    connector.shutdown()
    return answers


def main(argv):
    upstream, out_dir, readmes = argv[0], argv[1], argv[2:]
    sys.path.insert(0, os.path.join(REPO, "benchmarks"))
    sys.path.insert(0, os.path.join(REPO, "modules", "vllm-bridge", "src"))
    import logging
    quiet = logging.getLogger("vllm")
    quiet.addHandler(logging.NullHandler())
    quiet.propagate = False
    import upstream_vllm as up
    up.load(upstream)
    from vllm.config import KVTransferConfig, SchedulerConfig, VllmConfig
    from vllm.distributed.kv_transfer.kv_connector.factory import KVConnectorFactory
    from vllm.distributed.kv_transfer.kv_connector.v1.base import KVConnectorRole, SupportsHMA
    moriio = importlib.import_module(up.MORIIO)
    # a SupportsHMA MoRIIO (3c201bf2) is built with the engine's kv_cache_config; an engine may run
    # it under the hybrid KV-cache manager whatever the README's command line says
    inner_hma = issubclass(moriio.MoRIIOConnector, SupportsHMA)
    uid = "0123456789abcdef0123456789abcdef"
    runs = []
    for readme, line, cfg, words in readme_configs(readmes):
        hma_on = "--no-disable-hybrid-kv-cache-manager" in words
        runs += [(readme, line, cfg, hma) for hma in ([hma_on, True] if inner_hma and not hma_on else [hma_on])]
    for i, (readme, line, cfg, hma_on) in enumerate(runs):
        extra = dict(cfg.get("kv_connector_extra_config") or {})
        if "record_to" in extra:
            extra["record_to"] = os.path.join(out_dir, f"config{i}", os.path.basename(str(extra["record_to"])))
        # under the hybrid manager, a second full-attention group that opts out of KV transfer
        # (block ids per group in every hook); without it, one group
        groups = 2 if hma_on and inner_hma else 1
        kv_cache_config = None
        if inner_hma:
            kv_cache_config = up.KVCacheConfig([
                up.KVCacheGroupSpec([f"layer.{g}"], up.FullAttentionSpec(16), enable_kv_transfer=g == 0)
                for g in range(groups)])
        role = cfg["kv_role"]
        if role == "kv_producer":
            params = {"do_remote_decode": True, "do_remote_prefill": False, "remote_engine_id": None,
                      "remote_block_ids": None, "remote_dp_size": 1, "remote_tp_size": 1, "transfer_id": "tx-1"}
        else:
            params = {"do_remote_decode": False, "do_remote_prefill": True, "remote_engine_id": None,
                      "remote_block_ids": None, "transfer_id": "tx-1", "remote_dp_size": 1, "remote_tp_size": 1}
        rid = (f"___prefill_addr_host:10.0.0.1,handshake:6301,notify:61005"
               f"___decode_addr_host:10.0.1.1,handshake:6301,notify:61005_{uid}")
        result = {"readme": readme, "line": line, "kv_connector": cfg.get("kv_connector"), "kv_role": role,
                  "hybrid_manager": hma_on, "groups": groups}
        for which, kv_cfg in (("recorder", dict(cfg, kv_connector_extra_config=extra)),
                              ("bare", {"kv_connector": "MoRIIOConnector", "kv_role": role,
                                        "kv_connector_extra_config": {k: v for k, v in extra.items()
                                                                      if k not in ("record_to", "inner_connector")}})):
            config = VllmConfig(kv_transfer_config=KVTransferConfig(**kv_cfg),
                                scheduler_config=SchedulerConfig(disable_hybrid_kv_cache_manager=not hma_on))
            del up.SENT[:]
            r = {}
            try:
                c = KVConnectorFactory.create_connector(config, KVConnectorRole.SCHEDULER, kv_cache_config)
                r["class"] = type(c).__name__
                r.update(drive(c, up, role, rid, params, groups))
            except Exception as e:  # noqa: BLE001 - what an engine would die of
                r["error"] = f"{type(e).__name__}: {e}"
            r["frames"] = [[p, bytes(d).hex()] for p, d in up.SENT]  # every byte, to compare
            result[which] = r
        print(json.dumps(result, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
