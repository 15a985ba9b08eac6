"""benchmarks/seed_differential.py: the scenario generator and the recordings it writes.

The seed document is not part of this repository, so the scheduler here is a small one of the
test's own, in a document of the seed's shape (a ``class MoRIIOConnectorScheduler:`` block): it
answers every hook, sends a notify frame per allocation of a remote-prefill request and raises on
its third allocation, so that the recording, the frames and the cut at an engine-killing
exception can be checked. The comparison with kvledger is ``benchmarks/seed-differential.sh``'s
(run by hand against the real seed).
"""

import json
import os
import sys

import pytest

REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO, "benchmarks"))

import seed_differential as sd  # noqa: E402
from kvledger_vllm.stream import unfold  # noqa: E402

TOY = '''
# a document of the seed's shape: prose, then the class
class MoRIIOConnectorScheduler:
    allocs = 0

    def __init__(self, vllm_config, engine_id):
        self.engine_id = engine_id
        self.is_producer = vllm_config.kv_transfer_config.kv_role == "kv_producer"
        self.tid = {}

    def get_num_new_matched_tokens(self, request, num_computed_tokens):
        if self.is_producer:
            return 0, False
        return max(len(request.prompt_token_ids or []) - num_computed_tokens, 0), False

    def update_state_after_alloc(self, request, blocks, num_external_tokens, connector_worker=None):
        params = request.kv_transfer_params or {}
        self.tid[request.request_id] = params.get("transfer_id")
        if params.get("do_remote_prefill"):
            sock = make_zmq_socket(ctx=None, path="tcp://10.0.0.1:61005", socket_type=zmq.DEALER, bind=False)
            sock.send(msgpack.dumps({"type": "release", "transfer_id": params.get("transfer_id"),
                                     "consumer_tp_size": 1}))
            type(self).allocs += 1
            if type(self).allocs == 3:
                raise RuntimeError("the third allocation dies")

    def build_connector_meta(self, scheduler_output):
        meta = MoRIIOConnectorMetadata()
        meta.transfer_id_to_request_id = {t: r for r, t in self.tid.items()}
        return meta

    def request_finished(self, request, block_ids):
        return False, None

    def update_connector_output(self, connector_output):
        if self.is_producer:
            connector_output.finished_sending = None

    def shutdown(self):
        pass

def after_the_class():
    pass
'''

INPUTS = {"request_admitted", "matched_tokens_queried", "blocks_allocated", "step_scheduled",
          "connector_output_received", "request_finished", "shut_down"}
REPLIES = {"matched_tokens", "metadata_built", "finished_sending_rewritten", "finish_decision"}


@pytest.fixture
def seed_doc(tmp_path):
    p = tmp_path / "toy-seed.txt"
    p.write_text(TOY, encoding="utf-8")
    return str(p)


def run(seed_doc, tree, index, seed=3):
    # the toy counts allocations per class: a fresh class per scenario (load_seed execs anew)
    return sd.record(seed_doc, index, seed, str(tree))


def lines_of(tree, name):
    """The recording's lines, its repeated steps unfolded (as kvledger's import reads them)."""
    with open(os.path.join(tree, name, "journal.jsonl"), encoding="utf-8") as f:
        return unfold([json.loads(line) for line in f])


def test_a_scenario_is_a_bridge_recording_of_the_seed_profile(seed_doc, tmp_path):
    tree = tmp_path / "rec"
    os.makedirs(tree)
    names = []
    for i in range(12):
        name, calls, died, frames = run(seed_doc, tree, i)
        names.append(name)
        lines = lines_of(tree, name)
        header = lines[0]
        assert header["kind"] == "header" and header["node_id"] == name and header["profile"] == "seed"
        assert header["origin"].startswith("vllm-bridge ") and " recorder scheduler " in header["origin"]
        assert header["kv_role"] == {"P": "kv_producer", "D": "kv_consumer", "B": "kv_both"}[name.split("-")[1]]
        assert header["transfer_mode"] == name.split("-")[2].upper()
        last = None
        for i_line, line in enumerate(lines[1:], 1):
            if line["kind"] == "input":
                assert line["type"] in INPUTS, line
                assert line["at_ns"] % sd.TICK_NS == 0  # the fake clock's ticks, exact in both units
                assert last is None or line["at_ns"] >= last
                last = line["at_ns"]
            else:
                assert line["kind"] == "derived" and line["type"] in REPLIES, line
                assert lines[i_line - 1]["kind"] == "input"  # a reply follows the hook call it answers
        inputs = [l for l in lines if l["kind"] == "input"]
        # every hook call that returned is recorded (on_new_request as the admission); a dying one is not
        hooks = {"get_num_new_matched_tokens": "matched_tokens_queried", "update_state_after_alloc": "blocks_allocated",
                 "build_connector_meta": "step_scheduled", "update_connector_output": "connector_output_received",
                 "request_finished": "request_finished"}
        for hook, input_type in hooks.items():
            assert sum(1 for l in inputs if l["type"] == input_type) == calls[hook] - (died or "").startswith(hook)
        if not died:
            assert inputs[-1]["type"] == "shut_down"
    roles = {n.split("-")[1] for n in names}
    assert {"P", "D"} <= roles, names


def test_the_same_seed_writes_the_same_recordings(seed_doc, tmp_path):
    for sub in ("a", "b"):
        os.makedirs(tmp_path / sub / "rec")
        for i in range(4):
            run(seed_doc, tmp_path / sub / "rec", i)
    names = sorted(os.listdir(tmp_path / "a" / "rec"))
    assert len(names) == 4 and names == sorted(os.listdir(tmp_path / "b" / "rec"))
    for name in names:
        assert lines_of(tmp_path / "a" / "rec", name) == lines_of(tmp_path / "b" / "rec", name)
        frames = [(tmp_path / sub / "frames" / (name + ".json")).read_text(encoding="utf-8") for sub in ("a", "b")]
        assert frames[0] == frames[1]
    # another seed, other scenarios
    os.makedirs(tmp_path / "c" / "rec")
    other = run(seed_doc, tmp_path / "c" / "rec", 0, seed=4)[0]
    assert lines_of(tmp_path / "c" / "rec", other) != lines_of(tmp_path / "a" / "rec", names[0])


def test_an_exception_in_the_seed_ends_the_scenario_without_that_calls_frames(seed_doc, tmp_path):
    tree = tmp_path / "rec"
    os.makedirs(tree)
    for i in range(60):
        name, calls, died, frames = run(seed_doc, tree, i)
        if died:
            break
    else:
        pytest.fail("no scenario reached a third remote-prefill allocation")
    assert died.startswith("update_state_after_alloc: RuntimeError: the third allocation dies")
    with open(os.path.join(sd.frames_dir(str(tree)), name + ".json"), encoding="utf-8") as f:
        sent = json.load(f)
    # two allocations sent their frame and returned; the third's frame left with the engine
    assert frames == 2 and len(sent) == 2
    assert all(f["type"] == "release" and f["host"] == "10.0.0.1" and f["port"] == 61005 for f in sent)
    lines = lines_of(tree, name)
    assert sum(1 for l in lines if l["type"] == "blocks_allocated") >= 2
    assert lines[-1]["type"] == "shut_down"


def test_frames_are_compared_in_order_and_by_field(tmp_path):
    tree = tmp_path / "rec"
    os.makedirs(tree)
    seed = [{"type": "release", "host": "h", "port": 1, "transfer_id": "t", "consumer_tp_size": 1},
            {"type": "remote_blocks", "host": "h", "port": 1, "req_id": "r", "transfer_id": "t",
             "block_notify_list": [1], "decode_rank": 0}]
    with open(os.path.join(sd.frames_dir(str(tree)), "s1.json"), "w", encoding="utf-8") as f:
        json.dump(seed, f)
    kv = [dict(seed[0]), dict(seed[1], block_notify_list=[2]), dict(seed[0])]
    compared, agree, kinds, _ = sd.compare_frames(str(tree), ["s1"], {"s1": kv})
    assert (compared, agree) == (3, 1)
    assert kinds == {"frames: remote_blocks differs in block_notify_list": 1,
                     "frames: release sent by kvledger only": 1}
    effect = {"type": "send_release", "fields": {"sender": "WORKER", "host": "h", "port": 1}}
    assert sd.kvledger_frame(effect) is None  # the worker's releases are not the scheduler's frames
