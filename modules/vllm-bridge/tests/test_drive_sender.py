"""Drive mode's sender thread (``drive_sender_thread``): the scheduler thread's hooks only capture what
their calls need; a sender thread builds, packs and sends them while vLLM waits for the GPU, and the
scheduler thread's next use of the bridge waits for it. The node must see the same bytes."""

import gc
import logging
import queue
import threading
import time
import types
import weakref

import pytest

from driver import Driver, producer_requests
from kvledger_vllm import KvledgerRecorderConnector
from kvledger_vllm.drive import NodeBridge
from test_drive import SWITCHES, InnerLikeNode, ScriptedNode, play_producer, scheduler, scripted_worker
from vllm.v1.core.kv_cache_manager import KVCacheBlock, KVCacheBlocks
from vllm.v1.core.sched.output import CachedRequestData, NewRequestData, SchedulerOutput
from vllm.v1.outputs import KVConnectorOutput

ANSWERS = {"get_num_new_matched_tokens": {"num_tokens": 0, "load_async": False}}


def sched(tmp_path, node, name, sender, record=True, reclaim=False, **more):
    """A driving scheduler connector; ``reclaim`` False (these tests' steps come without a GPU wait between
    them): the sender thread does every hand-off's calls, never the scheduler thread in its stead."""
    (tmp_path / name).mkdir()
    if not record:
        more["record_to"] = ""
    s = scheduler(tmp_path / name, node.port, drive_sender_thread=sender, **more)
    assert s.driving
    s._drive.reclaim = reclaim
    return s


def node_for():
    return InnerLikeNode(ANSWERS, compact=True, derived=True, agreed=True, steady=True)


@pytest.mark.parametrize("record", (True, False), ids=("recording", "not-recording"))
@pytest.mark.parametrize("switches", SWITCHES, ids=lambda sw: "-".join(k[6:] for k, v in sw.items() if v) or "none")
def test_the_sender_thread_sends_the_bytes_the_scheduler_thread_sends(tmp_path, switches, record):
    """For every combination of the from-inner switches and the compact form, with and without recording,
    the node reads byte for byte the frames it reads without the sender thread, vLLM gets the same answers,
    and the client's record of what the node defers is the same; also with ``reclaim`` (the scheduler
    thread runs the hand-offs the sender has not started: here, with no GPU wait, any of them)."""
    seen = []
    for sender, reclaim in ((True, False), (False, False), (True, True)):
        node = node_for()
        try:
            s = sched(tmp_path, node, f"sender-{sender}-{reclaim}", sender, record, reclaim, **switches)
            bridge = s._drive
            threaded = bridge._threaded
            assert threaded == (sender and bridge.compact)
            w = scripted_worker()
            d = Driver(s, w)
            scheduled = []  # per step: whether it scheduled anything
            step_call = s.build_connector_meta

            def counted(out):
                scheduled.append(bool(out.scheduled_new_reqs or out.scheduled_cached_reqs.req_ids
                                      or out.preempted_req_ids))
                return step_call(out)
            s.build_connector_meta = counted
            for r in producer_requests(6):
                d.add(r)
            d.run(4)
            for r in producer_requests(9)[6:]:  # more requests while others run
                d.add(r)
            d.run(6)
            s.shutdown()
            w.shutdown()
            if threaded:
                # each step that scheduled something handed off; an empty one with nothing captured
                # built its call on the scheduler thread (no wake-up of the sender for it)
                # (reclaim: the first hand-off run by the scheduler thread, which then builds in-thread
                # for DRIVE_ASIDE_STEPS steps: the sender stands aside)
                assert 0 < sum(scheduled) < len(scheduled) == 10
                assert bridge.handoffs == sum(scheduled) and bridge.sender_cpu_ns > 0 if not reclaim else (
                    bridge.reclaimed >= 1 and bridge.handoffs < sum(scheduled))
                assert bridge.handoffs == bridge.reclaimed + bridge.started
                assert not bridge._sender.is_alive()  # ended at the shutdown
            assert s.drive_fallbacks == 0 and s.drive_divergences == 0 and bridge.unread == 0
            seen.append((node.raw, node.calls, d.acted, sorted(s._drive_deferred), sorted(s._drive_finish_unread),
                         bridge.calls, bridge.sent, bridge.batches))
        finally:
            node.close()
    assert len(seen[0][0]) > 5 and seen[0] == seen[1] == seen[2]


def test_a_failure_on_the_sender_thread_is_counted_and_logged_on_the_scheduler_thread(tmp_path, caplog, monkeypatch):
    """A call the node refuses, a call the sender cannot build, and a captured call that raises: each is
    counted and logged as without the sender thread, on the scheduler thread (handed back at its next use
    of the bridge), and the calls after them still go out."""
    refusing = dict(ANSWERS, update_state_after_alloc="node busy: the node's inbox is full (1 items)")
    seen = []
    for sender in (True, False):
        node = InnerLikeNode(refusing, compact=True, derived=True, agreed=True)
        try:
            caplog.clear()
            with caplog.at_level(logging.ERROR, logger="vllm.kvledger_vllm"):
                s = sched(tmp_path, node, f"refused-{sender}", sender, drive_matched_from_inner="always",
                          drive_finished_from_inner="always")
                play_producer(s)
            assert s.drive_fallbacks == 3
            logged = [r for r in caplog.records if "update_state_after_alloc" in r.getMessage()]
            assert len(logged) == 1 and logged[0].threadName == threading.current_thread().name
            seen.append(node.calls)
        finally:
            node.close()
    assert seen[0] == seen[1]

    # a call the sender cannot build (its row refused by the bridge), and a captured call raising
    node = InnerLikeNode(ANSWERS, compact=True, derived=True, agreed=True)
    try:
        add_row = NodeBridge.add_row

        def no_allocation(self, entry, *a):
            if entry[0] == "update_state_after_alloc":
                raise ValueError("cannot build")
            return add_row(self, entry, *a)
        monkeypatch.setattr(NodeBridge, "add_row", no_allocation)
        step_later = KvledgerRecorderConnector._drive_step_later
        raised = []

        def raising_once(self, *a):
            if not raised:
                raised.append(threading.current_thread().name)
                raise RuntimeError("the sender's call broke")
            return step_later(self, *a)
        monkeypatch.setattr(KvledgerRecorderConnector, "_drive_step_later", raising_once)
        caplog.clear()
        with caplog.at_level(logging.ERROR, logger="vllm.kvledger_vllm"):
            s = sched(tmp_path, node, "raising", True, drive_matched_from_inner="always", drive_finished_from_inner="always")
            bridge = s._drive
            play_producer(s)
        assert raised == ["kvledger-drive-sender"]
        # each of the 3 steps that scheduled something handed off to the sender, the failures handed back
        # before it notwithstanding (the 3 empty ones, with nothing captured, built in-thread)
        assert bridge.handoffs == 3
        # three allocations not built, one step lost on the sender: each a fallback
        assert s.drive_fallbacks == 4
        assert {r.threadName for r in caplog.records} == {threading.current_thread().name}
        assert any("sender thread" in r.getMessage() for r in caplog.records)
        hooks = [h for h, _ in node.calls]
        assert "update_state_after_alloc" not in hooks and hooks.count("build_connector_meta") == 5
        assert hooks.count("request_finished") == 3
    finally:
        node.close()


def new_request_data(req, blocks):
    return NewRequestData(req.request_id, req.prompt_token_ids, req.sampling_params, blocks, 0)


@pytest.mark.parametrize("record", (True, False), ids=("recording", "not-recording"))
def test_what_changes_after_a_hook_is_sent_as_the_hook_saw_it(tmp_path, record):
    """The sender thread builds a call after its hook returned: the params dict the inner rewrites after
    on_new_request, the manager's block list extended or changed in place after update_state_after_alloc,
    and a new request's block ids extended by the model runner after build_connector_meta still go as
    they were at the hook (the same calls as without the sender thread)."""
    seen = []
    for sender in (True, False):
        node = InnerLikeNode(ANSWERS, compact=True, derived=True, agreed=True)
        try:
            s = sched(tmp_path, node, f"changed-{sender}", sender, record, drive_matched_from_inner="always",
                      drive_finished_from_inner="always")
            reqs = producer_requests(2)
            for r in reqs:
                s.on_new_request(r)
            first_params = dict(reqs[0].kv_transfer_params)
            reqs[0].kv_transfer_params["transfer_id"] = "rewritten"  # (#51052: the inner rewrites them)
            reqs[0].kv_transfer_params["extra"] = 1
            news = []
            for i, r in enumerate(reqs):
                assert s.get_num_new_matched_tokens(r, 0) == (0, False)
                live = [KVCacheBlock(10 * i + 1), KVCacheBlock(10 * i + 2)]
                s.update_state_after_alloc(r, KVCacheBlocks([live]), 0)
                live.append(KVCacheBlock(99))  # the next step's allocation
                live[0] = KVCacheBlock(0)  # a block replaced in place (a sliding window's null block)
                news.append(new_request_data(r, ([10 * i + 1, 10 * i + 2],)))
            out = SchedulerOutput(scheduled_new_reqs=news, scheduled_cached_reqs=CachedRequestData(),
                                  preempted_req_ids=set())
            s.build_connector_meta(out)
            for nr in news:
                nr.block_ids[0].append(77)  # the model runner extends the lists it was handed
            # a request resumed after preemption: its new block lists become the model runner's, which extends them
            resumed = CachedRequestData(req_ids=[reqs[1].request_id], resumed_from_preemption=[True],
                                        new_block_ids=[([13, 14],)])
            s.build_connector_meta(SchedulerOutput(scheduled_new_reqs=[], scheduled_cached_reqs=resumed,
                                                   preempted_req_ids=set()))
            resumed.new_block_ids[0][0].append(88)
            # a finish whose answer hands on the very block list (as MoRIIO's remote_block_ids), both changed
            # after the hook; its call goes with the next step's
            blocks = [[1, 2]]
            answer = (True, {"remote_block_ids": blocks[0], "x": [1], "transfer_id": "t"})
            s._inner.request_finished = lambda request, block_ids: answer
            s.update_connector_output(KVConnectorOutput(finished_sending=None, finished_recving=None))
            assert s.request_finished(reqs[0], blocks) is answer
            blocks[0].append(9)
            answer[1]["x"].append(2)
            answer[1]["late"] = 1
            s.build_connector_meta(SchedulerOutput(scheduled_new_reqs=[], scheduled_cached_reqs=CachedRequestData(),
                                                   preempted_req_ids=set()))
            s.shutdown()
            assert [a["cached_new_block_ids"] for h, a in node.calls if h == "build_connector_meta"][1] == [[[13, 14]]]
            finished = [a for h, a in node.calls if h == "request_finished"]
            assert [(a["block_ids"], a["acted"]) for a in finished] == [([[1, 2]], {"delay_free": True, "kv_transfer_params": {
                "remote_block_ids": [1, 2], "x": [1], "transfer_id": "t"}})]
            calls = node.calls
            allocs = [a for h, a in calls if h == "update_state_after_alloc"]
            assert [a["block_ids"] for a in allocs] == [[[1, 2]], [[11, 12]]]
            admitted = [a for h, a in calls if h == "add_request"]
            assert admitted[0]["kv_transfer_params"] == first_params
            step = [a for h, a in calls if h == "build_connector_meta"][0]
            assert [r["block_ids"] for r in step["scheduled_new_reqs"]] == [[[1, 2]], [[11, 12]]]
            seen.append((node.raw, node.calls))
        finally:
            node.close()
    assert seen[0] == seen[1]


class Gate:
    """Holds the sender thread in a step's call until ``open``."""

    def __init__(self, monkeypatch):
        self.event = threading.Event()
        self.entered = threading.Event()
        step_later = KvledgerRecorderConnector._drive_step_later

        def held(recorder, *a):
            self.entered.set()
            self.event.wait()
            return step_later(recorder, *a)
        monkeypatch.setattr(KvledgerRecorderConnector, "_drive_step_later", held)

    def open_once_waited_for(self, bridge):
        """Opens the gate from another thread once the scheduler thread waits for the sender (no timing)."""
        def opener():
            while bridge.sender_waits == 0:
                time.sleep(0.001)
            self.event.set()
        t = threading.Thread(target=opener, daemon=True)
        t.start()
        return t


def one_step(s, reqs, first_block=1):
    news = []
    for i, r in enumerate(reqs):
        s.on_new_request(r)
        s.get_num_new_matched_tokens(r, 0)
        ids = [first_block + i]
        s.update_state_after_alloc(r, KVCacheBlocks([[KVCacheBlock(ids[0])]]), 0)
        news.append(new_request_data(r, (ids,)))
    s.build_connector_meta(SchedulerOutput(scheduled_new_reqs=news, scheduled_cached_reqs=CachedRequestData(),
                                           preempted_req_ids=set()))


def test_close_while_the_sender_works_waits_for_it_and_sends_everything(tmp_path, monkeypatch):
    """shutdown() while the sender thread is still building the step waits for it: every call reaches
    the node, its replies are read, and the thread ends."""
    gate = Gate(monkeypatch)
    node = InnerLikeNode(ANSWERS, compact=True, derived=True, agreed=True)
    try:
        s = sched(tmp_path, node, "closing", True, drive_matched_from_inner="always")
        bridge = s._drive
        one_step(s, producer_requests(3))
        assert gate.entered.wait(30)  # the sender is in the step's call
        opener = gate.open_once_waited_for(bridge)
        s.shutdown()
        opener.join()
        assert bridge.sender_waits >= 1  # shutdown found the sender at work and waited for it
        assert not bridge._sender.is_alive() and bridge.unread == 0 and s.drive_fallbacks == 0
        assert [h for h, _ in node.calls] == ["hello"] + [
            "add_request", "get_num_new_matched_tokens", "update_state_after_alloc"] * 3 + ["build_connector_meta"]
    finally:
        node.close()


def test_an_awaited_call_right_after_a_handed_off_step_waits_for_it_and_stays_in_order(tmp_path, monkeypatch):
    """With get_num_new_matched_tokens awaited (not from the inner), the next step's query waits until the
    sender thread has sent the step handed off: the node reads the step first, and vLLM gets the node's answer."""
    gate = Gate(monkeypatch)
    answers = {"get_num_new_matched_tokens": {"num_tokens": 16, "load_async": False}}
    node = InnerLikeNode(answers, compact=True, derived=True, agreed=True)
    try:
        s = sched(tmp_path, node, "awaited", True)
        bridge = s._drive
        one_step(s, producer_requests(2)[:1])
        assert gate.entered.wait(30)
        later = producer_requests(2)[1]
        opener = gate.open_once_waited_for(bridge)
        s.on_new_request(later)  # captured: nothing waits
        assert bridge.sender_waits == 0
        assert s.get_num_new_matched_tokens(later, 0) == (16, False)  # awaited: after the step
        opener.join()
        assert bridge.sender_waits >= 1
        s.shutdown()
        hooks = [(h, a.get("request_id")) for h, a in node.calls]
        first, second = producer_requests(2)[0].request_id, later.request_id
        assert hooks == [("hello", None), ("add_request", first), ("get_num_new_matched_tokens", first),
                         ("update_state_after_alloc", first), ("build_connector_meta", None),
                         ("add_request", second), ("get_num_new_matched_tokens", second)]
        assert s.drive_fallbacks == 0
    finally:
        node.close()


class _HeldFromSender:
    """In place of a bridge's hand-off queue: the sender thread, waiting on the bridge's own queue, never
    gets a hand-off (each waits to be reclaimed by the scheduler thread); the stop at close reaches it."""

    def __init__(self, own):
        self.own, self.items = own, []

    def put(self, work):
        if work is None:
            self.own.put(None)
        else:
            self.items.append(work)

    def get_nowait(self):
        if not self.items:
            raise queue.Empty
        return self.items.pop(0)


def never_woken(monkeypatch, bridge):
    """The bridge's sender thread never takes a hand-off: the scheduler thread reclaims each one."""
    monkeypatch.setattr(bridge, "_queue", _HeldFromSender(bridge._queue))


def rows_built_on(monkeypatch):
    """The names of the threads that build the per-request rows (NodeBridge.add_row), in order, as a list
    that fills as they are built."""
    add_row = NodeBridge.add_row
    built_on = []

    def counted(self, entry, *a):
        built_on.append(threading.current_thread().name)
        return add_row(self, entry, *a)
    monkeypatch.setattr(NodeBridge, "add_row", counted)
    return built_on


def test_a_step_handed_off_while_failures_wait_to_be_handed_back_still_goes_to_the_sender(tmp_path, monkeypatch):
    """Two steps without an update_connector_output between them (vLLM calls it only with a connector output):
    the second step's hand-off first waits for the sender and handles what it handed back (block ids it could
    not convert), then hands its own captures to the sender instead of running them on the scheduler thread."""
    built_on = rows_built_on(monkeypatch)
    node = InnerLikeNode(ANSWERS, compact=True, derived=True, agreed=True)
    try:
        s = sched(tmp_path, node, "two-steps", True, drive_matched_from_inner="always")
        bridge = s._drive
        for r in producer_requests(2):
            s.on_new_request(r)
            s.get_num_new_matched_tokens(r, 0)
            s.update_state_after_alloc(r, KVCacheBlocks([[KVCacheBlock("not an id")]]), 0)  # not converted
            s.build_connector_meta(SchedulerOutput(scheduled_new_reqs=[], scheduled_cached_reqs=CachedRequestData(),
                                                   preempted_req_ids=set()))
        assert bridge.handoffs == 2
        s.shutdown()
        assert s._errors.get("drive update_state_after_alloc") == 2 and s.drive_fallbacks == 0
        assert built_on == ["kvledger-drive-sender"] * 2  # both admissions built there
        assert [h for h, _ in node.calls] == ["hello"] + ["add_request", "get_num_new_matched_tokens",
                                                          "build_connector_meta"] * 2
    finally:
        node.close()


@pytest.mark.parametrize("sender", (True, False), ids=("sender", "in-thread"))
def test_a_new_request_whose_allocation_row_failed_goes_in_full(tmp_path, monkeypatch, sender):
    """derived: a step's new request goes as (id, computed) only when its allocation row went in the same
    batch; when adding that row raised, the request goes in full, so the node can read the step."""
    from kvledger_vllm.recorder import _ALLOCATED
    reqs = producer_requests(3)
    failing = reqs[1].request_id
    add_row = NodeBridge.add_row

    def failing_once(self, entry, a, *more):
        if entry is _ALLOCATED and a == failing:
            raise OSError("the socket went away")
        return add_row(self, entry, a, *more)
    monkeypatch.setattr(NodeBridge, "add_row", failing_once)
    node = InnerLikeNode(ANSWERS, compact=True, derived=True, agreed=True)
    try:
        s = sched(tmp_path, node, f"alloc-failed-{sender}", sender, drive_matched_from_inner="always")
        one_step(s, reqs)
        s.shutdown()
        assert s.drive_fallbacks == 1  # the one row that was not added
        calls = [(h, a.get("request_id")) for h, a in node.calls]
        assert ("update_state_after_alloc", failing) not in calls
        meta = [a for h, a in node.calls if h == "build_connector_meta"]
        assert len(meta) == 1
        assert [(r["request_id"], r["block_ids"]) for r in meta[0]["scheduled_new_reqs"]] == [
            (r.request_id, [[i + 1]]) for i, r in enumerate(reqs)]
    finally:
        node.close()


def test_a_hand_off_the_sender_has_not_started_is_run_by_the_scheduler_thread_in_order(tmp_path, monkeypatch):
    """reclaim: a step handed off that the sender thread has not taken by the scheduler thread's next use of the
    bridge (the sender not woken here: no GPU wait let it run) is built and sent by the scheduler thread, without
    waiting for the sender; a request captured after the hand-off goes after the step (its calls inside the
    hand-off's do not run the later captures first), and the node reads the bytes the sender thread sends."""
    built_on = rows_built_on(monkeypatch)
    seen = []
    for reclaim in (True, False):
        node = InnerLikeNode(ANSWERS, compact=True, derived=True, agreed=True, steady=True)
        try:
            s = sched(tmp_path, node, f"reclaim-{reclaim}", True, reclaim=reclaim, drive_matched_from_inner=True)
            bridge = s._drive
            if reclaim:
                never_woken(monkeypatch, bridge)  # the hand-off does not reach it
            built_on.clear()
            first, later = producer_requests(3)[:2], producer_requests(3)[2]
            one_step(s, first)
            s.on_new_request(later)  # captured after the hand-off
            assert len(bridge.captured) == 1 and bridge.handoffs == 1
            s.update_connector_output(KVConnectorOutput(finished_sending=None, finished_recving=None))
            if reclaim:
                assert bridge.reclaimed == 1 and bridge.started == 0 and bridge.sender_waits == 0
                assert bridge.sender_cpu_ns == 0 and built_on == [threading.current_thread().name] * 5
            else:
                assert bridge.reclaimed == 0 and bridge.started == 1
                assert built_on == ["kvledger-drive-sender"] * 4 + [threading.current_thread().name]
            s.shutdown()
            hooks = [(h, a.get("request_id")) for h, a in node.calls]
            ids = [r.request_id for r in first]
            assert hooks == [("hello", None)] + [
                (h, rid) for rid in ids for h in ("add_request", "get_num_new_matched_tokens", "update_state_after_alloc")
            ] + [("build_connector_meta", None), ("add_request", later.request_id), ("update_connector_output", None)]
            assert s.drive_fallbacks == 0 and s.drive_divergences == 0
            seen.append(node.raw)
        finally:
            node.close()
    assert seen[0] == seen[1]


def test_the_sender_thread_lets_go_of_the_calls_it_ran_at_once():
    """The captures a hand-off held are freed when the sender thread is done with them, not kept until the next
    hand-off (alive, each would be one more young object for Python's collector to walk in the scheduler
    thread's hooks, and a survivor moved to an older generation)."""
    node = node_for()
    bridge = NodeBridge(f"tcp://127.0.0.1:{node.port}", timeout_ms=2000)
    try:
        bridge.start_sender()
        bridge.reclaim = False

        class Held:
            pass
        ran = []
        held = Held()
        alive = weakref.ref(held)
        bridge.captured.append((lambda h: ran.append(threading.current_thread().name), held))
        del held
        bridge.hand_off()
        bridge.sync()
        assert ran == ["kvledger-drive-sender"] and bridge.started == 1
        assert alive() is None  # freed by reference counting: no collection needed
    finally:
        bridge.close()
        node.close()


def test_after_a_reclaimed_hand_off_the_sender_stands_aside_for_some_steps(tmp_path, monkeypatch):
    """A hand-off the scheduler thread ran itself (the sender not woken: no GPU wait) makes the next step's call
    and DRIVE_ASIDE_STEPS more steps build in-thread, without captures or hand-offs; then the sender thread is
    tried again. The node reads the bytes it reads without the sender thread."""
    monkeypatch.setattr(KvledgerRecorderConnector, "DRIVE_ASIDE_STEPS", 2)
    reqs = producer_requests(8)
    seen = []
    for sender in (True, False):
        node = InnerLikeNode(ANSWERS, compact=True, derived=True, agreed=True, steady=True)
        try:
            s = sched(tmp_path, node, f"aside-{sender}", sender, reclaim=True, drive_matched_from_inner=True)
            bridge = s._drive
            handoffs = []
            if sender:
                never_woken(monkeypatch, bridge)  # each hand-off reclaimed
            for i in range(4):
                one_step(s, reqs[2 * i:2 * i + 2], first_block=1 + 2 * i)
                if sender:
                    handoffs.append((bridge.handoffs, len(bridge.captured)))
                s.update_connector_output(KVConnectorOutput(finished_sending=None, finished_recving=None))
            s.shutdown()
            if sender:
                # step 1 handed off (reclaimed at its update_connector_output); step 2's hooks captured, its call
                # in-thread; steps 3 and 4 in-thread, the sender tried again at step 4's call
                assert handoffs == [(1, 0), (1, 0), (1, 0), (2, 0)]
                assert bridge.reclaimed == 2 and bridge.started == 0 and bridge.sender_cpu_ns == 0
            assert s.drive_fallbacks == 0 and s.drive_divergences == 0
            seen.append(node.raw)
        finally:
            node.close()
    assert seen[0] == seen[1]


def the_node_reads_the_same_either_way(tmp_path, name, play):
    """Runs ``play(s, bridge, sender)`` on a driving scheduler connector with the sender thread and without,
    each against its own node, then shuts it down: the nodes read the same bytes, without a fallback or a
    divergence. Returns the calls the node read."""
    seen = []
    for sender in (True, False):
        node = node_for()
        try:
            s = sched(tmp_path, node, f"{name}-{sender}", sender, record=False, drive_matched_from_inner=True)
            play(s, s._drive, sender)
            s.shutdown()
            assert s.drive_fallbacks == 0 and s.drive_divergences == 0
            seen.append((node.raw, node.calls))
        finally:
            node.close()
    assert seen[0][0] == seen[1][0]
    return seen[0][1]


def test_an_output_without_ids_after_a_handed_off_step_is_captured_and_sent_in_order(tmp_path):
    """An update_connector_output without ids after a step handed off to the sender thread (its call quiet:
    it waits for a later frame anyway) is only captured on the scheduler thread; the next step's hand-off
    takes it first. After a step built in-thread (nothing scheduled) it is sent at once, as that step's call
    was. The node reads the calls in the order vLLM made them, byte for byte as without the sender thread."""
    def play(s, bridge, sender):
        empty = KVConnectorOutput(finished_sending=set(), finished_recving=None)
        reqs = producer_requests(2)
        one_step(s, reqs)
        bridge.sync()  # the sender done with the step (vLLM's GPU wait)
        s.update_connector_output(empty)
        if sender:
            assert [c[0] for c in bridge.captured] == [s._drive_output_cap] and bridge.handoffs == 1
        cached = CachedRequestData(req_ids=[r.request_id for r in reqs], new_block_ids=[None, ([3],)])
        s.build_connector_meta(SchedulerOutput(scheduled_new_reqs=[], scheduled_cached_reqs=cached,
                                               preempted_req_ids=set()))
        if sender:
            assert not bridge.captured and bridge.handoffs == 2  # the output's call went with the step's
        bridge.sync()
        s.update_connector_output(empty)  # captured again: the last step was handed off
        s.build_connector_meta(SchedulerOutput(scheduled_new_reqs=[], scheduled_cached_reqs=CachedRequestData(),
                                               preempted_req_ids=set()))
        if sender:  # nothing scheduled: built in-thread, the captured output's call first
            assert not bridge.captured and bridge.handoffs == 2 and not s._drive_handed
        s.update_connector_output(KVConnectorOutput(finished_sending=None, finished_recving=None))
        if sender:
            assert not bridge.captured  # sent in-thread: the last step was
    calls = the_node_reads_the_same_either_way(tmp_path, "output", play)
    assert [(h, a.get("finished_sending"), a.get("finished_recving")) for h, a in calls
            if h == "update_connector_output"] == [("update_connector_output", [], None)] * 2 + [
        ("update_connector_output", None, None)]
    hooks = [h for h, _ in calls if h in ("build_connector_meta", "update_connector_output")]
    assert hooks == ["build_connector_meta", "update_connector_output"] * 3


@pytest.mark.parametrize("nap_ms", (0, 1, 5))
def test_the_sender_thread_takes_a_hand_off_napping_or_waiting_in_its_queue(nap_ms):
    """With naps (drive_sender_nap_ms) the sender thread looks for hand-offs on its own timer for a while after
    its last work (a hand-off then wakes no one); without, or after a pause, it waits in its queue. Either way
    each hand-off runs on the sender thread, in order."""
    node = node_for()
    bridge = NodeBridge(f"tcp://127.0.0.1:{node.port}", timeout_ms=2000)
    try:
        bridge.nap_s = nap_ms / 1000
        bridge.nap_for_ns = 50_000_000
        bridge.start_sender()
        bridge.reclaim = False
        ran = []
        for i in range(5):
            bridge.captured.append((lambda i: ran.append((i, threading.current_thread().name)), i))
            bridge.hand_off()
            bridge.sync()
            if i == 2:
                time.sleep(0.06)  # a pause past nap_for_ns: the sender waits in its queue again
        assert ran == [(i, "kvledger-drive-sender") for i in range(5)] and bridge.started == 5
    finally:
        bridge.close()
        node.close()


@pytest.mark.parametrize("nap", ("-1", "1001", "nan"))
def test_a_sender_nap_out_of_range_leaves_drive_mode_off(tmp_path, nap):
    node = node_for()
    try:
        s = scheduler(tmp_path, node.port, drive_sender_nap_ms=nap)
        assert not s.driving
        s.shutdown()
        s = scheduler(tmp_path, node.port, drive_sender_nap_ms="2.5", drive_matched_from_inner=True)
        assert s.driving and s._drive.nap_s == 0.0025 and s._drive._threaded
        s.shutdown()
    finally:
        node.close()


def test_a_captured_output_is_sent_at_shutdown(tmp_path):
    """The last update_connector_output, captured after a handed-off step, reaches the node at shutdown."""
    node = node_for()
    try:
        s = sched(tmp_path, node, "output-last", True, record=False, drive_matched_from_inner=True)
        one_step(s, producer_requests(2))
        s._drive.sync()
        s.update_connector_output(KVConnectorOutput(finished_sending=None, finished_recving=set()))
        assert len(s._drive.captured) == 1
        s.shutdown()
        assert node.calls[-1] == ("update_connector_output", {"finished_sending": None, "finished_recving": []})
        assert s.drive_fallbacks == 0
    finally:
        node.close()


class GatedNode(ScriptedNode):
    """A node that answers each call once ``gate`` is set; ``replied`` is set once it has answered one."""

    def __init__(self, answers):
        self.gate = threading.Event()
        self.replied = threading.Event()
        super().__init__(answers)

    def send_reply(self, ident, reply):
        while not self.gate.wait(0.05):
            if self.stop.is_set():
                return
        super().send_reply(ident, reply)
        self.replied.set()


def until(condition):
    """Waits until ``condition()`` holds (a generous bound, so that a broken build fails, not hangs)."""
    for _ in range(60_000):
        if condition():
            return True
        time.sleep(0.001)
    return False


def napping_sender(endpoint, users=()):
    """A bridge whose sender thread has run a hand-off (a call sent, its reply not read) and naps for a minute."""
    bridge = NodeBridge(endpoint, timeout_ms=2000)
    bridge.nap_for_ns = 60 * 10 ** 9
    bridge.start_sender(users=users)
    bridge.reclaim = False  # (the sender runs the hand-off, not this thread)
    got = []
    answered = threading.Event()

    def on_result(result):
        got.append((result, threading.current_thread().name))
        answered.set()
    bridge.captured.append((bridge.send_args, "request_finished", {"request_id": "r-1"}, on_result))
    bridge.hand_off()
    bridge.sync()  # the sender sent the call (the node holds its reply) and naps
    return bridge, got, answered


def test_a_reply_that_comes_while_the_sender_naps_is_read_and_settled_by_the_sender_thread():
    """NodeBridge._read_while_free: the reply of a call the sender sent, coming while it naps and vLLM's scheduler
    thread is elsewhere (its GPU or worker wait), is read and settled on the sender thread, not left to the
    scheduler thread's next step."""
    node = GatedNode({"request_finished": {"delay_free": False}})
    bridge, got, answered = napping_sender(node.endpoint)
    try:
        assert len(bridge._unread) == 1 and not got
        node.gate.set()
        assert answered.wait(60)
        assert got == [({"delay_free": False}, "kvledger-drive-sender")]
        assert bridge.nap_reads >= 1 and bridge.unread == 0 and bridge.failures == 0
    finally:
        bridge.close()
        node.close()


def test_the_sender_reads_no_reply_while_another_thread_is_in_the_connectors_code():
    """While a thread other than the sender runs code of the bridge's users (vLLM's scheduler thread in one of
    the connector's hooks: it may be using the bridge, or deciding on what the replies change), the sender
    lets go in its naps without reading; once that thread has left, it reads."""
    connector = types.ModuleType("connector_code")  # stands for the recorder's module
    exec("def in_a_hook(entered, leave):\n    entered.set()\n    leave.wait()\n", vars(connector))
    node = GatedNode({"request_finished": {"delay_free": True}})
    bridge, got, answered = napping_sender(node.endpoint, users=(connector,))
    entered, leave = threading.Event(), threading.Event()
    hook = threading.Thread(target=connector.in_a_hook, args=(entered, leave), daemon=True)
    try:
        hook.start()
        assert entered.wait(60)
        node.gate.set()
        assert node.replied.wait(60)
        yields = bridge.nap_yields
        assert until(lambda: bridge.nap_yields >= yields + 3)  # three naps with the reply there: let go
        assert not got and len(bridge._unread) == 1
        leave.set()
        hook.join(60)
        assert answered.wait(60)
        assert got == [({"delay_free": True}, "kvledger-drive-sender")]
    finally:
        leave.set()
        bridge.close()
        node.close()


def test_the_sender_runs_the_young_collection_in_its_naps_once_half_due_and_never_with_the_collector_off():
    """NodeBridge.collect_young: Python's young collection, left to the allocations, lands in whatever step
    crosses its threshold; a napping sender runs it once half due. Not with the collector disabled."""
    node = GatedNode({})
    bridge, _, _ = napping_sender(node.endpoint)
    node.gate.set()
    threshold = gc.get_threshold()[0]
    kept = []
    try:
        assert until(lambda: bridge.unread == 0)
        gc.collect(0)  # (the young count from 0: the allocations below stay under the threshold, so that no
        gc.disable()   # automatic collection, once the collector is on again, comes before the sender's)
        try:
            before, naps = bridge.young_collections, bridge.naps
            kept.extend([] for _ in range(threshold * 3 // 4))
            assert until(lambda: bridge.naps >= naps + 5)
            assert bridge.young_collections == before and gc.get_count()[0] >= threshold // 2
        finally:
            gc.enable()
        assert until(lambda: bridge.young_collections > before)
        assert gc.get_count()[0] < threshold // 2
    finally:
        gc.enable()
        bridge.close()
        node.close()


def test_a_step_with_nothing_scheduled_that_sends_held_calls_is_handed_off(tmp_path):
    """A step with nothing scheduled is built in-thread, its calls and the output's quiet ones held for a later
    frame; the first such step after they have waited max_hold_ns, whose flush sends them, is handed off: the
    sender sends them and reads their reply in its naps. The node reads the same calls in the same order."""
    def play(s, bridge, sender):
        bridge.max_hold_ns = 1  # (held at the first quiet flush, due at the next)
        empty = KVConnectorOutput(finished_sending=set(), finished_recving=None)
        nothing = SchedulerOutput(scheduled_new_reqs=[], scheduled_cached_reqs=CachedRequestData(),
                                  preempted_req_ids=set())
        one_step(s, producer_requests(2))
        bridge.sync()
        s.update_connector_output(empty)
        s.build_connector_meta(nothing)  # built in-thread: its calls held
        frames = bridge.batches
        if sender:
            assert bridge.handoffs == 1 and not s._drive_handed and bridge._buffer
        s.update_connector_output(empty)
        s.build_connector_meta(nothing)  # the held calls due: handed off
        if sender:
            assert bridge.handoffs == 2 and s._drive_handed
        bridge.sync()
        assert bridge.batches == frames + 1 and not bridge._buffer
    calls = the_node_reads_the_same_either_way(tmp_path, "held", play)
    hooks = [h for h, _ in calls if h in ("build_connector_meta", "update_connector_output")]
    assert hooks == ["build_connector_meta"] + ["update_connector_output", "build_connector_meta"] * 2
