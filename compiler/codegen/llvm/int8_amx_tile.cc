// Implements int8_amx_tile.h.
#include "compiler/codegen/llvm/int8_amx_tile.h"

#include <llvm/ADT/StringMap.h>
#include <llvm/IR/IntrinsicsX86.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/Host.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <string>

#include "compiler/codegen/llvm/ir_helpers.h"
#include "support/error.h"

namespace tensortune::codegen::emit {
namespace {

using schedule_space::Conv2dInt8Schedule;
using schedule_space::Conv2dWorkload;

constexpr int64_t kTileRows = 16;   // pixels of one A tile (TMUL's M)
constexpr int64_t kBlock = 16;      // output channels of one B or C tile (64 bytes of int32)
constexpr int64_t kStepBytes = 64;  // input channels of one reduction step (A's bytes per row)

// An A tile: output row r of the register tile, its columns [p0, p0 + m) (or pixels
// [p0, p0 + m) of the tile's rows read as one run).
struct Piece {
  int64_t r, p0, m;
};

class AmxTileEmitter {
 public:
  AmxTileEmitter(llvm::IRBuilder<>& b, llvm::Module& m, const AmxTileContext& ctx,
                 const AmxTile& t, int64_t input_chunks)
      : b_(b), m_(m), ctx_(ctx), w_(*ctx.workload), s_(*ctx.schedule), t_(t),
        icc_(input_chunks), blocks_(s_.oc_bn / kBlock) {
    TT_CHECK(s_.oc_bn % kBlock == 0 && s_.ic_bn % 4 == 0) << s_.oc_bn << " " << s_.ic_bn;
    auto* scratch_type = llvm::ArrayType::get(b.getInt8Ty(), kTileRows * kStepBytes);
    auto* c = entry_alloca(b, scratch_type, "amx_c");
    c->setAlignment(llvm::Align(64));
    c_scratch_ = b.CreateBitCast(c, b.getInt8PtrTy());
  }

  void emit() {
    std::vector<Piece> pieces;
    // A 1x1 kernel of stride 1 without padding reads its tile's whole rows as one run of
    // pixels (NCHW[x]c keeps a plane's rows adjacent): A tiles then cut the run, not each row,
    // so that two rows of 7 fill one tile of 14, not two of 7.
    flat_ = t_.rows > 1 && !t_.ow0c && w_.kernel_h == 1 && w_.kernel_w == 1 &&
            w_.stride_w == 1 && w_.pad_left == 0 && w_.pad_right == 0 &&
            t_.cols == w_.in_width && t_.cols == w_.out_width();
    if (flat_) {
      for (int64_t q0 = 0; q0 < t_.rows * t_.cols; q0 += kTileRows)
        pieces.push_back({0, q0, std::min(kTileRows, t_.rows * t_.cols - q0)});
    } else {
      for (int64_t r = 0; r < t_.rows; ++r)
        for (int64_t p0 = 0; p0 < t_.cols; p0 += kTileRows)
          pieces.push_back({r, p0, std::min(kTileRows, t_.cols - p0)});
    }
    // Passes of two A tiles x two channel blocks (4 C + 2 A + 1 B live) or one A tile x four
    // blocks (4 + 1 + 1): each B tile is reused by every A tile of the pass, each A by every B.
    for (size_t i = 0; i < pieces.size(); i += 2) {
      std::vector<Piece> group(pieces.begin() + static_cast<std::ptrdiff_t>(i),
                               pieces.begin() + static_cast<std::ptrdiff_t>(
                                                    std::min(pieces.size(), i + 2)));
      const int64_t per_pass = group.size() == 2 ? 2 : 4;
      for (int64_t k0 = 0; k0 < blocks_; k0 += per_pass) {
        std::vector<int64_t> blocks;
        for (int64_t k = k0; k < std::min(blocks_, k0 + per_pass); ++k) blocks.push_back(k);
        emit_pass(group, blocks);
      }
    }
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
    b_.CreateCall(
        llvm::Intrinsic::getDeclaration(&m_, llvm::Intrinsic::x86_tilestored64_internal),
        {i16(rows), i16(kBlock * 4), ptr, i64(b_, kBlock * 4), tile});
  }

  // Interior tiles (no constant first column) read inside the input for every tap.
  bool column_valid(int64_t p, int64_t kw) const {
    if (!t_.ow0c) return true;
    const int64_t iw = (*t_.ow0c + p) * w_.stride_w + kw * w_.dilation_w - w_.pad_left;
    return iw >= 0 && iw < w_.in_width;
  }

  void emit_pass(const std::vector<Piece>& pieces, const std::vector<int64_t>& blocks) {
    LoopState acc;
    for (const Piece& piece : pieces)
      for (size_t j = 0; j < blocks.size(); ++j) acc.push_back(tile_zero(piece.m, kBlock * 4));
    acc = emit_for_carried(
        b_, i64(b_, 0), i64(b_, icc_), "amx_ic_chunk", acc,
        [&](llvm::Value* icc, const LoopState& a0) {
          llvm::Value* plane = mul_i64(b_, add_i64(b_, mul_i64(b_, t_.n, icc_), icc), w_.in_height);
          return emit_for_carried(
              b_, i64(b_, 0), i64(b_, w_.kernel_h), "amx_kh", a0,
              [&](llvm::Value* kh, const LoopState& a1) {
                const std::vector<llvm::Value*> rows = ctx_.row_pointers(plane, kh);
                auto steps = [&](llvm::Value* kw, std::optional<int64_t> kwc, const LoopState& a2) {
                  return emit_steps(pieces, blocks, rows, icc, kh, kw, kwc, a2);
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
    size_t i = 0;
    for (const Piece& piece : pieces)
      for (int64_t k : blocks) {
        tile_store(piece.m, c_scratch_, acc[i++]);
        auto* v16 = llvm::FixedVectorType::get(b_.getInt32Ty(), kBlock);
        for (int64_t p = 0; p < piece.m; ++p) {
          llvm::Value* ptr = b_.CreateGEP(b_.getInt8Ty(), c_scratch_, i64(b_, p * kBlock * 4));
          llvm::Value* sum = b_.CreateAlignedLoad(v16, b_.CreateBitCast(ptr, v16->getPointerTo()),
                                                  llvm::Align(64));
          const int64_t q = piece.p0 + p;  // a column of row r, or of the whole run
          if (flat_)
            ctx_.store(q / t_.cols, q % t_.cols, k, sum);
          else
            ctx_.store(piece.r, q, k, sum);
        }
      }
  }

  // The reduction over one tap's ic_bn input channels: steps of 64 (a runtime loop where there
  // are several), then the rest.
  LoopState emit_steps(const std::vector<Piece>& pieces, const std::vector<int64_t>& blocks,
                       const std::vector<llvm::Value*>& rows, llvm::Value* icc, llvm::Value* kh,
                       llvm::Value* kw, std::optional<int64_t> kwc, const LoopState& acc) {
    const int64_t full = s_.ic_bn / kStepBytes, rest = s_.ic_bn % kStepBytes;
    LoopState a = acc;
    if (full > 0)
      a = emit_for_carried(b_, i64(b_, 0), i64(b_, full), "amx_step", a,
                           [&](llvm::Value* step, const LoopState& carried) {
                             LoopState out = carried;
                             emit_step(pieces, blocks, rows, icc, kh, kw, kwc,
                                       mul_i64(b_, step, kStepBytes), kStepBytes, out);
                             return out;
                           });
    if (rest > 0)
      emit_step(pieces, blocks, rows, icc, kh, kw, kwc, i64(b_, full * kStepBytes), rest, a);
    return a;
  }

  // The products of input channels [c0, c0 + bytes) of one tap, into the pass's C tiles.
  void emit_step(const std::vector<Piece>& pieces, const std::vector<int64_t>& blocks,
                 const std::vector<llvm::Value*>& rows, llvm::Value* icc, llvm::Value* kh,
                 llvm::Value* kw, std::optional<int64_t> kwc, llvm::Value* c0, int64_t bytes,
                 LoopState& acc) {
    // Within a row: (iw, c) at iw * ic_bn + c, iw = ow0 * SW + kw * DW - PL + p * SW.
    llvm::Value* col0 = add_i64(b_, mul_i64(b_, t_.ow0, w_.stride_w),
                                add_i64(b_, mul_i64(b_, kw, w_.dilation_w), -w_.pad_left));
    llvm::Value* base = add_i64(b_, mul_i64(b_, col0, s_.ic_bn), c0);
    std::vector<llvm::Value*> a_tiles;
    for (size_t i = 0; i < pieces.size(); ++i)
      a_tiles.push_back(load_a(pieces[i], i, rows, base, kwc, bytes));
    // weight[occ][icc][kh][kw][c / 4][oc_bn][4]: a B tile's rows are oc_bn * 4 bytes apart.
    llvm::Value* woff =
        add_i64(b_, mul_i64(b_, add_i64(b_, mul_i64(b_, t_.occ, icc_), icc), w_.kernel_h), kh);
    // (tap * ic_bn + c0) / 4 rows of oc_bn * 4 bytes: (tap * ic_bn + c0) * oc_bn bytes.
    llvm::Value* tap = add_i64(b_, mul_i64(b_, woff, w_.kernel_w), kw);
    woff = mul_i64(b_, add_i64(b_, mul_i64(b_, tap, s_.ic_bn), c0), s_.oc_bn);
    for (size_t j = 0; j < blocks.size(); ++j) {
      llvm::Value* ptr =
          b_.CreateGEP(b_.getInt8Ty(), ctx_.weight, add_i64(b_, woff, blocks[j] * kBlock * 4));
      llvm::Value* bt = tile_load(bytes / 4, kBlock * 4, ptr, s_.oc_bn * 4);
      for (size_t i = 0; i < pieces.size(); ++i) {
        if (!a_tiles[i]) continue;
        llvm::Value*& c = acc[i * blocks.size() + j];
        c = tile_dot(pieces[i].m, bytes, c, a_tiles[i], bt);
      }
    }
  }

  // The A tile of a piece at byte `base` of its row (nullptr when every pixel reads zero
  // padding); a border tile's taps outside the input gather the padding byte instead, into
  // the pass's scratch tile `slot`.
  llvm::Value* load_a(const Piece& piece, size_t slot, const std::vector<llvm::Value*>& rows,
                      llvm::Value* base, std::optional<int64_t> kwc, int64_t bytes) {
    llvm::Value* row = b_.CreateGEP(b_.getInt8Ty(), rows[piece.r], base);
    const int64_t stride = w_.stride_w * s_.ic_bn;
    int64_t valid = piece.m;
    if (kwc) {
      valid = 0;
      for (int64_t p = 0; p < piece.m; ++p) valid += column_valid(piece.p0 + p, *kwc);
    }
    if (valid == piece.m)
      return tile_load(piece.m, bytes, b_.CreateGEP(b_.getInt8Ty(), row, i64(b_, piece.p0 * stride)),
                       stride);
    if (valid == 0 && ctx_.pad == 0) return nullptr;
    llvm::Value*& scratch = a_scratch_[slot];
    if (!scratch) {
      auto* type = llvm::ArrayType::get(b_.getInt8Ty(), kTileRows * kStepBytes);
      auto* a = entry_alloca(b_, type, "amx_a");
      a->setAlignment(llvm::Align(64));
      scratch = b_.CreateBitCast(a, b_.getInt8PtrTy());
    }
    auto* vb = llvm::FixedVectorType::get(b_.getInt8Ty(), static_cast<unsigned>(bytes));
    for (int64_t p = 0; p < piece.m; ++p) {
      llvm::Value* v =
          column_valid(piece.p0 + p, *kwc)
              ? b_.CreateAlignedLoad(
                    vb,
                    b_.CreateBitCast(b_.CreateGEP(b_.getInt8Ty(), row,
                                                  i64(b_, (piece.p0 + p) * stride)),
                                     vb->getPointerTo()),
                    llvm::Align(1))
              : b_.CreateVectorSplat(static_cast<unsigned>(bytes),
                                     b_.getInt8(static_cast<uint8_t>(ctx_.pad)));
      b_.CreateAlignedStore(
          v,
          b_.CreateBitCast(b_.CreateGEP(b_.getInt8Ty(), scratch, i64(b_, p * kStepBytes)),
                           vb->getPointerTo()),
          llvm::Align(1));
    }
    return tile_load(piece.m, bytes, scratch, kStepBytes);
  }

  llvm::IRBuilder<>& b_;
  llvm::Module& m_;
  const AmxTileContext& ctx_;
  const Conv2dWorkload& w_;
  const Conv2dInt8Schedule& s_;
  const AmxTile& t_;
  int64_t icc_, blocks_;
  bool flat_ = false;
  llvm::Value* c_scratch_ = nullptr;
  llvm::Value* a_scratch_[2] = {nullptr, nullptr};
};

bool host_has_amx_int8_features() {
  llvm::StringMap<bool> f;
  if (!llvm::sys::getHostCPUFeatures(f)) return false;
  return f.lookup("amx-tile") && f.lookup("amx-int8");
}

// Linux keeps the tile data state (8 KiB per thread) off until a process asks for it
// (arch_prctl ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA); a tile instruction before that
// raises SIGILL.
bool request_tile_data() {
#if defined(__linux__) && defined(__x86_64__)
  constexpr int kArchReqXcompPerm = 0x1023;
  constexpr int kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}

}  // namespace

bool host_runs_amx_int8() {
  static const bool runs = host_has_amx_int8_features() && request_tile_data();
  return runs;
}

void enable_amx_tiles() { (void)host_runs_amx_int8(); }

void emit_amx_int8_tile(llvm::IRBuilder<>& b, llvm::Module& m, const AmxTileContext& ctx,
                        const AmxTile& tile, int64_t input_chunks) {
  AmxTileEmitter(b, m, ctx, tile, input_chunks).emit();
}

}  // namespace tensortune::codegen::emit
