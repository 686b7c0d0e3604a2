/*
 * tests/fuzz/target_pool_msg.c - a byte stream from a worker or the
 * controller through the pool's message codec (search/pool.c,
 * search/pool_msg.h), consumed as the pool's reader does: a 12-byte
 * header (nas__msg_header), then the payload through the decoder of its
 * type; a protocol error ends the stream. Promises checked: a decoded JOB
 * re-encodes to the same bytes; a decoded RESULT, re-encoded and decoded
 * again, gives the same result; PROGRESS, HEARTBEAT and NEXT round-trip.
 */
#include <string.h>
#include "search/pool_msg.h"
#include "fuzz.h"

static uint8_t g_buf[NAS__MSG_HEADER + NAS__MSG_MAX_PAYLOAD + 64];

static int same_result(const nas_trial_result *a, const nas_trial_result *b)
{
    return a->status == b->status && strcmp(a->error, b->error) == 0 &&
           memcmp(&a->val_accuracy, &b->val_accuracy, sizeof(double)) == 0 &&
           memcmp(&a->test_accuracy, &b->test_accuracy, sizeof(double)) == 0 &&
           memcmp(&a->train_loss, &b->train_loss, sizeof(double)) == 0 && a->macs == b->macs &&
           a->params == b->params && memcmp(&a->latency_ms, &b->latency_ms, sizeof(double)) == 0 &&
           memcmp(&a->train_seconds, &b->train_seconds, sizeof(double)) == 0 &&
           a->epochs == b->epochs && strcmp(a->device_name, b->device_name) == 0 &&
           strcmp(a->device_cc, b->device_cc) == 0;
}

int nas_fuzz_pool_msg(const uint8_t *data, size_t size)
{
    size_t off = 0;
    int msgs = 0;
    while (size - off >= NAS__MSG_HEADER) {
        int type = 0;
        uint32_t len = 0;
        char why[128];
        if (nas__msg_header(data + off, &type, &len, why, sizeof why) != NAS_OK) {
            NAS_FUZZ_CHECK(why[0] != '\0', "header refused without a reason");
            break;
        }
        NAS_FUZZ_CHECK(len <= NAS__MSG_MAX_PAYLOAD, "length %u", len);
        if (size - off - NAS__MSG_HEADER < len)
            break; /* the rest has not arrived */
        const uint8_t *p = data + off + NAS__MSG_HEADER;
        int rc = NAS_OK;
        if (type == NAS__MSG_JOB) {
            nas_pool_job job;
            rc = nas__msg_decode_job(p, len, &job);
            if (rc == NAS_OK) {
                size_t n = nas__msg_encode_job(g_buf, &job);
                NAS_FUZZ_CHECK(n == NAS__MSG_HEADER + len &&
                                   memcmp(g_buf + NAS__MSG_HEADER, p, len) == 0,
                               "JOB does not re-encode to its bytes");
            }
        } else if (type == NAS__MSG_PROGRESS) {
            int64_t id;
            double fr, loss;
            rc = nas__msg_decode_progress(p, len, &id, &fr, &loss);
            if (rc == NAS_OK) {
                size_t n = nas__msg_encode_progress(g_buf, id, fr, loss);
                NAS_FUZZ_CHECK(n == NAS__MSG_HEADER + len &&
                                   memcmp(g_buf + NAS__MSG_HEADER, p, len) == 0,
                               "PROGRESS does not re-encode to its bytes");
            }
        } else if (type == NAS__MSG_HEARTBEAT) {
            int64_t id;
            rc = nas__msg_decode_heartbeat(p, len, &id);
            if (rc == NAS_OK) {
                size_t n = nas__msg_encode_heartbeat(g_buf, id);
                NAS_FUZZ_CHECK(n == NAS__MSG_HEADER + len &&
                                   memcmp(g_buf + NAS__MSG_HEADER, p, len) == 0,
                               "HEARTBEAT does not re-encode to its bytes");
            }
        } else if (type == NAS__MSG_RESULT) {
            int64_t id, id2;
            static nas_trial_result r, r2;
            rc = nas__msg_decode_result(p, len, &id, &r);
            if (rc == NAS_OK) {
                size_t n = nas__msg_encode_result(g_buf, id, &r);
                NAS_FUZZ_CHECK(n <= sizeof g_buf, "RESULT encodes to %zu bytes", n);
                int t2 = 0;
                uint32_t l2 = 0;
                char w2[128];
                NAS_FUZZ_CHECK(nas__msg_header(g_buf, &t2, &l2, w2, sizeof w2) == NAS_OK &&
                                   t2 == NAS__MSG_RESULT,
                               "re-encoded RESULT header: %s", w2);
                NAS_FUZZ_CHECK(nas__msg_decode_result(g_buf + NAS__MSG_HEADER, l2, &id2, &r2) ==
                                       NAS_OK &&
                                   id2 == id && same_result(&r, &r2),
                               "RESULT does not survive encode + decode");
            }
        } else if (type == NAS__MSG_STOP) {
            rc = len == 0 ? NAS_OK : NAS_EFORMAT;
        } else if (type == NAS__MSG_READY) {
            int gen = -1;
            rc = nas__msg_decode_ready(p, len, &gen);
            if (rc == NAS_OK) {
                size_t n = nas__msg_encode_ready(g_buf, gen);
                NAS_FUZZ_CHECK(n == NAS__MSG_HEADER + len &&
                                   !memcmp(g_buf + NAS__MSG_HEADER, p, len),
                               "READY does not survive decode + encode");
            }
        } else if (type == NAS__MSG_NEXT) {
            char name[NAS_NAME_MAX];
            rc = nas__msg_decode_next(p, len, name);
            if (rc == NAS_OK) {
                NAS_FUZZ_CHECK(strlen(name) + 4 == len, "NEXT name of %zu bytes in %u",
                               strlen(name), len);
                size_t n = nas__msg_encode_next(g_buf, name);
                NAS_FUZZ_CHECK(n == NAS__MSG_HEADER + len &&
                                   memcmp(g_buf + NAS__MSG_HEADER, p, len) == 0,
                               "NEXT does not re-encode to its bytes");
            }
        }
        if (rc != NAS_OK) {
            NAS_FUZZ_CHECK(rc == NAS_EFORMAT, "decoder returned %d", rc);
            break;
        }
        msgs++;
        off += NAS__MSG_HEADER + len;
    }
    return msgs;
}
