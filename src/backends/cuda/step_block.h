#pragma once
// Where each part of the step block sits: the ints (and an encoder step's
// features) the CUDA backend uploads at once before each step, which the
// step's kernels read through pointers into it. In ints from the start:
//
//   header       n_tokens, n_outputs, max_blocks_per_seq, 1, n_frames, 0, 0, 0
//                (the 1: the row length of the ring table, ring_start; n_frames:
//                an encoder step's input frames)
//   tokens       [T]   ids
//   positions    [T]
//   output rows  [O]
//   seq          [T]   each row's sequence
//   ring_start   [T]   each sequence's first ring block
//   cross_slot   [T]   each sequence's cross-attention slot
//   records      [O][kSampleRecordInts]  sampling requests
//   table        the used part of the block table (up to table_capacity),
//                then at an even int the penalty pairs (up to pairs_capacity)
//   features     [feature_values] floats, feature-major (an encoder's input)
//
// T = max_tokens, O = max_outputs of the graph. A step uploads the block from
// its start to the end of what it uses.
#include <cstddef>
#include <cstdint>

#include "backends/cuda/device_sampling.h"

namespace rayo::cuda {

struct StepBlockLayout {
  static constexpr size_t kHeaderInts = 8;
  static constexpr size_t kNFrames = 4;  // the header's n_frames

  size_t max_tokens = 0, max_outputs = 0;
  size_t table_capacity = 0, pairs_capacity = 0;  // entries, pairs
  size_t feature_values = 0;                      // floats of the largest step's features

  size_t tokens() const { return kHeaderInts; }
  size_t positions() const { return tokens() + max_tokens; }
  size_t output_rows() const { return positions() + max_tokens; }
  size_t seq() const { return output_rows() + max_outputs; }
  size_t ring_start() const { return seq() + max_tokens; }
  size_t cross_slot() const { return ring_start() + max_tokens; }
  size_t records() const { return cross_slot() + max_tokens; }
  size_t table() const { return records() + max_outputs * kSampleRecordInts; }
  // The first int of the penalty pairs after a table of `used` entries.
  size_t pairs(size_t used) const { return (table() + used + 1) / 2 * 2; }
  // After the largest table and pairs, on a 64-byte boundary.
  size_t features() const { return (table() + table_capacity + 1 + 2 * pairs_capacity + 15) / 16 * 16; }
  size_t total() const { return features() + feature_values; }
};

}  // namespace rayo::cuda
