/*
 * Copyright 2026 the gdrkit authors. Licensed under the Apache License, Version 2.0.
 *
 * Prints sizeof and offsetof of every struct and field the FFM binding (io.gdrkit.ibverbs.IbvLayouts) touches, as
 * "name value" lines, compiled against the installed rdma-core headers. AbiCheckTest compares them with the layouts.
 */
#include <stddef.h>
#include <stdio.h>
#include <infiniband/verbs.h>
#if __has_include(<rdma/rdma_cma.h>)
#include <rdma/rdma_cma.h>
#define HAVE_RDMACM 1
#endif

#define SZ(T) printf("%s.sizeof %zu\n", #T, sizeof(struct T))
#define OFF(T, F) printf("%s.%s %zu\n", #T, #F, offsetof(struct T, F))

int main(void) {
    SZ(ibv_sge); OFF(ibv_sge, addr); OFF(ibv_sge, length); OFF(ibv_sge, lkey);

    SZ(ibv_send_wr); OFF(ibv_send_wr, wr_id); OFF(ibv_send_wr, next); OFF(ibv_send_wr, sg_list);
    OFF(ibv_send_wr, num_sge); OFF(ibv_send_wr, opcode); OFF(ibv_send_wr, send_flags); OFF(ibv_send_wr, imm_data);
    OFF(ibv_send_wr, invalidate_rkey); OFF(ibv_send_wr, wr.rdma.remote_addr); OFF(ibv_send_wr, wr.rdma.rkey);
    OFF(ibv_send_wr, wr.atomic.remote_addr); OFF(ibv_send_wr, wr.atomic.compare_add);
    OFF(ibv_send_wr, wr.atomic.swap); OFF(ibv_send_wr, wr.atomic.rkey); OFF(ibv_send_wr, wr.ud.ah);
    OFF(ibv_send_wr, wr.ud.remote_qpn); OFF(ibv_send_wr, wr.ud.remote_qkey);
    OFF(ibv_send_wr, qp_type.xrc.remote_srqn); OFF(ibv_send_wr, bind_mw.mw); OFF(ibv_send_wr, bind_mw.rkey);
    OFF(ibv_send_wr, bind_mw.bind_info.mr); OFF(ibv_send_wr, bind_mw.bind_info.addr);
    OFF(ibv_send_wr, bind_mw.bind_info.length); OFF(ibv_send_wr, bind_mw.bind_info.mw_access_flags);
    OFF(ibv_send_wr, tso.hdr); OFF(ibv_send_wr, tso.hdr_sz); OFF(ibv_send_wr, tso.mss);

    SZ(ibv_recv_wr); OFF(ibv_recv_wr, wr_id); OFF(ibv_recv_wr, next); OFF(ibv_recv_wr, sg_list);
    OFF(ibv_recv_wr, num_sge);

    SZ(ibv_wc); OFF(ibv_wc, wr_id); OFF(ibv_wc, status); OFF(ibv_wc, opcode); OFF(ibv_wc, vendor_err);
    OFF(ibv_wc, byte_len); OFF(ibv_wc, imm_data); OFF(ibv_wc, invalidated_rkey); OFF(ibv_wc, qp_num);
    OFF(ibv_wc, src_qp); OFF(ibv_wc, wc_flags); OFF(ibv_wc, pkey_index); OFF(ibv_wc, slid); OFF(ibv_wc, sl);
    OFF(ibv_wc, dlid_path_bits);

    SZ(ibv_qp_cap); OFF(ibv_qp_cap, max_send_wr); OFF(ibv_qp_cap, max_recv_wr); OFF(ibv_qp_cap, max_send_sge);
    OFF(ibv_qp_cap, max_recv_sge); OFF(ibv_qp_cap, max_inline_data);

    SZ(ibv_qp_init_attr); OFF(ibv_qp_init_attr, qp_context); OFF(ibv_qp_init_attr, send_cq);
    OFF(ibv_qp_init_attr, recv_cq); OFF(ibv_qp_init_attr, srq); OFF(ibv_qp_init_attr, cap.max_send_wr);
    OFF(ibv_qp_init_attr, cap.max_recv_wr); OFF(ibv_qp_init_attr, cap.max_send_sge);
    OFF(ibv_qp_init_attr, cap.max_recv_sge); OFF(ibv_qp_init_attr, cap.max_inline_data);
    OFF(ibv_qp_init_attr, qp_type); OFF(ibv_qp_init_attr, sq_sig_all);

    SZ(ibv_ah_attr); OFF(ibv_ah_attr, grh.dgid); OFF(ibv_ah_attr, grh.flow_label); OFF(ibv_ah_attr, grh.sgid_index);
    OFF(ibv_ah_attr, grh.hop_limit); OFF(ibv_ah_attr, grh.traffic_class); OFF(ibv_ah_attr, dlid);
    OFF(ibv_ah_attr, sl); OFF(ibv_ah_attr, src_path_bits); OFF(ibv_ah_attr, static_rate);
    OFF(ibv_ah_attr, is_global); OFF(ibv_ah_attr, port_num);

    SZ(ibv_qp_attr); OFF(ibv_qp_attr, qp_state); OFF(ibv_qp_attr, cur_qp_state); OFF(ibv_qp_attr, path_mtu);
    OFF(ibv_qp_attr, path_mig_state); OFF(ibv_qp_attr, qkey); OFF(ibv_qp_attr, rq_psn); OFF(ibv_qp_attr, sq_psn);
    OFF(ibv_qp_attr, dest_qp_num); OFF(ibv_qp_attr, qp_access_flags); OFF(ibv_qp_attr, cap.max_send_wr);
    OFF(ibv_qp_attr, cap.max_recv_wr); OFF(ibv_qp_attr, cap.max_send_sge); OFF(ibv_qp_attr, cap.max_recv_sge);
    OFF(ibv_qp_attr, cap.max_inline_data); OFF(ibv_qp_attr, ah_attr.grh.dgid); OFF(ibv_qp_attr, ah_attr.grh.flow_label);
    OFF(ibv_qp_attr, ah_attr.grh.sgid_index); OFF(ibv_qp_attr, ah_attr.grh.hop_limit);
    OFF(ibv_qp_attr, ah_attr.grh.traffic_class); OFF(ibv_qp_attr, ah_attr.dlid); OFF(ibv_qp_attr, ah_attr.sl);
    OFF(ibv_qp_attr, ah_attr.src_path_bits); OFF(ibv_qp_attr, ah_attr.static_rate);
    OFF(ibv_qp_attr, ah_attr.is_global); OFF(ibv_qp_attr, ah_attr.port_num); OFF(ibv_qp_attr, alt_ah_attr);
    OFF(ibv_qp_attr, pkey_index); OFF(ibv_qp_attr, alt_pkey_index); OFF(ibv_qp_attr, en_sqd_async_notify);
    OFF(ibv_qp_attr, sq_draining); OFF(ibv_qp_attr, max_rd_atomic); OFF(ibv_qp_attr, max_dest_rd_atomic);
    OFF(ibv_qp_attr, min_rnr_timer); OFF(ibv_qp_attr, port_num); OFF(ibv_qp_attr, timeout);
    OFF(ibv_qp_attr, retry_cnt); OFF(ibv_qp_attr, rnr_retry); OFF(ibv_qp_attr, alt_port_num);
    OFF(ibv_qp_attr, alt_timeout); OFF(ibv_qp_attr, rate_limit);

    SZ(ibv_port_attr); OFF(ibv_port_attr, state); OFF(ibv_port_attr, max_mtu); OFF(ibv_port_attr, active_mtu);
    OFF(ibv_port_attr, gid_tbl_len); OFF(ibv_port_attr, port_cap_flags); OFF(ibv_port_attr, max_msg_sz);
    OFF(ibv_port_attr, bad_pkey_cntr); OFF(ibv_port_attr, qkey_viol_cntr); OFF(ibv_port_attr, pkey_tbl_len);
    OFF(ibv_port_attr, lid); OFF(ibv_port_attr, sm_lid); OFF(ibv_port_attr, lmc); OFF(ibv_port_attr, max_vl_num);
    OFF(ibv_port_attr, sm_sl); OFF(ibv_port_attr, subnet_timeout); OFF(ibv_port_attr, init_type_reply);
    OFF(ibv_port_attr, active_width); OFF(ibv_port_attr, active_speed); OFF(ibv_port_attr, phys_state);
    OFF(ibv_port_attr, link_layer); OFF(ibv_port_attr, flags); OFF(ibv_port_attr, port_cap_flags2);

    SZ(ibv_device_attr); OFF(ibv_device_attr, fw_ver); OFF(ibv_device_attr, node_guid);
    OFF(ibv_device_attr, sys_image_guid); OFF(ibv_device_attr, max_mr_size); OFF(ibv_device_attr, page_size_cap);
    OFF(ibv_device_attr, vendor_id); OFF(ibv_device_attr, vendor_part_id); OFF(ibv_device_attr, hw_ver);
    OFF(ibv_device_attr, max_qp); OFF(ibv_device_attr, max_qp_wr); OFF(ibv_device_attr, device_cap_flags);
    OFF(ibv_device_attr, max_sge); OFF(ibv_device_attr, max_sge_rd); OFF(ibv_device_attr, max_cq);
    OFF(ibv_device_attr, max_cqe); OFF(ibv_device_attr, max_mr); OFF(ibv_device_attr, max_pd);
    OFF(ibv_device_attr, max_qp_rd_atom); OFF(ibv_device_attr, max_ee_rd_atom); OFF(ibv_device_attr, max_res_rd_atom);
    OFF(ibv_device_attr, max_qp_init_rd_atom); OFF(ibv_device_attr, max_ee_init_rd_atom);
    OFF(ibv_device_attr, atomic_cap); OFF(ibv_device_attr, max_ee); OFF(ibv_device_attr, max_rdd);
    OFF(ibv_device_attr, max_mw); OFF(ibv_device_attr, max_raw_ipv6_qp); OFF(ibv_device_attr, max_raw_ethy_qp);
    OFF(ibv_device_attr, max_mcast_grp); OFF(ibv_device_attr, max_mcast_qp_attach);
    OFF(ibv_device_attr, max_total_mcast_qp_attach); OFF(ibv_device_attr, max_ah); OFF(ibv_device_attr, max_fmr);
    OFF(ibv_device_attr, max_map_per_fmr); OFF(ibv_device_attr, max_srq); OFF(ibv_device_attr, max_srq_wr);
    OFF(ibv_device_attr, max_srq_sge); OFF(ibv_device_attr, max_pkeys); OFF(ibv_device_attr, local_ca_ack_delay);
    OFF(ibv_device_attr, phys_port_cnt);

    SZ(ibv_context); OFF(ibv_context, device); OFF(ibv_context, ops); OFF(ibv_context, cmd_fd);
    OFF(ibv_context, async_fd); OFF(ibv_context, num_comp_vectors); OFF(ibv_context, mutex);
    OFF(ibv_context, abi_compat);
    OFF(ibv_context, ops.poll_cq); OFF(ibv_context, ops.req_notify_cq); OFF(ibv_context, ops.post_srq_recv);
    OFF(ibv_context, ops.post_send); OFF(ibv_context, ops.post_recv);

    SZ(ibv_pd); OFF(ibv_pd, context); OFF(ibv_pd, handle);
    SZ(ibv_mr); OFF(ibv_mr, context); OFF(ibv_mr, pd); OFF(ibv_mr, addr); OFF(ibv_mr, length); OFF(ibv_mr, handle);
    OFF(ibv_mr, lkey); OFF(ibv_mr, rkey);
    SZ(ibv_cq); OFF(ibv_cq, context); OFF(ibv_cq, channel); OFF(ibv_cq, cq_context); OFF(ibv_cq, handle);
    OFF(ibv_cq, cqe);
    SZ(ibv_qp); OFF(ibv_qp, context); OFF(ibv_qp, qp_context); OFF(ibv_qp, pd); OFF(ibv_qp, send_cq);
    OFF(ibv_qp, recv_cq); OFF(ibv_qp, srq); OFF(ibv_qp, handle); OFF(ibv_qp, qp_num); OFF(ibv_qp, state);
    OFF(ibv_qp, qp_type);
    OFF(ibv_srq, context); OFF(ibv_srq, srq_context); OFF(ibv_srq, pd); OFF(ibv_srq, handle);
    SZ(ibv_comp_channel); OFF(ibv_comp_channel, context); OFF(ibv_comp_channel, fd); OFF(ibv_comp_channel, refcnt);
    SZ(ibv_async_event); OFF(ibv_async_event, element.cq); OFF(ibv_async_event, element.qp);
    OFF(ibv_async_event, element.port_num); OFF(ibv_async_event, event_type);
#ifdef HAVE_RDMACM
    SZ(rdma_conn_param); OFF(rdma_conn_param, private_data); OFF(rdma_conn_param, private_data_len);
    OFF(rdma_conn_param, responder_resources); OFF(rdma_conn_param, initiator_depth);
    OFF(rdma_conn_param, flow_control); OFF(rdma_conn_param, retry_count); OFF(rdma_conn_param, rnr_retry_count);
    OFF(rdma_conn_param, srq); OFF(rdma_conn_param, qp_num);
    SZ(rdma_cm_event); OFF(rdma_cm_event, id); OFF(rdma_cm_event, listen_id); OFF(rdma_cm_event, event);
    OFF(rdma_cm_event, status); OFF(rdma_cm_event, param.conn.private_data);
    OFF(rdma_cm_event, param.conn.private_data_len); OFF(rdma_cm_event, param.ud.qp_num);
    OFF(rdma_cm_event, param.ud.qkey);
    OFF(rdma_cm_id, verbs); OFF(rdma_cm_id, channel); OFF(rdma_cm_id, context); OFF(rdma_cm_id, qp);
    printf("RDMA_PS_TCP.value %d\nRDMA_CM_EVENT_ESTABLISHED.value %d\nRDMA_CM_EVENT_TIMEWAIT_EXIT.value %d\n",
           RDMA_PS_TCP, RDMA_CM_EVENT_ESTABLISHED, RDMA_CM_EVENT_TIMEWAIT_EXIT);
#endif
    printf("IBV_WR_RDMA_WRITE.value %d\nIBV_WR_RDMA_WRITE_WITH_IMM.value %d\nIBV_WR_SEND.value %d\n"
           "IBV_WR_SEND_WITH_IMM.value %d\nIBV_WR_RDMA_READ.value %d\nIBV_WR_ATOMIC_CMP_AND_SWP.value %d\n"
           "IBV_WR_ATOMIC_FETCH_AND_ADD.value %d\nIBV_QPT_RC.value %d\nIBV_QPS_RTS.value %d\n",
           IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_READ,
           IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_QPT_RC, IBV_QPS_RTS);
    return 0;
}
