/* main.c - the seatd worker entry point: not written yet. */
#include <stdio.h>

int main(void)
{
    fprintf(stderr, "seatd: not implemented yet\n");
    return 1;
}
