"""What the two differential harnesses share (seed_differential.py, upstream_differential.py).

Both record scenarios through the vLLM bridge's recorder, keep the notify frames the connector
under test sent, then run ``kvledger journal import`` and ``kvledger replay --verify --effects
--json`` and tally the agreement. The parts that are the same live here; what differs between the
seed and an upstream version (the script's name in its errors, how the other side is named in the
report, which fields a non-``remote_blocks`` frame carries) is a ``Side``.
"""

import collections
import json
import os
import re
import subprocess
import sys
import types

HOOK_OF = {"matched_tokens_queried": "get_num_new_matched_tokens", "blocks_allocated": "update_state_after_alloc",
           "step_scheduled": "build_connector_meta", "connector_output_received": "update_connector_output",
           "request_finished": "request_finished", "request_admitted": "(admission)", "shut_down": "shutdown"}
NOT_HOOKS = ("(admission)", "shutdown", "start-up checks")
# a remote_blocks frame's fields besides type, host and port
REMOTE_BLOCKS_FIELDS = ("req_id", "transfer_id", "block_notify_list", "decode_rank")


class Died(Exception):
    """A hook raised in the connector under test: the engine core would die; the scenario ends."""


def zmq_addr(host, hs=6301, notify=61005):
    return f"host:{host},handshake:{hs},notify:{notify}"


def frames_dir(tree):
    d = os.path.join(os.path.dirname(tree), "frames")
    os.makedirs(d, exist_ok=True)
    return d


def _fields(text):
    return dict(re.findall(r"(\w+)=(\{[^}]*\}|\[[^\]]*\]|\S+)", text))


class Side:
    """The connector kvledger is compared with.

    prog: the script's name in its error messages; who: the other side in prose ("the seed");
    tag: the other side in an example line ("seed"); raiser: what raised when an engine died;
    other_fields: the fields besides type, host and port of a frame that is not remote_blocks
    (the seed's release carries consumer_tp_size, an upstream version's frames all have one shape).
    """

    def __init__(self, prog, who, tag, raiser, other_fields):
        self.prog, self.who, self.tag, self.raiser, self.other_fields = prog, who, tag, raiser, other_fields

    def fail(self, msg):
        print(f"{self.prog}: {msg}", file=sys.stderr)
        sys.exit(2)

    def frame_of(self, path, data):
        """A notify frame the connector sent, as comparable fields: its type, endpoint and map."""
        import msgpack
        m = msgpack.loads(data, raw=False)
        host, _, port = path[len("tcp://"):].rpartition(":")
        keys = REMOTE_BLOCKS_FIELDS if m.get("type") == "remote_blocks" else self.other_fields
        return dict({"type": m.get("type"), "host": host.strip("[]"), "port": int(port)}, **{k: m.get(k) for k in keys})

    def kvledger_frame(self, effect):
        """kvledger's scheduler-side send (a replay --effects --json line) in frame_of's shape, or None."""
        f = effect.get("fields") or {}
        if effect.get("type") == "send_remote_blocks":
            kind, keys = "remote_blocks", REMOTE_BLOCKS_FIELDS
        elif effect.get("type") == "send_release" and f.get("sender") == "SCHEDULER":
            kind, keys = "release", self.other_fields
        else:
            return None
        return dict({"type": kind, "host": f.get("host"), "port": f.get("port")}, **{k: f.get(k) for k in keys})

    def kind_of(self, d):
        """A divergence's kind: the hook, the reply type, and the field that differs (ids blanked)."""
        hook = HOOK_OF.get(d.get("cause", "?"), d.get("cause", "?"))
        exp, act = d.get("expected") or "", d.get("actual") or ""
        if d.get("differs"):
            return f"{hook}: metadata " + re.sub(r"\[[^\]]*\]", "[*]", d["differs"]).split(":", 1)[0]
        t_exp = exp.split(" ", 1)[0] if exp else "nothing"
        t_act = act.split(" ", 1)[0] if act else "nothing"
        if t_exp != t_act:
            return f"{hook}: {self.who} answered {t_exp}, kvledger {t_act}"
        ew, aw = _fields(exp), _fields(act)
        fields = [k for k in sorted(set(ew) | set(aw)) if ew.get(k) != aw.get(k)]
        return f"{hook}: {t_exp} differs in {', '.join(fields) or 'its text'}"

    def run_kvledger(self, kvledger, args, ok=(0,)):
        p = subprocess.run([kvledger] + args, capture_output=True, text=True)
        if p.returncode not in ok:
            self.fail(f"kvledger {' '.join(args[:2])} failed (exit {p.returncode}): "
                      f"{p.stderr.strip() or p.stdout.strip()[-2000:]}")
        return p.stdout

    def compare(self, kvledger, tree, journals, names, batch, profile=None):
        """Imports the recordings, replays them (with ``profile``, or each header's); returns the
        nodes' summaries and kvledger's frames per node."""
        self.run_kvledger(kvledger, ["journal", "import", tree, journals])
        nodes, frames = [], collections.defaultdict(list)
        for i in range(0, len(names), batch):
            dirs = [os.path.join(journals, n) for n in names[i:i + batch]]
            out = self.run_kvledger(kvledger, ["replay", "--verify", "--effects", "--json", "--full-ids"]
                                    + (["--profile", profile] if profile else []) + dirs, ok=(0, 1))
            lines = out.strip().splitlines()
            for line in lines[:-1]:
                e = json.loads(line)
                f = self.kvledger_frame(e)
                if f is not None:
                    frames[e["node"]].append(f)
            nodes.extend(json.loads(lines[-1])["nodes"])
        return nodes, frames

    def compare_frames(self, tree, names, kv_frames):
        """The connector's notify frames against kvledger's, per scenario in order. Returns
        (compared, agreeing, kinds Counter, examples)."""
        compared = agree = 0
        kinds, examples = collections.Counter(), {}
        for name in names:
            with open(os.path.join(frames_dir(tree), name + ".json"), encoding="utf-8") as f:
                theirs = json.load(f)
            kv = kv_frames.get(name, [])
            for i in range(max(len(theirs), len(kv))):
                t = theirs[i] if i < len(theirs) else None
                k = kv[i] if i < len(kv) else None
                compared += 1
                if t == k:
                    agree += 1
                    continue
                if t is None or k is None:
                    kind = f"frames: {(t or k)['type']} sent by {self.who if k is None else 'kvledger'} only"
                else:
                    kind = f"frames: {t['type']} differs in " + ", ".join(sorted(x for x in set(t) | set(k)
                                                                                 if t.get(x) != k.get(x)))
                kinds[kind] += 1
                examples.setdefault(kind, (name, i, t, k))
        return compared, agree, kinds, examples

    def tally(self, nodes, recorded):
        """The replayed nodes' verify results added up: per hook, by kind, engines that died."""
        per_hook = collections.OrderedDict()
        kinds, examples = collections.Counter(), {}
        profiles = collections.Counter()
        diverging_scenarios = 0
        for n in nodes:
            profiles[n.get("profile", "?")] += 1
            v = n.get("verify") or {}
            for cause, t in (v.get("by_input") or {}).items():
                h = per_hook.setdefault(HOOK_OF.get(cause, cause), [0, 0])
                h[0] += t["compared"]
                h[1] += t["diverging"]
            if v.get("divergent_inputs"):
                diverging_scenarios += 1
            for d in v.get("divergences") or []:
                k = self.kind_of(d)
                kinds[k] += 1
                examples.setdefault(k, (n["node"], d))
        total = sum(c for h, (c, _) in per_hook.items() if h not in NOT_HOOKS)
        diverging = sum(d for h, (_, d) in per_hook.items() if h not in NOT_HOOKS)
        died = collections.Counter(":".join(r[2].split(":", 2)[:2]) for r in recorded if r[2])
        return types.SimpleNamespace(per_hook=per_hook, kinds=kinds, examples=examples, profiles=profiles,
                                     diverging_scenarios=diverging_scenarios, total=total, diverging=diverging,
                                     died=died)

    @staticmethod
    def result_tail(t, frames):
        """The JSON result's keys after its headline ones."""
        return {"diverging_scenarios": t.diverging_scenarios,
                "per_hook": {h: {"compared": c, "diverging": d} for h, (c, d) in t.per_hook.items()},
                "kinds": dict(t.kinds.most_common()), "engines_died": dict(t.died),
                "frames": {"compared": frames[0], "agreeing": frames[1], "kinds": dict(frames[2].most_common())}}

    def print_details(self, t, frames, frames_title):
        """The text report after its headline: per hook, the frames, the engines that died, the kinds."""
        print("per hook (calls compared / diverging):")
        for hook, (c, d) in t.per_hook.items():
            if hook not in NOT_HOOKS:
                print(f"  {hook:28s} {c:6d} / {d:d}")
        print(f"{frames_title}: {frames[0]} compared, {frames[1]} agree, {frames[0] - frames[1]} differ")
        for k, n in frames[2].most_common():
            name, i, theirs, kv = frames[3][k]
            print(f"  {n:5d}  {k}")
            print(f"         {name} frame {i}: {self.tag}: {theirs}")
            print(f"         {' ' * len(name)}          kvledger: {kv}")
        if t.died:
            print(f"scenarios ended by an exception in {self.raiser} (an engine core that dies; compared up to it):")
            for k, n in t.died.most_common():
                print(f"  {n:4d}  {k}")
        if t.kinds:
            print("divergences by kind (count, then the first example):")
            for k, n in t.kinds.most_common():
                node, d = t.examples[k]
                print(f"  {n:5d}  {k}")
                print(f"         {node} seq {d.get('seq')}: {self.tag}: {d.get('expected')}")
                print(f"         {' ' * len(node)}        kvledger: {d.get('actual')}")
                if d.get("differs"):
                    print(f"         {' ' * len(node)}        differs: {d['differs']}")
