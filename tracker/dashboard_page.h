#pragma once
/// \file
/// Private to tracker/: the dashboard's pages (tracker/dashboard/*.html, compiled in by CMake).

namespace tensortune::tracker {

/// The live dashboard: one page that polls the tracker's /api/ calls every second.
extern const char* const kDashboardPage;
/// The sign-in form (POST /login with a client or admin token).
extern const char* const kLoginPage;

}  // namespace tensortune::tracker
