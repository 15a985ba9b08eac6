/*
 * kvledger C baseline: a plain C loop of UCX put/get (ucp_put_nbx / ucp_get_nbx).
 *
 * The initiator and the target each have their own UCP context, worker and a page-aligned
 * region registered with ucp_mem_map; the initiator's endpoint uses peer error handling and
 * UCX tcp is pinned to lo, like the Java engine. Transfers of each size walk the region block by
 * block with at most WINDOW requests outstanding; every round ends with an endpoint flush
 * (remote completion). The median of ROUNDS rounds is reported.
 *
 * With --procs 2 the target is a forked child process that progresses its worker and otherwise
 * sleeps on the worker's event descriptor (emulated RMA needs the target's progress; one-sided
 * shared memory does not); with --procs 1 one thread progresses both workers.
 *
 * --err-mode peer (the default) creates the endpoint with UCP_ERR_HANDLING_MODE_PEER. UCX 1.13
 * has no peer-failure support in its shared-memory transports (sysv, posix), so on a machine
 * without RDMA devices that mode runs over tcp on lo; --err-mode none allows shared memory.
 *
 * --alloc ucx (the default, as the Java engine) lets ucp_mem_map allocate the regions
 * (UCP_MEM_MAP_ALLOCATE: shared memory segments the peer maps, so put/get are one-sided copies);
 * --alloc user registers posix_memalign memory (RMA then emulated with active messages that the
 * target must progress).
 *
 * usage: ucx_bench [--procs 1|2] [--window N] [--err-mode peer|none] [--alloc ucx|user]
 *                  [region_bytes] [bytes_per_round] [rounds] [size ...]
 * output: one line per op and size:
 *         "ucx-<put|get>-<procs>proc-<err-mode> <size_bytes> <median_GBps> <min> <max>"
 * exit status: 0 ok, 1 UCX or data error, 2 usage error
 */
#define _GNU_SOURCE
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <ucp/api/ucp.h>

#define CHECK(call) do { ucs_status_t st_ = (call); if (st_ != UCS_OK) { \
    fprintf(stderr, "ucx_bench: %s failed: %s\n", #call, ucs_status_string(st_)); exit(1); } } while (0)

typedef struct {
    ucp_context_h ctx;
    ucp_worker_h worker;
    ucp_mem_h memh;
    char *base;
    size_t len;
    int ucx_alloc;
} side_t;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void fill(char *p, size_t n, int zero)
{
    for (size_t i = 0; i < n; i++) {
        p[i] = zero ? 0 : (char)(i * 31 + 7);
    }
}

static size_t mismatches(const char *p, size_t n)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        bad += p[i] != (char)(i * 31 + 7);
    }
    return bad;
}

static void side_open(side_t *s, size_t len)
{
    ucp_config_t *cfg;
    CHECK(ucp_config_read(NULL, NULL, &cfg));
    CHECK(ucp_config_modify(cfg, "NET_DEVICES", "lo"));
    ucp_params_t p;
    memset(&p, 0, sizeof(p));
    p.field_mask = UCP_PARAM_FIELD_FEATURES;
    p.features = UCP_FEATURE_RMA | UCP_FEATURE_WAKEUP;
    CHECK(ucp_init(&p, cfg, &s->ctx));
    ucp_config_release(cfg);
    ucp_worker_params_t wp;
    memset(&wp, 0, sizeof(wp));
    wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wp.thread_mode = UCS_THREAD_MODE_SINGLE;
    CHECK(ucp_worker_create(s->ctx, &wp, &s->worker));
    s->len = len;
    ucp_mem_map_params_t mp;
    memset(&mp, 0, sizeof(mp));
    mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    mp.length = len;
    if (s->ucx_alloc) {
        /* let UCX allocate (shared memory here), as the Java engine does */
        mp.field_mask |= UCP_MEM_MAP_PARAM_FIELD_FLAGS;
        mp.address = NULL;
        mp.flags = UCP_MEM_MAP_ALLOCATE;
        CHECK(ucp_mem_map(s->ctx, &mp, &s->memh));
        ucp_mem_attr_t attr;
        attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS | UCP_MEM_ATTR_FIELD_LENGTH;
        CHECK(ucp_mem_query(s->memh, &attr));
        s->base = attr.address;
    } else {
        if (posix_memalign((void **)&s->base, 4096, len)) {
            fprintf(stderr, "ucx_bench: cannot allocate %zu bytes\n", len);
            exit(1);
        }
        mp.address = s->base;
        CHECK(ucp_mem_map(s->ctx, &mp, &s->memh));
    }
    memset(s->base, 0, len);
}

static void side_close(side_t *s)
{
    ucp_mem_unmap(s->ctx, s->memh); /* frees the memory when UCX allocated it */
    ucp_worker_destroy(s->worker);
    ucp_cleanup(s->ctx);
    if (!s->ucx_alloc) {
        free(s->base);
    }
}

static void write_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w <= 0) { perror("ucx_bench: write"); exit(1); }
        p += w; n -= (size_t)w;
    }
}

static void read_all(int fd, void *buf, size_t n)
{
    char *p = buf;
    while (n > 0) {
        ssize_t r = read(fd, p, n);
        if (r <= 0) { fprintf(stderr, "ucx_bench: peer pipe closed\n"); exit(1); }
        p += r; n -= (size_t)r;
    }
}

/* The target's descriptor: worker address, packed rkey, base address. */
static void send_desc(int fd, side_t *s)
{
    ucp_address_t *addr;
    size_t addr_len, rkey_len;
    void *rkey;
    CHECK(ucp_worker_get_address(s->worker, &addr, &addr_len));
    CHECK(ucp_rkey_pack(s->ctx, s->memh, &rkey, &rkey_len));
    uint64_t base = (uint64_t)(uintptr_t)s->base;
    write_all(fd, &addr_len, sizeof(addr_len));
    write_all(fd, addr, addr_len);
    write_all(fd, &rkey_len, sizeof(rkey_len));
    write_all(fd, rkey, rkey_len);
    write_all(fd, &base, sizeof(base));
    ucp_rkey_buffer_release(rkey);
    ucp_worker_release_address(s->worker, addr);
}

static void wait_req(void *req, ucp_worker_h w1, ucp_worker_h w2)
{
    if (req == NULL) {
        return;
    }
    if (UCS_PTR_IS_ERR(req)) {
        fprintf(stderr, "ucx_bench: operation failed: %s\n", ucs_status_string(UCS_PTR_STATUS(req)));
        exit(1);
    }
    ucs_status_t st;
    while ((st = ucp_request_check_status(req)) == UCS_INPROGRESS) {
        ucp_worker_progress(w1);
        if (w2) {
            ucp_worker_progress(w2);
        }
    }
    ucp_request_free(req);
    if (st != UCS_OK) {
        fprintf(stderr, "ucx_bench: request failed: %s\n", ucs_status_string(st));
        exit(1);
    }
}

/*
 * The target: progress until nothing happens, then sleep in poll(2) on the worker's event
 * descriptor and the command pipe (as the Java engine's idle worker does), so that it does not
 * take a core from the initiator when the transfers need nothing from it (one-sided shared memory).
 */
static void target_loop(int rd, int wr, side_t *s)
{
    int efd;
    CHECK(ucp_worker_get_efd(s->worker, &efd));
    struct pollfd pfd[2] = { { .fd = rd, .events = POLLIN }, { .fd = efd, .events = POLLIN } };
    for (;;) {
        while (ucp_worker_progress(s->worker) != 0) {
        }
        if (poll(pfd, 1, 0) <= 0) {
            if (ucp_worker_arm(s->worker) == UCS_OK) {
                poll(pfd, 2, 100);
            }
            continue;
        }
        {
            char cmd;
            read_all(rd, &cmd, 1);
            if (cmd == 'v') {           /* verify the region the initiator put into */
                uint64_t n;
                read_all(rd, &n, sizeof(n));
                uint64_t bad = mismatches(s->base, n);
                write_all(wr, &bad, sizeof(bad));
            } else if (cmd == 'f') {    /* fill with the pattern, for gets */
                fill(s->base, s->len, 0);
                write_all(wr, "k", 1);
            } else if (cmd == 'z') {
                fill(s->base, s->len, 1);
                write_all(wr, "k", 1);
            } else {
                return;
            }
        }
    }
}

int main(int argc, char **argv)
{
    int procs = 1, window = 16, ai = 1, peer_mode = 1, ucx_alloc = 1;
    while (ai < argc && strncmp(argv[ai], "--", 2) == 0) {
        if (strcmp(argv[ai], "--procs") == 0 && ai + 1 < argc) {
            procs = atoi(argv[ai + 1]);
        } else if (strcmp(argv[ai], "--window") == 0 && ai + 1 < argc) {
            window = atoi(argv[ai + 1]);
        } else if (strcmp(argv[ai], "--err-mode") == 0 && ai + 1 < argc
                   && (strcmp(argv[ai + 1], "peer") == 0 || strcmp(argv[ai + 1], "none") == 0)) {
            peer_mode = strcmp(argv[ai + 1], "peer") == 0;
        } else if (strcmp(argv[ai], "--alloc") == 0 && ai + 1 < argc
                   && (strcmp(argv[ai + 1], "ucx") == 0 || strcmp(argv[ai + 1], "user") == 0)) {
            ucx_alloc = strcmp(argv[ai + 1], "ucx") == 0;
        } else {
            fprintf(stderr, "usage: ucx_bench [--procs 1|2] [--window N] [--err-mode peer|none] [--alloc ucx|user] [region] [bytes_per_round] [rounds] [size ...]\n");
            return 2;
        }
        ai += 2;
    }
    size_t region = argc > ai ? strtoull(argv[ai], NULL, 0) : (64u << 20);
    size_t per_round = argc > ai + 1 ? strtoull(argv[ai + 1], NULL, 0) : (512u << 20);
    int rounds = argc > ai + 2 ? atoi(argv[ai + 2]) : 5;
    size_t default_sizes[] = {4096, 65536, 1u << 20, 64u << 20};
    int nsizes = argc > ai + 3 ? argc - (ai + 3) : 4;
    if ((procs != 1 && procs != 2) || window < 1 || window > 4096 || rounds < 1 || rounds > 99) {
        fprintf(stderr, "usage: ucx_bench [--procs 1|2] [--window 1..4096] [--err-mode peer|none] [--alloc ucx|user] [region] [bytes_per_round] [rounds 1..99] [size ...]\n");
        return 2;
    }

    int to_child[2], to_parent[2];
    if (pipe(to_child) || pipe(to_parent)) {
        perror("ucx_bench: pipe");
        return 1;
    }
    side_t target, init;
    target.ucx_alloc = ucx_alloc;
    init.ucx_alloc = ucx_alloc;
    pid_t child = -1;
    if (procs == 2) {
        child = fork();
        if (child < 0) { perror("ucx_bench: fork"); return 1; }
        if (child == 0) {
            close(to_child[1]);
            close(to_parent[0]);
            side_open(&target, region);
            send_desc(to_parent[1], &target);
            target_loop(to_child[0], to_parent[1], &target);
            side_close(&target);
            _exit(0);
        }
    } else {
        side_open(&target, region);
        send_desc(to_parent[1], &target);
    }
    if (procs == 2) {
        close(to_child[0]);
        close(to_parent[1]);
    }
    side_open(&init, region);
    ucp_worker_h peer_worker = procs == 1 ? target.worker : NULL;

    size_t addr_len, rkey_len;
    uint64_t rbase;
    read_all(to_parent[0], &addr_len, sizeof(addr_len));
    void *addr = malloc(addr_len);
    read_all(to_parent[0], addr, addr_len);
    read_all(to_parent[0], &rkey_len, sizeof(rkey_len));
    void *rkey_buf = malloc(rkey_len);
    read_all(to_parent[0], rkey_buf, rkey_len);
    read_all(to_parent[0], &rbase, sizeof(rbase));

    ucp_ep_params_t ep_params;
    memset(&ep_params, 0, sizeof(ep_params));
    ep_params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    ep_params.address = addr;
    ep_params.err_mode = peer_mode ? UCP_ERR_HANDLING_MODE_PEER : UCP_ERR_HANDLING_MODE_NONE;
    ucp_ep_h ep;
    CHECK(ucp_ep_create(init.worker, &ep_params, &ep));
    ucp_rkey_h rkey;
    CHECK(ucp_ep_rkey_unpack(ep, rkey_buf, &rkey));

    void **ring = calloc((size_t)window, sizeof(void *));
    ucp_request_param_t rp;
    memset(&rp, 0, sizeof(rp));
    double results[99];
    for (int op = 0; op < 2; op++) {        /* 0 = put, 1 = get */
        if (op == 0) {
            fill(init.base, region, 0);
        } else {
            fill(init.base, region, 1);
            if (procs == 2) {
                char k;
                write_all(to_child[1], "f", 1);
                read_all(to_parent[0], &k, 1);
            } else {
                fill(target.base, region, 0);
            }
        }
        for (int si = 0; si < nsizes; si++) {
            size_t size = argc > ai + 3 ? strtoull(argv[ai + 3 + si], NULL, 0) : default_sizes[si];
            if (size == 0 || size > region) {
                fprintf(stderr, "ucx_bench: size %zu must be in 1..%zu\n", size, region);
                return 2;
            }
            size_t blocks = region / size;
            size_t copies = per_round / size < 4 ? 4 : per_round / size;
            for (int r = -1; r < rounds; r++) {     /* round -1 is warm-up */
                double t0 = now_s();
                size_t head = 0;
                for (size_t i = 0; i < copies; i++) {
                    size_t off = (i % blocks) * size;
                    void *slot = ring[head];
                    if (slot) {
                        wait_req(slot, init.worker, peer_worker);
                        ring[head] = NULL;
                    }
                    void *req = op == 0
                            ? ucp_put_nbx(ep, init.base + off, size, rbase + off, rkey, &rp)
                            : ucp_get_nbx(ep, init.base + off, size, rbase + off, rkey, &rp);
                    if (UCS_PTR_IS_ERR(req)) {
                        wait_req(req, init.worker, peer_worker);
                    }
                    ring[head] = req;
                    head = (head + 1) % (size_t)window;
                }
                for (int i = 0; i < window; i++) {
                    wait_req(ring[i], init.worker, peer_worker);
                    ring[i] = NULL;
                }
                wait_req(ucp_ep_flush_nbx(ep, &rp), init.worker, peer_worker);
                double dt = now_s() - t0;
                if (r >= 0) {
                    results[r] = (double)copies * size / dt / 1e9;
                }
            }
            uint64_t covered = blocks * size, bad;
            if (op == 0 && procs == 2) {
                write_all(to_child[1], "v", 1);
                write_all(to_child[1], &covered, sizeof(covered));
                read_all(to_parent[0], &bad, sizeof(bad));
            } else {
                bad = mismatches(op == 0 ? target.base : init.base, covered);
            }
            if (bad != 0) {
                fprintf(stderr, "ucx_bench: %llu bytes differ after %s of size %zu\n",
                        (unsigned long long)bad, op == 0 ? "put" : "get", size);
                return 1;
            }
            qsort(results, (size_t)rounds, sizeof(double), cmp_double);
            printf("ucx-%s-%dproc-%s%s %zu %.3f %.3f %.3f\n", op == 0 ? "put" : "get", procs,
                   peer_mode ? "peer" : "none", ucx_alloc ? "" : "-user", size,
                   results[rounds / 2], results[0], results[rounds - 1]);
            fflush(stdout);
            if (op == 0 && procs == 2) {
                char k;
                write_all(to_child[1], "z", 1);
                read_all(to_parent[0], &k, 1);
            } else if (op == 0) {
                fill(target.base, region, 1);
            }
        }
    }
    ucp_rkey_destroy(rkey);
    ucp_request_param_t cp;
    memset(&cp, 0, sizeof(cp));
    void *close_req = ucp_ep_close_nbx(ep, &cp);
    if (close_req != NULL && !UCS_PTR_IS_ERR(close_req)) {
        while (ucp_request_check_status(close_req) == UCS_INPROGRESS) {
            ucp_worker_progress(init.worker);
            if (peer_worker) {
                ucp_worker_progress(peer_worker);
            }
        }
        ucp_request_free(close_req);
    }
    side_close(&init);
    if (procs == 2) {
        write_all(to_child[1], "q", 1);
        int status;
        waitpid(child, &status, 0);
    } else {
        side_close(&target);
    }
    free(ring);
    free(addr);
    free(rkey_buf);
    return 0;
}
