/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 *
 * A stub librdmacm for tests: NOT a connection manager and no NIC. Event channels are pipes (so the binding's
 * poll(2) wakes); the calls queue the events a kernel CM would send between two ids of this process:
 * resolve_addr -> ADDR_RESOLVED, resolve_route -> ROUTE_RESOLVED, connect -> CONNECT_REQUEST on the listener's
 * channel (a new id, the REQ's private data copied), accept -> CONNECT_RESPONSE to the connecting id (the REP's
 * private data), establish -> ESTABLISHED to the accepted id. It records the qp_num of each connect/accept.
 * Built with gcc against the installed rdma-core headers, so its struct layouts are the real ones.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <rdma/rdma_cma.h>

struct chan { struct rdma_event_channel ch; int wfd; struct rdma_cm_event *q[32]; int n; };
static struct rdma_cm_id *listener;
static struct rdma_cm_id *connecting;   /* the active id waiting for its REP */
static struct rdma_cm_id *accepted;     /* the passive id created by CONNECT_REQUEST */
static unsigned last_connect_qpn, last_accept_qpn;
unsigned stub_cm_connect_qpn(void) { return last_connect_qpn; }
unsigned stub_cm_accept_qpn(void) { return last_accept_qpn; }

static int push(struct rdma_event_channel *ch, struct rdma_cm_id *id, struct rdma_cm_id *lid, int type,
                const void *pd, int len) {
    struct chan *c = (struct chan *) ch;
    if (c->n == 32) return ENOSPC;
    struct rdma_cm_event *e = calloc(1, sizeof(*e));
    e->id = id; e->listen_id = lid; e->event = type; e->status = 0;
    if (len > 0) {
        void *copy = malloc(len); memcpy(copy, pd, len);
        e->param.conn.private_data = copy; e->param.conn.private_data_len = (uint8_t) len;
    }
    c->q[c->n++] = e;
    char b = 1;
    return write(c->wfd, &b, 1) == 1 ? 0 : errno;
}

struct rdma_event_channel *rdma_create_event_channel(void) {
    struct chan *c = calloc(1, sizeof(*c));
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) { free(c); return NULL; }
    c->ch.fd = fds[0]; c->wfd = fds[1];
    return &c->ch;
}
void rdma_destroy_event_channel(struct rdma_event_channel *ch) {
    struct chan *c = (struct chan *) ch;
    close(c->ch.fd); close(c->wfd); free(c);
}
int rdma_create_id(struct rdma_event_channel *ch, struct rdma_cm_id **id, void *ctx, enum rdma_port_space ps) {
    if (ps != RDMA_PS_TCP) { errno = EINVAL; return -1; }
    struct rdma_cm_id *i = calloc(1, sizeof(**id));
    i->channel = ch; i->context = ctx; i->ps = ps;
    *id = i;
    return 0;
}
int rdma_destroy_id(struct rdma_cm_id *id) { free(id); return 0; }
int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr) {
    if (addr->sa_family != AF_INET) { errno = EAFNOSUPPORT; return -1; }
    memcpy(&id->route.addr.src_addr, addr, sizeof(struct sockaddr_in));
    return 0;
}
int rdma_listen(struct rdma_cm_id *id, int backlog) { (void) backlog; listener = id; return 0; }
int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src, struct sockaddr *dst, int ms) {
    (void) src; (void) ms;
    if (dst->sa_family != AF_INET) { errno = EAFNOSUPPORT; return -1; }
    memcpy(&id->route.addr.dst_addr, dst, sizeof(struct sockaddr_in));
    return push(id->channel, id, NULL, RDMA_CM_EVENT_ADDR_RESOLVED, NULL, 0) ? -1 : 0;
}
int rdma_resolve_route(struct rdma_cm_id *id, int ms) {
    (void) ms;
    return push(id->channel, id, NULL, RDMA_CM_EVENT_ROUTE_RESOLVED, NULL, 0) ? -1 : 0;
}
int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *p) {
    if (!listener) { errno = ECONNREFUSED; return -1; }
    last_connect_qpn = p->qp_num;
    connecting = id;
    accepted = calloc(1, sizeof(*accepted));
    accepted->channel = listener->channel; accepted->ps = listener->ps;
    return push(listener->channel, accepted, listener, RDMA_CM_EVENT_CONNECT_REQUEST, p->private_data,
                p->private_data_len) ? -1 : 0;
}
int rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *p) {
    if (id != accepted || !connecting) { errno = EINVAL; return -1; }
    last_accept_qpn = p->qp_num;
    return push(connecting->channel, connecting, NULL, RDMA_CM_EVENT_CONNECT_RESPONSE, p->private_data,
                p->private_data_len) ? -1 : 0;
}
int rdma_establish(struct rdma_cm_id *id) {
    if (id != connecting) { errno = EINVAL; return -1; }
    return push(accepted->channel, accepted, NULL, RDMA_CM_EVENT_ESTABLISHED, NULL, 0) ? -1 : 0;
}
int rdma_reject(struct rdma_cm_id *id, const void *pd, uint8_t len) {
    (void) id;
    return push(connecting->channel, connecting, NULL, RDMA_CM_EVENT_REJECTED, pd, len) ? -1 : 0;
}
int rdma_disconnect(struct rdma_cm_id *id) { (void) id; return 0; }
int rdma_get_cm_event(struct rdma_event_channel *ch, struct rdma_cm_event **event) {
    struct chan *c = (struct chan *) ch;
    char b;
    if (read(c->ch.fd, &b, 1) != 1) return -1;
    if (c->n == 0) { errno = EAGAIN; return -1; }
    *event = c->q[0];
    memmove(c->q, c->q + 1, (--c->n) * sizeof(c->q[0]));
    return 0;
}
int rdma_ack_cm_event(struct rdma_cm_event *e) { free((void *) e->param.conn.private_data); free(e); return 0; }
