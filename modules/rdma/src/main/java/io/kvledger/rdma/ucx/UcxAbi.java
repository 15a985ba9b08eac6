package io.kvledger.rdma.ucx;

import static java.lang.foreign.MemoryLayout.PathElement.groupElement;
import static java.lang.foreign.MemoryLayout.paddingLayout;
import static java.lang.foreign.MemoryLayout.structLayout;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Hand-written layouts of the UCX structs the bindings fill, and the enum and flag values they
 * use, for UCX 1.13 on x86-64 (LP64). Every field of each struct is laid out, not only the ones
 * the engine sets, so that the sizes match C's and the guard test
 * ({@code UcxAbiProbeTest}, against {@code native/abi_probe.c} compiled with the installed
 * headers) can check every offset. UCX structs are versioned by {@code field_mask}: a newer
 * library reads only the fields whose bits are set, so these layouts stay valid while UCX only
 * appends fields.
 */
final class UcxAbi {

    private UcxAbi() {}

    /** {@code ucp_params_t}. */
    static final StructLayout UCP_PARAMS = structLayout(
            JAVA_LONG.withName("field_mask"),
            JAVA_LONG.withName("features"),
            JAVA_LONG.withName("request_size"),
            ADDRESS.withName("request_init"),
            ADDRESS.withName("request_cleanup"),
            JAVA_LONG.withName("tag_sender_mask"),
            JAVA_INT.withName("mt_workers_shared"),
            paddingLayout(4),
            JAVA_LONG.withName("estimated_num_eps"),
            JAVA_LONG.withName("estimated_num_ppn"),
            ADDRESS.withName("name")).withName("ucp_params_t");

    /** {@code ucs_cpu_set_t}: 1024 bits. */
    static final MemoryLayout UCS_CPU_SET = MemoryLayout.sequenceLayout(16, JAVA_LONG).withName("ucs_cpu_set_t");

    /** {@code ucp_worker_params_t}. */
    static final StructLayout UCP_WORKER_PARAMS = structLayout(
            JAVA_LONG.withName("field_mask"),
            JAVA_INT.withName("thread_mode"),
            paddingLayout(4),
            UCS_CPU_SET.withName("cpu_mask"),
            JAVA_INT.withName("events"),
            paddingLayout(4),
            ADDRESS.withName("user_data"),
            JAVA_INT.withName("event_fd"),
            paddingLayout(4),
            JAVA_LONG.withName("flags"),
            ADDRESS.withName("name"),
            JAVA_LONG.withName("am_alignment"),
            JAVA_LONG.withName("client_id")).withName("ucp_worker_params_t");

    /** {@code ucp_err_handler_t}. */
    static final StructLayout UCP_ERR_HANDLER = structLayout(
            ADDRESS.withName("cb"),
            ADDRESS.withName("arg")).withName("ucp_err_handler_t");

    /** {@code ucs_sock_addr_t}. */
    static final StructLayout UCS_SOCK_ADDR = structLayout(
            ADDRESS.withName("addr"),
            JAVA_INT.withName("addrlen"),
            paddingLayout(4)).withName("ucs_sock_addr_t");

    /** {@code ucp_ep_params_t}. */
    static final StructLayout UCP_EP_PARAMS = structLayout(
            JAVA_LONG.withName("field_mask"),
            ADDRESS.withName("address"),
            JAVA_INT.withName("err_mode"),
            paddingLayout(4),
            UCP_ERR_HANDLER.withName("err_handler"),
            ADDRESS.withName("user_data"),
            JAVA_INT.withName("flags"),
            paddingLayout(4),
            UCS_SOCK_ADDR.withName("sockaddr"),
            ADDRESS.withName("conn_request"),
            ADDRESS.withName("name"),
            UCS_SOCK_ADDR.withName("local_sockaddr")).withName("ucp_ep_params_t");

    /** {@code ucp_mem_map_params_t}. */
    static final StructLayout UCP_MEM_MAP_PARAMS = structLayout(
            JAVA_LONG.withName("field_mask"),
            ADDRESS.withName("address"),
            JAVA_LONG.withName("length"),
            JAVA_INT.withName("flags"),
            JAVA_INT.withName("prot"),
            JAVA_INT.withName("memory_type"),
            paddingLayout(4)).withName("ucp_mem_map_params_t");

    /** {@code ucp_request_param_t}. */
    static final StructLayout UCP_REQUEST_PARAM = structLayout(
            JAVA_INT.withName("op_attr_mask"),
            JAVA_INT.withName("flags"),
            ADDRESS.withName("request"),
            ADDRESS.withName("cb"),
            JAVA_LONG.withName("datatype"),
            ADDRESS.withName("user_data"),
            ADDRESS.withName("reply_buffer"),
            JAVA_INT.withName("memory_type"),
            paddingLayout(4),
            ADDRESS.withName("recv_info"),
            ADDRESS.withName("memh")).withName("ucp_request_param_t");

    /** {@code ucp_mem_attr_t}, for {@code ucp_mem_query} of memory UCX allocated. */
    static final StructLayout UCP_MEM_ATTR = structLayout(
            JAVA_LONG.withName("field_mask"),
            ADDRESS.withName("address"),
            JAVA_LONG.withName("length"),
            JAVA_INT.withName("mem_type"),
            paddingLayout(4)).withName("ucp_mem_attr_t");

    /** libc {@code struct pollfd}, for waiting on the worker's event descriptor. */
    static final StructLayout POLLFD = structLayout(
            JAVA_INT.withName("fd"),
            JAVA_SHORT.withName("events"),
            JAVA_SHORT.withName("revents")).withName("pollfd");

    /** Every struct above by its C name, as the ABI probe prints them. */
    static final Map<String, StructLayout> STRUCTS = structs();

    static final long UCP_PARAM_FIELD_FEATURES = 1L;
    static final long UCP_PARAM_FIELD_MT_WORKERS_SHARED = 1L << 5;
    static final long UCP_PARAM_FIELD_NAME = 1L << 8;
    static final long UCP_FEATURE_RMA = 1L << 1;
    static final long UCP_FEATURE_WAKEUP = 1L << 4;
    static final long UCP_WORKER_PARAM_FIELD_THREAD_MODE = 1L;
    static final long UCP_WORKER_PARAM_FIELD_NAME = 1L << 6;
    static final int UCS_THREAD_MODE_SINGLE = 0;
    static final long UCP_EP_PARAM_FIELD_REMOTE_ADDRESS = 1L;
    static final long UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE = 1L << 1;
    static final long UCP_EP_PARAM_FIELD_ERR_HANDLER = 1L << 2;
    static final long UCP_EP_PARAM_FIELD_USER_DATA = 1L << 3;
    static final long UCP_EP_PARAM_FIELD_NAME = 1L << 7;
    static final int UCP_ERR_HANDLING_MODE_NONE = 0;
    static final int UCP_ERR_HANDLING_MODE_PEER = 1;
    static final int UCP_EP_CLOSE_FLAG_FORCE = 1;
    static final long UCP_MEM_MAP_PARAM_FIELD_ADDRESS = 1L;
    static final long UCP_MEM_MAP_PARAM_FIELD_LENGTH = 1L << 1;
    static final long UCP_MEM_MAP_PARAM_FIELD_FLAGS = 1L << 2;
    static final int UCP_MEM_MAP_ALLOCATE = 1 << 1;
    static final long UCP_MEM_ATTR_FIELD_ADDRESS = 1L;
    static final long UCP_MEM_ATTR_FIELD_LENGTH = 1L << 1;
    static final int UCP_OP_ATTR_FIELD_FLAGS = 1 << 4;
    static final int UCS_OK = 0;
    static final int UCS_INPROGRESS = 1;
    static final int UCS_ERR_LAST = -100;
    static final int UCS_ERR_BUSY = -15;
    static final int POLLIN = 1;
    static final int UCS_ERR_CANCELED = -16;
    static final int UCS_ERR_UNREACHABLE = -6;
    static final int UCS_ERR_ENDPOINT_TIMEOUT = -80;
    static final int UCS_ERR_CONNECTION_RESET = -25;

    /** The API version these layouts were written for ({@code UCP_API_MAJOR}, {@code UCP_API_MINOR}). */
    static final int API_MAJOR = 1;
    static final int API_MINOR = 13;

    /** Every constant above by its C name, as the ABI probe prints them. */
    static final Map<String, Long> CONSTANTS = constants();

    /** Byte offset of a top-level field. */
    static long offset(StructLayout layout, String field) {
        return layout.byteOffset(groupElement(field));
    }

    private static Map<String, StructLayout> structs() {
        Map<String, StructLayout> m = new LinkedHashMap<>();
        for (StructLayout l : new StructLayout[] {UCP_PARAMS, UCP_WORKER_PARAMS, UCP_ERR_HANDLER, UCS_SOCK_ADDR,
                UCP_EP_PARAMS, UCP_MEM_MAP_PARAMS, UCP_MEM_ATTR, UCP_REQUEST_PARAM, POLLFD}) {
            m.put(l.name().orElseThrow(), l);
        }
        return Map.copyOf(m);
    }

    private static Map<String, Long> constants() {
        Map<String, Long> m = new LinkedHashMap<>();
        m.put("UCP_PARAM_FIELD_FEATURES", UCP_PARAM_FIELD_FEATURES);
        m.put("UCP_PARAM_FIELD_NAME", UCP_PARAM_FIELD_NAME);
        m.put("UCP_PARAM_FIELD_MT_WORKERS_SHARED", UCP_PARAM_FIELD_MT_WORKERS_SHARED);
        m.put("UCP_FEATURE_RMA", UCP_FEATURE_RMA);
        m.put("UCP_FEATURE_WAKEUP", UCP_FEATURE_WAKEUP);
        m.put("UCP_WORKER_PARAM_FIELD_THREAD_MODE", UCP_WORKER_PARAM_FIELD_THREAD_MODE);
        m.put("UCP_WORKER_PARAM_FIELD_NAME", UCP_WORKER_PARAM_FIELD_NAME);
        m.put("UCS_THREAD_MODE_SINGLE", (long) UCS_THREAD_MODE_SINGLE);
        m.put("UCP_EP_PARAM_FIELD_REMOTE_ADDRESS", UCP_EP_PARAM_FIELD_REMOTE_ADDRESS);
        m.put("UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE", UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE);
        m.put("UCP_EP_PARAM_FIELD_ERR_HANDLER", UCP_EP_PARAM_FIELD_ERR_HANDLER);
        m.put("UCP_EP_PARAM_FIELD_USER_DATA", UCP_EP_PARAM_FIELD_USER_DATA);
        m.put("UCP_EP_PARAM_FIELD_NAME", UCP_EP_PARAM_FIELD_NAME);
        m.put("UCP_ERR_HANDLING_MODE_NONE", (long) UCP_ERR_HANDLING_MODE_NONE);
        m.put("UCP_ERR_HANDLING_MODE_PEER", (long) UCP_ERR_HANDLING_MODE_PEER);
        m.put("UCP_EP_CLOSE_FLAG_FORCE", (long) UCP_EP_CLOSE_FLAG_FORCE);
        m.put("UCP_MEM_MAP_PARAM_FIELD_ADDRESS", UCP_MEM_MAP_PARAM_FIELD_ADDRESS);
        m.put("UCP_MEM_MAP_PARAM_FIELD_LENGTH", UCP_MEM_MAP_PARAM_FIELD_LENGTH);
        m.put("UCP_MEM_MAP_PARAM_FIELD_FLAGS", UCP_MEM_MAP_PARAM_FIELD_FLAGS);
        m.put("UCP_MEM_MAP_ALLOCATE", (long) UCP_MEM_MAP_ALLOCATE);
        m.put("UCP_MEM_ATTR_FIELD_ADDRESS", UCP_MEM_ATTR_FIELD_ADDRESS);
        m.put("UCP_MEM_ATTR_FIELD_LENGTH", UCP_MEM_ATTR_FIELD_LENGTH);
        m.put("UCP_OP_ATTR_FIELD_FLAGS", (long) UCP_OP_ATTR_FIELD_FLAGS);
        m.put("UCS_OK", (long) UCS_OK);
        m.put("UCS_INPROGRESS", (long) UCS_INPROGRESS);
        m.put("UCS_ERR_LAST", (long) UCS_ERR_LAST);
        m.put("UCS_ERR_BUSY", (long) UCS_ERR_BUSY);
        m.put("POLLIN", (long) POLLIN);
        m.put("UCS_ERR_CANCELED", (long) UCS_ERR_CANCELED);
        m.put("UCS_ERR_UNREACHABLE", (long) UCS_ERR_UNREACHABLE);
        m.put("UCS_ERR_ENDPOINT_TIMEOUT", (long) UCS_ERR_ENDPOINT_TIMEOUT);
        m.put("UCS_ERR_CONNECTION_RESET", (long) UCS_ERR_CONNECTION_RESET);
        return Map.copyOf(m);
    }
}
