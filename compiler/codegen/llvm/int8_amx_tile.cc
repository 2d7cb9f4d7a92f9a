// Implements int8_amx_tile.h.
#include "compiler/codegen/llvm/int8_amx_tile.h"

#include <llvm/IR/IntrinsicsX86.h>
#include <llvm/IR/Module.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <string>

#include "compiler/codegen/llvm/ir_helpers.h"
#include "support/amx_state.h"
#include "support/error.h"

namespace tensortune::codegen::emit {
namespace {

using schedule_space::Conv2dInt8Schedule;
using schedule_space::Conv2dWorkload;
using Shape = std::pair<int64_t, int64_t>;  // rows, bytes per row

constexpr int64_t kTileRows = 16;   // pixels of one A tile (TMUL's M)
constexpr int64_t kBlock = 16;      // output channels of one B or C tile (64 bytes of int32)
constexpr int64_t kStepBytes = 64;  // input channels of one reduction step, at most
constexpr int64_t kTileRegisters = 8;

// Input channels per reduction step: the largest multiple of 4 up to 64 that divides ic_bn, so
// that every step has one shape (a rest step of another width would add A and B shapes).
int64_t step_bytes(const Conv2dInt8Schedule& s) {
  for (int64_t d = kStepBytes; d >= 4; d -= 4)
    if (s.ic_bn % d == 0) return d;
  return 4;
}

// An A tile: output row r of the tile, its columns [p0, p0 + m) (or pixels [p0, p0 + m) of the
// tile's rows read as one run). Each tap loads its A tile starting `shifts[tap_shift[kw]]`
// pixels from p0 (0 but at borders), into the C tiles of that shift.
struct Piece {
  int64_t r, p0, m;
  int64_t fresh = 0;  // pixels [0, fresh) are also the previous piece's (the padded form's last)
  std::vector<int64_t> shifts{0};
  std::vector<int> tap_shift;  // per kw; -1: the tap reads no pixel of the piece inside the input
  bool gather = false;         // the taps' A tiles gathered, padding bytes where they leave
};

// How a tile is cut into pieces, and each piece's shifts.
class TilePlan {
 public:
  TilePlan(const Conv2dWorkload& w, int64_t pad, int64_t rows, int64_t cols,
           std::optional<int64_t> ow0c, bool padded)
      : w_(w), pad_(pad), cols_(cols), ow0c_(ow0c) {
    if (padded) {
      // The plane's positions on the padded grid, the last row's pad columns left out; equal
      // pieces, the last one moved back to end at the run's end (a few pixels computed twice).
      grid_cols_ = amx_padded_extent(w).second;
      const int64_t length = (rows - 1) * grid_cols_ + cols;
      const int64_t n = (length + kTileRows - 1) / kTileRows, m = (length + n - 1) / n;
      for (int64_t i = 0; i < n; ++i) {
        const int64_t p0 = std::min(i * m, length - m);
        pieces_.push_back({0, p0, m, i * m - p0, {0}, std::vector<int>(w.kernel_w, 0), false});
      }
      return;
    }
    // A 1x1 kernel of stride 1 without padding reads its tile's whole rows as one run of
    // pixels (NCHW[x]c keeps a plane's rows adjacent): pieces then cut the run, not each row,
    // so that two rows of 7 fill one A tile of 14, not two of 7.
    flat_ = rows > 1 && !ow0c && w.kernel_h == 1 && w.kernel_w == 1 && w.stride_w == 1 &&
            w.pad_left == 0 && w.pad_right == 0 && cols == w.in_width && cols == w.out_width();
    if (flat_) {
      cut(0, rows * cols);
    } else {
      for (int64_t r = 0; r < rows; ++r) cut(r, cols);
    }
    for (Piece& piece : pieces_) find_shifts(piece);
  }

  const std::vector<Piece>& pieces() const { return pieces_; }
  bool flat() const { return flat_; }
  // (row, column) of the tile's pixel q of piece row r; nothing for a padded grid's pad column.
  std::optional<std::pair<int64_t, int64_t>> pixel(int64_t r, int64_t q) const {
    if (grid_cols_ > 0) {
      if (q % grid_cols_ >= cols_) return std::nullopt;
      return std::pair{q / grid_cols_, q % grid_cols_};
    }
    return flat_ ? std::pair{q / cols_, q % cols_} : std::pair{r, q};
  }
  bool padded() const { return grid_cols_ > 0; }

  // The input column pixel p (of the tile) reads at tap kw; a border tile's only.
  int64_t column(int64_t p, int64_t kw) const {
    return (*ow0c_ + p) * w_.stride_w + kw * w_.dilation_w - w_.pad_left;
  }
  // Interior tiles (no constant first column) read inside the input for every tap.
  bool column_valid(int64_t p, int64_t kw) const {
    if (!ow0c_) return true;
    const int64_t iw = column(p, kw);
    return iw >= 0 && iw < w_.in_width;
  }

 private:
  // Pieces of equal size (up to 16 pixels): a run of 28 is two of 14, not 16 and 12, so that
  // the kernel's tiles have fewer shapes.
  void cut(int64_t r, int64_t length) {
    const int64_t n = (length + kTileRows - 1) / kTileRows;
    int64_t p0 = 0;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t m = length / n + (i < length % n ? 1 : 0);
      pieces_.push_back({r, p0, m, 0, {0}, {}, false});
      p0 += m;
    }
  }

  void find_shifts(Piece& piece) const {
    piece.tap_shift.assign(static_cast<size_t>(w_.kernel_w), 0);
    if (!ow0c_) return;
    std::vector<int64_t> shifts;
    for (int64_t kw = 0; kw < w_.kernel_w; ++kw) {
      int64_t a = piece.m, b = 0;  // the pixels reading inside the input: [a, b)
      for (int64_t p = 0; p < piece.m; ++p)
        if (column_valid(piece.p0 + p, kw)) {
          a = std::min(a, p);
          b = std::max(b, p + 1);
        }
      int shift = -1;
      if (a >= b) {
        piece.gather |= pad_ != 0;  // padding bytes that are not zero still add products
      } else if (a == 0 && b == piece.m) {
        shift = index_of(shifts, 0);
      } else if (pad_ != 0) {
        piece.gather = true;
      } else if (auto s = fitting_shift(piece, kw, a, b)) {
        shift = index_of(shifts, *s);
      } else {
        piece.gather = true;  // wider than the input row: no shift reads inside it
      }
      piece.tap_shift[static_cast<size_t>(kw)] = shift;
    }
    if (piece.gather) {
      piece.tap_shift.assign(static_cast<size_t>(w_.kernel_w), 0);
      return;
    }
    if (!shifts.empty()) piece.shifts = shifts;
  }

  // A start s (relative to the piece) whose m rows all read inside the input row and cover
  // the pixels [a, b): s = a where the rows after b still read inside, else s = b - m.
  std::optional<int64_t> fitting_shift(const Piece& piece, int64_t kw, int64_t a, int64_t b) const {
    auto inside = [&](int64_t s) {
      return column(piece.p0 + s, kw) >= 0 && column(piece.p0 + s + piece.m - 1, kw) < w_.in_width;
    };
    if (inside(a)) return a;
    if (inside(b - piece.m)) return b - piece.m;
    return std::nullopt;
  }

  static int index_of(std::vector<int64_t>& shifts, int64_t s) {
    auto it = std::find(shifts.begin(), shifts.end(), s);
    if (it == shifts.end()) it = shifts.insert(shifts.end(), s);
    return static_cast<int>(it - shifts.begin());
  }

  const Conv2dWorkload& w_;
  int64_t pad_, cols_;
  std::optional<int64_t> ow0c_;
  bool flat_ = false;
  int64_t grid_cols_ = 0;  // the padded form's padded width
  std::vector<Piece> pieces_;
};

// A pass: consecutive pieces and channel blocks whose C tiles run the whole reduction together.
struct Pass {
  std::vector<size_t> pieces;
  std::vector<int64_t> blocks;
};

std::vector<Pass> passes_of(const TilePlan& plan, int64_t blocks, AmxPassLimits limits) {
  std::vector<Pass> passes;
  const size_t n = plan.pieces().size();
  for (size_t i = 0; i < n; i += static_cast<size_t>(limits.pieces))
    for (int64_t k0 = 0; k0 < blocks; k0 += limits.blocks) {
      Pass pass;
      for (size_t j = i; j < std::min(n, i + static_cast<size_t>(limits.pieces)); ++j)
        pass.pieces.push_back(j);
      for (int64_t k = k0; k < std::min(blocks, k0 + limits.blocks); ++k) pass.blocks.push_back(k);
      passes.push_back(std::move(pass));
    }
  return passes;
}

class AmxTileEmitter {
 public:
  AmxTileEmitter(llvm::IRBuilder<>& b, llvm::Module& m, const AmxTileContext& ctx, const AmxTile& t,
                 int64_t input_chunks, AmxPassLimits limits)
      : b_(b),
        m_(m),
        ctx_(ctx),
        w_(*ctx.workload),
        s_(*ctx.schedule),
        t_(t),
        plan_(w_, ctx.pad, t.rows, t.cols, t.ow0c, ctx.padded_image != nullptr),
        icc_(input_chunks),
        blocks_(s_.oc_bn / kBlock),
        step_(step_bytes(s_)),
        limits_(limits) {
    TT_CHECK(s_.oc_bn % kBlock == 0 && s_.ic_bn % 4 == 0) << s_.oc_bn << " " << s_.ic_bn;
  }

  void emit() {
    for (const Pass& pass : passes_of(plan_, blocks_, limits_)) emit_pass(pass);
  }

 private:
  llvm::Value* i16(int64_t v) { return b_.getInt16(static_cast<uint16_t>(v)); }

  llvm::Value* tile_zero(int64_t rows, int64_t bytes) {
    return b_.CreateCall(
        llvm::Intrinsic::getDeclaration(&m_, llvm::Intrinsic::x86_tilezero_internal),
        {i16(rows), i16(bytes)});
  }
  llvm::Value* tile_load(int64_t rows, int64_t bytes, llvm::Value* ptr, int64_t stride) {
    return b_.CreateCall(
        llvm::Intrinsic::getDeclaration(&m_, llvm::Intrinsic::x86_tileloadd64_internal),
        {i16(rows), i16(bytes), ptr, i64(b_, stride)});
  }
  llvm::Value* tile_dot(int64_t m, int64_t k_bytes, llvm::Value* c, llvm::Value* a,
                        llvm::Value* bt) {
    return b_.CreateCall(
        llvm::Intrinsic::getDeclaration(&m_, llvm::Intrinsic::x86_tdpbusd_internal),
        {i16(m), i16(kBlock * 4), i16(k_bytes), c, a, bt});
  }
  void tile_store(int64_t rows, llvm::Value* ptr, llvm::Value* tile) {
    b_.CreateCall(llvm::Intrinsic::getDeclaration(&m_, llvm::Intrinsic::x86_tilestored64_internal),
                  {i16(rows), i16(kBlock * 4), ptr, i64(b_, kBlock * 4), tile});
  }
  // A 1 KiB scratch tile in the entry block, one per slot.
  llvm::Value* scratch(std::vector<llvm::Value*>& slots, size_t slot, const char* name) {
    if (slots.size() <= slot) slots.resize(slot + 1, nullptr);
    if (!slots[slot]) {
      auto* type = llvm::ArrayType::get(b_.getInt8Ty(), kTileRows * kStepBytes);
      auto* a = entry_alloca(b_, type, name);
      a->setAlignment(llvm::Align(64));
      slots[slot] = b_.CreateBitCast(a, b_.getInt8PtrTy());
    }
    return slots[slot];
  }

  const Piece& piece(size_t i) const { return plan_.pieces()[i]; }

  // The C tiles of a pass: piece-major, then shift, then block.
  size_t slot(const Pass& pass, size_t piece_in_pass, size_t shift, size_t block) const {
    size_t first = 0;
    for (size_t i = 0; i < piece_in_pass; ++i)
      first += piece(pass.pieces[i]).shifts.size() * pass.blocks.size();
    return first + shift * pass.blocks.size() + block;
  }

  void emit_pass(const Pass& pass) {
    LoopState acc;
    for (size_t i : pass.pieces)
      for (size_t s = 0; s < piece(i).shifts.size(); ++s)
        for (size_t j = 0; j < pass.blocks.size(); ++j)
          acc.push_back(tile_zero(piece(i).m, kBlock * 4));
    acc = emit_for_carried(
        b_, i64(b_, 0), i64(b_, icc_), "amx_ic_chunk", acc,
        [&](llvm::Value* icc, const LoopState& a0) {
          llvm::Value* plane = mul_i64(b_, add_i64(b_, mul_i64(b_, t_.n, icc_), icc), w_.in_height);
          return emit_for_carried(
              b_, i64(b_, 0), i64(b_, w_.kernel_h), "amx_kh", a0,
              [&](llvm::Value* kh, const LoopState& a1) {
                const std::vector<llvm::Value*> rows = row_pointers(icc, plane, kh);
                auto steps = [&](llvm::Value* kw, std::optional<int64_t> kwc, const LoopState& a2) {
                  return emit_steps(pass, rows, icc, kh, kw, kwc, a2);
                };
                if (t_.ow0c || s_.unroll_kw || w_.kernel_w == 1) {
                  LoopState a = a1;
                  for (int64_t kw = 0; kw < w_.kernel_w; ++kw) a = steps(i64(b_, kw), kw, a);
                  return a;
                }
                return emit_for_carried(b_, i64(b_, 0), i64(b_, w_.kernel_w), "amx_kw", a1,
                                        [&](llvm::Value* kw, const LoopState& a2) {
                                          return steps(kw, std::nullopt, a2);
                                        });
              });
        });
    emit_store(pass, acc);
  }

  // The tile's input rows at kernel row kh: the padded form's row of the padded image, whose
  // pixels are consecutive positions on the padded grid.
  std::vector<llvm::Value*> row_pointers(llvm::Value* icc, llvm::Value* plane, llvm::Value* kh) {
    if (!plan_.padded()) return ctx_.row_pointers(plane, kh);
    const auto [grid_rows, grid_cols] = amx_padded_extent(w_);
    llvm::Value* row = add_i64(b_, mul_i64(b_, icc, grid_rows), mul_i64(b_, kh, w_.dilation_h));
    return {
        b_.CreateGEP(b_.getInt8Ty(), ctx_.padded_image, mul_i64(b_, row, grid_cols * s_.ic_bn))};
  }

  // Output pixel p of a piece: the sum, over its shifts s, of row p - s of that shift's C tile.
  void emit_store(const Pass& pass, const LoopState& acc) {
    auto* v16 = llvm::FixedVectorType::get(b_.getInt32Ty(), kBlock);
    for (size_t i = 0; i < pass.pieces.size(); ++i) {
      const Piece& pc = piece(pass.pieces[i]);
      for (size_t j = 0; j < pass.blocks.size(); ++j) {
        for (size_t s = 0; s < pc.shifts.size(); ++s)
          tile_store(pc.m, scratch(c_scratch_, s, "amx_c"), acc[slot(pass, i, s, j)]);
        for (int64_t p = pc.fresh; p < pc.m; ++p) {
          const auto pixel = plan_.pixel(pc.r, pc.p0 + p);
          if (!pixel) continue;
          llvm::Value* sum = nullptr;
          for (size_t s = 0; s < pc.shifts.size(); ++s) {
            const int64_t row = p - pc.shifts[s];
            if (row < 0 || row >= pc.m) continue;
            llvm::Value* ptr =
                b_.CreateGEP(b_.getInt8Ty(), c_scratch_[s], i64(b_, row * kBlock * 4));
            llvm::Value* part = b_.CreateAlignedLoad(
                v16, b_.CreateBitCast(ptr, v16->getPointerTo()), llvm::Align(64));
            sum = sum ? b_.CreateAdd(sum, part) : part;
          }
          if (!sum) sum = llvm::Constant::getNullValue(v16);
          ctx_.store(pixel->first, pixel->second, pass.blocks[j], sum);
        }
      }
    }
  }

  // The reduction over one tap's ic_bn input channels, in steps of step_.
  LoopState emit_steps(const Pass& pass, const std::vector<llvm::Value*>& rows, llvm::Value* icc,
                       llvm::Value* kh, llvm::Value* kw, std::optional<int64_t> kwc,
                       const LoopState& acc) {
    return emit_for_carried(b_, i64(b_, 0), i64(b_, s_.ic_bn / step_), "amx_step", acc,
                            [&](llvm::Value* step, const LoopState& carried) {
                              LoopState out = carried;
                              emit_step(pass, rows, icc, kh, kw, kwc, mul_i64(b_, step, step_),
                                        out);
                              return out;
                            });
  }

  // The products of input channels [c0, c0 + step_) of one tap, into the pass's C tiles.
  void emit_step(const Pass& pass, const std::vector<llvm::Value*>& rows, llvm::Value* icc,
                 llvm::Value* kh, llvm::Value* kw, std::optional<int64_t> kwc, llvm::Value* c0,
                 LoopState& acc) {
    // Within a row: (iw, c) at iw * ic_bn + c, iw = ow0 * SW + kw * DW - PL + p * SW (the
    // padded form: kw * DW + p, its rows starting at the padding).
    llvm::Value* col0 = plan_.padded()
                            ? mul_i64(b_, kw, w_.dilation_w)
                            : add_i64(b_, mul_i64(b_, t_.ow0, w_.stride_w),
                                      add_i64(b_, mul_i64(b_, kw, w_.dilation_w), -w_.pad_left));
    llvm::Value* base = add_i64(b_, mul_i64(b_, col0, s_.ic_bn), c0);
    std::vector<llvm::Value*> a_tiles;
    std::vector<int> shifts;
    for (size_t i = 0; i < pass.pieces.size(); ++i) {
      const Piece& pc = piece(pass.pieces[i]);
      const int shift = kwc ? pc.tap_shift[static_cast<size_t>(*kwc)] : 0;
      shifts.push_back(shift);
      a_tiles.push_back(shift < 0 ? nullptr : load_a(pc, i, shift, rows, base, kwc));
    }
    // weight[occ][icc][kh][kw][c / 4][oc_bn][4]: a B tile's rows are oc_bn * 4 bytes apart,
    // (tap * ic_bn + c0) / 4 rows from the start: (tap * ic_bn + c0) * oc_bn bytes.
    llvm::Value* tap =
        add_i64(b_, mul_i64(b_, add_i64(b_, mul_i64(b_, t_.occ, icc_), icc), w_.kernel_h), kh);
    tap = add_i64(b_, mul_i64(b_, tap, w_.kernel_w), kw);
    llvm::Value* woff = mul_i64(b_, add_i64(b_, mul_i64(b_, tap, s_.ic_bn), c0), s_.oc_bn);
    for (size_t j = 0; j < pass.blocks.size(); ++j) {
      llvm::Value* ptr =
          b_.CreateGEP(b_.getInt8Ty(), ctx_.weight, add_i64(b_, woff, pass.blocks[j] * kBlock * 4));
      llvm::Value* bt = tile_load(step_ / 4, kBlock * 4, ptr, s_.oc_bn * 4);
      for (size_t i = 0; i < pass.pieces.size(); ++i) {
        if (!a_tiles[i]) continue;
        llvm::Value*& c = acc[slot(pass, i, static_cast<size_t>(shifts[i]), j)];
        c = tile_dot(piece(pass.pieces[i]).m, step_, c, a_tiles[i], bt);
      }
    }
  }

  // The piece's A tile at byte `base` of its row, starting at its shift; a gathering piece's
  // taps read the padding byte where they leave the input, from scratch tile `slot`.
  llvm::Value* load_a(const Piece& pc, size_t slot, int shift,
                      const std::vector<llvm::Value*>& rows, llvm::Value* base,
                      std::optional<int64_t> kwc) {
    llvm::Value* row = b_.CreateGEP(b_.getInt8Ty(), rows[pc.r], base);
    const int64_t stride = w_.stride_w * s_.ic_bn;
    if (!pc.gather) {
      const int64_t first = pc.p0 + pc.shifts[static_cast<size_t>(shift)];
      return tile_load(pc.m, step_, b_.CreateGEP(b_.getInt8Ty(), row, i64(b_, first * stride)),
                       stride);
    }
    llvm::Value* gathered = scratch(a_scratch_, slot, "amx_a");
    auto* vb = llvm::FixedVectorType::get(b_.getInt8Ty(), static_cast<unsigned>(step_));
    for (int64_t p = 0; p < pc.m; ++p) {
      llvm::Value* v =
          plan_.column_valid(pc.p0 + p, *kwc)
              ? b_.CreateAlignedLoad(vb,
                                     b_.CreateBitCast(b_.CreateGEP(b_.getInt8Ty(), row,
                                                                   i64(b_, (pc.p0 + p) * stride)),
                                                      vb->getPointerTo()),
                                     llvm::Align(1))
              : b_.CreateVectorSplat(static_cast<unsigned>(step_),
                                     b_.getInt8(static_cast<uint8_t>(ctx_.pad)));
      b_.CreateAlignedStore(
          v,
          b_.CreateBitCast(b_.CreateGEP(b_.getInt8Ty(), gathered, i64(b_, p * kStepBytes)),
                           vb->getPointerTo()),
          llvm::Align(1));
    }
    return tile_load(pc.m, step_, gathered, kStepBytes);
  }

  llvm::IRBuilder<>& b_;
  llvm::Module& m_;
  const AmxTileContext& ctx_;
  const Conv2dWorkload& w_;
  const Conv2dInt8Schedule& s_;
  const AmxTile& t_;
  TilePlan plan_;
  int64_t icc_, blocks_, step_;
  AmxPassLimits limits_;
  std::vector<llvm::Value*> c_scratch_;  // per shift
  std::vector<llvm::Value*> a_scratch_;  // per piece of a pass
};

}  // namespace

std::optional<AmxPassLimits> plan_amx_kernel(const Conv2dWorkload& w, const Conv2dInt8Schedule& s,
                                             int64_t pad, const std::vector<ColumnClass>& columns) {
  // Tiles the kernel emits: rows x columns, and a border or tail tile's first column.
  struct Emitted {
    int64_t rows, cols;
    std::optional<int64_t> ow0c;
  };
  std::vector<Emitted> tiles;
  std::vector<int64_t> row_counts{s.reg_h};
  if (w.out_height() % s.reg_h != 0) row_counts.push_back(w.out_height() % s.reg_h);
  const bool padded = amx_reads_padded_image(w, s);
  if (padded) tiles.push_back({w.out_height(), w.out_width(), std::nullopt});
  for (int64_t rows : row_counts)
    for (const ColumnClass& c : columns) {
      if (padded) break;
      if (!c.runtime) {
        tiles.push_back({rows, c.size, c.tile * s.reg_n});
        continue;
      }
      const int64_t group = amx_run_tiles(s.reg_n), count = c.hi - c.lo;
      if (count / group > 0) tiles.push_back({rows, group * s.reg_n, std::nullopt});
      if (count % group > 0) tiles.push_back({rows, count % group * s.reg_n, std::nullopt});
    }
  const int64_t step = step_bytes(s);
  for (AmxPassLimits limits :
       {AmxPassLimits{2, 4}, AmxPassLimits{2, 2}, AmxPassLimits{1, 2}, AmxPassLimits{1, 1}}) {
    std::map<Shape, int64_t> demand;  // registers per shape: the most of its tiles live at once
    for (const Emitted& e : tiles) {
      const TilePlan plan(w, pad, e.rows, e.cols, e.ow0c, padded);
      for (const Pass& pass : passes_of(plan, s.oc_bn / kBlock, limits)) {
        std::map<Shape, int64_t> live;
        live[{step / 4, kBlock * 4}] += 1;  // B
        for (size_t i : pass.pieces) {
          const Piece& pc = plan.pieces()[i];
          live[{pc.m, kBlock * 4}] +=
              static_cast<int64_t>(pc.shifts.size() * pass.blocks.size());  // C
          live[{pc.m, step}] += 1;                                          // A
        }
        for (const auto& [shape, count] : live) demand[shape] = std::max(demand[shape], count);
      }
    }
    int64_t registers = 0;
    for (const auto& [shape, count] : demand) registers += count;
    if (registers <= kTileRegisters) return limits;
  }
  return std::nullopt;
}

bool amx_reads_padded_image(const Conv2dWorkload& w, const Conv2dInt8Schedule& s) {
  const auto [rows, cols] = amx_padded_extent(w);
  const bool pads = w.pad_top > 0 || w.pad_bottom > 0 || w.pad_left > 0 || w.pad_right > 0;
  const bool fits = w.stride_h == 1 && w.stride_w == 1 &&
                    (pads || w.kernel_h > 1 || w.kernel_w > 1) &&
                    rows * cols * w.in_channels <= amx_padded_image_limit() && s.ic_bn % 4 == 0;
  if (!fits) return false;
  const char* forced = std::getenv("TT_AMX_PADDED");
  return !(forced && std::string(forced) == "0");
}

bool host_runs_amx_int8() { return process_runs_amx_int8(); }

void enable_amx_tiles() { (void)host_runs_amx_int8(); }

void emit_amx_int8_tile(llvm::IRBuilder<>& b, llvm::Module& m, const AmxTileContext& ctx,
                        const AmxTile& tile, int64_t input_chunks, AmxPassLimits limits) {
  AmxTileEmitter(b, m, ctx, tile, input_chunks, limits).emit();
}

}  // namespace tensortune::codegen::emit
