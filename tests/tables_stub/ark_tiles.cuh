// ark_tiles.cuh, host stand-in for tests/tables_dump.cc: a generated file compiled with a C++ host
// compiler, its tables only (no device code); the dtypes' defaults as in templates/ark_tiles.cuh.
#ifndef ARK_TILES_CUH
#define ARK_TILES_CUH

#include "ark_ops.h"
#include "ark_task.h"

#ifndef ARK_TILES_FP16
#define ARK_TILES_FP16 1
#endif
#ifndef ARK_TILES_BF16
#define ARK_TILES_BF16 1
#endif
#ifndef ARK_TILES_FP32
#define ARK_TILES_FP32 1
#endif

#endif
