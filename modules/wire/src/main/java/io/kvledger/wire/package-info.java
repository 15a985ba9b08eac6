/** kvledger wire module (being built). */
package io.kvledger.wire;
