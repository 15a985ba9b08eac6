"""The MoRIIO handshake initiator, as vLLM's _moriio_handshake does it: a DEALER sends
b"get_meta_msg" and expects two replies of exactly 2 frames, an empty frame first: the
agent metadata (msgspec map form), then the layer map. Unlike vLLM it gives up after 20 s.

usage: handshake_client.py ENDPOINT
Prints one JSON line: {"metadata": ..., "layers": ..., "error": null | str}.
"""
import sys

import msgpack
import zmq

from common import emit, to_json


def main():
    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.RCVTIMEO, 20000)
    sock.connect(sys.argv[1])
    out = {"metadata": None, "layers": None, "error": None}
    try:
        sock.send(b"get_meta_msg")
        received = sock.recv_multipart()
        if len(received) != 2 or received[0] != b"":
            raise ValueError("unexpected frames for the metadata: %d" % len(received))
        metadata = msgpack.loads(received[1])
        received = sock.recv_multipart()
        if len(received) != 2 or received[0] != b"":
            raise ValueError("unexpected frames for the layer map: %d" % len(received))
        layers = msgpack.loads(received[1])
        for name, descs in layers.items():
            if not isinstance(name, str) or not all(isinstance(d, bytes) for d in descs):
                raise ValueError("layer map entry %r is not str -> [bytes]" % (name,))
        out["metadata"] = to_json(metadata)
        out["metadata_keys"] = list(metadata.keys())
        out["layers"] = to_json(layers)
    except Exception as e:
        out["error"] = "%s: %s" % (type(e).__name__, e)
    emit(out)
    sock.close()
    ctx.term()


if __name__ == "__main__":
    main()
