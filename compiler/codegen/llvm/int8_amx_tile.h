#pragma once
/// \file
/// Private to compiler/codegen/llvm: one register tile of conv2d_NCHWc_int8 (and dense_int8,
/// its 1 x M plane) computed by AMX's tile matrix unit (TMUL) instead of VNNI vectors.
///
/// The int8 layouts already are AMX's operand layouts. A tile row of A is one output pixel's
/// input bytes: NCHW[x]c keeps a pixel's ic_bn channels adjacent, and the pixels of a row sit
/// stride_w * ic_bn bytes apart, which tileloadd's stride takes. B is VNNI-packed: row k holds
/// four input channels of 16 output channels, which is what OIHW[x/4]i[y]o4i keeps in 64
/// adjacent bytes, rows oc_bn * 4 bytes apart. C is 16 int32 channels per pixel, as NCHW16c.
/// So `tdpbusd` runs on the packed tensors as they are, up to 16 pixels x 16 channels x 64
/// input channels (uint8 x int8, summed exactly in int32) per instruction.
///
/// A config's register tile (reg_h rows x reg_n columns x oc_bn channels) is cut into A tiles of
/// at most 16 pixels and B tiles of 16 channels, run in passes that keep at most six of AMX's
/// eight tile registers live; every valid config of the template builds. Taps that read
/// padding (border tiles only) gather their pixels into a scratch tile first.

#include <llvm/IR/IRBuilder.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "schedule_space/conv2d_nchwc_int8_template.h"
#include "schedule_space/workload.h"

namespace tensortune::codegen::emit {

/// What an AMX tile needs of the convolution emitter around it.
struct AmxTileContext {
  const schedule_space::Conv2dWorkload* workload = nullptr;
  const schedule_space::Conv2dInt8Schedule* schedule = nullptr;
  llvm::Value* data = nullptr;    ///< i8*, NCHW[ic_bn]c
  llvm::Value* weight = nullptr;  ///< i8*, OIHW[ic_bn/4]i[oc_bn]o4i
  int64_t pad = 0;                ///< the byte the input's padding holds
  /// Row pointers (i8*) of the tile's input rows for kernel row kh: rows outside the input
  /// point at a row of padding.
  std::function<std::vector<llvm::Value*>(llvm::Value* plane, llvm::Value* kh)> row_pointers;
  /// Stores output (row r, column p, channel block k of 16) of the tile: a <16 x i32> sum.
  std::function<void(int64_t r, int64_t p, int64_t k, llvm::Value* sum)> store;
};

/// The tile at output rows [oh0, oh0 + rows), columns [ow0, ow0 + cols), channel chunk occ,
/// image n. `ow0c` is the constant first column of a border or tail tile (whose taps are
/// checked at compile time); interior tiles read inside the input for every tap.
struct AmxTile {
  llvm::Value *n, *occ, *oh0, *ow0;
  std::optional<int64_t> ow0c;
  int64_t rows, cols;
};

/// Whether this process may run AMX int8 tiles: the CPU has them (amx-tile, amx-int8) and the
/// kernel granted the tile data state (Linux asks each process to request it once; see
/// enable_amx_tiles).
bool host_runs_amx_int8();

/// Requests the tile data state for this process where the CPU has it (idempotent, cheap after
/// the first call). Called before any generated code runs.
void enable_amx_tiles();

/// Emits the tile at the builder's position.
void emit_amx_int8_tile(llvm::IRBuilder<>& b, llvm::Module& m, const AmxTileContext& ctx,
                        const AmxTile& tile, int64_t input_chunks);

}  // namespace tensortune::codegen::emit
