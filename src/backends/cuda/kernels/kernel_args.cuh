// The argument of every kernel: one struct per kernel family, passed by value
// in the kernel's parameter space and filled field by field by name, by the
// backend (cuda_backend.cpp), the kernel benchmark (tools/kernel_bench.cpp)
// and the tests (the SIMT emulator's and the native ones). Which kernels of
// which file take which struct, and with what grid and block, is the spec's
// (kernel_specs.h: KernelSpec::entry, KernelSpec::launch).
//
// Every field is 8 bytes (a pointer, or a long long), nested structs included,
// so the host's copy and the device's agree byte for byte with no padding.
// Fields a variant does not use (a twin it does not write, the bias of a
// matrix without one) are null.
//
// Plain C++ for three compilers: NVRTC (common.cuh includes it, after the
// u8/i8/u16 typedefs; float2 is CUDA's), the SIMT emulator (the same, with the
// emulator's float2) and the host (backends/cuda/kernel_args.h includes it
// inside rayo::cuda::kargs, with host stand-ins for those types). It has no
// include guard for that reason: each includer includes it once.

// An 8-bit twin of activation rows (q8_act.cuh): the int8 values, a (scale,
// scaled sum) pair per 32 values, and sums of squares per 32 values.
struct TwinIn {
  const i8* q;
  const float2* ds;
  const float* ss;
};
struct TwinOut {
  i8* q;
  float2* ds;
  float* ss;
};

// Where a step's token rows are in the paged KV cache (kv_row, common.cuh):
// each row's position and sequence, the sequences' block tables, and the
// table's row length.
struct KvPlaces {
  const int* positions;
  const int* seq;
  const int* block_table;
  const int* max_blocks;
};

// gemv.cu, gemm.cu: y = W x (+ epi: the residual or the bias), for the token
// rows below *n_rows; x's twin in (quantized W), y's twin out.
struct MatmulArgs {
  const u8* w;
  const float* x;
  TwinIn xt;
  const float* norm_w;  // the fused RMSNorm's weight (float W)
  float* y;
  const float* epi;
  TwinOut yt;
  const float* y_norm_w;  // the next norm's weight, for y's twin (EMIT_NORM)
  const int* n_rows;
};

// gemv_swiglu.cu, gemm_swiglu.cu: y = silu(gate x) * (up x).
struct GateUpArgs {
  const u8* gate;
  const u8* up;
  const float* x;
  TwinIn xt;
  const float* norm_w;
  float* y;
  TwinOut yt;
  const int* n_rows;
};

// qkv_rope_store.cu, gemm_qkv_rope_store.cu: q, k, v = W x (+ bias), rotated;
// q to q_out, k and v into the cache.
struct QkvArgs {
  const u8* wq;
  const u8* wk;
  const u8* wv;
  const float* bq;
  const float* bk;
  const float* bv;
  const float* x;
  TwinIn xt;
  const float* norm_w;
  const float* freq_factors;
  float* q_out;
  u16* k_cache;
  u16* v_cache;
  KvPlaces kv;
  const int* n_rows;
};

// attention.cu (the split kernel: partial results and per-(row, kv head)
// counters) and attention_prefill.cu (which uses neither).
struct AttentionArgs {
  const float* q;
  const u16* k_cache;
  const u16* v_cache;
  float* partial;
  int* counters;
  float* out;
  i8* out_q;
  float2* out_ds;
  KvPlaces kv;
  const int* n_rows;
};

// Row by row, y = f(a, b): elementwise.cu's add (b: the other rows), add_bias
// (b: the bias), swiglu (a: gate, b: up); rmsnorm.cu's rms_norm (b: the weight).
struct RowsArgs {
  const float* a;
  const float* b;
  float* y;
  const int* n_rows;
};

// layernorm.cu: y = (a - mean) / sqrt(var + EPS) * w + bias, row by row
// (encoder-decoder models: Whisper's LayerNorm).
struct LayerNormArgs {
  const float* a;
  const float* w;
  const float* bias;
  float* y;
  const int* n_rows;
};

// elementwise.cu add_position: y[r] = a[r] + table[positions[r]], a position
// embedding's row (COLS values) added to each token row.
struct PositionArgs {
  const float* a;
  const float* table;
  const int* positions;
  float* y;
  const int* n_rows;
};

// cross_attention.cu (encoder-decoder models: Whisper). A layer's
// cross-attention memory is its keys [slots][CROSS_LEN][WIDTH] then its values
// alike, f16; row t of a step reads or writes the slot of its sequence,
// cross_slot[seq[t]].
// dense_attention: each row's query over the keys and values (k, v: f32
// [rows][WIDTH]) of the step's rows of its sequence, unmasked (an encoder's
// self-attention).
struct DenseAttentionArgs {
  const float* q;
  const float* k;
  const float* v;
  float* out;
  const int* seq;
  const int* n_rows;
};
// cross_kv_store: k[t], v[t] as row positions[t] of the slot's memory.
struct CrossKvStoreArgs {
  const float* k;
  const float* v;
  u16* k_mem;
  u16* v_mem;
  const int* positions;
  const int* seq;
  const int* cross_slot;
  const int* n_rows;
};
// cross_attention: each row's query over every row of its slot's memory.
struct CrossAttentionArgs {
  const float* q;
  const u16* k_mem;
  const u16* v_mem;
  float* out;
  const int* seq;
  const int* cross_slot;
  const int* n_rows;
};

// conv1d.cu conv1d_unfold: the input of a kernel-3 convolution (padding 1)
// unfolded, one row of CHANNELS * 3 values per output frame (below *n_rows),
// for the matrix product with the weight [out][CHANNELS * 3]; *in_frames
// frames of input.
struct UnfoldArgs {
  const float* x;
  float* y;
  const int* in_frames;
  const int* n_rows;
};

// elementwise.cu select_rows: y[r] = x[rows[r]], and y's twin.
struct SelectRowsArgs {
  const float* x;
  float* y;
  const int* rows;
  const float* norm_w;
  TwinOut yt;
  const int* n_rows;
};

// dequant.cu embed: y[t] = row tokens[t] of w, and y's twin.
struct EmbedArgs {
  const u8* w;
  const int* tokens;
  float* y;
  const float* norm_w;
  TwinOut yt;
  const int* n_rows;
};

// dequant.cu dequant_f16: the `rows` rows of w as f16.
struct DequantArgs {
  const u8* w;
  u16* out;
  long long rows;
};

// gemm_dense.cu: y[t] = W . x[t] (+ add[t] where add is not null), W f16
// [ROWS][COLS], x f16 [rows][COLS], y and add f32 [rows][ROWS], for the token
// rows below *n_rows.
struct DenseGemmArgs {
  const u16* w;
  const u16* x;
  float* y;
  const float* add;
  const int* n_rows;
};

// dense_rows.cu rows_f16: y = f16(x), or with NORM f16(x / rms(x) * norm_w):
// the dense GEMM's tokens.
struct HalfRowsArgs {
  const float* x;
  const float* norm_w;
  u16* y;
  const int* n_rows;
};

// quantize.cu quantize_rows: the twin of x (of x * norm_w with EMIT_NORM).
struct QuantizeArgs {
  const float* x;
  const float* norm_w;
  TwinOut yt;
  const int* n_rows;
};

// rope.cu
struct RopeArgs {
  const float* x;
  float* y;
  const float* freq_factors;
  const int* positions;
  const int* n_rows;
};

// kv_store.cu
struct KvStoreArgs {
  const float* k;
  const float* v;
  u16* k_cache;
  u16* v_cache;
  KvPlaces kv;
  const int* n_rows;
};

// sample.cu: a token per output row below *n_rows (records and pairs: the
// step block's sampling records and penalty pairs, device_sampling.h).
struct SampleArgs {
  const float* logits;
  float* scratch;
  const int* records;
  const int* pairs;
  int* ids;
  const int* n_rows;
};
