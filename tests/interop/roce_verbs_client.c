/* roce_verbs_client: an rdma_cm RC client that exercises the appliance's
 * responder on a memory region registered over gRPC. Unlike rxe_ops it takes
 * the region's rkey and base address on the command line (the appliance's REP
 * carries no private data) and never waits without a deadline, so that a
 * missing feature shows up as a clear "FAIL"/"TIMEOUT" line instead of a hang.
 *
 *   roce_verbs_client ADDR PORT RKEY VA SCRIPT
 *
 * SCRIPT is one of
 *   responder  WRITE, WRITE WITH IMMEDIATE (one packet and three packets),
 *              FETCH_ADD twice, CMP_SWAP twice (hit, miss), READ back and
 *              compare, then a WRITE with a wrong rkey (must complete with
 *              a remote access error), then disconnect.
 *   send       one 8-byte SEND "spinnic!", waited for at most 4 s (the
 *              appliance reports it as a roce_send event), then disconnect.
 *
 * Every step prints one line "ok STEP ..." or "FAIL STEP ...". The exit status
 * is 0 when every step was ok. Runs inside a Debian 12 soft-RoCE guest; built
 * on the host (same distribution) and handed over through the 9p share.
 *
 * Build: gcc -O2 -Wall -o roce_verbs_client roce_verbs_client.c -lrdmacm
 *        -libverbs */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <netdb.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { kBufferBytes = 65536, kOpTimeoutMs = 10000, kCmTimeoutMs = 15000 };

/* Offsets in the appliance's region: the host side reads them back with
 * `spinctl region-read` and checks them too (tests/interop/interop.sh). */
enum {
  kOffWrite = 0,
  kOffWriteImmSmall = 4096,
  kOffWriteImmLarge = 8192,
  kOffFetchAdd = 12288,
  kOffCmpSwap = 12296,
};

static struct rdma_event_channel *channel;
static struct rdma_cm_id *id;
static struct ibv_qp *qp; /* id->qp, or our own with --swap-psn */
static int swap_psn;
static int timed_out; /* after a lost completion the QP is useless */
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_mr *mr;
static unsigned char *buf;
static int failures;

static long long NowMs(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void Report(int ok, const char *step, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void Report(int ok, const char *step, const char *fmt, ...) {
  va_list ap;
  printf("%s %s ", ok ? "ok" : "FAIL", step);
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  printf("\n");
  if (!ok) ++failures;
}

/* The next CM event, at most timeout_ms; NULL on timeout. */
static struct rdma_cm_event *NextCmEvent(int timeout_ms) {
  struct pollfd p = {.fd = channel->fd, .events = POLLIN};
  struct rdma_cm_event *ev;
  if (poll(&p, 1, timeout_ms) <= 0) return NULL;
  if (rdma_get_cm_event(channel, &ev)) return NULL;
  return ev;
}

static int ExpectCmEvent(enum rdma_cm_event_type want, const char *step,
                         int timeout_ms) {
  struct rdma_cm_event *ev = NextCmEvent(timeout_ms);
  if (ev == NULL) {
    Report(0, step, "TIMEOUT waiting for %s after %d ms", rdma_event_str(want),
           timeout_ms);
    return 0;
  }
  int ok = ev->event == want;
  if (!ok) {
    Report(0, step, "expected %s, got %s status %d", rdma_event_str(want),
           rdma_event_str(ev->event), ev->status);
  }
  rdma_ack_cm_event(ev);
  return ok;
}

/* One completion within timeout_ms: 1 and *wc filled, 0 on timeout. */
static int PollOne(struct ibv_wc *wc, int timeout_ms) {
  long long deadline = NowMs() + timeout_ms;
  for (;;) {
    int n = ibv_poll_cq(cq, 1, wc);
    if (n > 0) return 1;
    if (n < 0 || NowMs() > deadline) return 0;
  }
}

/* Posts one signalled WR and waits for its completion. Returns the
 * completion status, or -1 on timeout / post failure. */
static int Run(enum ibv_wr_opcode opcode, uint32_t local_offset,
               uint32_t length, uint64_t remote_addr, uint32_t rkey,
               uint32_t imm, uint64_t compare_add, uint64_t swap,
               int timeout_ms) {
  struct ibv_sge sge = {.addr = (uintptr_t)buf + local_offset,
                        .length = length,
                        .lkey = mr->lkey};
  struct ibv_send_wr wr = {0}, *bad;
  struct ibv_wc wc;
  wr.wr_id = 1;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = opcode;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.imm_data = htonl(imm);
  if (opcode == IBV_WR_ATOMIC_FETCH_AND_ADD ||
      opcode == IBV_WR_ATOMIC_CMP_AND_SWP) {
    wr.wr.atomic.remote_addr = remote_addr;
    wr.wr.atomic.rkey = rkey;
    wr.wr.atomic.compare_add = compare_add;
    wr.wr.atomic.swap = swap;
  } else {
    wr.wr.rdma.remote_addr = remote_addr;
    wr.wr.rdma.rkey = rkey;
  }
  if (timed_out) return -1;
  if (ibv_post_send(qp, &wr, &bad)) return -1;
  if (!PollOne(&wc, timeout_ms)) {
    timed_out = 1;
    return -1;
  }
  return (int)wc.status;
}

static const char *StatusText(int status) {
  return status < 0 ? "TIMEOUT (no completion)"
                    : ibv_wc_status_str((enum ibv_wc_status)status);
}

static void Fill(uint32_t offset, uint32_t length, unsigned seed) {
  for (uint32_t i = 0; i < length; ++i)
    buf[offset + i] = (unsigned char)(seed + i * 7 + (i >> 8));
}

/* Diagnostic only (--swap-psn): the kernel's CM has the active side send
 * with the REP's starting PSN (cm_rep_handler: sq_psn = REP starting PSN) and
 * expect the REQ's (rq_psn). This moves our own QP to RTR/RTS with the two
 * exchanged, i.e. sending with the REQ's PSN, to see whether the appliance's
 * responder works once its CM uses the PSNs the other way round. */
static int ConnectSwapped(void) {
  struct rdma_cm_event *ev = NextCmEvent(kCmTimeoutMs);
  if (ev == NULL || ev->event != RDMA_CM_EVENT_CONNECT_RESPONSE) {
    Report(0, "connect", "expected CONNECT_RESPONSE, got %s",
           ev ? rdma_event_str(ev->event) : "nothing");
    if (ev) rdma_ack_cm_event(ev);
    return 0;
  }
  rdma_ack_cm_event(ev);
  struct ibv_qp_attr rtr, rts;
  int rtr_mask, rts_mask;
  rtr.qp_state = IBV_QPS_RTR;
  rts.qp_state = IBV_QPS_RTS;
  if (rdma_init_qp_attr(id, &rtr, &rtr_mask) ||
      rdma_init_qp_attr(id, &rts, &rts_mask)) {
    Report(0, "connect", "rdma_init_qp_attr: %s", strerror(errno));
    return 0;
  }
  uint32_t req_psn = rtr.rq_psn, rep_psn = rts.sq_psn;
  rtr.rq_psn = rep_psn;
  rts.sq_psn = req_psn;
  if (ibv_modify_qp(qp, &rtr, rtr_mask) || ibv_modify_qp(qp, &rts, rts_mask) ||
      rdma_establish(id)) {
    Report(0, "connect", "RTR/RTS/establish: %s", strerror(errno));
    return 0;
  }
  Report(1, "connect",
         "established with swapped PSNs (send %u = REQ's, expect %u = REP's), "
         "local qpn 0x%x",
         req_psn, rep_psn, qp->qp_num);
  return 1;
}

static int Connect(const char *addr, const char *port) {
  struct addrinfo *ai;
  struct ibv_qp_init_attr attr = {0};
  struct rdma_conn_param param = {0};
  if (getaddrinfo(addr, port, NULL, &ai)) {
    Report(0, "connect", "getaddrinfo %s failed", addr);
    return 0;
  }
  channel = rdma_create_event_channel();
  if (channel == NULL || rdma_create_id(channel, &id, NULL, RDMA_PS_TCP)) {
    Report(0, "connect", "rdma_create_id: %s", strerror(errno));
    return 0;
  }
  if (rdma_resolve_addr(id, NULL, ai->ai_addr, 2000) ||
      !ExpectCmEvent(RDMA_CM_EVENT_ADDR_RESOLVED, "resolve_addr", 5000))
    return 0;
  if (rdma_resolve_route(id, 2000) ||
      !ExpectCmEvent(RDMA_CM_EVENT_ROUTE_RESOLVED, "resolve_route", 5000))
    return 0;
  pd = ibv_alloc_pd(id->verbs);
  cq = pd ? ibv_create_cq(id->verbs, 32, NULL, NULL, 0) : NULL;
  if (cq == NULL) {
    Report(0, "connect", "pd/cq allocation failed");
    return 0;
  }
  attr.send_cq = attr.recv_cq = cq;
  attr.qp_type = IBV_QPT_RC;
  attr.cap.max_send_wr = 16;
  attr.cap.max_recv_wr = 4;
  attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
  if (swap_psn) {
    /* Our own QP (librdmacm leaves its transitions to us): see ConnectSwapped.
     */
    qp = ibv_create_qp(pd, &attr);
    struct ibv_qp_attr init;
    int mask;
    init.qp_state = IBV_QPS_INIT;
    if (qp == NULL || rdma_init_qp_attr(id, &init, &mask) ||
        ibv_modify_qp(qp, &init, mask)) {
      Report(0, "connect", "own QP to INIT failed: %s", strerror(errno));
      return 0;
    }
  } else if (rdma_create_qp(id, pd, &attr)) {
    Report(0, "connect", "rdma_create_qp: %s", strerror(errno));
    return 0;
  } else {
    qp = id->qp;
  }
  buf = aligned_alloc(4096, kBufferBytes);
  memset(buf, 0, kBufferBytes);
  mr = ibv_reg_mr(pd, buf, kBufferBytes,
                  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                      IBV_ACCESS_REMOTE_READ);
  if (mr == NULL) {
    Report(0, "connect", "ibv_reg_mr failed");
    return 0;
  }
  param.responder_resources = 4;
  param.initiator_depth = 4;
  param.retry_count = 7;
  param.rnr_retry_count = 7;
  if (swap_psn) param.qp_num = qp->qp_num;
  if (rdma_connect(id, &param)) {
    Report(0, "connect", "rdma_connect: %s", strerror(errno));
    return 0;
  }
  if (swap_psn) return ConnectSwapped();
  if (!ExpectCmEvent(RDMA_CM_EVENT_ESTABLISHED, "connect", kCmTimeoutMs))
    return 0;
  Report(1, "connect", "established, local qpn 0x%x", qp->qp_num);
  return 1;
}

static void Disconnect(void) {
  rdma_disconnect(id);
  if (ExpectCmEvent(RDMA_CM_EVENT_DISCONNECTED, "disconnect", kCmTimeoutMs))
    Report(1, "disconnect", "DREQ answered");
}

static void ResponderScript(uint64_t va, uint32_t rkey) {
  int st;
  /* WRITE: 16 bytes the host checks byte for byte. */
  memcpy(buf, "spinnic-interop!", 16);
  st = Run(IBV_WR_RDMA_WRITE, 0, 16, va + kOffWrite, rkey, 0, 0, 0,
           kOpTimeoutMs);
  Report(st == IBV_WC_SUCCESS, "write", "16 bytes at +%d: %s", kOffWrite,
         StatusText(st));

  Fill(1024, 64, 0x11);
  st = Run(IBV_WR_RDMA_WRITE_WITH_IMM, 1024, 64, va + kOffWriteImmSmall, rkey,
           0x55667788, 0, 0, kOpTimeoutMs);
  Report(st == IBV_WC_SUCCESS, "write_imm_small",
         "64 bytes at +%d imm 0x55667788: %s", kOffWriteImmSmall,
         StatusText(st));

  Fill(2048, 3000, 0x5a);
  st = Run(IBV_WR_RDMA_WRITE_WITH_IMM, 2048, 3000, va + kOffWriteImmLarge, rkey,
           0x99aabbcc, 0, 0, kOpTimeoutMs);
  Report(st == IBV_WC_SUCCESS, "write_imm_large",
         "3000 bytes at +%d imm 0x99aabbcc: %s", kOffWriteImmLarge,
         StatusText(st));

  /* Atomics on the zeroed region: 0 +5 -> returns 0, then +7 -> returns 5. */
  uint64_t *result = (uint64_t *)(buf + 8192);
  *result = ~0ULL;
  st = Run(IBV_WR_ATOMIC_FETCH_AND_ADD, 8192, 8, va + kOffFetchAdd, rkey, 0, 5,
           0, kOpTimeoutMs);
  Report(st == IBV_WC_SUCCESS && *result == 0, "fetch_add_1",
         "add 5: %s, returned %llu (want 0)", StatusText(st),
         (unsigned long long)*result);
  *result = ~0ULL;
  st = Run(IBV_WR_ATOMIC_FETCH_AND_ADD, 8192, 8, va + kOffFetchAdd, rkey, 0, 7,
           0, kOpTimeoutMs);
  Report(st == IBV_WC_SUCCESS && *result == 5, "fetch_add_2",
         "add 7: %s, returned %llu (want 5)", StatusText(st),
         (unsigned long long)*result);
  *result = ~0ULL;
  st = Run(IBV_WR_ATOMIC_CMP_AND_SWP, 8192, 8, va + kOffCmpSwap, rkey, 0, 0,
           0x2222, kOpTimeoutMs);
  Report(st == IBV_WC_SUCCESS && *result == 0, "cmp_swap_hit",
         "compare 0 swap 0x2222: %s, returned 0x%llx (want 0)", StatusText(st),
         (unsigned long long)*result);
  *result = ~0ULL;
  st = Run(IBV_WR_ATOMIC_CMP_AND_SWP, 8192, 8, va + kOffCmpSwap, rkey, 0, 0,
           0x3333, kOpTimeoutMs);
  Report(st == IBV_WC_SUCCESS && *result == 0x2222, "cmp_swap_miss",
         "compare 0 swap 0x3333: %s, returned 0x%llx (want 0x2222)",
         StatusText(st), (unsigned long long)*result);

  /* READ back what the large WRITE WITH IMMEDIATE put there (3 responses at
   * path MTU 1024) and the 16-byte WRITE. */
  memset(buf + 16384, 0, 3000);
  st = Run(IBV_WR_RDMA_READ, 16384, 3000, va + kOffWriteImmLarge, rkey, 0, 0, 0,
           kOpTimeoutMs);
  Report(st == IBV_WC_SUCCESS && memcmp(buf + 16384, buf + 2048, 3000) == 0,
         "read_large", "3000 bytes from +%d: %s, data %s", kOffWriteImmLarge,
         StatusText(st),
         memcmp(buf + 16384, buf + 2048, 3000) == 0 ? "match" : "MISMATCH");
  memset(buf + 20480, 0, 16);
  st = Run(IBV_WR_RDMA_READ, 20480, 16, va + kOffWrite, rkey, 0, 0, 0,
           kOpTimeoutMs);
  Report(
      st == IBV_WC_SUCCESS && memcmp(buf + 20480, "spinnic-interop!", 16) == 0,
      "read_small", "16 bytes from +%d: %s, \"%.16s\"", kOffWrite,
      StatusText(st), (const char *)(buf + 20480));

  /* A wrong rkey: the appliance NAKs with remote access error; the client's
   * completion says so (and the QP goes to the error state, so this is the
   * last operation on it). */
  st = Run(IBV_WR_RDMA_WRITE, 0, 16, va, rkey ^ 0x00ff0000u, 0, 0, 0,
           kOpTimeoutMs);
  Report(st == IBV_WC_REM_ACCESS_ERR, "bad_rkey",
         "WRITE with rkey 0x%x: %s (want remote access error)",
         rkey ^ 0x00ff0000u, StatusText(st));
}

static void SendScript(void) {
  memcpy(buf, "spinnic!", 8);
  int st = Run(IBV_WR_SEND, 0, 8, 0, 0, 0, 0, 0, 4000);
  Report(st == IBV_WC_SUCCESS, "send", "8-byte SEND: %s", StatusText(st));
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IONBF, 0);
  if (argc == 7 && strcmp(argv[6], "--swap-psn") == 0) {
    swap_psn = 1;
    --argc;
  }
  if (argc != 6) {
    fprintf(stderr, "usage: %s ADDR PORT RKEY VA responder|send [--swap-psn]\n",
            argv[0]);
    return 2;
  }
  uint32_t rkey = (uint32_t)strtoul(argv[3], NULL, 0);
  uint64_t va = strtoull(argv[4], NULL, 0);
  if (!Connect(argv[1], argv[2])) return 1;
  if (strcmp(argv[5], "responder") == 0) {
    ResponderScript(va, rkey);
  } else if (strcmp(argv[5], "send") == 0) {
    SendScript();
  } else {
    fprintf(stderr, "unknown script %s\n", argv[5]);
    return 2;
  }
  Disconnect();
  printf("%s: %d step(s) failed\n", argv[5], failures);
  return failures == 0 ? 0 : 1;
}
