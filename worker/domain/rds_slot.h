/*
 * rds_slot.h - Redis Cluster hash slots: CRC16-XMODEM of the key, or of its hash tag.
 *
 * The rule, exactly as Redis's keyHashSlot() (cluster.c): if the key has a '{' and, after the
 * first '{', a '}', and at least one byte lies between them, only those bytes are hashed;
 * otherwise the whole key is. So "{}" and "{}x" hash whole, "{{a}}" hashes "{a", "a{b" and
 * "}{" hash whole, "{a}{b}" hashes "a". The slot is crc16 & 16383.
 *
 * Pure: no I/O, no allocation. Used by the rds cluster router and by tests.
 */
#ifndef SEATD_RDS_SLOT_H
#define SEATD_RDS_SLOT_H

#include <stddef.h>
#include <stdint.h>

#define SEATD_RDS_SLOTS 16384

/* CRC16-XMODEM (poly 0x1021, init 0, no reflection) of 'len' bytes at 'p' (borrowed). */
uint16_t seatd_rds_crc16(const char *p, size_t len);

/* The hash slot (0..16383) of the binary-safe key 'key' of 'len' bytes (borrowed). */
unsigned seatd_rds_keyslot(const char *key, size_t len);

/* 1 if the command named 'name' ('len' bytes, any case) runs a script: FCALL, FCALL_RO, EVAL,
 * EVALSHA and their _RO forms. Such a command must not follow an ASK redirection: seatd's
 * functions declare one key and derive the show's other keys from its prefix, and on a node
 * importing the slot (ASKING) Redis lets a script read and create any of them, so a key still
 * on the source reads as missing there (a held seat looks free). A script waits the migration
 * out instead (backoff, then MOVED to the new owner, which has every key). */
int seatd_rds_is_script(const char *name, size_t len);

#endif
