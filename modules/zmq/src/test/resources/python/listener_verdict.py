"""What the stock MoRIIO notify listener does with a frame, computed with the real msgpack
1.0 and the handler structure of the newest connector (MoRIIOWrapper._handle_message):

    try:
        data = msgpack.loads(msg)
        if isinstance(data, dict):
            handle_structured(data); return
    except (ExtraData, UnpackException, ValueError):
        pass
    msg.decode("utf-8") -> a non-empty id is a completion; empty or non-UTF-8 raises

Role assertions are left out (they depend on the node). Reads one hex frame per line on stdin,
prints one outcome per line: REMOTE_BLOCKS, WRITE_DONE, RELEASE, COMPLETION or RAISES.
"""
import sys

import msgpack


class MoRIIOError(Exception):
    pass


class Handled(Exception):
    def __init__(self, outcome):
        self.outcome = outcome


def handle_structured(data):
    message_type = data.get("type")
    if message_type is None and "req_id" in data:
        message_type = "remote_blocks"
    if message_type == "remote_blocks":
        transfer_id = data["transfer_id"]
        block_notify_list = data.get("block_notify_list", [])
        if not block_notify_list:
            raise MoRIIOError("block_notify_list cannot be empty in remote allocate message")
        hash(transfer_id)  # `transfer_id in terminal_ids`
        raise Handled("REMOTE_BLOCKS")
    if message_type == "write_done":
        data["transfer_id"]
        raise Handled("WRITE_DONE")
    if message_type == "release":
        transfer_id = data["transfer_id"]
        consumer_tp_size = int(data.get("consumer_tp_size", 1))
        if consumer_tp_size <= 0:
            raise MoRIIOError("Invalid consumer_tp_size in release message: %s" % consumer_tp_size)
        hash(transfer_id)  # `done_remote_allocate_req_dict.pop(transfer_id, None)`
        raise Handled("RELEASE")
    raise MoRIIOError("Unhandled structured message type: %s" % message_type)


def verdict(msg):
    try:
        try:
            data = msgpack.loads(msg)
            if isinstance(data, dict):
                handle_structured(data)
        except (msgpack.exceptions.ExtraData, msgpack.exceptions.UnpackException, ValueError):
            pass
        try:
            msg_str = msg.decode("UTF-8")
        except UnicodeDecodeError:
            return "RAISES"
        return "COMPLETION" if msg_str else "RAISES"
    except Handled as h:
        return h.outcome
    except Exception:
        return "RAISES"


def main():
    for line in sys.stdin:
        line = line.strip()
        if line == "END":
            break
        sys.stdout.write(verdict(bytes.fromhex(line)) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
