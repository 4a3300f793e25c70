// ark_tiles.cuh, host stand-in for tests/tables_dump.cc: a generated file compiled with a C++ host
// compiler, its tables only (no device code).
#ifndef ARK_TILES_CUH
#define ARK_TILES_CUH

#include "ark_ops.h"
#include "ark_task.h"

#endif
