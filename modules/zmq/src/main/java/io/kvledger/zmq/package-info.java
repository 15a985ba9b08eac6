/** kvledger zmq module (being built). */
package io.kvledger.zmq;
