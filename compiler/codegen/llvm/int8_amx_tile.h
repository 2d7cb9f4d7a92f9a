#pragma once
/// \file
/// Private to compiler/codegen/llvm: one tile of conv2d_NCHWc_int8 (and dense_int8, its 1 x M
/// plane) computed by AMX's tile matrix unit (TMUL) instead of VNNI vectors.
///
/// The int8 layouts already are AMX's operand layouts. A tile row of A is one output pixel's
/// input bytes: NCHW[x]c keeps a pixel's ic_bn channels adjacent, and the pixels of a row sit
/// stride_w * ic_bn bytes apart, which tileloadd's stride takes. B is VNNI-packed: row k holds
/// four input channels of 16 output channels, which is what OIHW[x/4]i[y]o4i keeps in 64
/// adjacent bytes, rows oc_bn * 4 bytes apart. C is 16 int32 channels per pixel, as NCHW16c.
/// So `tdpbusd` runs on the packed tensors as they are, up to 16 pixels x 16 channels x 64
/// input channels (uint8 x int8, summed exactly in int32) per instruction.
///
/// A tile (the convolution emitter's register tile, or a run of its interior tiles) is cut into
/// A tiles ("pieces") of at most 16 pixels and B tiles of 16 channels, run in passes of a few
/// pieces and channel blocks. At a border, a tap reads inside the input for some of a piece's
/// pixels only: its A tile is then loaded shifted (starting a few pixels before or after the
/// piece, so that all its rows read inside the input row) into a C tile of its own, and the
/// store adds each shifted C tile's rows to the pixels they belong to. Zero padding costs no
/// copy that way; other padding bytes (a quantized zero point) are gathered into a scratch tile.
///
/// Short rows leave A tiles part empty (a row of 7 pixels fills 7 of 16 rows), border taps need
/// shifted C tiles of their own, and a nonzero pad byte a gathered A tile. A stride-1 kernel on
/// an image that fits on the stack therefore reads a padded copy of it (the padded form): with the
/// padding in memory, output pixel (y, x) at position q = y * padded_width + x of the padded grid
/// reads tap (kh, kw) at q plus a constant, so one run of positions covers every row, two pad
/// columns per row computed and dropped, and every tap loads a whole A tile with no border case.
///
/// LLVM 14 configures the eight tile registers once per function, one shape each: a kernel
/// plans its passes (plan_amx_kernel) before it takes AMX.

#include <llvm/IR/IRBuilder.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "compiler/codegen/llvm/column_classes.h"
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
  /// point at a row of padding (in_width pixels).
  std::function<std::vector<llvm::Value*>(llvm::Value* plane, llvm::Value* kh)> row_pointers;
  /// Stores output (row r, column p, channel block k of 16) of the tile: a <16 x i32> sum.
  std::function<void(int64_t r, int64_t p, int64_t k, llvm::Value* sum)> store;
  /// The padded form's copy of the tile's image (i8*, [input chunk][padded row][padded column]
  /// [ic_bn]); row_pointers are not used then.
  llvm::Value* padded_image = nullptr;
};

/// Whether the kernel of (w, s) on AMX tiles takes the padded form: stride 1, a kernel that
/// reads padding or more than one pixel, and a padded image of at most
/// amx_padded_image_limit() bytes (each thread keeps one on its stack). Measured on resnet-50's
/// 3x3 layers it is faster than the shifted tiles on rows of 7 to 28 pixels (1.7x, 1.14x,
/// 1.11x) and even on rows of 56; TT_AMX_PADDED=0 turns it off (to compare the two forms).
bool amx_reads_padded_image(const schedule_space::Conv2dWorkload& w,
                            const schedule_space::Conv2dInt8Schedule& s);
constexpr int64_t amx_padded_image_limit() { return int64_t{256} << 10; }
/// Rows and columns of the padded image.
inline std::pair<int64_t, int64_t> amx_padded_extent(const schedule_space::Conv2dWorkload& w) {
  return {w.in_height + w.pad_top + w.pad_bottom, w.in_width + w.pad_left + w.pad_right};
}

/// The tile at output rows [oh0, oh0 + rows), columns [ow0, ow0 + cols), channel chunk occ,
/// image n. `ow0c` is the constant first column of a border or tail tile (whose taps are
/// checked at compile time); interior tiles read inside the input for every tap. In the padded
/// form the tile is the whole output plane (oh0 = ow0 = 0).
struct AmxTile {
  llvm::Value *n, *occ, *oh0, *ow0;
  std::optional<int64_t> ow0c;
  int64_t rows, cols;
};

/// How many pieces and channel blocks one pass holds at most (a kernel-wide choice).
struct AmxPassLimits {
  int64_t pieces = 2, blocks = 4;
};

/// Interior column tiles of `reg_n` columns run on AMX in groups of this many (up to 32
/// columns), so that a pass holds two A tiles, each B tile loaded once for both, whatever reg_n
/// the vector forms' register budget left the config.
inline int64_t amx_run_tiles(int64_t reg_n) { return std::max<int64_t>(1, 32 / reg_n); }

/// The widest pass limits (2 pieces x 4 blocks, then 2 x 2, 1 x 2, 1 x 1) under which every
/// tile of the kernel (its row tiles and the row tail, times its column classes: interior runs
/// of amx_run_tiles, border and tail tiles; in the padded form, the plane) fits in the tile
/// registers of one function: the tiles of one shape (rows, bytes per row) need as many
/// registers as the most of them live at once, summed over the shapes. Nothing when even 1 x 1
/// passes do not fit: the kernel then takes a vector form.
std::optional<AmxPassLimits> plan_amx_kernel(const schedule_space::Conv2dWorkload& w,
                                             const schedule_space::Conv2dInt8Schedule& s,
                                             int64_t pad, const std::vector<ColumnClass>& columns);

/// Whether this process may run AMX int8 tiles (support/amx_state.h: the CPU has them and Linux
/// granted the process their state).
bool host_runs_amx_int8();

/// Requests the tile data state for this process where the CPU has it (idempotent, cheap after
/// the first call). Called before any generated code runs.
void enable_amx_tiles();

/// Emits the tile at the builder's position.
void emit_amx_int8_tile(llvm::IRBuilder<>& b, llvm::Module& m, const AmxTileContext& ctx,
                        const AmxTile& tile, int64_t input_chunks, AmxPassLimits limits);

}  // namespace tensortune::codegen::emit
