/** kvledger journal module (being built). */
package io.kvledger.journal;
