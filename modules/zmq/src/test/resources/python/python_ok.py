"""Exits 0 when pyzmq and msgpack import, printing their versions."""
import msgpack
import zmq

print("pyzmq %s libzmq %s msgpack %s" % (zmq.__version__, zmq.zmq_version(), ".".join(map(str, msgpack.version))))
