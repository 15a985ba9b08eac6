"""A driver that plays vLLM's scheduler loop over connectors (tests only).

One engine (one DP rank, one TP rank): a SCHEDULER-role connector and a WORKER-role connector,
both built the way vLLM's factory builds them (``cls(vllm_config, role, kv_cache_config)``). Each
step: admit new requests (``on_new_request``), schedule waiting ones (``get_num_new_matched_tokens``,
allocate, ``update_state_after_alloc``), prefill in chunks of ``chunk`` tokens (cached requests with
new blocks on later steps), ``build_connector_meta``, the worker's forward pass (bind,
``start_load_kv``, ``save_kv_layer`` per layer, ``wait_for_save``, ``get_finished``, clear), then
``update_connector_output`` and ``request_finished`` for requests that finished (length-capped after
their prefill, or aborted).

Run as a script it writes a recording: ``python3 driver.py --scenario healthy|diverge|meta-diverge|overflow|stuck --role
producer|consumer --out DIR`` (PYTHONPATH: the package's src and tests/standin, tests), or streams it
to a shadow node with ``--to tcp://127.0.0.1:PORT`` in place of ``--out``.
"""

import argparse
import json
import os
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))

from vllm.config import CacheConfig, KVTransferConfig, ParallelConfig, VllmConfig  # noqa: E402
from vllm.distributed.kv_transfer.kv_connector.v1.base import KVConnectorRole  # noqa: E402
from vllm.v1.core.kv_cache_manager import KVCacheBlock, KVCacheBlocks  # noqa: E402
from vllm.v1.core.sched.output import CachedRequestData, NewRequestData, SchedulerOutput  # noqa: E402
from vllm.v1.outputs import KVConnectorOutput  # noqa: E402
from vllm.v1.request import Request, RequestStatus  # noqa: E402

LAYERS = ("model.layers.0.self_attn.attn", "model.layers.1.self_attn.attn")
P_ADDR = "host:10.0.0.1,handshake:6301,notify:61005"
D_ADDR = "host:10.0.1.1,handshake:6301,notify:61005"


def request_id(i, side):
    return f"cmpl-___prefill_addr_{P_ADDR}___decode_addr_{D_ADDR}_{i:032x}-0-{side * 8}"


def make_config(role, extra, connector="KvledgerRecorderConnector", module="kvledger_vllm"):
    extra = dict(extra)
    extra.setdefault("host_ip", "10.0.0.1" if role == "kv_producer" else "10.0.1.1")
    return VllmConfig(
        kv_transfer_config=KVTransferConfig(kv_connector=connector, kv_role=role,
                                            kv_connector_module_path=module, kv_connector_extra_config=extra),
        parallel_config=ParallelConfig(),
        cache_config=CacheConfig(block_size=16))


def build(cls, config, role):
    return cls(config, role, None)


class Driver:
    """Plays the scheduler loop over a scheduler connector and a worker connector."""

    def __init__(self, scheduler, worker, producer=True, chunk=16, block_size=16, await_recv=False):
        self.sched = scheduler
        self.worker = worker
        self.producer = producer
        self.chunk = chunk
        self.block_size = block_size
        self.waiting = []
        self.running = {}
        self.blocks = {}
        # each running request's block objects, as vLLM's KV cache manager keeps them (one list per
        # request, extended as it is allocated more); its KVCacheBlocks wrap these very lists
        self.pool = {}
        self.next_block = 1
        self.finished_for_worker = set()
        self.calls = 0
        self.aborts = set()
        self.finished = []  # (request id, delay_free) as the scheduler connector answered
        # every answer of the scheduler connector the loop acts on, in call order
        self.acted = []
        # await_recv: a request loading its KV cache asynchronously waits (WAITING_FOR_REMOTE_KVS)
        # until the worker's get_finished reports it received, as vLLM's scheduler does
        self.await_recv = await_recv
        self.receiving = set()
        self.before_step = None  # called at the start of each step (a fake clock's tick)
        # ids scheduled in every step as cached requests (a decode engine's running requests, steady
        # steps): the reducer reads a cached request only for its new blocks, one of them every 4th step
        self.decoding = []
        self.decode_steps = 0
        # decode: each request runs this many steps more after its prompt (one token each, a new
        # block when one starts) before it finishes; 0: it finishes with its last chunk
        self.decode = 0
        self.decoded = {}
        # stagger: a decoding request starts its new blocks at a token of its own (its admission order
        # modulo the block size), so about one request in block_size gets one each step, as in an engine
        # whose prompts differ in length; False: every request at the same step
        self.stagger = False
        self.admitted = {}
        # after each step's build_connector_meta that scheduled something, wait this many ms (time.sleep:
        # the GIL released), as vLLM's scheduler thread waits for the GPU before the step's
        # update_from_output hooks
        self.gpu_ms = 0

    def add(self, req):
        self.admitted.setdefault(req.request_id, len(self.admitted))
        self.sched.on_new_request(req)
        self.calls += 1
        self.waiting.append(req)

    def abort(self, rid):
        self.aborts.add(rid)

    def _alloc(self, n_tokens):
        n = -(-n_tokens // self.block_size)
        ids = list(range(self.next_block, self.next_block + n))
        self.next_block += n
        return ids

    def step(self):
        if self.before_step is not None:
            self.before_step()
        new_scheduled = []
        new_reqs = []
        cached = CachedRequestData()
        # admission of waiting requests
        for req in list(self.waiting):
            count, _async = self.sched.get_num_new_matched_tokens(req, 0)
            self.acted.append(["matched", req.request_id, count, _async])
            self.calls += 1
            if count is None:
                continue
            ext = count or 0
            first = min(self.chunk, req.num_prompt_tokens)
            ids = self._alloc(first if not ext else ext)
            self.blocks[req.request_id] = list(ids)
            live = self.pool[req.request_id] = [KVCacheBlock(i) for i in ids]
            self.sched.update_state_after_alloc(req, KVCacheBlocks([live]), ext)
            self.calls += 1
            self.waiting.remove(req)
            req.status = RequestStatus.WAITING_FOR_REMOTE_KVS if _async else RequestStatus.RUNNING
            if _async and self.await_recv:
                self.receiving.add(req.request_id)
            if ext:
                req.num_computed_tokens = req.num_prompt_tokens
            else:
                req.num_computed_tokens = first
            self.running[req.request_id] = req
            new_scheduled.append(req.request_id)
            new_reqs.append(NewRequestData(req.request_id, req.prompt_token_ids, req.sampling_params, (list(ids),), 0))
        # chunked prefill of running requests scheduled in an earlier step
        for rid, req in self.running.items():
            if rid in new_scheduled:
                continue
            if req.num_computed_tokens >= req.num_prompt_tokens:
                if self.decoded.get(rid, 0) < self.decode:  # a decode step
                    shift = self.admitted.get(rid, 0) if self.stagger else 0
                    ids = self._alloc(1) if (req.num_computed_tokens + shift) % self.block_size == 0 else None
                    if ids is not None:
                        self.blocks[rid].extend(ids)
                        self.pool[rid].extend(map(KVCacheBlock, ids))
                    req.num_computed_tokens += 1
                    self.decoded[rid] = self.decoded.get(rid, 0) + 1
                    cached.req_ids.append(rid)
                    cached.new_block_ids.append(None if ids is None else (ids,))
                continue
            n = min(self.chunk, req.num_prompt_tokens - req.num_computed_tokens)
            ids = self._alloc(n)
            self.blocks[rid].extend(ids)
            self.pool[rid].extend(map(KVCacheBlock, ids))
            req.num_computed_tokens += n
            cached.req_ids.append(rid)
            cached.new_block_ids.append((ids,))
        for i, rid in enumerate(self.decoding):
            cached.req_ids.append(rid)
            cached.new_block_ids.append((self._alloc(1),) if (self.decode_steps + i) % 4 == 0 else None)
        self.decode_steps += bool(self.decoding)
        out = SchedulerOutput(scheduled_new_reqs=new_reqs, scheduled_cached_reqs=cached,
                              finished_req_ids=set(self.finished_for_worker), preempted_req_ids=set())
        meta = self.sched.build_connector_meta(out)
        self.calls += 1
        if self.gpu_ms and (new_reqs or cached.req_ids):
            # vLLM's scheduler thread waits for the GPU here (GIL released); a step with nothing scheduled
            # runs no forward pass (the model runner only calls the connector's worker hooks)
            time.sleep(self.gpu_ms / 1000)
        # the worker's forward pass
        self.worker.bind_connector_metadata(meta)
        self.worker.start_load_kv(None)
        for layer in LAYERS:
            self.worker.wait_for_layer_load(layer)
            self.worker.save_kv_layer(layer, None, None)
        self.worker.wait_for_save()
        sending, recving = self.worker.get_finished(set(self.finished_for_worker))
        self.worker.get_block_ids_with_load_errors()  # vLLM asks right after get_finished
        self.worker.clear_connector_metadata()
        self.calls += 7 + 2 * len(LAYERS)
        self.finished_for_worker.clear()
        output = KVConnectorOutput(finished_sending=sending, finished_recving=recving)
        self.sched.update_connector_output(output)
        self.acted.append(["freed", sorted(output.finished_sending or ()), sorted(output.finished_recving or ())])
        self.calls += 1
        self.receiving.difference_update(recving or ())
        # requests that finish this step
        for rid, req in list(self.running.items()):
            done = req.num_computed_tokens >= req.num_prompt_tokens and self.decoded.get(rid, 0) >= self.decode
            if rid in self.receiving:
                continue  # still waiting for its KV cache
            if rid in self.aborts:
                req.status = RequestStatus.FINISHED_ABORTED
            elif done and rid not in new_scheduled:
                req.status = RequestStatus.FINISHED_LENGTH_CAPPED if self.producer else RequestStatus.FINISHED_STOPPED
            elif done and not self.producer and rid in new_scheduled:
                continue
            else:
                continue
            delay_free, _params = self.sched.request_finished(req, list(self.blocks[rid]))
            self.pool.pop(rid, None)
            self.finished.append((rid, delay_free))
            self.acted.append(["finished", rid, delay_free, _params])
            self.calls += 1
            del self.running[rid]
            self.finished_for_worker.add(rid)

    def run(self, steps):
        for _ in range(steps):
            self.step()


def producer_requests(n=3, prompt=40):
    return [Request(request_id(i + 1, "a"), list(range(prompt)),
                    {"do_remote_decode": True, "do_remote_prefill": False, "transfer_id": f"tx-{i + 1:04d}",
                     "remote_engine_id": None, "remote_block_ids": None}, max_tokens=1) for i in range(n)]


def consumer_requests(n=3, prompt=40):
    return [Request(request_id(i + 1, "b"), list(range(prompt)),
                    {"do_remote_decode": False, "do_remote_prefill": True, "transfer_id": f"tx-{i + 1:04d}",
                     "remote_engine_id": "10.0.0.1:6301", "remote_host": "10.0.0.1",
                     "remote_handshake_port": 6301, "remote_notify_port": 61005,
                     "remote_block_ids": [[1, 2, 3]], "remote_dp_size": 1, "remote_tp_size": 1},
                    max_tokens=8) for i in range(n)]


def recorded_consumer(template, **extra):
    """A recorded consumer engine (scheduler and worker recorders over the scripted connector, to
    the files of ``template``) with the three consumer requests added; returns its Driver. ``extra``
    adds to the recorder's config (``record_fold_steps``, ...)."""
    import fakes
    from kvledger_vllm import KvledgerRecorderConnector

    fakes.ScriptedConnector.script = {}
    cfg = make_config("kv_consumer", dict({"inner_connector": "ScriptedConnector", "inner_connector_module_path": "fakes",
                                           "record_to": template}, **extra))
    d = Driver(build(KvledgerRecorderConnector, cfg, KVConnectorRole.SCHEDULER),
               build(KvledgerRecorderConnector, cfg, KVConnectorRole.WORKER), producer=False)
    for r in consumer_requests():
        d.add(r)
    return d


class GatedSink:
    """A sink that holds every write until ``gate`` is set (a stalled disk)."""

    def __init__(self, sink, gate):
        self.sink = sink
        self.gate = gate

    def write_lines(self, lines):
        self.gate.wait()
        self.sink.write_lines(lines)

    def close(self):
        self.sink.close()


class FakeClock:
    """``time.monotonic_ns`` for a driven run: each step moves it ``step_ns`` on, each reading 1 µs
    (a run of seconds of engine time plays in milliseconds)."""

    def __init__(self, step_ns):
        self.step_ns = step_ns
        self.now = time.monotonic_ns()
        self.real = time.monotonic_ns

    def monotonic_ns(self):
        self.now += 1_000
        return self.now

    def tick(self):
        self.now += self.step_ns


def play(out_dir, scenario="healthy", role="producer", record_layers=True, record_to=None, drive=None, answers=None,
         idle_steps=0, step_ms=None, drive_pipeline=True, acted=None, info=None, drive_from_inner=False,
         drive_compact=True, drive_freed_from_inner=True, drive_derived=True, steady_steps=0, drive_steady=True,
         drive_agreed=True, drive_matched_awaited=False, drive_finished_awaited=False):
    """Runs one scripted engine and returns the paths of the scheduler and worker recordings.

    ``record_to`` replaces the file template (for example ``tcp://127.0.0.1:PORT``, a shadow node).
    ``drive`` is a drive node's bridge endpoint (drive mode); ``answers``, a list, receives the
    scheduler connector's ``request_finished`` answers ``(request id, delay_free)``. ``idle_steps``
    more steps follow the scenario's, with nothing to schedule (an engine stepping while it waits).
    ``scenario`` "stuck" (a consumer): the remote KV caches never arrive, so the requests wait
    (WAITING_FOR_REMOTE_KVS) through every step. ``step_ms``: the recorder's clock is a
    ``FakeClock`` moving that much per step. ``drive_pipeline`` false: every drive call is awaited;
    ``acted``, a list, receives every answer the loop acted on (``Driver.acted``); ``info``, a dict,
    the drive client's ``batches`` (frames that carried several calls) and ``divergences``.
    ``drive_from_inner``: ``drive_matched_from_inner`` and ``drive_finished_from_inner`` ``always`` (vLLM
    acts on the inner's answers for good, the node's are checked when read; with them ``drive_freed_from_inner``
    unless ``drive_freed_from_inner`` is false); else ``drive_matched_awaited``:
    ``drive_matched_from_inner`` false (vLLM waits for the node's matched tokens from the start; by
    default only after the node first answered otherwise than the inner), ``drive_finished_awaited``:
    ``drive_finished_from_inner`` false (the same for ``request_finished`` and a producer's frees). ``drive_compact`` false: the long form of every call
    even to a node that takes the compact one; ``drive_derived`` false: a step's new requests in full
    even to a node that takes them derived. ``info`` gets the awaited calls too (``awaited``),
    and the answers left out (``left_out``).
    ``steady_steps`` more steps follow, each scheduling the same three running requests (a decode
    engine's steps; new blocks for one of them every 4th step); ``drive_steady`` false: each step's
    cached ids in full even to a node that takes steady steps; ``drive_agreed`` false: every answer in
    the batch replies even from a node that leaves out those agreeing.
    """
    import fakes
    from kvledger_vllm import KvledgerRecorderConnector

    producer = role == "producer"
    reqs = producer_requests() if producer else consumer_requests()
    fakes.ScriptedConnector.script = {}
    if scenario == "diverge":
        # the real connector frees the first request's blocks at once where MoRIIO defers them
        fakes.ScriptedConnector.script = {"delay_free_override": {reqs[0].request_id: False}}
    elif scenario == "meta-diverge":
        # the real connector hands its worker a wrong block id (+100) in the first request's ReqMeta
        fakes.ScriptedConnector.script = {"meta_wrong_block": {reqs[0].request_id: 100}}
    clock = None
    if step_ms is not None:
        clock = FakeClock(int(step_ms * 1_000_000))
        time.monotonic_ns = clock.monotonic_ns
    template = record_to or os.path.join(out_dir, "{role}-dp{dp}-tp{tp}.jsonl")
    extra = {"inner_connector": "ScriptedConnector", "inner_connector_module_path": "fakes",
             "record_to": template, "record_layers": record_layers}
    if drive:
        extra["drive_node"] = drive
        extra["drive_pipeline"] = drive_pipeline
        extra["drive_compact"] = drive_compact
        extra["drive_derived"] = drive_derived
        extra["drive_steady"] = drive_steady
        extra["drive_agreed"] = drive_agreed
        if drive_from_inner:
            extra["drive_matched_from_inner"] = "always"
            extra["drive_finished_from_inner"] = "always"
            extra["drive_freed_from_inner"] = drive_freed_from_inner
        else:
            if drive_matched_awaited:
                extra["drive_matched_from_inner"] = False
            if drive_finished_awaited:
                extra["drive_finished_from_inner"] = False
    cfg = make_config("kv_producer" if producer else "kv_consumer", extra)
    sched = build(KvledgerRecorderConnector, cfg, KVConnectorRole.SCHEDULER)
    worker = build(KvledgerRecorderConnector, cfg, KVConnectorRole.WORKER)
    gate = None
    if scenario == "overflow":
        # The disk stalls for the whole run: a queue of 8 entries overflows, the rest is dropped
        # and counted; when the disk comes back the stream says how many calls it lost.
        from kvledger_vllm.stream import FileSink, Stream
        gate = threading.Event()
        for r in (sched, worker):
            header, path = r.recording_stream._header, r.recording_stream._sink.path
            r.recording_stream.close()
            r._stream = Stream(header, GatedSink(FileSink(path), gate), maxsize=8)
    d = Driver(sched, worker, producer=producer, await_recv=scenario == "stuck")
    if clock is not None:
        d.before_step = clock.tick
    d.add(reqs[0])
    d.add(reqs[1])
    d.step()
    d.add(reqs[2])
    if producer:
        d.abort(reqs[1].request_id)  # aborted mid-prefill: freed at once, nothing sent
    d.run(5)
    d.run(idle_steps)
    d.decoding = [f"decode-{i}" for i in range(3)] if steady_steps else []
    d.run(steady_steps)
    if acted is not None:
        acted.extend(d.acted)
    if info is not None and sched.driving:
        info["batches"] = sched._drive.batches
        info["compact"] = sched._drive.compact
        info["awaited"] = sched._drive.calls
        info["derived"] = sched._drive.derived
        info["steady"] = sched._drive.steady
        info["steady_numbers"] = sched._drive.steady_numbers
        info["agreed"] = sched._drive.agreed
        info["bridge"] = sched._drive  # its left_out read after shutdown, when every reply is read
    if info is not None:
        info["sched"] = sched
    if answers is not None:
        answers.extend(d.finished)
        answers.append(("driving", sched.driving))
    if gate is not None:
        gate.set()
    sched.shutdown()
    worker.shutdown()
    if clock is not None:
        time.monotonic_ns = clock.real
    return (template.format(role="scheduler", dp=0, tp=0), template.format(role="worker", dp=0, tp=0))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", choices=("healthy", "diverge", "meta-diverge", "overflow", "stuck"), default="healthy")
    ap.add_argument("--role", choices=("producer", "consumer"), default="producer")
    ap.add_argument("--out", help="directory of the recordings (file sink)")
    ap.add_argument("--to", help="record_to instead of files in --out, e.g. tcp://127.0.0.1:PORT (a shadow node)")
    ap.add_argument("--drive", help="drive mode: the bridge endpoint of a kvledger node --engine drive")
    ap.add_argument("--no-drive-pipeline", action="store_true", help="drive mode: await every call")
    ap.add_argument("--no-drive-compact", action="store_true", help="drive mode: the long form of every call")
    ap.add_argument("--no-drive-derived", action="store_true", help="drive mode: a step's new requests in full")
    ap.add_argument("--no-drive-agreed", action="store_true", help="drive mode: every answer in the batch replies")
    ap.add_argument("--drive-from-inner", action="store_true",
                    help="drive mode: vLLM acts on the inner's matched tokens and finishes for good, the node's "
                         "are checked")
    ap.add_argument("--drive-matched-awaited", action="store_true",
                    help="drive mode: vLLM waits for the node's matched tokens from the start (not only after "
                         "a divergence)")
    ap.add_argument("--drive-finished-awaited", action="store_true",
                    help="drive mode: vLLM waits for the node's request_finished (and a producer's frees) from the "
                         "start (not only after a divergence)")
    ap.add_argument("--no-drive-freed-from-inner", action="store_true",
                    help="with --drive-from-inner: await the node's finished_sending rewrite after finishes")
    ap.add_argument("--idle-steps", type=int, default=0, help="steps with nothing to schedule after the scenario's")
    ap.add_argument("--steady-steps", type=int, default=0,
                    help="steps scheduling the same three running requests after those (decode steps)")
    ap.add_argument("--no-drive-steady", action="store_true", help="drive mode: each step's cached ids in full")
    ap.add_argument("--step-ms", type=float, help="a fake clock for the recorder, moving this much per step")
    a = ap.parse_args(argv)
    if not a.out and not a.to:
        ap.error("give --out DIR or --to tcp://HOST:PORT")
    answers = []
    acted = []
    info = {}
    for p in play(a.out or ".", a.scenario, a.role, record_to=a.to, drive=a.drive, answers=answers,
                  idle_steps=a.idle_steps, step_ms=a.step_ms, drive_pipeline=not a.no_drive_pipeline, acted=acted,
                  info=info, drive_from_inner=a.drive_from_inner, drive_matched_awaited=a.drive_matched_awaited,
                  drive_finished_awaited=a.drive_finished_awaited,
                  drive_compact=not a.no_drive_compact,
                  drive_freed_from_inner=not a.no_drive_freed_from_inner, drive_derived=not a.no_drive_derived,
                  steady_steps=a.steady_steps, drive_steady=not a.no_drive_steady,
                  drive_agreed=not a.no_drive_agreed):
        print(p)
    if "batches" in info:
        print(f"drive batches {info['batches']}")
        print(f"drive compact {info['compact']}")
        print(f"drive awaited {info['awaited']}")
        print(f"drive derived {info['derived']}")
        print(f"drive steady {info['steady']} {info['steady_numbers']}")
        print(f"drive agreed {info['agreed']}")
    if a.drive:
        # read after shutdown: every unawaited answer has been checked
        print(f"drive divergences {info['sched'].drive_divergences}")
        print(f"drive left out {info['bridge'].left_out if 'bridge' in info else 0}")
    for rid, delay_free in answers:
        print(f"answer {rid} {delay_free}")
    for x in acted:
        print("acted " + json.dumps(x, sort_keys=True, default=str))
    return 0


if __name__ == "__main__":
    sys.path[:0] = [HERE]
    sys.exit(main())
