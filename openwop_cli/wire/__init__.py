"""What both processes speak: the channel's messages and frames, the environment `wop` hands a program, and how a
program's values become JSON. Imported inside users' programs: stdlib and orjson only."""
