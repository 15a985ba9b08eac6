/**
 * Value types shared by events, effects and state: block groups, kv_transfer_params with Python
 * semantics, ReqMeta, request phases and anomaly kinds (both with permanent codes). JDK only.
 */
package io.kvledger.core.model;
