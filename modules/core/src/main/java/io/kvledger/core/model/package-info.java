/**
 * Value types shared by events, effects and state: block groups, kv_transfer_params with Python
 * semantics (the raw map, {@link io.kvledger.core.model.KvParams}, and the keys the connector reads
 * parsed once per request, {@link io.kvledger.core.model.KvTransferParams}), transfer ids (a sealed
 * type: str, int, bytes, None, another Python value as a {@code PyValue}), ReqMeta, request phases
 * and anomaly kinds (both with permanent codes), and the sealed Python value
 * ({@link io.kvledger.core.model.PyValue}, with {@code PyValue.of} from the plain-Java form) that
 * the wire module's codec reads and packs. JDK only.
 */
package io.kvledger.core.model;
