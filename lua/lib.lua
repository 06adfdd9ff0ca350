#!lua name=seatd
