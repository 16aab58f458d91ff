// Repacking of the file's blocks into the row-interleaved layouts of
// packed_layouts.h. Each format's block is first unpacked into its values
// (unsigned, as the kernels read them) and raw scale fields; the writers below
// then place one row's chunk of 32 values into the group's planes.
#include "backends/cpu/packed_layouts.h"

#include <cstring>

#include "common/error.h"
#include "quant/blocks.h"
#include "quant/k_scales.h"

namespace rayo::cpu::detail::packed {

using namespace rayo::quant;

namespace {

void put_u16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, 2); }

// ---- writers of one row's chunk of 32 unsigned values (q) into a group of R rows

// nibbles: 4 vectors of 4R bytes.
void put_nibbles(uint8_t* dst, const uint8_t* q, int r, int R) {
  for (int c = 0; c < 4; ++c)
    for (int i = 0; i < 4; ++i)
      dst[4 * R * c + 4 * r + i] = static_cast<uint8_t>((q[4 * c + i] & 0xf) | (q[16 + 4 * c + i] & 0xf) << 4);
}

// Bit `bit` of each value, in the bit4 arrangement (bit c of byte i: value
// 4c + i; bit 4 + c: value 16 + 4c + i): one vector of 4R bytes.
void put_bit4(uint8_t* dst, const uint8_t* q, int r, int bit) {
  for (int i = 0; i < 4; ++i) {
    uint8_t b = 0;
    for (int c = 0; c < 4; ++c)
      b |= static_cast<uint8_t>(((q[4 * c + i] >> bit) & 1) << c | ((q[16 + 4 * c + i] >> bit) & 1) << (4 + c));
    dst[4 * r + i] = b;
  }
}

// crumbs: 2 vectors of 4R bytes with the low 2 bits of each value.
void put_crumbs(uint8_t* dst, const uint8_t* q, int r, int R) {
  for (int v = 0; v < 2; ++v)
    for (int i = 0; i < 4; ++i) {
      uint8_t b = 0;
      for (int m = 0; m < 4; ++m) b |= static_cast<uint8_t>((q[16 * v + 4 * m + i] & 3) << (2 * m));
      dst[4 * R * v + 4 * r + i] = b;
    }
}

// bit2: bit j of byte i = bit 2 of value 4j + i; one vector of 4R bytes.
void put_bit2(uint8_t* dst, const uint8_t* q, int r) {
  for (int i = 0; i < 4; ++i) {
    uint8_t b = 0;
    for (int j = 0; j < 8; ++j) b |= static_cast<uint8_t>(((q[4 * j + i] >> 2) & 1) << j);
    dst[4 * r + i] = b;
  }
}

// ---- unpacking of the file's blocks into unsigned values

// Q4_0, Q4_1, IQ4_NL: q[j] low nibble, q[j + 16] high nibble of qs[j].
void unpack_nibbles32(const uint8_t* qs, uint8_t* q) {
  for (int j = 0; j < 16; ++j) {
    q[j] = qs[j] & 0xf;
    q[j + 16] = qs[j] >> 4;
  }
}

// Q5_0, Q5_1: as unpack_nibbles32 with bit 4 of value j in bit j of qh.
void unpack_q5(const uint8_t* qs, const uint8_t* qh_bytes, uint8_t* q) {
  uint32_t qh;
  std::memcpy(&qh, qh_bytes, 4);
  unpack_nibbles32(qs, q);
  for (int j = 0; j < 32; ++j) q[j] = static_cast<uint8_t>(q[j] | ((qh >> j) & 1) << 4);
}

// ---- formats with blocks of 32

template <typename Block>
const Block& block_of(const void* data, int64_t row, int64_t nb, int64_t b) {
  return static_cast<const Block*>(data)[row * nb + b];
}

// F16, BF16: value k of row r at half k R + r, copied as it is.
void pack_half(const void* data, int64_t row, int r, int64_t cols, std::byte* group, int R) {
  const auto* src = static_cast<const uint16_t*>(data) + row * cols;
  auto* dst = reinterpret_cast<uint16_t*>(group);
  for (int64_t k = 0; k < cols; ++k) dst[k * R + r] = src[k];
}

void pack_legacy(TensorType type, const void* data, int64_t row, int r, int64_t nb, std::byte* group, int R) {
  auto* g = reinterpret_cast<uint8_t*>(group);
  const Legacy32 L = legacy32(type, R);
  for (int64_t b = 0; b < nb; ++b) {
    uint8_t q[32];
    uint16_t d = 0, m = 0;
    switch (type) {
      case TensorType::Q4_0: {
        const auto& blk = block_of<BlockQ4_0>(data, row, nb, b);
        unpack_nibbles32(blk.qs, q);
        d = blk.d;
        break;
      }
      case TensorType::IQ4_NL: {
        const auto& blk = block_of<BlockIQ4_NL>(data, row, nb, b);
        unpack_nibbles32(blk.qs, q);
        d = blk.d;
        break;
      }
      case TensorType::Q4_1: {
        const auto& blk = block_of<BlockQ4_1>(data, row, nb, b);
        unpack_nibbles32(blk.qs, q);
        d = blk.d, m = blk.m;
        break;
      }
      case TensorType::Q5_0: {
        const auto& blk = block_of<BlockQ5_0>(data, row, nb, b);
        unpack_q5(blk.qs, blk.qh, q);
        d = blk.d;
        break;
      }
      case TensorType::Q5_1: {
        const auto& blk = block_of<BlockQ5_1>(data, row, nb, b);
        unpack_q5(blk.qs, blk.qh, q);
        d = blk.d, m = blk.m;
        break;
      }
      default: fail("no packed layout for ", type_name(type));
    }
    put_nibbles(g + L.nibbles(b), q, r, R);
    if (L.fifth_bit) put_bit4(g + L.bit4(b), q, r, 4);
    put_u16(g + L.d(b) + 2 * r, d);
    if (L.min) put_u16(g + L.m(b) + 2 * r, m);
  }
}

void pack_q8_0(const void* data, int64_t row, int r, int64_t nb, std::byte* group, int R) {
  auto* g = reinterpret_cast<uint8_t*>(group);
  for (int64_t b = 0; b < nb; ++b) {
    const auto& blk = block_of<BlockQ8_0>(data, row, nb, b);
    uint8_t* pair = g + (b / 2) * kQ8_0Pair(R);
    put_u16(pair + 2 * R * (b % 2) + 2 * r, blk.d);
    uint8_t* qs = pair + 4 * R + 32 * R * (b % 2);
    for (int j = 0; j < 8; ++j)
      for (int i = 0; i < 4; ++i) qs[4 * R * j + 4 * r + i] = static_cast<uint8_t>(blk.qs[4 * j + i]) ^ 0x80;
  }
}

// ---- the k-quants, one super-block of one row

// The 6-bit scales and mins of Q4_K/Q5_K in the lo/hi planes.
void put_k4_scales(uint8_t* lo, uint8_t* hi, const uint8_t* scales, int r, int R) {
  uint32_t top = 0;
  for (int s = 0; s < 8; ++s) {
    uint8_t sc, m;
    get_scale_min_k4(s, scales, &sc, &m);
    lo[R * s + r] = static_cast<uint8_t>((sc & 0xf) | ((m & 0xf) << 4));
    top |= static_cast<uint32_t>(sc >> 4) << (2 * s) | static_cast<uint32_t>(m >> 4) << (16 + 2 * s);
  }
  std::memcpy(hi + 4 * r, &top, 4);
}

void pack_q4_k(const BlockQ4_K& blk, int r, uint8_t* sb, int R) {
  for (int s = 0; s < 8; ++s) {
    // Sub-block s: the low nibbles (s even) or high nibbles (s odd) of qs[32 (s / 2) ..].
    uint8_t q[32];
    for (int l = 0; l < 32; ++l) q[l] = (blk.qs[32 * (s / 2) + l] >> (4 * (s % 2))) & 0xf;
    put_nibbles(sb + Q4K::nibbles(R, s), q, r, R);
  }
  put_k4_scales(sb + Q4K::lo(R), sb + Q4K::hi(R), blk.scales, r, R);
  put_u16(sb + Q4K::d(R) + 2 * r, blk.d);
  put_u16(sb + Q4K::dmin(R) + 2 * r, blk.dmin);
}

void pack_q5_k(const BlockQ5_K& blk, int r, uint8_t* sb, int R) {
  for (int s = 0; s < 8; ++s) {
    // As Q4_K; the fifth bit of value 32 s + l is bit s of qh[l].
    uint8_t q[32];
    for (int l = 0; l < 32; ++l)
      q[l] = static_cast<uint8_t>(((blk.qs[32 * (s / 2) + l] >> (4 * (s % 2))) & 0xf) | ((blk.qh[l] >> s) & 1) << 4);
    put_nibbles(sb + Q5K::nibbles(R, s), q, r, R);
    put_bit4(sb + Q5K::bit4(R, s), q, r, 4);
  }
  put_k4_scales(sb + Q5K::lo(R), sb + Q5K::hi(R), blk.scales, r, R);
  put_u16(sb + Q5K::d(R) + 2 * r, blk.d);
  put_u16(sb + Q5K::dmin(R) + 2 * r, blk.dmin);
}

void pack_q6_k(const BlockQ6_K& blk, int r, uint8_t* sb, int R) {
  uint8_t q[256];  // unsigned 6-bit values (w = d * sc * (q - 32))
  for (int n = 0; n < 2; ++n) {
    const uint8_t* ql = blk.ql + 64 * n;
    const uint8_t* qh = blk.qh + 32 * n;
    for (int l = 0; l < 32; ++l) {
      q[128 * n + l] = static_cast<uint8_t>((ql[l] & 0xf) | (((qh[l] >> 0) & 3) << 4));
      q[128 * n + l + 32] = static_cast<uint8_t>((ql[l + 32] & 0xf) | (((qh[l] >> 2) & 3) << 4));
      q[128 * n + l + 64] = static_cast<uint8_t>((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4));
      q[128 * n + l + 96] = static_cast<uint8_t>((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4));
    }
  }
  for (int u = 0; u < 8; ++u) {
    uint8_t* unit = sb + Q6K::unit(R, u);
    put_nibbles(unit, q + 32 * u, r, R);
    for (int h = 0; h < 2; ++h)
      for (int i = 0; i < 4; ++i) {
        uint8_t bits = 0;
        for (int j = 0; j < 4; ++j) bits |= static_cast<uint8_t>((q[32 * u + 16 * h + 4 * j + i] >> 4) << (2 * j));
        unit[16 * R + 4 * R * h + 4 * r + i] = bits;
      }
  }
  for (int s = 0; s < 16; ++s) sb[Q6K::sc(R, s) + r] = static_cast<uint8_t>(blk.scales[s]);
  put_u16(sb + Q6K::d(R) + 2 * r, blk.d);
}

// Q2_K and Q3_K: value 128 n + 32 shift + l holds bits 2 shift .. 2 shift + 1 of qs[32 n + l].
void unpack_crumbs256(const uint8_t* qs, uint8_t* q) {
  for (int n = 0; n < 2; ++n)
    for (int shift = 0; shift < 4; ++shift)
      for (int l = 0; l < 32; ++l) q[128 * n + 32 * shift + l] = (qs[32 * n + l] >> (2 * shift)) & 3;
}

void pack_q2_k(const BlockQ2_K& blk, int r, uint8_t* sb, int R) {
  uint8_t q[256];
  unpack_crumbs256(blk.qs, q);
  for (int k = 0; k < 8; ++k) put_crumbs(sb + Q2K::crumbs(R, k), q + 32 * k, r, R);
  for (int s = 0; s < 16; ++s) sb[Q2K::sc(R, s) + r] = blk.scales[s];
  put_u16(sb + Q2K::d(R) + 2 * r, blk.d);
  put_u16(sb + Q2K::dmin(R) + 2 * r, blk.dmin);
}

void pack_q3_k(const BlockQ3_K& blk, int r, uint8_t* sb, int R) {
  uint8_t q[256];  // u = q3 + 4: the 2 low bits, plus 4 where the hmask bit is set
  unpack_crumbs256(blk.qs, q);
  for (int v = 0; v < 256; ++v) q[v] = static_cast<uint8_t>(q[v] | ((blk.hmask[v % 32] >> (v / 32)) & 1) << 2);
  for (int k = 0; k < 8; ++k) {
    put_crumbs(sb + Q3K::crumbs(R, k), q + 32 * k, r, R);
    put_bit2(sb + Q3K::bit2(R, k), q + 32 * k, r);
  }
  int8_t sc[16];
  unpack_q3_k_scales(blk.scales, sc);
  for (int s = 0; s < 16; ++s) sb[Q3K::sc(R, s) + r] = static_cast<uint8_t>(sc[s]);
  put_u16(sb + Q3K::d(R) + 2 * r, blk.d);
}

void pack_iq4_xs(const BlockIQ4_XS& blk, int r, uint8_t* sb, int R) {
  for (int s = 0; s < 8; ++s) {
    uint8_t q[32];
    unpack_nibbles32(blk.qs + 16 * s, q);
    put_nibbles(sb + IQ4XS::nibbles(R, s), q, r, R);
    const int low = (blk.scales_l[s / 2] >> (4 * (s % 2))) & 0xf;
    const int high = (blk.scales_h >> (2 * s)) & 3;
    sb[IQ4XS::sc(R, s) + r] = static_cast<uint8_t>(static_cast<int8_t>((low | high << 4) - 32));
  }
  put_u16(sb + IQ4XS::d(R) + 2 * r, blk.d);
}

size_t super_bytes(TensorType type, int R) {
  switch (type) {
    case TensorType::Q2_K: return Q2K::super(R);
    case TensorType::Q3_K: return Q3K::super(R);
    case TensorType::Q4_K: return Q4K::super(R);
    case TensorType::Q5_K: return Q5K::super(R);
    case TensorType::Q6_K: return Q6K::super(R);
    case TensorType::IQ4_XS: return IQ4XS::super(R);
    default: return 0;
  }
}

void pack_super_blocks(TensorType type, const void* data, int64_t row, int r, int64_t nb, std::byte* group, int R) {
  const size_t stride = super_bytes(type, R);
  for (int64_t b = 0; b < nb; ++b) {
    auto* sb = reinterpret_cast<uint8_t*>(group + b * stride);
    switch (type) {
      case TensorType::Q2_K: pack_q2_k(block_of<BlockQ2_K>(data, row, nb, b), r, sb, R); break;
      case TensorType::Q3_K: pack_q3_k(block_of<BlockQ3_K>(data, row, nb, b), r, sb, R); break;
      case TensorType::Q4_K: pack_q4_k(block_of<BlockQ4_K>(data, row, nb, b), r, sb, R); break;
      case TensorType::Q5_K: pack_q5_k(block_of<BlockQ5_K>(data, row, nb, b), r, sb, R); break;
      case TensorType::Q6_K: pack_q6_k(block_of<BlockQ6_K>(data, row, nb, b), r, sb, R); break;
      case TensorType::IQ4_XS: pack_iq4_xs(block_of<BlockIQ4_XS>(data, row, nb, b), r, sb, R); break;
      default: fail("no packed layout for ", type_name(type));
    }
  }
}

size_t group_bytes(TensorType type, int64_t cols, int R) {
  const int64_t nb = cols / info(type).block_size;
  if (const size_t super = super_bytes(type, R)) return static_cast<size_t>(nb) * super;
  switch (type) {
    case TensorType::F16:
    case TensorType::BF16: return (static_cast<size_t>(2 * R * cols) + 63) & ~size_t{63};
    case TensorType::Q8_0: return static_cast<size_t>((nb + 1) / 2) * kQ8_0Pair(R);
    case TensorType::Q4_0:
    case TensorType::Q4_1:
    case TensorType::Q5_0:
    case TensorType::Q5_1:
    case TensorType::IQ4_NL: return (legacy32(type, R).nibbles(nb) + 63) & ~size_t{63};
    default: fail("no packed layout for ", type_name(type));
  }
}

}  // namespace

bool has_layout(TensorType type) {
  switch (type) {
    case TensorType::Q4_0:
    case TensorType::Q4_1:
    case TensorType::Q5_0:
    case TensorType::Q5_1:
    case TensorType::Q8_0:
    case TensorType::IQ4_NL:
    case TensorType::Q2_K:
    case TensorType::Q3_K:
    case TensorType::Q4_K:
    case TensorType::Q5_K:
    case TensorType::Q6_K:
    case TensorType::IQ4_XS:
    case TensorType::F16:
    case TensorType::BF16: return true;
    default: return false;
  }
}

std::shared_ptr<const PackedWeight> pack(TensorType type, const void* data, int64_t rows, int64_t cols, int group_rows) {
  if (group_rows != 8 && group_rows != 16) fail("packed layouts interleave 8 or 16 rows, not ", group_rows);
  auto pw = std::make_shared<PackedWeight>();
  pw->type = type;
  pw->rows = rows;
  pw->cols = cols;
  pw->group_rows = group_rows;
  pw->groups = (rows + group_rows - 1) / group_rows;
  pw->group_bytes = group_bytes(type, cols, group_rows);
  const size_t total = static_cast<size_t>(pw->groups) * pw->group_bytes;
  pw->data = allocate_huge_pages(total, "a packed weight");
  std::memset(pw->data.get(), 0, total);  // padding rows: zero scales
  const int64_t nb = cols / info(type).block_size;
  for (int64_t row = 0; row < rows; ++row) {
    std::byte* group = pw->data.get() + (row / group_rows) * pw->group_bytes;
    const int r = static_cast<int>(row % group_rows);
    if (type == TensorType::F16 || type == TensorType::BF16)
      pack_half(data, row, r, cols, group, group_rows);
    else if (type == TensorType::Q8_0)
      pack_q8_0(data, row, r, nb, group, group_rows);
    else if (super_bytes(type, group_rows) != 0)
      pack_super_blocks(type, data, row, r, nb, group, group_rows);
    else
      pack_legacy(type, data, row, r, nb, group, group_rows);
  }
  return pw;
}

}  // namespace rayo::cpu::detail::packed
