// Undefines every shape macro (and kernel-internal macro) of the CUDA kernels,
// so that an emulator test can include a kernel again with other shapes.
// Deliberately without an include guard.
#undef WTYPE
#undef WTYPE2
#undef QTYPE
#undef KTYPE
#undef VTYPE
#undef COLS
#undef ROWS
#undef TT
#undef NORM
#undef EPS
#undef EPI
#undef N_HEAD
#undef N_HEAD_KV
#undef HEAD_DIM
#undef N_ROT
#undef ROPE_NEOX
#undef THETA_SCALE
#undef FREQ_SCALE
#undef HAS_FF
#undef QKV_BIAS
#undef GROUP
#undef KV_WIDTH
#undef CHUNK
#undef N_SPLITS
#undef SCALE
#undef BLOCK_SIZE
#undef Q_PAIRS
#undef KV_PAIRS
#undef QKV_PAIRS
#undef ATT_WARPS
#undef ATT_THREADS
#undef DPL
#undef PART
#undef NORM_THREADS
#undef EW_THREADS
