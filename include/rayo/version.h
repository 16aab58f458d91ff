#pragma once
// rayo's public API version.
#define RAYO_VERSION_MAJOR 0
#define RAYO_VERSION_MINOR 1
#define RAYO_VERSION_PATCH 0
