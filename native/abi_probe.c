/*
 * kvledger UCX ABI probe.
 *
 * Prints the size and field offsets of every struct that the hand-written Panama bindings
 * (modules/rdma, io.kvledger.rdma.ucx.UcxAbi) lay out (the UCX ones and libc's struct pollfd), and
 * the enum and flag values they use, as compiled against the installed <ucp/api/ucp.h>.
 * UcxAbiProbeTest compares every line with the Java layouts and fails naming each mismatch (for
 * example after a UCX upgrade).
 *
 * Output, one fact per line:
 *   version <major> <minor>
 *   size <struct> <bytes>
 *   offset <struct> <field> <bytes>
 *   const <NAME> <value>
 */
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <ucp/api/ucp.h>

/* "struct pollfd" prints as "pollfd" */
#define NAME(t) (strncmp(#t, "struct ", 7) == 0 ? #t + 7 : #t)
#define SIZE(t) printf("size %s %zu\n", NAME(t), sizeof(t))
#define OFF(t, f) printf("offset %s %s %zu\n", NAME(t), #f, offsetof(t, f))
#define CONST(c) printf("const %s %lld\n", #c, (long long)(c))

int main(void)
{
    printf("version %d %d\n", UCP_API_MAJOR, UCP_API_MINOR);

    SIZE(ucp_params_t);
    OFF(ucp_params_t, field_mask);
    OFF(ucp_params_t, features);
    OFF(ucp_params_t, request_size);
    OFF(ucp_params_t, request_init);
    OFF(ucp_params_t, request_cleanup);
    OFF(ucp_params_t, tag_sender_mask);
    OFF(ucp_params_t, mt_workers_shared);
    OFF(ucp_params_t, estimated_num_eps);
    OFF(ucp_params_t, estimated_num_ppn);
    OFF(ucp_params_t, name);

    SIZE(ucp_worker_params_t);
    OFF(ucp_worker_params_t, field_mask);
    OFF(ucp_worker_params_t, thread_mode);
    OFF(ucp_worker_params_t, cpu_mask);
    OFF(ucp_worker_params_t, events);
    OFF(ucp_worker_params_t, user_data);
    OFF(ucp_worker_params_t, event_fd);
    OFF(ucp_worker_params_t, flags);
    OFF(ucp_worker_params_t, name);
    OFF(ucp_worker_params_t, am_alignment);
    OFF(ucp_worker_params_t, client_id);

    SIZE(ucp_err_handler_t);
    OFF(ucp_err_handler_t, cb);
    OFF(ucp_err_handler_t, arg);

    SIZE(ucs_sock_addr_t);
    OFF(ucs_sock_addr_t, addr);
    OFF(ucs_sock_addr_t, addrlen);

    SIZE(ucp_ep_params_t);
    OFF(ucp_ep_params_t, field_mask);
    OFF(ucp_ep_params_t, address);
    OFF(ucp_ep_params_t, err_mode);
    OFF(ucp_ep_params_t, err_handler);
    OFF(ucp_ep_params_t, user_data);
    OFF(ucp_ep_params_t, flags);
    OFF(ucp_ep_params_t, sockaddr);
    OFF(ucp_ep_params_t, conn_request);
    OFF(ucp_ep_params_t, name);
    OFF(ucp_ep_params_t, local_sockaddr);

    SIZE(ucp_mem_map_params_t);
    OFF(ucp_mem_map_params_t, field_mask);
    OFF(ucp_mem_map_params_t, address);
    OFF(ucp_mem_map_params_t, length);
    OFF(ucp_mem_map_params_t, flags);
    OFF(ucp_mem_map_params_t, prot);
    OFF(ucp_mem_map_params_t, memory_type);

    SIZE(ucp_mem_attr_t);
    OFF(ucp_mem_attr_t, field_mask);
    OFF(ucp_mem_attr_t, address);
    OFF(ucp_mem_attr_t, length);
    OFF(ucp_mem_attr_t, mem_type);

    SIZE(ucp_request_param_t);
    OFF(ucp_request_param_t, op_attr_mask);
    OFF(ucp_request_param_t, flags);
    OFF(ucp_request_param_t, request);
    OFF(ucp_request_param_t, cb);
    OFF(ucp_request_param_t, datatype);
    OFF(ucp_request_param_t, user_data);
    OFF(ucp_request_param_t, reply_buffer);
    OFF(ucp_request_param_t, memory_type);
    OFF(ucp_request_param_t, recv_info);
    OFF(ucp_request_param_t, memh);

    SIZE(struct pollfd);
    OFF(struct pollfd, fd);
    OFF(struct pollfd, events);
    OFF(struct pollfd, revents);

    CONST(UCP_PARAM_FIELD_FEATURES);
    CONST(UCP_PARAM_FIELD_NAME);
    CONST(UCP_PARAM_FIELD_MT_WORKERS_SHARED);
    CONST(UCP_FEATURE_RMA);
    CONST(UCP_FEATURE_WAKEUP);
    CONST(UCP_WORKER_PARAM_FIELD_THREAD_MODE);
    CONST(UCP_WORKER_PARAM_FIELD_NAME);
    CONST(UCS_THREAD_MODE_SINGLE);
    CONST(UCP_EP_PARAM_FIELD_REMOTE_ADDRESS);
    CONST(UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE);
    CONST(UCP_EP_PARAM_FIELD_ERR_HANDLER);
    CONST(UCP_EP_PARAM_FIELD_USER_DATA);
    CONST(UCP_EP_PARAM_FIELD_NAME);
    CONST(UCP_ERR_HANDLING_MODE_NONE);
    CONST(UCP_ERR_HANDLING_MODE_PEER);
    CONST(UCP_EP_CLOSE_FLAG_FORCE);
    CONST(UCP_MEM_MAP_PARAM_FIELD_ADDRESS);
    CONST(UCP_MEM_MAP_PARAM_FIELD_LENGTH);
    CONST(UCP_MEM_MAP_PARAM_FIELD_FLAGS);
    CONST(UCP_MEM_MAP_ALLOCATE);
    CONST(UCP_MEM_ATTR_FIELD_ADDRESS);
    CONST(UCP_MEM_ATTR_FIELD_LENGTH);
    CONST(UCP_OP_ATTR_FIELD_FLAGS);
    CONST(UCS_OK);
    CONST(UCS_INPROGRESS);
    CONST(UCS_ERR_LAST);
    CONST(UCS_ERR_BUSY);
    CONST(POLLIN);
    CONST(UCS_ERR_CANCELED);
    CONST(UCS_ERR_UNREACHABLE);
    CONST(UCS_ERR_ENDPOINT_TIMEOUT);
    CONST(UCS_ERR_CONNECTION_RESET);
    return 0;
}
