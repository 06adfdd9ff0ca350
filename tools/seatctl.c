/* seatctl.c - developer tool: not written yet. */
#include <stdio.h>

int main(void)
{
    fprintf(stderr, "seatctl: not implemented yet\n");
    return 1;
}
