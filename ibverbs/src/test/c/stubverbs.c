/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 *
 * A stub libibverbs for tests and the FFM-cost benchmark: NOT a NIC. It lists one device ("stub0"), hands out
 * contexts whose ops table holds post_send / post_recv / poll_cq / req_notify_cq stubs, and records what was
 * posted so a test can check the binding's marshalling byte by byte. Every posted send completes at once with
 * IBV_WC_SUCCESS; a send with wr_id == 0xbad fails with EINVAL and sets bad_wr, as a provider would.
 * ibv_reg_mr and ibv_reg_dmabuf_mr record their arguments; a DMA-BUF registration with fd >= 0 succeeds unless
 * STUBVERBS_DMABUF=eopnotsupp (a NIC or kernel without DMA-BUF), and fd -1 is EBADF (NCCL's probe).
 * Asynchronous events: async_fd is a pipe's read end; stub_emit_async queues an event and writes a byte, so the
 * binding's poll(2) wakes; ibv_get_async_event reads the byte (EAGAIN when the fd is non-blocking and empty).
 * Completion channels: a channel's fd is a pipe's read end; req_notify_cq arms the CQ; the next completion a send
 * adds to an armed CQ on a channel writes the CQ's pointer to the pipe (once, then the CQ is disarmed, as a NIC
 * raises one event per arming); ibv_get_cq_event reads it back; ibv_ack_cq_events counts (stub_cq_acks).
 * Built with gcc against the installed rdma-core headers, so its struct layouts are the real ones.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/verbs.h>

#define MAXQ 1024
static struct ibv_device dev0;
static struct ibv_device *devlist[2];
static struct ibv_wc done[MAXQ];
static int ndone;
/* the last chain posted, flattened: one ibv_send_wr (next cleared) and its first SGE per entry */
static struct ibv_send_wr last_wr[16];
static struct ibv_sge last_sge[16];
static int nlast;
static long long posts;
static void stub_cq_event(struct ibv_cq *cq);

static int stub_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad) {
    nlast = 0;
    for (; wr; wr = wr->next) {
        if (wr->wr_id == 0xbad) { *bad = wr; return EINVAL; }
        if (nlast < 16) {
            last_wr[nlast] = *wr; last_wr[nlast].next = NULL;
            if (wr->num_sge > 0) last_sge[nlast] = wr->sg_list[0];
            nlast++;
        }
        if (ndone < MAXQ) {
            struct ibv_wc *c = &done[ndone++];
            memset(c, 0, sizeof(*c));
            c->wr_id = wr->wr_id; c->status = IBV_WC_SUCCESS; c->opcode = IBV_WC_RDMA_WRITE;
            c->byte_len = wr->num_sge > 0 ? wr->sg_list[0].length : 0; c->qp_num = qp->qp_num;
            c->imm_data = wr->imm_data; c->wc_flags = wr->opcode == IBV_WR_RDMA_WRITE_WITH_IMM ? IBV_WC_WITH_IMM : 0;
            stub_cq_event(qp->send_cq);
        }
        posts++;
    }
    return 0;
}

static int stub_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad) {
    (void) qp; (void) bad;
    for (; wr; wr = wr->next) posts++;
    return 0;
}

static int stub_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc) {
    (void) cq;
    int k = n < ndone ? n : ndone;
    memcpy(wc, done, k * sizeof(*wc));
    memmove(done, done + k, (ndone - k) * sizeof(*wc));
    ndone -= k;
    return k;
}

/* a CQ and a channel as the stub allocates them: the libibverbs struct first, the stub's state after it */
struct stub_cq { struct ibv_cq cq; int armed; unsigned acks; };
struct stub_ch { struct ibv_comp_channel ch; int wfd; };
static int stub_req_notify(struct ibv_cq *cq, int solicited) { (void) solicited; ((struct stub_cq *) cq)->armed = 1; return 0; }
static void stub_cq_event(struct ibv_cq *cq) {
    struct stub_cq *s = (struct stub_cq *) cq;
    if (!cq || !s->armed || !cq->channel) return;
    s->armed = 0;
    if (write(((struct stub_ch *) cq->channel)->wfd, &cq, sizeof(cq)) != sizeof(cq)) abort();
}
unsigned stub_cq_acks(struct ibv_cq *cq) { return ((struct stub_cq *) cq)->acks; }

/* The benchmark's C side: the same ops-table calls, looped in C. */
long long stub_c_loop(struct ibv_qp *qp, struct ibv_cq *cq, struct ibv_send_wr *wr, long long iters) {
    struct ibv_send_wr *bad;
    struct ibv_wc wc[1];
    long long got = 0;
    for (long long i = 0; i < iters; i++) {
        qp->context->ops.post_send(qp, wr, &bad);
        got += cq->context->ops.poll_cq(cq, 1, wc);
    }
    return got;
}

int stub_last_count(void) { return nlast; }
struct ibv_send_wr *stub_last_wr(int i) { return &last_wr[i]; }
struct ibv_sge *stub_last_sge(int i) { return &last_sge[i]; }
long long stub_posts(void) { return posts; }

struct ibv_device **ibv_get_device_list(int *num) {
    strcpy(dev0.name, "stub0");
    devlist[0] = &dev0; devlist[1] = NULL;
    if (num) *num = 1;
    return devlist;
}
void ibv_free_device_list(struct ibv_device **list) { (void) list; }
const char *ibv_get_device_name(struct ibv_device *d) { return d->name; }
__be64 ibv_get_device_guid(struct ibv_device *d) { (void) d; return __builtin_bswap64(0x0002c90300a1b2c3ULL); }

struct ibv_context *ibv_open_device(struct ibv_device *d) {
    struct ibv_context *c = calloc(1, sizeof(*c));
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) { free(c); return NULL; }
    c->async_fd = fds[0]; c->cmd_fd = fds[1]; /* cmd_fd: the stub's write end (no kernel command channel) */
    c->device = d;
    c->ops.post_send = stub_post_send; c->ops.post_recv = stub_post_recv;
    c->ops.poll_cq = stub_poll_cq; c->ops.req_notify_cq = stub_req_notify;
    return c;
}
int ibv_close_device(struct ibv_context *c) { close(c->async_fd); close(c->cmd_fd); free(c); return 0; }

int ibv_query_device(struct ibv_context *c, struct ibv_device_attr *a) {
    (void) c; memset(a, 0, sizeof(*a));
    strcpy(a->fw_ver, "stub"); a->node_guid = __builtin_bswap64(0x0002c90300a1b2c3ULL); a->max_qp = 1000;
    a->max_qp_wr = 4096; a->max_sge = 30; a->max_cq = 2000; a->max_cqe = 65536; a->max_mr = 4000;
    a->max_mr_size = 1ULL << 40; a->max_qp_rd_atom = 16; a->max_qp_init_rd_atom = 16; a->phys_port_cnt = 1;
    a->max_pd = 77; a->atomic_cap = IBV_ATOMIC_HCA;
    return 0;
}
int (ibv_query_port)(struct ibv_context *c, uint8_t port, struct _compat_ibv_port_attr *a) {
    (void) c;
    if (port != 1) return EINVAL;
    struct ibv_port_attr *p = (struct ibv_port_attr *) a;
    p->state = IBV_PORT_ACTIVE; p->max_mtu = IBV_MTU_4096; p->active_mtu = IBV_MTU_1024; p->lid = 0x1234;
    p->link_layer = IBV_LINK_LAYER_INFINIBAND;
    return 0;
}
int ibv_query_gid(struct ibv_context *c, uint8_t port, int index, union ibv_gid *gid) {
    (void) c; (void) port;
    if (index != 0) return EINVAL;
    for (int i = 0; i < 16; i++) gid->raw[i] = (uint8_t) (0xf0 + i);
    return 0;
}
struct ibv_pd *ibv_alloc_pd(struct ibv_context *c) {
    struct ibv_pd *pd = calloc(1, sizeof(*pd)); pd->context = c; pd->handle = 7; return pd;
}
int ibv_dealloc_pd(struct ibv_pd *pd) { free(pd); return 0; }
static uint32_t nextkey = 0x100;
static unsigned long long last_reg_mr[3];      /* addr, length, access */
static unsigned long long last_dmabuf[5];      /* offset, length, iova, fd, access */
static int reg_mr_calls, dmabuf_calls;
void stub_last_reg_mr(unsigned long long *out) { memcpy(out, last_reg_mr, sizeof last_reg_mr); }
void stub_last_dmabuf(unsigned long long *out) { memcpy(out, last_dmabuf, sizeof last_dmabuf); }
int stub_reg_mr_calls(void) { return reg_mr_calls; }
int stub_dmabuf_calls(void) { return dmabuf_calls; }
struct ibv_mr *(ibv_reg_mr)(struct ibv_pd *pd, void *addr, size_t len, int access) {
    reg_mr_calls++;
    last_reg_mr[0] = (unsigned long long) addr; last_reg_mr[1] = len; last_reg_mr[2] = (unsigned) access;
    if (access & ~0x1fff) { errno = EINVAL; return NULL; }
    struct ibv_mr *m = calloc(1, sizeof(*m));
    m->context = pd->context; m->pd = pd; m->addr = addr; m->length = len; m->lkey = nextkey++; m->rkey = nextkey++;
    return m;
}
struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t off, size_t len, uint64_t iova, int fd, int access) {
    dmabuf_calls++;
    last_dmabuf[0] = off; last_dmabuf[1] = len; last_dmabuf[2] = iova; last_dmabuf[3] = (unsigned) fd;
    last_dmabuf[4] = (unsigned) access;
    const char *mode = getenv("STUBVERBS_DMABUF");
    if (fd < 0) { errno = EBADF; return NULL; }
    if (mode && strcmp(mode, "eopnotsupp") == 0) { errno = EOPNOTSUPP; return NULL; }
    struct ibv_mr *m = calloc(1, sizeof(*m));
    m->context = pd->context; m->pd = pd; m->addr = (void *) iova; m->length = len;
    m->lkey = nextkey++; m->rkey = nextkey++;
    return m;
}
int ibv_dereg_mr(struct ibv_mr *m) { free(m); return 0; }
struct ibv_cq *ibv_create_cq(struct ibv_context *c, int cqe, void *ctx, struct ibv_comp_channel *ch, int vec) {
    (void) vec;
    if (cqe <= 0 || cqe > 65536) { errno = EINVAL; return NULL; }
    struct stub_cq *s = calloc(1, sizeof(*s));
    s->cq.context = c; s->cq.channel = ch; s->cq.cqe = cqe; s->cq.cq_context = ctx;
    return &s->cq;
}
int ibv_destroy_cq(struct ibv_cq *cq) { free(cq); return 0; }
struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *c) {
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) return NULL;
    struct stub_ch *s = calloc(1, sizeof(*s));
    s->ch.context = c; s->ch.fd = p[0]; s->wfd = p[1];
    return &s->ch;
}
int ibv_destroy_comp_channel(struct ibv_comp_channel *ch) {
    close(ch->fd); close(((struct stub_ch *) ch)->wfd); free(ch); return 0;
}
int ibv_get_cq_event(struct ibv_comp_channel *ch, struct ibv_cq **cq, void **ctx) {
    struct ibv_cq *got;
    ssize_t n = read(ch->fd, &got, sizeof(got));
    if (n != (ssize_t) sizeof(got)) { if (n >= 0) errno = EAGAIN; return -1; }
    *cq = got; *ctx = got->cq_context;
    return 0;
}
void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int n) { ((struct stub_cq *) cq)->acks += n; }
static uint32_t nextqpn = 0x40;
struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *a) {
    if (a->qp_type != IBV_QPT_RC && a->qp_type != IBV_QPT_UD) { errno = EOPNOTSUPP; return NULL; }
    if (a->cap.max_send_wr > 4096) { errno = EINVAL; return NULL; }
    struct ibv_qp *qp = calloc(1, sizeof(*qp));
    qp->context = pd->context; qp->pd = pd; qp->send_cq = a->send_cq; qp->recv_cq = a->recv_cq;
    qp->qp_num = nextqpn++; qp->state = IBV_QPS_RESET; qp->qp_type = a->qp_type;
    return qp;
}
static struct ibv_qp_attr lastattr;
static int lastmask;
int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask) {
    if ((mask & IBV_QP_STATE) && a->qp_state == IBV_QPS_RTS && qp->state != IBV_QPS_RTR) return EINVAL;
    if (mask & IBV_QP_STATE) qp->state = a->qp_state;
    lastattr = *a; lastmask = mask;
    return 0;
}
/*
 * The last ibv_qp_attr's address vector as C sees it, in a fixed packed order: dgid[16], flow_label (u32 LE),
 * sgid_index, hop_limit, traffic_class, is_global, sl, dlid (u16 LE), port_num; then the mask (u32 LE).
 */
void stub_last_av(unsigned char *out) {
    const struct ibv_ah_attr *ah = &lastattr.ah_attr;
    memcpy(out, ah->grh.dgid.raw, 16);
    memcpy(out + 16, &ah->grh.flow_label, 4);
    out[20] = ah->grh.sgid_index; out[21] = ah->grh.hop_limit; out[22] = ah->grh.traffic_class;
    out[23] = ah->is_global; out[24] = ah->sl;
    memcpy(out + 25, &ah->dlid, 2);
    out[27] = ah->port_num;
    memcpy(out + 28, &lastmask, 4);
}
int ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask, struct ibv_qp_init_attr *init) {
    (void) mask; (void) init;
    *a = lastattr; a->qp_state = qp->state;
    return 0;
}
int ibv_destroy_qp(struct ibv_qp *qp) { free(qp); return 0; }
static struct ibv_async_event async_q[16];
static int async_n, async_acks;
/* Queues one event: type with its QP (QP events), CQ (CQ_ERR) or port (port events); wakes async_fd. */
int stub_emit_async(struct ibv_context *c, int type, struct ibv_qp *qp, struct ibv_cq *cq, int port) {
    if (async_n == 16) return ENOSPC;
    struct ibv_async_event *e = &async_q[async_n++];
    memset(e, 0, sizeof(*e));
    e->event_type = type;
    if (qp) e->element.qp = qp; else if (cq) e->element.cq = cq; else e->element.port_num = port;
    char b = 1;
    return write(c->cmd_fd, &b, 1) == 1 ? 0 : errno;
}
int stub_async_acks(void) { return async_acks; }
int ibv_get_async_event(struct ibv_context *c, struct ibv_async_event *e) {
    char b;
    if (read(c->async_fd, &b, 1) != 1) return -1; /* errno from read: EAGAIN on a non-blocking empty fd */
    if (async_n == 0) { errno = EAGAIN; return -1; }
    *e = async_q[0];
    memmove(async_q, async_q + 1, (--async_n) * sizeof(*e));
    return 0;
}
void ibv_ack_async_event(struct ibv_async_event *e) { (void) e; async_acks++; }
const char *ibv_wc_status_str(enum ibv_wc_status s) { return s == IBV_WC_SUCCESS ? "success" : "stub error"; }
