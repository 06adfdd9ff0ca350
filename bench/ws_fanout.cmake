# bench/ws_fanout.cmake - the live seat map's fan-out benchmark (bench/ws_fanout.sh runs it).
add_executable(seatd_ws_fanout ws_fanout.c bench_util.c)
target_link_libraries(seatd_ws_fanout PRIVATE seatd_core)
