#include "compiler/codegen/cuda/library_search.h"

#include <dlfcn.h>
#include <glob.h>

#include <cstdlib>
#include <set>

namespace tensortune::codegen::cuda {
namespace {

std::vector<std::string> expand(const std::string& pattern) {
  std::vector<std::string> out;
  glob_t g{};
  if (glob(pattern.c_str(), 0, nullptr, &g) == 0)
    for (size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
  globfree(&g);
  return out;
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

}  // namespace

std::string OpenedLibrary::tried() const {
  std::string text = "tried ";
  for (size_t i = 0; i < failures.size(); ++i) text += (i ? "; " : "") + failures[i];
  return text;
}

std::vector<std::string> cuda_library_candidates(const std::string& env_var,
                                                 const std::vector<std::string>& sonames,
                                                 const std::string& toolkit_lib_dir) {
  std::vector<std::string> out;
  if (std::string file = env(env_var.c_str()); !file.empty()) out.push_back(file);
  for (const std::string& s : sonames) out.push_back(s);

  std::vector<std::string> toolkits;
  for (const char* v : {"CUDA_HOME", "CUDA_PATH"})
    if (std::string root = env(v); !root.empty()) toolkits.push_back(root);
  std::vector<std::string> dirs;
  if (!toolkit_lib_dir.empty()) dirs.push_back(toolkit_lib_dir);
  toolkits.push_back("/usr/local/cuda");
  toolkits.push_back("/usr/local/nvidia");  // the driver, where containers mount it
  for (const std::string& root : toolkits)
    for (const char* sub : {"/lib64", "/lib", "/targets/x86_64-linux/lib"})
      dirs.push_back(root + sub);

  std::vector<std::string> site_packages;
  if (std::string venv = env("VIRTUAL_ENV"); !venv.empty())
    site_packages.push_back(venv + "/lib/python3*/site-packages");
  site_packages.push_back("/opt/*/.venv/lib/python3*/site-packages");
  site_packages.push_back("/opt/*/lib/python3*/site-packages");
  site_packages.push_back("/usr/local/lib/python3*/dist-packages");
  site_packages.push_back("/usr/local/lib/python3*/site-packages");
  site_packages.push_back("/usr/lib/python3/dist-packages");
  if (std::string home = env("HOME"); !home.empty())
    site_packages.push_back(home + "/.local/lib/python3*/site-packages");
  for (const std::string& sp : site_packages)
    for (const std::string& d : expand(sp + "/nvidia/*/lib")) dirs.push_back(d);

  std::set<std::string> seen(out.begin(), out.end());
  for (const std::string& d : dirs)
    for (const std::string& s : sonames)
      for (const std::string& file : expand(d + "/" + s))
        if (seen.insert(file).second) out.push_back(file);
  return out;
}

OpenedLibrary open_cuda_library(const std::string& env_var, const std::vector<std::string>& sonames,
                                const std::string& toolkit_lib_dir) {
  OpenedLibrary lib;
  for (const std::string& c : cuda_library_candidates(env_var, sonames, toolkit_lib_dir)) {
    dlerror();
    if ((lib.handle = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL))) {
      lib.path = c;
      return lib;
    }
    const char* why = dlerror();
    lib.failures.push_back(c + " (" + (why ? why : "unknown") + ")");
  }
  if (lib.failures.empty()) lib.failures.push_back("nothing (no candidate)");
  return lib;
}

}  // namespace tensortune::codegen::cuda
