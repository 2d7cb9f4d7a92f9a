#pragma once
/// \file
/// Whether this process may run AMX int8 tile instructions: the CPU has AMX-TILE and AMX-INT8
/// (CPUID leaf 7, EDX bits 24 and 25) and Linux granted the process the tile data state. Linux
/// keeps that state (8 KiB per thread) off until a process asks for it once
/// (arch_prctl ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA); a tile instruction before that
/// raises SIGILL. The first call asks; later calls return the answer.

namespace tensortune {

bool process_runs_amx_int8();

}  // namespace tensortune
