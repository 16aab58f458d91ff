#pragma once
// Skips a test (with the reason) on a machine without a usable GPU.
#include <gtest/gtest.h>

#include "backends/cuda/cuda_backend.h"

#define RAYO_REQUIRE_GPU()                                                                     \
  do {                                                                                         \
    if (!::rayo::cuda::cuda_available())                                                       \
      GTEST_SKIP() << "no usable GPU: " << ::rayo::cuda::cuda_unavailable_reason();            \
  } while (0)
