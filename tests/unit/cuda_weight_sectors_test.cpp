// The decode GEMVs' weight loads against the 32-byte sectors L2 serves them
// in. The loads bypass L1 (weight_formats.cuh), so each warp instruction asks
// L2 for every sector it touches, whole: a sector of which an instruction uses
// half is a sector asked for twice. The GPU layout (weight_layout.h) orders
// each format's quants so that every load instruction of a GEMV pass over
// them takes whole sectors, each asked for once a pass. Checked here on the
// addresses Gpu<FMT>::read computes for a warp's 32 lanes (a pass: lane l
// reads unit 32 i + l of a row, gemv.cuh), with the host's layout of the same
// matrix.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "support/simt/simt.h"
// Shape-independent kernel headers.
#include "backends/cuda/kernels/common.cuh"
#include "backends/cuda/kernels/weight_formats.cuh"

#include "backends/cuda/weight_layout.h"

namespace rayo::cuda {
namespace {

constexpr long long kRows = 5;  // the passes read row 3: block indices past a row's offset, as the kernels see them

struct Load {
  int plane;
  long long offset;  // from the matrix's start
  int bytes;
};

// A source for Gpu<FMT>::read that notes each load's place (in read's order)
// instead of making it.
template <int FMT, int K>
struct RecordingPlanes {
  static constexpr int kCols = K;
  GlobalPlanes<FMT, kRows, K> g;
  std::vector<Load>* loads;
  void note(int p, long long b, int byte, int bytes) const { loads->push_back({p, g.at(p, b, byte) - g.w, bytes}); }
  uint4 ld16(int p, long long b, int byte) const {
    note(p, b, byte, 16);
    return make_uint4(0, 0, 0, 0);
  }
  u32 ld4(int p, long long b, int byte) const {
    note(p, b, byte, 4);
    return 0;
  }
  u16 ld2(int p, long long b, int byte) const {
    note(p, b, byte, 2);
    return 0;
  }
};

// Sectors asked for by the instructions of one pass, and how many distinct
// sectors those hold.
struct SectorCount {
  long long asked = 0, distinct = 0;
  double ratio() const { return static_cast<double>(asked) / static_cast<double>(distinct); }
};

struct PassSectors {
  SectorCount quants, all;  // quants: plane 0's loads
  int half_used = 0;        // sectors a plane 0 instruction touches but uses only in part
};

// The sectors of pass `pass` of a warp over row 3 of a kRows x K matrix of format FMT.
template <int FMT, int K>
PassSectors pass_sectors(int pass) {
  using F = Gpu<FMT>;
  constexpr int kUnits = K / F::kUnit;
  std::vector<u8> matrix(gpu_layout(static_cast<TensorType>(FMT), kRows, K).bytes);
  std::vector<std::vector<Load>> lanes(WARP);
  for (int l = 0; l < WARP; ++l) {
    const int u = WARP * pass + l;
    if (u >= kUnits) continue;
    RecordingPlanes<FMT, K> src{{matrix.data()}, &lanes[l]};
    (void)F::read(src, unit_block<FMT, K>(3, u), unit_in_block<FMT>(u));
  }
  PassSectors s;
  std::set<long long> all, quants;
  for (size_t k = 0; k < lanes[0].size(); ++k) {
    std::map<long long, std::set<long long>> bytes_of;  // sector -> the bytes this instruction reads of it
    for (const auto& lane : lanes) {
      if (lane.empty()) continue;
      for (long long b = lane[k].offset; b < lane[k].offset + lane[k].bytes; ++b) bytes_of[b / 32].insert(b);
    }
    const bool quant = lanes[0][k].plane == 0;
    for (const auto& [sector, bytes] : bytes_of) {
      all.insert(sector);
      if (quant) quants.insert(sector);
      if (quant && bytes.size() != 32) ++s.half_used;
    }
    s.all.asked += static_cast<long long>(bytes_of.size());
    if (quant) s.quants.asked += static_cast<long long>(bytes_of.size());
  }
  s.all.distinct = static_cast<long long>(all.size());
  s.quants.distinct = static_cast<long long>(quants.size());
  return s;
}

// Every pass over a row of K columns: the quants' sectors whole and asked for
// once; all the weights' sectors (the small planes of scales too, which the
// lanes of a block share) asked for at most `bound` times on average.
template <int FMT, int K>
void expect_whole_sectors(double bound) {
  const std::string name(type_name(static_cast<TensorType>(FMT)));
  SectorCount quants, all;
  for (int pass = 0; pass * WARP < K / Gpu<FMT>::kUnit; ++pass) {
    const PassSectors s = pass_sectors<FMT, K>(pass);
    EXPECT_EQ(s.half_used, 0) << name << " K " << K << " pass " << pass;
    EXPECT_EQ(s.quants.asked, s.quants.distinct) << name << " K " << K << " pass " << pass;
    quants.asked += s.quants.asked, quants.distinct += s.quants.distinct;
    all.asked += s.all.asked, all.distinct += s.all.distinct;
  }
  EXPECT_LE(all.ratio(), bound) << name << " K " << K;
  std::printf("%-7s K %5d: sectors asked / held, quants %.2f, all planes %.2f\n", name.c_str(), K, quants.ratio(),
              all.ratio());
}

TEST(CudaWeightSectors, EveryLoadOfAGemvPassTakesWholeSectors) {
  // The bound: Q3_K's 12 scale bytes a block (3 words at a 12-byte stride)
  // and Q5_K's 32 bytes of high bits, which all 4 lanes of a block read whole
  // in two loads.
  constexpr double kBound = 1.25;
  expect_whole_sectors<FMT_Q4_0, 4096>(kBound);
  expect_whole_sectors<FMT_Q4_1, 4096>(kBound);
  expect_whole_sectors<FMT_Q5_0, 4096>(kBound);
  expect_whole_sectors<FMT_Q5_1, 4096>(kBound);
  expect_whole_sectors<FMT_Q8_0, 4096>(kBound);
  expect_whole_sectors<FMT_Q8_0, 1536>(kBound);
  expect_whole_sectors<FMT_Q2_K, 4096>(kBound);
  expect_whole_sectors<FMT_Q3_K, 4096>(kBound);
  expect_whole_sectors<FMT_Q4_K, 4096>(kBound);
  expect_whole_sectors<FMT_Q4_K, 1536>(kBound);
  expect_whole_sectors<FMT_Q5_K, 4096>(kBound);
  expect_whole_sectors<FMT_Q6_K, 4096>(kBound);
  expect_whole_sectors<FMT_Q6_K, 14336>(kBound);
  expect_whole_sectors<FMT_IQ4_NL, 4096>(kBound);
  expect_whole_sectors<FMT_IQ4_XS, 4096>(kBound);
}

// Nothing is added, dropped or converted: the planes' pieces of a group of
// blocks hold each of its bytes once, and a split matrix's planes hold the
// file's bytes (each block's, wherever its pieces went).
TEST(CudaWeightSectors, PlanesHoldEveryByteOfTheFileOnce) {
  for (TensorType type : {TensorType::Q4_0, TensorType::Q4_1, TensorType::Q5_0, TensorType::Q5_1, TensorType::Q8_0,
                          TensorType::Q2_K, TensorType::Q3_K, TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K,
                          TensorType::IQ4_NL, TensorType::IQ4_XS}) {
    const int64_t block = info(type).block_size, block_bytes = static_cast<int64_t>(info(type).block_bytes);
    for (int64_t blocks : {2, 3}) {  // Q8_0: pairs, and single blocks in rows of an odd number
      const WeightLayout l = gpu_layout(type, kRows, blocks * block);
      SCOPED_TRACE(std::string(type_name(type)) + " blocks per row " + std::to_string(blocks));
      std::vector<int> seen(static_cast<size_t>(block_bytes * l.group_blocks), 0);
      for (const WeightPlane& p : l.planes)
        for (const BlockPiece& piece : p.pieces)
          for (int b = piece.first; b < piece.first + piece.bytes; ++b) ++seen.at(static_cast<size_t>(b));
      for (size_t b = 0; b < seen.size(); ++b) EXPECT_EQ(seen[b], 1) << "byte " << b << " of a group";
      // Split: the multiset of bytes is the file's (bytes that name their place mod 251).
      std::vector<uint8_t> file(static_cast<size_t>(kRows * blocks * block_bytes));
      for (size_t i = 0; i < file.size(); ++i) file[i] = static_cast<uint8_t>(i % 251);
      std::vector<uint8_t> split(file.size());
      split_rows(l, file.data(), kRows, split.data());
      std::vector<int> count(256, 0);
      for (uint8_t v : file) ++count[v];
      for (uint8_t v : split) --count[v];
      EXPECT_EQ(std::count(count.begin(), count.end(), 0), 256);
    }
  }
}

// Q8_0 pairs blocks only in rows of an even number of them (a pair never
// straddles two rows, which upload in separate pieces): the host's layout
// and the kernels' reading agree on which rows.
TEST(CudaWeightSectors, Q8_0PairsBlocksInRowsOfAnEvenNumber) {
  EXPECT_EQ(gpu_layout(TensorType::Q8_0, kRows, 4096).group_blocks, 2);
  EXPECT_TRUE((paired_blocks<FMT_Q8_0, 4096>()));
  EXPECT_EQ(gpu_layout(TensorType::Q8_0, kRows, 96).group_blocks, 1);
  EXPECT_FALSE((paired_blocks<FMT_Q8_0, 96>()));
  EXPECT_EQ(gpu_layout(TensorType::Q4_K, kRows, 4096).group_blocks, 1);
  // Unpaired rows keep each block's 32 quant bytes together: each of a
  // lane's two loads uses half of the sectors it touches.
  EXPECT_GT((pass_sectors<FMT_Q8_0, 96>(0).half_used), 0);
}

}  // namespace
}  // namespace rayo::cuda
