/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 */
package io.gdrkit.ibverbs;

import static io.gdrkit.ibverbs.CLayout.opaque;
import static io.gdrkit.ibverbs.CLayout.struct;
import static io.gdrkit.ibverbs.CLayout.union;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemoryLayout.PathElement;
import java.lang.foreign.StructLayout;
import java.lang.invoke.VarHandle;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The libibverbs structs the binding touches, written from {@code <infiniband/verbs.h>} (rdma-core) for x86-64
 * Linux. {@code AbiCheckTest} compiles a C program against the installed headers and compares every size and offset
 * here with what the compiler says; the provider refuses a libibverbs it was not checked against
 * ({@link IbvLibrary#checkAbi}).
 */
public final class IbvLayouts {
    private IbvLayouts() {
    }

    private static MemoryLayout u8(final String n) {
        return JAVA_BYTE.withName(n);
    }

    private static MemoryLayout u16(final String n) {
        return JAVA_SHORT.withName(n);
    }

    private static MemoryLayout u32(final String n) {
        return JAVA_INT.withName(n);
    }

    private static MemoryLayout u64(final String n) {
        return JAVA_LONG.withName(n);
    }

    private static MemoryLayout ptr(final String n) {
        return ADDRESS.withName(n);
    }

    /*
     * struct ibv_sge (16 bytes)
     *  0      8      12     16
     *  +------+------+------+
     *  | addr |length| lkey |
     *  +------+------+------+
     */
    public static final StructLayout SGE = struct("ibv_sge", u64("addr"), u32("length"), u32("lkey"));

    public static final StructLayout MW_BIND_INFO = struct("ibv_mw_bind_info", ptr("mr"), u64("addr"),
        u64("length"), u32("mw_access_flags"));

    /*
     * struct ibv_send_wr (128 bytes)
     *  0      8     16       24      28     32         36        40                          72         80   128
     *  +------+-----+--------+-------+------+----------+---------+---------------------------+----------+-...-+
     *  |wr_id |next |sg_list |num_sge|opcode|send_flags|imm/inv  | wr: rdma|atomic|ud (32)   | xrc srqn | bind_mw|tso
     *  +------+-----+--------+-------+------+----------+---------+---------------------------+----------+-...-+
     */
    public static final StructLayout SEND_WR = struct("ibv_send_wr", u64("wr_id"), ptr("next"), ptr("sg_list"),
        u32("num_sge"), u32("opcode"), u32("send_flags"),
        union("$imm", u32("imm_data"), u32("invalidate_rkey")),
        union("wr",
            struct("rdma", u64("remote_addr"), u32("rkey")),
            struct("atomic", u64("remote_addr"), u64("compare_add"), u64("swap"), u32("rkey")),
            struct("ud", ptr("ah"), u32("remote_qpn"), u32("remote_qkey"))),
        union("qp_type", struct("xrc", u32("remote_srqn"))),
        union("$ext",
            struct("bind_mw", ptr("mw"), u32("rkey"), MW_BIND_INFO.withName("bind_info")),
            struct("tso", ptr("hdr"), u16("hdr_sz"), u16("mss"))));

    /* struct ibv_recv_wr (32 bytes): wr_id | next | sg_list | num_sge */
    public static final StructLayout RECV_WR = struct("ibv_recv_wr", u64("wr_id"), ptr("next"), ptr("sg_list"),
        u32("num_sge"));

    /*
     * struct ibv_wc (48 bytes)
     *  0     8      12     16         20       24      28     32     36       40         42   44 45
     *  +-----+------+------+----------+--------+-------+------+------+--------+----------+----+--+--+
     *  |wr_id|status|opcode|vendor_err|byte_len|imm/inv|qp_num|src_qp|wc_flags|pkey_index|slid|sl|dp|
     *  +-----+------+------+----------+--------+-------+------+------+--------+----------+----+--+--+
     */
    public static final StructLayout WC = struct("ibv_wc", u64("wr_id"), u32("status"), u32("opcode"),
        u32("vendor_err"), u32("byte_len"), union("$imm", u32("imm_data"), u32("invalidated_rkey")),
        u32("qp_num"), u32("src_qp"), u32("wc_flags"), u16("pkey_index"), u16("slid"), u8("sl"),
        u8("dlid_path_bits"));

    public static final StructLayout QP_CAP = struct("ibv_qp_cap", u32("max_send_wr"), u32("max_recv_wr"),
        u32("max_send_sge"), u32("max_recv_sge"), u32("max_inline_data"));

    public static final StructLayout QP_INIT_ATTR = struct("ibv_qp_init_attr", ptr("qp_context"), ptr("send_cq"),
        ptr("recv_cq"), ptr("srq"), QP_CAP.withName("cap"), u32("qp_type"), u32("sq_sig_all"));

    private static final StructLayout GLOBAL_ROUTE = struct("ibv_global_route",
        opaque("dgid", 16, 8), u32("flow_label"), u8("sgid_index"), u8("hop_limit"), u8("traffic_class"));

    public static final StructLayout AH_ATTR = struct("ibv_ah_attr", GLOBAL_ROUTE.withName("grh"), u16("dlid"),
        u8("sl"), u8("src_path_bits"), u8("static_rate"), u8("is_global"), u8("port_num"));

    public static final StructLayout QP_ATTR = struct("ibv_qp_attr", u32("qp_state"), u32("cur_qp_state"),
        u32("path_mtu"), u32("path_mig_state"), u32("qkey"), u32("rq_psn"), u32("sq_psn"), u32("dest_qp_num"),
        u32("qp_access_flags"), QP_CAP.withName("cap"), AH_ATTR.withName("ah_attr"), AH_ATTR.withName("alt_ah_attr"),
        u16("pkey_index"), u16("alt_pkey_index"), u8("en_sqd_async_notify"), u8("sq_draining"),
        u8("max_rd_atomic"), u8("max_dest_rd_atomic"), u8("min_rnr_timer"), u8("port_num"), u8("timeout"),
        u8("retry_cnt"), u8("rnr_retry"), u8("alt_port_num"), u8("alt_timeout"), u32("rate_limit"));

    public static final StructLayout PORT_ATTR = struct("ibv_port_attr", u32("state"), u32("max_mtu"),
        u32("active_mtu"), u32("gid_tbl_len"), u32("port_cap_flags"), u32("max_msg_sz"), u32("bad_pkey_cntr"),
        u32("qkey_viol_cntr"), u16("pkey_tbl_len"), u16("lid"), u16("sm_lid"), u8("lmc"), u8("max_vl_num"),
        u8("sm_sl"), u8("subnet_timeout"), u8("init_type_reply"), u8("active_width"), u8("active_speed"),
        u8("phys_state"), u8("link_layer"), u8("flags"), u16("port_cap_flags2"));

    /**
     * Structs that newer rdma-core releases extend at their end, with how many bytes more the binding allocates for
     * them: rdma-core 47 added {@code uint32_t active_speed_ex} to {@code ibv_port_attr} (52 -> 56 bytes). The binding
     * reads only the members both layouts share, so a host struct up to that much larger is accepted by the check.
     */
    public static final java.util.Map<String, Long> GROWS_AT_END = java.util.Map.of("ibv_port_attr", 16L);

    /** Bytes to allocate for an {@code ibv_port_attr}: the layout plus room for newer members. */
    static final long PORT_ATTR_ALLOC = PORT_ATTR.byteSize() + GROWS_AT_END.get("ibv_port_attr");

    public static final StructLayout DEVICE_ATTR = struct("ibv_device_attr", opaque("fw_ver", 64, 1),
        u64("node_guid"), u64("sys_image_guid"), u64("max_mr_size"), u64("page_size_cap"), u32("vendor_id"),
        u32("vendor_part_id"), u32("hw_ver"), u32("max_qp"), u32("max_qp_wr"), u32("device_cap_flags"),
        u32("max_sge"), u32("max_sge_rd"), u32("max_cq"), u32("max_cqe"), u32("max_mr"), u32("max_pd"),
        u32("max_qp_rd_atom"), u32("max_ee_rd_atom"), u32("max_res_rd_atom"), u32("max_qp_init_rd_atom"),
        u32("max_ee_init_rd_atom"), u32("atomic_cap"), u32("max_ee"), u32("max_rdd"), u32("max_mw"),
        u32("max_raw_ipv6_qp"), u32("max_raw_ethy_qp"), u32("max_mcast_grp"), u32("max_mcast_qp_attach"),
        u32("max_total_mcast_qp_attach"), u32("max_ah"), u32("max_fmr"), u32("max_map_per_fmr"), u32("max_srq"),
        u32("max_srq_wr"), u32("max_srq_sge"), u16("max_pkeys"), u8("local_ca_ack_delay"), u8("phys_port_cnt"));

    /** The ops table inside struct ibv_context, in header order: the data path calls through it. */
    static final List<String> OPS = List.of("_compat_query_device", "_compat_query_port", "_compat_alloc_pd",
        "_compat_dealloc_pd", "_compat_reg_mr", "_compat_rereg_mr", "_compat_dereg_mr", "alloc_mw", "bind_mw",
        "dealloc_mw", "_compat_create_cq", "poll_cq", "req_notify_cq", "_compat_cq_event", "_compat_resize_cq",
        "_compat_destroy_cq", "_compat_create_srq", "_compat_modify_srq", "_compat_query_srq",
        "_compat_destroy_srq", "post_srq_recv", "_compat_create_qp", "_compat_query_qp", "_compat_modify_qp",
        "_compat_destroy_qp", "post_send", "post_recv", "_compat_create_ah", "_compat_destroy_ah",
        "_compat_attach_mcast", "_compat_detach_mcast", "_compat_async_event");

    public static final StructLayout CONTEXT = struct("ibv_context", ptr("device"),
        struct("ops", OPS.stream().map(IbvLayouts::ptr).toArray(MemoryLayout[]::new)), u32("cmd_fd"),
        u32("async_fd"), u32("num_comp_vectors"), opaque("mutex", 40, 8), ptr("abi_compat"));

    public static final StructLayout PD = struct("ibv_pd", ptr("context"), u32("handle"));
    public static final StructLayout MR = struct("ibv_mr", ptr("context"), ptr("pd"), ptr("addr"), u64("length"),
        u32("handle"), u32("lkey"), u32("rkey"));
    public static final StructLayout CQ = struct("ibv_cq", ptr("context"), ptr("channel"), ptr("cq_context"),
        u32("handle"), u32("cqe"), opaque("mutex", 40, 8), opaque("cond", 48, 8), u32("comp_events_completed"),
        u32("async_events_completed"));
    public static final StructLayout QP = struct("ibv_qp", ptr("context"), ptr("qp_context"), ptr("pd"),
        ptr("send_cq"), ptr("recv_cq"), ptr("srq"), u32("handle"), u32("qp_num"), u32("state"), u32("qp_type"),
        opaque("mutex", 40, 8), opaque("cond", 48, 8), u32("events_completed"));
    /** The head of {@code struct ibv_srq} up to its handle (an async event's element for SRQ events). */
    public static final StructLayout SRQ_HEAD = struct("ibv_srq", ptr("context"), ptr("srq_context"), ptr("pd"),
        u32("handle"));
    public static final StructLayout COMP_CHANNEL = struct("ibv_comp_channel", ptr("context"), u32("fd"),
        u32("refcnt"));
    public static final StructLayout ASYNC_EVENT = struct("ibv_async_event",
        union("element", ptr("cq"), ptr("qp"), ptr("srq"), ptr("wq"), u32("port_num")), u32("event_type"));

    /** Every layout the ABI check compares. */
    public static final List<StructLayout> ALL = List.of(SGE, SEND_WR, RECV_WR, WC, QP_CAP, QP_INIT_ATTR, AH_ATTR,
        QP_ATTR, PORT_ATTR, DEVICE_ATTR, CONTEXT, PD, MR, CQ, QP, COMP_CHANNEL, ASYNC_EVENT);

    /** Sizes and offsets of every layout as {@code struct.member} lines (what the C probe prints). */
    public static Map<String, Long> describeAll(final List<? extends GroupLayout> layouts) {
        final Map<String, Long> out = new LinkedHashMap<>();
        for (final GroupLayout l : layouts) {
            out.putAll(CLayout.describe(l));
        }
        return out;
    }

    static VarHandle handle(final StructLayout layout, final String... path) {
        final PathElement[] p = new PathElement[path.length];
        for (int i = 0; i < path.length; i++) {
            p[i] = PathElement.groupElement(path[i]);
        }
        return layout.varHandle(p).withInvokeExactBehavior();
    }

    static long offset(final StructLayout layout, final String... path) {
        final PathElement[] p = new PathElement[path.length];
        for (int i = 0; i < path.length; i++) {
            p[i] = PathElement.groupElement(path[i]);
        }
        return layout.byteOffset(p);
    }
}
