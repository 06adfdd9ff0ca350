/* rds_slot.c - Redis Cluster hash slots; see rds_slot.h. */
#include "domain/rds_slot.h"

#include <string.h>
#include <strings.h>

uint16_t seatd_rds_crc16(const char *p, size_t len)
{
    uint16_t crc = 0;
    for (size_t i = 0; i < len; i++) {
        crc ^= (uint16_t)((uint16_t)(unsigned char)p[i] << 8);
        for (int b = 0; b < 8; b++)
            crc = (crc & 0x8000) ? (uint16_t)((crc << 1) ^ 0x1021) : (uint16_t)(crc << 1);
    }
    return crc;
}

unsigned seatd_rds_keyslot(const char *key, size_t len)
{
    size_t s, e;
    for (s = 0; s < len; s++)
        if (key[s] == '{')
            break;
    if (s == len)
        return seatd_rds_crc16(key, len) & (SEATD_RDS_SLOTS - 1);
    for (e = s + 1; e < len; e++)
        if (key[e] == '}')
            break;
    if (e == len || e == s + 1)
        return seatd_rds_crc16(key, len) & (SEATD_RDS_SLOTS - 1);
    return seatd_rds_crc16(key + s + 1, e - s - 1) & (SEATD_RDS_SLOTS - 1);
}

int seatd_rds_is_script(const char *name, size_t len)
{
    static const char *const scripts[] = {"FCALL",   "FCALL_RO", "EVAL",
                                          "EVAL_RO", "EVALSHA",  "EVALSHA_RO"};
    for (size_t i = 0; i < sizeof(scripts) / sizeof(scripts[0]); i++)
        if (strlen(scripts[i]) == len && strncasecmp(name, scripts[i], len) == 0)
            return 1;
    return 0;
}
